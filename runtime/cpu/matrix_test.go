package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// Tolerances.
//
// accTol bounds the float rounding of a kernel against a float64 sum of the
// same products: relative to sum |w*x| (float32 accumulation over a few
// thousand terms loses far less than 1e-5 of the magnitude).
const accTol = 1e-5

// actTol bounds the error of one quantised activation, relative to its
// block's scale d = amax/127: rounding to the nearest code costs d/2, and
// storing the Q8_0 scale as f16 costs |q|*|d - f16(d)| <= 127*d*2^-11 = 0.062d.
// Q8_K keeps its scale in f32, so 0.5d (+ float slack) holds there too.
const actTol = 0.5 + 127.0/2048 + 1e-3

// f16Tol and bf16Tol bound the relative rounding of activations that F16
// and BF16 weights convert to their own type (half an ulp).
const (
	f16Tol  = 1.0 / 2048
	bf16Tol = 1.0 / 256
)

// randomGGUF returns the GGUF bytes of an N x K matrix of type t with random
// codes and plausible finite scales.
func randomGGUF(rng *rand.Rand, t planar.Type, n, k int) []byte {
	src := make([]byte, n*t.RowBytes(k))
	put16 := func(o int, v float32) { binary.LittleEndian.PutUint16(src[o:], planar.F32ToF16(v)) }
	scale := func() float32 { return float32(0.002 + 0.02*rng.Float64()) }
	switch t {
	case planar.F32:
		for i := 0; i < len(src); i += 4 {
			binary.LittleEndian.PutUint32(src[i:], math.Float32bits(float32(rng.NormFloat64()*0.1)))
		}
		return src
	case planar.F16:
		for i := 0; i < len(src); i += 2 {
			put16(i, float32(rng.NormFloat64()*0.1))
		}
		return src
	case planar.BF16:
		for i := 0; i < len(src); i += 2 {
			binary.LittleEndian.PutUint16(src[i:], f32ToBF16(float32(rng.NormFloat64()*0.1)))
		}
		return src
	}
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	bb := t.BlockBytes()
	for o := 0; o < len(src); o += bb {
		switch t {
		case planar.Q4_0, planar.Q5_0, planar.Q8_0:
			put16(o, scale())
		case planar.Q4_K, planar.Q5_K:
			put16(o, scale()/8)
			put16(o+2, scale()/8)
		case planar.Q6_K:
			put16(o+208, scale()/16)
		}
	}
	return src
}

func pack(t testing.TB, g planar.Geometry, src []byte) *Matrix {
	t.Helper()
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		t.Fatalf("%+v: Pack: %v", g, err)
	}
	m := &Matrix{G: g, Blob: blob}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	return m
}

func randomX(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		if rng.IntN(50) == 0 {
			x[i] *= 20 // outliers, as activations have
		}
	}
	if n > 40 {
		clear(x[3:11]) // a run of zeros
	}
	return x
}

// shapes returns geometries of type t that straddle column groups and
// K-tiles: N < C, N = 1, N not a multiple of C, K = T, several tiles,
// C in {1, 4, 8}.
func shapes(t planar.Type) []planar.Geometry {
	u := t.BlockSize()
	if u == 1 {
		u = 8
	}
	return []planar.Geometry{
		{Type: t, N: 1, K: u, Columns: 1, KTile: u},
		{Type: t, N: 3, K: 3 * u, Columns: 8, KTile: u},
		{Type: t, N: 13, K: 6 * u, Columns: 4, KTile: 3 * u},
		{Type: t, N: 37, K: 4 * u, Columns: 8, KTile: 2 * u},
		{Type: t, N: 70, K: 5 * u, Columns: 4, KTile: u},
		{Type: t, N: 33, K: 2 * u, Columns: 1, KTile: 2 * u},
		{Type: t, N: 300, K: 9 * u, Columns: 8, KTile: 3 * u}, // large enough to go parallel
	}
}

// quantisedX returns the activations as the kernels see them: dequantised
// from the scratch (q*d), or the rounded floats, or x itself; and the bound
// on |x - that| for each element.
func quantisedX(t planar.Type, x []float32, b, k int) (xq, bound []float32) {
	var s scratch
	s.prepare(nil, t, x, b, k, nil)
	xq = make([]float32, b*k)
	bound = make([]float32, b*k)
	switch kindOf(t) {
	case actQ8_0, actQ8_K:
		bs := 32
		if kindOf(t) == actQ8_K {
			bs = 256
		}
		for i := range xq {
			blk := i / bs
			xq[i] = float32(s.q[i]) * s.d[blk]
			var amax float32
			for _, v := range x[blk*bs : blk*bs+bs] {
				amax = max(amax, abs32(v))
			}
			bound[i] = actTol * amax / 127
		}
	case actF16, actBF16:
		tol := float32(f16Tol)
		if kindOf(t) == actBF16 {
			tol = bf16Tol
		}
		for i := range xq {
			xq[i] = s.f[i]
			bound[i] = tol * abs32(x[i])
		}
	default:
		copy(xq, x)
	}
	return xq, bound
}

