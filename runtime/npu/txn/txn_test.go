package txn

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/target"
)

// golden is a word sequence from npu-contract.md section 3, with the ops
// that produced it written out by hand from the mlir-aie test's source.
type golden struct {
	name  string
	h     Header
	ops   []Op
	words string // hex words as the reference prints them
}

func words(t testing.TB, s string) []uint32 {
	t.Helper()
	var w []uint32
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseUint(f, 16, 32)
		if err != nil {
			t.Fatalf("bad golden word %q", f)
		}
		w = append(w, uint32(v))
	}
	return w
}

// The six ops of npu_instgen.mlir shared by sections 3.1 and 3.2.
func instgenOps() []Op {
	data := []uint32{100, 101, 102, 103, 104, 105, 106, 107}
	bw := BlockWrite(Addr(1, 1, 100), data...)
	bw.Col, bw.Row = 1, 1
	return []Op{
		Write32(Addr(3, 4, 0xabc00def), 0x42),
		Write32(0xabc00def, 0x314), // no col/row: the address passes unchanged
		BlockWrite(0x12345679, data...),
		bw,
		MaskWrite(Addr(2, 3, 0x567A), 0x1001, 0xf00ff00f),
		{Code: OpSync, Col: 3, Row: 4, Dir: 1, Channel: 5, ColNum: 1, RowNum: 2},
	}
}

const instgenWords = `
00000000 00000000 06400DEF 00000000 00000042 00000018
00000000 00000000 ABC00DEF 00000000 00000314 00000018
00000001 00000000 12345679 00000030 00000064 00000065 00000066 00000067 00000068 00000069 0000006A 0000006B
00000001 00000101 02100064 00000030 00000064 00000065 00000066 00000067 00000068 00000069 0000006A 0000006B
00000003 00000000 0430567A 00000000 00001001 F00FF00F 0000001C
00000080 00000010 00030401 05010200`

// memtileBD are the words of aiex.npu.writebd in npu_blockwrite_instgen.mlir
// (section 3.4): memtile BD 6 of column 3.
var memtileBD = []uint32{0x00000001, 0x00580002, 0x000C0005, 0x00100007, 0x00000009, 0x00000000, 0x059A000C, 0x84038201}

func goldens() []golden {
	npu1, npu2 := NewHeader(NPU1), NewHeader(NPU2)
	iree := npu1
	iree.NumCols = 5 // iree-amd-aie's npu1_4col streams name the 5 physical columns
	col1 := npu2
	col1.NumCols = 1
	v10 := npu1
	v10.Version = V10
	ops31 := append(instgenOps(), Op{Code: OpLoadPDI, PDIID: 2, PDISize: 1024, PDIAddr: 0xabc12345678})
	ops32 := append(instgenOps(), Op{Code: OpPreempt, Level: 3})
	ops34 := []Op{
		BlockWrite(Addr(3, 1, 0xA0000+6*0x20), memtileBD...),
		Write32(Addr(3, 4, 0xabc00def), 0x42),
		{Code: OpSync, Col: 3, Row: 4, Dir: 1, Channel: 5, ColNum: 1, RowNum: 2},
	}
	var ops35 []Op
	for _, plus := range []uint64{0xFFFFFFFF, 1 << 32, 8<<30 + 0x100, 0x100} {
		ops35 = append(ops35, Patch(0x12340, 0, plus))
	}
	// IREE dma_to_npu.mlir: S2MM %arg0 as BD 1, MM2S %arg1 (offset 16 i32 = 64 bytes) as BD 0.
	bd := ShimBD{Length: 256, D0Wrap: 16, Burst: 2, D1Step: 63, Valid: true}
	bd1 := bd.Words()
	bd.Addr = 0x40
	bd0 := bd.Words()
	ops36 := []Op{
		BlockWrite(ShimBDAddr(0, 1), bd1[:]...),
		Patch(ShimBDAddr(0, 1)+4, 0, 0),
		Write32(QueueAddr(0, S2MM, 0), Push{BD: 1, Token: true}.Word()),
		BlockWrite(ShimBDAddr(0, 0), bd0[:]...),
		Patch(ShimBDAddr(0, 0)+4, 1, 0x40),
		Write32(QueueAddr(0, MM2S, 0), Push{BD: 0}.Word()),
	}
	return []golden{
		{"3.1 npu_instgen (npu1)", npu1, ops31, `06030100 00000104 00000007 000000DC` + instgenWords +
			` 00020008 00000400 12345678 00000ABC`},
		{"3.2 npu2_instgen", npu2, ops32, `06040100 00000108 00000007 000000D0` + instgenWords + ` 00000306`},
		{"3.3 npu2 multiple devices", npu2, []Op{Write32(Addr(2, 2, 0x04040404), 0x04040404)},
			`06040100 00000108 00000001 00000028   00000000 00000000 04240404 00000000 04040404 00000018`},
		{"3.3 npu2_1col header", col1, nil, `06040100 00000101 00000000 00000010`},
		{"3.4 memtile BD v0.1", npu1, ops34, `06030100 00000104 00000003 00000068
			00000001 00000000 061A00C0 00000030   00000001 00580002 000C0005 00100007 00000009 00000000 059A000C 84038201
			00000000 00000000 06400DEF 00000000 00000042 00000018
			00000080 00000010 00030401 05010200`},
		{"3.4 memtile BD v1.0", v10, ops34, `06030001 00000104 00000003 00000058
			00000001 061A00C0 0000002C   00000001 00580002 000C0005 00100007 00000009 00000000 059A000C 84038201
			00000000 06400DEF 00000042
			00000080 00000010 00030401 05010200`},
		{"3.5 64-bit arg_plus", npu2, ops35, `06040100 00000108 00000004 000000D0
			00000081 00000030 00000000 00000000 00000000 00000000 00012340 00000000 00000000 00000000 FFFFFFFF 00000000
			00000081 00000030 00000000 00000000 00000000 00000000 00012340 00000000 00000000 00000000 00000000 00000001
			00000081 00000030 00000000 00000000 00000000 00000000 00012340 00000000 00000000 00000000 00000100 00000002
			00000081 00000030 00000000 00000000 00000000 00000000 00012340 00000000 00000000 00000000 00000100 00000000`},
		{"3.6 IREE dma_to_npu (npu1)", iree, ops36, `06030100 00000105 00000006 00000100
			00000001 00000000 0001D020 00000030
			00000100 00000000 00000000 01000000 8000003F 00000000 00000000 02000000
			00000081 00000030 00000000 00000000 00000000 00000000 0001D024 00000000 00000000 00000000 00000000 00000000
			00000000 00000000 0001D204 00000000 80000001 00000018
			00000001 00000000 0001D000 00000030
			00000100 00000040 00000000 01000000 8000003F 00000000 00000000 02000000
			00000081 00000030 00000000 00000000 00000000 00000000 0001D004 00000000 00000001 00000000 00000040 00000000
			00000000 00000000 0001D214 00000000 00000000 00000018`},
	}
}

