package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// simdModes returns the two paths of the vector operations (vecops.go):
// the Go twins always, and the AVX2 code where it runs (every assembly
// kernel set uses it).
func simdModes() []bool {
	if haveAVX2 {
		return []bool{false, true}
	}
	return []bool{false}
}

// withSIMD runs f with the assembly kernels on (the best set) or off.
func withSIMD(on bool, f func()) {
	was := SetSIMD(on)
	defer SetSIMD(was)
	f()
}

func modeName(on bool) string {
	if on {
		return "simd"
	}
	return "go"
}

// levelModes returns the kernel sets to run natively: nil (the scalar
// kernels) always, then every set this CPU and build run, best first
// (avx512 where the CPU has it, avx2).
func levelModes() []*kernels { return append([]*kernels{nil}, levels()...) }

// testLevel is an assembly kernel set a comparison test checks against the
// scalar kernels.
type testLevel struct {
	name string
	set  func(tb testing.TB) *kernels // may skip tb, saying why
}

// testLevels returns the assembly kernel sets to check: each one this CPU
// runs, natively, and where the CPU has AVX2 but not AVX-512, the AVX-512
// set under the x86sim interpreter (simSet: its kernels run instruction by
// instruction from the test binary's disassembly, the AVX2 ones it shares
// natively), which the test logs. On a CPU with AVX-512 that set runs
// natively instead.
func testLevels() []testLevel {
	var l []testLevel
	for _, k := range levels() {
		l = append(l, testLevel{k.name, func(testing.TB) *kernels { return k }})
	}
	if haveAVX2 && !haveAVX512 {
		l = append(l, testLevel{"avx512-sim", func(tb testing.TB) *kernels {
			k := simSet(tb, "avx512", "AVX512", avx512Kernels)
			tb.Log("avx512 kernels run under the x86sim interpreter, not natively: this CPU has no AVX-512")
			return k
		}})
	}
	return l
}

// forLevels runs f in a subtest for each of testLevels with its kernel
// set; it skips t where no assembly kernels run.
func forLevels(t *testing.T, f func(t *testing.T, k *kernels)) {
	ls := testLevels()
	if len(ls) == 0 {
		t.Skip("no assembly kernels on this machine or build")
	}
	for _, l := range ls {
		t.Run(l.name, func(t *testing.T) { f(t, l.set(t)) })
	}
}

// sameBits reports whether a and b are the same float32, counting every
// NaN as the same (the NaN payload a NaN scale leaves may differ between
// the paths).
func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// vecShapes are geometries the vector kernels take (T a multiple of 64 for
// the 32-blocks), straddling groups, rows not multiples of 4, one and
// several tiles.
func vecShapes(t planar.Type) []planar.Geometry {
	u := t.BlockSize()
	if u == 32 {
		u = 64
	}
	return []planar.Geometry{
		{Type: t, N: 1, K: u, Columns: 1, KTile: u},
		{Type: t, N: 4, K: u, Columns: 1, KTile: u},
		{Type: t, N: 7, K: 3 * u, Columns: 8, KTile: u},
		{Type: t, N: 13, K: 6 * u, Columns: 4, KTile: 3 * u},
		{Type: t, N: 37, K: 4 * u, Columns: 8, KTile: 2 * u},
		{Type: t, N: 70, K: 5 * u, Columns: 4, KTile: u},
		{Type: t, N: 33, K: 2 * u, Columns: 1, KTile: 2 * u},
		{Type: t, N: 300, K: 9 * u, Columns: 8, KTile: 3 * u},
		// More K-tiles than one run of a GEMM panel holds (gemmChunk).
		{Type: t, N: 9, K: 40 * u, Columns: 2, KTile: u},
		// Tiles of 4 and 5 units: Q4_0's eight-row step takes the
		// scales of tiles up to 256 (4 pairs) by permutes, longer ones
		// by broadcasts.
		{Type: t, N: 45, K: 8 * u, Columns: 2, KTile: 4 * u},
		{Type: t, N: 27, K: 10 * u, Columns: 1, KTile: 5 * u},
		// Groups of tallRows rows and more (kernels.rowsFor).
		{Type: t, N: 2*tallRows + 6, K: 2 * u, Columns: 2, KTile: u},
	}
}

