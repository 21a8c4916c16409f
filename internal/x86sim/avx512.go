package x86sim

import (
	"fmt"
	"math"
	"math/bits"
)

// The AVX-512 (F, BW, VL, DQ, VNNI, VBMI, VBMI2, BITALG, VPOPCNTDQ, IFMA)
// instructions that have no VEX form, the opmask (k register)
// instructions, and the compares, which write a vector in VEX and a k
// register in EVEX. Each follows its SDM Vol. 2 pseudo-code; the opmask
// and broadcast handling common to all EVEX instructions is in vec.go
// (vwrite, vsrc), after the SDM's chapter on programming with AVX-512
// (Vol. 1, opmask merging and zeroing) and the EVEX encoding section of
// Vol. 2A (embedded broadcast). Static rounding ({er}) and {sae} are
// refused.

func init() {
	// Integer compares: VPCMPEQ*/VPCMPGT* (VEX: into a vector; EVEX: into
	// k), VPCMP[U]{B,W,D,Q} with a predicate immediate or the names objdump
	// prints for it (vpcmpltub ...), VPTESTM/VPTESTNM.
	for _, t := range []struct {
		s   string
		esz int
	}{{"b", 1}, {"w", 2}, {"d", 4}, {"q", 8}} {
		esz := t.esz
		sx := func(x uint64) int64 { sh := uint(64 - 8*esz); return int64(x<<sh) >> sh }
		register(icmp(esz, -1, func(p int, a, b uint64) bool { return a == b }), "vpcmpeq"+t.s)
		register(icmp(esz, -1, func(p int, a, b uint64) bool { return sx(a) > sx(b) }), "vpcmpgt"+t.s)
		signed := func(p int, a, b uint64) bool { return intPred(p, cmp3(sx(a) < sx(b), a == b)) }
		unsigned := func(p int, a, b uint64) bool { return intPred(p, cmp3(a < b, a == b)) }
		register(icmp(esz, -2, signed), "vpcmp"+t.s)
		register(icmp(esz, -2, unsigned), "vpcmpu"+t.s)
		for p, name := range intPreds {
			if name != "eq" { // vpcmpeq<t> is the PCMPEQ opcode above, same result
				register(icmp(esz, p, signed), "vpcmp"+name+t.s)
			}
			register(icmp(esz, p, unsigned), "vpcmp"+name+"u"+t.s)
		}
		register(ptestm(esz, false), "vptestm"+t.s)
		register(ptestm(esz, true), "vptestnm"+t.s)
		register(movm2(esz), "vpmovm2"+t.s)
		register(mov2m(esz), "vpmov"+t.s+"2m")
		register(blendm(esz), "vpblendm"+t.s)
		register(compress(esz, false), "vpcompress"+t.s)
		register(compress(esz, true), "vpexpand"+t.s)
		register(vex2(esz, func(r, a *vec, vl int) { // VPOPCNT
			for i := 0; i < vl/esz; i++ {
				setElem(r, esz, i, uint64(bits.OnesCount64(getElem(a, esz, i))))
			}
		}), "vpopcnt"+t.s)
	}
	register(blendm(4), "vblendmps")
	register(blendm(8), "vblendmpd")
	register(compress(4, false), "vcompressps")
	register(compress(8, false), "vcompresspd")
	register(compress(4, true), "vexpandps")
	register(compress(8, true), "vexpandpd")

	// VNNI (SDM VPDPBUSD, VPDPBUSDS, VPDPWSSD, VPDPWSSDS): each dword of
	// dest plus four products of src1's unsigned bytes and src2's signed
	// bytes (or two of signed words), wrapping or saturating.
	register(vex3(4, vnni(true, false)), "vpdpbusd")
	register(vex3(4, vnni(true, true)), "vpdpbusds")
	register(vex3(4, vnni(false, false)), "vpdpwssd")
	register(vex3(4, vnni(false, true)), "vpdpwssds")

	// Permutes across the whole vector: VPERMB/W/D/Q/PS/PD by a vector of
	// indices (src1), VPERMT2* (dest and src2 are the table, src1 the
	// indices, dest overwritten) and VPERMI2* (dest holds the indices).
	// The register-indexed VPERMD/VPERMPS are in ops.go; VPERMQ/VPERMPD
	// take an immediate or a vector.
	register(vex3(1, permv(1)), "vpermb")
	register(vex3(2, permv(2)), "vpermw")
	for _, t := range []struct {
		s   string
		esz int
	}{{"b", 1}, {"w", 2}, {"d", 4}, {"q", 8}, {"ps", 4}, {"pd", 8}} {
		register(perm2(t.esz, false), "vpermt2"+t.s)
		register(perm2(t.esz, true), "vpermi2"+t.s)
	}

	// Down-converts VPMOV{,S,US}{QB,QW,QD,DB,DW,WB}.
	for _, t := range []struct {
		s        string
		from, to int
	}{{"qb", 8, 1}, {"qw", 8, 2}, {"qd", 8, 4}, {"db", 4, 1}, {"dw", 4, 2}, {"wb", 2, 1}} {
		register(narrow(t.from, t.to, 0), "vpmov"+t.s)
		register(narrow(t.from, t.to, 1), "vpmovs"+t.s)
		register(narrow(t.from, t.to, 2), "vpmovus"+t.s)
	}

	// VPTERNLOGD/Q: bit i of the result is bit (dest<<2 | src1<<1 | src2)
	// of the immediate.
	tern := func(r, a, b *vec, vl int, imm uint8) {
		for i := 0; i < vl; i++ {
			var x uint8
			for bit := 0; bit < 8; bit++ {
				idx := (r[i]>>bit&1)<<2 | (a[i]>>bit&1)<<1 | b[i]>>bit&1
				x |= (imm >> idx & 1) << bit
			}
			r[i] = x
		}
	}
	register(vex3i(4, tern), "vpternlogd")
	register(vex3i(8, tern), "vpternlogq")

	// VSHUFI32X4/64X2, VSHUFF32X4/64X2: 128-bit blocks, the low half of the
	// result from src1, the high half from src2.
	shuf := func(r, a, b *vec, vl int, imm uint8) {
		var t vec
		n := vl / 16 // blocks: 2 or 4
		bitsPer := 1
		if n == 4 {
			bitsPer = 2
		}
		for k := 0; k < n; k++ {
			src := a
			if k >= n/2 {
				src = b
			}
			sel := int(imm>>(bitsPer*k)) & (n - 1)
			copy(t[16*k:16*k+16], src[16*sel:16*sel+16])
		}
		*r = t
	}
	register(vex3i(4, shuf), "vshufi32x4", "vshuff32x4")
	register(vex3i(8, shuf), "vshufi64x2", "vshuff64x2")

	// VALIGND/Q: src1:src2 (src2 low) shifted right by imm elements.
	align := func(esz int) func(r, a, b *vec, vl int, imm uint8) {
		return func(r, a, b *vec, vl int, imm uint8) {
			n := vl / esz
			sh := int(imm) & (n - 1)
			var t vec
			for i := 0; i < n; i++ {
				j := i + sh
				if j < n {
					setElem(&t, esz, i, getElem(b, esz, j))
				} else {
					setElem(&t, esz, i, getElem(a, esz, j-n))
				}
			}
			*r = t
		}
	}
	register(vex3i(4, align(4)), "valignd")
	register(vex3i(8, align(8)), "valignq")

	// VPSADBW: per 8 bytes, the sum of absolute differences in a qword.
	register(vex3(8, func(r, a, b *vec, vl int) {
		for i := 0; i < vl/8; i++ {
			var s uint64
			for j := 0; j < 8; j++ {
				x, y := int(a[8*i+j]), int(b[8*i+j])
				s += uint64(max(x-y, y-x))
			}
			r.set64(i, s)
		}
	}), "vpsadbw")

	// Rounding to an integer value: VROUNDPS imm (bits 1:0 the mode, bit 2
	// MXCSR's, nearest even) and VRNDSCALEPS (also bits 7:4 = M: round to a
	// multiple of 2^-M).
	register(vex2i(4, func(r, a *vec, vl int, imm uint8) {
		for i := 0; i < vl/4; i++ {
			r.set32(i, roundScale32(a.u32(i), imm&^0xf0))
		}
	}), "vroundps")
	register(vex2i(4, func(r, a *vec, vl int, imm uint8) {
		for i := 0; i < vl/4; i++ {
			r.set32(i, roundScale32(a.u32(i), imm))
		}
	}), "vrndscaleps")

	// VBMI2 concatenating shifts (SDM Vol. 2C VPSHLD, VPSHRD, VPSHLDV,
	// VPSHRDV): per element, src1:src2 (VPSHLD, src1 high) shifted left by
	// the count modulo the width, the upper half kept; VPSHRD: src2:src1
	// shifted right, the lower half kept; the V forms take dest as the
	// first half and the counts from src2.
	for _, t := range []struct {
		s   string
		esz int
	}{{"w", 2}, {"d", 4}, {"q", 8}} {
		esz := t.esz
		w := uint(8 * esz)
		shld := func(hi, lo uint64, n uint) uint64 {
			n %= w
			if n == 0 {
				return hi
			}
			return (hi<<n | lo>>(w-n)) & sizeMask(esz)
		}
		shrd := func(hi, lo uint64, n uint) uint64 {
			n %= w
			if n == 0 {
				return lo
			}
			return (lo>>n | hi<<(w-n)) & sizeMask(esz)
		}
		register(vex3i(esz, func(r, a, b *vec, vl int, imm uint8) {
			for i := 0; i < vl/esz; i++ {
				setElem(r, esz, i, shld(getElem(a, esz, i), getElem(b, esz, i), uint(imm)))
			}
		}), "vpshld"+t.s)
		register(vex3i(esz, func(r, a, b *vec, vl int, imm uint8) {
			for i := 0; i < vl/esz; i++ {
				setElem(r, esz, i, shrd(getElem(b, esz, i), getElem(a, esz, i), uint(imm)))
			}
		}), "vpshrd"+t.s)
		register(vex3(esz, func(r, a, b *vec, vl int) {
			for i := 0; i < vl/esz; i++ {
				setElem(r, esz, i, shld(getElem(r, esz, i), getElem(a, esz, i), uint(getElem(b, esz, i)%uint64(w))))
			}
		}), "vpshldv"+t.s)
		register(vex3(esz, func(r, a, b *vec, vl int) {
			for i := 0; i < vl/esz; i++ {
				setElem(r, esz, i, shrd(getElem(a, esz, i), getElem(r, esz, i), uint(getElem(b, esz, i)%uint64(w))))
			}
		}), "vpshrdv"+t.s)
	}

	// Rotates (AVX512F; SDM Vol. 2C VPROLD/VPROLVD/VPROLQ/VPROLVQ,
	// VPRORD/VPRORVD/VPRORQ/VPRORVQ): each element rotated left or right
	// by the immediate, or by the matching element of src2, modulo the
	// element width. (BLAKE3's quarter-round rotates by 16, 12, 8, 7.)
	for _, t := range []struct {
		s   string
		esz int
	}{{"d", 4}, {"q", 8}} {
		esz := t.esz
		w := uint64(8 * esz)
		rol := func(x, n uint64) uint64 {
			n %= w
			return (x<<n | x>>(w-n)) & sizeMask(esz) // n == 0: x>>w is 0 in Go
		}
		ror := func(x, n uint64) uint64 { return rol(x, w-n%w) }
		for _, r := range []struct {
			name string
			f    func(x, n uint64) uint64
		}{{"vprol", rol}, {"vpror", ror}} {
			f := r.f
			register(vex2i(esz, func(d, a *vec, vl int, imm uint8) {
				for i := 0; i < vl/esz; i++ {
					setElem(d, esz, i, f(getElem(a, esz, i), uint64(imm)))
				}
			}), r.name+t.s)
			register(vex3(esz, func(d, a, b *vec, vl int) {
				for i := 0; i < vl/esz; i++ {
					setElem(d, esz, i, f(getElem(a, esz, i), getElem(b, esz, i)))
				}
			}), r.name+"v"+t.s)
		}
	}

	// VPMULTISHIFTQB (VBMI): byte j of each qword is the 8 bits of src2's
	// qword starting at bit src1.byte[j] mod 64, wrapping around. (A
	// {1to8} broadcast source is refused: its element is not the mask's.)
	register(vex3(1, func(r, a, b *vec, vl int) {
		for q := 0; q < vl/8; q++ {
			x := b.u64(q)
			for j := 0; j < 8; j++ {
				r[8*q+j] = uint8(bits.RotateLeft64(x, -int(a[8*q+j]&63)))
			}
		}
	}), "vpmultishiftqb")

	// VPSHUFBITQMB (BITALG): k bit 8q+j is bit src2.byte[8q+j] mod 64 of
	// src1's qword q, under the writemask.
	register(maskOp(1, func(a, b *vec, i int) bool { return a.u64(i/8)>>(b[i]&63)&1 == 1 }), "vpshufbitqmb")

	// VPMADD52LUQ/HUQ (IFMA): dest plus the low or high 52 bits of the
	// 104-bit product of the low 52 bits of src1 and src2.
	for _, high := range []bool{false, true} {
		hi := high
		name := "vpmadd52luq"
		if hi {
			name = "vpmadd52huq"
		}
		register(vex3(8, func(r, a, b *vec, vl int) {
			const m52 = 1<<52 - 1
			for i := 0; i < vl/8; i++ {
				ph, pl := bits.Mul64(a.u64(i)&m52, b.u64(i)&m52)
				v := pl & m52
				if hi {
					v = (ph<<12 | pl>>52) & m52
				}
				r.set64(i, r.u64(i)+v)
			}
		}), name)
	}

	// Opmask instructions.
	for _, t := range []struct {
		s    string
		bits int
	}{{"b", 8}, {"w", 16}, {"d", 32}, {"q", 64}} {
		n := t.bits
		mask := uint64(1)<<n - 1
		if n == 64 {
			mask = ^uint64(0)
		}
		register(kmov(n), "kmov"+t.s)
		kop := func(f func(a, b uint64) uint64) handler {
			return func(m *machine, in *inst) error {
				if len(in.args) != 3 || in.args[0].kind != opMask || in.args[1].kind != opMask || in.args[2].kind != opMask {
					return errBadOperands
				}
				m.k[in.args[0].reg] = f(m.k[in.args[1].reg]&mask, m.k[in.args[2].reg]&mask) & mask
				return nil
			}
		}
		register(kop(func(a, b uint64) uint64 { return a & b }), "kand"+t.s)
		register(kop(func(a, b uint64) uint64 { return ^a & b }), "kandn"+t.s)
		register(kop(func(a, b uint64) uint64 { return a | b }), "kor"+t.s)
		register(kop(func(a, b uint64) uint64 { return a ^ b }), "kxor"+t.s)
		register(kop(func(a, b uint64) uint64 { return ^(a ^ b) }), "kxnor"+t.s)
		register(kop(func(a, b uint64) uint64 { return a + b }), "kadd"+t.s)
		register(func(m *machine, in *inst) error {
			if len(in.args) != 2 || in.args[0].kind != opMask || in.args[1].kind != opMask {
				return errBadOperands
			}
			m.k[in.args[0].reg] = ^m.k[in.args[1].reg] & mask
			return nil
		}, "knot"+t.s)
		for _, dir := range []string{"l", "r"} {
			left := dir == "l"
			register(func(m *machine, in *inst) error {
				if len(in.args) != 3 || in.args[0].kind != opMask || in.args[1].kind != opMask || in.args[2].kind != opImm {
					return errBadOperands
				}
				c := uint64(uint8(in.args[2].imm))
				v := m.k[in.args[1].reg] & mask
				switch {
				case c >= uint64(n):
					v = 0
				case left:
					v = v << c & mask
				default:
					v >>= c
				}
				m.k[in.args[0].reg] = v
				return nil
			}, "kshift"+dir+t.s)
		}
		// KORTEST: ZF if the OR is zero, CF if it is all ones; KTEST: ZF if
		// the AND is zero, CF if the ANDN is; the other flags cleared.
		register(func(m *machine, in *inst) error {
			if len(in.args) != 2 || in.args[0].kind != opMask || in.args[1].kind != opMask {
				return errBadOperands
			}
			v := (m.k[in.args[0].reg] | m.k[in.args[1].reg]) & mask
			m.zf, m.cf, m.sf, m.of, m.pf, m.undef = v == 0, v == mask, false, false, false, 0
			return nil
		}, "kortest"+t.s)
		register(func(m *machine, in *inst) error {
			if len(in.args) != 2 || in.args[0].kind != opMask || in.args[1].kind != opMask {
				return errBadOperands
			}
			a, b := m.k[in.args[0].reg]&mask, m.k[in.args[1].reg]&mask
			m.zf, m.cf, m.sf, m.of, m.pf, m.undef = a&b == 0, ^a&b == 0, false, false, false, 0
			return nil
		}, "ktest"+t.s)
	}
	// KUNPCKBW/WD/DQ: dest = src1's low half : src2's low half (src2 low).
	for _, t := range []struct {
		s    string
		half int
	}{{"bw", 8}, {"wd", 16}, {"dq", 32}} {
		h := uint(t.half)
		register(func(m *machine, in *inst) error {
			if len(in.args) != 3 || in.args[0].kind != opMask || in.args[1].kind != opMask || in.args[2].kind != opMask {
				return errBadOperands
			}
			lo := uint64(1)<<h - 1
			m.k[in.args[0].reg] = (m.k[in.args[1].reg]&lo)<<h | m.k[in.args[2].reg]&lo
			return nil
		}, "kunpck"+t.s)
	}
}

