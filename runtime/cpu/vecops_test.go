package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	xcpu "golang.org/x/sys/cpu"

	"github.com/xdna-go/xdna/planar"
)

// vecSpecials are the float32 inputs the element-wise kernels must agree
// on besides ordinary values: signed zeros, subnormals, the limits of Expf
// and of float32, infinities and NaN.
var vecSpecials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1,
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	math.Float32frombits(0x007fffff), -math.Float32frombits(0x007fffff),
	0x1p-126, 1e-8, -1e-8,
	-87.33654, -87.3366, -100, -103.97207, -103.97208, -104, -104.5, -200,
	88.72283, 88.72284, 89, 89.5, 100, -88.72284, -89,
	math.MaxFloat32, -math.MaxFloat32,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
}

// vecValue returns a test input: mostly moderate values, one in eight a
// special one and one in eight any bit pattern.
func vecValue(rng *rand.Rand) float32 {
	switch rng.IntN(8) {
	case 0:
		return vecSpecials[rng.IntN(len(vecSpecials))]
	case 1:
		return math.Float32frombits(rng.Uint32())
	}
	return float32(rng.NormFloat64() * 8)
}

// vecF16 returns a binary16 test input: mostly moderate values, one in
// eight any bit pattern (subnormals, infinities and NaNs included).
func vecF16(rng *rand.Rand) uint16 {
	if rng.IntN(8) == 0 {
		return uint16(rng.Uint32())
	}
	return planar.F32ToF16(float32(rng.NormFloat64()))
}

func vecValues(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = vecValue(rng)
	}
	return x
}

func vecF16s(rng *rand.Rand, n int) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		x[i] = vecF16(rng)
	}
	return x
}

// bothPaths runs f with the Go twins then with the assembly kernels.
func bothPaths(f func(simd bool)) {
	for _, on := range []bool{false, true} {
		withSIMD(on, func() { f(on) })
	}
}

// sameSlices reports the first index where a and b differ (sameBits), or
// -1.
func sameSlices(a, b []float32) int {
	for i := range a {
		if !sameBits(a[i], b[i]) {
			return i
		}
	}
	return -1
}

// guarded returns a copy of x followed by guard sentinel values, and a
// check that the sentinels are intact.
func guarded(x []float32) ([]float32, func() bool) {
	const guard, sentinel = 9, -12345
	buf := make([]float32, len(x)+guard)
	copy(buf, x)
	for i := len(x); i < len(buf); i++ {
		buf[i] = sentinel
	}
	return buf[:len(x)], func() bool {
		for _, v := range buf[len(x):] {
			if v != sentinel {
				return false
			}
		}
		return true
	}
}

