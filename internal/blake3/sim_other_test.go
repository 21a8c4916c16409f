//go:build noasm || !gc || !amd64

package blake3

import "testing"

// TestSimKernels says why nothing is simulated: this build has no
// assembly kernels.
func TestSimKernels(t *testing.T) {
	t.Skip("this build has no assembly kernels (noasm, or not amd64 with gc): there are none to run under x86sim")
}
