package emu

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
)

// maxStatements bounds what a core runs without waiting once: a program
// that never waits would spin for ever.
const maxStatements = 1 << 24

// frame is one level of a core's program being run.
type frame struct {
	body  []design.Stmt
	pc    int
	loop  *design.Loop // nil: the program's body or an If's
	iter  uint32
	count uint32
}

// objState is a core's place in one object stream: how many buffers it has
// acquired and released.
type objState struct{ acquired, released int }

// coreState is a core running its program.
type coreState struct {
	a      *Array
	ts     *tileState
	prog   *design.Program
	regs   []uint32
	stack  []frame
	objs   map[*design.Object]*objState
	home   []frame // where the program waits between dispatches
	halted bool
}

func newCore(a *Array, ts *tileState) *coreState {
	c := &coreState{a: a, ts: ts, prog: ts.t.Program, regs: make([]uint32, len(ts.t.Program.Regs)), objs: map[*design.Object]*objState{}}
	for _, o := range ts.t.Objects {
		c.objs[o] = &objState{}
	}
	c.stack = []frame{{body: c.prog.Body}}
	return c
}

func (c *coreState) String() string { return c.ts.name }

func (c *coreState) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %v: "+format, append([]any{ErrDevice, c}, args...)...)
}

// step runs the program until it waits or ends, and reports whether it
// ran anything.
func (c *coreState) step() (bool, error) {
	ran := false
	for n := 0; ; n++ {
		if c.halted {
			return ran, nil
		}
		if n == maxStatements {
			return ran, c.fail("ran %d statements without waiting for an object", n)
		}
		f := &c.stack[len(c.stack)-1]
		if f.pc == len(f.body) {
			if f.loop != nil {
				f.iter++
				if f.loop.Count == nil || f.iter < f.count {
					f.pc = 0
					if f.loop.Var >= 0 {
						c.regs[f.loop.Var] = f.iter
					}
					continue
				}
			}
			c.stack = c.stack[:len(c.stack)-1]
			if len(c.stack) == 0 {
				c.halted = true
				return true, nil
			}
			c.stack[len(c.stack)-1].pc++
			continue
		}
		s := f.body[f.pc]
		switch s := s.(type) {
		case *design.Loop:
			var cnt uint32
			if s.Count != nil {
				v, err := c.eval(s.Count)
				if err != nil {
					return ran, err
				}
				cnt = v
			}
			if s.Count != nil && cnt == 0 {
				f.pc++
				break
			}
			if s.Var >= 0 {
				c.regs[s.Var] = 0
			}
			c.stack = append(c.stack, frame{body: s.Body, loop: s, count: cnt})
		case *design.If:
			v, err := c.eval(s.Cond)
			if err != nil {
				return ran, err
			}
			if v == 0 {
				f.pc++
				break
			}
			c.stack = append(c.stack, frame{body: s.Then})
		case *design.Acquire:
			ok, err := c.acquire(s.Obj)
			if err != nil {
				return ran, err
			}
			if !ok {
				return ran, nil
			}
			f.pc++
		case *design.Release:
			if err := c.release(s.Obj); err != nil {
				return ran, err
			}
			f.pc++
		case *design.Set:
			v, err := c.eval(s.X)
			if err != nil {
				return ran, err
			}
			c.regs[s.Reg] = v
			f.pc++
		case *design.Expect:
			v, err := c.eval(s.X)
			if err != nil {
				return ran, err
			}
			if v != uint32(s.Want) {
				return ran, c.fail("%s is %d (%#x), the design's is %d (%#x)", s.Msg, v, v, s.Want, s.Want)
			}
			f.pc++
		case *design.Call:
			if err := c.call(s); err != nil {
				return ran, err
			}
			f.pc++
		default:
			return ran, c.fail("statement of type %T", s)
		}
		ran = true
	}
}

// lockOf is the lock the core takes to acquire a buffer of o, and the one
// it releases.
func lockOf(o *design.Object) (take, give *design.Lock) {
	if o.Input {
		return o.Full, o.Free
	}
	return o.Free, o.Full
}

func (c *coreState) acquire(o *design.Object) (bool, error) {
	os := c.objs[o]
	if os.acquired-os.released == len(o.Bufs) {
		return false, c.fail("acquires a %d-th buffer of %s, which has %d", os.acquired-os.released+1, o.Name, len(o.Bufs))
	}
	take, _ := lockOf(o)
	if !c.a.acquire(c.ts, take, 1) {
		return false, nil
	}
	b := o.Bufs[os.acquired%len(o.Bufs)]
	os.acquired++
	return true, c.a.checkNoDMA(c.ts, b, fmt.Sprintf("%v acquires %s", c, b.Name))
}

func (c *coreState) release(o *design.Object) error {
	os := c.objs[o]
	if os.released == os.acquired {
		return c.fail("releases a buffer of %s, which it does not hold", o.Name)
	}
	_, give := lockOf(o)
	if err := c.a.release(c.ts, give, 1, c.String()); err != nil {
		return err
	}
	os.released++
	return nil
}

// current is the buffer of o the core acquired last, which it must hold.
func (c *coreState) current(o *design.Object, what string) (*design.Buffer, error) {
	os := c.objs[o]
	if os.acquired == os.released {
		return nil, c.fail("%s a buffer of %s, which it does not hold", what, o.Name)
	}
	return o.Bufs[(os.acquired-1)%len(o.Bufs)], nil
}

