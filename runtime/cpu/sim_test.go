package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu/internal/x86sim"
)

// simImage is the test binary opened by x86sim, once per process, with
// the functions disassembled so far.
var simImage struct {
	once  sync.Once
	img   *x86sim.Image
	err   error
	mu    sync.Mutex
	funcs map[string]*x86sim.Func
}

func openSimImage() (*x86sim.Image, error) {
	simImage.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			simImage.err = err
			return
		}
		simImage.img, simImage.err = x86sim.Open(exe)
		simImage.funcs = map[string]*x86sim.Func{}
	})
	return simImage.img, simImage.err
}

func simFunc(img *x86sim.Image, sym string) (*x86sim.Func, error) {
	simImage.mu.Lock()
	defer simImage.mu.Unlock()
	if f := simImage.funcs[sym]; f != nil {
		return f, nil
	}
	f, err := img.Func(sym)
	if err != nil {
		return nil, err
	}
	simImage.funcs[sym] = f
	return f, nil
}

// simSet returns a kernel set named name whose kernels each run, under
// x86sim, the assembly function <field name><suffix> of this test binary
// (q4_0RowsAVX2, quantQ8_0AVX512, ...) where the binary has it, and base's
// function where it has not; it logs which. It skips tb when the simulator
// cannot run here (no objdump, not an x86-64 ELF executable, or a build
// without the assembly, such as -tags noasm). A kernel the simulator
// refuses or that faults reports the error (address and instruction) on tb
// and leaves its outputs as they were, so the comparison fails too.
func simSet(tb testing.TB, name, suffix string, base *kernels) *kernels {
	tb.Helper()
	img, err := openSimImage()
	if errors.Is(err, x86sim.ErrNoObjdump) {
		tb.Skipf("x86sim: %v: the simulated kernel set %q is not tested", err, name)
	}
	if err != nil {
		tb.Skipf("x86sim cannot run this binary (%v): the simulated kernel set %q is not tested", err, name)
	}
	pkg := reflect.TypeOf(kernels{}).PkgPath()
	set := *base
	set.name = name
	sv := reflect.ValueOf(&set).Elem()
	var simulated, kept []string
	var reported atomic.Bool
	for i := 0; i < sv.NumField(); i++ {
		field := sv.Type().Field(i)
		if field.Type.Kind() != reflect.Func {
			continue
		}
		sym := pkg + "." + field.Name + suffix + ".abi0"
		if !img.Has(sym) {
			kept = append(kept, field.Name)
			continue
		}
		fn, err := simFunc(img, sym)
		if err != nil {
			tb.Fatalf("simSet %s: %v", name, err)
		}
		for j := 0; j < field.Type.NumIn(); j++ {
			switch field.Type.In(j).Kind() {
			case reflect.Pointer, reflect.Int:
			default:
				tb.Fatalf("simSet %s: %s argument %d is a %v: only pointers and ints are passed", name, field.Name, j, field.Type.In(j))
			}
		}
		if field.Type.NumOut() != 0 {
			tb.Fatalf("simSet %s: %s has results", name, field.Name)
		}
		kernel := field.Name
		call := reflect.MakeFunc(field.Type, func(in []reflect.Value) []reflect.Value {
			args := make([]x86sim.Arg, len(in))
			for j, v := range in {
				if v.Kind() == reflect.Pointer {
					args[j] = x86sim.Ptr(v.UnsafePointer())
				} else {
					args[j] = x86sim.Int(int(v.Int()))
				}
			}
			if err := fn.Call(args...); err != nil && reported.CompareAndSwap(false, true) {
				tb.Errorf("simulated %s (%s): %v", kernel, name, err)
			}
			return nil
		})
		// The fields are unexported: set through their address.
		reflect.NewAt(field.Type, unsafe.Pointer(sv.Field(i).UnsafeAddr())).Elem().Set(call)
		simulated = append(simulated, field.Name)
	}
	if len(simulated) == 0 {
		tb.Skipf("x86sim: this binary has no *%s assembly kernels (a build without assembly, such as -tags noasm): the simulated set %q is not tested", suffix, name)
	}
	tb.Logf("simulated set %q: %s under x86sim; %s from %s", name, strings.Join(simulated, ", "), orNone(kept), base.name)
	return &set
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// withKernels runs f with kernel set k (nil: the scalar kernels).
func withKernels(k *kernels, f func()) {
	was := active.Swap(k)
	defer active.Store(was)
	f()
}

// TestSimMatchesAVX2 proves x86sim on this machine's hardware: the AVX2
// kernels run under the simulator give the bits the CPU gives running them
// natively (and the scalar kernels' bits), for MatMat of 1, 2, 5 and 9
// tokens over the vector shapes of every format, and for the activation
// quantiser and the code permutation on their own, edge blocks included.
// Every instruction the AVX2 kernels execute is thereby checked against
// the CPU.
func TestSimMatchesAVX2(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no native AVX2 kernels on this machine or build to compare the simulator with")
	}
	start := time.Now()
	sim := simSet(t, "avx2sim", "AVX2", avx2Kernels)
	if t.Failed() {
		return
	}
	pool := NewPool(2)
	defer pool.Close()
	rng := rand.New(rand.NewPCG(51, 52))
	shapes, calls := 0, 0
	for _, typ := range vecTypes {
		for _, g := range vecShapes(typ) {
			m := pack(t, g, randomGGUF(rng, typ, g.N, g.K))
			shapes++
			for _, b := range []int{1, 2, 5, 9} {
				name := fmt.Sprintf("%s/N%d/K%d/T%d/C%d/B%d", typ, g.N, g.K, g.KTile, g.Columns, b)
				x := randomX(rng, b*g.K)
				const guard = 16
				var ys [3][]float32
				for k, set := range []*kernels{nil, avx2Kernels, sim} {
					ybuf := make([]float32, b*g.N+guard)
					for i := range ybuf {
						ybuf[i] = -12345
					}
					withKernels(set, func() { MatMat(m, x, ybuf[:b*g.N], b, pool) })
					for i := b * g.N; i < len(ybuf); i++ {
						if ybuf[i] != -12345 {
							t.Fatalf("%s %s: wrote past y at %d", name, SIMDName(set), i)
						}
					}
					ys[k] = ybuf[:b*g.N]
				}
				calls++
				for i := range ys[0] {
					if math.Float32bits(ys[2][i]) != math.Float32bits(ys[1][i]) {
						t.Fatalf("%s: y[%d] (token %d row %d): simulated %v (%#08x), native AVX2 %v (%#08x)", name, i, i/g.N, i%g.N,
							ys[2][i], math.Float32bits(ys[2][i]), ys[1][i], math.Float32bits(ys[1][i]))
					}
					if !sameBits(ys[2][i], ys[0][i]) {
						t.Fatalf("%s: y[%d]: simulated %v, scalar %v", name, i, ys[2][i], ys[0][i])
					}
				}
			}
		}
	}
	t.Logf("MatMat: %d shapes x 4 token counts match native AVX2 and scalar bit for bit", shapes)

	// The quantiser on random and edge blocks, and the permutation.
	blocks := simQuantBlocks(rng)
	const nb = 3
	for i := 0; i+nb <= len(blocks); i += nb {
		x := make([]float32, 0, 32*nb)
		for _, b := range blocks[i : i+nb] {
			x = append(x, b...)
		}
		var q, q2 [32*nb + 8]int8
		var d, d2 [nb + 1]float32
		var s, s2 [nb + 1]int32
		avx2Kernels.quantQ8_0(&x[0], &q[0], &d[0], &s[0], nb)
		sim.quantQ8_0(&x[0], &q2[0], &d2[0], &s2[0], nb)
		if q != q2 || s != s2 || math.Float32bits(d[0]) != math.Float32bits(d2[0]) ||
			math.Float32bits(d[1]) != math.Float32bits(d2[1]) || math.Float32bits(d[2]) != math.Float32bits(d2[2]) || d[3] != d2[3] {
			t.Fatalf("quantQ8_0 blocks %d..%d: native %v %v %v, simulated %v %v %v", i, i+nb, q, d, s, q2, d2, s2)
		}
	}
	src := make([]int8, 64*3)
	for i := range src {
		src[i] = int8(rng.IntN(256))
	}
	for _, stride := range []int{64, 256} {
		want := make([]int8, 2*stride+64+16)
		got := make([]int8, len(want))
		for i := range want {
			want[i], got[i] = -99, -99
		}
		avx2Kernels.permute64(&want[8], &src[0], 3, stride)
		sim.permute64(&got[8], &src[0], 3, stride)
		if !slicesEqual(want, got) {
			t.Fatalf("permute64 stride %d: simulated %v, native %v", stride, got, want)
		}
	}
	t.Logf("quantQ8_0: %d blocks, permute64: 2 strides match; %d MatMat calls; %v", len(blocks), calls, time.Since(start).Round(time.Millisecond))
}