// checkVecOps runs every element-wise operation on inputs made from the
// same slices with both paths and reports the first difference.
func checkVecOps(t *testing.T, name string, a, g, u []float32, b []uint16, s, mx float32) {
	t.Helper()
	var dots [2]float32
	var ys, hs, es, ss, sc, sr [2][]float32
	var ropes [2][2][]float32
	var sums [2]float64
	var maxes [2]float32
	bothPaths(func(on bool) {
		k := 0
		if on {
			k = 1
		}
		dots[k] = DotF16(a, b)

		y, ok := guarded(g)
		AxpyF16(s, b[:len(g)], y)
		if !ok() {
			t.Fatalf("%s %s: AxpyF16 wrote past y", name, modeName(on))
		}
		ys[k] = y

		h, ok := guarded(make([]float32, len(g)))
		SiluMul(h, g, u)
		if !ok() {
			t.Fatalf("%s %s: SiluMul wrote past h", name, modeName(on))
		}
		hs[k] = h

		e, ok := guarded(g)
		sums[k] = SoftmaxExp(e, mx)
		if !ok() {
			t.Fatalf("%s %s: SoftmaxExp wrote past x", name, modeName(on))
		}
		es[k] = e

		x, ok := guarded(g)
		maxes[k] = ScaleMax(x, s)
		if !ok() {
			t.Fatalf("%s %s: ScaleMax wrote past x", name, modeName(on))
		}
		ss[k] = x

		x, ok = guarded(g)
		Scale(x, s)
		if !ok() {
			t.Fatalf("%s %s: Scale wrote past x", name, modeName(on))
		}
		sc[k] = x

		x, ok = guarded(g)
		ScaleRoundF16(x, s)
		if !ok() {
			t.Fatalf("%s %s: ScaleRoundF16 wrote past x", name, modeName(on))
		}
		sr[k] = x

		// The rotations of RoPE by the "angles" u (any values), over all
		// of x or a shorter part of it, whose rest they must leave.
		cs := u[:len(u)-len(u)%3]
		for i, rope := range []func(x, cs []float32){RopeNorm, RopeNeox} {
			x, ok = guarded(g)
			rope(x, cs)
			if !ok() {
				t.Fatalf("%s %s: rope %d wrote past x", name, modeName(on), i)
			}
			if j := sameSlices(x[len(cs)&^1:], g[len(cs)&^1:]); j >= 0 {
				t.Fatalf("%s %s: rope %d changed x[%d] past its %d rotated values", name, modeName(on), i, len(cs)&^1+j, len(cs)&^1)
			}
			ropes[i][k] = x
		}
	})
	for i, op := range []string{"RopeNorm", "RopeNeox"} {
		if j := sameSlices(ropes[i][0], ropes[i][1]); j >= 0 {
			t.Fatalf("%s: %s x[%d] (of %d): go %v, simd %v", name, op, j, len(u)-len(u)%3, ropes[i][0][j], ropes[i][1][j])
		}
	}
	if !sameBits(dots[0], dots[1]) {
		t.Fatalf("%s: DotF16 go %v (%#x), simd %v (%#x)", name, dots[0], math.Float32bits(dots[0]), dots[1], math.Float32bits(dots[1]))
	}
	if i := sameSlices(ys[0], ys[1]); i >= 0 {
		t.Fatalf("%s: AxpyF16 y[%d] (a %v, x %#04x, y %v): go %v, simd %v", name, i, s, b[i], g[i], ys[0][i], ys[1][i])
	}
	if i := sameSlices(hs[0], hs[1]); i >= 0 {
		t.Fatalf("%s: SiluMul h[%d] (g %v, u %v): go %v, simd %v", name, i, g[i], u[i], hs[0][i], hs[1][i])
	}
	if i := sameSlices(es[0], es[1]); i >= 0 {
		t.Fatalf("%s: SoftmaxExp x[%d] (%v - %v): go %v, simd %v", name, i, g[i], mx, es[0][i], es[1][i])
	}
	if math.Float64bits(sums[0]) != math.Float64bits(sums[1]) && !(math.IsNaN(sums[0]) && math.IsNaN(sums[1])) {
		t.Fatalf("%s: SoftmaxExp sum go %v, simd %v", name, sums[0], sums[1])
	}
	for _, c := range []struct {
		op   string
		outs [2][]float32
	}{{"ScaleMax", ss}, {"Scale", sc}, {"ScaleRoundF16", sr}} {
		if i := sameSlices(c.outs[0], c.outs[1]); i >= 0 {
			t.Fatalf("%s: %s x[%d] (%v * %v): go %v, simd %v", name, c.op, i, g[i], s, c.outs[0][i], c.outs[1][i])
		}
	}
	if !sameMax(maxes[0], maxes[1]) {
		t.Fatalf("%s: ScaleMax by %v: go %v, simd %v", name, s, maxes[0], maxes[1])
	}
}

// sameMax reports whether two maxima are the same value: equal (a zero of
// either sign) or both NaN.
func sameMax(a, b float32) bool {
	return a == b || (a != a && b != b)
}

// TestVecOpsMatchGo compares the assembly element-wise kernels with their
// Go twins bit for bit (NaNs equal) for every length up to 300, on random
// and special values, slices at odd offsets, and checks that nothing is
// written past the outputs.
func TestVecOpsMatchGo(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no assembly kernels on this machine or build")
	}
	rng := rand.New(rand.NewPCG(51, 52))
	for n := 0; n <= 300; n++ {
		for rep := 0; rep < 3; rep++ {
			off := rng.IntN(4)
			a := vecValues(rng, n+off)[off:]
			g := vecValues(rng, n+off)[off:]
			u := vecValues(rng, n)
			b := vecF16s(rng, n+off+rng.IntN(3))[off:]
			s := vecValue(rng)
			// The softmax maximum, or a random one.
			mx := float32(math.Inf(-1))
			for _, v := range g {
				mx = max(mx, v)
			}
			if rep == 2 {
				mx = vecValue(rng)
			}
			checkVecOps(t, fmt.Sprintf("n=%d rep=%d", n, rep), a, g, u, b, s, mx)
		}
	}
}