// vnni is VPDPBUSD (bytes: four products of src1's unsigned bytes and
// src2's signed bytes) or VPDPWSSD (two products of signed words), added to
// each dword of dest, wrapping or with signed saturation (the ...S forms).
func vnni(bytes, sat bool) func(r, a, b *vec, vl int) {
	return func(r, a, b *vec, vl int) {
		for i := 0; i < vl/4; i++ {
			s := int64(int32(r.u32(i)))
			if bytes {
				for j := 0; j < 4; j++ {
					s += int64(a[4*i+j]) * int64(int8(b[4*i+j]))
				}
			} else {
				for j := 0; j < 2; j++ {
					s += int64(int16(a.u16(2*i+j))) * int64(int16(b.u16(2*i+j)))
				}
			}
			if sat {
				r.set32(i, sat32(s))
			} else {
				r.set32(i, uint32(s))
			}
		}
	}
}

func sat32(x int64) uint32 {
	if x > math.MaxInt32 {
		return math.MaxInt32
	}
	if x < math.MinInt32 {
		return 0x80000000
	}
	return uint32(int32(x))
}

// intPreds are VPCMP's predicates by immediate, as objdump names them.
var intPreds = []string{"eq", "lt", "le", "false", "neq", "nlt", "nle", "true"}

// cmp3 is -1, 0 or 1 for less, equal, greater.
func cmp3(less, eq bool) int {
	switch {
	case less:
		return -1
	case eq:
		return 0
	}
	return 1
}

