package x86sim

import (
	"math"
	"strings"
)

// Floating point, as the CPU computes it with MXCSR at its default value
// 0x1F80 (round to nearest even, exceptions masked, no DAZ/FTZ).
//
// NaN results follow SDM Vol. 1 4.8.3.5 (Table 4-7): a NaN operand makes
// the result that NaN made quiet, the first source's if both are NaNs; an
// invalid operation on non-NaN operands (Inf-Inf, 0*Inf, 0/0, sqrt of a
// negative number) gives the default NaN, the "QNaN floating-point
// indefinite" (0xFFC00000, 0xFFF8000000000000).

const (
	qnan32    = 0xffc00000
	qnan64    = 0xfff8000000000000
	quiet32   = 0x00400000
	quiet64   = 0x0008000000000000
	indefInt  = 0x80000000 // the integer indefinite of an invalid conversion to int32
	signBit32 = 0x80000000
)

func isNaN32(x uint32) bool { return x&0x7fffffff > 0x7f800000 }
func isNaN64(x uint64) bool { return x&0x7fffffffffffffff > 0x7ff0000000000000 }

func f32(x uint32) float32 { return math.Float32frombits(x) }
func f64(x uint64) float64 { return math.Float64frombits(x) }

// arith32 applies f to a and b with the NaN rules above.
func arith32(a, b uint32, f func(x, y float32) float32) uint32 {
	switch {
	case isNaN32(a):
		return a | quiet32
	case isNaN32(b):
		return b | quiet32
	}
	r := f(f32(a), f32(b))
	if r != r {
		return qnan32
	}
	return math.Float32bits(r)
}

func arith64(a, b uint64, f func(x, y float64) float64) uint64 {
	switch {
	case isNaN64(a):
		return a | quiet64
	case isNaN64(b):
		return b | quiet64
	}
	r := f(f64(a), f64(b))
	if r != r {
		return qnan64
	}
	return math.Float64bits(r)
}

// The float32 products and quotients are converted explicitly so that no
// compiler may fuse them (the Go spec allows fusion, but not across an
// explicit conversion).
func add32(x, y float32) float32 { return float32(x + y) }
func sub32(x, y float32) float32 { return float32(x - y) }
func mul32(x, y float32) float32 { return float32(x * y) }
func div32(x, y float32) float32 { return float32(x / y) }
func add64(x, y float64) float64 { return float64(x + y) }
func sub64(x, y float64) float64 { return float64(x - y) }
func mul64(x, y float64) float64 { return float64(x * y) }
func div64(x, y float64) float64 { return float64(x / y) }

// max32 and min32 are MAXPS/MINPS: "IF (SRC1 > SRC2) THEN SRC1 ELSE SRC2"
// (and <): a NaN in either source, or two zeros of either sign, give the
// second source, NaN or not, unquieted (SDM Vol. 2B MAXPS).
func max32(a, b uint32) uint32 {
	if !isNaN32(a) && !isNaN32(b) && f32(a) > f32(b) {
		return a
	}
	return b
}

func min32(a, b uint32) uint32 {
	if !isNaN32(a) && !isNaN32(b) && f32(a) < f32(b) {
		return a
	}
	return b
}

func max64(a, b uint64) uint64 {
	if !isNaN64(a) && !isNaN64(b) && f64(a) > f64(b) {
		return a
	}
	return b
}

func min64(a, b uint64) uint64 {
	if !isNaN64(a) && !isNaN64(b) && f64(a) < f64(b) {
		return a
	}
	return b
}

func sqrt32(a uint32) uint32 {
	if isNaN32(a) {
		return a | quiet32
	}
	x := f32(a)
	if x < 0 {
		return qnan32
	}
	// sqrt in float64 then rounded to float32 is the correctly rounded
	// float32 square root (53 >= 2*24+2 bits).
	return math.Float32bits(float32(math.Sqrt(float64(x))))
}

func sqrt64(a uint64) uint64 {
	if isNaN64(a) {
		return a | quiet64
	}
	x := f64(a)
	if x < 0 {
		return qnan64
	}
	return math.Float64bits(math.Sqrt(x))
}

