package layout

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/internal/hugepage"
)

// sizesWriter records the size of every write and keeps the bytes.
type sizesWriter struct {
	bytes.Buffer
	sizes []int
	fail  int // the write that fails (1-based), 0 for none
}

func (w *sizesWriter) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	if len(w.sizes) == w.fail {
		return 0, errors.New("disk full")
	}
	return w.Buffer.Write(p)
}

// TestChunkWriter: whatever the sizes written to it, the writer below sees
// whole 2 MiB chunks but the last, and the same bytes; an error of the
// writer below is returned, by the write that met it or by the flush.
func TestChunkWriter(t *testing.T) {
	src := make([]byte, 3*hugepage.Size+12345)
	for i := range src {
		src[i] = byte(i*31 + i>>16)
	}
	for _, pieces := range [][]int{{64, 5 << 20}, {1}, {hugepage.Size}, {hugepage.Size - 1, 1, 7}, {len(src)}} {
		var sw sizesWriter
		w, flush := ChunkWriter(&sw)
		off := 0
		for i := 0; off < len(src); i++ {
			n := min(pieces[i%len(pieces)], len(src)-off)
			if k, err := w.Write(src[off : off+n]); k != n || err != nil {
				t.Fatalf("pieces %v: Write(%d) = %d, %v", pieces, n, k, err)
			}
			off += n
		}
		if err := flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sw.Bytes(), src) {
			t.Errorf("pieces %v: the bytes differ", pieces)
		}
		for i, n := range sw.sizes {
			if i < len(sw.sizes)-1 && n != hugepage.Size || n == 0 {
				t.Errorf("pieces %v: write %d of %d is %d bytes", pieces, i+1, len(sw.sizes), n)
			}
		}
	}
	sw := sizesWriter{fail: 2}
	w, flush := ChunkWriter(&sw)
	if _, err := w.Write(src); err == nil {
		t.Error("a failed write below: no error from Write")
	}
	if err := flush(); err == nil {
		t.Error("a failed write below: no error from the flush")
	}
}

// TestCommitDropsCache: a committed file is on the disk and none of it is
// left in the page cache (dropCached), so that its next reader reads it
// into the folios a huge-page mapping can map. Where the file system keeps
// what POSIX_FADV_DONTNEED asks it to drop (tmpfs, whose pages are the
// file; ZFS, whose cache is its own), a plain file shows it first, and the
// test says so and skips.
func TestCommitDropsCache(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(plain); err != nil {
		t.Fatal(err)
	} else {
		f.Sync()
		dropCached(f)
		n, _ := cachedPages(t, f)
		f.Close()
		if n > 0 {
			t.Skipf("%s keeps %d pages of a synced file that POSIX_FADV_DONTNEED asked it to drop", dir, n)
		}
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
	if n, of := cachedPages(t, f); n > 0 {
		t.Errorf("%d of %d pages of the committed file are in the page cache", n, of)
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

// cachedPages returns how many of f's pages are in the page cache
// (mincore on a mapping of it, which reads none of them), and of how many.
func cachedPages(t *testing.T, f *os.File) (n, of int) {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	vec := make([]byte, (len(data)+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal("mincore:", e)
	}
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, len(vec)
}