// TestGoldens: every golden stream of the reference decodes op for op into
// the ops written from the mlir-aie test's source, and the encoder
// reproduces the stream word for word from those ops.
func TestGoldens(t *testing.T) {
	for _, g := range goldens() {
		want := words(t, g.words)
		got, err := EncodeWords(g.h, g.ops)
		if err != nil {
			t.Fatalf("%s: encode: %v", g.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: encoded\n%s\nwant\n%s", g.name, hexWords(got, " "), hexWords(want, " "))
		}
		s, err := Decode(Bytes(want))
		if err != nil {
			t.Fatalf("%s: decode: %v", g.name, err)
		}
		h := g.h
		h.NumOps, h.Size = uint32(len(g.ops)), uint32(4*len(want))
		if s.Header != h {
			t.Errorf("%s: header %+v, want %+v", g.name, s.Header, h)
		}
		if len(s.Ops) != len(g.ops) {
			t.Fatalf("%s: %d ops, want %d", g.name, len(s.Ops), len(g.ops))
		}
		for i := range g.ops {
			wo := g.ops[i]
			if len(wo.Words) == 0 {
				wo.Words = nil
			}
			if s.Ops[i].Code == OpBlockWrite && len(s.Ops[i].Words) == 0 {
				s.Ops[i].Words = nil
			}
			if !reflect.DeepEqual(s.Ops[i], wo) {
				t.Errorf("%s: op %d decoded %+v, want %+v", g.name, i, s.Ops[i], wo)
			}
		}
		var txt, js bytes.Buffer
		if err := Disasm(&txt, s); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(txt.String(), "\n"); n != len(g.ops)+1 {
			t.Errorf("%s: disassembly has %d lines, want %d:\n%s", g.name, n, len(g.ops)+1, txt.String())
		}
		if err := JSON(&js, s); err != nil {
			t.Fatal(err)
		}
		var back struct {
			Device string           `json:"device"`
			Ops    []map[string]any `json:"ops"`
		}
		if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Device != g.h.DevGen.String() || len(back.Ops) != len(g.ops) {
			t.Errorf("%s: json %s (%v)", g.name, js.String(), err)
		}
	}
}

// TestGoldenFields checks decoded fields that the goldens exist to pin.
func TestGoldenFields(t *testing.T) {
	s, err := Decode(Bytes(words(t, goldens()[7].words)))
	if err != nil {
		t.Fatal(err)
	}
	bd, ok := s.Ops[0].ShimBD()
	if !ok || bd.Length != 256 || bd.D0Wrap != 16 || bd.Burst != 2 || bd.D1Step != 63 || !bd.Valid {
		t.Errorf("IREE BD1: %+v", bd)
	}
	if c, id, w, ok := ShimBDAt(s.Ops[1].Addr); !ok || c != 0 || id != 1 || w != 1 {
		t.Errorf("IREE patch 1 at %#x: bd %d word %d", s.Ops[1].Addr, id, w)
	}
	c, d, ch, ok := QueueAt(s.Ops[2].Addr)
	p, _ := DecodePush(s.Ops[2].Value)
	if !ok || c != 0 || d != S2MM || ch != 0 || p != (Push{BD: 1, Token: true}) {
		t.Errorf("IREE push: col %d dir %d ch %d %+v", c, d, ch, p)
	}
	if c, d, ch, ok := QueueAt(QueueAddr(5, MM2S, 1)); !ok || c != 5 || d != MM2S || ch != 1 {
		t.Errorf("QueueAt(QueueAddr(5, MM2S, 1)) = %d %d %d %v", c, d, ch, ok)
	}
	if col, row, off := SplitAddr(0x06400DEF); col != 3 || row != 4 || off != 0xDEF {
		t.Errorf("SplitAddr: %d %d %#x", col, row, off)
	}
}

// TestShimBDRoundTrip: every field survives Words and DecodeShimBD, and a
// reserved bit is refused.
func TestShimBDRoundTrip(t *testing.T) {
	bd := ShimBD{Length: 0xFFFFFFFF, Addr: 0xFFFF_FFFF_FFFC, EnablePacket: true, OutOfOrderID: 63, PacketID: 31,
		PacketType: 7, Secure: true, D0Wrap: 1023, D0Step: 0xFFFFF, Burst: 3, D1Wrap: 1, D1Step: 2, SMID: 15,
		AxCache: 2, AxQoS: 15, D2Step: 0xABCDE, IterCurrent: 63, IterWrap: 62, IterStep: 7, TLastSupp: true,
		NextBD: 15, UseNextBD: true, Valid: true, LockRelValue: -64, LockRelID: 15, LockAcqEn: true, LockAcqValue: 63, LockAcqID: 9}
	got, err := DecodeShimBD(bd.Words())
	if err != nil || got != bd {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i, r := range shimReserved {
		if r == 0 {
			continue
		}
		w := bd.Words()
		w[i] |= r & -r
		if _, err := DecodeShimBD(w); err == nil {
			t.Errorf("reserved bit %#x of word %d accepted", r&-r, i)
		}
	}
}

// TestDecodeErrors: each malformation is a FormatError naming the op and
// its byte offset.
func TestDecodeErrors(t *testing.T) {
	good := Bytes(words(t, goldens()[0].words))
	mut := func(word int, v uint32) []byte {
		b := bytes.Clone(good)
		Bytes([]uint32{v})
		copy(b[4*word:], Bytes([]uint32{v}))
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		op   int
		want string
	}{
		{"short", good[:12], -1, "at least the 16-byte header"},
		{"version", mut(0, 0x06030200), -1, "version"},
		{"size past buffer", mut(3, 0x1000), -1, "the buffer holds"},
		{"size not words", mut(3, 0xDA), -1, "multiple of 4"},
		{"too many ops", mut(2, 8), 7, "the stream ends"},
		{"too few ops", mut(2, 6), 6, "after the last"},
		{"write size word", mut(4+5, 0x1C), 0, "size word 5"},
		{"unknown opcode", mut(4, 0x00000077), 0, "unknown opcode"},
		{"unsupported op", mut(4, 0x0000000A), 0, "CREATE_SCRATCHPAD"},
		{"blockwrite size", mut(16+3, 0x4000), 2, "blockwrite: size"},
		{"sync size", mut(4+6+6+12+12+7+1, 0x20), 5, "size word 1"},
	} {
		_, err := Decode(c.b)
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want a FormatError", c.name, err)
			continue
		}
		if fe.Op != c.op || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (op %d), want op %d and %q", c.name, err, fe.Op, c.op, c.want)
		}
	}
}

