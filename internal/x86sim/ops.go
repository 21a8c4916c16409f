package x86sim

import (
	"math"
)

// The integer and shuffle vector instructions of AVX, AVX2 and their EVEX
// forms, each by its SDM Vol. 2 pseudo-code (section named in the comment
// where the semantics are not evident from the name).

func sat16(x int32) uint16 {
	if x > math.MaxInt16 {
		return 0x7fff
	}
	if x < math.MinInt16 {
		return 0x8000
	}
	return uint16(int16(x))
}

func sat8(x int32) uint8 {
	if x > math.MaxInt8 {
		return 0x7f
	}
	if x < math.MinInt8 {
		return 0x80
	}
	return uint8(int8(x))
}

func satU8(x int32) uint8 {
	if x > 255 {
		return 255
	}
	if x < 0 {
		return 0
	}
	return uint8(x)
}

func satU16(x int32) uint16 {
	if x > 65535 {
		return 65535
	}
	if x < 0 {
		return 0
	}
	return uint16(x)
}

func b2u8(t bool) uint8 {
	if t {
		return 0xff
	}
	return 0
}

func b2u16(t bool) uint16 {
	if t {
		return 0xffff
	}
	return 0
}

func b2u32(t bool) uint32 {
	if t {
		return 0xffffffff
	}
	return 0
}

func b2u64(t bool) uint64 {
	if t {
		return ^uint64(0)
	}
	return 0
}