// SIMDName names a kernel set for messages.
func SIMDName(k *kernels) string {
	if k == nil {
		return "go"
	}
	return k.name
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// simQuantBlocks are blocks of 32 activations for the quantiser: random
// ones and the edge cases of TestQuantQ8_0AVX2 (zeros, negative zeros, a
// single nonzero, ties of x*127/amax, magnitudes from float32 subnormals to
// beyond the f16 range).
func simQuantBlocks(rng *rand.Rand) [][]float32 {
	var blocks [][]float32
	for i := 0; i < 60; i++ {
		blocks = append(blocks, randomX(rng, 32))
	}
	edge := func(f func(i int) float32) {
		b := make([]float32, 32)
		for i := range b {
			b[i] = f(i)
		}
		blocks = append(blocks, b)
	}
	edge(func(int) float32 { return 0 })
	edge(func(int) float32 { return float32(math.Copysign(0, -1)) })
	edge(func(i int) float32 {
		if i == 7 {
			return -3
		}
		return 0
	})
	edge(func(i int) float32 { return float32(i) - 15.5 })
	edge(func(i int) float32 { return (float32(i) - 16) * 127 / 32 })
	for _, s := range []float64{1e-45, 4.4e-39, 1e-37, 1e-9, 1e-7, 6e-8 * 127, 65504 * 127, 1e30} {
		edge(func(i int) float32 { return float32(s * (float64(i%7) - 3)) })
	}
	return blocks
}

var _ = planar.Q4_0
