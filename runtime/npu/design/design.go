// Package design is the one physical description of each NPU kernel slot's
// dataflow: the tiles it uses in every column (shim, memory tile, cores),
// every buffer with its address and size in its tile's memory, the locks
// and their initial values, every memory-tile and core DMA channel with its
// chain of buffer descriptors (lengths, access pattern, lock acquires and
// releases), the stream routes between channels, the shim channels the
// host drives, and each core's program: its loop over objects, which lock
// it takes, which kernel function it calls on which buffers.
//
// Three readers take it and nothing else: the emulator (package emu)
// executes it tile by tile, the host (package npu) derives the bytes it
// stages and the TXN streams it submits from it, and the MLIR printer
// (mlir.go) writes it in mlir-aie's physical dialect for aiecc to compile.
// No reader may move or reshape data that the description does not say is
// moved. Every limit comes from package target.
package design

import (
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	"github.com/xdna-go/xdna/target"
)

// Dir is a DMA channel's direction.
type Dir uint8

// The directions, named from the tile's side: S2MM writes the tile's
// memory from a stream, MM2S reads it into a stream.
const (
	S2MM Dir = iota
	MM2S
)

func (d Dir) String() string {
	if d == MM2S {
		return "MM2S"
	}
	return "S2MM"
}

// Port is one DMA channel of one tile.
type Port struct {
	Col, Row int
	Dir      Dir
	Ch       int
}

func (p Port) String() string {
	return fmt.Sprintf("tile (%d,%d) %s %d", p.Col, p.Row, p.Dir, p.Ch)
}

// Flow is a circuit-switched stream route from an MM2S channel to one or
// more S2MM channels (more than one is a broadcast: every word goes to
// every destination, and a destination that cannot take it stalls all).
type Flow struct {
	Name string
	Src  Port
	Dsts []Port
}

// Buffer is a region of a tile's data memory.
type Buffer struct {
	Name string
	Tile *Tile
	Addr int    // byte address in the tile's memory
	Size int    // bytes
	Elem string // element type of its memref: "i8", "i32", "f32"
}

// Elems is the buffer's element count.
func (b *Buffer) Elems() int { return b.Size / ElemBytes(b.Elem) }

// ElemBytes is the size of an element type.
func ElemBytes(elem string) int {
	if elem == "i8" {
		return 1
	}
	return 4
}

// Lock is a semaphore lock of a tile. Acquire n waits until its value is
// at least n and subtracts n; Release n adds n (AIE-ML lock semantics;
// mlir-aie AcquireGreaterEqual / Release).
type Lock struct {
	Name string
	Tile *Tile
	ID   int
	Init int
}

// Dim is one dimension of a BD's access pattern, in 4-byte words.
type Dim struct{ Size, Stride int }

// BD is a buffer descriptor of a memory tile or core: one transfer of Len
// bytes from byte Off of Buf, addressed through Dims (innermost first;
// none: contiguous), with a lock acquired before it starts and one
// released when it ends.
type BD struct {
	ID       int
	Buf      *Buffer
	Off, Len int
	Dims     []Dim
	Acq      *Lock
	AcqN     int
	Rel      *Lock
	RelN     int
}

// Channel is a memory-tile or core DMA channel: its chain of BDs starts
// when the design is loaded; with Loop the last BD is followed by the
// first again, for ever, else the channel stops after the last.
type Channel struct {
	Dir   Dir
	Index int
	BDs   []*BD
	Loop  bool
}

// Object is a double-buffered object stream of a core, seen from its
// program: the core acquires Full to use the next buffer of Bufs (in turn)
// and releases Free when it is done with it; the DMA channel feeding or
// draining it does the opposite.
type Object struct {
	Name  string
	Bufs  []*Buffer
	Full  *Lock // counts buffers ready for the core
	Free  *Lock // counts buffers ready for the DMA
	Input bool  // the DMA fills it (S2MM); else the core fills it
}