var vecTypes = []planar.Type{planar.Q4_0, planar.Q5_0, planar.Q8_0, planar.Q4_K, planar.Q5_K, planar.Q6_K}

// TestSIMDMatchesGo checks that the assembly kernels give the scalar
// kernels' outputs bit for bit, for MatVec and MatMat of 1 to 13 tokens,
// over odd shapes and pools, and write nothing past y.
func TestSIMDMatchesGo(t *testing.T) {
	forLevels(t, func(t *testing.T, ks *kernels) {
		pools := []*Pool{nil, NewPool(2), NewPool(3)}
		defer func() {
			for _, p := range pools {
				p.Close()
			}
		}()
		rng := rand.New(rand.NewPCG(11, 12))
		for _, typ := range vecTypes {
			for _, g := range vecShapes(typ) {
				m := pack(t, g, randomGGUF(rng, typ, g.N, g.K))
				for i, b := range []int{1, 2, 3, 4, 5, 8, 9, 13} {
					pool := pools[i%len(pools)]
					name := fmt.Sprintf("%s/N%d/K%d/T%d/C%d/B%d/threads%d", typ, g.N, g.K, g.KTile, g.Columns, b, pool.Threads())
					x := randomX(rng, b*g.K)
					const guard = 16
					var ys [2][]float32
					for k, set := range []*kernels{nil, ks} {
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
						if !sameBits(ys[0][i], ys[1][i]) {
							t.Fatalf("%s: y[%d] (token %d row %d): go %v, %s %v", name, i, i/g.N, i%g.N, ys[0][i], ks.name, ys[1][i])
						}
					}
				}
			}
		}
	})
}

// TestQuantQ8_0AVX2 compares the assembly quantiser with quantQ8_0 bit for
// bit on random blocks and on edge blocks: all zero, a single nonzero, exact
// ties of x*127/amax, magnitudes near the f16 subnormal and overflow limits,
// negative zeros.
func TestQuantQ8_0AVX2(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no assembly kernels on this machine or build")
	}
	blocks := q8_0Blocks(rand.New(rand.NewPCG(21, 22)), 2000)
	const nb = 5
	for i := 0; i+nb <= len(blocks); i++ {
		x := make([]float32, 0, 32*nb)
		for _, b := range blocks[i : i+nb] {
			x = append(x, b...)
		}
		var q, q2 [32 * nb]int8
		var d, d2 [nb]float32
		var s, s2 [nb]int32
		for j := 0; j < nb; j++ {
			quantQ8_0(x[32*j:], q[32*j:], &d[j], &s[j])
		}
		quantQ8_0AVX2(&x[0], &q2[0], &d2[0], &s2[0], nb)
		if q != q2 || s != s2 {
			t.Fatalf("blocks %d..%d: codes or sums differ:\n go %v %v\nasm %v %v", i, i+nb, q, s, q2, s2)
		}
		sameScales(t, i, d[:], d2[:])
	}
}

// q8KBlocks returns blocks of 256 activations for the Q8_K quantisers:
// random ones and edge ones: all zero, negative zeros, a single nonzero,
// the largest magnitude twice with either sign first (the scale's sign is
// the first one's), exact ties of x*127/amax, magnitudes from float32
// subnormals (where 127/amax overflows) to near the float32 limit, and
// NaNs and infinities among finite values, and random blocks with NaNs in
// random places.
func q8KBlocks(rng *rand.Rand, random int) [][]float32 {
	blocks, edge := blocksOf(rng, 256, random)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	edge(func(int) float32 { return 0 })
	edge(func(int) float32 { return float32(math.Copysign(0, -1)) })
	edge(func(int) float32 { return nan })
	for _, at := range []int{0, 7, 200, 255} {
		edge(func(i int) float32 {
			if i == at {
				return -3
			}
			return 0
		})
	}
	for _, first := range []float32{-5, 5} {
		edge(func(i int) float32 {
			switch i {
			case 100:
				return first
			case 101, 180:
				return -first
			}
			return float32(i%9) - 4
		})
	}
	edge(func(i int) float32 { return float32(i%32) - 15.5 })
	edge(func(i int) float32 { return (float32(i%32) - 16) * 127 / 32 })
	for _, s := range []float64{1e-45, 4.4e-39, 1e-37, 1e-9, 1e-7, 65504 * 127, 1e30, 3e38} {
		edge(func(i int) float32 { return float32(s * (float64(i%7) - 3)) })
	}
	for _, v := range []float32{nan, -nan, inf, -inf, math.Float32frombits(0x7f800001), math.Float32frombits(0xffc12345)} {
		for _, at := range []int{0, 77, 231, 255} {
			edge(func(i int) float32 {
				if i == at {
					return v
				}
				return float32(i%11) - 5.25
			})
		}
	}
	// random blocks with NaNs in random places, some after the maximum
	for i := 0; i < random; i++ {
		b := randomX(rng, 256)
		for j := 0; j < 1+rng.IntN(8); j++ {
			b[rng.IntN(256)] = nan
		}
		*blocks = append(*blocks, b)
	}
	return *blocks
}

