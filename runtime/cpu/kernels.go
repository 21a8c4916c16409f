package cpu

import (
	"encoding/binary"
	"math"

	"github.com/xdna-go/xdna/planar"
)

// The dot kernels of one row of one K-tile against one token's activations.
// Each reads the row's bytes in the planes of its tile (docs/FORMAT.md) and
// the activations quantised by scratch.prepare, does the integer products of
// each block exactly in int32 and accumulates the blocks in float32, as
// ggml's vec_dot_*_q8_0 / _q8_K kernels do. The reference they are tested
// against is MatVecRef.

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// f16Table maps every binary16 bit pattern to its float32 value
// (planar.F16ToF32, the spec). 256 KiB; the weights of one matrix touch a
// small part of it.
var f16Table [1 << 16]float32

func init() {
	for h := range f16Table {
		f16Table[h] = planar.F16ToF32(uint16(h))
	}
}

// f16 converts an IEEE binary16 value to float32.
func f16(h uint16) float32 { return f16Table[h] }

// F16ToF32 converts an IEEE binary16 value to float32, exactly as
// planar.F16ToF32 (the spec) but by table lookup, cheap enough for inner
// loops.
func F16ToF32(h uint16) float32 { return f16Table[h] }

// dotNib32 returns the sum over j < 32 of q_j*a_j, where q_j is the 4-bit
// code j of c: code 2i in the low nibble of c[i], code 2i+1 in the high one.
func dotNib32(c []byte, a []int8) int32 {
	cc := (*[16]byte)(c)
	aa := (*[32]int8)(a)
	var s0, s1, s2, s3 int32
	s0 += int32(cc[0]&15)*int32(aa[0]) + int32(cc[0]>>4)*int32(aa[1])
	s1 += int32(cc[1]&15)*int32(aa[2]) + int32(cc[1]>>4)*int32(aa[3])
	s2 += int32(cc[2]&15)*int32(aa[4]) + int32(cc[2]>>4)*int32(aa[5])
	s3 += int32(cc[3]&15)*int32(aa[6]) + int32(cc[3]>>4)*int32(aa[7])
	s0 += int32(cc[4]&15)*int32(aa[8]) + int32(cc[4]>>4)*int32(aa[9])
	s1 += int32(cc[5]&15)*int32(aa[10]) + int32(cc[5]>>4)*int32(aa[11])
	s2 += int32(cc[6]&15)*int32(aa[12]) + int32(cc[6]>>4)*int32(aa[13])
	s3 += int32(cc[7]&15)*int32(aa[14]) + int32(cc[7]>>4)*int32(aa[15])
	s0 += int32(cc[8]&15)*int32(aa[16]) + int32(cc[8]>>4)*int32(aa[17])
	s1 += int32(cc[9]&15)*int32(aa[18]) + int32(cc[9]>>4)*int32(aa[19])
	s2 += int32(cc[10]&15)*int32(aa[20]) + int32(cc[10]>>4)*int32(aa[21])
	s3 += int32(cc[11]&15)*int32(aa[22]) + int32(cc[11]>>4)*int32(aa[23])
	s0 += int32(cc[12]&15)*int32(aa[24]) + int32(cc[12]>>4)*int32(aa[25])
	s1 += int32(cc[13]&15)*int32(aa[26]) + int32(cc[13]>>4)*int32(aa[27])
	s2 += int32(cc[14]&15)*int32(aa[28]) + int32(cc[14]>>4)*int32(aa[29])
	s3 += int32(cc[15]&15)*int32(aa[30]) + int32(cc[15]>>4)*int32(aa[31])
	return s0 + s1 + s2 + s3
}

