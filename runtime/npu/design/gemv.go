package design

import (
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/target"
)

// The kernel functions the cores call (kernels/common/entry.inc; package
// gemv documents them and models them).
const (
	FnInit = gemv.FnInit
	FnAcc  = gemv.FnAcc
	FnOut  = gemv.FnOut
)

// The memory-tile channels of the design (every column).
const (
	memWeightsIn = 0 // S2MM from the shim's weight channel
	memOutsIn0   = 1 // S2MM 1..4: each core's outputs
	memToCore0   = 0 // MM2S 0..3: each core's weight pieces
	memOutsOut   = 5 // MM2S to the shim's output channel
)

// The core channels.
const (
	coreActs    = 0 // S2MM: the broadcast activation objects
	coreWeights = 1 // S2MM: its weight pieces
	coreOuts    = 0 // MM2S: its outputs
)

// Depth is the buffers of every object stream (double buffering).
const Depth = 2

// stackBytes is each core's stack. Peano's default is 1 KiB and an overflow
// silently corrupts the buffer above it (npu-contract.md 6: QVAC needed
// 3 KiB, XNPU's 4-accumulator kernel a 0x4C0 frame); the bound per kernel
// is gemv.BudgetOf's (TestBudget checks it fits), and the stack leaves it a margin.
var stackBytes = map[planar.Type]int{
	planar.Q4_0: 4096, planar.Q5_0: 4096, planar.Q8_0: 4096,
	planar.Q4_K: 4096, planar.Q5_K: 4096, planar.Q6_K: 4096,
}

// New returns the physical design of the GEMV slot for weights of type
// typ in K-tiles of kTile on target t: every column of the target, a
// memory tile splitting each column's weight run into one piece per core
// and joining the cores' outputs, the activation stream broadcast from
// one shim channel to every core. The result is validated (Validate).
func New(t *target.Target, typ planar.Type, kTile int) (*Design, error) {
	return NewWith(t, typ, kTile, Options{})
}

// Options narrows a design to part of the array.
type Options struct {
	Columns int    // columns from 0 (0: every column of the target)
	Cores   int    // cores per column from row target.FirstCore (0: every core row)
	Tag     string // the variant's name, after the slot name (required with Columns or Cores)
}

// BringUpTag is the Tag of NewBringUp's design.
const BringUpTag = "bringup"

// NewBringUp returns the smallest design that exercises the whole path on
// target t: one column, one core, Q8_0 weights in K-tiles of 128. Every
// part of a catalog design is there once (shim channels, memory-tile
// split and join, core channels, the broadcast activation route with one
// destination, the core program with its header reads), so it is the
// first thing to build and run on a machine with an NPU
// (kernels/README.md). Its name is SlotName(...)+"-bringup".
func NewBringUp(t *target.Target) (*Design, error) {
	return NewWith(t, planar.Q8_0, 128, Options{Columns: 1, Cores: 1, Tag: BringUpTag})
}

