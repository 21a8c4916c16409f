package x86sim

import (
	"fmt"
	"math"
)

// The floating-point vector instructions.

func init() {
	f32op := func(f func(x, y float32) float32) func(a, b uint32) uint32 {
		return func(a, b uint32) uint32 { return arith32(a, b, f) }
	}
	f64op := func(f func(x, y float64) float64) func(a, b uint64) uint64 {
		return func(a, b uint64) uint64 { return arith64(a, b, f) }
	}
	for _, o := range []struct {
		name string
		f32  func(a, b uint32) uint32
		f64  func(a, b uint64) uint64
	}{
		{"add", f32op(add32), f64op(add64)},
		{"sub", f32op(sub32), f64op(sub64)},
		{"mul", f32op(mul32), f64op(mul64)},
		{"div", f32op(div32), f64op(div64)},
		{"max", max32, max64},
		{"min", min32, min64},
	} {
		register(vex3(4, map32(o.f32)), "v"+o.name+"ps")
		register(vex3(8, map64(o.f64)), "v"+o.name+"pd")
		f, g := o.f32, o.f64
		register(scalar3(4, func(a, b uint64) uint64 { return uint64(f(uint32(a), uint32(b))) }), "v"+o.name+"ss")
		register(scalar3(8, g), "v"+o.name+"sd")
	}
	register(vex2(4, un32(sqrt32)), "vsqrtps")
	register(vex2(8, un64(sqrt64)), "vsqrtpd")
	register(scalar3(4, func(a, b uint64) uint64 { return uint64(sqrt32(uint32(b))) }), "vsqrtss")
	register(scalar3(8, func(a, b uint64) uint64 { return sqrt64(b) }), "vsqrtsd")

	// Fused multiply-adds: vf[n]m{add,sub}{132,213,231}{ps,pd,ss,sd}.
	for _, neg := range []string{"", "n"} {
		for _, kind := range []string{"add", "sub"} {
			for _, form := range []string{"132", "213", "231"} {
				for _, t := range []string{"ps", "pd", "ss", "sd"} {
					register(fma(neg == "n", kind == "sub", form, t), "vf"+neg+"m"+kind+form+t)
				}
			}
		}
	}

	// Conversions.
	register(vex2(4, un32(func(a uint32) uint32 { return math.Float32bits(float32(int32(a))) })), "vcvtdq2ps")
	register(vex2(4, un32(func(a uint32) uint32 { return cvtToInt32(float64(f32(a)), false) })), "vcvtps2dq")
	register(vex2(4, un32(func(a uint32) uint32 { return cvtToInt32(float64(f32(a)), true) })), "vcvttps2dq")
	register(vcvtph2ps, "vcvtph2ps")
	register(vcvtps2ph, "vcvtps2ph")
	register(scalar3(8, func(a, b uint64) uint64 { return cvt32to64(uint32(b)) }), "vcvtss2sd")
	register(scalar3(4, func(a, b uint64) uint64 { return uint64(cvt64to32(b)) }), "vcvtsd2ss")

	// Compares: vcmp<predicate>{ps,pd,ss,sd}, or vcmpps with an immediate.
	for _, t := range []string{"ps", "pd", "ss", "sd"} {
		register(vcmp(t), "vcmp"+t)
		for _, p := range cmpPreds {
			register(vcmp(t), "vcmp"+p+t)
		}
		for p := range cmpAliases {
			register(vcmp(t), "vcmp"+p+t)
		}
	}

	// Scalar moves.
	register(movs(4), "vmovss", "movss")
	register(movs(8), "vmovsd", "movsd")
}

// scalar3 is a scalar VEX/EVEX instruction dest, src1, src2 (xmm or m32/
// m64): the low element is f(src1's, src2's), the rest of the low 128 bits
// src1's, the rest of the register zero.
func scalar3(esz int, f func(a, b uint64) uint64) handler {
	return func(m *machine, in *inst) error {
		if len(in.args) != 3 || in.args[0].kind != opVec || in.args[0].size != 16 {
			return errBadOperands
		}
		var r, b vec
		if err := m.vreg(&in.args[1], 16, &r); err != nil {
			return err
		}
		s := &in.args[2]
		if s.kind == opMem && s.bcst {
			return errBadOperands
		}
		// The source element of the conversions is the other size.
		ssz := esz
		switch in.op {
		case "vcvtss2sd":
			ssz = 4
		case "vcvtsd2ss":
			ssz = 8
		}
		if s.kind == opMem && s.size != 0 && s.size != ssz {
			return errBadOperands
		}
		n := ssz
		if s.kind == opVec {
			n = 16
		}
		if err := m.vsrc(in, s, n, ssz, &b); err != nil {
			return err
		}
		setElem(&r, esz, 0, f(getElem(&r, esz, 0), getElem(&b, ssz, 0)))
		if in.k != 0 && !m.maskBit(in, 0) {
			old := getElem(&m.v[in.args[0].reg], esz, 0)
			if in.z {
				old = 0
			}
			setElem(&r, esz, 0, old)
		}
		return m.vwrite(in, &in.args[0], &r, 16, 16)
	}
}