// blocksOf returns random random blocks of size activations, and edge,
// which appends the block whose element i is f(i).
func blocksOf(rng *rand.Rand, size, random int) (*[][]float32, func(f func(i int) float32)) {
	var blocks [][]float32
	for i := 0; i < random; i++ {
		blocks = append(blocks, randomX(rng, size))
	}
	return &blocks, func(f func(i int) float32) {
		b := make([]float32, size)
		for i := range b {
			b[i] = f(i)
		}
		blocks = append(blocks, b)
	}
}

// q8_0Blocks are blocks of 32 activations for the Q8_0 quantisers: random
// ones and edge ones: zeros, negative zeros, a single nonzero, ties of
// x*127/amax, magnitudes from float32 subnormals (where 127/amax overflows
// to Inf) to beyond the f16 range.
func q8_0Blocks(rng *rand.Rand, random int) [][]float32 {
	blocks, edge := blocksOf(rng, 32, random)
	edge(func(int) float32 { return 0 })
	edge(func(int) float32 { return float32(math.Copysign(0, -1)) })
	edge(func(i int) float32 {
		if i == 7 {
			return -3
		}
		return 0
	})
	edge(func(i int) float32 { return float32(i) - 15.5 })            // ties at x*127/amax
	edge(func(i int) float32 { return (float32(i) - 16) * 127 / 32 }) // more ties
	for _, s := range []float64{1e-45, 4.4e-39, 1e-37, 1e-9, 1e-7, 6e-8 * 127, 65504 * 127, 1e30} {
		edge(func(i int) float32 { return float32(s * (float64(i%7) - 3)) })
	}
	return *blocks
}

// TestQuantQ8_KAVX2 compares the assembly quantiser with quantQ8_K bit for
// bit, codes, sums and scales, on q8KBlocks (every input, NaN and
// infinities included) and on the bytes around the outputs.
func TestQuantQ8_KAVX2(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no assembly kernels on this machine or build")
	}
	blocks := q8KBlocks(rand.New(rand.NewPCG(23, 24)), 300)
	const nb = 3
	for i := range blocks {
		x := make([]float32, 0, 256*nb)
		for j := 0; j < nb; j++ {
			x = append(x, blocks[(i+j)%len(blocks)]...)
		}
		var q, q2 [256*nb + 1]int8
		var d, d2 [nb + 1]float32
		var s, s2 [16*nb + 1]int32
		q[256*nb], q2[256*nb], d[nb], d2[nb], s[16*nb], s2[16*nb] = 9, 9, 9, 9, 9, 9
		for j := 0; j < nb; j++ {
			quantQ8_K(x[256*j:], q[256*j:], &d[j], s[16*j:])
		}
		quantQ8_KAVX2(&x[0], &q2[0], &d2[0], &s2[0], nb)
		if q != q2 || s != s2 {
			t.Fatalf("blocks %d..%d: codes or sums differ:\n go %v %v\nasm %v %v", i, i+nb, q, s, q2, s2)
		}
		sameScales(t, i, d[:], d2[:])
	}
}

