// Package txn encodes and decodes TXN instruction streams: what the NPU's
// management firmware executes from the instruction buffer of every run of
// an mlir-aie kernel (a versioned header, then register writes, block
// writes, shim DMA buffer descriptors, address patches for the buffer
// arguments, queue pushes and sync waits), for both generations: npu1
// (XDNA1, Phoenix / Hawk Point, aie-rt devGen 3) and npu2 (XDNA2, Strix /
// Krackan / Strix Halo, devGen 4).
//
// The format is aie-rt's serialised transaction, version 0.1, as mlir-aie
// emits it (Xilinx/mlir-aie include/aie/Runtime/TxnEncoding.h and
// lib/Targets/AIETargetNPU.cpp; Xilinx/aie-rt driver/src/common/xaie_txn.h);
// the compact version 1.0 is decoded and encoded too. Every fact used here,
// with its source, is in shared/reference/npu-contract.md sections 1 and 2.
//
// Decode is a hostile-input reader: a malformed stream is a *FormatError
// naming the op index and byte offset, never a panic.
package txn

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/target"
)

// Gen is an NPU generation, by the devGen code of the TXN header.
type Gen uint8

// The generations mlir-aie emits (aie-rt XAIE_DEV_GEN_AIE2IPU, _AIE2P).
const (
	NPU1 Gen = 3 // XDNA1: Phoenix, Hawk Point (AIE2 / AIE-ML), 4 columns
	NPU2 Gen = 4 // XDNA2: Strix, Krackan, Strix Halo (AIE2P), 8 columns
)

// GenOf returns the generation of a package target, "xdna1" or "xdna2".
func GenOf(name string) (Gen, error) {
	t, err := target.ByName(name)
	if err != nil {
		return 0, fmt.Errorf("txn: %w", err)
	}
	return Gen(t.Gen), nil
}

func (g Gen) String() string {
	switch g {
	case NPU1:
		return "npu1"
	case NPU2:
		return "npu2"
	}
	return fmt.Sprintf("devgen%d", uint8(g))
}

// Target returns the generation's facts (package target), nil for a
// devGen no target has.
func (g Gen) Target() *target.Target {
	t, _ := target.ByGen(uint8(g))
	return t
}

// Columns is the width of the generation's device model (npu1: 4, npu2: 8;
// 0 for an unknown generation).
func (g Gen) Columns() int {
	if t := g.Target(); t != nil {
		return t.Columns
	}
	return 0
}

// MaxBurst is the largest shim BD burst-length code of the generation:
// npu1 {0: 64 B, 1: 128 B, 2: 256 B}, npu2 adds 3: 512 B (mlir-aie
// AIETargetModel getShimBurstEncodingsAndLengths).
func (g Gen) MaxBurst() uint8 {
	if t := g.Target(); t != nil {
		return t.MaxBurst
	}
	return 0
}

// The array geometry both generations share (aie-rt xaie_lite_hwcfg.h).
const (
	Rows      = 6 // shim, memtile, 4 core rows
	ColShift  = 25
	RowShift  = 20
	OffsetMax = 1 << RowShift
)

// Addr returns the register address of offset in tile (col, row).
func Addr(col, row int, offset uint32) uint32 {
	return uint32(col)<<ColShift | uint32(row)<<RowShift | offset&(OffsetMax-1)
}

// SplitAddr splits a register address into its tile and offset.
func SplitAddr(a uint32) (col, row int, offset uint32) {
	return int(a >> ColShift), int(a >> RowShift & 31), a & (OffsetMax - 1)
}

// Opcode is the low byte of an op's first word.
type Opcode uint8

// The opcodes of the firmware's numbering (aie-rt xaie_txn.h, 2025).
const (
	OpWrite        Opcode = 0
	OpBlockWrite   Opcode = 1
	OpMaskWrite    Opcode = 3
	OpMaskPoll     Opcode = 4
	OpNoop         Opcode = 5
	OpPreempt      Opcode = 6
	OpMaskPollBusy Opcode = 7
	OpLoadPDI      Opcode = 8
	OpSync         Opcode = 0x80 // CUSTOM_OP_TCT: wait for a DMA task-complete token
	OpDDRPatch     Opcode = 0x81 // CUSTOM_OP_DDR_PATCH: bind a buffer argument's address
)

