package emu

import (
	"fmt"

	"github.com/xdna-go/xdna/runtime/npu/design"
)

// seg is a contiguous byte range: of a tile's memory, or (shim channels) of
// buffer argument arg in DDR.
type seg struct {
	arg, off, n int
}

// shimTask is one queue push of a shim channel: its BD chain's bytes, all
// repeats, and whether it issues a task-complete token.
type shimTask struct {
	segs  []seg
	bytes int
	token bool
	bds   []int // the shim BDs it reads
	op    int   // the TXN op that pushed it
}

// chanState is one DMA channel: a memory tile's or core's (its static BD
// chain) or a shim's (the tasks the instruction stream pushes).
type chanState struct {
	a    *Array
	tile *tileState
	port design.Port
	flow *flowState

	// Static chains.
	ch      *design.Channel
	bd      int  // index of the current BD in ch.BDs
	active  bool // the current BD's lock is held; it moves bytes
	stopped bool // a chain without a loop ran out
	segs    []seg
	si, so  int // segment index and offset in it
	done    int // bytes of the current BD or task moved

	// Shim channels.
	shim   bool
	tasks  []*shimTask
	tokens int // finished tasks whose token no sync has taken yet
	moved  int64
}

func (c *chanState) String() string {
	return fmt.Sprintf("%s %s %d", c.tile.name, c.port.Dir, c.port.Ch)
}

// start puts a static chain on its first BD.
func (c *chanState) start() { c.bd, c.active, c.stopped = 0, false, false }

// curBD is the static chain's current BD.
func (c *chanState) curBD() *design.BD { return c.ch.BDs[c.bd] }

// ready reports whether the channel has a BD or task to move bytes of,
// taking the current BD's lock if it can.
func (c *chanState) ready() (bool, error) {
	if c.shim {
		if len(c.tasks) > 0 && c.segs == nil {
			c.segs, c.si, c.so, c.done = c.tasks[0].segs, 0, 0, 0
		}
		return len(c.tasks) > 0, nil
	}
	if c.active {
		return true, nil
	}
	if c.stopped {
		return false, nil
	}
	b := c.curBD()
	if b.Acq != nil && !c.a.acquire(c.tile, b.Acq, b.AcqN) {
		return false, nil
	}
	if err := c.a.checkNotHeld(c.tile, b.Buf, c.String()); err != nil {
		return false, err
	}
	c.active = true
	c.segs, c.si, c.so, c.done = c.a.segments(b), 0, 0, 0
	return true, nil
}

// avail is the bytes left in the current segment.
func (c *chanState) avail() int {
	if c.si >= len(c.segs) {
		return 0
	}
	return c.segs[c.si].n - c.so
}

// bytes returns the next n bytes of the current segment.
func (c *chanState) bytes(args [][]byte, n int) []byte {
	s := c.segs[c.si]
	if c.shim {
		return args[s.arg][s.off+c.so : s.off+c.so+n]
	}
	return c.tile.mem[s.off+c.so : s.off+c.so+n]
}

// advance moves the cursor n bytes on, finishing the BD (its release, the
// next BD) or the task (its token, the next task) at its end.
func (c *chanState) advance(n int) error {
	c.so += n
	c.done += n
	if c.so == c.segs[c.si].n {
		c.si, c.so = c.si+1, 0
	}
	if c.si < len(c.segs) {
		return nil
	}
	if c.shim {
		t := c.tasks[0]
		c.tasks = c.tasks[1:]
		c.segs = nil
		c.moved += int64(t.bytes)
		if t.token {
			c.tokens++
		}
		return nil
	}
	b := c.curBD()
	c.active, c.segs = false, nil
	if b.Rel != nil {
		if err := c.a.release(c.tile, b.Rel, b.RelN, fmt.Sprintf("%v BD %d", c, b.ID)); err != nil {
			return err
		}
	}
	c.bd++
	if c.bd == len(c.ch.BDs) {
		c.bd = 0
		c.stopped = !c.ch.Loop
	}
	return nil
}

