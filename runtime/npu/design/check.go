package design

import (
	"errors"
	"fmt"
	"sort"

	"github.com/xdna-go/xdna/target"
)

// ErrDesign is matched by every error of Validate: a design the hardware
// or the toolchain would refuse, or one whose parts do not fit together.
var ErrDesign = errors.New("invalid design")

// Validate checks the design against its target's limits and itself:
// tiles on rows of their kind inside the columns; per tile the DMA
// channels of each direction, BDs (and the pool each channel may use),
// locks and lock values, and memory (buffers inside it, not overlapping
// each other or the stack); every BD inside its buffer with its locks on
// its tile; every flow from an MM2S channel to S2MM channels that exist,
// every S2MM fed by one flow and every channel of a memory tile or core on
// one flow; the shim map inside the shim tiles' channels and BDs; every
// core program using its own objects and buffers, and calling kernel
// functions with the arguments their parameters take. The first problem
// is the error, naming the tile, channel, BD, lock or buffer.
func (d *Design) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("design %s: %w: "+format, append([]any{d.Name(), ErrDesign}, args...)...)
	}
	t := d.Target
	if d.Columns < 1 || d.Columns > t.Columns {
		return bad("%d columns, %s has %d", d.Columns, t.Name, t.Columns)
	}
	seen := map[[2]int]bool{}
	ports := map[Port]bool{} // channels that exist
	for _, tl := range d.Tiles {
		switch {
		case tl.Col < 0 || tl.Col >= d.Columns:
			return bad("%v: column outside the design's %d", tl, d.Columns)
		case tl.Row < 0 || tl.Row >= target.FirstCore+t.CoreRows:
			return bad("%v: row outside the array", tl)
		case target.Kind(tl.Row) != tl.Kind:
			return bad("%v: row %d holds %s tiles", tl, tl.Row, target.Kind(tl.Row))
		case tl.Facts != t.Tile(tl.Kind):
			return bad("%v: its facts are not %s's %s tile's", tl, t.Name, tl.Kind)
		case seen[[2]int{tl.Col, tl.Row}]:
			return bad("%v listed twice", tl)
		}
		seen[[2]int{tl.Col, tl.Row}] = true
		if err := d.checkTile(tl, ports); err != nil {
			return bad("%v", err)
		}
	}
	// The shim channels the host drives exist on every shim tile.
	s := d.Shim
	for _, ch := range []struct {
		dir Dir
		n   int
	}{{MM2S, s.WeightCh}, {MM2S, s.ActCh}, {S2MM, s.OutCh}} {
		lim := t.ShimTile.MM2S
		if ch.dir == S2MM {
			lim = t.ShimTile.S2MM
		}
		if ch.n < 0 || ch.n >= lim {
			return bad("shim map: %s channel %d, a shim tile has %d", ch.dir, ch.n, lim)
		}
	}
	if s.WeightCh == s.ActCh {
		return bad("shim map: weights and activations share MM2S channel %d of column %d", s.WeightCh, s.ActCol)
	}
	used := make([]string, t.ShimTile.BDs)
	for _, r := range []struct {
		what      string
		first, nr int
	}{{"weights", s.WeightBD0, s.WeightBDs}, {"header", s.HeaderBD, 1}, {"records", s.RecordBD0, s.RecordBDs}, {"outputs", s.OutBD0, s.OutBDs}} {
		for id := r.first; id < r.first+r.nr; id++ {
			if id < 0 || id >= len(used) {
				return bad("shim map: %s BD %d, a shim tile has %d", r.what, id, len(used))
			}
			if used[id] != "" {
				return bad("shim map: BD %d for both %s and %s", id, used[id], r.what)
			}
			used[id] = r.what
		}
	}
	for c := 0; c < d.Columns; c++ {
		if d.Tile(c, target.ShimRow) == nil {
			return bad("column %d has no shim tile", c)
		}
		ports[Port{c, target.ShimRow, MM2S, s.WeightCh}] = true
		ports[Port{c, target.ShimRow, S2MM, s.OutCh}] = true
	}
	ports[Port{s.ActCol, target.ShimRow, MM2S, s.ActCh}] = true
	return d.checkFlows(ports, bad)
}

