package x86sim

import (
	"fmt"
	"strings"
)

// Vector instructions: operand access, masking, and the generic shapes
// (lane-wise two- and three-operand operations).

// vsrc reads operand o as vl bytes into t: a vector register's low vl
// bytes, vl bytes of memory, or, for an EVEX embedded broadcast ({1toN},
// objdump's "BCST"), one esz-byte element repeated.
func (m *machine) vsrc(in *inst, o *operand, vl, esz int, t *vec) error {
	switch o.kind {
	case opVec:
		if o.size < vl {
			return errBadOperands
		}
		copy(t[:vl], m.v[o.reg][:vl])
		return nil
	case opMem:
		if o.bcst {
			if o.size != esz {
				return fmt.Errorf("%w: broadcast of %d-byte elements, instruction's are %d", ErrUnsupported, o.size, esz)
			}
			b, err := m.load(in, o, esz)
			if err != nil {
				return err
			}
			for i := 0; i < vl; i += esz {
				copy(t[i:i+esz], b)
			}
			return nil
		}
		if o.size != 0 && o.size != vl {
			return fmt.Errorf("%w: %d-byte memory operand where %d bytes are read", ErrUnsupported, o.size, vl)
		}
		b, err := m.load(in, o, vl)
		if err != nil {
			return err
		}
		copy(t[:vl], b)
		return nil
	}
	return errBadOperands
}

// vreg reads a vector register operand (no memory).
func (m *machine) vreg(o *operand, vl int, t *vec) error {
	if o.kind != opVec || o.size < vl {
		return errBadOperands
	}
	copy(t[:vl], m.v[o.reg][:vl])
	return nil
}

// maskBit reports whether element i of in's destination is written.
func (m *machine) maskBit(in *inst, i int) bool {
	return in.k == 0 || m.k[in.k]>>uint(i)&1 == 1
}

// vwrite writes r's low vl bytes to destination d under in's opmask, by
// elements of esz bytes: a masked-off element keeps its value (merging) or
// becomes zero ({z}); in memory it is not written. A VEX or EVEX write to a
// register zeroes the register above vl.
func (m *machine) vwrite(in *inst, d *operand, r *vec, vl, esz int) error {
	switch d.kind {
	case opVec:
		dst := &m.v[d.reg]
		if in.k == 0 {
			copy(dst[:vl], r[:vl])
		} else {
			for i := 0; i < vl/esz; i++ {
				switch {
				case m.maskBit(in, i):
					copy(dst[i*esz:(i+1)*esz], r[i*esz:(i+1)*esz])
				case in.z:
					clear(dst[i*esz : (i+1)*esz])
				}
			}
		}
		clear(dst[vl:])
		return nil
	case opMem:
		if in.z {
			return fmt.Errorf("%w: zeroing-masking of a memory destination (#UD)", ErrUnsupported)
		}
		if d.size != 0 && d.size != vl {
			return errBadOperands
		}
		if in.k == 0 {
			b, err := m.storeTo(in, d, vl)
			if err != nil {
				return err
			}
			copy(b, r[:vl])
			return nil
		}
		// Masked stores touch only the selected elements (and never fault
		// on the others).
		a := m.addr(in, d)
		for i := 0; i < vl/esz; i++ {
			if !m.maskBit(in, i) {
				continue
			}
			b, err := m.mem(a+uint64(i*esz), esz, true)
			if err != nil {
				return err
			}
			copy(b, r[i*esz:(i+1)*esz])
		}
		return nil
	}
	return errBadOperands
}

// vexOp is a lane-wise instruction: dest, then src1 (a register, when
// there are two sources), then the last source (register, memory or
// broadcast), then an immediate if imm; f computes r from the sources over
// vl bytes, r holding dest's old value on entry.
func vexOp(esz, nsrc int, imm bool, f func(r, a, b *vec, vl int, imm uint8)) handler {
	nargs := 1 + nsrc
	if imm {
		nargs++
	}
	return func(m *machine, in *inst) error {
		if len(in.args) != nargs || in.args[0].kind != opVec || imm && in.args[nargs-1].kind != opImm {
			return errBadOperands
		}
		vl := in.args[0].size
		var r, a, b vec
		r = m.v[in.args[0].reg]
		last := &a
		if nsrc == 2 {
			if err := m.vreg(&in.args[1], vl, &a); err != nil {
				return err
			}
			last = &b
		}
		if err := m.vsrc(in, &in.args[nsrc], vl, esz, last); err != nil {
			return err
		}
		var i8 uint8
		if imm {
			i8 = uint8(in.args[nargs-1].imm)
		}
		f(&r, &a, &b, vl, i8)
		return m.vwrite(in, &in.args[0], &r, vl, esz)
	}
}

