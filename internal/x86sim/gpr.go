package x86sim

import (
	"fmt"
	"math/bits"
)

// handlers maps a mnemonic, as objdump prints it, to its handler.
var handlers = map[string]handler{}

// Flags that an instruction leaves undefined (SDM: "undefined") are
// tracked, and a condition that reads one is an error rather than a guess.
const (
	fCF = 1 << iota
	fZF
	fSF
	fOF
	fPF
)

// undef is kept per machine in m.undef; see setUndef.

func init() {
	for k, v := range map[string]handler{
		"mov": func(m *machine, in *inst) error {
			d, s, err := two(in)
			if err != nil {
				return err
			}
			size := opSize(d, s)
			if size == 0 {
				return errBadOperands
			}
			v, err := m.readInt(in, s, size)
			if err != nil {
				return err
			}
			if s.kind == opImm && size == 8 {
				v = uint64(s.imm)
			}
			return m.writeInt(in, d, size, v)
		},
		"movzx":  movExt(false),
		"movsx":  movExt(true),
		"movsxd": movExt(true),
		"lea": func(m *machine, in *inst) error {
			d, s, err := two(in)
			if err != nil || d.kind != opGPR || s.kind != opMem {
				return errBadOperands
			}
			m.writeGPR(d, m.addr(in, s))
			return nil
		},
		"add":  alu(func(a, b uint64) uint64 { return a + b }, aluAdd),
		"sub":  alu(func(a, b uint64) uint64 { return a - b }, aluSub),
		"cmp":  alu(func(a, b uint64) uint64 { return a - b }, aluSub|aluNoWrite),
		"and":  alu(func(a, b uint64) uint64 { return a & b }, aluLogic),
		"or":   alu(func(a, b uint64) uint64 { return a | b }, aluLogic),
		"xor":  alu(func(a, b uint64) uint64 { return a ^ b }, aluLogic),
		"test": alu(func(a, b uint64) uint64 { return a & b }, aluLogic|aluNoWrite),
		"inc":  incDec(1),
		"dec":  incDec(-1),
		"neg": unaryInt(func(m *machine, a uint64, size int) uint64 {
			r := (-a) & sizeMask(size)
			m.setSub(0, a, r, size)
			return r
		}),
		"not":  unaryInt(func(m *machine, a uint64, size int) uint64 { return ^a & sizeMask(size) }),
		"shl":  shift('l'),
		"sal":  shift('l'),
		"shr":  shift('r'),
		"sar":  shift('a'),
		"imul": imul,
		"push": func(m *machine, in *inst) error {
			if len(in.args) != 1 || in.args[0].kind != opGPR || in.args[0].size != 8 {
				return errBadOperands
			}
			m.g[4] -= 8
			b, err := m.mem(m.g[4], 8, true)
			if err != nil {
				return err
			}
			putLE(b, m.g[in.args[0].reg])
			return nil
		},
		"pop": func(m *machine, in *inst) error {
			if len(in.args) != 1 || in.args[0].kind != opGPR || in.args[0].size != 8 {
				return errBadOperands
			}
			b, err := m.mem(m.g[4], 8, false)
			if err != nil {
				return err
			}
			v := leUint(b)
			m.g[4] += 8
			m.g[in.args[0].reg] = v
			return nil
		},
		"ret": func(m *machine, in *inst) error {
			if len(in.args) != 0 {
				return errBadOperands
			}
			b, err := m.mem(m.g[4], 8, false)
			if err != nil {
				return err
			}
			if v := leUint(b); v != returnAddr {
				return fmt.Errorf("RET to %#x, not to the caller (stack unbalanced)", v)
			}
			m.g[4] += 8
			m.done = true
			return nil
		},
		"jmp": func(m *machine, in *inst) error {
			if len(in.args) != 1 || in.args[0].kind != opRel {
				return errBadOperands
			}
			return m.branchTo(in.args[0].abs)
		},
		"nop":         func(m *machine, in *inst) error { return nil },
		"prefetcht0":  prefetch,
		"prefetcht1":  prefetch,
		"prefetcht2":  prefetch,
		"prefetchnta": prefetch,
	} {
		handlers[k] = v
	}
	for c := range conds {
		cc := c
		handlers["j"+cc] = func(m *machine, in *inst) error {
			if len(in.args) != 1 || in.args[0].kind != opRel {
				return errBadOperands
			}
			t, err := m.cond(cc)
			if err != nil || !t {
				return err
			}
			return m.branchTo(in.args[0].abs)
		}
		handlers["set"+cc] = func(m *machine, in *inst) error {
			if len(in.args) != 1 || opSize(&in.args[0], nil) != 1 {
				return errBadOperands
			}
			t, err := m.cond(cc)
			if err != nil {
				return err
			}
			var v uint64
			if t {
				v = 1
			}
			return m.writeInt(in, &in.args[0], 1, v)
		}
		handlers["cmov"+cc] = func(m *machine, in *inst) error {
			d, s, err := two(in)
			if err != nil || d.kind != opGPR || d.size == 1 {
				return errBadOperands
			}
			v, err := m.readInt(in, s, d.size)
			if err != nil {
				return err
			}
			t, err := m.cond(cc)
			if err != nil {
				return err
			}
			if t {
				m.writeGPR(d, v)
			} else if d.size == 4 {
				m.writeGPR(d, m.readGPR(d)) // a 32-bit CMOV zeroes the upper half either way
			}
			return nil
		}
	}
}