// TestVecOpsAllF16 runs every binary16 pattern through the kernels'
// VCVTPH2PS: AxpyF16 with a = 1 onto negative zeros gives f16(x) (quieted for
// signalling NaNs), and DotF16 the sum of the patterns' products, both
// bit-identical to the Go twins.
func TestVecOpsAllF16(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no assembly kernels on this machine or build")
	}
	x := make([]uint16, 1<<16)
	for i := range x {
		x[i] = uint16(i)
	}
	for _, on := range []bool{false, true} {
		// -0 + v is v for every v, zeros included.
		y := make([]float32, len(x))
		for i := range y {
			y[i] = float32(math.Copysign(0, -1))
		}
		withSIMD(on, func() { AxpyF16(1, x, y) })
		for i, v := range y {
			if want := F16ToF32(x[i]); !sameBits(v, want) || (v == 0 && math.Signbit(float64(v)) != math.Signbit(float64(want))) {
				t.Fatalf("%s: f16 %#04x gives %v, want %v", modeName(on), x[i], v, want)
			}
		}
	}
	// Finite patterns against small weights, so that the sum is finite.
	rng := rand.New(rand.NewPCG(53, 54))
	a := make([]float32, 0x7c00)
	for i := range a {
		a[i] = float32(rng.NormFloat64()) * 0x1p-16
	}
	var dots [2]float32
	for k, on := range []bool{false, true} {
		withSIMD(on, func() { dots[k] = DotF16(a, x) })
	}
	if dots[0] != dots[1] || math.IsNaN(float64(dots[0])) {
		t.Fatalf("DotF16 over the finite patterns: go %v, simd %v", dots[0], dots[1])
	}
}

// TestVecKernelsDirect calls the assembly kernels themselves on the
// multiples of 8 and compares them with the Go twins they implement.
func TestVecKernelsDirect(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no assembly kernels on this machine or build")
	}
	rng := rand.New(rand.NewPCG(55, 56))
	for n := 8; n <= 256; n += 8 {
		a, g, u := vecValues(rng, n), vecValues(rng, n), vecValues(rng, n)
		b := vecF16s(rng, n)
		if got, want := dotF16AVX2(&a[0], &b[0], n), dotF16Go(a, b); !sameBits(got, want) {
			t.Fatalf("n=%d: dotF16AVX2 %v, dotF16Go %v", n, got, want)
		}
		y1, y2 := append([]float32(nil), g...), append([]float32(nil), g...)
		axpyF16AVX2(u[0], &b[0], &y1[0], n)
		axpyF16Go(u[0], b, y2)
		if i := sameSlices(y1, y2); i >= 0 {
			t.Fatalf("n=%d: axpyF16AVX2 y[%d] = %v, axpyF16Go %v", n, i, y1[i], y2[i])
		}
		h1, h2 := make([]float32, n), make([]float32, n)
		siluMulAVX2(&h1[0], &g[0], &u[0], n)
		siluMulGo(h2, g, u)
		if i := sameSlices(h1, h2); i >= 0 {
			t.Fatalf("n=%d: siluMulAVX2 h[%d] = %v, siluMulGo %v (g %v u %v)", n, i, h1[i], h2[i], g[i], u[i])
		}
		e1, e2 := append([]float32(nil), g...), append([]float32(nil), g...)
		s1, s2 := softmaxExpAVX2(&e1[0], n, a[0]), softmaxExpGo(e2, a[0], 0)
		if i := sameSlices(e1, e2); i >= 0 {
			t.Fatalf("n=%d: softmaxExpAVX2 x[%d] = %v, softmaxExpGo %v (x %v mx %v)", n, i, e1[i], e2[i], g[i], a[0])
		}
		if math.Float64bits(s1) != math.Float64bits(s2) && !(math.IsNaN(s1) && math.IsNaN(s2)) {
			t.Fatalf("n=%d: softmaxExpAVX2 sum %v, softmaxExpGo %v", n, s1, s2)
		}
		x1, x2 := append([]float32(nil), g...), append([]float32(nil), g...)
		m1, m2 := scaleMaxAVX2(&x1[0], n, u[0]), scaleMaxGo(x2, u[0], float32(math.Inf(-1)))
		if i := sameSlices(x1, x2); i >= 0 || !sameMax(m1, m2) {
			t.Fatalf("n=%d: scaleMaxAVX2 by %v: %v (x[%d]), scaleMaxGo %v", n, u[0], m1, i, m2)
		}
		x1, x2 = append(x1[:0], g...), append(x2[:0], g...)
		scaleAVX2(&x1[0], n, u[0])
		for i := range x2 {
			x2[i] *= u[0]
		}
		if i := sameSlices(x1, x2); i >= 0 {
			t.Fatalf("n=%d: scaleAVX2 x[%d] = %v, want %v", n, i, x1[i], x2[i])
		}
		x1, x2 = append(x1[:0], g...), append(x2[:0], g...)
		scaleRoundF16AVX2(&x1[0], n, u[0])
		for i := range x2 {
			x2[i] = F16ToF32(planar.F32ToF16(x2[i] * u[0]))
		}
		if i := sameSlices(x1, x2); i >= 0 {
			t.Fatalf("n=%d: scaleRoundF16AVX2 x[%d] = %v, want %v", n, i, x1[i], x2[i])
		}
	}
}

