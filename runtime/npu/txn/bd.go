package txn

import (
	"fmt"
	"strings"
)

// Shim tile DMA registers, identical on npu1 and npu2 (aie-rt
// xaiemlgbl_params.h and xaie2pgbl_params.h; npu-contract.md 2.1, 2.2).
const (
	ShimBDBase   = 0x1D000 // BD i at ShimBDBase + ShimBDStride*i
	ShimBDStride = 0x20    // 8 words
	ShimBDs      = 16      // BDs per shim tile (target.Tile.BDs of a shim; a test keeps them equal)
	ShimBDWords  = 8
	ShimCtrlBase = 0x1D200 // channel control: + 8*ch, + 0x10 for MM2S
	ShimQueue    = 0x1D204 // task queue (start queue): + 8*ch, + 0x10 for MM2S
	ShimChannels = 2       // per direction (target.Tile's S2MM and MM2S of a shim)
)

// DMA directions as mlir-aie's DMAChannelDir encodes them in a sync op.
const (
	S2MM = 0 // stream to memory: the device writes host memory
	MM2S = 1 // memory to stream: the device reads host memory
)

// ShimBDAddr returns the register address of word 0 of shim BD id in col.
func ShimBDAddr(col, id int) uint32 {
	return Addr(col, 0, ShimBDBase+ShimBDStride*uint32(id))
}

// QueueAddr returns the task-queue register of shim channel ch of col in
// direction dir (S2MM or MM2S).
func QueueAddr(col int, dir, ch uint8) uint32 {
	off := uint32(ShimQueue + 8*uint32(ch))
	if dir == MM2S {
		off += 0x10
	}
	return Addr(col, 0, off)
}

// CtrlAddr returns the control register of shim channel ch of col in
// direction dir.
func CtrlAddr(col int, dir, ch uint8) uint32 {
	off := uint32(ShimCtrlBase + 8*uint32(ch))
	if dir == MM2S {
		off += 0x10
	}
	return Addr(col, 0, off)
}

// Push is a task-queue word: start BD BD, run it Repeat extra times, and
// with Token emit a task-complete token when it finishes.
type Push struct {
	BD     uint8
	Repeat uint8
	Token  bool
}

// Word encodes p: start_bd_id 3:0, repeat_count 23:16, enable_token_issue 31.
func (p Push) Word() uint32 {
	w := uint32(p.BD&15) | uint32(p.Repeat)<<16
	if p.Token {
		w |= 1 << 31
	}
	return w
}

// DecodePush decodes a task-queue word; bits outside the three fields are
// an error.
func DecodePush(w uint32) (Push, error) {
	if w&^(0x8000000F|0xFF<<16) != 0 {
		return Push{}, fmt.Errorf("task-queue word %#08x: bits outside start_bd_id 3:0, repeat_count 23:16, enable_token_issue 31", w)
	}
	return Push{BD: uint8(w & 15), Repeat: uint8(w >> 16), Token: w>>31 != 0}, nil
}

// ShimBD is one shim-tile buffer descriptor, every field as the hardware
// stores it (npu-contract.md 2.1): strides are stride-1, wraps are sizes,
// lengths are in 32-bit words.
type ShimBD struct {
	Length       uint32 // w0: buffer_length, in words
	Addr         uint64 // w1 bits 31:2 and w2 bits 15:0: byte address bits 47:0 (bits 1:0 zero)
	EnablePacket bool   // w2 bit 30
	OutOfOrderID uint8  // w2 29:24
	PacketID     uint8  // w2 23:19
	PacketType   uint8  // w2 18:16
	Secure       bool   // w3 bit 30
	D0Wrap       uint16 // w3 29:20, 0 = dimension unused
	D0Step       uint32 // w3 19:0
	Burst        uint8  // w4 31:30
	D1Wrap       uint16 // w4 29:20
	D1Step       uint32 // w4 19:0
	SMID         uint8  // w5 31:28
	AxCache      uint8  // w5 27:24 (mlir-aie writes 2)
	AxQoS        uint8  // w5 23:20
	D2Step       uint32 // w5 19:0
	IterCurrent  uint8  // w6 31:26
	IterWrap     uint8  // w6 25:20: iterations - 1
	IterStep     uint32 // w6 19:0
	TLastSupp    bool   // w7 bit 31
	NextBD       uint8  // w7 30:27
	UseNextBD    bool   // w7 bit 26
	Valid        bool   // w7 bit 25
	LockRelValue int8   // w7 24:18, 7-bit signed
	LockRelID    uint8  // w7 16:13
	LockAcqEn    bool   // w7 bit 12
	LockAcqValue int8   // w7 11:5, 7-bit signed
	LockAcqID    uint8  // w7 3:0
}

