package design

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/xdna-go/xdna/target"
)

// MLIRRelease is the mlir-aie release whose physical dialect MLIR writes
// (kernels/README.md pins it with the aiecc flags): aie.shim_dma_allocation
// takes the shim tile (mlir-aie PR #2727, 2025-11), aie.dma_bd takes its
// offset, length and dimensions positionally (the form PR #3306, 2026-07,
// replaced), aie.core takes link_with and stack_size.
const MLIRRelease = "v1.2.0"

// MLIROptions is what MLIR needs besides the design.
type MLIROptions struct {
	// Object is the kernel object every core links (link_with): the slot's
	// kernels/<target>/gemv.cc compiled by Peano. Required.
	Object string
}

// MLIR writes d in mlir-aie's physical dialect, so that aiecc compiles it
// without the objectFifo lowering: the device (the target's, whatever
// columns the design uses), its tiles, every buffer at the design's
// address, every lock with its id and initial value, one aie.flow per
// route destination (a broadcast is several flows from one source), the
// host's shim channels as aie.shim_dma_allocation, the kernel functions as
// private declarations, each memory tile's and core's DMA channels as
// aie.memtile_dma / aie.mem with their BD chains (lock acquire, BD, lock
// release, next BD), and each core's program as its aie.core body.
//
// The core body follows the form mlir-aie's own dynamic objectFifo
// lowering emits (test/objectFifo-stateful-transform/dynamic_lowering):
// registers and each object's turn live in the core's State buffer and are
// read with memref.load and written with memref.store; the buffer of an
// object the core holds now is chosen by scf.index_switch on its turn; a
// loop is scf.for (the dispatch loop to the largest index, as IRON writes
// an endless loop); a conditional is an scf.index_switch on the condition,
// whose default case is the body. Comparisons are arith.cmpi sge and
// arith.select: the values compared are counts below 2^24 (ParseHeader's
// bounds), where signed and unsigned order agree. Expect statements, which
// only the emulator checks, become comments.
func (d *Design) MLIR(w io.Writer, o MLIROptions) error {
	if err := d.Validate(); err != nil {
		return err
	}
	if o.Object == "" || strings.ContainsAny(o.Object, "\"\\\n") {
		return fmt.Errorf("design %s: MLIR needs the kernel object's file name (got %q)", d.Name(), o.Object)
	}
	p := &printer{d: d, o: o, syms: map[string]string{}}
	if err := p.module(); err != nil {
		return fmt.Errorf("design %s: MLIR: %w", d.Name(), err)
	}
	_, err := w.Write(p.b.Bytes())
	return err
}

type printer struct {
	d    *Design
	o    MLIROptions
	b    bytes.Buffer
	ind  int
	n    int               // SSA values made so far
	syms map[string]string // symbol name -> what it names
}

func (p *printer) line(format string, args ...any) {
	p.b.WriteString(strings.Repeat("  ", p.ind))
	fmt.Fprintf(&p.b, format, args...)
	p.b.WriteByte('\n')
}

// val returns a fresh SSA value name.
func (p *printer) val() string {
	p.n++
	return fmt.Sprintf("%%v%d", p.n)
}

// sym reserves a symbol name, refusing one taken or not an identifier.
func (p *printer) sym(name, what string) error {
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" || (name[0] >= '0' && name[0] <= '9') {
		return fmt.Errorf("%s %q is no MLIR identifier", what, name)
	}
	if o, ok := p.syms[name]; ok {
		return fmt.Errorf("%s and %s are both named %q", o, what, name)
	}
	p.syms[name] = what
	return nil
}

func tileVal(col, row int) string { return fmt.Sprintf("%%tile_%d_%d", col, row) }

// memref is the memref type of a buffer.
func memref(b *Buffer) string { return fmt.Sprintf("memref<%dx%s>", b.Elems(), b.Elem) }