// TestScaleMaxNaNAndZeros: a NaN anywhere makes ScaleMax NaN on both paths
// (VMAXPS alone would drop it), and a softmax with a zero maximum gives the
// same bits whichever sign the zero has (ScaleMax leaves it open): x - (+0)
// and x - (-0) differ only for x = -0, and exp of either zero is 1.
func TestScaleMaxNaNAndZeros(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	for n := 1; n <= 40; n++ {
		for at := 0; at < n; at++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			x[at] = float32(math.NaN())
			bothPaths(func(on bool) {
				if m := ScaleMax(append([]float32(nil), x...), 2); m == m {
					t.Fatalf("%s: n=%d, NaN at %d: ScaleMax %v", modeName(on), n, at, m)
				}
			})
		}
	}
	negZero := float32(math.Copysign(0, -1))
	for n := 1; n <= 40; n++ {
		x := make([]float32, n)
		for i := range x {
			switch rng.IntN(3) {
			case 0:
				x[i] = negZero
			case 1:
				x[i] = -vecSpecials[rng.IntN(len(vecSpecials))]
			default:
				x[i] = -float32(rng.ExpFloat64())
			}
		}
		bothPaths(func(on bool) {
			a, b := append([]float32(nil), x...), append([]float32(nil), x...)
			sa, sb := SoftmaxExp(a, 0), SoftmaxExp(b, negZero)
			if i := sameSlices(a, b); i >= 0 || math.Float64bits(sa) != math.Float64bits(sb) && !(sa != sa && sb != sb) {
				t.Fatalf("%s: n=%d: SoftmaxExp with max +0 and -0 differ (x[%d] = %v)", modeName(on), n, i, x[max(i, 0)])
			}
		})
	}
}

// TestVecOpsUseBestLevel checks that a build with the assembly kernels, on
// a CPU with AVX2, F16C and FMA, runs them: SIMD() reports the level the
// dispatcher must choose for this CPU (avx512 with AVX-512 F, BW, VL and
// VNNI, else avx2; asmOn, which vecops.go dispatches on, is true for both),
// and the AVX2 vector op gives the right sum. A noasm build is recognised
// by its stub panicking.
func TestVecOpsUseBestLevel(t *testing.T) {
	if !xcpu.X86.HasAVX2 || !xcpu.X86.HasF16C || !xcpu.X86.HasFMA {
		t.Skip("this CPU lacks one of AVX2, F16C and FMA")
	}
	a, b := []float32{1, 2, 3, 4, 5, 6, 7, 8}, make([]uint16, 8)
	for i := range b {
		b[i] = planar.F32ToF16(1)
	}
	built := func() (ok bool) {
		defer func() { ok = recover() == nil }()
		dotF16AVX2(&a[0], &b[0], len(a))
		return
	}
	if !built() {
		t.Skip("build without the assembly kernels")
	}
	// The dispatcher picks the best set this CPU runs: avx512 where
	// AVX512F (which x/sys/cpu reports only when the OS saves the ZMM and
	// opmask state), BW, VL and VNNI are all there, else avx2.
	want := "avx2"
	if xcpu.X86.HasAVX512F && xcpu.X86.HasAVX512BW && xcpu.X86.HasAVX512VL && xcpu.X86.HasAVX512VNNI {
		want = "avx512"
	}
	if SIMD() != want {
		t.Fatalf("SIMD() = %q on a CPU with AVX2, F16C and FMA (AVX-512 F/BW/VL/VNNI: %v), want %s", SIMD(), want == "avx512", want)
	}
	if got := dotF16AVX2(&a[0], &b[0], len(a)); got != 36 {
		t.Fatalf("dotF16AVX2 of 1..8 with ones = %v, want 36", got)
	}
}