func init() {
	// Moves.
	moves(4, false, "vmovdqu", "vmovups", "vmovdqu32", "movups", "movdqu")
	moves(4, true, "vmovdqa", "vmovaps", "vmovdqa32", "movaps", "movdqa", "vmovntdq", "vmovntps")
	moves(8, false, "vmovupd", "vmovdqu64")
	moves(8, true, "vmovapd", "vmovdqa64", "vmovntpd")
	moves(1, false, "vmovdqu8")
	moves(2, false, "vmovdqu16")

	// Bitwise.
	and := map64(func(a, b uint64) uint64 { return a & b })
	or := map64(func(a, b uint64) uint64 { return a | b })
	xor := map64(func(a, b uint64) uint64 { return a ^ b })
	andn := map64(func(a, b uint64) uint64 { return ^a & b })
	register(vex3(4, and), "vpand", "vandps", "vpandd")
	register(vex3(8, and), "vandpd", "vpandq")
	register(vex3(4, or), "vpor", "vorps", "vpord")
	register(vex3(8, or), "vorpd", "vporq")
	register(vex3(4, xor), "vpxor", "vxorps", "vpxord")
	register(vex3(8, xor), "vxorpd", "vpxorq")
	register(vex3(4, andn), "vpandn", "vandnps", "vpandnd")
	register(vex3(8, andn), "vandnpd", "vpandnq")

	// Add, subtract, multiply.
	register(vex3(1, map8(func(a, b uint8) uint8 { return a + b })), "vpaddb")
	register(vex3(2, map16(func(a, b uint16) uint16 { return a + b })), "vpaddw")
	register(vex3(4, map32(func(a, b uint32) uint32 { return a + b })), "vpaddd")
	register(vex3(8, map64(func(a, b uint64) uint64 { return a + b })), "vpaddq")
	register(vex3(1, map8(func(a, b uint8) uint8 { return a - b })), "vpsubb")
	register(vex3(2, map16(func(a, b uint16) uint16 { return a - b })), "vpsubw")
	register(vex3(4, map32(func(a, b uint32) uint32 { return a - b })), "vpsubd")
	register(vex3(8, map64(func(a, b uint64) uint64 { return a - b })), "vpsubq")
	register(vex3(1, map8(func(a, b uint8) uint8 { return sat8(int32(int8(a)) + int32(int8(b))) })), "vpaddsb")
	register(vex3(2, map16(func(a, b uint16) uint16 { return sat16(int32(int16(a)) + int32(int16(b))) })), "vpaddsw")
	register(vex3(1, map8(func(a, b uint8) uint8 { return satU8(int32(a) + int32(b)) })), "vpaddusb")
	register(vex3(2, map16(func(a, b uint16) uint16 { return satU16(int32(a) + int32(b)) })), "vpaddusw")
	register(vex3(1, map8(func(a, b uint8) uint8 { return sat8(int32(int8(a)) - int32(int8(b))) })), "vpsubsb")
	register(vex3(2, map16(func(a, b uint16) uint16 { return sat16(int32(int16(a)) - int32(int16(b))) })), "vpsubsw")
	register(vex3(1, map8(func(a, b uint8) uint8 { return satU8(int32(a) - int32(b)) })), "vpsubusb")
	register(vex3(2, map16(func(a, b uint16) uint16 { return satU16(int32(a) - int32(b)) })), "vpsubusw")
	register(vex3(2, map16(func(a, b uint16) uint16 { return uint16(int16(a) * int16(b)) })), "vpmullw")
	register(vex3(2, map16(func(a, b uint16) uint16 { return uint16(int32(int16(a)) * int32(int16(b)) >> 16) })), "vpmulhw")
	register(vex3(2, map16(func(a, b uint16) uint16 { return uint16(uint32(a) * uint32(b) >> 16) })), "vpmulhuw")
	register(vex3(4, map32(func(a, b uint32) uint32 { return a * b })), "vpmulld")
	register(vex3(8, map64(func(a, b uint64) uint64 { return a * b })), "vpmullq")
	register(vex3(8, map64(func(a, b uint64) uint64 { return uint64(int64(int32(a)) * int64(int32(b))) })), "vpmuldq")
	register(vex3(8, map64(func(a, b uint64) uint64 { return (a & 0xffffffff) * (b & 0xffffffff) })), "vpmuludq")
	register(vex3(1, map8(func(a, b uint8) uint8 { return uint8((uint16(a) + uint16(b) + 1) >> 1) })), "vpavgb")
	register(vex3(2, map16(func(a, b uint16) uint16 { return uint16((uint32(a) + uint32(b) + 1) >> 1) })), "vpavgw")

	// Min, max.
	register(vex3(1, map8(func(a, b uint8) uint8 { return uint8(min(int8(a), int8(b))) })), "vpminsb")
	register(vex3(1, map8(func(a, b uint8) uint8 { return uint8(max(int8(a), int8(b))) })), "vpmaxsb")
	register(vex3(1, map8(func(a, b uint8) uint8 { return min(a, b) })), "vpminub")
	register(vex3(1, map8(func(a, b uint8) uint8 { return max(a, b) })), "vpmaxub")
	register(vex3(2, map16(func(a, b uint16) uint16 { return uint16(min(int16(a), int16(b))) })), "vpminsw")
	register(vex3(2, map16(func(a, b uint16) uint16 { return uint16(max(int16(a), int16(b))) })), "vpmaxsw")
	register(vex3(2, map16(func(a, b uint16) uint16 { return min(a, b) })), "vpminuw")
	register(vex3(2, map16(func(a, b uint16) uint16 { return max(a, b) })), "vpmaxuw")
	register(vex3(4, map32(func(a, b uint32) uint32 { return uint32(min(int32(a), int32(b))) })), "vpminsd")
	register(vex3(4, map32(func(a, b uint32) uint32 { return uint32(max(int32(a), int32(b))) })), "vpmaxsd")
	register(vex3(4, map32(func(a, b uint32) uint32 { return min(a, b) })), "vpminud")
	register(vex3(4, map32(func(a, b uint32) uint32 { return max(a, b) })), "vpmaxud")
	register(vex3(8, map64(func(a, b uint64) uint64 { return uint64(min(int64(a), int64(b))) })), "vpminsq")
	register(vex3(8, map64(func(a, b uint64) uint64 { return uint64(max(int64(a), int64(b))) })), "vpmaxsq")

	// Absolute value, sign.
	register(vex2(1, un8(func(a uint8) uint8 {
		if int8(a) < 0 {
			return -a
		}
		return a
	})), "vpabsb")
	register(vex2(2, un16(func(a uint16) uint16 {
		if int16(a) < 0 {
			return -a
		}
		return a
	})), "vpabsw")
	register(vex2(4, un32(func(a uint32) uint32 {
		if int32(a) < 0 {
			return -a
		}
		return a
	})), "vpabsd")
	register(vex2(8, un64(func(a uint64) uint64 {
		if int64(a) < 0 {
			return -a
		}
		return a
	})), "vpabsq")
	register(vex3(1, map8(func(a, b uint8) uint8 { // PSIGNB
		switch {
		case int8(b) < 0:
			return -a
		case b == 0:
			return 0
		}
		return a
	})), "vpsignb")
	register(vex3(2, map16(func(a, b uint16) uint16 {
		switch {
		case int16(b) < 0:
			return -a
		case b == 0:
			return 0
		}
		return a
	})), "vpsignw")
	register(vex3(4, map32(func(a, b uint32) uint32 {
		switch {
		case int32(b) < 0:
			return -a
		case b == 0:
			return 0
		}
		return a
	})), "vpsignd")

	// Multiply-add (PMADDUBSW: unsigned bytes of src1 times signed bytes of
	// src2, adjacent pairs summed with signed saturation; PMADDWD).
	register(vex3(2, func(r, a, b *vec, vl int) {
		for i := 0; i < vl/2; i++ {
			s := int32(a[2*i])*int32(int8(b[2*i])) + int32(a[2*i+1])*int32(int8(b[2*i+1]))
			r.set16(i, sat16(s))
		}
	}), "vpmaddubsw")
	register(vex3(4, func(r, a, b *vec, vl int) {
		for i := 0; i < vl/4; i++ {
			s := int32(int16(a.u16(2*i)))*int32(int16(b.u16(2*i))) + int32(int16(a.u16(2*i+1)))*int32(int16(b.u16(2*i+1)))
			r.set32(i, uint32(s)) // 0x8000*0x8000*2 wraps to 0x80000000, as the SDM says
		}
	}), "vpmaddwd")

	// Horizontal adds (per 128-bit lane: src1's pairs, then src2's).
	register(vex3(4, func(r, a, b *vec, vl int) {
		var t vec
		for l := 0; l < vl/16; l++ {
			for i := 0; i < 2; i++ {
				t.set32(4*l+i, a.u32(4*l+2*i)+a.u32(4*l+2*i+1))
				t.set32(4*l+2+i, b.u32(4*l+2*i)+b.u32(4*l+2*i+1))
			}
		}
		*r = t
	}), "vphaddd")
	register(vex3(2, func(r, a, b *vec, vl int) {
		var t vec
		for l := 0; l < vl/16; l++ {
			for i := 0; i < 4; i++ {
				t.set16(8*l+i, a.u16(8*l+2*i)+a.u16(8*l+2*i+1))
				t.set16(8*l+4+i, b.u16(8*l+2*i)+b.u16(8*l+2*i+1))
			}
		}
		*r = t
	}), "vphaddw")

	// Packs (per 128-bit lane: src1's elements, then src2's).
	pack := func(inEsz int, f func(x int32) uint32) func(r, a, b *vec, vl int) {
		return func(r, a, b *vec, vl int) {
			var t vec
			n := 16 / inEsz // input elements per lane
			get := func(v *vec, i int) int32 {
				if inEsz == 4 {
					return int32(v.u32(i))
				}
				return int32(int16(v.u16(i)))
			}
			put := func(i int, x uint32) {
				if inEsz == 4 {
					t.set16(i, uint16(x))
				} else {
					t[i] = uint8(x)
				}
			}
			for l := 0; l < vl/16; l++ {
				for i := 0; i < n; i++ {
					put(2*n*l+i, f(get(a, n*l+i)))
					put(2*n*l+n+i, f(get(b, n*l+i)))
				}
			}
			*r = t
		}
	}
	register(vex3(2, pack(4, func(x int32) uint32 { return uint32(satU16(x)) })), "vpackusdw")
	register(vex3(2, pack(4, func(x int32) uint32 { return uint32(sat16(x)) })), "vpackssdw")
	register(vex3(1, pack(2, func(x int32) uint32 { return uint32(satU8(x)) })), "vpackuswb")
	register(vex3(1, pack(2, func(x int32) uint32 { return uint32(sat8(x)) })), "vpacksswb")

	// Unpacks (per 128-bit lane, interleaving the low or high halves).
	unpack := func(esz int, high bool) func(r, a, b *vec, vl int) {
		return func(r, a, b *vec, vl int) {
			var t vec
			half := 0
			if high {
				half = 8
			}
			for l := 0; l < vl/16; l++ {
				for i := 0; i < 8/esz; i++ {
					src := 16*l + half + i*esz
					copy(t[16*l+2*i*esz:], a[src:src+esz])
					copy(t[16*l+(2*i+1)*esz:], b[src:src+esz])
				}
			}
			*r = t
		}
	}
	register(vex3(1, unpack(1, false)), "vpunpcklbw")
	register(vex3(1, unpack(1, true)), "vpunpckhbw")
	register(vex3(2, unpack(2, false)), "vpunpcklwd")
	register(vex3(2, unpack(2, true)), "vpunpckhwd")
	register(vex3(4, unpack(4, false)), "vpunpckldq", "vunpcklps")
	register(vex3(4, unpack(4, true)), "vpunpckhdq", "vunpckhps")
	register(vex3(8, unpack(8, false)), "vpunpcklqdq", "vunpcklpd")
	register(vex3(8, unpack(8, true)), "vpunpckhqdq", "vunpckhpd")

	// Shuffles.
	register(vex3(1, func(r, a, b *vec, vl int) { // PSHUFB, per 128-bit lane
		var t vec
		for i := 0; i < vl; i++ {
			if b[i]&0x80 == 0 {
				t[i] = a[i&^15+int(b[i]&15)]
			}
		}
		*r = t
	}), "vpshufb")
	pshufd := vex2i(4, func(r, a *vec, vl int, imm uint8) { // PSHUFD
		var t vec
		for l := 0; l < vl/16; l++ {
			for i := 0; i < 4; i++ {
				t.set32(4*l+i, a.u32(4*l+int(imm>>(2*i)&3)))
			}
		}
		*r = t
	})
	register(pshufd, "vpshufd")
	// VPERMILPS/PD: by an immediate (as PSHUFD; PD: bit i of imm selects
	// within each pair) or by a vector of selectors (bits 1:0, PD bit 1).
	permil := func(esz int) handler {
		imm := pshufd
		if esz == 8 {
			imm = vex2i(8, func(r, a *vec, vl int, imm uint8) {
				var t vec
				for i := 0; i < vl/8; i++ {
					t.set64(i, a.u64(i&^1+int(imm>>(i%8)&1)))
				}
				*r = t
			})
		}
		vec3 := vex3(esz, func(r, a, b *vec, vl int) {
			var t vec
			n := 16 / esz // elements per 128-bit lane
			for i := 0; i < vl/esz; i++ {
				sel := int(getElem(b, esz, i)) & (n - 1)
				if esz == 8 {
					sel = int(getElem(b, esz, i)>>1) & 1
				}
				setElem(&t, esz, i, getElem(a, esz, i&^(n-1)+sel))
			}
			*r = t
		})
		return func(m *machine, in *inst) error {
			if len(in.args) == 3 && in.args[2].kind == opImm {
				return imm(m, in)
			}
			return vec3(m, in)
		}
	}
	register(permil(4), "vpermilps")
	register(permil(8), "vpermilpd")
	register(vex2i(2, func(r, a *vec, vl int, imm uint8) { // PSHUFLW
		t := *a
		for l := 0; l < vl/16; l++ {
			for i := 0; i < 4; i++ {
				t.set16(8*l+i, a.u16(8*l+int(imm>>(2*i)&3)))
			}
		}
		*r = t
	}), "vpshuflw")
	register(vex2i(2, func(r, a *vec, vl int, imm uint8) { // PSHUFHW
		t := *a
		for l := 0; l < vl/16; l++ {
			for i := 0; i < 4; i++ {
				t.set16(8*l+4+i, a.u16(8*l+4+int(imm>>(2*i)&3)))
			}
		}
		*r = t
	}), "vpshufhw")
	register(vex3i(4, func(r, a, b *vec, vl int, imm uint8) { // SHUFPS
		var t vec
		for l := 0; l < vl/16; l++ {
			t.set32(4*l+0, a.u32(4*l+int(imm&3)))
			t.set32(4*l+1, a.u32(4*l+int(imm>>2&3)))
			t.set32(4*l+2, b.u32(4*l+int(imm>>4&3)))
			t.set32(4*l+3, b.u32(4*l+int(imm>>6&3)))
		}
		*r = t
	}), "vshufps")
	register(vex3i(1, func(r, a, b *vec, vl int, imm uint8) { // PALIGNR, per 128-bit lane
		var t vec
		for l := 0; l < vl/16; l++ {
			var cat [32]byte // src1:src2, src2 low
			copy(cat[:16], b[16*l:16*l+16])
			copy(cat[16:], a[16*l:16*l+16])
			for i := 0; i < 16; i++ {
				if j := int(imm) + i; j < 32 {
					t[16*l+i] = cat[j]
				}
			}
		}
		*r = t
	}), "vpalignr")
	register(vex3i(4, func(r, a, b *vec, vl int, imm uint8) { // VPERM2I128 (VEX.256 only)
		var t vec
		for h := 0; h < 2; h++ {
			c := imm >> (4 * h)
			if c&8 != 0 {
				continue
			}
			src := a
			if c&2 != 0 {
				src = b
			}
			copy(t[16*h:16*h+16], src[16*int(c&1):16*int(c&1)+16])
		}
		*r = t
	}), "vperm2i128", "vperm2f128")
	register(vex3i(4, func(r, a, b *vec, vl int, imm uint8) { // VPBLENDD
		var t vec
		for i := 0; i < vl/4; i++ {
			if imm>>(i%8)&1 == 1 {
				t.set32(i, b.u32(i))
			} else {
				t.set32(i, a.u32(i))
			}
		}
		*r = t
	}), "vpblendd", "vblendps")
	register(vex3i(2, func(r, a, b *vec, vl int, imm uint8) { // VPBLENDW
		var t vec
		for i := 0; i < vl/2; i++ {
			if imm>>(i%8)&1 == 1 {
				t.set16(i, b.u16(i))
			} else {
				t.set16(i, a.u16(i))
			}
		}
		*r = t
	}), "vpblendw")

	// Full-width permutes: VPERMD/VPERMPS (index in src1, data in src2),
	// VPERMQ/VPERMPD with an immediate (256 bits: one 4-element group;
	// 512 bits: each 256-bit half), and the EVEX VPERMB/VPERMW/VPERMQ
	// by vector, in avx512.go.
	register(vex3(4, func(r, a, b *vec, vl int) {
		var t vec
		n := vl / 4
		for i := 0; i < n; i++ {
			t.set32(i, b.u32(int(a.u32(i))&(n-1)))
		}
		*r = t
	}), "vpermd", "vpermps")
	vpermqImm := vex2i(8, func(r, a *vec, vl int, imm uint8) {
		var t vec
		for i := 0; i < vl/8; i++ {
			t.set64(i, a.u64(i&^3+int(imm>>(2*(i&3))&3)))
		}
		*r = t
	})
	vpermqVec := vex3(8, permv(8))
	register(func(m *machine, in *inst) error {
		if len(in.args) == 3 && in.args[2].kind == opImm {
			return vpermqImm(m, in)
		}
		return vpermqVec(m, in)
	}, "vpermq", "vpermpd")

	// Shifts.
	shifts := []struct {
		name string
		esz  int
		kind byte // l, r, a
	}{
		{"vpsllw", 2, 'l'}, {"vpslld", 4, 'l'}, {"vpsllq", 8, 'l'},
		{"vpsrlw", 2, 'r'}, {"vpsrld", 4, 'r'}, {"vpsrlq", 8, 'r'},
		{"vpsraw", 2, 'a'}, {"vpsrad", 4, 'a'}, {"vpsraq", 8, 'a'},
	}
	for _, s := range shifts {
		register(vecShift(s.esz, s.kind), s.name)
	}
	for _, s := range []struct {
		name string
		esz  int
		kind byte
	}{
		{"vpsllvw", 2, 'l'}, {"vpsllvd", 4, 'l'}, {"vpsllvq", 8, 'l'},
		{"vpsrlvw", 2, 'r'}, {"vpsrlvd", 4, 'r'}, {"vpsrlvq", 8, 'r'},
		{"vpsravw", 2, 'a'}, {"vpsravd", 4, 'a'}, {"vpsravq", 8, 'a'},
	} {
		esz, kind := s.esz, s.kind
		register(vex3(esz, func(r, a, b *vec, vl int) {
			for i := 0; i < vl/esz; i++ {
				setElem(r, esz, i, shiftElem(getElem(a, esz, i), getElem(b, esz, i), esz, kind))
			}
		}), s.name)
	}
	register(vex2i(1, func(r, a *vec, vl int, imm uint8) { // PSLLDQ, per 128-bit lane
		var t vec
		for l := 0; l < vl/16; l++ {
			for i := int(imm); i < 16 && imm < 16; i++ {
				t[16*l+i] = a[16*l+i-int(imm)]
			}
		}
		*r = t
	}), "vpslldq")
	register(vex2i(1, func(r, a *vec, vl int, imm uint8) { // PSRLDQ, per 128-bit lane
		var t vec
		for l := 0; l < vl/16; l++ {
			for i := 0; i+int(imm) < 16; i++ {
				t[16*l+i] = a[16*l+i+int(imm)]
			}
		}
		*r = t
	}), "vpsrldq")

	// Sign and zero extension: VPMOVSXBW ymm, xmm/m128 etc.
	for _, x := range []struct {
		name     string
		from, to int
		signed   bool
	}{
		{"vpmovsxbw", 1, 2, true}, {"vpmovsxbd", 1, 4, true}, {"vpmovsxbq", 1, 8, true},
		{"vpmovsxwd", 2, 4, true}, {"vpmovsxwq", 2, 8, true}, {"vpmovsxdq", 4, 8, true},
		{"vpmovzxbw", 1, 2, false}, {"vpmovzxbd", 1, 4, false}, {"vpmovzxbq", 1, 8, false},
		{"vpmovzxwd", 2, 4, false}, {"vpmovzxwq", 2, 8, false}, {"vpmovzxdq", 4, 8, false},
	} {
		register(extend(x.from, x.to, x.signed), x.name)
	}

	// Broadcasts.
	register(broadcast(1), "vpbroadcastb")
	register(broadcast(2), "vpbroadcastw")
	register(broadcast(4), "vpbroadcastd", "vbroadcastss")
	register(broadcast(8), "vpbroadcastq", "vbroadcastsd")
	register(broadcast(16), "vbroadcasti128", "vbroadcastf128", "vbroadcasti32x4", "vbroadcastf32x4")
	register(broadcast(32), "vbroadcasti64x4", "vbroadcastf64x4")

	// Lane extracts and inserts.
	register(extract(16, 16, false), "vextracti128", "vextractf128")
	register(extract(16, 4, false), "vextracti32x4", "vextractf32x4")
	register(extract(16, 8, false), "vextracti64x2", "vextractf64x2")
	register(extract(32, 4, false), "vextracti32x8", "vextractf32x8")
	register(extract(32, 8, false), "vextracti64x4", "vextractf64x4")
	register(extract(16, 16, true), "vinserti128", "vinsertf128")
	register(extract(16, 4, true), "vinserti32x4", "vinsertf32x4")
	register(extract(16, 8, true), "vinserti64x2", "vinsertf64x2")
	register(extract(32, 4, true), "vinserti32x8", "vinsertf32x8")
	register(extract(32, 8, true), "vinserti64x4", "vinsertf64x4")

	// Element inserts and extracts, scalar moves.
	register(pinsr(1), "vpinsrb")
	register(pinsr(2), "vpinsrw")
	register(pinsr(4), "vpinsrd")
	register(pinsr(8), "vpinsrq")
	register(pextr(1), "vpextrb")
	register(pextr(2), "vpextrw")
	register(pextr(4), "vpextrd", "vextractps")
	register(pextr(8), "vpextrq")
	register(movdq(4), "vmovd", "movd")
	register(movdq(8), "vmovq", "movq")
	register(vzeroupper, "vzeroupper")
	register(vzeroall, "vzeroall")
	register(vmovmsk(4), "vmovmskps")
	register(vmovmsk(8), "vmovmskpd")
	register(vpmovmskb, "vpmovmskb")
	register(vex3(8, func(r, a, b *vec, vl int) { // VMOVHLPS xmm1, xmm2, xmm3
		var t vec
		t.set64(0, b.u64(1))
		t.set64(1, a.u64(1))
		*r = t
	}), "vmovhlps")
	register(vex3(8, func(r, a, b *vec, vl int) { // VMOVLHPS xmm1, xmm2, xmm3
		var t vec
		t.set64(0, a.u64(0))
		t.set64(1, b.u64(0))
		*r = t
	}), "vmovlhps")
	register(vex2(4, func(r, a *vec, vl int) {
		for i := 0; i < vl/4; i += 2 {
			r.set32(i, a.u32(i+1))
			r.set32(i+1, a.u32(i+1))
		}
	}), "vmovshdup")
	register(vex2(4, func(r, a *vec, vl int) {
		for i := 0; i < vl/4; i += 2 {
			r.set32(i, a.u32(i))
			r.set32(i+1, a.u32(i))
		}
	}), "vmovsldup")
	register(vblendv(4), "vblendvps")
	register(vblendv(8), "vblendvpd")
	register(vblendv(1), "vpblendvb")
}

