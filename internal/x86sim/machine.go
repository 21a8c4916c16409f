package x86sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"unsafe"
)

// vec is one vector register's 512 bits, little-endian.
type vec [64]byte

func (v *vec) u8(i int) uint8        { return v[i] }
func (v *vec) u16(i int) uint16      { return binary.LittleEndian.Uint16(v[2*i:]) }
func (v *vec) u32(i int) uint32      { return binary.LittleEndian.Uint32(v[4*i:]) }
func (v *vec) u64(i int) uint64      { return binary.LittleEndian.Uint64(v[8*i:]) }
func (v *vec) set8(i int, x uint8)   { v[i] = x }
func (v *vec) set16(i int, x uint16) { binary.LittleEndian.PutUint16(v[2*i:], x) }
func (v *vec) set32(i int, x uint32) { binary.LittleEndian.PutUint32(v[4*i:], x) }
func (v *vec) set64(i int, x uint64) { binary.LittleEndian.PutUint64(v[8*i:], x) }

// region is memory the function may reach: a pointer argument (unbounded
// above) or the simulated stack.
type region struct {
	p    unsafe.Pointer
	addr uint64
	n    uint64 // 0: unbounded
}

const (
	stackSize  = 1 << 16
	returnAddr = 0x5eed_0000_dead_0000 // the caller's return address on the simulated stack
)

// machine is the state of one call.
type machine struct {
	f  *Func
	g  [16]uint64
	v  [32]vec
	k  [8]uint64
	cf bool
	zf bool
	sf bool
	of bool
	pf bool

	undef int // flags the last flag-setting instruction left undefined (fCF...)

	pc   int // index of the instruction executing
	jump int // index of the next instruction, set by branches; -1: fall through
	done bool

	stack   []byte
	regions []region // sorted by addr
	args    []Arg
}

func newMachine(f *Func, args []Arg) *machine {
	m := &machine{f: f, args: args}
	m.stack = make([]byte, stackSize+64)
	sp := unsafe.Pointer(&m.stack[0])
	m.regions = append(m.regions, region{p: sp, addr: uint64(uintptr(sp)), n: uint64(len(m.stack))})
	for _, a := range args {
		if a.p != nil {
			m.regions = append(m.regions, region{p: a.p, addr: a.v})
		}
	}
	sort.SliceStable(m.regions, func(i, j int) bool { return m.regions[i].addr < m.regions[j].addr })
	// The stack: the arguments from a 64-byte aligned address up, the
	// return address below them, where RSP points at entry (so RSP is 8
	// modulo 16, as after a CALL from a 16-byte aligned frame).
	args0 := (uint64(uintptr(sp)) + stackSize - 8*uint64(len(args)) - 64) &^ 63
	m.g[4] = args0 - 8
	m.store64(m.g[4], returnAddr)
	for i, a := range args {
		m.store64(args0+8*uint64(i), a.v)
	}
	return m
}

// run executes from the first instruction until the function returns.
func (m *machine) run() (err error) {
	defer runtime.KeepAlive(m.args)
	// A load or store the function makes outside mapped memory (past a
	// guard page, say) is an error naming the instruction, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(interface{ Addr() uintptr })
			if !ok || m.pc < 0 || m.pc >= len(m.f.insts) {
				panic(r)
			}
			err = m.fail(&m.f.insts[m.pc], fmt.Errorf("memory fault at %#x", f.Addr()))
		}
	}()
	limit := m.f.StepLimit
	if limit == 0 {
		limit = DefaultStepLimit
	}
	insts := m.f.insts
	for steps := 0; !m.done; steps++ {
		if m.pc < 0 || m.pc >= len(insts) {
			return fmt.Errorf("x86sim: %s: ran off the end of the function", m.f.name)
		}
		in := &insts[m.pc]
		if steps >= limit {
			return m.fail(in, fmt.Errorf("step limit %d reached", limit))
		}
		if in.err != nil {
			return m.fail(in, in.err)
		}
		m.jump = -1
		if err := in.exec(m, in); err != nil {
			return m.fail(in, err)
		}
		if m.jump >= 0 {
			m.pc = m.jump
		} else {
			m.pc++
		}
	}
	return nil
}

func (m *machine) fail(in *inst, err error) error {
	return &Error{Func: m.f.name, Addr: in.addr, Text: in.text, Err: err}
}