func (p *printer) module() error {
	d := p.d
	p.line("// %s: the physical design of xdna's kernel slot %s (runtime/npu/design),", d.Target.Device, d.Name())
	p.line("// written by `xdnapack kernels mlir` in mlir-aie's physical dialect (release %s).", MLIRRelease)
	p.line("// %d column(s) x %d core(s); %s K-tile %d, %d rows a piece. Do not edit: regenerate.", d.Columns, d.Cores(), d.Type, d.KTile, d.Rows)
	p.line("module {")
	p.ind++
	p.line("aie.device(%s) {", d.Target.Device)
	p.ind++
	for _, t := range d.Tiles {
		p.line("%s = aie.tile(%d, %d)", tileVal(t.Col, t.Row), t.Col, t.Row)
	}
	for _, t := range d.Tiles {
		for _, b := range t.Buffers {
			if err := p.sym(b.Name, "buffer "+b.Name); err != nil {
				return err
			}
			p.line("%%%s = aie.buffer(%s) {address = %d : i32, sym_name = %q} : %s", b.Name, tileVal(t.Col, t.Row), b.Addr, b.Name, memref(b))
		}
	}
	for _, t := range d.Tiles {
		for _, l := range t.Locks {
			if err := p.sym(l.Name, "lock "+l.Name); err != nil {
				return err
			}
			p.line("%%%s = aie.lock(%s, %d) {init = %d : i32, sym_name = %q}", l.Name, tileVal(t.Col, t.Row), l.ID, l.Init, l.Name)
		}
	}
	for _, f := range d.Flows {
		p.line("// route %s", f.Name)
		for _, dst := range f.Dsts {
			p.line("aie.flow(%s, DMA : %d, %s, DMA : %d)", tileVal(f.Src.Col, f.Src.Row), f.Src.Ch, tileVal(dst.Col, dst.Row), dst.Ch)
		}
	}
	if err := p.shim(); err != nil {
		return err
	}
	for _, f := range d.Funcs {
		if err := p.sym(f.Name, "kernel function "+f.Name); err != nil {
			return err
		}
		var ts []string
		for _, pr := range f.Params {
			ts = append(ts, paramType(pr))
		}
		p.line("func.func private @%s(%s)", f.Name, strings.Join(ts, ", "))
	}
	for _, t := range d.Tiles {
		if len(t.Channels) > 0 {
			if err := p.dma(t); err != nil {
				return err
			}
		}
		if t.Program != nil {
			if err := p.core(t); err != nil {
				return err
			}
		}
	}
	p.ind--
	p.line("}")
	p.ind--
	p.line("}")
	return nil
}

func paramType(pr Param) string {
	if pr.Elems == 0 {
		return "i32"
	}
	return fmt.Sprintf("memref<%dx%s>", pr.Elems, pr.Elem)
}

// shim writes the host's channels: the weights and outputs of every
// column, the activations of ShimMap.ActCol.
func (p *printer) shim() error {
	d, s := p.d, p.d.Shim
	p.line("// the shim channels the host's TXN streams drive (runtime/npu/txn)")
	alloc := func(name string, col int, dir Dir, ch int) error {
		if err := p.sym(name, "shim allocation "+name); err != nil {
			return err
		}
		p.line("aie.shim_dma_allocation @%s(%s, %s, %d)", name, tileVal(col, target.ShimRow), dir, ch)
		return nil
	}
	for c := 0; c < d.Columns; c++ {
		if err := alloc(fmt.Sprintf("shim_w%d", c), c, MM2S, s.WeightCh); err != nil {
			return err
		}
	}
	if err := alloc("shim_acts", s.ActCol, MM2S, s.ActCh); err != nil {
		return err
	}
	for c := 0; c < d.Columns; c++ {
		if err := alloc(fmt.Sprintf("shim_o%d", c), c, S2MM, s.OutCh); err != nil {
			return err
		}
	}
	return nil
}