// sameScales fails t unless the blocks' scales d (from block first on)
// and the assembly's d2 have the same bits.
func sameScales(t *testing.T, first int, d, d2 []float32) {
	t.Helper()
	for j := range d {
		if math.Float32bits(d[j]) != math.Float32bits(d2[j]) {
			t.Fatalf("block %d: d = %v, asm %v", first+j, d[j], d2[j])
		}
	}
}

// TestPermute64AVX2 compares the assembly permutation with permute64,
// including the destination stride and the bytes around the output.
func TestPermute64AVX2(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no assembly kernels on this machine or build")
	}
	src := make([]int8, 64*3)
	for i := range src {
		src[i] = int8(i*7 + 3)
	}
	for _, stride := range []int{64, 256} {
		want := make([]int8, 2*stride+64+16)
		got := make([]int8, len(want))
		for i := range want {
			want[i], got[i] = -99, -99
		}
		for c := 0; c < 3; c++ {
			permute64(want[8+c*stride:], src[64*c:])
		}
		permute64AVX2(&got[8], &src[0], 3, stride)
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("stride %d: byte %d = %d, want %d", stride, i, got[i], want[i])
			}
		}
	}
}

// scalePlanes are the planes of f16 scales of each format, every 2 bytes
// of which TestSIMDAllF16Scales overwrites.
var scalePlanes = map[planar.Type]int{planar.Q4_0: 1, planar.Q5_0: 2, planar.Q8_0: 1, planar.Q4_K: 2, planar.Q5_K: 3, planar.Q6_K: 2}

// TestSIMDAllF16Scales runs every binary16 pattern (zeros, subnormals,
// normals, infinities, NaNs) through the f16 scales of each format, row n
// taking pattern n in all its blocks, and compares the assembly kernels
// (VCVTPH2PS) with the scalar ones (the f16 table) bit for bit, NaNs equal.
func TestSIMDAllF16Scales(t *testing.T) {
	forLevels(t, func(t *testing.T, ks *kernels) {
		rng := rand.New(rand.NewPCG(31, 32))
		for _, typ := range vecTypes {
			u := max(64, typ.BlockSize())
			g := planar.Geometry{Type: typ, N: 1 << 16, K: 2 * u, Columns: 4, KTile: u}
			m := pack(t, g, randomGGUF(rng, typ, g.N, g.K))
			p := scalePlanes[typ]
			for c := 0; c < g.Columns; c++ {
				first, n := g.GroupRows(c)
				for tt := 0; tt < g.Tiles(); tt++ {
					off, per := g.PlaneOffset(c, tt, p)
					for i := 0; i < n; i++ {
						for o := off + i*per; o < off+(i+1)*per; o += 2 {
							binary.LittleEndian.PutUint16(m.Blob[o:], uint16(first+i))
						}
					}
				}
			}
			// The groups are tall (kernels.rowsFor): a set with a tall set
			// runs again without it, its own kernels on these groups.
			sets := []*kernels{ks}
			if ks.tall != nil {
				own := *ks
				own.name, own.tall = ks.name+" (no tall set)", nil
				sets = append(sets, &own)
			}
			for _, b := range []int{1, 5} {
				x := randomX(rng, b*g.K)
				want := make([]float32, b*g.N)
				withKernels(nil, func() { MatMat(m, x, want, b, nil) })
				for _, set := range sets {
					y := make([]float32, b*g.N)
					withKernels(set, func() { MatMat(m, x, y, b, nil) })
					for i := range want {
						if !sameBits(want[i], y[i]) {
							t.Fatalf("%s B%d: row %d (scale %#04x) token %d: go %v, %s %v", typ, b, i%g.N, i%g.N, i/g.N, want[i], set.name, y[i])
						}
					}
				}
			}
		}
	})
}

// fuzzGeometry makes a geometry the vector kernels take from fuzz input:
// small, with odd row counts, 1 to 8 groups and 1 to 4 tiles.
func fuzzGeometry(typ uint8, n uint16, tileUnits, tiles, cols uint8) planar.Geometry {
	t := vecTypes[int(typ)%len(vecTypes)]
	u := max(64, t.BlockSize())
	tu := 1 + int(tileUnits)%3
	if t.BlockSize() == 256 {
		tu = 1 + int(tileUnits)%2
	}
	T := tu * u
	return planar.Geometry{Type: t, N: 1 + int(n)%300, K: T * (1 + int(tiles)%4), Columns: 1 + int(cols)%8, KTile: T}
}