// fma32 is a*b+c rounded once to float32 (round to nearest even). The
// product of two float32s is exact in float64; the sum is formed in
// float64 rounded to odd, which then rounds to float32 exactly as the exact
// sum would (Boldo and Melquiond, "Emulation of FMA and correctly rounded
// sums: proved algorithms using rounding to odd", IEEE TC 2008: float64's
// 53 bits >= 24+2). No float64 overflow or underflow can occur: |a*b| <=
// 2^256 and the smallest nonzero |a*b| is 2^-298.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact
	s := float64(c)
	r := p + s
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return float32(r)
	}
	// TwoSum: the exact error of r.
	bb := r - p
	e := (p - (r - bb)) + (s - bb)
	if e != 0 && math.Float64bits(r)&1 == 0 {
		// Round to odd: move r one ulp toward the exact sum.
		if (e > 0) == (r > 0) {
			r = math.Float64frombits(math.Float64bits(r) + 1)
		} else if r != 0 {
			r = math.Float64frombits(math.Float64bits(r) - 1)
		} else {
			// r == 0 cannot happen with e != 0 (an exact zero sum has no
			// error), but be safe: the smallest number of e's sign.
			r = math.Copysign(math.SmallestNonzeroFloat64, e)
		}
	}
	return float32(r)
}

// fmaOp32 is one fused multiply-add: ±(x*y) ± z, rounded once. NaNs: the
// first NaN among x, y, z (the multiplicands, then the addend, in the
// order of the instruction's formula: dest*src3+src2 for the 132 form),
// quieted; an invalid product or sum gives the default NaN. The order is
// the one this project's AMD Zen 3 gives natively (vexcheck's
// TestNativeMatchesSim); the SDM's per-form pseudo-code names no order.
func fmaOp32(negMul, negAdd bool, x, y, z uint32) uint32 {
	for _, o := range [3]uint32{x, y, z} {
		if isNaN32(o) {
			return o | quiet32
		}
	}
	fx := f32(x)
	if negMul {
		fx = -fx
	}
	fz := f32(z)
	if negAdd {
		fz = -fz
	}
	r := fma32(fx, f32(y), fz)
	if r != r {
		return qnan32
	}
	return math.Float32bits(r)
}

func fmaOp64(negMul, negAdd bool, x, y, z uint64) uint64 {
	for _, o := range [3]uint64{x, y, z} {
		if isNaN64(o) {
			return o | quiet64
		}
	}
	fx := f64(x)
	if negMul {
		fx = -fx
	}
	fz := f64(z)
	if negAdd {
		fz = -fz
	}
	r := math.FMA(fx, f64(y), fz) // math.FMA rounds once
	if r != r {
		return qnan64
	}
	return math.Float64bits(r)
}

// f16to32 converts a half-precision value to single precision, exactly;
// a signaling NaN becomes quiet, the payload kept (SDM VCVTPH2PS).
func f16to32(h uint16) uint32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0 && man == 0:
		return sign
	case exp == 0: // subnormal: man * 2^-24
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		return sign | e<<23 | (man&0x3ff)<<13
	case exp == 31 && man == 0:
		return sign | 0x7f800000
	case exp == 31:
		return sign | 0x7f800000 | quiet32 | man<<13
	}
	return sign | (exp+127-15)<<23 | man<<13
}

// f32to16 converts a single-precision value to half precision with
// rounding control rc (0 nearest even, 1 down, 2 up, 3 toward zero); a NaN
// becomes a quiet NaN with the payload's top bits (SDM VCVTPS2PH).
func f32to16(f uint32, rc int) uint16 {
	sign := uint16(f>>31) << 15
	exp := int(f>>23) & 0xff
	man := f & 0x7fffff
	if exp == 0xff {
		if man == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7c00 | 0x200 | uint16(man>>13)
	}
	neg := sign != 0
	if exp == 0 && man == 0 {
		return sign
	}
	// |x| = M * 2^(e-23)
	var M uint64
	var e int
	if exp == 0 {
		M, e = uint64(man), -126
	} else {
		M, e = uint64(man|0x800000), exp-127
	}
	overflow := func() uint16 {
		// Round to nearest and away from zero give Inf, the others the
		// largest finite value (65504).
		if rc == 0 || rc == 1 && neg || rc == 2 && !neg {
			return sign | 0x7c00
		}
		return sign | 0x7bff
	}
	if e > 15 {
		return overflow()
	}
	qe := max(e, -14) - 10 // the exponent of the half's unit in the last place
	s := qe - (e - 23)     // bits dropped, >= 13
	var q, rem, halfway uint64
	if s >= 64 {
		q, rem, halfway = 0, M, 1<<63 // rem < halfway and nonzero
	} else {
		q = M >> uint(s)
		rem = M & (1<<uint(s) - 1)
		halfway = 1 << uint(s-1)
	}
	if rem != 0 {
		up := false
		switch rc {
		case 0:
			up = rem > halfway || rem == halfway && q&1 == 1
		case 1:
			up = neg
		case 2:
			up = !neg
		}
		if up {
			q++
		}
	}
	var h uint64
	if e >= -14 {
		h = uint64(e+15)<<10 + q - 0x400
	} else {
		h = q // subnormal; 0x400 is the smallest normal
	}
	if h >= 0x7c00 {
		return overflow()
	}
	return sign | uint16(h)
}