// dotI8x32 returns the sum over j < 32 of int8(c[j])*a[j].
func dotI8x32(c []byte, a []int8) int32 {
	cc := (*[32]byte)(c)
	aa := (*[32]int8)(a)
	var s0, s1, s2, s3 int32
	s0 += int32(int8(cc[0])) * int32(aa[0])
	s1 += int32(int8(cc[1])) * int32(aa[1])
	s2 += int32(int8(cc[2])) * int32(aa[2])
	s3 += int32(int8(cc[3])) * int32(aa[3])
	s0 += int32(int8(cc[4])) * int32(aa[4])
	s1 += int32(int8(cc[5])) * int32(aa[5])
	s2 += int32(int8(cc[6])) * int32(aa[6])
	s3 += int32(int8(cc[7])) * int32(aa[7])
	s0 += int32(int8(cc[8])) * int32(aa[8])
	s1 += int32(int8(cc[9])) * int32(aa[9])
	s2 += int32(int8(cc[10])) * int32(aa[10])
	s3 += int32(int8(cc[11])) * int32(aa[11])
	s0 += int32(int8(cc[12])) * int32(aa[12])
	s1 += int32(int8(cc[13])) * int32(aa[13])
	s2 += int32(int8(cc[14])) * int32(aa[14])
	s3 += int32(int8(cc[15])) * int32(aa[15])
	s0 += int32(int8(cc[16])) * int32(aa[16])
	s1 += int32(int8(cc[17])) * int32(aa[17])
	s2 += int32(int8(cc[18])) * int32(aa[18])
	s3 += int32(int8(cc[19])) * int32(aa[19])
	s0 += int32(int8(cc[20])) * int32(aa[20])
	s1 += int32(int8(cc[21])) * int32(aa[21])
	s2 += int32(int8(cc[22])) * int32(aa[22])
	s3 += int32(int8(cc[23])) * int32(aa[23])
	s0 += int32(int8(cc[24])) * int32(aa[24])
	s1 += int32(int8(cc[25])) * int32(aa[25])
	s2 += int32(int8(cc[26])) * int32(aa[26])
	s3 += int32(int8(cc[27])) * int32(aa[27])
	s0 += int32(int8(cc[28])) * int32(aa[28])
	s1 += int32(int8(cc[29])) * int32(aa[29])
	s2 += int32(int8(cc[30])) * int32(aa[30])
	s3 += int32(int8(cc[31])) * int32(aa[31])
	return s0 + s1 + s2 + s3
}

// dotI8x16 returns the sum over j < 16 of int8(c[j])*a[j].
func dotI8x16(c []byte, a []int8) int32 {
	cc := (*[16]byte)(c)
	aa := (*[16]int8)(a)
	var s0, s1, s2, s3 int32
	s0 += int32(int8(cc[0])) * int32(aa[0])
	s1 += int32(int8(cc[1])) * int32(aa[1])
	s2 += int32(int8(cc[2])) * int32(aa[2])
	s3 += int32(int8(cc[3])) * int32(aa[3])
	s0 += int32(int8(cc[4])) * int32(aa[4])
	s1 += int32(int8(cc[5])) * int32(aa[5])
	s2 += int32(int8(cc[6])) * int32(aa[6])
	s3 += int32(int8(cc[7])) * int32(aa[7])
	s0 += int32(int8(cc[8])) * int32(aa[8])
	s1 += int32(int8(cc[9])) * int32(aa[9])
	s2 += int32(int8(cc[10])) * int32(aa[10])
	s3 += int32(int8(cc[11])) * int32(aa[11])
	s0 += int32(int8(cc[12])) * int32(aa[12])
	s1 += int32(int8(cc[13])) * int32(aa[13])
	s2 += int32(int8(cc[14])) * int32(aa[14])
	s3 += int32(int8(cc[15])) * int32(aa[15])
	return s0 + s1 + s2 + s3
}

