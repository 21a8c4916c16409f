package amdxdna

import (
	"encoding/binary"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu"
)

func words(b []byte) []uint32 {
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// TestStartCUPacket encodes the reference's worked example (npu-contract.md
// 4.6: 3 data BOs, CU 0, instruction BO at 0x04028000) word for word, the
// derived 5-BO header, and decodes it back.
func TestStartCUPacket(t *testing.T) {
	p := StartCU{CUMask: 1, Opcode: 3, Instr: 0x04028000, Words: 320,
		Data: []uint64{0x7f0012345000, 0x7f0023456000, 0x7f0034567000}}
	b := make([]byte, CmdBOSize)
	if n := p.Encode(b); n != 13*4 {
		t.Fatalf("%d bytes, want 52", n)
	}
	want := []uint32{0x3000C001, 0x00000001, 3, 0, 0x04028000, 0, 320,
		0x12345000, 0x7f00, 0x23456000, 0x7f00, 0x34567000, 0x7f00}
	got := words(b[:52])
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("word %d = %#x, want %#x", i, got[i], want[i])
		}
	}
	// Register map offsets from the start of the map (word 2): opcode
	// 0x00, instruction 0x08, ninstr 0x10, buffers at 0x14, 0x1C, 0x24.
	rm := b[8:]
	if binary.LittleEndian.Uint64(rm[0x14:]) != p.Data[0] || binary.LittleEndian.Uint64(rm[0x24:]) != p.Data[2] ||
		binary.LittleEndian.Uint32(rm[0x10:]) != 320 || binary.LittleEndian.Uint64(rm[0x08:]) != 0x04028000 {
		t.Error("register map offsets")
	}
	q, err := ParseStartCU(b)
	if err != nil {
		t.Fatal(err)
	}
	if q.CUMask != 1 || q.Opcode != 3 || q.Instr != p.Instr || q.Words != 320 || len(q.Data) != 3 || q.Data[1] != p.Data[1] {
		t.Errorf("round trip: %+v", q)
	}
	p.Data = append(p.Data, 1, 2)
	p.Encode(b)
	if w := binary.LittleEndian.Uint32(b); w != 0x30010001 {
		t.Errorf("5 BOs: header %#x, want 0x30010001", w)
	}
	h := ParseHeader(0x3000C001)
	if h != (Header{State: npu.StateNew, Count: 12, Opcode: OpStartCU, Type: 3}) {
		t.Errorf("ParseHeader(0x3000C001) = %+v", h)
	}
	for _, bad := range []uint32{0x3000C001 | OpStartNPU<<23, 0x30005001} { // another opcode; a count of 5 words
		binary.LittleEndian.PutUint32(b, bad)
		if _, err := ParseStartCU(b); err == nil {
			t.Errorf("header %#x parsed", bad)
		}
	}
}

// TestChainPacket encodes an ERT_CMD_CHAIN of two commands: header NEW,
// count 6+2n, opcode 19; payload {count, submit_index, error_index,
// reserved[3], u64 handles} (npu-contract.md 4.6). The type nibble is
// ERT_CU as on START_CU (the driver ignores it).
func TestChainPacket(t *testing.T) {
	c := Chain{Handles: []uint32{7, 9}}
	b := make([]byte, CmdBOSize)
	if n := c.Encode(b); n != 44 {
		t.Fatalf("%d bytes, want 44", n)
	}
	want := []uint32{0x3980A001, 2, 0, 0, 0, 0, 0, 7, 0, 9, 0}
	got := words(b[:44])
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("word %d = %#x, want %#x", i, got[i], want[i])
		}
	}
	d, err := ParseChain(b)
	if err != nil || len(d.Handles) != 2 || d.Handles[1] != 9 {
		t.Fatalf("round trip: %+v %v", d, err)
	}
	binary.LittleEndian.PutUint32(b[20:], 1)
	if _, err := ParseChain(b); err == nil {
		t.Error("reserved word set: parsed")
	}
	// What fits the driver's 4 KiB chain buffer (npu-contract.md 4.6,
	// derived): 42 START_CU of 3 buffers, 36 of 5.
	three, five := make([]int, 43), make([]int, 37)
	for i := range three {
		three[i] = 5 + 2*3
	}
	for i := range five {
		five[i] = 5 + 2*5
	}
	if ChainBytes(three[:42]...) > ChainBufSize || ChainBytes(three...) <= ChainBufSize ||
		ChainBytes(five[:36]...) > ChainBufSize || ChainBytes(five...) <= ChainBufSize {
		t.Errorf("chain budget: 42x3 %d, 43x3 %d, 36x5 %d, 37x5 %d bytes", ChainBytes(three[:42]...), ChainBytes(three...),
			ChainBytes(five[:36]...), ChainBytes(five...))
	}
}

// FuzzPackets: the packet decoders (which the fake driver runs on what a
// caller submits) never panic, and what they accept re-encodes to the
// same register map or handle list.
func FuzzPackets(f *testing.F) {
	b := make([]byte, 64)
	(&StartCU{CUMask: 1, Opcode: 3, Instr: 0x4028000, Words: 9, Data: []uint64{1, 2, 3}}).Encode(b)
	f.Add(b)
	c := make([]byte, 64)
	(&Chain{Handles: []uint32{4, 5}}).Encode(c)
	f.Add(c)
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := ParseStartCU(b); err == nil {
			out := make([]byte, p.Size())
			p.Encode(out)
			if string(out[4:]) != string(b[4:p.Size()]) {
				t.Fatalf("START_CU %x re-encodes to %x", b[:p.Size()], out)
			}
		}
		if ch, err := ParseChain(b); err == nil {
			out := make([]byte, ch.Size())
			ch.Encode(out)
			if string(out[28:]) != string(b[28:ch.Size()]) || binary.LittleEndian.Uint32(out[4:]) != binary.LittleEndian.Uint32(b[4:]) {
				t.Fatalf("chain %x re-encodes to %x", b[:ch.Size()], out)
			}
		}
	})
}