// NewWith is New narrowed by o.
func NewWith(t *target.Target, typ planar.Type, kTile int, o Options) (*Design, error) {
	switch {
	case o.Columns < 0 || o.Columns > t.Columns:
		return nil, fmt.Errorf("design %s: %d columns, %s has %d", SlotName(t.Name, typ, kTile), o.Columns, t.Name, t.Columns)
	case o.Cores < 0 || o.Cores > t.CoreRows:
		return nil, fmt.Errorf("design %s: %d cores a column, %s has %d", SlotName(t.Name, typ, kTile), o.Cores, t.Name, t.CoreRows)
	case (o.Columns > 0 || o.Cores > 0) && o.Tag == "":
		return nil, fmt.Errorf("design %s: a narrowed design needs a tag to tell it from the catalog slot", SlotName(t.Name, typ, kTile))
	}
	piece, err := gemv.PieceOf(typ, kTile, t.Lanes)
	if err != nil {
		return nil, fmt.Errorf("design %s: %w", SlotName(t.Name, typ, kTile), err)
	}
	rec := gemv.RecordOf(typ, kTile)
	if rec.Kind == gemv.ActF32 || rec.Stride < HeaderBytes {
		return nil, fmt.Errorf("design %s: activation record of %d bytes cannot carry the %d-byte header", SlotName(t.Name, typ, kTile), rec.Stride, HeaderBytes)
	}
	stack, ok := stackBytes[typ]
	if !ok {
		return nil, fmt.Errorf("design %s: no kernel for %s", SlotName(t.Name, typ, kTile), typ)
	}
	cols := t.Columns
	if o.Columns > 0 {
		cols = o.Columns
	}
	d := &Design{Target: t, Type: typ, KTile: kTile, Rows: t.Lanes, Columns: cols, Piece: piece, Record: rec, CoreRows: o.Cores, Tag: o.Tag,
		Shim: ShimMap{WeightCh: 0, WeightBD0: 0, WeightBDs: 8, ActCol: 0, ActCh: 1, HeaderBD: 8, RecordBD0: 9, RecordBDs: 3,
			OutCh: 0, OutBD0: 12, OutBDs: 4}}
	R := d.Rows
	fInit := &Func{Name: FnInit}
	fAcc := &Func{Name: FnAcc, Params: []Param{
		{"w", "i8", piece.Bytes}, {"rec", "i32", rec.Stride / 4}, {"acc", "f32", MaxTokens * R}, {"t", "i32", 0}, {"first", "i32", 0}}}
	fOut := &Func{Name: FnOut, Params: []Param{
		{"w", "i8", piece.Bytes}, {"rec", "i32", rec.Stride / 4}, {"acc", "f32", MaxTokens * R}, {"out", "f32", R},
		{"t", "i32", 0}, {"first", "i32", 0}}}
	d.Funcs = []*Func{fInit, fAcc, fOut}

	shim0 := Port{Col: d.Shim.ActCol, Row: target.ShimRow, Dir: MM2S, Ch: d.Shim.ActCh}
	acts := Flow{Name: "acts", Src: shim0}
	for c := 0; c < d.Columns; c++ {
		shim := &Tile{Col: c, Row: target.ShimRow, Kind: target.Shim, Facts: t.ShimTile}
		mem := &Tile{Col: c, Row: target.MemRow, Kind: target.Mem, Facts: t.MemTile}
		d.Tiles = append(d.Tiles, shim, mem)
		ms := newAlloc(mem, 0)
		var wIn, oOut []*BD
		for k := 0; k < d.Cores(); k++ {
			row := target.FirstCore + k
			wFree := mem.lock(fmt.Sprintf("mw%d_%d_free", c, k), Depth)
			wFull := mem.lock(fmt.Sprintf("mw%d_%d_full", c, k), 0)
			oFree := mem.lock(fmt.Sprintf("mo%d_%d_free", c, k), Depth)
			oFull := mem.lock(fmt.Sprintf("mo%d_%d_full", c, k), 0)
			var wb, ob [Depth]*Buffer
			for p := range Depth {
				wb[p] = ms.buffer(fmt.Sprintf("mw%d_%d_%d", c, k, p), piece.Bytes, "i8")
				ob[p] = ms.buffer(fmt.Sprintf("mo%d_%d_%d", c, k, p), 4*R, "f32")
			}
			toCore := mem.channel(MM2S, memToCore0+k)
			outsIn := mem.channel(S2MM, memOutsIn0+k)
			for p := range Depth {
				mem.bd(toCore, &BD{Buf: wb[p], Len: piece.Bytes, Acq: wFull, AcqN: 1, Rel: wFree, RelN: 1})
				mem.bd(outsIn, &BD{Buf: ob[p], Len: 4 * R, Acq: oFree, AcqN: 1, Rel: oFull, RelN: 1})
				wIn = append(wIn, &BD{Buf: wb[p], Len: piece.Bytes, Acq: wFree, AcqN: 1, Rel: wFull, RelN: 1})
				oOut = append(oOut, &BD{Buf: ob[p], Len: 4 * R, Acq: oFull, AcqN: 1, Rel: oFree, RelN: 1})
			}
			core := d.newCore(c, row, stack, []*Func{fInit, fAcc, fOut})
			d.Tiles = append(d.Tiles, core)
			acts.Dsts = append(acts.Dsts, Port{Col: c, Row: row, Dir: S2MM, Ch: coreActs})
			d.Flows = append(d.Flows,
				Flow{Name: fmt.Sprintf("w%d_%d", c, k), Src: Port{c, target.MemRow, MM2S, memToCore0 + k}, Dsts: []Port{{c, row, S2MM, coreWeights}}},
				Flow{Name: fmt.Sprintf("o%d_%d", c, k), Src: Port{c, row, MM2S, coreOuts}, Dsts: []Port{{c, target.MemRow, S2MM, memOutsIn0 + k}}})
		}
		// The weight run arrives piece by piece in core order, the outputs
		// leave a core's rows at a time in core order: the chains visit the
		// cores' buffers in turn, ping then pong.
		wChan := mem.channel(S2MM, memWeightsIn)
		oChan := mem.channel(MM2S, memOutsOut)
		for p := range Depth {
			for k := 0; k < d.Cores(); k++ {
				mem.bd(wChan, wIn[Depth*k+p])
				mem.bd(oChan, oOut[Depth*k+p])
			}
		}
		d.Flows = append(d.Flows,
			Flow{Name: fmt.Sprintf("w%d", c), Src: Port{c, target.ShimRow, MM2S, d.Shim.WeightCh}, Dsts: []Port{{c, target.MemRow, S2MM, memWeightsIn}}},
			Flow{Name: fmt.Sprintf("o%d", c), Src: Port{c, target.MemRow, MM2S, memOutsOut}, Dsts: []Port{{c, target.ShimRow, S2MM, d.Shim.OutCh}}})
	}
	d.Flows = append(d.Flows, acts)
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// newCore returns core (c, row): its buffers, object streams, DMA channels
// and program.
func (d *Design) newCore(c, row, stack int, fns []*Func) *Tile {
	fInit, fAcc, fOut := fns[0], fns[1], fns[2]
	R := d.Rows
	t := &Tile{Col: c, Row: row, Kind: target.Core, Facts: d.Target.CoreTile, Stack: stack}
	a := newAlloc(t, stack)
	obj := func(name string, size int, elem string, input bool, ch int) *Object {
		o := &Object{Name: fmt.Sprintf("%s%d_%d", name, c, row), Input: input}
		o.Free = t.lock(o.Name+"_free", Depth)
		o.Full = t.lock(o.Name+"_full", 0)
		dir := MM2S
		if input {
			dir = S2MM
		}
		cn := t.channel(dir, ch)
		for p := range Depth {
			b := a.buffer(fmt.Sprintf("%s_%d", o.Name, p), size, elem)
			o.Bufs = append(o.Bufs, b)
			if input {
				t.bd(cn, &BD{Buf: b, Len: size, Acq: o.Free, AcqN: 1, Rel: o.Full, RelN: 1})
			} else {
				t.bd(cn, &BD{Buf: b, Len: size, Acq: o.Full, AcqN: 1, Rel: o.Free, RelN: 1})
			}
		}
		t.Objects = append(t.Objects, o)
		return o
	}
	W := obj("w", d.Piece.Bytes, "i8", true, coreWeights)
	A := obj("a", d.Record.Stride, "i32", true, coreActs)
	O := obj("o", 4*R, "f32", false, coreOuts)
	regs := []string{"tiles", "tokens", "blocks", "mine", "b", "i", "t"}
	t.State = a.buffer(fmt.Sprintf("st%d_%d", c, row), 4*(len(regs)+len(t.Objects)), "i32")
	acc := a.buffer(fmt.Sprintf("acc%d_%d", c, row), 4*MaxTokens*R, "f32")

	const (
		rTiles = iota
		rTokens
		rBlocks
		rMine
		rB
		rI
		rT
	)
	mine := lt(Reg(rB), Reg(rMine))
	last := sub(Reg(rTiles), Const(1))
	first := IntArg(eq(Reg(rI), Const(0)))
	t.Program = &Program{
		Regs: regs,
		Body: []Stmt{
			&Call{Fn: fInit},
			&Loop{Var: -1, Body: []Stmt{
				&Acquire{Obj: A},
				&Expect{X: load(A, 0), Want: Magic, Msg: "header magic"},
				&Expect{X: load(A, HdrType), Want: int(d.Type), Msg: "header type"},
				&Expect{X: load(A, HdrT), Want: d.KTile, Msg: "header K-tile"},
				&Expect{X: load(A, HdrRows), Want: R, Msg: "header rows a piece"},
				&Set{Reg: rTiles, X: load(A, HdrTiles)},
				&Set{Reg: rTokens, X: load(A, HdrTokens)},
				&Set{Reg: rBlocks, X: load(A, HdrBlocks)},
				&Set{Reg: rMine, X: load(A, HdrColBlock+c)},
				&Release{Obj: A},
				&Loop{Var: rB, Count: Reg(rBlocks), Body: []Stmt{
					&Loop{Var: rI, Count: Reg(rTiles), Body: []Stmt{
						&If{Cond: mine, Then: []Stmt{&Acquire{Obj: W}}},
						&Loop{Var: rT, Count: Reg(rTokens), Body: []Stmt{
							&Acquire{Obj: A},
							&If{Cond: mine, Then: []Stmt{
								&If{Cond: eq(Reg(rI), last), Then: []Stmt{
									&Acquire{Obj: O},
									&Call{Fn: fOut, Args: []Arg{ObjArg(W), ObjArg(A), BufArg(acc), ObjArg(O), IntArg(Reg(rT)), first}},
									&Release{Obj: O},
								}},
								&If{Cond: lt(Reg(rI), last), Then: []Stmt{
									&Call{Fn: fAcc, Args: []Arg{ObjArg(W), ObjArg(A), BufArg(acc), IntArg(Reg(rT)), first}},
								}},
							}},
							&Release{Obj: A},
						}},
						&If{Cond: mine, Then: []Stmt{&Release{Obj: W}}},
					}},
				}},
			}},
		},
	}
	return t
}

// alloc places buffers in a tile's memory from an address up, each on 64
// bytes.
type alloc struct {
	t    *Tile
	next int
}

func newAlloc(t *Tile, from int) *alloc { return &alloc{t, from} }

func (a *alloc) buffer(name string, size int, elem string) *Buffer {
	b := &Buffer{Name: name, Tile: a.t, Addr: a.next, Size: size, Elem: elem}
	a.next = (a.next + size + 63) &^ 63
	a.t.Buffers = append(a.t.Buffers, b)
	return b
}

func (t *Tile) lock(name string, init int) *Lock {
	l := &Lock{Name: name, Tile: t, ID: len(t.Locks), Init: init}
	t.Locks = append(t.Locks, l)
	return l
}

func (t *Tile) channel(dir Dir, index int) *Channel {
	ch := &Channel{Dir: dir, Index: index, Loop: true}
	t.Channels = append(t.Channels, ch)
	return ch
}

// bd appends b to ch's chain with the lowest BD id of the pool the
// channel may chain that the tile does not use yet.
func (t *Tile) bd(ch *Channel, b *BD) {
	lo, hi := BDPool(t, ch)
	b.ID = hi // Validate reports a pool with no free id
	for id := lo; id < hi; id++ {
		if t.BDByID(id) == nil {
			b.ID = id
			break
		}
	}
	ch.BDs = append(ch.BDs, b)
}

// BDs returns every BD of the tile's channels.
func (t *Tile) BDs() []*BD {
	var all []*BD
	for _, ch := range t.Channels {
		all = append(all, ch.BDs...)
	}
	return all
}

// BDByID returns the tile's BD with id, nil if none.
func (t *Tile) BDByID(id int) *BD {
	for _, b := range t.BDs() {
		if b.ID == id {
			return b
		}
	}
	return nil
}

// BDPool is the BD ids channel ch of t may chain.
func BDPool(t *Tile, ch *Channel) (lo, hi int) {
	if !t.Facts.SplitBDs {
		return 0, t.Facts.BDs
	}
	if ch.Index%2 == 0 {
		return 0, t.Facts.BDs / 2
	}
	return t.Facts.BDs / 2, t.Facts.BDs
}
