//go:build !noasm && gc

package blake3

import (
	"hash"

	zeebo "github.com/zeebo/blake3"
	"golang.org/x/sys/cpu"
)

//go:generate go run -C _generate . -out ../blake3_amd64.s -stubs ../stubs_amd64.go -pkg blake3

// haveAVX512 reports whether this CPU runs the AVX-512 kernels: they use
// AVX512F alone (zmm registers only), which x/sys/cpu reports only when
// the OS saves the opmask and ZMM state. GODEBUG=cpu.avx512f=off turns it
// off, as it does for the rest of the project.
var haveAVX512 = cpu.X86.HasAVX512F

// avx512Kernels is the AVX-512 set, whether or not this CPU runs it (the
// tests run it under x86sim where it does not).
var avx512Kernels = &kernels{name: "avx512", chunks: hashChunksAVX512, parents: hashParentsAVX512}

// asmKernels is the assembly set this CPU runs, or nil.
var asmKernels = func() *kernels {
	if haveAVX512 {
		return avx512Kernels
	}
	return nil
}()

// New returns a BLAKE3-256 hash. Without AVX-512 it is zeebo/blake3's,
// whose AVX2 code (8 chunks at a time) is as fast as an AVX2 kernel of
// ours would be.
func New() hash.Hash {
	if asmKernels != nil {
		return newHasher(asmKernels)
	}
	return zeebo.New()
}
