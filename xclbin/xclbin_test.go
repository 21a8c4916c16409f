package xclbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var le = binary.LittleEndian

// testUUID and testPDI are the fixture inputs. The PDI has an odd length so
// the heap after it needs padding.
var testUUID = [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}

func testPDI() []byte {
	p := make([]byte, 37)
	for i := range p {
		p[i] = byte(3*i + 1)
	}
	return p
}

// genNPU is the fixture generator: an mlir-aie-shaped xclbin for a 4-column
// (XDNA1) design. Fixtures are made here, never committed as binaries.
func genNPU(t testing.TB) []byte {
	t.Helper()
	b, err := NewNPU("", testUUID, testPDI(), 4).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t testing.TB, b []byte) *File {
	t.Helper()
	f, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRoundTrip(t *testing.T) {
	f := NewNPU("", testUUID, testPDI(), 4)
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	n, err := f.WriteTo(&w)
	if err != nil || n != int64(len(b)) || !bytes.Equal(w.Bytes(), b) {
		t.Fatalf("WriteTo: n=%d err=%v, differs from Marshal (%d bytes)", n, err, len(b))
	}
	if b2, _ := NewNPU("", testUUID, testPDI(), 4).Marshal(); !bytes.Equal(b, b2) {
		t.Fatal("two builds of the same xclbin differ")
	}
	g := read(t, b)
	if g.UUID != testUUID || g.SignatureLength != -1 || len(g.Sections) != len(f.Sections) {
		t.Fatalf("read back: uuid %x sig %d %d sections", g.UUID, g.SignatureLength, len(g.Sections))
	}
	for i := range f.Sections {
		if f.Sections[i].Kind != g.Sections[i].Kind || f.Sections[i].Name != g.Sections[i].Name ||
			!bytes.Equal(f.Sections[i].Data, g.Sections[i].Data) {
			t.Errorf("section %d (%s) differs after the round trip", i, f.Sections[i].Kind)
		}
	}
	if b3, err := g.Marshal(); err != nil || !bytes.Equal(b, b3) {
		t.Fatalf("re-marshal of the read file differs (err %v)", err)
	}
}

func TestEmptyFile(t *testing.T) {
	b, err := (&File{}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 496 {
		t.Fatalf("empty xclbin is %d bytes, want sizeof(struct axlf) = 496", len(b))
	}
	if f := read(t, b); len(f.Sections) != 0 || f.HasAIEPartition() {
		t.Fatalf("empty xclbin read back with %d sections", len(f.Sections))
	}
}

// TestHeaderOffsets checks every header field at the byte offset given in
// npu-stack.md section 2.1 (absolute offsets: axlf_header starts at 304).
func TestHeaderOffsets(t *testing.T) {
	f := &File{
		UUID:                [16]byte{0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF},
		UniqueID:            0x1122334455667788,
		TimeStamp:           0x0102030405060708,
		FeatureROMTimeStamp: 0x1112131415161718,
		VersionPatch:        0x2122,
		VersionMajor:        0x23,
		VersionMinor:        0x24,
		Mode:                0x2526,
		ActionMask:          0x2728,
		InterfaceUUID:       [16]byte{0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC, 0xBD, 0xBE, 0xBF},
		PlatformVBNV:        "xilinx:vbnv",
		DebugBin:            "debug.bin",
		Sections: []Section{
			{Kind: PDI, Name: "first", Data: []byte{1, 2, 3}},                 // odd size: next section needs padding
			{Kind: AIEMetadata, Name: "exactly16bytes!!", Data: []byte("{}")}, // name fills all 16 bytes
			{Kind: UserMetadata, Data: nil},
		},
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const h = 304
	checks := []struct {
		name string
		off  int
		got  uint64
		want uint64
	}{
		{"m_signature_length", 8, uint64(le.Uint32(b[8:])), 0xFFFFFFFF},
		{"m_uniqueId", 296, le.Uint64(b[296:]), f.UniqueID},
		{"m_length", h + 0, le.Uint64(b[h:]), uint64(len(b))},
		{"m_timeStamp", h + 8, le.Uint64(b[h+8:]), f.TimeStamp},
		{"m_featureRomTimeStamp", h + 16, le.Uint64(b[h+16:]), f.FeatureROMTimeStamp},
		{"m_versionPatch", h + 24, uint64(le.Uint16(b[h+24:])), uint64(f.VersionPatch)},
		{"m_versionMajor", h + 26, uint64(b[h+26]), uint64(f.VersionMajor)},
		{"m_versionMinor", h + 27, uint64(b[h+27]), uint64(f.VersionMinor)},
		{"m_mode", h + 28, uint64(le.Uint16(b[h+28:])), uint64(f.Mode)},
		{"m_actionMask", h + 30, uint64(le.Uint16(b[h+30:])), uint64(f.ActionMask)},
		{"m_numSections", h + 144, uint64(le.Uint32(b[h+144:])), 3},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s @%d = %#x, want %#x", c.name, c.off, c.got, c.want)
		}
	}
	if string(b[0:8]) != "xclbin2\x00" {
		t.Errorf("magic = %q", b[0:8])
	}
	for i := 12; i < 296; i++ { // reserved[28] @12 and m_keyBlock[256] @40
		if b[i] != 0xFF {
			t.Fatalf("byte %d = %#x, want 0xFF (reserved / key block)", i, b[i])
		}
	}
	if !bytes.Equal(b[h+32:h+48], f.InterfaceUUID[:]) {
		t.Errorf("m_interface_uuid @%d = %x", h+32, b[h+32:h+48])
	}
	if got := string(bytes.TrimRight(b[h+48:h+112], "\x00")); got != f.PlatformVBNV {
		t.Errorf("m_platformVBNV @%d = %q", h+48, got)
	}
	if !bytes.Equal(b[416:432], f.UUID[:]) { // uuid: header + 112 = absolute 416
		t.Errorf("uuid @416 = %x", b[416:432])
	}
	if got := string(bytes.TrimRight(b[h+128:h+144], "\x00")); got != f.DebugBin {
		t.Errorf("m_debug_bin @%d = %q", h+128, got)
	}
	prevEnd := uint64(456 + 3*40)
	for i, s := range f.Sections {
		sh := b[456+40*i:]
		off, size := le.Uint64(sh[24:]), le.Uint64(sh[32:])
		if k := le.Uint32(sh[0:]); k != uint32(s.Kind) {
			t.Errorf("section %d m_sectionKind = %d, want %d", i, k, s.Kind)
		}
		if name := string(bytes.TrimRight(sh[4:20], "\x00")); name != s.Name {
			t.Errorf("section %d m_sectionName = %q, want %q", i, name, s.Name)
		}
		if off%8 != 0 || off < prevEnd || size != uint64(len(s.Data)) {
			t.Errorf("section %d at %d size %d (previous end %d): want 8-aligned, after, size %d", i, off, size, prevEnd, len(s.Data))
		}
		for j := prevEnd; j < off; j++ {
			if b[j] != 0 {
				t.Errorf("padding byte %d = %#x, want 0", j, b[j])
			}
		}
		if !bytes.Equal(b[off:off+size], s.Data) {
			t.Errorf("section %d payload differs", i)
		}
		prevEnd = off + size
	}
	if prevEnd != uint64(len(b)) {
		t.Errorf("file is %d bytes, last section ends at %d", len(b), prevEnd)
	}
	g := read(t, b)
	g.SignatureLength = 0
	for i := range g.Sections { // nil and empty payloads compare equal below
		if len(g.Sections[i].Data) == 0 {
			g.Sections[i].Data = nil
		}
	}
	if !reflect.DeepEqual(f, g) {
		t.Errorf("read back:\n%+v\nwant\n%+v", g, f)
	}
}

func sectionData(t *testing.T, b []byte, kind SectionKind) []byte {
	t.Helper()
	s := read(t, b).Section(kind)
	if s == nil {
		t.Fatalf("no %s section", kind)
	}
	return s.Data
}

// TestNPUSectionLayouts checks the payloads NewNPU writes at the byte offsets
// of the tables in npu-stack.md section 2.3, independently of the decoders.
func TestNPUSectionLayouts(t *testing.T) {
	b := genNPU(t)
	str := func(d []byte, off uint32) string {
		e := bytes.IndexByte(d[off:], 0)
		return string(d[off : int(off)+e])
	}

	// MEM_TOPOLOGY: s32 m_count @0, mem_data (40) @8: m_type @0, m_used @1,
	// m_size @8, m_base_address @16, m_tag @24.
	for _, kind := range []SectionKind{MemTopology, GroupTopology} {
		m := sectionData(t, b, kind)
		if len(m) != 8+2*40 || le.Uint32(m) != 2 {
			t.Fatalf("%s: %d bytes, count %d", kind, len(m), le.Uint32(m))
		}
		for i, want := range []struct {
			size uint64
			tag  string
		}{{0x10000, "HOST"}, {0xc000, "SRAM"}} {
			e := m[8+40*i:]
			if e[0] != 2 || e[1] != 1 || le.Uint64(e[8:]) != want.size || le.Uint64(e[16:]) != 0x4000000 ||
				string(bytes.TrimRight(e[24:40], "\x00")) != want.tag {
				t.Errorf("%s bank %d = % x", kind, i, e[:40])
			}
		}
	}

	// IP_LAYOUT: s32 m_count @0, ip_data (80) @8: m_type @0, properties @4,
	// m_base_address @8, m_name @16.
	ip := sectionData(t, b, IPLayout)
	if len(ip) != 8+80 || le.Uint32(ip) != 1 {
		t.Fatalf("IP_LAYOUT: %d bytes, count %d", len(ip), le.Uint32(ip))
	}
	if le.Uint32(ip[8:]) != 7 || le.Uint32(ip[12:]) != 0x09010001 || le.Uint64(ip[16:]) != ^uint64(0) ||
		string(bytes.TrimRight(ip[24:88], "\x00")) != "MLIR_AIE:MLIRAIE" {
		t.Errorf("IP_LAYOUT entry = % x", ip[8:88])
	}

	// CONNECTIVITY: s32 m_count @0, connection (12) @4: arg_index @0,
	// m_ip_layout_index @4, mem_data_index @8. instr (arg 1) -> SRAM (bank 1),
	// bo0..bo4 (args 3..7) -> HOST (bank 0).
	want := [][3]uint32{{1, 0, 1}, {3, 0, 0}, {4, 0, 0}, {5, 0, 0}, {6, 0, 0}, {7, 0, 0}}
	for _, kind := range []SectionKind{Connectivity, GroupConnectivity} {
		c := sectionData(t, b, kind)
		if len(c) != 4+12*len(want) || le.Uint32(c) != uint32(len(want)) {
			t.Fatalf("%s: %d bytes, count %d", kind, len(c), le.Uint32(c))
		}
		for i, w := range want {
			e := c[4+12*i:]
			if got := [3]uint32{le.Uint32(e), le.Uint32(e[4:]), le.Uint32(e[8:])}; got != w {
				t.Errorf("%s entry %d = %v, want %v", kind, i, got, w)
			}
		}
	}

	// AIE_PARTITION (184-byte header then the heap).
	p := sectionData(t, b, AIEPartition)
	if len(p)%8 != 0 {
		t.Errorf("AIE_PARTITION size %d not a multiple of 8", len(p))
	}
	aligned := func(what string, off uint32) {
		if off%8 != 0 || off < 184 {
			t.Errorf("%s at %d: want an 8-aligned heap offset", what, off)
		}
	}
	if p[0] != 0 || str(p, le.Uint32(p[4:])) != "QoS" || le.Uint32(p[8:]) != 2048 ||
		le.Uint64(p[16:]) != 23423 || le.Uint64(p[24:]) != 12345 || le.Uint32(p[128:]) != 0 {
		t.Errorf("aie_partition header = % x", p[:184])
	}
	aligned("name", le.Uint32(p[4:]))
	// aie_partition_info @32: column_width @0, start_columns @8.
	if le.Uint16(p[32:]) != 4 || le.Uint32(p[40:]) != 1 || le.Uint16(p[le.Uint32(p[44:]):]) != 0 {
		t.Errorf("aie_partition_info = % x", p[32:120])
	}
	aligned("start_columns", le.Uint32(p[44:]))
	// aie_pdi array @120.
	if le.Uint32(p[120:]) != 1 {
		t.Fatalf("aie_pdi count %d", le.Uint32(p[120:]))
	}
	pdiOff := le.Uint32(p[124:])
	aligned("aie_pdi", pdiOff)
	d := p[pdiOff:]
	if !bytes.Equal(d[:16], testUUID[:]) {
		t.Errorf("aie_pdi uuid = %x", d[:16])
	}
	imgN, imgOff := le.Uint32(d[16:]), le.Uint32(d[20:])
	aligned("pdi_image", imgOff)
	if !bytes.Equal(p[imgOff:imgOff+imgN], testPDI()) {
		t.Errorf("pdi_image (%d bytes at %d) differs", imgN, imgOff)
	}
	if le.Uint32(d[24:]) != 1 {
		t.Fatalf("cdo_groups count %d", le.Uint32(d[24:]))
	}
	cdoOff := le.Uint32(d[28:])
	aligned("cdo_groups", cdoOff)
	g := p[cdoOff:]
	if str(p, le.Uint32(g[0:])) != "DPU" || g[4] != 1 || le.Uint64(g[8:]) != 1 {
		t.Errorf("cdo_group = % x", g[:96])
	}
	if n, off := le.Uint32(g[16:]), le.Uint32(g[20:]); n != 1 || le.Uint64(p[off:]) != 0x901 {
		t.Errorf("dpu_kernel_ids: %d at %d", n, off)
	}
	if n, off := le.Uint32(g[24:]), le.Uint32(g[28:]); n != 1 || le.Uint64(p[off:]) != 0xC1 {
		t.Errorf("pre_cdo_groups: %d at %d (8-byte elements, as xclbinutil writes them)", n, off)
	}
}

func TestDecoders(t *testing.T) {
	f := read(t, genNPU(t))
	if !f.HasAIEPartition() {
		t.Fatal("HasAIEPartition = false")
	}
	names, err := f.KernelNames()
	if err != nil || !reflect.DeepEqual(names, []string{"MLIR_AIE"}) {
		t.Fatalf("KernelNames = %q, %v", names, err)
	}
	ks, err := f.Kernels()
	if err != nil {
		t.Fatal(err)
	}
	wantK := []Kernel{{
		Name: "MLIR_AIE", Language: "c", Type: "dpu", Subtype: "1", Functional: "0", DPUKernelID: "0x901",
		Args: NPUArgs(), Instances: []string{"MLIRAIE"},
	}}
	if !reflect.DeepEqual(ks, wantK) {
		t.Errorf("Kernels =\n%+v\nwant\n%+v", ks, wantK)
	}
	if a := ks[0].Args; a[7].Name != "bo4" || a[7].Offset != 0x34 || a[2].Size != 4 {
		t.Errorf("argument table does not match npu-stack.md 2.5: %+v", a)
	}
	p, err := f.Partition()
	if err != nil {
		t.Fatal(err)
	}
	if p.ColumnWidth != 4 || len(p.PDIs) != 1 || !bytes.Equal(p.PDIs[0].Image, testPDI()) ||
		p.PDIs[0].CDOGroups[0].PreCDOGroups[0] != 0xC1 {
		t.Errorf("Partition = %+v", p)
	}
	banks, err := f.MemBanks(GroupTopology)
	if err != nil || len(banks) != 2 || banks[1].Tag != "SRAM" {
		t.Errorf("MemBanks = %+v, %v", banks, err)
	}
	conns, err := f.Connections(Connectivity)
	if err != nil || len(conns) != 6 || conns[0] != (Connection{ArgIndex: 1, MemDataIndex: 1}) {
		t.Errorf("Connections = %+v, %v", conns, err)
	}
	if _, err := (&File{}).KernelNames(); !errors.Is(err, ErrNoSection) {
		t.Errorf("KernelNames without IP_LAYOUT: %v", err)
	}
	// An 8-column (XDNA2) design differs only in column_width.
	p8, err := read(t, mustMarshal(t, NewNPU("gemv", testUUID, nil, 8))).Partition()
	if err != nil || p8.ColumnWidth != 8 || len(p8.PDIs[0].Image) != 0 {
		t.Errorf("8-column partition = %+v, %v", p8, err)
	}
}

func mustMarshal(t *testing.T, f *File) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPartitionRoundTrip(t *testing.T) {
	p := &Partition{
		SchemaVersion: 1, Name: "part", OperationsPerCycle: 4096, ColumnWidth: 8,
		StartColumns: []uint16{0, 8, 16}, KernelCommitID: "abc123",
		PDIs: []PartitionPDI{
			{UUID: [16]byte{1}, Image: []byte{1, 2, 3, 4, 5}, CDOGroups: []CDOGroup{
				{Name: "DPU", Type: CDOPrimary, PDIID: 1, DPUKernelIDs: []uint64{0x901, 0x902}},
				{Name: "PRE", Type: CDOPrePost, PDIID: 2, PreCDOGroups: []uint64{0xC1, 0xC2}},
			}},
			{UUID: [16]byte{2}, Image: []byte{9}},
		},
	}
	b, err := EncodePartition(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParsePartition(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("ParsePartition(EncodePartition(p)) =\n%+v\nwant\n%+v", q, p)
	}
}

// corrupt returns a copy of b with fn applied.
func corrupt(b []byte, fn func(b []byte) []byte) []byte {
	return fn(append([]byte(nil), b...))
}

func TestBadInputs(t *testing.T) {
	good := genNPU(t)
	n := int(le.Uint32(good[448:]))
	secHdr := func(i int) int { return 456 + 40*i }
	cases := []struct {
		name    string
		data    []byte
		size    int64 // 0: len(data)
		wantOff int64 // -1: not a FormatError at a fixed offset
	}{
		{"empty", nil, 0, 0},
		{"truncated header", good[:100], 0, 0},
		{"one byte short of axlf", good[:495], 0, 0},
		{"truncated body", good[:len(good)-1], 0, 304},
		{"bad magic", corrupt(good, func(b []byte) []byte { b[3] = 'X'; return b }), 0, 0},
		{"m_length too small", corrupt(good, func(b []byte) []byte { le.PutUint64(b[304:], 495); return b }), 0, 304},
		{"m_length past end", corrupt(good, func(b []byte) []byte { le.PutUint64(b[304:], uint64(len(b)+1)); return b }), 0, 304},
		{"section count huge", corrupt(good, func(b []byte) []byte { le.PutUint32(b[448:], 0x10001); return b }), 0, 448},
		{"section count max", corrupt(good, func(b []byte) []byte { le.PutUint32(b[448:], 0xFFFFFFFF); return b }), 0, 448},
		{"headers past end", corrupt(good, func(b []byte) []byte { le.PutUint32(b[448:], 0x10000); return b }), 0, 448},
		{"section past end", corrupt(good, func(b []byte) []byte {
			le.PutUint64(b[secHdr(n-1)+32:], le.Uint64(b[secHdr(n-1)+32:])+1)
			return b
		}), 0, int64(secHdr(n-1) + 24)},
		{"overflowing offset", corrupt(good, func(b []byte) []byte {
			le.PutUint64(b[secHdr(2)+24:], ^uint64(0)-7)
			le.PutUint64(b[secHdr(2)+32:], 16)
			return b
		}), 0, int64(secHdr(2) + 24)},
		{"overflowing size", corrupt(good, func(b []byte) []byte { le.PutUint64(b[secHdr(0)+32:], ^uint64(0)); return b }), 0, int64(secHdr(0) + 24)},
		{"section over header", corrupt(good, func(b []byte) []byte { le.PutUint64(b[secHdr(1)+24:], 400); return b }), 0, int64(secHdr(1) + 24)},
		{"overlapping sections", corrupt(good, func(b []byte) []byte {
			le.PutUint64(b[secHdr(1)+24:], le.Uint64(b[secHdr(0)+24:])+8)
			return b
		}), 0, -1},
		{"size larger than the reader", corrupt(good, func(b []byte) []byte { le.PutUint64(b[304:], 1<<40); return b }), 1 << 40, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			size := c.size
			if size == 0 {
				size = int64(len(c.data))
			}
			f, err := NewReader(bytes.NewReader(c.data), size)
			if err == nil {
				t.Fatalf("no error; read %d sections", len(f.Sections))
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "xclbin: ") || strings.Contains(msg, "failed to") {
				t.Errorf("error %q: want an \"xclbin: \" prefix and no \"failed to\"", msg)
			}
			var fe *FormatError
			if c.name == "size larger than the reader" {
				if errors.As(err, &fe) {
					t.Errorf("want an I/O error, got %v", err)
				}
				return
			}
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			if c.wantOff >= 0 && fe.Offset != c.wantOff {
				t.Errorf("offset %d, want %d (%v)", fe.Offset, c.wantOff, err)
			}
		})
	}
}

func TestBadPayloads(t *testing.T) {
	part := sectionData(t, genNPU(t), AIEPartition)
	pdiOff := int(le.Uint32(part[124:]))
	cdoOff := int(le.Uint32(part[pdiOff+28:]))
	cases := []struct {
		name string
		err  error
	}{
		{"ip layout short", ignore(ParseIPLayout([]byte{1, 0}))},
		{"ip layout negative", ignore(ParseIPLayout([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}))},
		{"ip layout count past end", ignore(ParseIPLayout(append([]byte{2, 0, 0, 0}, make([]byte, 4+80)...)))},
		{"mem topology huge", ignore(ParseMemTopology([]byte{0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0}))},
		{"connectivity past end", ignore(ParseConnectivity([]byte{1, 0, 0, 0, 1, 2, 3}))},
		{"partition short", ignore(ParsePartition(part[:183]))},
		{"partition name past end", ignore(ParsePartition(corrupt(part, func(b []byte) []byte { le.PutUint32(b[4:], uint32(len(b))); return b })))},
		{"partition name unterminated", ignore(ParsePartition(corrupt(part, func(b []byte) []byte {
			le.PutUint32(b[4:], uint32(len(b)-1))
			b[len(b)-1] = 'x'
			return b
		})))},
		{"start columns huge", ignore(ParsePartition(corrupt(part, func(b []byte) []byte { le.PutUint32(b[40:], 0xFFFFFFFF); return b })))},
		{"pdi count huge", ignore(ParsePartition(corrupt(part, func(b []byte) []byte { le.PutUint32(b[120:], 0x7FFFFFFF); return b })))},
		{"pdi image overflow", ignore(ParsePartition(corrupt(part, func(b []byte) []byte {
			le.PutUint32(b[pdiOff+16:], 0xFFFFFFFF)
			le.PutUint32(b[pdiOff+20:], 0xFFFFFFFF)
			return b
		})))},
		{"aliased arrays", ignore(ParsePartition(corrupt(part, func(b []byte) []byte {
			// kernel ids cover the whole section, twice: over the byte budget.
			le.PutUint32(b[cdoOff+16:], uint32(len(b)/8))
			le.PutUint32(b[cdoOff+20:], 0)
			le.PutUint32(b[cdoOff+24:], uint32(len(b)/8))
			le.PutUint32(b[cdoOff+28:], 0)
			return b
		})))},
		{"kernels not xml", ignore(ParseKernels([]byte("<project><platform")))},
		{"kernels bad offset", ignore(ParseKernels([]byte(`<project><platform><device><core><kernel name="k"><arg addressQualifier="0" id="0" size="0x8" offset="zz"/></kernel></core></device></platform></project>`)))},
	}
	for _, c := range cases {
		var fe *FormatError
		if !errors.As(c.err, &fe) || fe.Section == "" {
			t.Errorf("%s: got %v, want a section *FormatError", c.name, c.err)
		}
	}
}

func ignore[T any](_ T, err error) error { return err }

func TestWriterRejects(t *testing.T) {
	for name, f := range map[string]*File{
		"long section name": {Sections: []Section{{Kind: PDI, Name: strings.Repeat("n", 17)}}},
		"long VBNV":         {PlatformVBNV: strings.Repeat("v", 65)},
		"long debug bin":    {DebugBin: strings.Repeat("d", 17)},
		"too many sections": {Sections: make([]Section, MaxSections+1)},
	} {
		if _, err := f.Marshal(); err == nil {
			t.Errorf("%s: Marshal accepted it", name)
		}
		if n, err := f.WriteTo(&bytes.Buffer{}); err == nil || n != 0 {
			t.Errorf("%s: WriteTo wrote %d bytes, err %v", name, n, err)
		}
	}
	if _, err := EncodeIPLayout([]IP{{Name: strings.Repeat("k", 64)}}); err == nil {
		t.Error("EncodeIPLayout accepted a 64-byte name (needs its NUL)")
	}
	if _, err := EncodeMemTopology([]MemBank{{Tag: strings.Repeat("t", 16)}}); err == nil {
		t.Error("EncodeMemTopology accepted a 16-byte tag")
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "gemv.xclbin")
	good := genNPU(t)
	if err := os.WriteFile(name, good, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if f.UUID != testUUID || !f.HasAIEPartition() {
		t.Errorf("Open: uuid %x, partition %v", f.UUID, f.HasAIEPartition())
	}
	bad := filepath.Join(dir, "bad.xclbin")
	if err := os.WriteFile(bad, good[:300], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), bad) || !errors.Is(err, ErrFormat) {
		t.Errorf("Open(truncated) = %v, want a format error naming the file", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.xclbin")); err == nil {
		t.Error("Open(missing) succeeded")
	}
}

func TestSectionKindString(t *testing.T) {
	for k, want := range map[SectionKind]string{
		EmbeddedMetadata: "EMBEDDED_METADATA", MemTopology: "MEM_TOPOLOGY", IPLayout: "IP_LAYOUT",
		GroupTopology: "ASK_GROUP_TOPOLOGY", AIEPartition: "AIE_PARTITION", DTBO: "DTBO", 99: "SectionKind(99)",
	} {
		if got := k.String(); got != want {
			t.Errorf("SectionKind(%d).String() = %q, want %q", uint32(k), got, want)
		}
	}
	if PSProperties(1, 0, 0x901) != 0x09010001 {
		t.Errorf("PSProperties(DPU, 0, 0x901) = %#x, want 0x09010001", PSProperties(1, 0, 0x901))
	}
}