var testTypes = []planar.Type{planar.F32, planar.F16, planar.BF16, planar.Q4_0, planar.Q5_0, planar.Q8_0, planar.Q4_K, planar.Q5_K, planar.Q6_K}

// TestMatMatAgainstRef compares MatMat and MatVec with the scalar reference
// over odd shapes, 1 to 5 tokens and pools of 1 to 3 threads:
//   - against the reference fed the same quantised activations: equal up to
//     float accumulation (accTol);
//   - against MatMatRef on the raw activations: within the activation
//     quantisation bound sum |w|*bound(x) plus accTol;
//   - MatVec of each token equals MatMat's row bit for bit;
//   - nothing is written past y.
//
// It runs with the scalar kernels and, where they run, the assembly ones.
func TestMatMatAgainstRef(t *testing.T) {
	for _, k := range levelModes() {
		t.Run(SIMDName(k), func(t *testing.T) { withKernels(k, func() { testMatMatAgainstRef(t) }) })
	}
}

func testMatMatAgainstRef(t *testing.T) {
	pools := []*Pool{nil, NewPool(2), NewPool(3)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range testTypes {
		for _, g := range shapes(typ) {
			m := pack(t, g, randomGGUF(rng, typ, g.N, g.K))
			w := make([]float32, g.N*g.K)
			for n := 0; n < g.N; n++ {
				planar.DequantRow(g, m.Blob, n, w[n*g.K:(n+1)*g.K])
			}
			for b := 1; b <= 5; b++ {
				pool := pools[b%len(pools)]
				name := fmt.Sprintf("%s/N%d/K%d/T%d/C%d/B%d/threads%d", typ, g.N, g.K, g.KTile, g.Columns, b, pool.Threads())
				x := randomX(rng, b*g.K)
				const guard = 16
				ybuf := make([]float32, b*g.N+guard)
				for i := range ybuf {
					ybuf[i] = -12345
				}
				y := ybuf[:b*g.N]
				MatMat(m, x, y, b, pool)
				for i := b * g.N; i < len(ybuf); i++ {
					if ybuf[i] != -12345 {
						t.Fatalf("%s: MatMat wrote past y at %d", name, i)
					}
				}
				ref := make([]float32, b*g.N)
				MatMatRef(m, x, ref, b)
				xq, xb := quantisedX(typ, x, b, g.K)
				for tok := 0; tok < b; tok++ {
					yv := make([]float32, g.N)
					MatVec(m, x[tok*g.K:(tok+1)*g.K], yv, pool)
					for n := 0; n < g.N; n++ {
						got := y[tok*g.N+n]
						if yv[n] != got {
							t.Fatalf("%s: token %d row %d: MatVec %v, MatMat %v", name, tok, n, yv[n], got)
						}
						var exact, mag, qbound float64
						wr := w[n*g.K : (n+1)*g.K]
						for k, wv := range wr {
							xv := xq[tok*g.K+k]
							exact += float64(wv) * float64(xv)
							mag += math.Abs(float64(wv) * float64(xv))
							qbound += math.Abs(float64(wv)) * float64(xb[tok*g.K+k])
						}
						if d := math.Abs(float64(got) - exact); d > accTol*mag+1e-6 {
							t.Fatalf("%s: token %d row %d: %v, quantised reference %v (|diff| %g > %g)", name, tok, n, got, exact, d, accTol*mag+1e-6)
						}
						r := float64(ref[tok*g.N+n])
						if d := math.Abs(float64(got) - r); d > qbound+accTol*mag+1e-6 {
							t.Fatalf("%s: token %d row %d: %v, reference %v (|diff| %g > bound %g)", name, tok, n, got, r, d, qbound+accTol*mag+1e-6)
						}
					}
				}
			}
		}
	}
}

// TestQ8Quantisers checks the activation quantisers against their ggml
// definitions on hand-made blocks.
func TestQ8Quantisers(t *testing.T) {
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i) - 10.5
	}
	var q [32]int8
	var d float32
	var s int32
	quantQ8_0(x, q[:], &d, &s)
	if want := planar.F16ToF32(planar.F32ToF16(20.5 / 127)); d != want {
		t.Fatalf("Q8_0 d = %v, want %v", d, want)
	}
	var sum int32
	for i, v := range x {
		want := int8(math.RoundToEven(float64(v * (127 / float32(20.5)))))
		if q[i] != want {
			t.Fatalf("Q8_0 q[%d] = %d, want %d", i, q[i], want)
		}
		sum += int32(want)
	}
	if s != sum {
		t.Fatalf("Q8_0 sum = %d, want %d", s, sum)
	}
	if q[31] != 127 {
		t.Fatalf("amax element -> %d, want 127", q[31])
	}

	xk := make([]float32, 256)
	for i := range xk {
		xk[i] = float32(i%37) - 20
	}
	xk[100] = -50 // the largest magnitude is negative: iscale = -127/-50
	var qk [256]int8
	var bs [16]int32
	quantQ8_K(xk, qk[:], &d, bs[:])
	iscale := float32(-127) / -50
	if d != 1/iscale {
		t.Fatalf("Q8_K d = %v, want %v", d, 1/iscale)
	}
	if qk[100] != -127 {
		t.Fatalf("Q8_K q[100] = %d, want -127", qk[100])
	}
	for j := 0; j < 16; j++ {
		var s int32
		for _, v := range qk[16*j : 16*j+16] {
			s += int32(v)
		}
		if s != bs[j] {
			t.Fatalf("bsums[%d] = %d, want %d", j, bs[j], s)
		}
	}
	clear(xk)
	quantQ8_K(xk, qk[:], &d, bs[:])
	if d != 0 || qk[0] != 0 || bs[0] != 0 {
		t.Fatalf("zero block: d=%v", d)
	}
	for _, v := range []float32{0.5, 1.5, 2.5, -0.5, -1.5, 3.49, -3.51} {
		if got, want := nearestInt(v), int32(math.RoundToEven(float64(v))); got != want {
			t.Fatalf("nearestInt(%v) = %d, want %d", v, got, want)
		}
	}
}