// TestExpfAccuracy checks Expf against math.Exp: relative error below
// 8.4e-8 (glibc's bound is 0.502 ulp, at most 6e-8) on a grid and random
// points, within an ulp of the float32 result in the subnormal range, and
// the special cases.
func TestExpfAccuracy(t *testing.T) {
	check := func(x float32) {
		got, want := float64(Expf(x)), math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > 8.4e-8 {
			t.Fatalf("Expf(%v) = %v, want %v (relative error %.3g)", x, got, want, rel)
		}
	}
	for x := float32(-87); x <= 88; x += 1.0 / 64 {
		check(x)
	}
	rng := rand.New(rand.NewPCG(57, 58))
	for i := 0; i < 1<<20; i++ {
		check(float32(-87 + 175*rng.Float64()))
		check(float32(rng.NormFloat64()))
	}
	// Subnormal results: within one ulp (2^-149) of the rounded result.
	for x := float32(-87.4); x >= -104; x -= 1.0 / 128 {
		got, want := Expf(x), float32(math.Exp(float64(x)))
		if d := math.Abs(float64(got) - float64(want)); d > 0x1p-149 {
			t.Fatalf("Expf(%v) = %v, want %v", x, got, want)
		}
	}
	negZero := float32(math.Copysign(0, -1))
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {negZero, 1},
		{88.72284, float32(math.Inf(1))}, // the smallest x with an infinite exp
		{89, float32(math.Inf(1))}, {1000, float32(math.Inf(1))}, {float32(math.Inf(1)), float32(math.Inf(1))},
		{-103.98, 0}, {-104.5, 0}, {-1000, 0}, {float32(math.Inf(-1)), 0},
	} {
		if got := Expf(c.x); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("Expf(%v) = %v (%#x), want %v (%#x)", c.x, got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
	}
	if got := Expf(88.72283); math.IsInf(float64(got), 0) || got < 3.4e38 {
		t.Errorf("Expf(88.72283) = %v, want the largest finite exp, about 3.40282e38", got)
	}
	if got := Expf(float32(math.NaN())); got == got {
		t.Errorf("Expf(NaN) = %v, want NaN", got)
	}
}

// TestExpfGlibc checks Expf on inputs where glibc 2.36's expf (x86-64,
// Debian 12) does not return the correctly rounded exp: found by comparing
// the two over 224,596 floats spread over [-104, 89], where Expf gave
// glibc's bits on every one.
func TestExpfGlibc(t *testing.T) {
	for _, c := range [][2]uint32{
		{0x3bce43f5, 0x3f80ceeb}, // 0.006294722
		{0x3d9b5bc3, 0x3f8a1672}, // 0.075858615
		{0x3dcafd50, 0x3f8d563e}, // 0.09911597
		{0x3fb04749, 0x407dad1a}, // 1.3771755
		{0xbb450a41, 0x3f7f3b42}, // -0.0030065926
		{0xbcd40b97, 0x3f797568}, // -0.025884433
		{0xbd73fb6e, 0x3f713247}, // -0.059565954
		{0xbdebbe9d, 0x3f642a2b}, // -0.11510966
		{0xbfbb1ec6, 0x3e6d5d34}, // -1.4618766
		{0xc1909537, 0x32734377}, // -18.072859
		{0xc220639c, 0x228e354b}, // -40.097275
	} {
		x := math.Float32frombits(c[0])
		if got := math.Float32bits(Expf(x)); got != c[1] {
			t.Errorf("Expf(%v) = %#08x, glibc %#08x", x, got, c[1])
		}
		if cr := math.Float32bits(float32(math.Exp(float64(x)))); cr == c[1] {
			t.Errorf("Expf(%v): glibc's %#08x is the correctly rounded value; the case tests nothing", x, c[1])
		}
	}
}