// conds are the condition codes (SDM Vol. 1 B.1), by each name objdump may
// print, with the flags each reads.
var conds = map[string]int{
	"o": fOF, "no": fOF,
	"b": fCF, "c": fCF, "nae": fCF, "ae": fCF, "nb": fCF, "nc": fCF,
	"e": fZF, "z": fZF, "ne": fZF, "nz": fZF,
	"be": fCF | fZF, "na": fCF | fZF, "a": fCF | fZF, "nbe": fCF | fZF,
	"s": fSF, "ns": fSF,
	"p": fPF, "pe": fPF, "np": fPF, "po": fPF,
	"l": fSF | fOF, "nge": fSF | fOF, "ge": fSF | fOF, "nl": fSF | fOF,
	"le": fZF | fSF | fOF, "ng": fZF | fSF | fOF, "g": fZF | fSF | fOF, "nle": fZF | fSF | fOF,
}

// cond evaluates condition c; reading a flag the last instruction that set
// flags left undefined is an error.
func (m *machine) cond(c string) (bool, error) {
	if u := m.undef & conds[c]; u != 0 {
		return false, fmt.Errorf("condition %q reads a flag the previous flag-setting instruction left undefined", c)
	}
	switch c {
	case "o":
		return m.of, nil
	case "no":
		return !m.of, nil
	case "b", "c", "nae":
		return m.cf, nil
	case "ae", "nb", "nc":
		return !m.cf, nil
	case "e", "z":
		return m.zf, nil
	case "ne", "nz":
		return !m.zf, nil
	case "be", "na":
		return m.cf || m.zf, nil
	case "a", "nbe":
		return !m.cf && !m.zf, nil
	case "s":
		return m.sf, nil
	case "ns":
		return !m.sf, nil
	case "p", "pe":
		return m.pf, nil
	case "np", "po":
		return !m.pf, nil
	case "l", "nge":
		return m.sf != m.of, nil
	case "ge", "nl":
		return m.sf == m.of, nil
	case "le", "ng":
		return m.zf || m.sf != m.of, nil
	case "g", "nle":
		return !m.zf && m.sf == m.of, nil
	}
	return false, fmt.Errorf("%w: condition %q", ErrUnsupported, c)
}

func prefetch(m *machine, in *inst) error {
	if len(in.args) != 1 || in.args[0].kind != opMem {
		return errBadOperands
	}
	return nil // a hint: no architectural effect, and it never faults
}

func two(in *inst) (d, s *operand, err error) {
	if len(in.args) != 2 {
		return nil, nil, errBadOperands
	}
	return &in.args[0], &in.args[1], nil
}

// opSize is the operand size of an integer instruction: the register's, or
// the memory operand's.
func opSize(d, s *operand) int {
	if d.kind == opGPR || (d.kind == opMem && d.size != 0) {
		return d.size
	}
	if s != nil && (s.kind == opGPR || s.kind == opMem) {
		return s.size
	}
	return 0
}

func (m *machine) setZSP(r uint64, size int) {
	r &= sizeMask(size)
	m.zf = r == 0
	m.sf = r>>(8*size-1)&1 == 1
	m.pf = bits.OnesCount8(uint8(r))%2 == 0
}

func (m *machine) setAdd(a, b, r uint64, size int) {
	sh := uint(8*size - 1)
	mask := sizeMask(size)
	m.cf = r&mask < a&mask
	m.of = (a>>sh&1 == b>>sh&1) && (r>>sh&1 != a>>sh&1)
	m.setZSP(r, size)
	m.undef = 0
}

func (m *machine) setSub(a, b, r uint64, size int) {
	sh := uint(8*size - 1)
	mask := sizeMask(size)
	m.cf = a&mask < b&mask
	m.of = (a>>sh&1 != b>>sh&1) && (r>>sh&1 != a>>sh&1)
	m.setZSP(r, size)
	m.undef = 0
}

const (
	aluAdd = 1 << iota
	aluSub
	aluLogic
	aluNoWrite
)

func alu(f func(a, b uint64) uint64, kind int) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil {
			return err
		}
		size := opSize(d, s)
		if size == 0 || d.kind == opImm {
			return errBadOperands
		}
		a, err := m.readInt(in, d, size)
		if err != nil {
			return err
		}
		b, err := m.readInt(in, s, size)
		if err != nil {
			return err
		}
		r := f(a, b) & sizeMask(size)
		switch {
		case kind&aluAdd != 0:
			m.setAdd(a, b, r, size)
		case kind&aluSub != 0:
			m.setSub(a, b, r, size)
		default:
			m.cf, m.of = false, false
			m.setZSP(r, size)
			m.undef = 0 // AF is undefined, and not modeled
		}
		if kind&aluNoWrite != 0 {
			return nil
		}
		return m.writeInt(in, d, size, r)
	}
}