// opNames are the names the decoder prints and --json uses.
var opNames = map[Opcode]string{
	OpWrite: "write32", OpBlockWrite: "blockwrite", OpMaskWrite: "maskwrite",
	OpMaskPoll: "maskpoll", OpMaskPollBusy: "maskpoll_busy", OpNoop: "noop", OpPreempt: "preempt",
	OpLoadPDI: "load_pdi", OpSync: "sync", OpDDRPatch: "ddr_patch",
}

// knownNames names the opcodes that exist but that this package does not
// take, so that the error says which op it met.
var knownNames = map[Opcode]string{
	2: "BLOCKSET", 9: "LOAD_PM_START", 10: "CREATE_SCRATCHPAD", 11: "UPDATE_STATE_TABLE",
	12: "UPDATE_REG", 13: "UPDATE_SCRATCH", 14: "CONFIG_SHIMDMA_BD", 15: "CONFIG_SHIMDMA_DMABUF_BD",
	0x82: "READ_REGS", 0x83: "RECORD_TIMER", 0x84: "MERGE_SYNC",
}

func (o Opcode) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	if n, ok := knownNames[o]; ok {
		return n
	}
	return fmt.Sprintf("opcode %#x", uint8(o))
}

// Version is a TXN format version.
type Version uint8

// The versions: V01 (major 0, minor 1) is what current mlir-aie, IRON and
// every design that ran on hardware emit; V10 (major 1, minor 0) is
// aie-rt's compact "optimized" form, which mlir-aie emitted in 2024.
const (
	V01 Version = iota
	V10
)

// Header is the 16-byte stream header (aie-rt XAie_TxnHeader).
type Header struct {
	Version        Version
	DevGen         Gen
	NumRows        uint8
	NumCols        uint8 // of the device model; any value is accepted (older streams say 5)
	NumMemTileRows uint8
	NumOps         uint32
	Size           uint32 // bytes, header included
}

// NewHeader returns the v0.1 header mlir-aie writes for the whole device of
// generation g; NumOps and Size are filled by Encode.
func NewHeader(g Gen) Header {
	return Header{Version: V01, DevGen: g, NumRows: Rows, NumCols: uint8(g.Columns()), NumMemTileRows: 1}
}

// Op is one operation. Which fields apply depends on Code:
//
//	write32          Addr, Value
//	blockwrite       Addr, Col/Row (word 1, v0.1 only: may be 0), Words
//	maskwrite        Addr, Value, Mask: reg = reg&^Mask | Value&Mask
//	maskpoll(_busy)  Addr, Value, Mask: wait until reg&Mask == Value
//	noop             -
//	preempt          Level
//	load_pdi         PDIID, PDISize, PDIAddr
//	sync             Col, Row, Dir, Channel, ColNum, RowNum
//	ddr_patch        Addr (the BD word to patch), ArgIdx, ArgPlus
type Op struct {
	Code    Opcode
	Addr    uint32
	Value   uint32
	Mask    uint32
	Words   []uint32
	Col     uint8
	Row     uint8
	Level   uint8
	PDIID   uint16
	PDISize uint32
	PDIAddr uint64
	Dir     uint8 // sync: 0 = S2MM (stream to memory), 1 = MM2S
	Channel uint8
	ColNum  uint8
	RowNum  uint8
	ArgIdx  uint64
	ArgPlus uint64
}

// Stream is a decoded instruction stream.
type Stream struct {
	Header Header
	Ops    []Op
	Offs   []int // byte offset of each op, from Decode
}

// Write32 returns a write of value to the register at addr.
func Write32(addr, value uint32) Op { return Op{Code: OpWrite, Addr: addr, Value: value} }

// BlockWrite returns a write of words to consecutive registers from addr.
func BlockWrite(addr uint32, words ...uint32) Op {
	return Op{Code: OpBlockWrite, Addr: addr, Words: words}
}

// MaskWrite returns a read-modify-write of the register at addr.
func MaskWrite(addr, value, mask uint32) Op {
	return Op{Code: OpMaskWrite, Addr: addr, Value: value, Mask: mask}
}