// TestExpf8Intrinsics checks expf8 against ggml_v_expf compiled from ggml's
// intrinsics (gcc 12 -O2 -mavx2 -mfma, Zen 3): inputs where it differs
// from the correctly rounded exp, and the two scaled paths (|n| > 126 and
// |n| > 192). Over 800,000 inputs (random bits and uniform in [-120, 120])
// expf8 gave the intrinsics' bits on every one.
func TestExpf8Intrinsics(t *testing.T) {
	cases := [][2]uint32{
		{0x421e40f0, 0x5c071b06}, // 39.563416
		{0x4233c07e, 0x5fe3d3fd}, // 44.93798
		{0xc1d1baaf, 0x2c90d114}, // -26.216154
		{0xc1065f08, 0x396c370d}, // -8.398201
		{0x42775a71, 0x6c147360}, // 61.83832
		{0x3f88b2f9, 0x403a3453}, // 1.0679618
		{0x422e21c1, 0x5edf9a1e}, // 43.532963
		{0xc0c0e854, 0x3b1de7b7}, // -6.0283604
		{0xc1d6d72f, 0x2c18e31d}, // -26.85507
		{0xc1a404fd, 0x30ab66d8}, // -20.502436
		{0x416f2ed9, 0x4a3d97ad}, // 14.948937
		{0xc1f2fbdd, 0x29911d6b}, // -30.37298
		{0x42b73bc8, 0x7f800000}, // 91.6168
		{0xc2b89641, 0x0000e682}, // -92.2935
		{0xc3381d0c, 0x00000000}, // -184.113
		{0x432e37c4, 0x7f800000}, // 174.218
	}
	for _, c := range cases {
		x := math.Float32frombits(c[0])
		if got := math.Float32bits(expf8(x)); got != c[1] {
			t.Errorf("expf8(%v) = %#08x, ggml_v_expf %#08x", x, got, c[1])
		}
	}
	// The AVX2 kernel on the same inputs, 8 lanes at a time.
	for _, on := range simdModes() {
		withSIMD(on, func() {
			x := make([]float32, 16)
			for i, c := range cases {
				x[i] = math.Float32frombits(c[0])
			}
			SoftmaxExp(x, 0)
			for i, c := range cases {
				if got := math.Float32bits(x[i]); got != c[1] {
					t.Errorf("%s: SoftmaxExp lane of %v = %#08x, ggml_v_expf %#08x", modeName(on), math.Float32frombits(c[0]), got, c[1])
				}
			}
		})
	}
}

// TestFmaf checks Fmaf against a*b+c computed exactly (math/big) and
// rounded once, on random operands and on ones where c cancels most of the
// product or sits half a float32 ulp from it, where a rounding through
// float64 alone would often be off.
func TestFmaf(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for i := 0; i < 1<<19; i++ {
		a, b := float32(rng.NormFloat64()), float32(rng.NormFloat64())
		var c float32
		switch i % 3 {
		case 0:
			c = float32(rng.NormFloat64())
		case 1:
			c = -(a * b) // cancellation: the result is the product's rounding error
		case 2:
			p := a * b
			c = (math.Nextafter32(p, float32(math.Inf(1))) - p) / 2 // near a midpoint
		}
		e := new(big.Float).SetPrec(200).Mul(big.NewFloat(float64(a)), big.NewFloat(float64(b)))
		e.Add(e, big.NewFloat(float64(c)))
		want, _ := e.Float32()
		if got := Fmaf(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("Fmaf(%v, %v, %v) = %v, want %v", a, b, c, got, want)
		}
	}
}

// TestSiluMulValues checks silu against float64 arithmetic on ordinary
// values and its limits for large |x|.
func TestSiluMulValues(t *testing.T) {
	for _, on := range simdModes() {
		withSIMD(on, func() {
			g := []float32{-100, -90, -20, -1, 0, 0.5, 1, 3, 20, 90, 100, 1e30, -1e30, 1e-30, -1e-30}
			u := make([]float32, len(g))
			for i := range u {
				u[i] = 1
			}
			h := make([]float32, len(g))
			SiluMul(h, g, u)
			for i, x := range g {
				want := float64(x) / (1 + math.Exp(-float64(x)))
				got := float64(h[i])
				switch {
				case x <= -90:
					if got > 0 || got < -1e-30 {
						t.Errorf("%s: silu(%v) = %v, want -0 or a tiny negative", modeName(on), x, got)
					}
				case math.Abs(got-want) > 2.5e-7*math.Abs(want):
					t.Errorf("%s: silu(%v) = %v, want %v", modeName(on), x, got, want)
				}
			}
		})
	}
}