// dotNib5x32 returns the sum over j < 32 of q_j*a_j for 5-bit codes: the
// low 4 bits as in dotNib32, the 5th bit of code j in bit j of h.
func dotNib5x32(c []byte, h uint32, a []int8) int32 {
	cc := (*[16]byte)(c)
	aa := (*[32]int8)(a)
	var s0, s1, s2, s3 int32
	s0 += int32(cc[0]&15|byte(h<<4)&16)*int32(aa[0]) + int32(cc[0]>>4|byte(h<<3)&16)*int32(aa[1])
	s1 += int32(cc[1]&15|byte(h<<2)&16)*int32(aa[2]) + int32(cc[1]>>4|byte(h<<1)&16)*int32(aa[3])
	s2 += int32(cc[2]&15|byte(h)&16)*int32(aa[4]) + int32(cc[2]>>4|byte(h>>1)&16)*int32(aa[5])
	s3 += int32(cc[3]&15|byte(h>>2)&16)*int32(aa[6]) + int32(cc[3]>>4|byte(h>>3)&16)*int32(aa[7])
	s0 += int32(cc[4]&15|byte(h>>4)&16)*int32(aa[8]) + int32(cc[4]>>4|byte(h>>5)&16)*int32(aa[9])
	s1 += int32(cc[5]&15|byte(h>>6)&16)*int32(aa[10]) + int32(cc[5]>>4|byte(h>>7)&16)*int32(aa[11])
	s2 += int32(cc[6]&15|byte(h>>8)&16)*int32(aa[12]) + int32(cc[6]>>4|byte(h>>9)&16)*int32(aa[13])
	s3 += int32(cc[7]&15|byte(h>>10)&16)*int32(aa[14]) + int32(cc[7]>>4|byte(h>>11)&16)*int32(aa[15])
	s0 += int32(cc[8]&15|byte(h>>12)&16)*int32(aa[16]) + int32(cc[8]>>4|byte(h>>13)&16)*int32(aa[17])
	s1 += int32(cc[9]&15|byte(h>>14)&16)*int32(aa[18]) + int32(cc[9]>>4|byte(h>>15)&16)*int32(aa[19])
	s2 += int32(cc[10]&15|byte(h>>16)&16)*int32(aa[20]) + int32(cc[10]>>4|byte(h>>17)&16)*int32(aa[21])
	s3 += int32(cc[11]&15|byte(h>>18)&16)*int32(aa[22]) + int32(cc[11]>>4|byte(h>>19)&16)*int32(aa[23])
	s0 += int32(cc[12]&15|byte(h>>20)&16)*int32(aa[24]) + int32(cc[12]>>4|byte(h>>21)&16)*int32(aa[25])
	s1 += int32(cc[13]&15|byte(h>>22)&16)*int32(aa[26]) + int32(cc[13]>>4|byte(h>>23)&16)*int32(aa[27])
	s2 += int32(cc[14]&15|byte(h>>24)&16)*int32(aa[28]) + int32(cc[14]>>4|byte(h>>25)&16)*int32(aa[29])
	s3 += int32(cc[15]&15|byte(h>>26)&16)*int32(aa[30]) + int32(cc[15]>>4|byte(h>>27)&16)*int32(aa[31])
	return s0 + s1 + s2 + s3
}

// dotQ4_0 is the Q4_0 x Q8_0 product of one row tile: codes holds 16 bytes
// and scales 2 (f16 d) per block of 32; q, d and s are the activation codes,
// scales and code sums. Per block, sum((w-8)*a) = sum(w*a) - 8*sum(a).
func dotQ4_0(codes, scales []byte, q []int8, d []float32, s []int32) float32 {
	nb := len(d)
	codes, scales, q, s = codes[:16*nb], scales[:2*nb], q[:32*nb], s[:nb]
	var acc float32
	for i := range d {
		v := dotNib32(codes[16*i:], q[32*i:]) - 8*s[i]
		acc += float32(v) * (f16(le16(scales[2*i:])) * d[i])
	}
	return acc
}

// dotQ5_0 is the Q5_0 x Q8_0 product of one row tile: as Q4_0 plus a plane
// of 5th bits (4 bytes per block, bit j of the little-endian u32 for element
// j); w = q-16.
func dotQ5_0(codes, high, scales []byte, q []int8, d []float32, s []int32) float32 {
	nb := len(d)
	codes, high, scales, q, s = codes[:16*nb], high[:4*nb], scales[:2*nb], q[:32*nb], s[:nb]
	var acc float32
	for i := range d {
		v := dotNib5x32(codes[16*i:], le32(high[4*i:]), q[32*i:]) - 16*s[i]
		acc += float32(v) * (f16(le16(scales[2*i:])) * d[i])
	}
	return acc
}

// dotQ8_0 is the Q8_0 x Q8_0 product of one row tile: 32 int8 codes and an
// f16 scale per block.
func dotQ8_0(codes, scales []byte, q []int8, d []float32) float32 {
	nb := len(d)
	codes, scales, q = codes[:32*nb], scales[:2*nb], q[:32*nb]
	var acc float32
	for i := range d {
		v := dotI8x32(codes[32*i:], q[32*i:])
		acc += float32(v) * (f16(le16(scales[2*i:])) * d[i])
	}
	return acc
}

