package layout

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestBlobBuf checks BlobBuf's alignment and capacity on the sizes around
// BlobAlign.
func TestBlobBuf(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 100000} {
		b := BlobBuf(n)
		if len(b) != n || int64(cap(b)) != alignUp(int64(n), BlobAlign) {
			t.Errorf("BlobBuf(%d): len %d cap %d", n, len(b), cap(b))
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%BlobAlign != 0 {
			t.Errorf("BlobBuf(%d) at %#x, not %d-aligned", n, p, BlobAlign)
		}
	}
}

// TestWriterSpliceBytes reserves room for blobs and writes them at once
// from several goroutines, some in BlobBuf buffers with stale bytes past
// their length, some in plain slices, through splice and with pwrite, with
// the file preallocated and a background write-back after every write or
// not, and wants the same file, checksums that Verify accepts, and the
// stale bytes not in it.
func TestWriterSpliceBytes(t *testing.T) {
	sizes := []int{1, 4095, 4096, 4097, 0, 10000, 3 * 4096, 65537, 3<<20 + 5}
	rng := rand.New(rand.NewPCG(1, 2))
	blobs := make([][]byte, len(sizes))
	for i, n := range sizes {
		blobs[i] = make([]byte, n)
		for k := range blobs[i] {
			blobs[i][k] = byte(rng.Uint32()) | 1 // no zero bytes, so padding shows
		}
	}
	write := func(splice, prealloc bool) []byte {
		saved, savedEvery, savedFlush := noSplice, syncEvery, flushEvery
		noSplice = !splice
		if prealloc {
			syncEvery, flushEvery = 1, 2 // a write-back after every write, a sync after every other one
		}
		defer func() { noSplice, syncEvery, flushEvery = saved, savedEvery, savedFlush }()
		p := filepath.Join(t.TempDir(), "d.xdna")
		w, err := Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		m := &Manifest{Format: "xdna", Version: ManifestVersion, Creator: "test", Package: Package{Target: "xdna1", Columns: 4}, Model: Params{Arch: "llama"}}
		offs := make([]int64, len(blobs))
		bufs := make([][]byte, len(blobs))
		for i, src := range blobs {
			b := src
			if i%2 == 0 {
				b = BlobBuf(len(src))
				full := b[:cap(b)]
				for k := range full {
					full[k] = 0xee // stale bytes from an earlier blob
				}
				copy(b, src)
			}
			if offs[i], err = w.Reserve(int64(len(b))); err != nil {
				t.Fatal(err)
			}
			bufs[i] = b
			if len(src) > 0 { // a manifest entry needs a shape
				m.Tensors = append(m.Tensors, TensorEntry{Name: "t" + string(rune('a'+i)), Shape: []int{len(src)}, Type: "I8", Format: FormatRaw,
					BlobRef: BlobRef{Offset: offs[i], Size: int64(len(src)), CRC32C: Checksum(src)}, Device: "cpu", Reason: "test"})
			}
		}
		if prealloc {
			if err := w.Preallocate(); err != nil {
				t.Fatal(err)
			}
		}
		// The reserved blobs written at once, last first.
		var wg sync.WaitGroup
		errs := make([]error, len(blobs))
		for i := len(blobs) - 1; i >= 0; i-- {
			wg.Go(func() { errs[i] = w.WriteBlobAt(bufs[i], offs[i]) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if splice && w.noSplice.Load() {
			t.Logf("%s: the file system refuses splice; only the pwrite path is tested", p)
		}
		if err := w.Commit(m); err != nil {
			t.Fatal(err)
		}
		f, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if errs := f.Verify(); len(errs) > 0 {
			t.Fatal(errs)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range f.Manifest.Tensors {
			var src []byte
			for _, s := range blobs {
				if len(s) == int(e.Size) {
					src = s
				}
			}
			if !bytes.Equal(f.Bytes(e.BlobRef), src) {
				t.Errorf("splice %v: tensor %s differs", splice, e.Name)
			}
			end := e.Offset + e.Size
			if pad := b[end:alignUp(end, BlobAlign)]; bytes.Count(pad, []byte{0}) != len(pad) {
				t.Errorf("splice %v: the padding after tensor %s is not zeros", splice, e.Name)
			}
		}
		return b
	}
	a := write(true, false)
	for _, v := range []struct{ splice, prealloc bool }{{false, false}, {true, true}, {false, true}} {
		if b := write(v.splice, v.prealloc); !bytes.Equal(a, b) {
			t.Fatalf("splice gave %d bytes, splice %v preallocated %v %d, or other bytes", len(a), v.splice, v.prealloc, len(b))
		}
	}
}

// TestMapShared maps files on and off page sizes: from a huge-page
// boundary, byte for byte the file, and unmapped by the function returned.
func TestMapShared(t *testing.T) {
	for _, size := range []int{HeaderSize, 4096, 3<<20 + 17} {
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
		data, unmap, err := mapShared(int(f.Fd()), int64(size))
		f.Close()
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if a := uintptr(unsafe.Pointer(&data[0])) % hugePage; a != 0 {
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

// TestCommitDropsCache: a committed file is on the disk and none of it is
// left in the page cache (dropCached), so that its next reader reads it
// into the folios a huge-page mapping can map. Where the file system is
// memory (tmpfs), its pages are the file, and the test says so and skips.
func TestCommitDropsCache(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		t.Skipf("%s is in memory (tmpfs): its pages cannot be dropped", dir)
	}
	path := filepath.Join(dir, "c.xdna")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, 3<<20)
	for i := range blob {
		blob[i] = byte(i)
	}
	ref, err := w.AddBlob(blob)
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Format: "xdna", Version: ManifestVersion, Creator: "test",
		Package: Package{Target: "xdna1", Columns: 4, CPUMaxN: 256}, Model: Params{Arch: "llama"},
		Tensors: []TensorEntry{{Name: "output_norm.weight", Shape: []int{len(blob) / 4}, Type: "F32", Format: FormatRaw, BlobRef: ref, Device: "cpu", Reason: "1-D"}}}
	if err := w.Commit(m); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	vec := make([]byte, (len(data)+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal("mincore:", e)
	}
	cached := 0
	for _, v := range vec {
		cached += int(v & 1)
	}
	if cached > 0 {
		t.Errorf("%d of %d pages of the committed file are in the page cache", cached, len(vec))
	}
	// And the file is whole: read back through the cache it was dropped from.
	xf, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer xf.Close()
	if errs := xf.Verify(); len(errs) > 0 || !bytes.Equal(xf.Bytes(ref), blob) {
		t.Errorf("read back: %v", errs)
	}
}