func bit(b bool, n uint) uint32 {
	if b {
		return 1 << n
	}
	return 0
}

// Words encodes the descriptor.
func (d *ShimBD) Words() [ShimBDWords]uint32 {
	return [ShimBDWords]uint32{
		d.Length,
		uint32(d.Addr) &^ 3,
		bit(d.EnablePacket, 30) | uint32(d.OutOfOrderID&63)<<24 | uint32(d.PacketID&31)<<19 |
			uint32(d.PacketType&7)<<16 | uint32(d.Addr>>32)&0xFFFF,
		bit(d.Secure, 30) | uint32(d.D0Wrap&1023)<<20 | d.D0Step&0xFFFFF,
		uint32(d.Burst&3)<<30 | uint32(d.D1Wrap&1023)<<20 | d.D1Step&0xFFFFF,
		uint32(d.SMID&15)<<28 | uint32(d.AxCache&15)<<24 | uint32(d.AxQoS&15)<<20 | d.D2Step&0xFFFFF,
		uint32(d.IterCurrent&63)<<26 | uint32(d.IterWrap&63)<<20 | d.IterStep&0xFFFFF,
		bit(d.TLastSupp, 31) | uint32(d.NextBD&15)<<27 | bit(d.UseNextBD, 26) | bit(d.Valid, 25) |
			uint32(d.LockRelValue)&127<<18 | uint32(d.LockRelID&15)<<13 | bit(d.LockAcqEn, 12) |
			uint32(d.LockAcqValue)&127<<5 | uint32(d.LockAcqID&15),
	}
}

// reserved bits of each BD word: set, they are an error.
var shimReserved = [ShimBDWords]uint32{0, 3, 1 << 31, 1 << 31, 0, 0, 0, 1<<17 | 1<<4}

func sext7(v uint32) int8 { return int8(v<<1) >> 1 }

// DecodeShimBD decodes the eight words of a shim BD; reserved bits that are
// set are an error naming the word.
func DecodeShimBD(w [ShimBDWords]uint32) (ShimBD, error) {
	for i, r := range shimReserved {
		if w[i]&r != 0 {
			return ShimBD{}, fmt.Errorf("shim BD word %d = %#08x: reserved bits %#x set", i, w[i], w[i]&r)
		}
	}
	return ShimBD{
		Length:       w[0],
		Addr:         uint64(w[1]) | uint64(w[2]&0xFFFF)<<32,
		EnablePacket: w[2]>>30&1 != 0, OutOfOrderID: uint8(w[2] >> 24 & 63),
		PacketID: uint8(w[2] >> 19 & 31), PacketType: uint8(w[2] >> 16 & 7),
		Secure: w[3]>>30&1 != 0, D0Wrap: uint16(w[3] >> 20 & 1023), D0Step: w[3] & 0xFFFFF,
		Burst: uint8(w[4] >> 30), D1Wrap: uint16(w[4] >> 20 & 1023), D1Step: w[4] & 0xFFFFF,
		SMID: uint8(w[5] >> 28), AxCache: uint8(w[5] >> 24 & 15), AxQoS: uint8(w[5] >> 20 & 15), D2Step: w[5] & 0xFFFFF,
		IterCurrent: uint8(w[6] >> 26), IterWrap: uint8(w[6] >> 20 & 63), IterStep: w[6] & 0xFFFFF,
		TLastSupp: w[7]>>31 != 0, NextBD: uint8(w[7] >> 27 & 15), UseNextBD: w[7]>>26&1 != 0,
		Valid: w[7]>>25&1 != 0, LockRelValue: sext7(w[7] >> 18 & 127), LockRelID: uint8(w[7] >> 13 & 15),
		LockAcqEn: w[7]>>12&1 != 0, LockAcqValue: sext7(w[7] >> 5 & 127), LockAcqID: uint8(w[7] & 15),
	}, nil
}