// cvt32to64 is CVTSS2SD: exact; a signaling NaN becomes quiet.
func cvt32to64(a uint32) uint64 {
	if isNaN32(a) {
		return uint64(a>>31)<<63 | 0x7ff0000000000000 | quiet64 | uint64(a&0x3fffff)<<29
	}
	return math.Float64bits(float64(f32(a)))
}

// cvt64to32 is CVTSD2SS, rounding to nearest even.
func cvt64to32(a uint64) uint32 {
	if isNaN64(a) {
		return uint32(a>>63)<<31 | 0x7f800000 | quiet32 | uint32(a>>29)&0x3fffff
	}
	return math.Float32bits(float32(f64(a)))
}

// cvtToInt32 is CVTPS2DQ (round to nearest even) or CVTTPS2DQ (truncate):
// NaN or a result outside int32 gives the integer indefinite 0x80000000.
func cvtToInt32(x float64, trunc bool) uint32 {
	if x != x {
		return indefInt
	}
	if trunc {
		x = math.Trunc(x)
	} else {
		x = math.RoundToEven(x)
	}
	if x < -2147483648 || x > 2147483647 {
		return indefInt
	}
	return uint32(int32(x))
}

// cmpPreds are the VCMPPS predicates by imm8 (SDM Vol. 2A CMPPS, Table
// 3-1): the names objdump prints inside "vcmp...ps".
var cmpPreds = []string{
	"eq_oq", "lt_os", "le_os", "unord_q", "neq_uq", "nlt_us", "nle_us", "ord_q",
	"eq_uq", "nge_us", "ngt_us", "false_oq", "neq_oq", "ge_os", "gt_os", "true_uq",
	"eq_os", "lt_oq", "le_oq", "unord_s", "neq_us", "nlt_uq", "nle_uq", "ord_s",
	"eq_us", "nge_uq", "ngt_uq", "false_os", "neq_os", "ge_oq", "gt_oq", "true_us",
}

// cmpAliases are the short names objdump prints for predicates 0-15.
var cmpAliases = map[string]int{"eq": 0, "lt": 1, "le": 2, "unord": 3, "neq": 4, "nlt": 5, "nle": 6, "ord": 7,
	"nge": 9, "ngt": 10, "false": 11, "ge": 13, "gt": 14, "true": 15}

// fcmp evaluates predicate p (0-31) on a and b, unordered when either is
// NaN; predicates 16-31 differ from 0-15 only in signaling on QNaNs, which
// sets the masked invalid flag.
func fcmp(p int, a, b float64) bool {
	un := a != a || b != b
	switch p & 15 {
	case 0: // eq_oq
		return !un && a == b
	case 1: // lt_os
		return !un && a < b
	case 2: // le_os
		return !un && a <= b
	case 3: // unord_q
		return un
	case 4: // neq_uq
		return un || a != b
	case 5: // nlt_us
		return un || a >= b
	case 6: // nle_us
		return un || a > b
	case 7: // ord_q
		return !un
	case 8: // eq_uq
		return un || a == b
	case 9: // nge_us
		return un || a < b
	case 10: // ngt_us
		return un || a <= b
	case 11: // false_oq
		return false
	case 12: // neq_oq
		return !un && a != b
	case 13: // ge_os
		return !un && a >= b
	case 14: // gt_os
		return !un && a > b
	}
	return true // true_uq
}

// cmpPred parses the predicate of a "vcmp<pred>ps" mnemonic.
func cmpPred(op string, suffix string) (int, bool) {
	name := strings.TrimSuffix(strings.TrimPrefix(op, "vcmp"), suffix)
	if p, ok := cmpAliases[name]; ok {
		return p, true
	}
	for i, n := range cmpPreds {
		if n == name {
			return i, true
		}
	}
	return 0, false
}