func (c *coreState) eval(x design.Expr) (uint32, error) {
	switch x := x.(type) {
	case design.Const:
		return uint32(x), nil
	case design.Reg:
		return c.regs[x], nil
	case *design.Load:
		b, err := c.current(x.Obj, "loads from")
		if err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint32(c.ts.mem[b.Addr+4*x.Word:]), nil
	case *design.Bin:
		a, err := c.eval(x.A)
		if err != nil {
			return 0, err
		}
		b, err := c.eval(x.B)
		if err != nil {
			return 0, err
		}
		switch x.Op {
		case design.Add:
			return a + b, nil
		case design.Sub:
			return a - b, nil
		case design.Lt:
			return b2u(a < b), nil
		case design.Eq:
			return b2u(a == b), nil
		}
		return 0, c.fail("operator %v", x.Op)
	}
	return 0, c.fail("expression of type %T", x)
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// call runs a kernel function on the buffers the core holds.
func (c *coreState) call(s *design.Call) error {
	args := make([]gemv.Value, len(s.Args))
	for i, a := range s.Args {
		var b *design.Buffer
		switch {
		case a.Obj != nil:
			var err error
			if b, err = c.current(a.Obj, "passes "+s.Fn.Name); err != nil {
				return err
			}
		case a.Buf != nil:
			b = a.Buf
		default:
			v, err := c.eval(a.X)
			if err != nil {
				return err
			}
			args[i].Int = int32(v)
			continue
		}
		if err := c.a.checkNoDMA(c.ts, b, fmt.Sprintf("%v calls %s on %s", c, s.Fn.Name, b.Name)); err != nil {
			return err
		}
		args[i].Buf = c.ts.mem[b.Addr : b.Addr+b.Size : b.Addr+b.Size]
	}
	c.a.st.Calls++
	if err := c.a.kernel.Call(c.ts.t.Col, c.ts.t.Row, s.Fn.Name, args); err != nil {
		return c.fail("%s: %v", s.Fn.Name, err)
	}
	return nil
}

// markHome records where the program waits after power-up: the start of
// its dispatch loop.
func (c *coreState) markHome() error {
	if c.halted {
		return c.fail("its program ended at power-up; a core program loops over dispatches for ever")
	}
	c.home = append([]frame(nil), c.stack...)
	return nil
}

// atHome reports whether the program waits where it waited at power-up.
func (c *coreState) atHome() bool {
	if len(c.stack) != len(c.home) {
		return false
	}
	for i, f := range c.stack {
		h := c.home[i]
		if f.pc != h.pc || len(f.body) != len(h.body) || (len(f.body) > 0 && &f.body[0] != &h.body[0]) {
			return false
		}
	}
	return true
}

// where describes the statement the program is at and its loop registers.
func (c *coreState) where() string {
	if c.halted {
		return "its program has ended"
	}
	f := c.stack[len(c.stack)-1]
	what := "the end of a block"
	if f.pc < len(f.body) {
		switch s := f.body[f.pc].(type) {
		case *design.Acquire:
			take, _ := lockOf(s.Obj)
			what = fmt.Sprintf("acquire of %s (%s is %d)", s.Obj.Name, c.ts.lockName(take.ID), c.ts.locks[take.ID])
		case *design.Call:
			what = "call of " + s.Fn.Name
		default:
			what = fmt.Sprintf("a %T", s)
		}
	}
	var regs []string
	for i, r := range c.regs {
		regs = append(regs, fmt.Sprintf("%s=%d", c.prog.Regs[i], r))
	}
	return fmt.Sprintf("at the %s [%s]", what, strings.Join(regs, " "))
}

// waiting says what the core waits for, "" if it waits between dispatches.
func (c *coreState) waiting() string {
	if c.halted {
		return ""
	}
	home := ""
	if c.atHome() {
		home = " (between dispatches)"
	}
	return fmt.Sprintf("%v: %s%s", c, c.where(), home)
}

// awayFromHome says where a core that is not between dispatches is.
func (c *coreState) awayFromHome() string {
	if c.atHome() {
		return ""
	}
	return fmt.Sprintf("%v is inside its dispatch: %s", c, c.where())
}

// checkNoDMA fails if a DMA channel of ts is moving buffer b.
func (a *Array) checkNoDMA(ts *tileState, b *design.Buffer, what string) error {
	for _, ch := range a.chans {
		if ch.tile == ts && !ch.shim && ch.active && ch.curBD().Buf == b {
			return fmt.Errorf("%w: %s while %v BD %d is moving it", ErrDevice, what, ch, ch.curBD().ID)
		}
	}
	return nil
}

// checkNotHeld fails if b is a buffer the core of ts holds.
func (a *Array) checkNotHeld(ts *tileState, b *design.Buffer, who string) error {
	for _, c := range a.cores {
		if c.ts != ts {
			continue
		}
		for o, os := range c.objs {
			for i := os.released; i < os.acquired; i++ {
				if o.Bufs[i%len(o.Bufs)] == b {
					return fmt.Errorf("%w: %s starts a BD on %s, which %v holds", ErrDevice, who, b.Name, c)
				}
			}
		}
	}
	return nil
}