// Sync returns a wait for the task-complete token of channel ch in
// direction dir of tile (col, row), as mlir-aie's dma_wait lowers it
// (row_num = col_num = 1).
func Sync(col, row int, dir, ch uint8) Op {
	return Op{Code: OpSync, Col: uint8(col), Row: uint8(row), Dir: dir, Channel: ch, ColNum: 1, RowNum: 1}
}

// Patch returns an address patch: the firmware writes the device address
// of buffer argument argIdx plus argPlus bytes into the BD word at addr.
func Patch(addr uint32, argIdx int, argPlus uint64) Op {
	return Op{Code: OpDDRPatch, Addr: addr, ArgIdx: uint64(argIdx), ArgPlus: argPlus}
}

// Errors.
var (
	// ErrFormat is matched by every *FormatError.
	ErrFormat = errors.New("malformed TXN stream")
	// ErrUnsupported reports an op the encoder cannot write in a version.
	ErrUnsupported = errors.New("unsupported")
)

// FormatError reports a malformed stream: the op (-1 for the header) and
// the byte offset where the problem lies.
type FormatError struct {
	Op     int
	Offset int
	Msg    string
}

func (e *FormatError) Error() string {
	if e.Op < 0 {
		return fmt.Sprintf("txn header: %s", e.Msg)
	}
	return fmt.Sprintf("txn op %d at byte %d: %s", e.Op, e.Offset, e.Msg)
}

// Is makes a FormatError match ErrFormat.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// sizes of the fixed-length ops, in words.
const (
	writeWords01, writeWords10 = 6, 3
	maskWords01, maskWords10   = 7, 4
	syncWords                  = 4
	patchWords01, patchWords10 = 12, 6
	loadPDIWords               = 4
)

// Words returns the words op occupies in version v.
func (op *Op) words(v Version) (int, error) {
	switch op.Code {
	case OpWrite:
		return pick(v, writeWords01, writeWords10), nil
	case OpBlockWrite:
		return pick(v, 4, 3) + len(op.Words), nil
	case OpMaskWrite, OpMaskPoll, OpMaskPollBusy:
		return pick(v, maskWords01, maskWords10), nil
	case OpSync:
		return syncWords, nil
	case OpDDRPatch:
		return pick(v, patchWords01, patchWords10), nil
	case OpNoop, OpPreempt, OpLoadPDI:
		if v == V10 {
			return 0, fmt.Errorf("txn: %v in a v1.0 stream: %w", op.Code, ErrUnsupported)
		}
		if op.Code == OpLoadPDI {
			return loadPDIWords, nil
		}
		return 1, nil
	}
	return 0, fmt.Errorf("txn: %v: %w", op.Code, ErrUnsupported)
}

func pick(v Version, a, b int) int {
	if v == V10 {
		return b
	}
	return a
}

// Encode returns the stream of h's version, generation and geometry with
// ops, as little-endian bytes; NumOps and Size come from ops.
func Encode(h Header, ops []Op) ([]byte, error) {
	w, err := EncodeWords(h, ops)
	if err != nil {
		return nil, err
	}
	return Bytes(w), nil
}