// checkTile checks one tile's channels, BDs, locks, memory and program,
// adding its channels to ports.
func (d *Design) checkTile(tl *Tile, ports map[Port]bool) error {
	f := tl.Facts
	if tl.Kind == target.Shim {
		if len(tl.Channels) > 0 || len(tl.Buffers) > 0 || len(tl.Locks) > 0 || tl.Program != nil {
			return fmt.Errorf("%v: a shim tile's DMA is the host's (the shim map), not the design's", tl)
		}
		return nil
	}
	// Channels.
	count := map[Dir]int{}
	for _, ch := range tl.Channels {
		lim := f.S2MM
		if ch.Dir == MM2S {
			lim = f.MM2S
		}
		count[ch.Dir]++
		if count[ch.Dir] > lim {
			return fmt.Errorf("%v: %d %s channels, a %s has %d", tl, count[ch.Dir], ch.Dir, tl.Kind, lim)
		}
		if ch.Index < 0 || ch.Index >= lim {
			return fmt.Errorf("%v %s channel %d: a %s has channels 0..%d", tl, ch.Dir, ch.Index, tl.Kind, lim-1)
		}
		p := Port{tl.Col, tl.Row, ch.Dir, ch.Index}
		if ports[p] {
			return fmt.Errorf("%v %s channel %d defined twice", tl, ch.Dir, ch.Index)
		}
		ports[p] = true
		if len(ch.BDs) == 0 {
			return fmt.Errorf("%v %s channel %d has no BDs", tl, ch.Dir, ch.Index)
		}
	}
	// Locks.
	lockIDs := map[int]bool{}
	if len(tl.Locks) > f.Locks {
		return fmt.Errorf("%v: %d locks, a %s has %d", tl, len(tl.Locks), tl.Kind, f.Locks)
	}
	for _, l := range tl.Locks {
		switch {
		case l.Tile != tl:
			return fmt.Errorf("%v: lock %s belongs to %v", tl, l.Name, l.Tile)
		case l.ID < 0 || l.ID >= f.Locks || lockIDs[l.ID]:
			return fmt.Errorf("%v: lock %s has id %d (ids 0..%d, once each)", tl, l.Name, l.ID, f.Locks-1)
		case l.Init < 0 || l.Init > f.LockMax:
			return fmt.Errorf("%v: lock %s starts at %d, a lock holds 0..%d", tl, l.Name, l.Init, f.LockMax)
		}
		lockIDs[l.ID] = true
	}
	ownLock := func(l *Lock) bool { return l == nil || l.Tile == tl }
	// Memory.
	bufs := append([]*Buffer(nil), tl.Buffers...)
	sort.Slice(bufs, func(i, j int) bool { return bufs[i].Addr < bufs[j].Addr })
	end := tl.Stack
	for _, b := range bufs {
		switch {
		case b.Tile != tl:
			return fmt.Errorf("%v: buffer %s belongs to %v", tl, b.Name, b.Tile)
		case b.Size <= 0 || b.Size%ElemBytes(b.Elem) != 0:
			return fmt.Errorf("%v buffer %s: %d bytes of %s", tl, b.Name, b.Size, b.Elem)
		case b.Addr < end:
			what := "the previous buffer"
			if end == tl.Stack {
				what = fmt.Sprintf("the %d-byte stack", tl.Stack)
			}
			return fmt.Errorf("%v buffer %s at %#x overlaps %s (ends at %#x)", tl, b.Name, b.Addr, what, end)
		case b.Addr%64 != 0:
			return fmt.Errorf("%v buffer %s at %#x: not on 64 bytes (512-bit loads)", tl, b.Name, b.Addr)
		}
		end = b.Addr + b.Size
	}
	if end > f.Memory {
		return fmt.Errorf("%v: buffers and stack need %d bytes, a %s has %d", tl, end, tl.Kind, f.Memory)
	}
	// BDs.
	ids := map[int]string{}
	for _, ch := range tl.Channels {
		lo, hi := BDPool(tl, ch)
		for _, b := range ch.BDs {
			where := fmt.Sprintf("%v %s channel %d BD %d", tl, ch.Dir, ch.Index, b.ID)
			switch {
			case b.ID < lo || b.ID >= hi:
				return fmt.Errorf("%s: %s channel %d may chain BDs %d..%d of the %d", where, ch.Dir, ch.Index, lo, hi-1, f.BDs)
			case ids[b.ID] != "":
				return fmt.Errorf("%s: BD %d is already %s", where, b.ID, ids[b.ID])
			case b.Buf == nil || b.Buf.Tile != tl:
				return fmt.Errorf("%s: its buffer is not on the tile", where)
			case !ownLock(b.Acq) || !ownLock(b.Rel):
				return fmt.Errorf("%s: a lock of another tile", where)
			case b.Acq != nil && (b.AcqN < 1 || b.AcqN > f.LockMax):
				return fmt.Errorf("%s: acquires %d of lock %s", where, b.AcqN, b.Acq.Name)
			case b.Rel != nil && (b.RelN < 1 || b.RelN > f.LockMax):
				return fmt.Errorf("%s: releases %d of lock %s", where, b.RelN, b.Rel.Name)
			}
			ids[b.ID] = fmt.Sprintf("%s channel %d's", ch.Dir, ch.Index)
			if err := b.checkSpan(); err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
		}
	}
	if tl.Kind != target.Core {
		if tl.Program != nil || len(tl.Objects) > 0 {
			return fmt.Errorf("%v: only cores run programs", tl)
		}
		return nil
	}
	for _, o := range tl.Objects {
		if len(o.Bufs) == 0 || !ownLock(o.Full) || !ownLock(o.Free) || o.Full == nil || o.Free == nil {
			return fmt.Errorf("%v: object %s needs buffers and two locks of its own tile", tl, o.Name)
		}
		for _, b := range o.Bufs {
			if b.Tile != tl {
				return fmt.Errorf("%v: object %s's buffer %s is on %v", tl, o.Name, b.Name, b.Tile)
			}
		}
	}
	if tl.Program == nil {
		return fmt.Errorf("%v: a core with no program", tl)
	}
	if st := tl.State; st != nil {
		if need := len(tl.Program.Regs) + len(tl.Objects); st.Tile != tl || st.Elem != "i32" || st.Elems() < need {
			return fmt.Errorf("%v: state buffer %s must be %d i32 words of its own tile", tl, st.Name, need)
		}
	}
	return checkProgram(tl)
}

