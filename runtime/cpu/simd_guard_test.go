//go:build linux

package cpu

import (
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKernelsStayInBlob puts each matrix's blob right before an
// inaccessible page, so that a kernel reading a byte past the blob faults:
// the last row of the last group ends the blob in every plane layout. It
// runs the scalar kernels and every level of testLevels (the AVX-512 set
// under x86sim, whose loads are real loads, where the CPU has no AVX-512).
func TestKernelsStayInBlob(t *testing.T) {
	t.Run("go", func(t *testing.T) { testStayInBlob(t, nil) })
	for _, l := range testLevels() {
		t.Run(l.name, func(t *testing.T) { testStayInBlob(t, l.set(t)) })
	}
}

func testStayInBlob(t *testing.T, k *kernels) {
	page := unix.Getpagesize()
	rng := rand.New(rand.NewPCG(41, 42))
	for _, typ := range testTypes {
		for _, g := range append(shapes(typ), vecShapes(typ)...) {
			m := pack(t, g, randomGGUF(rng, typ, g.N, g.K))
			size := (len(m.Blob) + page - 1) / page * page
			mem, err := unix.Mmap(-1, 0, size+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Mprotect(mem[size:], unix.PROT_NONE); err != nil {
				t.Fatal(err)
			}
			guarded := mem[size-len(m.Blob) : size]
			copy(guarded, m.Blob)
			gm := &Matrix{G: g, Blob: guarded}
			for _, b := range []int{1, 6} {
				x := randomX(rng, b*g.K)
				y := make([]float32, b*g.N)
				withKernels(k, func() { MatMat(gm, x, y, b, nil) })
			}
			unix.Munmap(mem)
		}
	}
}
