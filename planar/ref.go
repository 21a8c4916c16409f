package planar

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file holds the scalar reference dequantisers of GGUF blocks. Each is a
// transcription of ggml's dequantize_row_* and uses the same float32
// operations in the same order, one rounding per operation (no fused
// multiply-add: every product that feeds a subtraction is converted to
// float32 explicitly, which the Go spec guarantees is not fused).
//
// Upstream, pinned:
//   - block structs: ggml-org/llama.cpp @ 01243c587feceaa5d6a6c2305535ef2f549c48b8,
//     ggml/src/ggml-common.h (block_q4_0, block_q5_0, block_q8_0, block_q4_K,
//     block_q5_K, block_q6_K)
//   - dequantisers: the same commit, ggml/src/ggml-quants.c
//     (dequantize_row_q4_0, _q5_0, _q8_0, _q4_K, _q5_K, _q6_K, get_scale_min_k4)
//   - f16 conversions: ggml/src/ggml-impl.h (ggml_compute_fp16_to_fp32,
//     ggml_compute_fp32_to_fp16, ggml_compute_bf16_to_fp32)

// F16ToF32 returns the IEEE binary16 value h as a float32, exactly (every
// binary16 value, subnormals included, is representable). A NaN keeps its
// sign and payload and comes out quiet, as ggml's ggml_compute_fp16_to_fp32
// and the x86 F16C instruction produce it.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f:
		if mant == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
	case 0:
		// Zero or subnormal: mant * 2^-24, exact in float32.
		return math.Float32frombits(sign | math.Float32bits(float32(mant)*0x1p-24))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToF16 rounds f to the nearest IEEE binary16 value, ties to even, as
// ggml's GGML_FP32_TO_FP16 (ggml_compute_fp32_to_fp16, from Maratyszcza/FP16)
// does: values beyond the binary16 range become ±Inf, and every NaN becomes
// the quiet NaN 0x7e00 with f's sign.
func F32ToF16(f float32) uint16 {
	const scaleToInf = 0x1p+112
	const scaleToZero = 0x1p-110
	w := math.Float32bits(f)
	base := float32(float32(math.Float32frombits(w&0x7fffffff))*scaleToInf) * scaleToZero
	shl1 := w + w
	sign := w & 0x80000000
	bias := shl1 & 0xff000000
	if bias < 0x71000000 {
		bias = 0x71000000
	}
	base = math.Float32frombits((bias>>1)+0x07800000) + base
	bits := math.Float32bits(base)
	nonsign := (bits>>13)&0x7c00 + bits&0x0fff
	if shl1 > 0xff000000 {
		nonsign = 0x7e00
	}
	return uint16(sign>>16 | nonsign)
}

// BF16ToF32 returns the bfloat16 value b as a float32 (exact: b is the high
// half of a float32).
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

func f16At(b []byte, i int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[i:])) }

// DequantGGUF decodes GGUF data of type t into dst, exactly as ggml's
// dequantize_row_* does. src holds len(dst)/t.BlockSize() blocks; len(dst)
// must be a multiple of the block size. It supports the types of Supported.
func DequantGGUF(t Type, src []byte, dst []float32) error {
	if _, err := FormatOf(t); err != nil {
		return err
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	if len(dst)%bs != 0 {
		return fmt.Errorf("%w: %d %s elements is not a multiple of the block size %d", ErrShape, len(dst), t, bs)
	}
	nb := len(dst) / bs
	if len(src) != nb*bb {
		return fmt.Errorf("%w: %d bytes of %s for %d elements, want %d", ErrShape, len(src), t, len(dst), nb*bb)
	}
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q4_0:
		for i := 0; i < nb; i++ {
			dequantQ4_0(src[i*18:i*18+18], dst[i*32:i*32+32])
		}
	case Q5_0:
		for i := 0; i < nb; i++ {
			dequantQ5_0(src[i*22:i*22+22], dst[i*32:i*32+32])
		}
	case Q8_0:
		for i := 0; i < nb; i++ {
			dequantQ8_0(src[i*34:i*34+34], dst[i*32:i*32+32])
		}
	case Q4_K:
		for i := 0; i < nb; i++ {
			dequantQ4_K(src[i*144:i*144+144], dst[i*256:i*256+256])
		}
	case Q5_K:
		for i := 0; i < nb; i++ {
			dequantQ5_K(src[i*176:i*176+176], dst[i*256:i*256+256])
		}
	case Q6_K:
		for i := 0; i < nb; i++ {
			dequantQ6_K(src[i*210:i*210+210], dst[i*256:i*256+256])
		}
	}
	return nil
}

