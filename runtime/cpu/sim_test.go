package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/xdna-go/xdna/internal/x86sim"
	"github.com/xdna-go/xdna/planar"
)

// simFuncs are the functions of this test binary (x86sim.Self)
// disassembled so far.
var simFuncs struct {
	mu    sync.Mutex
	funcs map[string]*x86sim.Func
}

func simFunc(img *x86sim.Image, sym string) (*x86sim.Func, error) {
	simFuncs.mu.Lock()
	defer simFuncs.mu.Unlock()
	if f := simFuncs.funcs[sym]; f != nil {
		return f, nil
	}
	f, err := img.Func(sym)
	if err != nil {
		return nil, err
	}
	if simFuncs.funcs == nil {
		simFuncs.funcs = map[string]*x86sim.Func{}
	}
	simFuncs.funcs[sym] = f
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
	img, err := x86sim.Self()
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
		if field.Type.Kind() != reflect.Func || sv.Field(i).IsNil() {
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
	tb.Logf("simulated set %q: %s under x86sim; %s native, as set %q has them", name, strings.Join(simulated, ", "), orNone(kept), base.name)
	if base.tall != nil {
		// The tall set's kernels of this level are named field + "Tall" +
		// suffix (q4_0RowsTallAVX512); the rest it borrows run natively.
		set.tall = simSet(tb, name+"-tall", "Tall"+suffix, base.tall)
	}
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
				simCompare(t, sim, m, randomX(rng, b*g.K), b, pool)
				calls++
			}
		}
	}
	t.Logf("MatMat: %d shapes x 4 token counts match native AVX2 and scalar bit for bit", shapes)

	// The fuzz targets' seeds: blobs of arbitrary bytes (NaN and Inf
	// scales, every code), so NaN payloads must match the CPU's too.
	type seed struct {
		typ                    uint8
		n                      uint16
		tileUnits, tiles, cols uint8
		b                      int
	}
	var seeds []seed
	for i := range vecTypes {
		seeds = append(seeds,
			seed{uint8(i), 37, 1, 2, 7, 1}, seed{uint8(i), 4, 0, 0, 0, 1},
			seed{uint8(i), 37, 1, 2, 7, 2 + 3}, seed{uint8(i), 299, 2, 3, 3, 2 + 9})
	}
	for i, sd := range seeds {
		g := fuzzGeometry(sd.typ, sd.n, sd.tileUnits, sd.tiles, sd.cols)
		r := rand.New(rand.NewPCG(uint64(i), 1))
		blob := make([]byte, g.Size())
		for j := range blob {
			blob[j] = byte(r.Uint32())
		}
		m := &Matrix{G: g, Blob: blob}
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
		x := randomX(r, sd.b*g.K)
		if i%2 == 1 {
			for j := range x {
				x[j] *= 1e-30 // tiny blocks: subnormal scales
			}
		}
		simCompare(t, sim, m, x, sd.b, pool)
		calls++
	}
	t.Logf("fuzz seeds: %d arbitrary-byte matrices match", len(seeds))

	// The quantiser on random and edge blocks, and the permutation.
	blocks := q8_0Blocks(rng, 60)
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
	kblocks := q8KBlocks(rng, 8)
	for i := 0; i+2 <= len(kblocks); i += 2 {
		x := append(slices.Clip(kblocks[i]), kblocks[i+1]...)
		var q, q2 [512 + 8]int8
		var d, d2 [3]float32
		var s, s2 [33]int32
		avx2Kernels.quantQ8_K(&x[0], &q[0], &d[0], &s[0], 2)
		sim.quantQ8_K(&x[0], &q2[0], &d2[0], &s2[0], 2)
		if q != q2 || s != s2 || math.Float32bits(d[0]) != math.Float32bits(d2[0]) ||
			math.Float32bits(d[1]) != math.Float32bits(d2[1]) || d[2] != d2[2] {
			t.Fatalf("quantQ8_K blocks %d..%d: native %v %v %v, simulated %v %v %v", i, i+2, q, d, s, q2, d2, s2)
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
		if !slices.Equal(want, got) {
			t.Fatalf("permute64 stride %d: simulated %v, native %v", stride, got, want)
		}
	}
	t.Logf("quantQ8_0: %d blocks, quantQ8_K: %d blocks, permute64: 2 strides match; %d MatMat calls; %v", len(blocks), len(kblocks), calls, time.Since(start).Round(time.Millisecond))
}

// TestSimAllF16Scales is TestSIMDAllF16Scales under the simulator: every
// binary16 pattern as the scale of a row (zeros, subnormals, Inf, NaNs),
// the simulated AVX2 kernels against the native ones (VCVTPH2PS and what
// follows it on every special value, NaN payloads included).
func TestSimAllF16Scales(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no native AVX2 kernels on this machine or build to compare the simulator with")
	}
	sim := simSet(t, "avx2sim", "AVX2", avx2Kernels)
	pool := NewPool(2)
	defer pool.Close()
	rng := rand.New(rand.NewPCG(33, 34))
	for _, typ := range vecTypes {
		u := max(64, typ.BlockSize())
		g := planar.Geometry{Type: typ, N: 1 << 16, K: u, Columns: 4, KTile: u}
		m := pack(t, g, randomGGUF(rng, typ, g.N, g.K))
		p := scalePlanes[typ]
		for c := 0; c < g.Columns; c++ {
			first, n := g.GroupRows(c)
			off, per := g.PlaneOffset(c, 0, p)
			for i := 0; i < n; i++ {
				for o := off + i*per; o < off+(i+1)*per; o += 2 {
					binary.LittleEndian.PutUint16(m.Blob[o:], uint16(first+i))
				}
			}
		}
		for _, b := range []int{1, 5} {
			simCompare(t, sim, m, randomX(rng, b*g.K), b, pool)
		}
	}
}

// simCompare runs MatMat of b tokens on m with the scalar kernels, the
// native AVX2 kernels and the simulated set sim, and fails unless the
// simulated outputs have the native ones' bits exactly (NaN payloads
// included) and the scalar ones' (any NaN equal), writing nothing past y.
func simCompare(t *testing.T, sim *kernels, m *Matrix, x []float32, b int, pool *Pool) {
	t.Helper()
	g := m.G
	name := fmt.Sprintf("%s/N%d/K%d/T%d/C%d/B%d", g.Type, g.N, g.K, g.KTile, g.Columns, b)
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

// SIMDName names a kernel set for messages.
func SIMDName(k *kernels) string {
	if k == nil {
		return "go"
	}
	return k.name
}