// vex3 is a three-operand instruction: dest, src1, src2.
func vex3(esz int, f func(r, a, b *vec, vl int)) handler {
	return vexOp(esz, 2, false, func(r, a, b *vec, vl int, _ uint8) { f(r, a, b, vl) })
}

// vex3i is vex3 with an immediate fourth operand.
func vex3i(esz int, f func(r, a, b *vec, vl int, imm uint8)) handler {
	return vexOp(esz, 2, true, f)
}

// vex2 is a two-operand instruction: dest, src.
func vex2(esz int, f func(r, a *vec, vl int)) handler {
	return vexOp(esz, 1, false, func(r, a, _ *vec, vl int, _ uint8) { f(r, a, vl) })
}

// vex2i is vex2 with an immediate third operand.
func vex2i(esz int, f func(r, a *vec, vl int, imm uint8)) handler {
	return vexOp(esz, 1, true, func(r, a, _ *vec, vl int, imm uint8) { f(r, a, vl, imm) })
}

// Lane-wise maps.
func map8(f func(a, b uint8) uint8) func(r, a, b *vec, vl int) {
	return func(r, a, b *vec, vl int) {
		for i := 0; i < vl; i++ {
			r[i] = f(a[i], b[i])
		}
	}
}

func map16(f func(a, b uint16) uint16) func(r, a, b *vec, vl int) {
	return func(r, a, b *vec, vl int) {
		for i := 0; i < vl/2; i++ {
			r.set16(i, f(a.u16(i), b.u16(i)))
		}
	}
}

func map32(f func(a, b uint32) uint32) func(r, a, b *vec, vl int) {
	return func(r, a, b *vec, vl int) {
		for i := 0; i < vl/4; i++ {
			r.set32(i, f(a.u32(i), b.u32(i)))
		}
	}
}

func map64(f func(a, b uint64) uint64) func(r, a, b *vec, vl int) {
	return func(r, a, b *vec, vl int) {
		for i := 0; i < vl/8; i++ {
			r.set64(i, f(a.u64(i), b.u64(i)))
		}
	}
}

func un8(f func(a uint8) uint8) func(r, a *vec, vl int) {
	return func(r, a *vec, vl int) {
		for i := 0; i < vl; i++ {
			r[i] = f(a[i])
		}
	}
}

func un16(f func(a uint16) uint16) func(r, a *vec, vl int) {
	return func(r, a *vec, vl int) {
		for i := 0; i < vl/2; i++ {
			r.set16(i, f(a.u16(i)))
		}
	}
}

func un32(f func(a uint32) uint32) func(r, a *vec, vl int) {
	return func(r, a *vec, vl int) {
		for i := 0; i < vl/4; i++ {
			r.set32(i, f(a.u32(i)))
		}
	}
}

func un64(f func(a uint64) uint64) func(r, a *vec, vl int) {
	return func(r, a *vec, vl int) {
		for i := 0; i < vl/8; i++ {
			r.set64(i, f(a.u64(i)))
		}
	}
}

// register adds h under each name.
func register(h handler, names ...string) {
	for _, n := range names {
		if _, dup := handlers[n]; dup {
			panic("x86sim: handler registered twice: " + n)
		}
		handlers[n] = h
	}
}

// moves registers a full-width move under name: load, store or register
// copy of the destination's width, aligned if name says so, masked by
// elements of esz bytes.
func moves(esz int, aligned bool, names ...string) {
	register(func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil {
			return err
		}
		vl := d.size
		if d.kind == opMem {
			vl = s.size
		}
		if s.kind != opVec && d.kind != opVec || vl < 16 {
			return errBadOperands
		}
		if s.kind == opMem && s.bcst || d.kind == opMem && s.kind != opVec {
			return errBadOperands
		}
		if aligned {
			if err := m.aligned(in, d, vl); err != nil {
				return err
			}
			if err := m.aligned(in, s, vl); err != nil {
				return err
			}
		}
		var r vec
		if in.k != 0 && s.kind == opMem {
			// A masked load reads only the selected elements, and does
			// not fault on the others.
			a := m.addr(in, s)
			for i := 0; i < vl/esz; i++ {
				if m.maskBit(in, i) {
					b, err := m.mem(a+uint64(i*esz), esz, false)
					if err != nil {
						return err
					}
					copy(r[i*esz:], b)
				}
			}
		} else if err := m.vsrc(in, s, vl, esz, &r); err != nil {
			return err
		}
		if in.op[0] != 'v' && d.kind == opVec {
			// legacy SSE: the register's bits above 128 are kept
			copy(m.v[d.reg][:16], r[:16])
			return nil
		}
		return m.vwrite(in, d, &r, vl, esz)
	}, names...)
}

// sseOnly reports whether in is a legacy SSE instruction (no VEX or EVEX).
func sseOnly(in *inst) bool { return !strings.HasPrefix(in.op, "v") }