// dequantQ4_0 decodes one block_q4_0 {f16 d; u8 qs[16]}: element j < 16 is
// the low nibble of qs[j], element j+16 the high nibble; y = (q-8)*d.
func dequantQ4_0(b []byte, y []float32) {
	b, y = b[:18], y[:32]
	d := f16At(b, 0)
	qs := b[2:18]
	for j := 0; j < 16; j++ {
		y[j] = float32(int(qs[j]&0x0f)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

// dequantQ5_0 decodes one block_q5_0 {f16 d; u8 qh[4]; u8 qs[16]}: qh is a
// little-endian u32 whose bit e is the 5th bit of element e; y = (q-16)*d.
func dequantQ5_0(b []byte, y []float32) {
	b, y = b[:22], y[:32]
	d := f16At(b, 0)
	qh := binary.LittleEndian.Uint32(b[2:])
	qs := b[6:22]
	for j := 0; j < 16; j++ {
		x0 := int(qs[j]&0x0f|byte(qh>>j<<4)&0x10) - 16
		x1 := int(qs[j]>>4|byte(qh>>(j+12))&0x10) - 16
		y[j] = float32(x0) * d
		y[j+16] = float32(x1) * d
	}
}

// dequantQ8_0 decodes one block_q8_0 {f16 d; i8 qs[32]}: y = q*d.
func dequantQ8_0(b []byte, y []float32) {
	b, y = b[:34], y[:32]
	d := f16At(b, 0)
	for j, q := range b[2:34] {
		y[j] = float32(int8(q)) * d
	}
}

// scaleMinK4 unpacks the 12-byte scales array of block_q4_K / block_q5_K
// into the 8 six-bit sub-block scales and the 8 six-bit mins, as ggml's
// get_scale_min_k4(j, q, &sc[j], &m[j]) for j = 0..7. The map uses all 96
// bits and is a bijection (packScaleMinK4 is its inverse).
func scaleMinK4(q []byte, sc, m *[8]byte) {
	q = q[:12]
	for j := 0; j < 4; j++ {
		sc[j] = q[j] & 63
		m[j] = q[j+4] & 63
		sc[j+4] = q[j+8]&0x0f | (q[j]>>6)<<4
		m[j+4] = q[j+8]>>4 | (q[j+4]>>6)<<4
	}
}

// packScaleMinK4 is the inverse of scaleMinK4 (ggml's packing in
// quantize_row_q4_K_ref). Only the low 6 bits of each sc and m are used.
func packScaleMinK4(sc, m *[8]byte, q []byte) {
	q = q[:12]
	for j := 0; j < 4; j++ {
		q[j] = sc[j]&63 | (sc[j+4]>>4)<<6
		q[j+4] = m[j]&63 | (m[j+4]>>4)<<6
		q[j+8] = sc[j+4]&0x0f | (m[j+4]&0x0f)<<4
	}
}

// dequantQ4_K decodes one block_q4_K {f16 d, dmin; u8 scales[12]; u8 qs[128]}:
// for chunk j = 0..3, element 64j+l is the low nibble of qs[32j+l] and
// element 64j+32+l its high nibble; sub-block s = e/32 has y = (d*sc[s])*q -
// dmin*m[s].
func dequantQ4_K(b []byte, y []float32) {
	b, y = b[:144], y[:256]
	d, dmin := f16At(b, 0), f16At(b, 2)
	var sc, m [8]byte
	scaleMinK4(b[4:16], &sc, &m)
	qs := b[16:144]
	for j := 0; j < 4; j++ {
		d1, m1 := d*float32(sc[2*j]), dmin*float32(m[2*j])
		d2, m2 := d*float32(sc[2*j+1]), dmin*float32(m[2*j+1])
		q := qs[32*j : 32*j+32]
		o := y[64*j : 64*j+64]
		for l := 0; l < 32; l++ {
			o[l] = float32(d1*float32(q[l]&0x0f)) - m1
			o[l+32] = float32(d2*float32(q[l]>>4)) - m2
		}
	}
}

// dequantQ5_K decodes one block_q5_K {f16 d, dmin; u8 scales[12]; u8 qh[32];
// u8 qs[128]}: as Q4_K for the low 4 bits; the 5th bit of element 32k+l is
// bit k of qh[l].
func dequantQ5_K(b []byte, y []float32) {
	b, y = b[:176], y[:256]
	d, dmin := f16At(b, 0), f16At(b, 2)
	var sc, m [8]byte
	scaleMinK4(b[4:16], &sc, &m)
	qh := b[16:48]
	qs := b[48:176]
	for j := 0; j < 4; j++ {
		d1, m1 := d*float32(sc[2*j]), dmin*float32(m[2*j])
		d2, m2 := d*float32(sc[2*j+1]), dmin*float32(m[2*j+1])
		q := qs[32*j : 32*j+32]
		o := y[64*j : 64*j+64]
		s1, s2 := uint(2*j), uint(2*j+1)
		for l := 0; l < 32; l++ {
			q1 := q[l]&0x0f | (qh[l]>>s1&1)<<4
			q2 := q[l]>>4 | (qh[l]>>s2&1)<<4
			o[l] = float32(d1*float32(q1)) - m1
			o[l+32] = float32(d2*float32(q2)) - m2
		}
	}
}

// dequantQ6_K decodes one block_q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16];
// f16 d}: in half h (elements 128h..128h+127, ql+64h, qh+32h), for l < 32,
// element l = ql[l]&15 | (qh[l]&3)<<4, l+32 = ql[l+32]&15 | (qh[l]>>2&3)<<4,
// l+64 = ql[l]>>4 | (qh[l]>>4&3)<<4, l+96 = ql[l+32]>>4 | (qh[l]>>6)<<4;
// y = (d*scales[e/16])*(q-32).
func dequantQ6_K(b []byte, y []float32) {
	b, y = b[:210], y[:256]
	d := f16At(b, 208)
	for h := 0; h < 2; h++ {
		ql := b[64*h : 64*h+64]
		qh := b[128+32*h : 128+32*h+32]
		sc := b[192+8*h : 192+8*h+8]
		o := y[128*h : 128*h+128]
		for l := 0; l < 32; l++ {
			is := l / 16
			q1 := int(ql[l]&0x0f|(qh[l]&3)<<4) - 32
			q2 := int(ql[l+32]&0x0f|(qh[l]>>2&3)<<4) - 32
			q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int(ql[l+32]>>4|(qh[l]>>6)<<4) - 32
			o[l] = d * float32(int8(sc[is])) * float32(q1)
			o[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			o[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			o[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
	}
}