// fuzzMatMat compares the assembly path of every kernel set this CPU runs
// with the scalar kernels on a blob of arbitrary bytes (any scale, any
// code: the kernels read no structure into them), for b tokens of finite
// activations.
func fuzzMatMat(t *testing.T, g planar.Geometry, b int, seed uint64, raw []byte) {
	if !haveAVX2 {
		t.Skip("no assembly kernels on this machine or build")
	}
	compareArbitrary(t, g, b, seed, raw, levels())
}

// compareArbitrary is fuzzMatMat for the kernel sets sets.
func compareArbitrary(t *testing.T, g planar.Geometry, b int, seed uint64, raw []byte, sets []*kernels) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	blob := make([]byte, g.Size())
	for i := range blob {
		blob[i] = byte(rng.Uint32())
	}
	for i, v := range raw {
		blob[(i*7919)%len(blob)] ^= v
	}
	m := &Matrix{G: g, Blob: blob}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	x := randomX(rng, b*g.K)
	if len(raw) > 0 {
		// a magnitude from the input, finite: tiny to huge blocks
		scale := float32(math.Ldexp(1, int(int8(raw[0]))%40))
		for i := range x {
			x[i] *= scale
		}
	}
	want := make([]float32, b*g.N)
	withKernels(nil, func() { MatMat(m, x, want, b, nil) })
	for _, ks := range sets {
		got := make([]float32, b*g.N)
		withKernels(ks, func() { MatMat(m, x, got, b, nil) })
		for i := range want {
			if !sameBits(want[i], got[i]) {
				t.Fatalf("%+v B%d: y[%d] (token %d row %d): go %v, %s %v", g, b, i, i/g.N, i%g.N, want[i], ks.name, got[i])
			}
		}
	}
}

// TestSIMDArbitraryCodes runs the fuzz targets' comparison on every level
// of testLevels (the AVX-512 set under x86sim where the CPU has no
// AVX-512, which the fuzz targets themselves do not run: too slow for
// their iteration counts) over 120 seeded cases: random geometries, 1 to
// 13 tokens, blobs of random bytes, so codes and scales outside what a
// quantiser writes (Q6_K codes beyond -32..31, any f16) included.
func TestSIMDArbitraryCodes(t *testing.T) {
	forLevels(t, func(t *testing.T, ks *kernels) {
		rng := rand.New(rand.NewPCG(61, 62))
		for i := 0; i < 120; i++ {
			g := fuzzGeometry(uint8(i), uint16(rng.IntN(1<<16)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)))
			b := 1 // MatVec: the rows kernels, for every format
			if i%12 >= 6 {
				b = 2 + rng.IntN(12) // the GEMM
			}
			raw := []byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}
			compareArbitrary(t, g, b, rng.Uint64(), raw, []*kernels{ks})
		}
	})
}

// FuzzMatVec checks MatVec's assembly path against the scalar kernels
// (CI: go test -fuzz FuzzMatVec -fuzztime 2000x ./runtime/cpu).
func FuzzMatVec(f *testing.F) {
	for i := range vecTypes {
		f.Add(uint8(i), uint16(37), uint8(1), uint8(2), uint8(7), uint64(i), []byte{0})
		f.Add(uint8(i), uint16(4), uint8(0), uint8(0), uint8(0), uint64(i+10), []byte{0xf0, 1, 2})
	}
	f.Fuzz(func(t *testing.T, typ uint8, n uint16, tileUnits, tiles, cols uint8, seed uint64, raw []byte) {
		fuzzMatMat(t, fuzzGeometry(typ, n, tileUnits, tiles, cols), 1, seed, raw)
	})
}

