package amdxdna

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/runtime/npu"
)

// The ERT command packet, the contents of a CMD BO (npu-contract.md 4.6;
// amd/xdna-driver amdxdna_ctx.h GENMASKs, XRT ert.h bitfields). Word 0 is
// the header:
//
//	bits  3:0  state: the host writes NEW (1), the driver the final state
//	bits 11:10 extra_cu_masks (CU mask words beyond the first)
//	bits 22:12 count: u32 words after the header, CU masks included
//	bits 27:23 opcode: START_CU 0, CMD_CHAIN 19, START_NPU 20, ...
//	bits 31:28 type: XRT writes ERT_CU (3); the driver ignores it
//
// An ERT_START_CU packet is the header, one CU mask word, then the
// MLIR_AIE kernel's register map: opcode u64 @0x00 (3), the instruction
// BO's xdna_addr u64 @0x08, ninstr u32 @0x10 (words), then the data
// buffers' user VAs as u64 at 0x14, 0x1C, ... An ERT_CMD_CHAIN packet
// carries no CU mask: {u32 command_count, u32 submit_index, u32
// error_index, u32 reserved[3], u64 handles[command_count]}.

// The ERT opcodes this package writes or recognises.
const (
	OpStartCU  = 0
	OpCmdChain = 19
	OpStartNPU = 20 // the ert_npu_data form: the firmware takes the stream for ELF (never write it)
)

// ertCU is the header's type field XRT writes (ERT_CU).
const ertCU = 3

// CmdBOSize is the size of every command BO, as XRT and XNPU use.
const CmdBOSize = 4096

// MaxDataBOs is the most data buffers a START_CU register map carries: the
// firmware's single-command payload is 19 words (aie2_msg_priv.h
// execute_buffer_req), 5 of them opcode, instruction address and count.
const MaxDataBOs = 7

// Chain limits: the driver copies each sub-command into a 4 KiB chain
// buffer as a 52-byte slot header plus its register map
// (MAX_CHAIN_CMDBUF_SIZE, cmd_chain_slot_npu; npu-contract.md 4.6).
const (
	ChainBufSize    = 4096
	ChainSlotHeader = 52
)

// Header is a decoded ERT packet header.
type Header struct {
	State      npu.State
	ExtraMasks int
	Count      int // words after the header
	Opcode     int
	Type       int
}

// Word encodes the header.
func (h Header) Word() uint32 {
	return uint32(h.State)&0xF | uint32(h.ExtraMasks&3)<<10 | uint32(h.Count&0x7FF)<<12 |
		uint32(h.Opcode&0x1F)<<23 | uint32(h.Type&0xF)<<28
}

// ParseHeader decodes a header word.
func ParseHeader(w uint32) Header {
	return Header{State: npu.State(w & 0xF), ExtraMasks: int(w>>10) & 3, Count: int(w>>12) & 0x7FF,
		Opcode: int(w>>23) & 0x1F, Type: int(w >> 28)}
}

// StartCU is one ERT_START_CU command of the MLIR_AIE kernel.
type StartCU struct {
	CUMask uint32   // lowest set bit selects the CU (the PDI's index in CONFIG_CU)
	Opcode uint64   // 3: AIE2_EXEC_BUFFER_KERNEL_OP_TXN
	Instr  uint64   // the instruction BO's xdna_addr
	Words  uint32   // ninstr: the stream's length in 32-bit words
	Data   []uint64 // the data buffers' user VAs, bo0, bo1, ...
}

// RegMapWords is the length of the register map in words.
func (c *StartCU) RegMapWords() int { return 5 + 2*len(c.Data) }

// Size is the packet's size in bytes.
func (c *StartCU) Size() int { return 4 * (2 + c.RegMapWords()) }

// Encode writes the packet, state NEW, into dst and returns its length in
// bytes. dst must hold Size() bytes.
func (c *StartCU) Encode(dst []byte) int {
	n := c.Size()
	dst = dst[:n]
	le := binary.LittleEndian
	le.PutUint32(dst[0:], Header{State: npu.StateNew, Count: 1 + c.RegMapWords(), Opcode: OpStartCU, Type: ertCU}.Word())
	le.PutUint32(dst[4:], c.CUMask)
	le.PutUint64(dst[8:], c.Opcode)
	le.PutUint64(dst[16:], c.Instr)
	le.PutUint32(dst[24:], c.Words)
	for i, a := range c.Data {
		le.PutUint64(dst[28+8*i:], a)
	}
	return n
}

// ErrPacket reports a malformed command packet.
var ErrPacket = errors.New("malformed ERT packet")