// intPred evaluates VPCMP predicate p on an ordering c.
func intPred(p, c int) bool {
	switch p & 7 {
	case 0:
		return c == 0
	case 1:
		return c < 0
	case 2:
		return c <= 0
	case 3:
		return false
	case 4:
		return c != 0
	case 5:
		return c >= 0
	case 6:
		return c > 0
	}
	return true
}

// icmp is an integer compare: pred -1 for the fixed-predicate PCMPEQ/
// PCMPGT opcodes, -2 for the immediate's predicate, else the predicate of
// the mnemonic. The VEX forms write all-ones elements into a vector, the
// EVEX forms bits of a k register, zero where the writemask is.
func icmp(esz, pred int, f func(p int, a, b uint64) bool) handler {
	return func(m *machine, in *inst) error {
		args := in.args
		p := pred
		if pred == -2 {
			if len(args) != 4 || args[3].kind != opImm {
				return errBadOperands
			}
			p = int(args[3].imm) & 7
			args = args[:3]
		}
		if len(args) != 3 {
			return errBadOperands
		}
		vl := args[1].size
		var a, b vec
		if err := m.vreg(&args[1], vl, &a); err != nil {
			return err
		}
		if err := m.vsrc(in, &args[2], vl, esz, &b); err != nil {
			return err
		}
		d := &args[0]
		if d.kind == opMask {
			var k uint64
			for i := 0; i < vl/esz; i++ {
				if m.maskBit(in, i) && f(p, getElem(&a, esz, i), getElem(&b, esz, i)) {
					k |= 1 << i
				}
			}
			m.k[d.reg] = k
			return nil
		}
		if d.kind != opVec || pred == -2 || pred >= 0 || in.k != 0 {
			return errBadOperands
		}
		var r vec
		for i := 0; i < vl/esz; i++ {
			if f(p, getElem(&a, esz, i), getElem(&b, esz, i)) {
				setElem(&r, esz, i, sizeMask(esz))
			}
		}
		return m.vwrite(in, d, &r, vl, esz)
	}
}