// FuzzMatMat is FuzzMatVec for 2 to 13 tokens.
func FuzzMatMat(f *testing.F) {
	for i := range vecTypes {
		f.Add(uint8(i), uint16(37), uint8(1), uint8(2), uint8(7), uint8(3), uint64(i), []byte{0})
		f.Add(uint8(i), uint16(299), uint8(2), uint8(3), uint8(3), uint8(9), uint64(i+10), []byte{0x08, 9})
	}
	f.Fuzz(func(t *testing.T, typ uint8, n uint16, tileUnits, tiles, cols, b uint8, seed uint64, raw []byte) {
		fuzzMatMat(t, fuzzGeometry(typ, n, tileUnits, tiles, cols), 2+int(b)%12, seed, raw)
	})
}

// FuzzQuantQ8_0 checks the assembly activation quantiser against
// quantQ8_0 on finite values made from the input bits.
func FuzzQuantQ8_0(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 192})
	f.Add(make([]byte, 128))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !haveAVX2 {
			t.Skip("no assembly kernels on this machine or build")
		}
		nb := max(1, (len(raw)/4+31)/32)
		x := make([]float32, 32*nb)
		copy(x, fuzzFloats(raw))
		for i := range x {
			if math.IsNaN(float64(x[i])) || math.IsInf(float64(x[i]), 0) {
				x[i] = 0
			}
		}
		q, q2 := make([]int8, len(x)), make([]int8, len(x))
		d, d2 := make([]float32, nb), make([]float32, nb)
		s, s2 := make([]int32, nb), make([]int32, nb)
		for j := 0; j < nb; j++ {
			quantQ8_0(x[32*j:], q[32*j:], &d[j], &s[j])
		}
		quantQ8_0AVX2(&x[0], &q2[0], &d2[0], &s2[0], nb)
		for i := range q {
			if q[i] != q2[i] {
				t.Fatalf("q[%d] = %d, asm %d (x %v)", i, q[i], q2[i], x[i])
			}
		}
		for j := range d {
			if math.Float32bits(d[j]) != math.Float32bits(d2[j]) || s[j] != s2[j] {
				t.Fatalf("block %d: d %v s %d, asm d %v s %d", j, d[j], s[j], d2[j], s2[j])
			}
		}
	})
}