// dma writes a memory tile's or core's DMA channels: each channel's
// dma_start in the block before its chain, its BDs one block each, the
// last BD's next_bd back to the first (Loop) or to the final block, which
// holds aie.end.
func (p *printer) dma(t *Tile) error {
	op, name := "aie.mem", fmt.Sprintf("%%mem_%d_%d", t.Col, t.Row)
	if t.Kind == target.Mem {
		op, name = "aie.memtile_dma", fmt.Sprintf("%%memtile_dma_%d_%d", t.Col, t.Row)
	}
	p.line("%s = %s(%s) {", name, op, tileVal(t.Col, t.Row))
	p.ind++
	// Block labels: channel i's BDs are first[i]..first[i]+n-1, then the
	// block that starts channel i+1 (or ends the region).
	first := make([]int, len(t.Channels))
	next := 1
	for i, ch := range t.Channels {
		first[i] = next
		next += len(ch.BDs) + 1
	}
	end := next - 1
	for i, ch := range t.Channels {
		if i > 0 {
			p.label(first[i] - 1)
		}
		after := first[i] + len(ch.BDs)
		p.line("%s = aie.dma_start(%s, %d, ^bb%d, ^bb%d)", p.val(), ch.Dir, ch.Index, first[i], after)
		for j, bd := range ch.BDs {
			p.label(first[i] + j)
			if err := p.bd(bd); err != nil {
				return fmt.Errorf("%v %s channel %d BD %d: %w", t, ch.Dir, ch.Index, bd.ID, err)
			}
			switch {
			case j+1 < len(ch.BDs):
				p.line("aie.next_bd ^bb%d", first[i]+j+1)
			case ch.Loop:
				p.line("aie.next_bd ^bb%d", first[i])
			default:
				p.line("aie.next_bd ^bb%d", end)
			}
		}
	}
	p.label(end)
	p.line("aie.end")
	p.ind--
	p.line("}")
	return nil
}

func (p *printer) label(n int) {
	p.ind--
	p.line("^bb%d:", n)
	p.ind++
}

// bd writes one BD: its acquire, the transfer in elements of the buffer's
// memref (offset, length, dimensions outermost first, as mlir-aie takes
// them), its release.
func (p *printer) bd(b *BD) error {
	eb := ElemBytes(b.Buf.Elem)
	if b.Off%eb != 0 || b.Len%eb != 0 {
		return fmt.Errorf("%d bytes from byte %d of %s: not whole %s elements", b.Len, b.Off, b.Buf.Name, b.Buf.Elem)
	}
	if b.Acq != nil {
		p.line("aie.use_lock(%%%s, AcquireGreaterEqual, %d)", b.Acq.Name, b.AcqN)
	}
	dims := ""
	if len(b.Dims) > 0 {
		// Dims count 4-byte words, innermost first; mlir-aie's count
		// elements, outermost first. An i8 buffer's words become an
		// innermost run of 4 elements.
		var ds []string
		for i := len(b.Dims) - 1; i >= 0; i-- {
			ds = append(ds, fmt.Sprintf("<size = %d, stride = %d>", b.Dims[i].Size, b.Dims[i].Stride*4/eb))
		}
		if eb == 1 {
			ds = append(ds, "<size = 4, stride = 1>")
		}
		if max := dimLimit(b.Buf.Tile.Kind); len(ds) > max {
			return fmt.Errorf("%d dimensions in %s elements, a %s BD has %d", len(ds), b.Buf.Elem, b.Buf.Tile.Kind, max)
		}
		dims = ", [" + strings.Join(ds, ", ") + "]"
	}
	p.line("aie.dma_bd(%%%s : %s, %d, %d%s)", b.Buf.Name, memref(b.Buf), b.Off/eb, b.Len/eb, dims)
	if b.Rel != nil {
		p.line("aie.use_lock(%%%s, Release, %d)", b.Rel.Name, b.RelN)
	}
	return nil
}

// dimLimit is the dimensions a BD of a tile kind addresses (npu-contract.md
// 2.4: a memory tile has d0..d3, a core d0..d2).
func dimLimit(k target.TileKind) int {
	if k == target.Mem {
		return 4
	}
	return 3
}

// core writes a core's program as its aie.core body.
func (p *printer) core(t *Tile) error {
	pr, st := t.Program, t.State
	if st == nil {
		return fmt.Errorf("%v has no state buffer for its program's registers", t)
	}
	c := &coreGen{p: p, t: t, slot: map[*Object]int{}}
	for i, o := range t.Objects {
		c.slot[o] = len(pr.Regs) + i
		for _, b := range o.Bufs[1:] {
			if memref(b) != memref(o.Bufs[0]) {
				return fmt.Errorf("%v object %s: buffers %s and %s differ in type", t, o.Name, o.Bufs[0].Name, b.Name)
			}
		}
	}
	p.line("%%core_%d_%d = aie.core(%s) {", t.Col, t.Row, tileVal(t.Col, t.Row))
	p.ind++
	p.line("// state %s: registers %s, then the turn of %s", st.Name, strings.Join(pr.Regs, ", "), objNames(t.Objects))
	for i := range pr.Regs {
		c.store(i, c.i32(0))
	}
	for _, o := range t.Objects {
		c.store(c.slot[o], c.i32(len(o.Bufs)-1)) // the first acquire takes buffer 0
	}
	if err := c.stmts(pr.Body); err != nil {
		return fmt.Errorf("%v program: %w", t, err)
	}
	p.line("aie.end")
	p.ind--
	p.line("} {link_with = %q, stack_size = %d : i32}", p.o.Object, t.Stack)
	return nil
}