// maskOp is an instruction that writes a k register: dest k, src1 (a
// register), src2 (register, memory or broadcast of esz-byte elements);
// bit i is set where the writemask selects element i and f holds.
func maskOp(esz int, f func(a, b *vec, i int) bool) handler {
	return func(m *machine, in *inst) error {
		if len(in.args) != 3 || in.args[0].kind != opMask {
			return errBadOperands
		}
		vl := in.args[1].size
		var a, b vec
		if err := m.vreg(&in.args[1], vl, &a); err != nil {
			return err
		}
		if err := m.vsrc(in, &in.args[2], vl, esz, &b); err != nil {
			return err
		}
		var k uint64
		for i := 0; i < vl/esz; i++ {
			if m.maskBit(in, i) && f(&a, &b, i) {
				k |= 1 << i
			}
		}
		m.k[in.args[0].reg] = k
		return nil
	}
}

// ptestm is VPTESTM (k bit set where src1 AND src2 is nonzero) or VPTESTNM
// (where it is zero), under the writemask.
func ptestm(esz int, neg bool) handler {
	return maskOp(esz, func(a, b *vec, i int) bool { return (getElem(a, esz, i)&getElem(b, esz, i) != 0) != neg })
}

// movm2 is VPMOVM2*: each element all ones where its k bit is set.
func movm2(esz int) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil || d.kind != opVec || s.kind != opMask || in.k != 0 {
			return errBadOperands
		}
		var r vec
		for i := 0; i < d.size/esz; i++ {
			if m.k[s.reg]>>i&1 == 1 {
				setElem(&r, esz, i, sizeMask(esz))
			}
		}
		return m.vwrite(in, d, &r, d.size, esz)
	}
}