// fma is one VFMADD/VFMSUB/VFNMADD/VFNMSUB: the form 132, 213 or 231 names
// which operands multiply (1 = dest, 2 = src2, 3 = src3): 132 is
// dest*src3+src2, 213 src2*dest+src3, 231 src2*src3+dest.
func fma(negMul, sub bool, form, t string) handler {
	esz := 4
	if t == "pd" || t == "sd" {
		esz = 8
	}
	scalar := t == "ss" || t == "sd"
	return func(m *machine, in *inst) error {
		if len(in.args) != 3 || in.args[0].kind != opVec {
			return errBadOperands
		}
		vl := in.args[0].size
		if scalar && vl != 16 {
			return errBadOperands
		}
		var d, b, c vec
		d = m.v[in.args[0].reg]
		if err := m.vreg(&in.args[1], vl, &b); err != nil {
			return err
		}
		n := vl
		if scalar && in.args[2].kind == opMem {
			n = esz
		}
		if err := m.vsrc(in, &in.args[2], n, esz, &c); err != nil {
			return err
		}
		r := d
		count := vl / esz
		if scalar {
			count = 1
		}
		for i := 0; i < count; i++ {
			o1, o2, o3 := getElem(&d, esz, i), getElem(&b, esz, i), getElem(&c, esz, i) // operands 1, 2, 3
			var x, y, z uint64
			switch form {
			case "132":
				x, y, z = o1, o3, o2
			case "213":
				x, y, z = o2, o1, o3
			default:
				x, y, z = o2, o3, o1
			}
			var v uint64
			if esz == 4 {
				v = uint64(fmaOp32(negMul, sub, uint32(x), uint32(y), uint32(z)))
			} else {
				v = fmaOp64(negMul, sub, x, y, z)
			}
			setElem(&r, esz, i, v)
		}
		if scalar {
			// dest's bits 127:esz stay; with a mask, element 0 obeys it
			if in.k != 0 && !m.maskBit(in, 0) {
				old := getElem(&d, esz, 0)
				if in.z {
					old = 0
				}
				setElem(&r, esz, 0, old)
			}
			return m.vwrite(in, &in.args[0], &r, 16, 16)
		}
		return m.vwrite(in, &in.args[0], &r, vl, esz)
	}
}

// vcvtph2ps converts vl/4 halves (xmm/m64 to xmm, xmm/m128 to ymm,
// ymm/m256 to zmm), exactly.
func vcvtph2ps(m *machine, in *inst) error {
	d, s, err := two(in)
	if err != nil || d.kind != opVec {
		return errBadOperands
	}
	vl := d.size
	n := vl / 4
	var a, r vec
	if s.kind == opVec {
		copy(a[:2*n], m.v[s.reg][:2*n])
	} else if err := m.vsrc(in, s, 2*n, 2, &a); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		r.set32(i, f16to32(a.u16(i)))
	}
	return m.vwrite(in, d, &r, vl, 4)
}

// vcvtps2ph converts a register's floats to halves with the immediate's
// rounding control (bit 2 set: MXCSR's, nearest even), into a register
// (zeroed above) or memory of half its size.
func vcvtps2ph(m *machine, in *inst) error {
	if len(in.args) != 3 || in.args[1].kind != opVec || in.args[2].kind != opImm {
		return errBadOperands
	}
	d, s := &in.args[0], &in.args[1]
	n := s.size / 4
	imm := int(in.args[2].imm)
	rc := imm & 3
	if imm&4 != 0 {
		rc = 0
	}
	var r vec
	for i := 0; i < n; i++ {
		r.set16(i, f32to16(m.v[s.reg].u32(i), rc))
	}
	vl := 2 * n
	if d.kind == opVec {
		// The register takes the n halves under the mask and is zeroed
		// above them, whatever the mask (SDM: DEST[MAXVL-1:VL/2] <- 0).
		if d.size != max(16, vl) {
			return errBadOperands
		}
		return m.vwrite(in, d, &r, vl, 2)
	}
	if d.kind == opMem && d.size != 0 && d.size != vl {
		return errBadOperands
	}
	return m.vwrite(in, d, &r, vl, 2)
}