// TestSoftmaxExpSum checks SoftmaxExp against its definition: expf8 and a
// float32 sum per whole group of 8, Expf and a float64 sum for the rest.
// Inputs spread over [-80, 0] give exponentials from 2^-115 to 1, more
// than the 53 bits of a float64 hold, so the order of the additions shows
// in the sum.
func TestSoftmaxExpSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 60))
	var inputs [][]float32
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 64, 100, 1000} {
		for _, spread := range []float64{10, 80} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(-spread * rng.Float64())
			}
			inputs = append(inputs, x)
		}
	}
	for _, on := range simdModes() {
		withSIMD(on, func() {
			for _, orig := range inputs {
				n := len(orig)
				x := append([]float32(nil), orig...)
				mx := x[0]
				for _, v := range x {
					mx = max(mx, v)
				}
				sum := SoftmaxExp(x, mx)
				var want float64
				full := n &^ 7
				for g := 0; g < full; g += 8 {
					var e [8]float32
					for l := range e {
						e[l] = expf8(orig[g+l] - mx)
					}
					want += float64(((e[0] + e[4]) + (e[2] + e[6])) + ((e[1] + e[5]) + (e[3] + e[7])))
				}
				for i, v := range x {
					e := Expf(orig[i] - mx)
					if i < full {
						e = expf8(orig[i] - mx)
					}
					if math.Float32bits(v) != math.Float32bits(e) {
						t.Fatalf("%s n=%d: x[%d] = %v, want %v", modeName(on), n, i, v, e)
					}
					if i >= full {
						want += float64(v)
					}
				}
				if sum != want {
					t.Fatalf("%s n=%d: sum %v, want %v", modeName(on), n, sum, want)
				}
			}
		})
	}
}

// fuzzFloats reads float32 values from raw, 4 bytes each.
func fuzzFloats(raw []byte) []float32 {
	x := make([]float32, len(raw)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return x
}

// FuzzDotF16 compares DotF16 and AxpyF16 on both paths, a and b made from
// the input bits (CI: go test -fuzz FuzzDotF16 -fuzztime 2000x ./runtime/cpu).
func FuzzDotF16(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 60}, uint16(0x3c00))
	f.Add(make([]byte, 6*37), uint16(0x8001))
	f.Fuzz(func(t *testing.T, raw []byte, s uint16) {
		if !haveAVX2 {
			t.Skip("no assembly kernels on this machine or build")
		}
		n := len(raw) / 6
		a := fuzzFloats(raw[:4*n])
		b := make([]uint16, n)
		for i := range b {
			b[i] = binary.LittleEndian.Uint16(raw[4*n+2*i:])
		}
		var dots [2]float32
		var ys [2][]float32
		for k, on := range []bool{false, true} {
			withSIMD(on, func() {
				dots[k] = DotF16(a, b)
				ys[k] = append([]float32(nil), a...)
				AxpyF16(F16ToF32(s), b, ys[k])
			})
		}
		if !sameBits(dots[0], dots[1]) {
			t.Fatalf("DotF16: go %v, simd %v", dots[0], dots[1])
		}
		if i := sameSlices(ys[0], ys[1]); i >= 0 {
			t.Fatalf("AxpyF16 y[%d]: go %v, simd %v", i, ys[0][i], ys[1][i])
		}
	})
}