// dotQ4_K is the Q4_K x Q8_K product of one row tile. Per super-block of
// 256: codes 128 bytes (sequential nibbles), scalemins 16 bytes (8 sub-block
// scales, then 8 mins), dmin 4 bytes (f16 d, f16 dmin); activations q, the
// scale d and the 16 bsums. w = d*sc*q - dmin*m, so the product is
// d*dx*sum(sc_j*sum(q*a)) - dmin*dx*sum(m_j*sum(a)).
func dotQ4_K(codes, sm, dm []byte, q []int8, d []float32, bs []int32) float32 {
	nb := len(d)
	codes, sm, dm, q, bs = codes[:128*nb], sm[:16*nb], dm[:4*nb], q[:256*nb], bs[:16*nb]
	var acc float32
	for i := range d {
		c := codes[128*i:]
		a := q[256*i:]
		sc := (*[16]byte)(sm[16*i:])
		b := (*[16]int32)(bs[16*i:])
		var sumi, summ int32
		for j := 0; j < 8; j++ {
			sumi += int32(sc[j]) * dotNib32(c[16*j:], a[32*j:])
			summ += int32(sc[8+j]) * (b[2*j] + b[2*j+1])
		}
		dd := f16(le16(dm[4*i:])) * d[i]
		dmin := f16(le16(dm[4*i+2:])) * d[i]
		acc += float32(dd*float32(sumi)) - float32(dmin*float32(summ))
	}
	return acc
}

// dotQ5_K is the Q5_K x Q8_K product of one row tile: as Q4_K plus a plane
// of 5th bits, 32 bytes per super-block (bit j%8 of byte j/8 for element j).
func dotQ5_K(codes, high, sm, dm []byte, q []int8, d []float32, bs []int32) float32 {
	nb := len(d)
	codes, high, sm, dm, q, bs = codes[:128*nb], high[:32*nb], sm[:16*nb], dm[:4*nb], q[:256*nb], bs[:16*nb]
	var acc float32
	for i := range d {
		c := codes[128*i:]
		h := high[32*i:]
		a := q[256*i:]
		sc := (*[16]byte)(sm[16*i:])
		b := (*[16]int32)(bs[16*i:])
		var sumi, summ int32
		for j := 0; j < 8; j++ {
			sumi += int32(sc[j]) * dotNib5x32(c[16*j:], le32(h[4*j:]), a[32*j:])
			summ += int32(sc[8+j]) * (b[2*j] + b[2*j+1])
		}
		dd := f16(le16(dm[4*i:])) * d[i]
		dmin := f16(le16(dm[4*i+2:])) * d[i]
		acc += float32(dd*float32(sumi)) - float32(dmin*float32(summ))
	}
	return acc
}

// dotQ6_K is the Q6_K x Q8_K product of one row tile. Per super-block of
// 256: codes 256 int8 (q-32), scales 16 int8 (one per 16), d 2 bytes (f16).
func dotQ6_K(codes, scales, dp []byte, q []int8, d []float32) float32 {
	nb := len(d)
	codes, scales, dp, q = codes[:256*nb], scales[:16*nb], dp[:2*nb], q[:256*nb]
	var acc float32
	for i := range d {
		c := codes[256*i:]
		a := q[256*i:]
		sc := (*[16]byte)(scales[16*i:])
		var sumi int32
		for g := 0; g < 16; g++ {
			sumi += int32(int8(sc[g])) * dotI8x16(c[16*g:], a[16*g:])
		}
		acc += float32(sumi) * (f16(le16(dp[2*i:])) * d[i])
	}
	return acc
}