// checkSpan checks that every byte the BD addresses lies in its buffer:
// Len a whole number of words, and for a strided pattern, the sizes' product
// the length and the last word inside.
func (b *BD) checkSpan() error {
	if b.Len <= 0 || b.Len%4 != 0 || b.Off < 0 || b.Off%4 != 0 {
		return fmt.Errorf("%d bytes from byte %d: lengths and offsets are whole words", b.Len, b.Off)
	}
	if len(b.Dims) == 0 {
		if b.Off+b.Len > b.Buf.Size {
			return fmt.Errorf("%d bytes from byte %d run past buffer %s of %d", b.Len, b.Off, b.Buf.Name, b.Buf.Size)
		}
		return nil
	}
	words, last := 1, 0
	for _, dm := range b.Dims {
		if dm.Size < 1 || dm.Size > 1023 || dm.Stride < 1 {
			return fmt.Errorf("dimension size %d stride %d (sizes 1..1023, strides >= 1)", dm.Size, dm.Stride)
		}
		words *= dm.Size
		last += (dm.Size - 1) * dm.Stride
	}
	if 4*words != b.Len {
		return fmt.Errorf("dimensions cover %d words, the length is %d", words, b.Len/4)
	}
	if b.Off+4*last+4 > b.Buf.Size {
		return fmt.Errorf("the pattern reaches byte %d of buffer %s of %d", b.Off+4*last+4, b.Buf.Name, b.Buf.Size)
	}
	return nil
}