// mov2m is VPMOV*2M: k bit i is element i's sign bit.
func mov2m(esz int) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil || d.kind != opMask || s.kind != opVec {
			return errBadOperands
		}
		var k uint64
		for i := 0; i < s.size/esz; i++ {
			k |= uint64(m.v[s.reg][(i+1)*esz-1]>>7) << i
		}
		m.k[d.reg] = k
		return nil
	}
}

// blendm is VPBLENDM*/VBLENDMP*: src2's element where the k bit is set,
// else src1's (or zero with {z}); without a mask, src2.
func blendm(esz int) handler {
	return func(m *machine, in *inst) error {
		if len(in.args) != 3 || in.args[0].kind != opVec {
			return errBadOperands
		}
		vl := in.args[0].size
		var a, b, r vec
		if err := m.vreg(&in.args[1], vl, &a); err != nil {
			return err
		}
		if err := m.vsrc(in, &in.args[2], vl, esz, &b); err != nil {
			return err
		}
		for i := 0; i < vl/esz; i++ {
			switch {
			case m.maskBit(in, i):
				setElem(&r, esz, i, getElem(&b, esz, i))
			case !in.z:
				setElem(&r, esz, i, getElem(&a, esz, i))
			}
		}
		d := m.v[in.args[0].reg]
		copy(d[:vl], r[:vl])
		clear(d[vl:])
		m.v[in.args[0].reg] = d
		return nil
	}
}