// ParseStartCU decodes an ERT_START_CU packet with one CU mask word. The
// register map must be the MLIR_AIE kernel's: 5 + 2n words.
func ParseStartCU(b []byte) (*StartCU, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: %d bytes", ErrPacket, len(b))
	}
	le := binary.LittleEndian
	h := ParseHeader(le.Uint32(b))
	switch {
	case h.Opcode != OpStartCU:
		return nil, fmt.Errorf("%w: opcode %d, not START_CU", ErrPacket, h.Opcode)
	case h.ExtraMasks != 0:
		return nil, fmt.Errorf("%w: %d extra CU mask words (one context has at most %d CUs)", ErrPacket, h.ExtraMasks, MaxCUs)
	case 4*(1+h.Count) > len(b):
		return nil, fmt.Errorf("%w: count %d words past the %d-byte buffer", ErrPacket, h.Count, len(b))
	case h.Count < 6 || (h.Count-6)%2 != 0:
		return nil, fmt.Errorf("%w: count %d: want a CU mask and a register map of 5+2n words", ErrPacket, h.Count)
	}
	c := &StartCU{CUMask: le.Uint32(b[4:]), Opcode: le.Uint64(b[8:]), Instr: le.Uint64(b[16:]), Words: le.Uint32(b[24:])}
	for i := range (h.Count - 6) / 2 {
		c.Data = append(c.Data, le.Uint64(b[28+8*i:]))
	}
	return c, nil
}

// Chain is an ERT_CMD_CHAIN packet: the handles of START_CU command BOs run
// in order as one job.
type Chain struct {
	Handles     []uint32
	SubmitIndex uint32 // written by the driver
	ErrorIndex  uint32 // written by the driver: the sub-command that failed
}

// Size is the packet's size in bytes.
func (c *Chain) Size() int { return 4 + 24 + 8*len(c.Handles) }

// Encode writes the packet, state NEW, into dst (Size() bytes) and returns
// its length.
func (c *Chain) Encode(dst []byte) int {
	n := c.Size()
	dst = dst[:n]
	clear(dst)
	le := binary.LittleEndian
	le.PutUint32(dst[0:], Header{State: npu.StateNew, Count: 6 + 2*len(c.Handles), Opcode: OpCmdChain, Type: ertCU}.Word())
	le.PutUint32(dst[4:], uint32(len(c.Handles)))
	le.PutUint32(dst[8:], c.SubmitIndex)
	le.PutUint32(dst[12:], c.ErrorIndex)
	for i, h := range c.Handles {
		le.PutUint64(dst[28+8*i:], uint64(h))
	}
	return n
}

// ParseChain decodes an ERT_CMD_CHAIN packet.
func ParseChain(b []byte) (*Chain, error) {
	if len(b) < 28 {
		return nil, fmt.Errorf("%w: chain of %d bytes", ErrPacket, len(b))
	}
	le := binary.LittleEndian
	h := ParseHeader(le.Uint32(b))
	n := int(le.Uint32(b[4:]))
	switch {
	case h.Opcode != OpCmdChain:
		return nil, fmt.Errorf("%w: opcode %d, not CMD_CHAIN", ErrPacket, h.Opcode)
	case n < 1 || h.Count != 6+2*n:
		return nil, fmt.Errorf("%w: chain of %d commands with count %d (want 6+2n)", ErrPacket, n, h.Count)
	case 4*(1+h.Count) > len(b):
		return nil, fmt.Errorf("%w: count %d words past the %d-byte buffer", ErrPacket, h.Count, len(b))
	case le.Uint32(b[16:]) != 0 || le.Uint32(b[20:]) != 0 || le.Uint32(b[24:]) != 0:
		return nil, fmt.Errorf("%w: chain reserved words not zero", ErrPacket)
	}
	c := &Chain{SubmitIndex: le.Uint32(b[8:]), ErrorIndex: le.Uint32(b[12:])}
	for i := range n {
		v := le.Uint64(b[28+8*i:])
		if v == 0 || v > 0xFFFFFFFF {
			return nil, fmt.Errorf("%w: chain command %d: handle %#x", ErrPacket, i, v)
		}
		c.Handles = append(c.Handles, uint32(v))
	}
	return c, nil
}

// ChainBytes is what a chain of START_CU commands with these register
// maps takes of the driver's 4 KiB chain buffer.
func ChainBytes(regMapWords ...int) int {
	n := 0
	for _, w := range regMapWords {
		n += ChainSlotHeader + 4*w
	}
	return n
}
