package cpu

import "math"

// The exponentials of llama.cpp's CPU backend on x86-64, reproduced bit for
// bit. ggml's soft_max and silu (ggml_vec_soft_max_f32, ggml_vec_swiglu_f32
// in ggml-cpu/vec.cpp) run the vectorised ggml_v_expf on the elements of a
// row up to the last multiple of 8 and the C library's expf on the rest;
// the two differ from each other, and from the correctly rounded exp, by an
// ulp here and there. Those ulps reach the logits where a value then rounds
// to f16 or to a Q8_0 code the other way (stories260K-q8_0 on "One day, a
// big bear found a" moved by up to 0.09), so the engine uses the same two
// functions on the same elements.
//
// Upstream: ggml-org/ggml @ d99724f2b141fed9e1a9f402213506c081433465,
// src/ggml-cpu/vec.h (ggml_v_expf, the __AVX2__ && __FMA__ version) and
// vec.cpp; glibc 2.36 sysdeps/ieee754/flt-32/e_expf.c and e_exp2f_data.c
// (from Arm's optimized-routines).

// Fmaf returns a*b+c rounded once to float32, as a float32 FMA instruction
// (VFMADD...SS/PS) does. The product a*b is exact in float64; the sum is
// rounded to odd in float64 (round to nearest, then, if inexact and even,
// stepped one ulp towards the exact value), after which rounding to float32
// is the one correct rounding of a*b+c: rounding to odd in a format with at
// least two more bits makes the second rounding innocuous.
func Fmaf(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	if math.IsInf(s, 0) || s != s {
		return float32(s)
	}
	// TwoSum: e is the exact error s - (p + cc).
	bv := s - p
	e := (p - (s - bv)) + (cc - bv)
	if u := math.Float64bits(s); e != 0 && u&1 == 0 {
		if (e > 0) == (s > 0) {
			u++ // away from zero, towards the exact value
		} else {
			u--
		}
		s = math.Float64frombits(u)
	}
	return float32(s)
}

// The constants of expf8 (ggml_v_expf): the rounding shift 1.5*2^23,
// log2(e), ln 2 split in two, and the polynomial coefficients.
const (
	exp8Shift float32 = 0x1.8p23
	exp8Log2e float32 = 0x1.715476p+0
	exp8Ln2Hi float32 = 0x1.62e4p-1
	exp8Ln2Lo float32 = 0x1.7f7d1cp-20
	exp8C0    float32 = 0x1.ffffecp-1
	exp8C1    float32 = 0x1.fffdb6p-2
	exp8C2    float32 = 0x1.555e66p-3
	exp8C3    float32 = 0x1.573e2ep-5
	exp8C4    float32 = 0x1.0e4020p-7
)

// expf8 is one lane of ggml_v_expf (AVX2 + FMA), the exp that ggml runs 8
// elements at a time: n = round(x*log2e) by the shift trick, b = x - n*ln2
// in two fused steps, exp(b) - 1 ~ j = ((C4*b + C3)*u + (C2*b + C1))*u +
// C0*b with u = b*b, and the result (1 + j) * 2^n, with two scale factors
// where |n| > 126 and s1*s1 (0 or +Inf) where |n| > 192. Every FMA of the
// intrinsics is an Fmaf here, in the same order, so the results are the
// same bits (checked against the intrinsics compiled with gcc on 800,000
// inputs; vecops_test.go keeps some). The AVX2 kernels (exp8 in
// _generate/vec) run the same instructions.
func expf8(x float32) float32 {
	z := Fmaf(x, exp8Log2e, exp8Shift)
	n := z - exp8Shift
	b := Fmaf(-n, exp8Ln2Lo, Fmaf(-n, exp8Ln2Hi, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + math.Float32bits(1))
	u := b * b
	j := Fmaf(Fmaf(Fmaf(exp8C4, b, exp8C3), u, Fmaf(exp8C2, b, exp8C1)), u, exp8C0*b)
	an := abs32(n)
	if !(an > 126) { // also NaN, which propagates
		return Fmaf(j, k, k)
	}
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	if an > 192 {
		return s1 * s1
	}
	s2 := math.Float32frombits(e - g)
	return Fmaf(s2, j, s2) * s1
}

// exp2fTab is glibc's __exp2f_data.tab: the float64 bits of 2^(i/32) minus
// i<<47, so that adding k<<47 for k = i mod 32 gives 2^(k/32).
var exp2fTab = [32]uint64{
	0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
	0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
	0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
	0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
	0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
	0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
	0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
	0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
}

// Expf returns e**x as glibc's expf does (error below 0.502 ulp, not always
// the correctly rounded value), the exp that ggml calls one element at a
// time: x*32/ln2 = k + r in float64, 2^(k/32) from exp2fTab and the
// exponent bits, 2^(r/32) by a cubic, and one rounding to float32 at the
// end. Beyond the range: +Inf above 88.72, 0 below -103.97, NaN for NaN.
// The same bits as glibc 2.36 on 224,596 inputs spread over [-104, 89].
func Expf(x float32) float32 {
	const (
		n       = 32
		invLn2N = 0x1.71547652b82fep+0 * n
		shift   = 0x1.8p+52
		c0      = 0x1.c6af84b912394p-5 / n / n / n
		c1      = 0x1.ebfce50fac4f3p-3 / n / n
		c2      = 0x1.62e42ff0c52d6p-1 / n
	)
	switch {
	case x != x:
		return x
	case x > 0x1.62e42ep6:
		return float32(math.Inf(1))
	case x < -0x1.9fe368p6:
		return 0
	}
	z := invLn2N * float64(x)
	kd := z + shift
	ki := math.Float64bits(kd)
	kd -= shift
	r := z - kd
	s := math.Float64frombits(exp2fTab[ki%n] + ki<<(52-5))
	y := c2*r + 1
	y = (c0*r+c1)*(r*r) + y
	return float32(y * s)
}