// Linear reports whether the BD is a plain contiguous transfer of Length
// words (no dimension sizes: npu-contract.md 2.3).
func (d *ShimBD) Linear() bool { return d.D0Wrap == 0 && d.D1Wrap == 0 }

// Fields returns the descriptor's fields by name, for the disassembler.
func (d *ShimBD) Fields() [][2]string {
	f := func(v any) string { return fmt.Sprint(v) }
	return [][2]string{
		{"buffer_length", f(d.Length)}, {"base_address", fmt.Sprintf("%#x", d.Addr)},
		{"enable_packet", f(d.EnablePacket)}, {"out_of_order_bd_id", f(d.OutOfOrderID)},
		{"packet_id", f(d.PacketID)}, {"packet_type", f(d.PacketType)},
		{"secure_access", f(d.Secure)}, {"d0_wrap", f(d.D0Wrap)}, {"d0_stepsize", f(d.D0Step)},
		{"burst_length", f(d.Burst)}, {"d1_wrap", f(d.D1Wrap)}, {"d1_stepsize", f(d.D1Step)},
		{"smid", f(d.SMID)}, {"axcache", f(d.AxCache)}, {"axqos", f(d.AxQoS)}, {"d2_stepsize", f(d.D2Step)},
		{"iteration_current", f(d.IterCurrent)}, {"iteration_wrap", f(d.IterWrap)},
		{"iteration_stepsize", f(d.IterStep)}, {"tlast_suppress", f(d.TLastSupp)},
		{"next_bd", f(d.NextBD)}, {"use_next_bd", f(d.UseNextBD)}, {"valid_bd", f(d.Valid)},
		{"lock_rel_value", f(d.LockRelValue)}, {"lock_rel_id", f(d.LockRelID)},
		{"lock_acq_enable", f(d.LockAcqEn)}, {"lock_acq_value", f(d.LockAcqValue)}, {"lock_acq_id", f(d.LockAcqID)},
	}
}

// String is the fields as name=value pairs.
func (d *ShimBD) String() string {
	var b strings.Builder
	for i, kv := range d.Fields() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[0] + "=" + kv[1])
	}
	return b.String()
}

// ShimBDAt reports whether register address a is inside a shim BD, and
// which BD and word.
func ShimBDAt(a uint32) (col, id, word int, ok bool) {
	col, row, off := SplitAddr(a)
	if row != 0 || off < ShimBDBase || off >= ShimBDBase+ShimBDs*ShimBDStride || off%4 != 0 {
		return 0, 0, 0, false
	}
	return col, int(off-ShimBDBase) / ShimBDStride, int(off-ShimBDBase) % ShimBDStride / 4, true
}

// QueueAt reports whether register address a is a shim task queue, and
// which channel.
func QueueAt(a uint32) (col int, dir, ch uint8, ok bool) {
	col, row, off := SplitAddr(a)
	if row != 0 || off < ShimQueue || off > ShimQueue+0x18 || (off-ShimQueue)%8 != 0 {
		return 0, 0, 0, false
	}
	k := (off - ShimQueue) / 8 // 0, 1: S2MM ch 0, 1; 2, 3: MM2S ch 0, 1
	return col, uint8(k / 2), uint8(k % 2), true
}