func getElem(v *vec, esz, i int) uint64 {
	switch esz {
	case 1:
		return uint64(v[i])
	case 2:
		return uint64(v.u16(i))
	case 4:
		return uint64(v.u32(i))
	}
	return v.u64(i)
}

func setElem(v *vec, esz, i int, x uint64) {
	switch esz {
	case 1:
		v[i] = uint8(x)
	case 2:
		v.set16(i, uint16(x))
	case 4:
		v.set32(i, uint32(x))
	default:
		v.set64(i, x)
	}
}

// shiftElem shifts an esz-byte element by n: logical shifts by n >= the
// width give 0, arithmetic ones the sign.
func shiftElem(x, n uint64, esz int, kind byte) uint64 {
	w := uint64(8 * esz)
	switch kind {
	case 'l':
		if n >= w {
			return 0
		}
		return (x << n) & sizeMask(esz)
	case 'r':
		if n >= w {
			return 0
		}
		return x >> n
	}
	if n >= w {
		n = w - 1
	}
	sh := 64 - w
	return uint64(int64(x<<sh)>>sh>>n) & sizeMask(esz)
}

// vecShift is PSLL/PSRL/PSRA by an immediate (dest, src, imm; src may be
// memory in EVEX) or by the low 64 bits of an xmm register or m128.
func vecShift(esz int, kind byte) handler {
	return func(m *machine, in *inst) error {
		if len(in.args) != 3 || in.args[0].kind != opVec {
			return errBadOperands
		}
		vl := in.args[0].size
		var r, a vec
		r = m.v[in.args[0].reg]
		var n uint64
		if c := &in.args[2]; c.kind == opImm {
			n = uint64(uint8(c.imm))
			if err := m.vsrc(in, &in.args[1], vl, esz, &a); err != nil {
				return err
			}
		} else {
			var t vec
			if err := m.vsrc(in, c, 16, esz, &t); err != nil {
				return err
			}
			n = t.u64(0)
			if err := m.vreg(&in.args[1], vl, &a); err != nil {
				return err
			}
		}
		for i := 0; i < vl/esz; i++ {
			setElem(&r, esz, i, shiftElem(getElem(&a, esz, i), n, esz, kind))
		}
		return m.vwrite(in, &in.args[0], &r, vl, esz)
	}
}

