package engine

import (
	"fmt"

	"github.com/xdna-go/xdna/internal/hugepage"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// CopiedWeights serves a package's matrices from a copy in anonymous
// memory on transparent huge pages, and its vectors from the mapped file
// as FileWeights does (xdnarun --no-mmap). Decoding streams every matrix
// once a token; the mapping is on 2 MiB pages only where the page cache
// holds the file in 2 MiB folios (hugepage.MapFile), the copy wherever
// the kernel gives anonymous huge pages. On the development VM (Zen 5, 2
// threads) the copy against 4 KiB-mapped weights was 1.09-1.17x as fast
// in decode at one moment and 0.93x half an hour later (likely because a
// guest's huge page is huge to the TLB only where its host backs it with
// one), and the next day 0.94-1.13x (medians of 4-6 alternated runs),
// within the noise of a mapping on huge pages. So the mapping stays the
// default.
//
// Each matrix is read from the file (layout.File.ReadBlob: pread, which
// touches none of the mapping's pages) when the engine asks for it, and
// checked there, so the bytes checked are the bytes used. The memory is
// reserved for every matrix of the package at once and takes room as the
// matrices are read; Close gives it back, after the model is done.
type CopiedWeights struct {
	FileWeights
	arena []byte       // hugepage.Alloc's memory
	free  func() error // gives it back
	at    int          // the arena's first free byte
	got   map[string]*cpu.Matrix
}

// CopyBytes returns the memory CopyWeights takes for f's matrices.
func CopyBytes(f *layout.File) int64 {
	var n int64
	for _, t := range f.Manifest.Tensors {
		if t.Format != layout.FormatRaw {
			n += layout.Padded(t.Size)
		}
	}
	return n
}

// CopyWeights reserves the memory for a copy of f's matrices (see
// CopiedWeights). Where the kernel has no transparent huge pages the copy
// is on 4 KiB pages.
func CopyWeights(f *layout.File) (*CopiedWeights, error) {
	arena, free, err := hugepage.Alloc(int(CopyBytes(f)))
	if err != nil {
		return nil, fmt.Errorf("%s: the weights: %w", f.Name, err)
	}
	return &CopiedWeights{FileWeights: FileWeights{F: f}, arena: arena, free: free, got: map[string]*cpu.Matrix{}}, nil
}

// Matrix returns the copy of matrix name, reading it on the first call.
func (w *CopiedWeights) Matrix(name string) (*cpu.Matrix, bool, error) {
	if m, ok := w.got[name]; ok {
		return m, true, nil
	}
	e, m, ok, err := w.FileWeights.matrix(name)
	if !ok || err != nil {
		return m, ok, err
	}
	n := int(e.Size)
	if w.at+n > len(w.arena) {
		return nil, true, fmt.Errorf("tensor %q: %d bytes past the copy's %d", name, w.at+n-len(w.arena), len(w.arena))
	}
	dst := w.arena[w.at : w.at+n : w.at+n]
	if err := w.F.ReadBlob(name, e.BlobRef, dst); err != nil {
		return nil, true, err
	}
	w.at += int(layout.Padded(e.Size))
	m = &cpu.Matrix{G: m.G, Blob: dst}
	w.got[name] = m
	return m, true, nil
}

// Copied returns the bytes of the matrices read so far.
func (w *CopiedWeights) Copied() int64 { return int64(w.at) }

// Memory returns the copy's memory: the matrices read so far, and the room
// reserved for the rest.
func (w *CopiedWeights) Memory() []byte { return w.arena }

// Close gives the copy's memory back. The matrices it served must no longer
// be used.
func (w *CopiedWeights) Close() error {
	if w.free == nil {
		return nil
	}
	free := w.free
	w.free, w.arena, w.got = nil, nil, nil
	return free()
}

// VerifyUnread checks the matrices the engine did not ask for. With the
// other blobs checked before (layout.File.VerifyExcept(File.Packed)) and
// ReadBlob checking each matrix it copies, every blob is checked once.
func (w *CopiedWeights) VerifyUnread() []error {
	return w.F.VerifyExcept(func(what string) bool { return !w.F.Packed(what) || w.got[what] != nil })
}