func objNames(os []*Object) string {
	var s []string
	for _, o := range os {
		s = append(s, o.Name)
	}
	return strings.Join(s, ", ")
}

// coreGen lowers one core's program.
type coreGen struct {
	p    *printer
	t    *Tile
	slot map[*Object]int // an object's turn's word in the state buffer
}

func (c *coreGen) i32(v int) string {
	x := c.p.val()
	c.p.line("%s = arith.constant %d : i32", x, v)
	return x
}

func (c *coreGen) index(v int) string {
	x := c.p.val()
	c.p.line("%s = arith.constant %d : index", x, v)
	return x
}

func (c *coreGen) load(word int) string {
	st := c.t.State
	i := c.index(word)
	x := c.p.val()
	c.p.line("%s = memref.load %%%s[%s] : %s", x, st.Name, i, memref(st))
	return x
}

func (c *coreGen) store(word int, v string) {
	st := c.t.State
	i := c.index(word)
	c.p.line("memref.store %s, %%%s[%s] : %s", v, st.Name, i, memref(st))
}

// current returns the buffer of o the core holds now: the one its turn
// names.
func (c *coreGen) current(o *Object) string {
	turn := c.load(c.slot[o])
	i := c.p.val()
	c.p.line("%s = arith.index_cast %s : i32 to index", i, turn)
	ty := memref(o.Bufs[0])
	x := c.p.val()
	c.p.line("%s = scf.index_switch %s -> %s", x, i, ty)
	for k, b := range o.Bufs {
		c.p.line("case %d {", k)
		c.p.ind++
		c.p.line("scf.yield %%%s : %s", b.Name, ty)
		c.p.ind--
		c.p.line("}")
	}
	c.p.line("default {")
	c.p.ind++
	c.p.line("scf.yield %%%s : %s", o.Bufs[0].Name, ty)
	c.p.ind--
	c.p.line("}")
	return x
}

func (c *coreGen) stmts(body []Stmt) error {
	for _, s := range body {
		if err := c.stmt(s); err != nil {
			return err
		}
	}
	return nil
}

func (c *coreGen) stmt(s Stmt) error {
	p := c.p
	switch s := s.(type) {
	case *Loop:
		var hi string
		if s.Count == nil {
			p.line("// the dispatch loop: for ever")
			hi = c.index(1<<63 - 1)
		} else {
			n, err := c.expr(s.Count)
			if err != nil {
				return err
			}
			hi = p.val()
			p.line("%s = arith.index_cast %s : i32 to index", hi, n)
		}
		lo, one := c.index(0), c.index(1)
		iv := p.val()
		p.line("scf.for %s = %s to %s step %s {", iv, lo, hi, one)
		p.ind++
		if s.Var >= 0 {
			x := p.val()
			p.line("%s = arith.index_cast %s : index to i32", x, iv)
			c.store(s.Var, x)
		}
		if err := c.stmts(s.Body); err != nil {
			return err
		}
		p.ind--
		p.line("}")
	case *If:
		cond, err := c.expr(s.Cond)
		if err != nil {
			return err
		}
		i := p.val()
		p.line("%s = arith.index_cast %s : i32 to index", i, cond)
		p.line("scf.index_switch %s", i)
		p.line("case 0 {")
		p.ind++
		p.line("scf.yield")
		p.ind--
		p.line("}")
		p.line("default {")
		p.ind++
		if err := c.stmts(s.Then); err != nil {
			return err
		}
		p.line("scf.yield")
		p.ind--
		p.line("}")
	case *Acquire:
		lock := s.Obj.Full
		if !s.Obj.Input {
			lock = s.Obj.Free
		}
		p.line("aie.use_lock(%%%s, AcquireGreaterEqual, 1)", lock.Name)
		// turn = (turn + 1) mod buffers
		t := c.load(c.slot[s.Obj])
		one, n := c.i32(1), c.i32(len(s.Obj.Bufs))
		t1, ge, t2, t3 := p.val(), p.val(), p.val(), p.val()
		p.line("%s = arith.addi %s, %s : i32", t1, t, one)
		p.line("%s = arith.cmpi sge, %s, %s : i32", ge, t1, n)
		p.line("%s = arith.subi %s, %s : i32", t2, t1, n)
		p.line("%s = arith.select %s, %s, %s : i32", t3, ge, t2, t1)
		c.store(c.slot[s.Obj], t3)
	case *Release:
		lock := s.Obj.Free
		if !s.Obj.Input {
			lock = s.Obj.Full
		}
		p.line("aie.use_lock(%%%s, Release, 1)", lock.Name)
	case *Set:
		x, err := c.expr(s.X)
		if err != nil {
			return err
		}
		p.line("// %s = %s", c.t.Program.Regs[s.Reg], exprString(c.t.Program, s.X))
		c.store(s.Reg, x)
	case *Expect:
		p.line("// the emulator checks %s: %s == %d", s.Msg, exprString(c.t.Program, s.X), s.Want)
	case *Call:
		var args, types []string
		for i, a := range s.Args {
			pr := s.Fn.Params[i]
			switch {
			case a.Obj != nil:
				args = append(args, c.current(a.Obj))
			case a.Buf != nil:
				args = append(args, "%"+a.Buf.Name)
			default:
				x, err := c.expr(a.X)
				if err != nil {
					return err
				}
				args = append(args, x)
			}
			types = append(types, paramType(pr))
		}
		p.line("func.call @%s(%s) : (%s) -> ()", s.Fn.Name, strings.Join(args, ", "), strings.Join(types, ", "))
	default:
		return fmt.Errorf("statement of type %T", s)
	}
	return nil
}