// vcmp is VCMPPS/PD/SS/SD: the predicate from the mnemonic or the
// immediate; into a vector (all ones where true) or, in EVEX, a k register.
func vcmp(t string) handler {
	esz := 4
	if t == "pd" || t == "sd" {
		esz = 8
	}
	scalar := t == "ss" || t == "sd"
	return func(m *machine, in *inst) error {
		p, named := cmpPred(in.op, t)
		args := in.args
		if !named {
			if len(args) != 4 || args[3].kind != opImm {
				return errBadOperands
			}
			p = int(args[3].imm) & 31
			args = args[:3]
		}
		if len(args) != 3 {
			return errBadOperands
		}
		d := &args[0]
		vl := args[1].size
		var a, b vec
		if err := m.vreg(&args[1], vl, &a); err != nil {
			return err
		}
		n := vl
		if scalar && args[2].kind == opMem {
			n = esz
		}
		if err := m.vsrc(in, &args[2], n, esz, &b); err != nil {
			return err
		}
		count := vl / esz
		if scalar {
			count = 1
		}
		get := func(v *vec, i int) float64 {
			if esz == 4 {
				return float64(f32(v.u32(i)))
			}
			return f64(v.u64(i))
		}
		if d.kind == opMask {
			var k uint64
			for i := 0; i < count; i++ {
				if m.maskBit(in, i) && fcmp(p, get(&a, i), get(&b, i)) {
					k |= 1 << i
				}
			}
			m.k[d.reg] = k
			return nil
		}
		if d.kind != opVec || in.k != 0 {
			return errBadOperands
		}
		r := a
		for i := 0; i < count; i++ {
			setElem(&r, esz, i, b2u64(fcmp(p, get(&a, i), get(&b, i)))&sizeMask(esz))
		}
		if scalar {
			return m.vwrite(in, d, &r, 16, 16)
		}
		return m.vwrite(in, d, &r, vl, esz)
	}
}

// movs is MOVSS/MOVSD and their VEX/EVEX forms: a load zeroes the rest of
// the low 128 bits (legacy SSE keeps bits above 128; VEX/EVEX zero them),
// a store writes the element, and VMOVSS xmm1, xmm2, xmm3 merges.
func movs(esz int) handler {
	return func(m *machine, in *inst) error {
		legacy := sseOnly(in)
		switch len(in.args) {
		case 2:
			d, s := &in.args[0], &in.args[1]
			switch {
			case d.kind == opVec && s.kind == opMem:
				if s.size != 0 && s.size != esz {
					return errBadOperands
				}
				b, err := m.load(in, s, esz)
				if err != nil {
					return err
				}
				var r vec
				copy(r[:esz], b)
				if in.k != 0 && !m.maskBit(in, 0) && !in.z {
					copy(r[:esz], m.v[d.reg][:esz])
				} else if in.k != 0 && !m.maskBit(in, 0) {
					clear(r[:esz])
				}
				if legacy {
					copy(m.v[d.reg][:16], r[:16])
					return nil
				}
				return m.vwrite(in, d, &r, 16, 16)
			case d.kind == opMem && s.kind == opVec:
				if d.size != 0 && d.size != esz {
					return errBadOperands
				}
				if in.k != 0 && !m.maskBit(in, 0) {
					return nil
				}
				b, err := m.storeTo(in, d, esz)
				if err != nil {
					return err
				}
				copy(b, m.v[s.reg][:esz])
				return nil
			case d.kind == opVec && s.kind == opVec && legacy:
				copy(m.v[d.reg][:esz], m.v[s.reg][:esz])
				return nil
			}
		case 3:
			if in.args[0].kind != opVec || in.args[1].kind != opVec || in.args[2].kind != opVec {
				return errBadOperands
			}
			var r vec
			copy(r[:16], m.v[in.args[1].reg][:16])
			copy(r[:esz], m.v[in.args[2].reg][:esz])
			if in.k != 0 && !m.maskBit(in, 0) {
				copy(r[:esz], m.v[in.args[0].reg][:esz])
				if in.z {
					clear(r[:esz])
				}
			}
			return m.vwrite(in, &in.args[0], &r, 16, 16)
		}
		return fmt.Errorf("%w: %s operands", ErrUnsupported, in.op)
	}
}