// extend is VPMOVSX*/VPMOVZX*: dest of vl bytes from vl*from/to bytes.
func extend(from, to int, signed bool) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil || d.kind != opVec {
			return errBadOperands
		}
		vl := d.size
		n := vl / to
		var a, r vec
		if s.kind == opVec {
			copy(a[:n*from], m.v[s.reg][:n*from])
		} else if err := m.vsrc(in, s, n*from, from, &a); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			x := getElem(&a, from, i)
			if signed {
				sh := uint(64 - 8*from)
				x = uint64(int64(x<<sh) >> sh)
			}
			setElem(&r, to, i, x&sizeMask(to))
		}
		return m.vwrite(in, d, &r, vl, to)
	}
}

// broadcast is VPBROADCAST*/VBROADCAST*: an esz-byte element (or 16- or
// 32-byte block) from the low bytes of a register, memory, or (EVEX
// VPBROADCASTB/W/D/Q) a general-purpose register, repeated.
func broadcast(esz int) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil || d.kind != opVec || d.size < esz || d.size == esz {
			return errBadOperands
		}
		vl := d.size
		var e [32]byte
		switch s.kind {
		case opVec:
			if esz > 8 {
				return errBadOperands // the 128/256-bit broadcasts take memory only
			}
			copy(e[:esz], m.v[s.reg][:esz])
		case opGPR:
			if esz > 8 || s.size < esz && !(s.size == 4 && esz < 4) {
				return errBadOperands
			}
			putLE(e[:min(esz, 8)], m.readGPR(s))
		case opMem:
			if s.size != 0 && s.size != esz {
				return errBadOperands
			}
			b, err := m.load(in, s, esz)
			if err != nil {
				return err
			}
			copy(e[:], b)
		default:
			return errBadOperands
		}
		var r vec
		for i := 0; i < vl; i += esz {
			copy(r[i:i+esz], e[:esz])
		}
		me := esz
		if esz > 8 {
			me = 4 // masking of the block broadcasts: by the suffix's elements (32x4 etc.)
			if in.op == "vbroadcasti64x4" || in.op == "vbroadcastf64x4" || in.op == "vbroadcasti64x2" || in.op == "vbroadcastf64x2" {
				me = 8
			}
		}
		return m.vwrite(in, d, &r, vl, me)
	}
}