// FuzzDecode: no input panics the decoder, and whatever decodes re-encodes
// to the same words (up to the bytes the decoder ignores).
func FuzzDecode(f *testing.F) {
	for _, g := range goldens() {
		f.Add(Bytes(words(f, g.words)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		w, err := EncodeWords(s.Header, s.Ops)
		if err != nil {
			t.Fatalf("decoded stream does not re-encode: %v", err)
		}
		s2, err := Decode(Bytes(w))
		if err != nil {
			t.Fatalf("re-encoded stream does not decode: %v", err)
		}
		if !reflect.DeepEqual(s2.Ops, s.Ops) || s2.Header != s.Header {
			t.Fatalf("re-encoded stream decodes differently")
		}
		Disasm(&bytes.Buffer{}, s)
		JSON(&bytes.Buffer{}, s)
	})
}

// TestShimFactsMatchTarget keeps the register map's shim constants equal
// to the one table of target facts.
func TestShimFactsMatchTarget(t *testing.T) {
	for _, tg := range target.All {
		s := tg.ShimTile
		if s.BDs != ShimBDs || s.S2MM != ShimChannels || s.MM2S != ShimChannels {
			t.Errorf("%s shim: %d BDs, %d+%d channels; txn has %d BDs, %d channels a direction", tg.Name, s.BDs, s.S2MM, s.MM2S, ShimBDs, ShimChannels)
		}
		if g := Gen(tg.Gen); g.Columns() != tg.Columns || g.MaxBurst() != tg.MaxBurst {
			t.Errorf("%s: Gen %v has %d columns, burst %d", tg.Name, g, g.Columns(), g.MaxBurst())
		}
	}
}
