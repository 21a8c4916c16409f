package pack

import (
	"fmt"
	"io"

	"github.com/xdna-go/xdna/layout"
)

// source reads each entry's bytes, its parts in row order, from the GGUF
// file into a buffer of the pipeline (ReadAt: pread on a file), which the
// hasher and a packer then read.
//
// The file is not memory-mapped. On the development VM (a PVM guest, whose
// page tables the host shadows), the first read of each page of a mapping
// costs a trip to the host, whatever madvise prepared in the guest: SHA-256
// of the 1 GB test model through its mapping took 0.95 s on the first pass
// over the pages and 0.63 s on the second, while pread of the same 1 GB
// into one reused buffer took 0.06 s (0.15 s into a 64 MiB one). The
// pipeline's buffers are a ring that is reused (arena), so after its first
// lap nothing is touched for the first time: packing the model took 1.5-1.8
// s of CPU time in place of 2.0-2.5 s (medians of interleaved rounds), and
// its hash (SHA-256 then), the pipeline's pace, 0.75-0.8 s in place of
// 0.9-1.0 s.
type source struct {
	g *layout.GGUF
	r io.ReaderAt
}

// entryBytes returns the size of e's parts together.
func entryBytes(e *Entry) int64 {
	n := int64(0)
	for _, t := range e.parts {
		n += t.Size
	}
	return n
}

// read fills dst with e's parts' bytes from lo on, the parts in row order
// (layout.GGUF.ReadTensorAt: a part past the end of a truncated file is an
// error naming the file and the tensor).
func (s *source) read(e *Entry, lo int64, dst []byte) error {
	if lo < 0 || lo+int64(len(dst)) > entryBytes(e) {
		return fmt.Errorf("%s: tensor %q: bytes %d+%d of %d", s.g.Path, e.Name, lo, len(dst), entryBytes(e))
	}
	at := int64(0) // where the part starts
	for _, t := range e.parts {
		if len(dst) == 0 {
			break
		}
		if lo < at+t.Size {
			n := min(at+t.Size-lo, int64(len(dst)))
			if err := s.g.ReadTensorAt(s.r, t, lo-at, dst[:n]); err != nil {
				return err
			}
			dst, lo = dst[n:], lo+n
		}
		at += t.Size
	}
	return nil
}
