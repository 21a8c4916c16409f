package xclbin

import (
	"bytes"
	"testing"
)

// FuzzReader feeds arbitrary bytes to NewReader and every section decoder.
// None may panic; a file the reader accepts must survive Marshal and read
// back with the same header fields and sections.
func FuzzReader(f *testing.F) {
	good := genNPU(f)
	f.Add(good)
	f.Add(good[:500])
	empty, _ := (&File{}).Marshal()
	f.Add(empty)
	f.Add(mustMarshalTB(f, NewNPU("gemv_q4_0", [16]byte{9}, nil, 8)))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		file.KernelNames()
		file.Kernels()
		file.Partition()
		file.MemBanks(MemTopology)
		file.MemBanks(GroupTopology)
		file.Connections(Connectivity)
		file.Connections(GroupConnectivity)
		for _, s := range file.Sections { // every decoder on every payload
			ParseIPLayout(s.Data)
			ParseMemTopology(s.Data)
			ParseConnectivity(s.Data)
			ParsePartition(s.Data)
		}
		out, err := file.Marshal()
		if err != nil {
			t.Fatalf("Marshal of an accepted file: %v", err)
		}
		again, err := NewReader(bytes.NewReader(out), int64(len(out)))
		if err != nil {
			t.Fatalf("reading back a marshalled file: %v", err)
		}
		if again.UUID != file.UUID || again.UniqueID != file.UniqueID || again.PlatformVBNV != file.PlatformVBNV ||
			again.DebugBin != file.DebugBin || len(again.Sections) != len(file.Sections) {
			t.Fatalf("header changed in the round trip")
		}
		for i := range file.Sections {
			a, b := file.Sections[i], again.Sections[i]
			if a.Kind != b.Kind || a.Name != b.Name || !bytes.Equal(a.Data, b.Data) {
				t.Fatalf("section %d changed in the round trip", i)
			}
		}
	})
}

// FuzzPartition checks that ParsePartition never panics and that what it
// accepts re-encodes to a payload that parses to the same value.
func FuzzPartition(f *testing.F) {
	f.Add(sectionDataTB(f, genNPU(f), AIEPartition))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePartition(data)
		if err != nil {
			return
		}
		b, err := EncodePartition(p)
		if err != nil {
			return // e.g. an image larger than PDIImageMaxSize
		}
		q, err := ParsePartition(b)
		if err != nil {
			t.Fatalf("re-encoded partition rejected: %v", err)
		}
		b2, err := EncodePartition(q)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("partition encoding not stable (err %v)", err)
		}
	})
}

func mustMarshalTB(t testing.TB, f *File) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sectionDataTB(t testing.TB, b []byte, kind SectionKind) []byte {
	t.Helper()
	s := read(t, b).Section(kind)
	if s == nil {
		t.Fatalf("no %s section", kind)
	}
	return s.Data
}