// waiting says what the channel waits for, "" if it is idle.
func (c *chanState) waiting() string {
	if c.shim {
		if len(c.tasks) == 0 {
			return ""
		}
		t := c.tasks[0]
		return fmt.Sprintf("%v: task pushed by op %d: %d of %d bytes moved; %s", c, t.op, c.done, t.bytes, c.flow.blame(c))
	}
	if c.stopped {
		return ""
	}
	b := c.curBD()
	if !c.active {
		return fmt.Sprintf("%v BD %d: waits for %s >= %d (it is %d)", c, b.ID, c.tile.lockName(b.Acq.ID), b.AcqN, c.tile.locks[b.Acq.ID])
	}
	if c.port.Dir == design.S2MM && c.done == 0 {
		return fmt.Sprintf("%v BD %d (%s): waits for data; %s", c, b.ID, b.Buf.Name, c.flow.blame(c))
	}
	return fmt.Sprintf("%v BD %d (%s): %d of %d bytes moved; %s", c, b.ID, b.Buf.Name, c.done, b.Len, c.flow.blame(c))
}

// leftover says what a channel at rest has not finished, "" if nothing.
func (c *chanState) leftover() string {
	if c.shim {
		if len(c.tasks) > 0 {
			left := 0
			for _, t := range c.tasks {
				left += t.bytes
			}
			return fmt.Sprintf("%v: %d bytes of %d task(s) never moved (the design consumed less than the stream sent)", c, left-c.done, len(c.tasks))
		}
		return ""
	}
	if c.active && c.done > 0 {
		b := c.curBD()
		return fmt.Sprintf("%v BD %d (%s): %d of %d bytes moved: the stream ended inside an object", c, b.ID, b.Buf.Name, c.done, b.Len)
	}
	return ""
}

// flowState is a stream route between channels.
type flowState struct {
	f    *design.Flow
	src  *chanState
	dsts []*chanState
}

// move moves words from the source to every destination while all can
// take them, and reports whether any moved.
func (f *flowState) move() (bool, error) {
	a := f.src.a
	moved := false
	for {
		ok, err := f.src.ready()
		if err != nil || !ok {
			return moved, err
		}
		n := f.src.avail()
		for _, d := range f.dsts {
			ok, err := d.ready()
			if err != nil {
				return moved, err
			}
			if !ok {
				return moved, nil
			}
			n = min(n, d.avail())
		}
		if n == 0 {
			return moved, nil
		}
		src := f.src.bytes(a.args, n)
		for _, d := range f.dsts {
			copy(d.bytes(a.args, n), src)
			a.st.Written[d.tile.t.Kind] += int64(n)
			if err := d.advance(n); err != nil {
				return true, err
			}
		}
		a.st.Read[f.src.tile.t.Kind] += int64(n)
		if err := f.src.advance(n); err != nil {
			return true, err
		}
		moved = true
	}
}

// blame says which end of the flow holds c up.
func (f *flowState) blame(c *chanState) string {
	if c == f.src {
		for _, d := range f.dsts {
			if !d.active && !d.shim || d.shim && len(d.tasks) == 0 {
				return fmt.Sprintf("flow %s: destination %v takes nothing", f.f.Name, d)
			}
		}
		return fmt.Sprintf("flow %s", f.f.Name)
	}
	s := f.src
	switch {
	case s.shim && len(s.tasks) == 0:
		return fmt.Sprintf("flow %s: its source %v has no task", f.f.Name, s)
	case !s.shim && !s.active:
		return fmt.Sprintf("flow %s: its source %v has not started a BD", f.f.Name, s)
	}
	for _, d := range f.dsts {
		if d != c && (!d.active && !d.shim || d.shim && len(d.tasks) == 0) {
			return fmt.Sprintf("flow %s: broadcast held by %v", f.f.Name, d)
		}
	}
	return fmt.Sprintf("flow %s", f.f.Name)
}

// segments returns the byte ranges of b in its tile's memory, in the
// order the DMA moves them (Dims innermost first; none: contiguous).
func (a *Array) segments(b *design.BD) []seg {
	base := b.Buf.Addr + b.Off
	if len(b.Dims) == 0 {
		return []seg{{off: base, n: b.Len}}
	}
	var out []seg
	idx := make([]int, len(b.Dims))
	for w := 0; w < b.Len/4; w++ {
		off := 0
		for i, d := range b.Dims {
			off += idx[i] * d.Stride
		}
		addr := base + 4*off
		if l := len(out); l > 0 && out[l-1].off+out[l-1].n == addr {
			out[l-1].n += 4
		} else {
			out = append(out, seg{off: addr, n: 4})
		}
		for i := range idx {
			idx[i]++
			if idx[i] < b.Dims[i].Size {
				break
			}
			idx[i] = 0
		}
	}
	return out
}