// Bytes returns words as little-endian bytes.
func Bytes(w []uint32) []byte {
	b := make([]byte, 4*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// EncodeWords is Encode returning words.
func EncodeWords(h Header, ops []Op) ([]uint32, error) {
	n := 4
	for i := range ops {
		k, err := ops[i].words(h.Version)
		if err != nil {
			return nil, fmt.Errorf("op %d: %w", i, err)
		}
		n += k
	}
	w := make([]uint32, 0, n)
	h.NumOps, h.Size = uint32(len(ops)), uint32(4*n)
	w = appendHeader(w, h)
	for i := range ops {
		w = appendOp(w, h.Version, &ops[i])
	}
	return w, nil
}

// AppendWords appends the words of ops in version v to w (no header): for
// builders that write the header last.
func AppendWords(w []uint32, v Version, ops ...Op) ([]uint32, error) {
	for i := range ops {
		if _, err := ops[i].words(v); err != nil {
			return w, err
		}
		w = appendOp(w, v, &ops[i])
	}
	return w, nil
}

// PutHeader writes h into w[0:4] (w holds the whole stream).
func PutHeader(w []uint32, h Header) {
	copy(w[:4], appendHeader(nil, h))
}

func appendHeader(w []uint32, h Header) []uint32 {
	ver := uint32(1) << 8 // major 0, minor 1
	if h.Version == V10 {
		ver = 1
	}
	return append(w,
		ver|uint32(h.DevGen)<<16|uint32(h.NumRows)<<24,
		uint32(h.NumCols)|uint32(h.NumMemTileRows)<<8,
		h.NumOps, h.Size)
}

func appendOp(w []uint32, v Version, op *Op) []uint32 {
	c := uint32(op.Code)
	switch op.Code {
	case OpWrite:
		if v == V10 {
			return append(w, c, op.Addr, op.Value)
		}
		return append(w, c, 0, op.Addr, 0, op.Value, 4*writeWords01)
	case OpBlockWrite:
		if v == V10 {
			w = append(w, c, op.Addr, uint32(12+4*len(op.Words)))
		} else {
			w = append(w, c, uint32(op.Col)|uint32(op.Row)<<8, op.Addr, uint32(16+4*len(op.Words)))
		}
		return append(w, op.Words...)
	case OpMaskWrite, OpMaskPoll, OpMaskPollBusy:
		if v == V10 {
			return append(w, c, op.Addr, op.Value, op.Mask)
		}
		return append(w, c, 0, op.Addr, 0, op.Value, op.Mask, 4*maskWords01)
	case OpNoop:
		return append(w, c)
	case OpPreempt:
		return append(w, c|uint32(op.Level)<<8)
	case OpLoadPDI:
		return append(w, c|uint32(op.PDIID)<<16, op.PDISize, uint32(op.PDIAddr), uint32(op.PDIAddr>>32))
	case OpSync:
		return append(w, c, 4*syncWords,
			uint32(op.Dir)|uint32(op.Row)<<8|uint32(op.Col)<<16,
			uint32(op.RowNum)<<8|uint32(op.ColNum)<<16|uint32(op.Channel)<<24)
	case OpDDRPatch:
		if v == V10 {
			return append(w, c, 4*patchWords10, op.Addr, uint32(op.ArgIdx), uint32(op.ArgPlus), uint32(op.ArgPlus>>32))
		}
		return append(w, c, 4*patchWords01, 0, 0, 0, 0, op.Addr, 0,
			uint32(op.ArgIdx), uint32(op.ArgIdx>>32), uint32(op.ArgPlus), uint32(op.ArgPlus>>32))
	}
	panic("txn: appendOp: " + op.Code.String()) // words() refused it first
}

// MaxOps bounds the ops of a stream the decoder takes (a 64 MiB
// instruction heap holds at most 16 Mi one-word ops).
const MaxOps = 1 << 24

// Decode parses a whole stream from b (little-endian words; b may be
// longer than the header's size, as an instruction buffer is). Every rule
// of npu-contract.md 1.9 is checked: the version, the size (a multiple of
// 4, inside b), each op's size rule and trailing size word, that every op
// ends inside the stream, the op count, and known opcodes.
func Decode(b []byte) (*Stream, error) {
	hdrErr := func(format string, args ...any) (*Stream, error) {
		return nil, &FormatError{Op: -1, Msg: fmt.Sprintf(format, args...)}
	}
	if len(b) < 16 {
		return hdrErr("%d bytes, a stream has at least the 16-byte header", len(b))
	}
	w0, w1 := le(b, 0), le(b, 4)
	var h Header
	switch w0 & 0xffff {
	case 0x0100:
		h.Version = V01
	case 0x0001:
		h.Version = V10
	default:
		return hdrErr("version word %#08x: major %d minor %d, want 0.1 (or 1.0)", w0, w0&0xff, w0>>8&0xff)
	}
	h.DevGen, h.NumRows = Gen(w0>>16), uint8(w0>>24)
	h.NumCols, h.NumMemTileRows = uint8(w1), uint8(w1>>8)
	if w1>>16 != 0 {
		return hdrErr("word 1 %#08x: bits 31:16 are padding, not zero", w1)
	}
	h.NumOps, h.Size = le(b, 8), le(b, 12)
	switch {
	case h.Size%4 != 0 || h.Size < 16:
		return hdrErr("size %d bytes: want a multiple of 4, at least 16", h.Size)
	case int64(h.Size) > int64(len(b)):
		return hdrErr("size %d bytes, the buffer holds %d", h.Size, len(b))
	case h.NumOps > MaxOps || h.NumOps > (h.Size-16)/4:
		return hdrErr("%d ops cannot fit in %d bytes", h.NumOps, h.Size)
	}
	s := &Stream{Header: h, Ops: make([]Op, 0, h.NumOps), Offs: make([]int, 0, h.NumOps)}
	end := int(h.Size)
	off := 16
	for i := 0; i < int(h.NumOps); i++ {
		if off >= end {
			return nil, &FormatError{Op: i, Offset: off, Msg: fmt.Sprintf("the stream ends (at %d bytes) after %d of %d ops", end, i, h.NumOps)}
		}
		op, n, err := decodeOp(b[off:end], h.Version)
		if err != nil {
			return nil, &FormatError{Op: i, Offset: off, Msg: err.Error()}
		}
		s.Ops = append(s.Ops, op)
		s.Offs = append(s.Offs, off)
		off += n
	}
	if off != end {
		return nil, &FormatError{Op: int(h.NumOps), Offset: off, Msg: fmt.Sprintf("%d bytes after the last of %d ops (size %d)", end-off, h.NumOps, end)}
	}
	return s, nil
}

func le(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// decodeOp decodes the op at the start of b (b ends where the stream
// does) and returns its size in bytes.
func decodeOp(b []byte, v Version) (Op, int, error) {
	nw := len(b) / 4
	word := func(i int) uint32 { return le(b, 4*i) }
	need := func(n int, what string) error {
		if n > nw {
			return fmt.Errorf("%s needs %d words, %d remain", what, n, nw)
		}
		return nil
	}
	w0 := word(0)
	op := Op{Code: Opcode(w0)}
	sizeWord := func(i int, want uint32) error {
		if got := word(i); got != want {
			return fmt.Errorf("%v: size word %d is %d, want %d", op.Code, i, got, want)
		}
		return nil
	}
	zero := func(i int, what string) error {
		if word(i) != 0 {
			return fmt.Errorf("%v: word %d (%s) is %#x, want 0", op.Code, i, what, word(i))
		}
		return nil
	}
	switch op.Code {
	case OpWrite:
		if v == V10 {
			if err := need(writeWords10, "write32"); err != nil {
				return op, 0, err
			}
			op.Addr, op.Value = word(1), word(2)
			return op, 4 * writeWords10, nil
		}
		if err := need(writeWords01, "write32"); err != nil {
			return op, 0, err
		}
		if err := sizeWord(5, 4*writeWords01); err != nil {
			return op, 0, err
		}
		if err := zero(3, "address bits 63:32"); err != nil {
			return op, 0, err
		}
		op.Addr, op.Value = word(2), word(4)
		return op, 4 * writeWords01, nil
	case OpBlockWrite:
		hw, sz := 4, 3
		if v == V10 {
			hw, sz = 3, 2
		}
		if err := need(hw, "blockwrite"); err != nil {
			return op, 0, err
		}
		size := word(sz)
		if size%4 != 0 || size < uint32(4*hw+4) || size > uint32(len(b)) {
			return op, 0, fmt.Errorf("blockwrite: size %d bytes: want a multiple of 4, at least %d, at most the %d bytes that remain", size, 4*hw+4, len(b))
		}
		if v == V10 {
			op.Addr = word(1)
		} else {
			cr := word(1)
			if cr>>16 != 0 {
				return op, 0, fmt.Errorf("blockwrite: word 1 %#x: bits 31:16 not zero", cr)
			}
			op.Col, op.Row, op.Addr = uint8(cr), uint8(cr>>8), word(2)
		}
		n := int(size)/4 - hw
		op.Words = make([]uint32, n)
		for i := range op.Words {
			op.Words[i] = word(hw + i)
		}
		return op, int(size), nil
	case OpMaskWrite, OpMaskPoll, OpMaskPollBusy:
		if v == V10 {
			if err := need(maskWords10, op.Code.String()); err != nil {
				return op, 0, err
			}
			op.Addr, op.Value, op.Mask = word(1), word(2), word(3)
			return op, 4 * maskWords10, nil
		}
		if err := need(maskWords01, op.Code.String()); err != nil {
			return op, 0, err
		}
		if err := sizeWord(6, 4*maskWords01); err != nil {
			return op, 0, err
		}
		if err := zero(3, "address bits 63:32"); err != nil {
			return op, 0, err
		}
		op.Addr, op.Value, op.Mask = word(2), word(4), word(5)
		return op, 4 * maskWords01, nil
	case OpNoop, OpPreempt, OpLoadPDI:
		if v == V10 {
			return op, 0, fmt.Errorf("%v has no v1.0 form", op.Code)
		}
		switch op.Code {
		case OpNoop:
			if w0>>8 != 0 {
				return op, 0, fmt.Errorf("noop: word 0 %#x: bits 31:8 not zero", w0)
			}
			return op, 4, nil
		case OpPreempt:
			op.Level = uint8(w0 >> 8)
			if w0>>16 != 0 || op.Level > 3 {
				return op, 0, fmt.Errorf("preempt: word 0 %#x: level %d (want 0..3), bits 31:16 not zero", w0, op.Level)
			}
			return op, 4, nil
		}
		if err := need(loadPDIWords, "load_pdi"); err != nil {
			return op, 0, err
		}
		op.PDIID = uint16(w0 >> 16)
		op.PDISize = word(1)
		op.PDIAddr = uint64(word(2)) | uint64(word(3))<<32
		return op, 4 * loadPDIWords, nil
	case OpSync:
		if err := need(syncWords, "sync"); err != nil {
			return op, 0, err
		}
		if err := sizeWord(1, 4*syncWords); err != nil {
			return op, 0, err
		}
		w2, w3 := word(2), word(3)
		if w2>>24 != 0 || w3&0xff != 0 {
			return op, 0, fmt.Errorf("sync: words 2, 3 = %#x, %#x: reserved bits (2: 31:24, 3: 7:0) not zero", w2, w3)
		}
		op.Dir, op.Row, op.Col = uint8(w2), uint8(w2>>8), uint8(w2>>16)
		op.RowNum, op.ColNum, op.Channel = uint8(w3>>8), uint8(w3>>16), uint8(w3>>24)
		return op, 4 * syncWords, nil
	case OpDDRPatch:
		if v == V10 {
			if err := need(patchWords10, "ddr_patch"); err != nil {
				return op, 0, err
			}
			if err := sizeWord(1, 4*patchWords10); err != nil {
				return op, 0, err
			}
			op.Addr, op.ArgIdx = word(2), uint64(word(3)&0xff)
			if word(3)>>8 != 0 {
				return op, 0, fmt.Errorf("ddr_patch: argument index word %#x: bits 31:8 are padding", word(3))
			}
			op.ArgPlus = uint64(word(4)) | uint64(word(5))<<32
			return op, 4 * patchWords10, nil
		}
		if err := need(patchWords01, "ddr_patch"); err != nil {
			return op, 0, err
		}
		if err := sizeWord(1, 4*patchWords01); err != nil {
			return op, 0, err
		}
		for _, z := range []struct {
			i    int
			what string
		}{{2, "op_base.type"}, {3, "op_base.size"}, {4, "action (0 = patch)"}, {5, "padding"}, {7, "register address bits 63:32"}} {
			if err := zero(z.i, z.what); err != nil {
				return op, 0, err
			}
		}
		op.Addr = word(6)
		op.ArgIdx = uint64(word(8)) | uint64(word(9))<<32
		op.ArgPlus = uint64(word(10)) | uint64(word(11))<<32
		return op, 4 * patchWords01, nil
	}
	if n, ok := knownNames[op.Code]; ok {
		return op, 0, fmt.Errorf("op %s (%d) is not supported", n, uint8(op.Code))
	}
	return op, 0, fmt.Errorf("unknown opcode %#x (word %#08x)", uint8(op.Code), w0)
}

// Name is the op's name as the decoder prints it ("write32", "sync", ...).
func (op *Op) Name() string { return op.Code.String() }