// extract is VEXTRACT*/VINSERT* of a block of bs bytes, masked by esz-byte
// elements: extract dest, src, imm; insert dest, src1, src2, imm.
func extract(bs, esz int, insert bool) handler {
	return func(m *machine, in *inst) error {
		if !insert {
			if len(in.args) != 3 || in.args[1].kind != opVec || in.args[2].kind != opImm {
				return errBadOperands
			}
			d, s := &in.args[0], &in.args[1]
			if d.kind == opVec && d.size != bs || d.kind == opMem && d.size != 0 && d.size != bs {
				return errBadOperands
			}
			n := s.size / bs
			if n < 2 {
				return errBadOperands
			}
			sel := int(in.args[2].imm) & (n - 1)
			var r vec
			if d.kind == opVec {
				r = m.v[d.reg]
			}
			copy(r[:bs], m.v[s.reg][sel*bs:(sel+1)*bs])
			return m.vwrite(in, d, &r, bs, esz)
		}
		if len(in.args) != 4 || in.args[0].kind != opVec || in.args[3].kind != opImm {
			return errBadOperands
		}
		d := &in.args[0]
		vl := d.size
		n := vl / bs
		if n < 2 {
			return errBadOperands
		}
		var r, b vec
		if err := m.vreg(&in.args[1], vl, &r); err != nil {
			return err
		}
		if err := m.vsrc(in, &in.args[2], bs, esz, &b); err != nil {
			return err
		}
		sel := int(in.args[3].imm) & (n - 1)
		copy(r[sel*bs:(sel+1)*bs], b[:bs])
		return m.vwrite(in, d, &r, vl, esz)
	}
}

