package engine

import "math"

// sinf and cosf are glibc's single-precision sine and cosine (since glibc
// 2.28: sysdeps/ieee754/flt-32/s_sinf.c, s_cosf.c, s_sincosf.h,
// sincosf_poly.h, from Arm's optimized-routines), as the x86-64 build runs
// them on a CPU with FMA (the multiarch s_sinf-fma variant, where gcc fuses
// each a + b*c): the argument in float64, reduced by a multiple of pi/2
// (one fused step below 120, else a 4/pi table to 192 bits), an even or odd
// polynomial in float64, the result rounded to float32. They are within an
// ulp of the correctly rounded values, and not always equal to them: ggml's
// rope cache (ggml_rope_cache_init, rope_yarn) calls them, and on
// rand-gemma3-q8_0's 6-token prompt 14 of its 2816 rotations differ by an
// ulp from math.Cos and math.Sin rounded, enough to move that model's
// logits by 0.1 through the f16 rounding of the keys and queries.

// sincosfPoly is one entry of __sincosf_table: the signs of the sine per
// quadrant, 2/pi scaled by 2^24, pi/2, and the cosine and sine polynomials
// (the second entry negates the cosine's).
type sincosfPoly struct {
	sign               [4]float64
	hpiInv, hpi        float64
	c0, c1, c2, c3, c4 float64
	s1, s2, s3         float64
}

var sincosfTable = [2]sincosfPoly{
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// invPio4 is 4/pi to 192 bits, 8 new bits per entry.
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
	0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
	0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
	0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

const (
	pi63 = 0x1.921FB54442D18p-62 // 2pi * 2^-64
	pio4 = 0x1.921FB54442D18p-1
)

// abstop12 is the top 12 bits of a float32 without its sign.
func abstop12(x float32) uint32 { return (math.Float32bits(x) >> 20) & 0x7ff }

// reduceFast returns x reduced to [-pi/4, pi/4] and its quadrant, for
// |x| < 120.
func reduceFast(x float64, p *sincosfPoly) (float64, int) {
	r := x * p.hpiInv
	n := (int32(r) + 0x800000) >> 24
	return math.FMA(-float64(n), p.hpi, x), int(n)
}

// reduceLarge reduces the float32 of bits xi (|x| >= 120) by a 32x96-bit
// multiply with 4/pi.
func reduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi & 0xffffff) | 0x800000
	xi <<= shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = (res2 >> 32) | (res0 << 32)
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * pi63, int(n)
}

// sinfPoly evaluates the sine (n even) or cosine (n odd) polynomial.
func sinfPoly(x, x2 float64, p *sincosfPoly, n int) float32 {
	if n&1 == 0 {
		x3 := x * x2
		s1 := math.FMA(x2, p.s3, p.s2)
		x7 := x3 * x2
		s := math.FMA(x3, p.s1, x)
		return float32(math.FMA(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := math.FMA(x2, p.c4, p.c3)
	c1 := math.FMA(x2, p.c1, p.c0)
	x6 := x4 * x2
	c := math.FMA(x4, p.c2, c1)
	return float32(math.FMA(x6, c2, c))
}

// sincosfAt returns sin (cos false) or cos (cos true) of y as glibc does.
func sincosfAt(y float32, cos bool) float32 {
	x := float64(y)
	p := &sincosfTable[0]
	flip := 0
	if cos {
		flip = 1
	}
	switch {
	case abstop12(y) < abstop12(float32(pio4)):
		if abstop12(y) < abstop12(0x1p-12) {
			if cos {
				return 1
			}
			return y
		}
		return sinfPoly(x, x*x, p, flip)
	case abstop12(y) < abstop12(120):
		x, n := reduceFast(x, p)
		s := p.sign[n&3]
		if n&2 != 0 {
			p = &sincosfTable[1]
		}
		return sinfPoly(x*s, x*x, p, n^flip)
	case abstop12(y) < abstop12(float32(math.Inf(1))):
		xi := math.Float32bits(y)
		sign := int(xi >> 31)
		x, n := reduceLarge(xi)
		s := p.sign[(n+sign)&3]
		if (n+sign)&2 != 0 {
			p = &sincosfTable[1]
		}
		return sinfPoly(x*s, x*x, p, n^flip)
	}
	return float32(math.NaN())
}

func sinf(y float32) float32 { return sincosfAt(y, false) }
func cosf(y float32) float32 { return sincosfAt(y, true) }