// compress is VPCOMPRESS*/VCOMPRESSP* (the elements selected by the mask,
// packed into the low elements: in a register the rest are kept or zeroed
// by {z}, in memory only they are written) and VPEXPAND*/VEXPANDP* (the
// low elements of the source spread to the selected positions, the others
// kept or zeroed).
func compress(esz int, expand bool) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil {
			return err
		}
		sel := func(i int) bool { return in.k == 0 || m.k[in.k]>>i&1 == 1 }
		if !expand {
			if s.kind != opVec {
				return errBadOperands
			}
			vl := s.size
			var t vec
			n := 0
			for i := 0; i < vl/esz; i++ {
				if sel(i) {
					setElem(&t, esz, n, getElem(&m.v[s.reg], esz, i))
					n++
				}
			}
			switch d.kind {
			case opMem:
				if in.z || d.size != 0 && d.size != esz && d.size != vl {
					return errBadOperands
				}
				if n == 0 {
					return nil
				}
				b, err := m.storeTo(in, &operand{kind: opMem, base: d.base, index: d.index, scale: d.scale, disp: d.disp}, n*esz)
				if err != nil {
					return err
				}
				copy(b, t[:n*esz])
				return nil
			case opVec:
				if d.size != vl {
					return errBadOperands
				}
				r := m.v[d.reg]
				if in.z {
					r = vec{}
				}
				copy(r[:n*esz], t[:n*esz])
				clear(r[vl:])
				m.v[d.reg] = r
				return nil
			}
			return errBadOperands
		}
		if d.kind != opVec {
			return errBadOperands
		}
		vl := d.size
		var src vec
		if s.kind == opMem {
			// reads only as many elements as are selected
			n := 0
			for i := 0; i < vl/esz; i++ {
				if sel(i) {
					n++
				}
			}
			if n > 0 {
				b, err := m.load(in, &operand{kind: opMem, base: s.base, index: s.index, scale: s.scale, disp: s.disp, rip: s.rip}, n*esz)
				if err != nil {
					return err
				}
				copy(src[:], b)
			}
		} else if err := m.vreg(s, vl, &src); err != nil {
			return err
		}
		r := m.v[d.reg]
		j := 0
		for i := 0; i < vl/esz; i++ {
			switch {
			case sel(i):
				setElem(&r, esz, i, getElem(&src, esz, j))
				j++
			case in.z:
				setElem(&r, esz, i, 0)
			}
		}
		clear(r[vl:])
		m.v[d.reg] = r
		return nil
	}
}