// FuzzSiluMul compares SiluMul and SoftmaxExp on both paths, the inputs
// made from the input bits (CI: go test -fuzz FuzzSiluMul -fuzztime 2000x
// ./runtime/cpu).
func FuzzSiluMul(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 192}, float32(0))
	f.Add(make([]byte, 8*29), float32(-3))
	f.Fuzz(func(t *testing.T, raw []byte, mx float32) {
		if !haveAVX2 {
			t.Skip("no assembly kernels on this machine or build")
		}
		x := fuzzFloats(raw)
		g, u := x[:len(x)/2], x[len(x)/2:]
		var hs, es [2][]float32
		var sums [2]float64
		for k, on := range []bool{false, true} {
			withSIMD(on, func() {
				hs[k] = make([]float32, len(g))
				SiluMul(hs[k], g, u)
				es[k] = append([]float32(nil), x...)
				sums[k] = SoftmaxExp(es[k], mx)
			})
		}
		if i := sameSlices(hs[0], hs[1]); i >= 0 {
			t.Fatalf("SiluMul h[%d] (g %v u %v): go %v, simd %v", i, g[i], u[i], hs[0][i], hs[1][i])
		}
		if i := sameSlices(es[0], es[1]); i >= 0 {
			t.Fatalf("SoftmaxExp x[%d] (%v - %v): go %v, simd %v", i, x[i], mx, es[0][i], es[1][i])
		}
		if math.Float64bits(sums[0]) != math.Float64bits(sums[1]) && !(math.IsNaN(sums[0]) && math.IsNaN(sums[1])) {
			t.Fatalf("SoftmaxExp sum: go %v, simd %v", sums[0], sums[1])
		}
	})
}

// vecBenchModes runs f as sub-benchmarks impl=go and, where the kernels
// run, impl=simd.
func vecBenchModes(b *testing.B, f func(b *testing.B)) {
	for _, on := range simdModes() {
		b.Run("impl="+modeName(on), func(b *testing.B) {
			was := SetSIMD(on)
			defer SetSIMD(was)
			f(b)
		})
	}
}

// The benchmarks take the sizes of attention over an f16 KV cache (head
// dimension 128, 512 positions) and of a 4096-wide FFN; SetBytes is the
// size of the inputs.

func BenchmarkDotF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, n := range []int{64, 128, 4096} {
		a, x := make([]float32, n), make([]uint16, n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
			x[i] = planar.F32ToF16(float32(rng.NormFloat64()))
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			vecBenchModes(b, func(b *testing.B) {
				b.SetBytes(int64(6 * n))
				var s float32
				for b.Loop() {
					s += DotF16(a, x)
				}
			})
		})
	}
}

func BenchmarkAxpyF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(63, 64))
	for _, n := range []int{128, 4096} {
		x := make([]uint16, n)
		for i := range x {
			x[i] = planar.F32ToF16(float32(rng.NormFloat64()))
		}
		y := make([]float32, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			vecBenchModes(b, func(b *testing.B) {
				b.SetBytes(int64(6 * n))
				for b.Loop() {
					AxpyF16(1e-3, x, y)
				}
			})
		})
	}
}

func BenchmarkSiluMul(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(65, 66))
	g, u, h := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i], u[i] = float32(rng.NormFloat64()*3), float32(rng.NormFloat64())
	}
	vecBenchModes(b, func(b *testing.B) {
		b.SetBytes(8 * n)
		for b.Loop() {
			SiluMul(h, g, u)
		}
	})
}

func BenchmarkSoftmaxExp(b *testing.B) {
	const n = 512
	rng := rand.New(rand.NewPCG(67, 68))
	x0, x := make([]float32, n), make([]float32, n)
	for i := range x0 {
		x0[i] = float32(rng.NormFloat64() * 5)
	}
	vecBenchModes(b, func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			copy(x, x0)
			SoftmaxExp(x, 15)
		}
	})
}

// TestSumStream checks SumStream against a plain wrapping sum of every word
// (none dropped, none read twice) for lengths around the 64-word steps of
// the assembly loop and 1 to 3 threads, with both paths.
func TestSumStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(69, 70))
	buf := make([]uint64, 5000)
	for i := range buf {
		buf[i] = rng.Uint64()
	}
	for _, on := range simdModes() {
		withSIMD(on, func() {
			for _, n := range []int{0, 1, 3, 63, 64, 65, 127, 128, 129, 191, 256, 1000, 4999, 5000} {
				for threads := 1; threads <= 3; threads++ {
					var want uint64
					for _, v := range buf[:n/threads*threads] {
						want += v
					}
					if got := SumStream(buf[:n], threads); got != want {
						t.Fatalf("%s: SumStream of %d words, %d threads = %#x, want %#x", modeName(on), n, threads, got, want)
					}
				}
			}
		})
	}
}
