//go:build !noasm && gc

package blake3

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/xdna-go/xdna/internal/x86sim"
)

// simImage is the two kernels' functions in this test binary, opened by
// x86sim (x86sim.Self) once.
var simImage struct {
	once            sync.Once
	err             error // the binary cannot be simulated here: a skip
	funcErr         error // a kernel the simulator cannot take: a failure
	chunks, parents *x86sim.Func
}

// simKernels returns the AVX-512 set run under x86sim, instruction by
// instruction, so that it is tested on CPUs without AVX-512. It skips tb,
// saying why, when the simulator cannot run here. A kernel the simulator
// refuses or that faults fails tb.
func simKernels(tb testing.TB) *kernels {
	tb.Helper()
	simImage.once.Do(func() {
		img, err := x86sim.Self()
		if err != nil {
			simImage.err = err
			return
		}
		pkg := reflect.TypeOf(kernels{}).PkgPath()
		if simImage.chunks, err = img.Func(pkg + ".hashChunksAVX512.abi0"); err != nil {
			simImage.funcErr = err
			return
		}
		simImage.parents, simImage.funcErr = img.Func(pkg + ".hashParentsAVX512.abi0")
	})
	if errors.Is(simImage.err, x86sim.ErrNoObjdump) {
		tb.Skipf("x86sim: %v: the AVX-512 kernels are not tested under the simulator", simImage.err)
	}
	if simImage.err != nil {
		tb.Skipf("x86sim cannot run this binary (%v): the AVX-512 kernels are not tested under the simulator", simImage.err)
	}
	if simImage.funcErr != nil {
		// This build has the kernels (the file's build constraint): the
		// simulator must take them.
		tb.Fatalf("x86sim: %v", simImage.funcErr)
	}
	p := x86sim.Ptr
	return &kernels{
		name: "avx512 under x86sim",
		chunks: func(key *[8]uint32, in *[batchLen]byte, counter uint64, flags uint32, out *[batch][8]uint32) {
			err := simImage.chunks.Call(p(unsafe.Pointer(key)), p(unsafe.Pointer(in)), x86sim.Int(int(counter)), x86sim.Int(int(flags)), p(unsafe.Pointer(out)))
			if err != nil {
				tb.Fatalf("simulated hashChunksAVX512: %v", err)
			}
		},
		parents: func(key *[8]uint32, in *[2 * batch][8]uint32, flags uint32, out *[batch][8]uint32) {
			err := simImage.parents.Call(p(unsafe.Pointer(key)), p(unsafe.Pointer(in)), x86sim.Int(int(flags)), p(unsafe.Pointer(out)))
			if err != nil {
				tb.Fatalf("simulated hashParentsAVX512: %v", err)
			}
		},
	}
}

// TestSimKernels runs the AVX-512 kernels under x86sim against the Go
// kernels, on every CPU: where the CPU has AVX-512 (and the native run is
// compared in TestAsmKernels) it also checks the simulator against it.
func TestSimKernels(t *testing.T) {
	if !haveAVX512 {
		t.Log("this CPU has no AVX-512 (or GODEBUG turned it off): the AVX-512 kernels are tested under x86sim only")
	}
	compareKernels(t, simKernels(t), 40)
}

// TestSimHasher: the whole hasher over the simulated AVX-512 kernels
// against the one over the Go kernels, at lengths that take the chunk
// kernel in Write and in Sum and the parent kernel at every level below
// 16 parents and at 16.
func TestSimHasher(t *testing.T) {
	k := simKernels(t)
	data := input(11, 4*batchLen+3*chunkLen+100) // 4 kernel calls, a subtree of 64 chunks
	for _, n := range []int{0, 100, chunkLen, 5 * chunkLen, 9*chunkLen + 1, batchLen, batchLen + 1, 2*batchLen + chunkLen, len(data)} {
		hs, hg := newHasher(k), newHasher(goKernels)
		hs.Write(data[:n])
		hg.Write(data[:n])
		if got, want := hs.Sum(nil), hg.Sum(nil); string(got) != string(want) {
			t.Fatalf("%d bytes: %s kernels %x, go kernels %x", n, k.name, got, want)
		}
	}
}
