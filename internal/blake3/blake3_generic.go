//go:build noasm || !gc || !amd64

package blake3

import "hash"

// New returns a BLAKE3-256 hash over the portable Go kernels.
func New() hash.Hash { return newHasher(goKernels) }

// asmKernels is nil: this build has no assembly kernels.
var asmKernels *kernels