// TestKernelsUseVEXRegistersOnly checks that the generated assembly names
// no vector register above 15 outside the AVX-512 kernels (whose names end
// in AVX512): X16-X31 and Y16-Y31 need AVX-512 (EVEX), so such a kernel
// would pass its tests on an AVX-512 machine and fault with SIGILL on the
// AVX2 machines it is for. avo allocates them when a kernel runs short of
// registers.
func TestKernelsUseVEXRegistersOnly(t *testing.T) {
	files, err := filepath.Glob("*_amd64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no assembly files found (%v)", err)
	}
	high := regexp.MustCompile(`\b[XYZ](1[6-9]|2[0-9]|3[01])\b`)
	highXY := regexp.MustCompile(`\b[XY](1[6-9]|2[0-9]|3[01])\b`)
	text := regexp.MustCompile(`^TEXT ·(\w+)\(SB\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fn := ""
		for i, line := range strings.Split(string(b), "\n") {
			if m := text.FindStringSubmatch(line); m != nil {
				fn = m[1]
			}
			if !high.MatchString(line) {
				continue
			}
			if !strings.HasSuffix(fn, "AVX512") {
				t.Errorf("%s:%d: %s: register needs AVX-512", f, i+1, strings.TrimSpace(line))
			} else if op := strings.Fields(line)[0]; highXY.MatchString(line) && !evexFVLBW[op] {
				t.Errorf("%s:%d: %s: %s on X16-X31 or Y16-Y31 is not known to be in AVX512F, BW or VL (the avx512 level's features): add it to evexFVLBW if the SDM says so", f, i+1, strings.TrimSpace(line), op)
			}
		}
	}
}

// evexFVLBW are the instructions whose EVEX forms on xmm and ymm registers
// need only AVX512F+VL or AVX512BW+VL (Intel SDM), which the AVX-512
// kernels may use on X16-X31 and Y16-Y31. Others (VPINSRD: AVX512DQ) would
// need a feature the avx512 level does not check, and VEX-only ones
// (VEXTRACTF128, VPSIGNB) do not assemble there at all.
var evexFVLBW = map[string]bool{
	"VMOVDQU64": true, "VMOVDQU32": true, "VPADDD": true, "VPSUBD": true, "VPADDW": true, "VPSUBW": true,
	"VPSRLW": true, "VPSLLD": true, "VPANDD": true, "VPXORD": true, "VPSHUFB": true,
	"VPSHUFD": true, "VPUNPCKLDQ": true, "VPUNPCKHDQ": true, "VPUNPCKLQDQ": true,
	"VPUNPCKHQDQ": true, "VPMADDWD": true, "VPMADDUBSW": true, "VPERMD": true,
	"VPERMPS": true, "VCVTDQ2PS": true, "VCVTPH2PS": true, "VMULPS": true, "VADDPS": true,
	"VSUBPS": true, "VBROADCASTSS": true, "VMOVD": true, "VMOVQ": true, "VMOVUPS": true,
	"VEXTRACTI64X4": true, "VINSERTI64X4": true, "VINSERTI32X4": true, "VEXTRACTF64X4": true,
	"VPBROADCASTD": true, "VPINSRW": true, "VPABSB": true, "VPSUBB": true, "VPMOVSXBW": true,
	"VPERMW": true,
}

// TestSetLevel checks that every level Levels names can be selected and is
// then the one SIMD reports, that "go" is always last, and that a level
// this machine does not run is refused by name.
func TestSetLevel(t *testing.T) {
	ls := Levels()
	if ls[len(ls)-1] != "go" {
		t.Fatalf("Levels() = %v, want go last", ls)
	}
	orig := SIMD()
	defer SetLevel(orig)
	for _, l := range ls {
		if _, err := SetLevel(l); err != nil {
			t.Fatalf("SetLevel(%q): %v", l, err)
		}
		if SIMD() != l {
			t.Fatalf("after SetLevel(%q), SIMD() = %q", l, SIMD())
		}
	}
	_, err := SetLevel("avx9000")
	if err == nil || !strings.Contains(err.Error(), `"avx9000"`) {
		t.Fatalf("SetLevel(avx9000): err = %v, want one naming it", err)
	}
	if SIMD() != ls[len(ls)-1] {
		t.Fatalf("a refused SetLevel changed the level to %q", SIMD())
	}
}

// TestTallGroupsKernels checks the choice of rows kernels by group height:
// on groups of tallRows rows or more the AVX-512 set's Q4_0 products take
// its tall kernel and its Q8_0 ones the AVX2 kernel, below that its own;
// its Q5_0 ones its own on both; the AVX2 set its own on all.
func TestTallGroupsKernels(t *testing.T) {
	same := func(a, b any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	for _, c := range []struct {
		n          int
		k          *kernels
		q4, q8, q5 any
	}{
		{8 * (tallRows - 1), avx512Kernels, q4_0RowsAVX512, q8_0RowsAVX512, q5_0RowsAVX512},
		{8 * tallRows, avx512Kernels, q4_0RowsTallAVX512, q8_0RowsAVX2, q5_0RowsAVX512},
		{8 * tallRows, avx2Kernels, q4_0RowsAVX2, q8_0RowsAVX2, q5_0RowsAVX2},
		{8 * (tallRows - 1), avx2Kernels, q4_0RowsAVX2, q8_0RowsAVX2, q5_0RowsAVX2},
	} {
		g := planar.Geometry{N: c.n, K: 128, Columns: 8, KTile: 128}
		for _, f := range []struct {
			t    planar.Type
			want any
			got  func(*kernels) any
		}{
			{planar.Q4_0, c.q4, func(k *kernels) any { return k.q4_0Rows }},
			{planar.Q8_0, c.q8, func(k *kernels) any { return k.q8_0Rows }},
			{planar.Q5_0, c.q5, func(k *kernels) any { return k.q5_0Rows }},
		} {
			g.Type = f.t
			if !same(f.got(c.k.rowsFor(g)), f.want) {
				t.Errorf("set %s, %s, groups of %d rows: not the expected rows kernel", c.k.name, f.t, g.RowsPerGroup())
			}
		}
	}
}