// Tile is one tile the design uses.
type Tile struct {
	Col, Row int
	Kind     target.TileKind
	Facts    target.Tile // what a tile of its kind has
	Buffers  []*Buffer
	Locks    []*Lock
	Channels []*Channel
	// Cores only.
	Stack   int // stack bytes, at address 0 of the data memory
	Objects []*Object
	Program *Program
	// State is where the compiled program keeps its registers (Program.Regs,
	// in order) and, after them, the turn of each object (Objects, in order:
	// the index of the buffer it acquired last), one i32 word each. The
	// emulator keeps them in Go; the MLIR core body (mlir.go) loads and
	// stores them here, as mlir-aie's dynamic objectFifo lowering keeps its
	// turns in a buffer of the core.
	State *Buffer
}

func (t *Tile) String() string { return fmt.Sprintf("%s (%d,%d)", t.Kind, t.Col, t.Row) }

// ShimMap is which shim channels and BDs the host's TXN streams drive.
type ShimMap = txn.ShimMap

// Design is the physical dataflow of one kernel slot: a GEMV for weights
// of Type in K-tiles of KTile on Target.
//
// Per dispatch the host sends, and the design consumes, exactly:
//
//	activations (ShimMap.ActCol's MM2S ActCh, broadcast to every core):
//	  one header object (Header, padded to RecordBytes), then for each of
//	  the dispatch's row blocks: for each K-tile: for each token: one
//	  record (gemv.Record of the tile), RecordBytes each
//	weights of column c (its MM2S WeightCh): for each of the column's
//	  row blocks b: for each K-tile i: for each core k: the piece of rows
//	  [b*BlockRows + k*Rows, +Rows) of the column group (zero rows past its
//	  end), PieceBytes each (gemv.Piece)
//	outputs of column c (its S2MM OutCh): for each of its row blocks b:
//	  for each token t: BlockRows f32, row b*BlockRows + j at j
//
// Every core of every column takes every activation object, whether its
// column has rows in the dispatch or not.
type Design struct {
	Target *target.Target
	Type   planar.Type
	KTile  int
	Rows   int // rows of one piece: one core's share of a row block
	// Columns is the design's width: every column of the target (a
	// narrowed design, NewWith, uses columns 0..Columns-1).
	Columns int
	Piece   gemv.Piece
	Record  gemv.Record // of one K-tile
	Tiles   []*Tile     // column-major, shim first
	Flows   []Flow
	Shim    ShimMap
	Funcs   []*Func // the kernel functions the cores call
	// CoreRows is the cores per column the design uses, from row
	// target.FirstCore up (0: every core row of the target).
	CoreRows int
	// Tag names a variant that is not a catalog slot (NewBringUp's
	// "bringup"); it follows the slot name.
	Tag string
}

// Name is the slot's name in the catalog, such as "xdna2-q4_0-k256".
func (d *Design) Name() string {
	if d.Tag != "" {
		return SlotName(d.Target.Name, d.Type, d.KTile) + "-" + d.Tag
	}
	return SlotName(d.Target.Name, d.Type, d.KTile)
}

// SlotName is the catalog name of the slot of a target, type and K-tile.
func SlotName(tgt string, typ planar.Type, kTile int) string {
	return fmt.Sprintf("%s-%s-k%d", tgt, lower(typ.String()), kTile)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Cores is the cores per column.
func (d *Design) Cores() int {
	if d.CoreRows > 0 {
		return d.CoreRows
	}
	return d.Target.CoreRows
}

// BlockRows is the rows of a column one row block covers: a piece per core.
func (d *Design) BlockRows() int { return d.Cores() * d.Rows }

// Blocks is the row blocks of a column group of rows rows.
func (d *Design) Blocks(rows int) int { return (rows + d.BlockRows() - 1) / d.BlockRows() }

// RecordBytes is one activation object: one token's record of one K-tile.
func (d *Design) RecordBytes() int { return d.Record.Stride }

// PieceBytes is one weight object of a core.
func (d *Design) PieceBytes() int { return d.Piece.Bytes }

// Tile returns the design's tile at (col, row), nil if it uses none there.
func (d *Design) Tile(col, row int) *Tile {
	for _, t := range d.Tiles {
		if t.Col == col && t.Row == row {
			return t
		}
	}
	return nil
}

// Func is a kernel function the cores call (compiled from
// kernels/common/gemv.hpp, modelled by package gemv).
type Func struct {
	Name   string
	Params []Param
}

// Param is a kernel function's parameter: a buffer (a memref of Elems
// elements of Elem) or, with Elems 0, an i32.
type Param struct {
	Name  string
	Elem  string
	Elems int
}