// pinsr is VPINSRB/W/D/Q xmm1, xmm2, r/m, imm.
func pinsr(esz int) handler {
	return func(m *machine, in *inst) error {
		if len(in.args) != 4 || in.args[0].kind != opVec || in.args[0].size != 16 || in.args[3].kind != opImm {
			return errBadOperands
		}
		var r vec
		if err := m.vreg(&in.args[1], 16, &r); err != nil {
			return err
		}
		s := &in.args[2]
		size := esz
		if s.kind == opGPR {
			size = s.size
			if size < esz || (esz < 4 && size != 4) {
				return errBadOperands
			}
		} else if s.kind != opMem || s.size != 0 && s.size != esz {
			return errBadOperands
		}
		x, err := m.readInt(in, s, size)
		if err != nil {
			return err
		}
		setElem(&r, esz, int(in.args[3].imm)&(16/esz-1), x&sizeMask(esz))
		return m.vwrite(in, &in.args[0], &r, 16, esz)
	}
}

// pextr is VPEXTRB/W/D/Q r/m, xmm, imm (into a register: zero-extended).
func pextr(esz int) handler {
	return func(m *machine, in *inst) error {
		if len(in.args) != 3 || in.args[1].kind != opVec || in.args[2].kind != opImm {
			return errBadOperands
		}
		x := getElem(&m.v[in.args[1].reg], esz, int(in.args[2].imm)&(16/esz-1))
		d := &in.args[0]
		switch d.kind {
		case opGPR:
			if d.size < 4 || d.size < esz {
				return errBadOperands
			}
			m.writeGPR(d, x)
			return nil
		case opMem:
			return m.writeInt(in, d, esz, x)
		}
		return errBadOperands
	}
}

