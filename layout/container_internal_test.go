package layout

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"
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
// the file preallocated, a background write-back after every write and
// SyncSoon before Commit, or neither, and wants the same file, checksums that Verify accepts, and the
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
		if prealloc {
			w.SyncSoon() // as Run does before the tokenizer's blob
			w.SyncSoon()
		}
		if err := w.Commit(m); err != nil {
			t.Fatal(err)
		}
		w.SyncSoon() // after Commit: nothing to do, and no send on the closed request channel
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