// permv is VPERMB/W/D/Q by a vector: element i of the result is element
// (a[i] mod n) of b (SDM: src1 the indices, src2 the table).
func permv(esz int) func(r, a, b *vec, vl int) {
	return func(r, a, b *vec, vl int) {
		var t vec
		n := vl / esz
		for i := 0; i < n; i++ {
			setElem(&t, esz, i, getElem(b, esz, int(getElem(a, esz, i))&(n-1)))
		}
		*r = t
	}
}

// perm2 is VPERMT2* (indices in src1, tables dest and src2, masked-off
// elements keep dest's) or VPERMI2* (indices in dest, tables src1 and src2,
// masked-off elements keep the indices): index bit log2(n) selects the
// second table.
func perm2(esz int, i2 bool) handler {
	return vex3(esz, func(r, a, b *vec, vl int) {
		n := vl / esz
		var t vec
		for i := 0; i < n; i++ {
			var idx uint64
			var t1 *vec
			if i2 {
				idx, t1 = getElem(r, esz, i), a
			} else {
				idx, t1 = getElem(a, esz, i), r
			}
			j := int(idx) & (2*n - 1)
			if j < n {
				setElem(&t, esz, i, getElem(t1, esz, j))
			} else {
				setElem(&t, esz, i, getElem(b, esz, j-n))
			}
		}
		*r = t
	})
}