// movdq is MOVD/MOVQ between a vector register and a general-purpose
// register or memory, and VMOVQ xmm, xmm: a write to the vector register
// zeroes it above esz bytes (the legacy SSE forms keep bits 255:128).
func movdq(esz int) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil {
			return err
		}
		if d.kind == opVec {
			if d.size != 16 {
				return errBadOperands
			}
			var x uint64
			switch s.kind {
			case opVec:
				if esz != 8 {
					return errBadOperands
				}
				x = m.v[s.reg].u64(0)
			case opGPR:
				if s.size != esz {
					return errBadOperands
				}
				x = m.readGPR(s)
			case opMem:
				if s.size != 0 && s.size != esz {
					return errBadOperands
				}
				if x, err = m.readInt(in, s, esz); err != nil {
					return err
				}
			default:
				return errBadOperands
			}
			var r vec
			setElem(&r, esz, 0, x)
			if sseOnly(in) {
				copy(m.v[d.reg][:16], r[:16])
				return nil
			}
			return m.vwrite(in, d, &r, 16, 16)
		}
		if s.kind != opVec || s.size != 16 {
			return errBadOperands
		}
		x := getElem(&m.v[s.reg], esz, 0)
		switch d.kind {
		case opGPR:
			if d.size != esz {
				return errBadOperands
			}
			m.writeGPR(d, x)
			return nil
		case opMem:
			if d.size != 0 && d.size != esz {
				return errBadOperands
			}
			return m.writeInt(in, d, esz, x)
		}
		return errBadOperands
	}
}