func TestF16Inline(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		a, b := f16(uint16(h)), planar.F16ToF32(uint16(h))
		if math.Float32bits(a) != math.Float32bits(b) {
			t.Fatalf("f16(%#04x) = %v, want %v", h, a, b)
		}
	}
}

func TestEmbedRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range testTypes {
		g := planar.Geometry{Type: typ, N: 11, K: 2 * max(typ.BlockSize(), 8), Columns: 4, KTile: max(typ.BlockSize(), 8)}
		src := randomGGUF(rng, typ, g.N, g.K)
		m := pack(t, g, src)
		want := make([]float32, g.K)
		got := make([]float32, g.K)
		for row := 0; row < g.N; row++ {
			rb := typ.RowBytes(g.K)
			if err := planar.DequantGGUF(typ, src[row*rb:(row+1)*rb], want); err != nil {
				t.Fatal(err)
			}
			EmbedRow(m, row, got)
			for k := range want {
				if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
					t.Fatalf("%s row %d [%d]: %v, want %v", typ, row, k, got[k], want[k])
				}
			}
		}
	}
}

func TestCheck(t *testing.T) {
	g := planar.Geometry{Type: planar.Q4_0, N: 8, K: 64, Columns: 4, KTile: 32}
	m := &Matrix{G: g, Blob: make([]byte, g.Size()-1)}
	if err := m.Check(); err == nil {
		t.Fatal("short blob accepted")
	}
	m = &Matrix{G: planar.Geometry{Type: planar.Q4_1, N: 8, K: 64, Columns: 4, KTile: 32}}
	if err := m.Check(); err == nil {
		t.Fatal("Q4_1 accepted")
	}
}

func TestNoAllocs(t *testing.T) {
	for _, k := range levelModes() {
		t.Run(SIMDName(k), func(t *testing.T) { withKernels(k, func() { testNoAllocs(t) }) })
	}
}

func testNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pool := NewPool(2)
	defer pool.Close()
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q5_0, planar.Q8_0, planar.Q4_K, planar.Q5_K, planar.Q6_K, planar.F16, planar.F32} {
		g := planar.Geometry{Type: typ, N: 512, K: 512, Columns: 4, KTile: 256}
		m := pack(t, g, randomGGUF(rng, typ, g.N, g.K))
		x := randomX(rng, 4*g.K)
		y := make([]float32, 4*g.N)
		MatMat(m, x, y, 4, pool) // grow the scratch
		if a := testing.AllocsPerRun(20, func() { MatVec(m, x[:g.K], y[:g.N], pool) }); a != 0 {
			t.Errorf("%s MatVec: %v allocations per call", typ, a)
		}
		if a := testing.AllocsPerRun(20, func() { MatMat(m, x, y, 4, pool) }); a != 0 {
			t.Errorf("%s MatMat: %v allocations per call", typ, a)
		}
	}
}

// TestBlobLayout checks the cached layout against planar's PlaneOffset.
func TestBlobLayout(t *testing.T) {
	for _, typ := range testTypes {
		for _, g := range append(shapes(typ), planar.Geometry{Type: typ, N: 1000, K: 1024, Columns: 64, KTile: 256}) {
			var l blobLayout
			l.init(g)
			if l.group[g.Columns] != g.Size() {
				t.Fatalf("%+v: size %d, want %d", g, l.group[g.Columns], g.Size())
			}
			for c := 0; c < g.Columns; c++ {
				for tt := 0; tt < g.Tiles(); tt++ {
					for p := 0; p < l.np; p++ {
						off, per := g.PlaneOffset(c, tt, p)
						if got := l.group[c] + tt*l.tile[c] + l.plane[c][p]; got != off || l.per[p] != per {
							t.Fatalf("%+v: group %d tile %d plane %d at %d (%d per row), want %d (%d)", g, c, tt, p, got, l.per[p], off, per)
						}
					}
				}
			}
		}
	}
}