// narrow is VPMOV{,S,US}xy: each from-byte element of the source,
// truncated (sat 0), with signed (1) or unsigned (2) saturation, into a
// to-byte element; a register destination is zeroed above, a memory one
// takes exactly the elements (those the writemask selects).
func narrow(from, to, sat int) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil || s.kind != opVec {
			return errBadOperands
		}
		n := s.size / from
		vl := n * to
		var r vec
		if d.kind == opVec {
			r = m.v[d.reg]
		}
		for i := 0; i < n; i++ {
			x := getElem(&m.v[s.reg], from, i)
			w := uint(8 * to)
			switch sat {
			case 1:
				sh := uint(64 - 8*from)
				v := int64(x<<sh) >> sh
				lo, hi := -int64(1)<<(w-1), int64(1)<<(w-1)-1
				x = uint64(min(max(v, lo), hi))
			case 2:
				if hi := uint64(1)<<w - 1; x > hi {
					x = hi
				}
			}
			setElem(&r, to, i, x&sizeMask(to))
		}
		switch d.kind {
		case opVec:
			if d.size != max(16, vl) {
				return errBadOperands
			}
			if vl < 16 {
				clear(r[vl:16])
				if in.k != 0 { // the masked write covers vl bytes; the rest of the xmm is zeroed
					t := m.v[d.reg]
					clear(t[vl:])
					m.v[d.reg] = t
				}
			}
			if err := m.vwrite(in, d, &r, vl, to); err != nil {
				return err
			}
			clear(m.v[d.reg][vl:])
			return nil
		case opMem:
			if d.size != 0 && d.size != vl {
				return errBadOperands
			}
			return m.vwrite(in, d, &r, vl, to)
		}
		return errBadOperands
	}
}

// kmov is KMOVB/W/D/Q between k registers, general-purpose registers and
// memory (n bits; into a GPR zero-extended).
func kmov(n int) handler {
	mask := uint64(1)<<n - 1
	if n == 64 {
		mask = ^uint64(0)
	}
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil {
			return err
		}
		var v uint64
		switch s.kind {
		case opMask:
			v = m.k[s.reg]
		case opGPR:
			v = m.readGPR(s)
		case opMem:
			if v, err = m.readInt(in, s, n/8); err != nil {
				return err
			}
		default:
			return errBadOperands
		}
		v &= mask
		switch d.kind {
		case opMask:
			m.k[d.reg] = v
			return nil
		case opGPR:
			if s.kind != opMask {
				return errBadOperands
			}
			m.writeGPR(d, v)
			return nil
		case opMem:
			if s.kind != opMask {
				return errBadOperands
			}
			return m.writeInt(in, d, n/8, v)
		}
		return errBadOperands
	}
}

// roundScale32 is VRNDSCALEPS on one element (VROUNDPS with M = 0): x
// rounded to a multiple of 2^-M, M = imm[7:4], by the mode imm[1:0]
// (0 nearest even, 1 down, 2 up, 3 toward zero) unless imm[2] selects
// MXCSR's (nearest even). A NaN is quieted.
func roundScale32(a uint32, imm uint8) uint32 {
	if isNaN32(a) {
		return a | quiet32
	}
	mode := int(imm & 3)
	if imm&4 != 0 {
		mode = 0
	}
	sc := math.Ldexp(1, int(imm>>4))
	x := float64(f32(a)) * sc // exact: float32 times a power of two up to 2^15 fits float64
	var y float64
	switch mode {
	case 0:
		y = math.RoundToEven(x)
	case 1:
		y = math.Floor(x)
	case 2:
		y = math.Ceil(x)
	default:
		y = math.Trunc(x)
	}
	r := float32(y / sc) // exact: an integer times 2^-M within float32's precision
	if r == 0 {
		r = float32(math.Copysign(0, float64(f32(a))))
	}
	return math.Float32bits(r)
}

var _ = fmt.Sprintf