// dotF32 is the float product of one row tile of f32 weights with x.
func dotF32(w []byte, x []float32) float32 {
	n := len(x)
	w = w[:4*n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		ww := (*[16]byte)(w[4*i:])
		xx := (*[4]float32)(x[i:])
		s0 += math.Float32frombits(uint32(ww[0])|uint32(ww[1])<<8|uint32(ww[2])<<16|uint32(ww[3])<<24) * xx[0]
		s1 += math.Float32frombits(uint32(ww[4])|uint32(ww[5])<<8|uint32(ww[6])<<16|uint32(ww[7])<<24) * xx[1]
		s2 += math.Float32frombits(uint32(ww[8])|uint32(ww[9])<<8|uint32(ww[10])<<16|uint32(ww[11])<<24) * xx[2]
		s3 += math.Float32frombits(uint32(ww[12])|uint32(ww[13])<<8|uint32(ww[14])<<16|uint32(ww[15])<<24) * xx[3]
	}
	for ; i < n; i++ {
		s0 += math.Float32frombits(le32(w[4*i:])) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotF16 is the float product of one row tile of f16 weights with x (x
// already rounded to f16 values by scratch.prepare, as ggml converts it).
func dotF16(w []byte, x []float32) float32 {
	n := len(x)
	w = w[:2*n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		ww := (*[8]byte)(w[2*i:])
		xx := (*[4]float32)(x[i:])
		s0 += f16(uint16(ww[0])|uint16(ww[1])<<8) * xx[0]
		s1 += f16(uint16(ww[2])|uint16(ww[3])<<8) * xx[1]
		s2 += f16(uint16(ww[4])|uint16(ww[5])<<8) * xx[2]
		s3 += f16(uint16(ww[6])|uint16(ww[7])<<8) * xx[3]
	}
	for ; i < n; i++ {
		s0 += f16(le16(w[2*i:])) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotBF16 is the float product of one row tile of bf16 weights with x (x
// already rounded to bf16 values).
func dotBF16(w []byte, x []float32) float32 {
	n := len(x)
	w = w[:2*n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		ww := (*[8]byte)(w[2*i:])
		xx := (*[4]float32)(x[i:])
		s0 += math.Float32frombits((uint32(ww[0])|uint32(ww[1])<<8)<<16) * xx[0]
		s1 += math.Float32frombits((uint32(ww[2])|uint32(ww[3])<<8)<<16) * xx[1]
		s2 += math.Float32frombits((uint32(ww[4])|uint32(ww[5])<<8)<<16) * xx[2]
		s3 += math.Float32frombits((uint32(ww[6])|uint32(ww[7])<<8)<<16) * xx[3]
	}
	for ; i < n; i++ {
		s0 += math.Float32frombits(uint32(le16(w[2*i:]))<<16) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// The token-triple kernels: each activation element of three tokens is
// packed in one int64 as a0 + a1<<21 + a2<<42 (scratch.prepare3), so that
// one 64-bit multiply by a weight code computes that code's product with
// all three tokens. The per-lane sums of a block stay within +-2^20 (at most
// 32 products of |code| <= 128 by |a| <= 127), so split3 recovers them
// exactly.

// split3 returns the three signed 21-bit lanes of a packed sum.
func split3(v int64) (l0, l1, l2 int32) {
	l0 = int32(v << 43 >> 43)
	v = (v - int64(l0)) >> 21
	l1 = int32(v << 43 >> 43)
	l2 = int32((v - int64(l1)) >> 21)
	return
}

// dot3Nib32 is dotNib32 for three packed tokens.
func dot3Nib32(c []byte, p []int64) int64 {
	cc := (*[16]byte)(c)
	pp := (*[32]int64)(p)
	var s0, s1 int64
	s0 += int64(cc[0]&15)*pp[0] + int64(cc[0]>>4)*pp[1]
	s1 += int64(cc[1]&15)*pp[2] + int64(cc[1]>>4)*pp[3]
	s0 += int64(cc[2]&15)*pp[4] + int64(cc[2]>>4)*pp[5]
	s1 += int64(cc[3]&15)*pp[6] + int64(cc[3]>>4)*pp[7]
	s0 += int64(cc[4]&15)*pp[8] + int64(cc[4]>>4)*pp[9]
	s1 += int64(cc[5]&15)*pp[10] + int64(cc[5]>>4)*pp[11]
	s0 += int64(cc[6]&15)*pp[12] + int64(cc[6]>>4)*pp[13]
	s1 += int64(cc[7]&15)*pp[14] + int64(cc[7]>>4)*pp[15]
	s0 += int64(cc[8]&15)*pp[16] + int64(cc[8]>>4)*pp[17]
	s1 += int64(cc[9]&15)*pp[18] + int64(cc[9]>>4)*pp[19]
	s0 += int64(cc[10]&15)*pp[20] + int64(cc[10]>>4)*pp[21]
	s1 += int64(cc[11]&15)*pp[22] + int64(cc[11]>>4)*pp[23]
	s0 += int64(cc[12]&15)*pp[24] + int64(cc[12]>>4)*pp[25]
	s1 += int64(cc[13]&15)*pp[26] + int64(cc[13]>>4)*pp[27]
	s0 += int64(cc[14]&15)*pp[28] + int64(cc[14]>>4)*pp[29]
	s1 += int64(cc[15]&15)*pp[30] + int64(cc[15]>>4)*pp[31]
	return s0 + s1
}

// dot3Nib5x32 is dotNib5x32 for three packed tokens.
func dot3Nib5x32(c []byte, h uint32, p []int64) int64 {
	cc := (*[16]byte)(c)
	pp := (*[32]int64)(p)
	var s0, s1 int64
	s0 += int64(cc[0]&15|byte(h<<4)&16)*pp[0] + int64(cc[0]>>4|byte(h<<3)&16)*pp[1]
	s1 += int64(cc[1]&15|byte(h<<2)&16)*pp[2] + int64(cc[1]>>4|byte(h<<1)&16)*pp[3]
	s0 += int64(cc[2]&15|byte(h)&16)*pp[4] + int64(cc[2]>>4|byte(h>>1)&16)*pp[5]
	s1 += int64(cc[3]&15|byte(h>>2)&16)*pp[6] + int64(cc[3]>>4|byte(h>>3)&16)*pp[7]
	s0 += int64(cc[4]&15|byte(h>>4)&16)*pp[8] + int64(cc[4]>>4|byte(h>>5)&16)*pp[9]
	s1 += int64(cc[5]&15|byte(h>>6)&16)*pp[10] + int64(cc[5]>>4|byte(h>>7)&16)*pp[11]
	s0 += int64(cc[6]&15|byte(h>>8)&16)*pp[12] + int64(cc[6]>>4|byte(h>>9)&16)*pp[13]
	s1 += int64(cc[7]&15|byte(h>>10)&16)*pp[14] + int64(cc[7]>>4|byte(h>>11)&16)*pp[15]
	s0 += int64(cc[8]&15|byte(h>>12)&16)*pp[16] + int64(cc[8]>>4|byte(h>>13)&16)*pp[17]
	s1 += int64(cc[9]&15|byte(h>>14)&16)*pp[18] + int64(cc[9]>>4|byte(h>>15)&16)*pp[19]
	s0 += int64(cc[10]&15|byte(h>>16)&16)*pp[20] + int64(cc[10]>>4|byte(h>>17)&16)*pp[21]
	s1 += int64(cc[11]&15|byte(h>>18)&16)*pp[22] + int64(cc[11]>>4|byte(h>>19)&16)*pp[23]
	s0 += int64(cc[12]&15|byte(h>>20)&16)*pp[24] + int64(cc[12]>>4|byte(h>>21)&16)*pp[25]
	s1 += int64(cc[13]&15|byte(h>>22)&16)*pp[26] + int64(cc[13]>>4|byte(h>>23)&16)*pp[27]
	s0 += int64(cc[14]&15|byte(h>>24)&16)*pp[28] + int64(cc[14]>>4|byte(h>>25)&16)*pp[29]
	s1 += int64(cc[15]&15|byte(h>>26)&16)*pp[30] + int64(cc[15]>>4|byte(h>>27)&16)*pp[31]
	return s0 + s1
}

// dot3I8x32 is dotI8x32 for three packed tokens.
func dot3I8x32(c []byte, p []int64) int64 {
	cc := (*[32]byte)(c)
	pp := (*[32]int64)(p)
	var s0, s1 int64
	s0 += int64(int8(cc[0])) * pp[0]
	s1 += int64(int8(cc[1])) * pp[1]
	s0 += int64(int8(cc[2])) * pp[2]
	s1 += int64(int8(cc[3])) * pp[3]
	s0 += int64(int8(cc[4])) * pp[4]
	s1 += int64(int8(cc[5])) * pp[5]
	s0 += int64(int8(cc[6])) * pp[6]
	s1 += int64(int8(cc[7])) * pp[7]
	s0 += int64(int8(cc[8])) * pp[8]
	s1 += int64(int8(cc[9])) * pp[9]
	s0 += int64(int8(cc[10])) * pp[10]
	s1 += int64(int8(cc[11])) * pp[11]
	s0 += int64(int8(cc[12])) * pp[12]
	s1 += int64(int8(cc[13])) * pp[13]
	s0 += int64(int8(cc[14])) * pp[14]
	s1 += int64(int8(cc[15])) * pp[15]
	s0 += int64(int8(cc[16])) * pp[16]
	s1 += int64(int8(cc[17])) * pp[17]
	s0 += int64(int8(cc[18])) * pp[18]
	s1 += int64(int8(cc[19])) * pp[19]
	s0 += int64(int8(cc[20])) * pp[20]
	s1 += int64(int8(cc[21])) * pp[21]
	s0 += int64(int8(cc[22])) * pp[22]
	s1 += int64(int8(cc[23])) * pp[23]
	s0 += int64(int8(cc[24])) * pp[24]
	s1 += int64(int8(cc[25])) * pp[25]
	s0 += int64(int8(cc[26])) * pp[26]
	s1 += int64(int8(cc[27])) * pp[27]
	s0 += int64(int8(cc[28])) * pp[28]
	s1 += int64(int8(cc[29])) * pp[29]
	s0 += int64(int8(cc[30])) * pp[30]
	s1 += int64(int8(cc[31])) * pp[31]
	return s0 + s1
}

// dot3I8x16 is dotI8x16 for three packed tokens.
func dot3I8x16(c []byte, p []int64) int64 {
	cc := (*[16]byte)(c)
	pp := (*[16]int64)(p)
	var s0, s1 int64
	s0 += int64(int8(cc[0])) * pp[0]
	s1 += int64(int8(cc[1])) * pp[1]
	s0 += int64(int8(cc[2])) * pp[2]
	s1 += int64(int8(cc[3])) * pp[3]
	s0 += int64(int8(cc[4])) * pp[4]
	s1 += int64(int8(cc[5])) * pp[5]
	s0 += int64(int8(cc[6])) * pp[6]
	s1 += int64(int8(cc[7])) * pp[7]
	s0 += int64(int8(cc[8])) * pp[8]
	s1 += int64(int8(cc[9])) * pp[9]
	s0 += int64(int8(cc[10])) * pp[10]
	s1 += int64(int8(cc[11])) * pp[11]
	s0 += int64(int8(cc[12])) * pp[12]
	s1 += int64(int8(cc[13])) * pp[13]
	s0 += int64(int8(cc[14])) * pp[14]
	s1 += int64(int8(cc[15])) * pp[15]
	return s0 + s1
}

// tri is the activations of three tokens for one K-tile: the packed codes
// and each token's block scales and sums, as the single-token kernels take
// them.
type tri struct {
	p []int64      // [T] a0 + a1<<21 + a2<<42
	d [3][]float32 // per token: scales, one per block
	s [3][]int32   // per token: code sums per 32 (Q8_0) or per 16 (Q8_K)
}

// dot3Q4_0 is dotQ4_0 for three tokens, with the same float arithmetic.
func dot3Q4_0(codes, scales []byte, x *tri, out *[3]float32) {
	nb := len(x.d[0])
	codes, scales, p := codes[:16*nb], scales[:2*nb], x.p[:32*nb]
	d0, d1, d2 := x.d[0][:nb], x.d[1][:nb], x.d[2][:nb]
	s0, s1, s2 := x.s[0][:nb], x.s[1][:nb], x.s[2][:nb]
	var a0, a1, a2 float32
	for i := 0; i < nb; i++ {
		l0, l1, l2 := split3(dot3Nib32(codes[16*i:], p[32*i:]))
		dw := f16(le16(scales[2*i:]))
		a0 += float32(l0-8*s0[i]) * (dw * d0[i])
		a1 += float32(l1-8*s1[i]) * (dw * d1[i])
		a2 += float32(l2-8*s2[i]) * (dw * d2[i])
	}
	*out = [3]float32{a0, a1, a2}
}

// dot3Q5_0 is dotQ5_0 for three tokens.
func dot3Q5_0(codes, high, scales []byte, x *tri, out *[3]float32) {
	nb := len(x.d[0])
	codes, high, scales, p := codes[:16*nb], high[:4*nb], scales[:2*nb], x.p[:32*nb]
	d0, d1, d2 := x.d[0][:nb], x.d[1][:nb], x.d[2][:nb]
	s0, s1, s2 := x.s[0][:nb], x.s[1][:nb], x.s[2][:nb]
	var a0, a1, a2 float32
	for i := 0; i < nb; i++ {
		l0, l1, l2 := split3(dot3Nib5x32(codes[16*i:], le32(high[4*i:]), p[32*i:]))
		dw := f16(le16(scales[2*i:]))
		a0 += float32(l0-16*s0[i]) * (dw * d0[i])
		a1 += float32(l1-16*s1[i]) * (dw * d1[i])
		a2 += float32(l2-16*s2[i]) * (dw * d2[i])
	}
	*out = [3]float32{a0, a1, a2}
}

// dot3Q8_0 is dotQ8_0 for three tokens.
func dot3Q8_0(codes, scales []byte, x *tri, out *[3]float32) {
	nb := len(x.d[0])
	codes, scales, p := codes[:32*nb], scales[:2*nb], x.p[:32*nb]
	d0, d1, d2 := x.d[0][:nb], x.d[1][:nb], x.d[2][:nb]
	var a0, a1, a2 float32
	for i := 0; i < nb; i++ {
		l0, l1, l2 := split3(dot3I8x32(codes[32*i:], p[32*i:]))
		dw := f16(le16(scales[2*i:]))
		a0 += float32(l0) * (dw * d0[i])
		a1 += float32(l1) * (dw * d1[i])
		a2 += float32(l2) * (dw * d2[i])
	}
	*out = [3]float32{a0, a1, a2}
}

// dot3K is dotQ4_K (high == nil) and dotQ5_K for three tokens.
func dot3K(codes, high, sm, dm []byte, x *tri, out *[3]float32) {
	nb := len(x.d[0])
	codes, sm, dm, p := codes[:128*nb], sm[:16*nb], dm[:4*nb], x.p[:256*nb]
	if high != nil {
		high = high[:32*nb]
	}
	var acc [3]float32
	for i := 0; i < nb; i++ {
		c := codes[128*i:]
		pp := p[256*i:]
		sc := (*[16]byte)(sm[16*i:])
		var sumi, summ [3]int32
		for j := 0; j < 8; j++ {
			var v int64
			if high == nil {
				v = dot3Nib32(c[16*j:], pp[32*j:])
			} else {
				v = dot3Nib5x32(c[16*j:], le32(high[32*i+4*j:]), pp[32*j:])
			}
			l0, l1, l2 := split3(v)
			s := int32(sc[j])
			sumi[0] += s * l0
			sumi[1] += s * l1
			sumi[2] += s * l2
		}
		for t := 0; t < 3; t++ {
			b := (*[16]int32)(x.s[t][16*i:])
			for j := 0; j < 8; j++ {
				summ[t] += int32(sc[8+j]) * (b[2*j] + b[2*j+1])
			}
		}
		dws, dmins := f16(le16(dm[4*i:])), f16(le16(dm[4*i+2:]))
		for t := 0; t < 3; t++ {
			dd := dws * x.d[t][i]
			dmin := dmins * x.d[t][i]
			acc[t] += float32(dd*float32(sumi[t])) - float32(dmin*float32(summ[t]))
		}
	}
	*out = acc
}

// dot3Q6_K is dotQ6_K for three tokens.
func dot3Q6_K(codes, scales, dp []byte, x *tri, out *[3]float32) {
	nb := len(x.d[0])
	codes, scales, dp, p := codes[:256*nb], scales[:16*nb], dp[:2*nb], x.p[:256*nb]
	var acc [3]float32
	for i := 0; i < nb; i++ {
		c := codes[256*i:]
		pp := p[256*i:]
		sc := (*[16]byte)(scales[16*i:])
		var s0, s1, s2 int32
		for g := 0; g < 16; g++ {
			l0, l1, l2 := split3(dot3I8x16(c[16*g:], pp[16*g:]))
			s := int32(int8(sc[g]))
			s0 += s * l0
			s1 += s * l1
			s2 += s * l2
		}
		dw := f16(le16(dp[2*i:]))
		acc[0] += float32(s0) * (dw * x.d[0][i])
		acc[1] += float32(s1) * (dw * x.d[1][i])
		acc[2] += float32(s2) * (dw * x.d[2][i])
	}
	*out = acc
}
