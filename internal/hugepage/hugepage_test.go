package hugepage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

func TestAlloc(t *testing.T) {
	for _, size := range []int{1, 4096, 3<<20 + 17} {
		mem, free, err := Alloc(size)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if len(mem) != size || cap(mem) != size {
			t.Errorf("%d bytes: len %d cap %d", size, len(mem), cap(mem))
		}
		if a := uintptr(unsafe.Pointer(&mem[0])) % Size; a != 0 {
			t.Errorf("%d bytes: at %d past a 2 MiB boundary", size, a)
		}
		for i, b := range mem {
			if b != 0 {
				t.Fatalf("%d bytes: byte %d is %d, not zero", size, i, b)
			}
		}
		mem[0], mem[size-1] = 1, 2
		if err := free(); err != nil {
			t.Errorf("%d bytes: free: %v", size, err)
		}
	}
	if mem, free, err := Alloc(0); err != nil || len(mem) != 0 || free() != nil {
		t.Errorf("0 bytes: %v, %d", err, len(mem))
	}
}

func TestShareParse(t *testing.T) {
	smaps := `00400000-00600000 r--s 00000000 fe:00 12 /m.xdna
Size:               2048 kB
Rss:                2048 kB
AnonHugePages:         0 kB
FilePmdMapped:      2048 kB
THPeligible:           0
VmFlags: rd mr me sd hg
00600000-00a00000 rw-p 00000000 00:00 0
Rss:                1024 kB
AnonHugePages:       512 kB
ShmemPmdMapped:        0 kB
00a00000-00b00000 rw-p 00000000 00:00 0
Rss:                 100 kB
AnonHugePages:       100 kB
`
	for _, c := range []struct {
		lo, n          uintptr
		resident, huge int64
		wantErr        bool
	}{
		{0x400000, 0x200000, 2048 << 10, 2048 << 10, false},
		{0x5ff000, 0x2000, 3072 << 10, 2560 << 10, false}, // both of the first two
		{0x700000, 0x1000, 1024 << 10, 512 << 10, false},
		{0xb00000, 0x1000, 0, 0, true}, // held by none
	} {
		r, h, err := share([]byte(smaps), c.lo, c.n)
		if (err != nil) != c.wantErr || r != c.resident || h != c.huge {
			t.Errorf("[%#x, +%#x): resident %d huge %d err %v; want %d %d err %v", c.lo, c.n, r, h, err, c.resident, c.huge, c.wantErr)
		}
	}
	if _, _, err := share([]byte("zz-00400000 r--p\n"), 0x400000, 1); err == nil {
		t.Error("a malformed mapping line: no error")
	}
}

// TestShare reads this process's smaps for memory it has written:
// resident, and on huge pages no more than resident (how much is on huge
// pages is the kernel's choice).
func TestShare(t *testing.T) {
	mem, free, err := Alloc(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	for i := range mem {
		mem[i] = 1
	}
	r, h, err := Share(mem)
	if err != nil {
		t.Fatal(err)
	}
	if r < int64(len(mem)) || h < 0 || h > r {
		t.Errorf("resident %d, on huge pages %d, for %d bytes written", r, h, len(mem))
	}
	t.Logf("resident %d, on huge pages %d", r, h)
}

// TestMapFile maps files on and off page sizes: from a huge-page
// boundary, byte for byte the file, and unmapped by the function returned.
func TestMapFile(t *testing.T) {
	for _, size := range []int{1, 4096, 3<<20 + 17} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i*7 + i>>12)
		}
		path := filepath.Join(t.TempDir(), "m")
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		data, unmap, err := MapFile(int(f.Fd()), int64(size))
		f.Close()
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if a := uintptr(unsafe.Pointer(&data[0])) % Size; a != 0 {
			t.Errorf("%d bytes: mapped %d bytes past a huge-page boundary", size, a)
		}
		if !bytes.Equal(data, want) {
			t.Errorf("%d bytes: the mapping is not the file", size)
		}
		if err := unmap(); err != nil {
			t.Errorf("%d bytes: unmap: %v", size, err)
		}
	}
}