// Error is the error of a call, at one instruction.
type Error struct {
	Func string
	Addr uint64
	Text string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("x86sim: %s at %#x %q: %v", e.Func, e.Addr, e.Text, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

var errBadOperands = fmt.Errorf("%w: operand form", ErrUnsupported)

// branchTo sets the next instruction to the one at address a.
func (m *machine) branchTo(a uint64) error {
	i, ok := m.f.index[a]
	if !ok {
		return fmt.Errorf("branch to %#x, outside the function", a)
	}
	m.jump = i
	return nil
}

// addr returns the effective address of memory operand o of in.
func (m *machine) addr(in *inst, o *operand) uint64 {
	if o.rip {
		return uint64(int64(in.next) + o.disp)
	}
	a := uint64(o.disp)
	if o.base >= 0 {
		a += m.g[o.base]
	}
	if o.index >= 0 {
		a += m.g[o.index] * uint64(o.scale)
	}
	return a
}

// mem returns the n bytes of memory at a, for reading or writing: bytes of
// a read-only section of the executable, or of the simulated stack, or at
// an offset from the nearest pointer argument at or below a.
func (m *machine) mem(a uint64, n int, write bool) ([]byte, error) {
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].addr > a }) - 1
	if s := m.f.img.section(a); s != nil && (i < 0 || !s.contains(m.regions[i].addr)) {
		if write {
			return nil, fmt.Errorf("store to %#x in the executable's section %s", a, s.name)
		}
		return s.read(a, n)
	}
	if i < 0 {
		return nil, fmt.Errorf("address %#x below every pointer argument", a)
	}
	r := m.regions[i]
	off := a - r.addr
	if r.n != 0 && (off > r.n || r.n-off < uint64(n)) {
		return nil, fmt.Errorf("address %#x (%d bytes) outside the simulated stack", a, n)
	}
	return unsafe.Slice((*byte)(unsafe.Add(r.p, off)), n), nil
}

// load returns the n bytes of memory operand o.
func (m *machine) load(in *inst, o *operand, n int) ([]byte, error) {
	a := m.addr(in, o)
	if o.rip {
		s := m.f.img.section(a)
		if s == nil {
			return nil, fmt.Errorf("RIP-relative address %#x not in a section of the executable", a)
		}
		return s.read(a, n)
	}
	return m.mem(a, n, false)
}

// storeTo returns the n bytes of memory operand o to write.
func (m *machine) storeTo(in *inst, o *operand, n int) ([]byte, error) {
	if o.rip {
		return nil, fmt.Errorf("%w: store to a RIP-relative address", ErrUnsupported)
	}
	return m.mem(m.addr(in, o), n, true)
}

func (m *machine) store64(a, v uint64) {
	b, err := m.mem(a, 8, true)
	if err != nil {
		panic(err)
	}
	binary.LittleEndian.PutUint64(b, v)
}

// aligned checks the alignment of an aligned move's memory operand.
func (m *machine) aligned(in *inst, o *operand, n int) error {
	if o.kind == opMem {
		if a := m.addr(in, o); a%uint64(n) != 0 {
			return fmt.Errorf("general-protection fault: %d-byte aligned access at %#x", n, a)
		}
	}
	return nil
}

var errNotReg = errors.New("operand is not a register")

// readGPR returns the value of a GPR operand, zero-extended.
func (m *machine) readGPR(o *operand) uint64 {
	v := m.g[o.reg]
	if o.high {
		return (v >> 8) & 0xff
	}
	switch o.size {
	case 1:
		return v & 0xff
	case 2:
		return v & 0xffff
	case 4:
		return v & 0xffffffff
	}
	return v
}

// writeGPR writes a GPR operand: 32-bit writes zero the upper half, 8- and
// 16-bit writes keep the other bits.
func (m *machine) writeGPR(o *operand, v uint64) {
	r := &m.g[o.reg]
	switch {
	case o.high:
		*r = *r&^0xff00 | (v&0xff)<<8
	case o.size == 1:
		*r = *r&^0xff | v&0xff
	case o.size == 2:
		*r = *r&^0xffff | v&0xffff
	case o.size == 4:
		*r = v & 0xffffffff
	default:
		*r = v
	}
}

// readInt reads a GPR, memory or immediate operand of size bytes,
// zero-extended (an immediate is sign-extended to size bytes).
func (m *machine) readInt(in *inst, o *operand, size int) (uint64, error) {
	switch o.kind {
	case opGPR:
		return m.readGPR(o), nil
	case opImm:
		return uint64(o.imm) & sizeMask(size), nil
	case opMem:
		b, err := m.load(in, o, size)
		if err != nil {
			return 0, err
		}
		return leUint(b), nil
	}
	return 0, errBadOperands
}

// writeInt writes a GPR or memory operand of size bytes.
func (m *machine) writeInt(in *inst, o *operand, size int, v uint64) error {
	switch o.kind {
	case opGPR:
		m.writeGPR(o, v)
		return nil
	case opMem:
		b, err := m.storeTo(in, o, size)
		if err != nil {
			return err
		}
		putLE(b, v)
		return nil
	}
	return errBadOperands
}

func sizeMask(size int) uint64 {
	if size >= 8 {
		return ^uint64(0)
	}
	return 1<<(8*size) - 1
}

func leUint(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func putLE(b []byte, v uint64) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}