// checkFlows checks the routes against the channels that exist.
func (d *Design) checkFlows(ports map[Port]bool, bad func(string, ...any) error) error {
	src := map[Port]string{}
	dst := map[Port]string{}
	for _, fl := range d.Flows {
		if fl.Src.Dir != MM2S || !ports[fl.Src] {
			return bad("flow %s: source %v is no MM2S channel of the design", fl.Name, fl.Src)
		}
		if o := src[fl.Src]; o != "" {
			return bad("flows %s and %s leave the same %v (join them into one broadcast)", o, fl.Name, fl.Src)
		}
		src[fl.Src] = fl.Name
		if len(fl.Dsts) == 0 {
			return bad("flow %s has no destination", fl.Name)
		}
		for _, p := range fl.Dsts {
			if p.Dir != S2MM || !ports[p] {
				return bad("flow %s: destination %v is no S2MM channel of the design", fl.Name, p)
			}
			if o := dst[p]; o != "" {
				return bad("flows %s and %s both feed %v", o, fl.Name, p)
			}
			dst[p] = fl.Name
		}
	}
	for p := range ports {
		if p.Row == target.ShimRow {
			if (p.Dir == MM2S && src[p] == "") || (p.Dir == S2MM && dst[p] == "") {
				return bad("%v of the shim map is on no flow", p)
			}
			continue
		}
		if (p.Dir == MM2S && src[p] == "") || (p.Dir == S2MM && dst[p] == "") {
			return bad("%v is on no flow: its chain would stall for ever", p)
		}
	}
	return nil
}

// checkProgram checks a core's program against its tile.
func checkProgram(tl *Tile) error {
	pr := tl.Program
	own := map[*Object]bool{}
	for _, o := range tl.Objects {
		own[o] = true
	}
	var err error
	fail := func(format string, args ...any) {
		if err == nil {
			err = fmt.Errorf("%v program: "+format, append([]any{tl}, args...)...)
		}
	}
	var expr func(x Expr)
	expr = func(x Expr) {
		switch x := x.(type) {
		case Const:
		case Reg:
			if int(x) < 0 || int(x) >= len(pr.Regs) {
				fail("register %d of %d", int(x), len(pr.Regs))
			}
		case *Load:
			if !own[x.Obj] {
				fail("loads from an object not on the tile")
			} else if x.Word < 0 || 4*x.Word+4 > x.Obj.Bufs[0].Size {
				fail("loads word %d of %s's %d-byte buffers", x.Word, x.Obj.Name, x.Obj.Bufs[0].Size)
			}
		case *Bin:
			expr(x.A)
			expr(x.B)
		default:
			fail("an expression of type %T", x)
		}
	}
	Walk(pr.Body, func(s Stmt) {
		switch s := s.(type) {
		case *Loop:
			if s.Count != nil {
				expr(s.Count)
			}
			if s.Var >= len(pr.Regs) {
				fail("loop over register %d of %d", s.Var, len(pr.Regs))
			}
		case *If:
			expr(s.Cond)
		case *Acquire:
			if !own[s.Obj] {
				fail("acquires an object not on the tile")
			}
		case *Release:
			if !own[s.Obj] {
				fail("releases an object not on the tile")
			}
		case *Set:
			expr(Reg(s.Reg))
			expr(s.X)
		case *Expect:
			expr(s.X)
		case *Call:
			if len(s.Args) != len(s.Fn.Params) {
				fail("calls %s with %d arguments, it takes %d", s.Fn.Name, len(s.Args), len(s.Fn.Params))
				return
			}
			for i, a := range s.Args {
				p := s.Fn.Params[i]
				var b *Buffer
				switch {
				case a.Obj != nil:
					if !own[a.Obj] {
						fail("passes an object not on the tile to %s", s.Fn.Name)
						return
					}
					b = a.Obj.Bufs[0]
				case a.Buf != nil:
					if a.Buf.Tile != tl {
						fail("passes buffer %s of %v to %s", a.Buf.Name, a.Buf.Tile, s.Fn.Name)
						return
					}
					b = a.Buf
				default:
					if p.Elems != 0 {
						fail("passes an integer to %s's buffer parameter %s", s.Fn.Name, p.Name)
					}
					expr(a.X)
					continue
				}
				if p.Elems == 0 {
					fail("passes buffer %s to %s's integer parameter %s", b.Name, s.Fn.Name, p.Name)
				} else if b.Elem != p.Elem || b.Elems() != p.Elems {
					fail("passes %s (memref<%dx%s>) to %s's %s (memref<%dx%s>)", b.Name, b.Elems(), b.Elem, s.Fn.Name, p.Name, p.Elems, p.Elem)
				}
			}
		}
	})
	return err
}
