package x86sim

import "math/bits"

// Bit-manipulation instructions a kernel may use to build tail masks or
// count mask bits: POPCNT, LZCNT, TZCNT (SDM Vol. 2B), BMI1 ANDN, BMI2
// BZHI, SHLX, SHRX, SARX (Vol. 2A/2B), and MOVABS (objdump's name for MOV
// with a 64-bit immediate).
func init() {
	register(func(m *machine, in *inst) error { return handlers["mov"](m, in) }, "movabs")
	register(bitCount(func(v uint64, w int) uint64 { return uint64(bits.OnesCount64(v)) }, 'p'), "popcnt")
	register(bitCount(func(v uint64, w int) uint64 {
		return uint64(bits.LeadingZeros64(v) - (64 - w))
	}, 'l'), "lzcnt")
	register(bitCount(func(v uint64, w int) uint64 {
		if v == 0 {
			return uint64(w)
		}
		return uint64(bits.TrailingZeros64(v))
	}, 't'), "tzcnt")
	register(func(m *machine, in *inst) error { // ANDN dest, src1, src2: ^src1 & src2
		if len(in.args) != 3 || in.args[0].kind != opGPR || in.args[1].kind != opGPR || in.args[0].size < 4 {
			return errBadOperands
		}
		size := in.args[0].size
		b, err := m.readInt(in, &in.args[2], size)
		if err != nil {
			return err
		}
		r := ^m.readGPR(&in.args[1]) & b & sizeMask(size)
		m.setZSP(r, size)
		m.cf, m.of, m.undef = false, false, fPF
		m.writeGPR(&in.args[0], r)
		return nil
	}, "andn")
	register(func(m *machine, in *inst) error { // BZHI dest, src, index: src with bits >= index[7:0] cleared
		if len(in.args) != 3 || in.args[0].kind != opGPR || in.args[2].kind != opGPR || in.args[0].size < 4 {
			return errBadOperands
		}
		size := in.args[0].size
		w := uint64(8 * size)
		v, err := m.readInt(in, &in.args[1], size)
		if err != nil {
			return err
		}
		n := m.readGPR(&in.args[2]) & 0xff
		if n < w {
			v &= 1<<n - 1
		}
		m.setZSP(v, size)
		m.cf, m.of, m.undef = n > w-1, false, fPF
		m.writeGPR(&in.args[0], v)
		return nil
	}, "bzhi")
	for name, kind := range map[string]byte{"shlx": 'l', "shrx": 'r', "sarx": 'a'} {
		k := kind
		register(func(m *machine, in *inst) error { // flags unaffected
			if len(in.args) != 3 || in.args[0].kind != opGPR || in.args[2].kind != opGPR || in.args[0].size < 4 {
				return errBadOperands
			}
			size := in.args[0].size
			v, err := m.readInt(in, &in.args[1], size)
			if err != nil {
				return err
			}
			n := m.readGPR(&in.args[2]) & uint64(8*size-1)
			m.writeGPR(&in.args[0], shiftElem(v, n, size, k))
			return nil
		}, name)
	}
}

// bitCount is POPCNT ('p': ZF if the source is zero, the other flags
// cleared), LZCNT and TZCNT ('l', 't': CF if the source is zero, ZF if the
// result is; OF, SF, PF undefined).
func bitCount(f func(v uint64, w int) uint64, kind byte) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil || d.kind != opGPR || d.size < 2 {
			return errBadOperands
		}
		v, err := m.readInt(in, s, d.size)
		if err != nil {
			return err
		}
		r := f(v, 8*d.size)
		if kind == 'p' {
			m.zf, m.cf, m.of, m.sf, m.pf, m.undef = v == 0, false, false, false, false, 0
		} else {
			m.cf, m.zf, m.undef = v == 0, r == 0, fOF|fSF|fPF
		}
		m.writeGPR(d, r)
		return nil
	}
}