// unaryInt is a one-operand instruction (NEG, NOT, INC, DEC): f computes
// the result (and the flags).
func unaryInt(f func(m *machine, a uint64, size int) uint64) handler {
	return func(m *machine, in *inst) error {
		if len(in.args) != 1 {
			return errBadOperands
		}
		d := &in.args[0]
		size := opSize(d, nil)
		if size == 0 {
			return errBadOperands
		}
		a, err := m.readInt(in, d, size)
		if err != nil {
			return err
		}
		return m.writeInt(in, d, size, f(m, a, size))
	}
}

// incDec is INC or DEC: the flags of an ADD or SUB of 1, CF kept.
func incDec(delta int64) handler {
	return unaryInt(func(m *machine, a uint64, size int) uint64 {
		cf, u := m.cf, m.undef&fCF
		r := (a + uint64(delta)) & sizeMask(size)
		if delta > 0 {
			m.setAdd(a, 1, r, size)
		} else {
			m.setSub(a, 1, r, size)
		}
		m.cf, m.undef = cf, u
		return r
	})
}

func movExt(signed bool) handler {
	return func(m *machine, in *inst) error {
		d, s, err := two(in)
		if err != nil || d.kind != opGPR || s.size == 0 || s.size >= d.size {
			return errBadOperands
		}
		v, err := m.readInt(in, s, s.size)
		if err != nil {
			return err
		}
		if signed {
			sh := uint(64 - 8*s.size)
			v = uint64(int64(v<<sh) >> sh)
		}
		m.writeGPR(d, v&sizeMask(d.size))
		return nil
	}
}

// shift is SHL, SHR and SAR (SDM Vol. 2B "SAL/SAR/SHL/SHR").
func shift(kind byte) handler {
	return func(m *machine, in *inst) error {
		var d, c *operand
		switch len(in.args) {
		case 1:
			d = &in.args[0]
		case 2:
			d, c = &in.args[0], &in.args[1]
		default:
			return errBadOperands
		}
		size := opSize(d, nil)
		if size == 0 {
			return errBadOperands
		}
		n := uint64(1)
		if c != nil {
			switch {
			case c.kind == opImm:
				n = uint64(c.imm)
			case c.kind == opGPR && c.reg == 1 && c.size == 1 && !c.high:
				n = m.g[1] & 0xff
			default:
				return errBadOperands
			}
		}
		if size == 8 {
			n &= 63
		} else {
			n &= 31
		}
		a, err := m.readInt(in, d, size)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // flags unchanged
		}
		w := uint64(8 * size)
		var r uint64
		var cf bool
		switch kind {
		case 'l':
			r = a << n
			cf = n <= w && (a>>(w-n))&1 == 1
		case 'r':
			r = a >> n
			cf = (a>>(n-1))&1 == 1
		default:
			sh := 64 - w
			sa := int64(a<<sh) >> sh
			r = uint64(sa >> n)
			cf = (sa>>(n-1))&1 == 1
		}
		r &= sizeMask(size)
		m.setZSP(r, size)
		m.cf = cf
		m.undef = 0
		if n == 1 {
			switch kind {
			case 'l':
				m.of = (r>>(w-1))&1 == 1 != cf
			case 'r':
				m.of = (a>>(w-1))&1 == 1
			default:
				m.of = false
			}
		} else {
			m.undef = fOF
		}
		if n > w {
			m.undef |= fCF
		}
		return m.writeInt(in, d, size, r)
	}
}

// imul is the two- and three-operand IMUL: CF and OF say whether the
// signed product was truncated; SF, ZF and PF are undefined.
func imul(m *machine, in *inst) error {
	if len(in.args) < 2 || len(in.args) > 3 || in.args[0].kind != opGPR || in.args[0].size < 2 {
		return errBadOperands
	}
	d := &in.args[0]
	size := d.size
	a, b := &in.args[0], &in.args[1]
	if len(in.args) == 3 {
		a, b = &in.args[1], &in.args[2]
		if b.kind != opImm {
			return errBadOperands
		}
	}
	x, err := m.readInt(in, a, size)
	if err != nil {
		return err
	}
	y, err := m.readInt(in, b, size)
	if err != nil {
		return err
	}
	sh := uint(64 - 8*size)
	sx, sy := int64(x<<sh)>>sh, int64(y<<sh)>>sh
	hi, lo := bits.Mul64(uint64(sx), uint64(sy))
	// the signed 128-bit product: correct the unsigned high word
	if sx < 0 {
		hi -= uint64(sy)
	}
	if sy < 0 {
		hi -= uint64(sx)
	}
	r := lo & sizeMask(size)
	sr := int64(r<<sh) >> sh
	var ovf bool
	if size == 8 {
		ovf = !(hi == 0 && int64(lo) >= 0) && !(hi == ^uint64(0) && int64(lo) < 0)
	} else {
		ovf = int64(lo) != sr
	}
	m.cf, m.of = ovf, ovf
	m.undef = fZF | fSF | fPF
	m.writeGPR(d, r)
	return nil
}