// expr returns the i32 value of x.
func (c *coreGen) expr(x Expr) (string, error) {
	p := c.p
	switch x := x.(type) {
	case Const:
		return c.i32(int(x)), nil
	case Reg:
		return c.load(int(x)), nil
	case *Load:
		b := x.Obj.Bufs[0]
		if b.Elem != "i32" {
			return "", fmt.Errorf("loads a word of %s, whose buffers are %s", x.Obj.Name, b.Elem)
		}
		buf := c.current(x.Obj)
		i := c.index(x.Word)
		v := p.val()
		p.line("%s = memref.load %s[%s] : %s", v, buf, i, memref(b))
		return v, nil
	case *Bin:
		a, err := c.expr(x.A)
		if err != nil {
			return "", err
		}
		b, err := c.expr(x.B)
		if err != nil {
			return "", err
		}
		v := p.val()
		switch x.Op {
		case Add:
			p.line("%s = arith.addi %s, %s : i32", v, a, b)
		case Sub:
			p.line("%s = arith.subi %s, %s : i32", v, a, b)
		case Lt: // a < b: not a >= b
			ge := p.val()
			p.line("%s = arith.cmpi sge, %s, %s : i32", ge, a, b)
			zero, one := c.i32(0), c.i32(1)
			p.line("%s = arith.select %s, %s, %s : i32", v, ge, zero, one)
		case Eq: // a == b: a >= b and b >= a
			ge, le, t := p.val(), p.val(), p.val()
			p.line("%s = arith.cmpi sge, %s, %s : i32", ge, a, b)
			p.line("%s = arith.cmpi sge, %s, %s : i32", le, b, a)
			zero, one := c.i32(0), c.i32(1)
			p.line("%s = arith.select %s, %s, %s : i32", t, le, one, zero)
			p.line("%s = arith.select %s, %s, %s : i32", v, ge, t, zero)
		default:
			return "", fmt.Errorf("operator %v", x.Op)
		}
		return v, nil
	}
	return "", fmt.Errorf("expression of type %T", x)
}

// exprString shows an expression in comments.
func exprString(pr *Program, x Expr) string {
	switch x := x.(type) {
	case Const:
		return fmt.Sprint(int(x))
	case Reg:
		if int(x) >= 0 && int(x) < len(pr.Regs) {
			return pr.Regs[x]
		}
		return fmt.Sprintf("r%d", int(x))
	case *Load:
		return fmt.Sprintf("%s[%d]", x.Obj.Name, x.Word)
	case *Bin:
		return fmt.Sprintf("(%s %v %s)", exprString(pr, x.A), x.Op, exprString(pr, x.B))
	}
	return "?"
}