// vzeroupper zeroes bits 511:128 of registers 0-15.
func vzeroupper(m *machine, in *inst) error {
	if len(in.args) != 0 {
		return errBadOperands
	}
	for i := 0; i < 16; i++ {
		clear(m.v[i][16:])
	}
	return nil
}

// vzeroall zeroes registers 0-15.
func vzeroall(m *machine, in *inst) error {
	if len(in.args) != 0 {
		return errBadOperands
	}
	for i := 0; i < 16; i++ {
		m.v[i] = vec{}
	}
	return nil
}

// vmovmsk is VMOVMSKPS/PD: the elements' sign bits into a GPR.
func vmovmsk(esz int) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil || d.kind != opGPR || d.size < 4 || s.kind != opVec {
			return errBadOperands
		}
		var x uint64
		for i := 0; i < s.size/esz; i++ {
			x |= uint64(m.v[s.reg][(i+1)*esz-1]>>7) << i
		}
		m.g[d.reg] = x // a 32- or 64-bit destination: zero-extended
		return nil
	}
}

func vpmovmskb(m *machine, in *inst) error {
	d, s, err := two(in)
	if err != nil || d.kind != opGPR || d.size < 4 || s.kind != opVec || s.size > 32 {
		return errBadOperands
	}
	var x uint64
	for i := 0; i < s.size; i++ {
		x |= uint64(m.v[s.reg][i]>>7) << i
	}
	m.g[d.reg] = x
	return nil
}

// vblendv is VBLENDVPS/PD and VPBLENDVB dest, src1, src2, mask: src2's
// element where the mask element's sign bit is set, else src1's.
func vblendv(esz int) handler {
	return func(m *machine, in *inst) error {
		if len(in.args) != 4 || in.args[0].kind != opVec || in.args[3].kind != opVec {
			return errBadOperands
		}
		vl := in.args[0].size
		var a, b vec
		if err := m.vreg(&in.args[1], vl, &a); err != nil {
			return err
		}
		if err := m.vsrc(in, &in.args[2], vl, esz, &b); err != nil {
			return err
		}
		mask := &m.v[in.args[3].reg]
		var r vec
		for i := 0; i < vl/esz; i++ {
			src := &a
			if mask[(i+1)*esz-1]&0x80 != 0 {
				src = &b
			}
			copy(r[i*esz:(i+1)*esz], src[i*esz:(i+1)*esz])
		}
		return m.vwrite(in, &in.args[0], &r, vl, esz)
	}
}
