package pack

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/layout"
)

// source hands the pipeline each entry's bytes. The GGUF file is
// memory-mapped when it can be, and an entry whose parts lie back to back
// in the file (every unfused tensor; fused parts when the file stores them
// in row order, as testdata/gen does) is a sub-slice of the mapping: no
// read copy, and the reader's hash and the packers read the page cache
// directly.
// Other entries are copied into a pipeline buffer, from the mapping or, if
// the file could not be mapped, with ReadAt.
//
// Mapped pages count in the resident set, so the pipeline calls release
// on every mapped entry it is done with, which drops those pages from the
// process (they stay in the page cache): the peak RSS stays near inFlight.
// A read of a page past the end of a file truncated under us faults;
// the pipeline's stages run with debug.SetPanicOnFault (catchFault) and
// report it as an error naming the file and tensor.
type source struct {
	g    *layout.GGUF
	r    io.ReaderAt
	data []byte // the whole file, read-only; nil if not mapped
}

// noMap turns the mapping off (a test hook: both ways give the same bytes).
var noMap = false

// openSource maps r when it is a regular *os.File, else reads it with ReadAt.
func openSource(g *layout.GGUF, r io.ReaderAt) *source {
	s := &source{g: g, r: r}
	f, ok := r.(*os.File)
	if !ok || noMap {
		return s
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() != int64(int(st.Size())) {
		return s
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return s
	}
	s.data = data
	return s
}

// close unmaps the file.
func (s *source) close() {
	if s.data != nil {
		unix.Munmap(s.data)
		s.data = nil
	}
}

// entry returns the bytes of e's parts in row order: when they lie back
// to back in the mapping, a sub-slice of it starting at off (mapped true),
// else a buffer from get filled with them.
func (s *source) entry(e *Entry, get func(int) []byte) (b []byte, off int64, mapped bool, err error) {
	n := int64(0)
	for _, t := range e.parts {
		n += t.Size
	}
	if s.data != nil {
		for _, t := range e.parts {
			if t.Offset < 0 || t.Size < 0 || t.Offset > int64(len(s.data))-t.Size {
				return nil, 0, false, &layout.FormatError{File: s.g.Path, Offset: t.Offset, Tensor: t.Name,
					Msg: fmt.Sprintf("data %d+%d lies past the end of the file (%d bytes)", t.Offset, t.Size, len(s.data))}
			}
		}
		if adjacent(e.parts) {
			off = e.parts[0].Offset
			s.advise(off, n, unix.MADV_POPULATE_READ)
			return s.data[off : off+n : off+n], off, true, nil
		}
	}
	b = get(int(n))
	at := 0
	for _, t := range e.parts {
		dst := b[at : at+int(t.Size)]
		if s.data == nil {
			err = s.g.ReadTensor(s.r, t, dst)
		} else {
			err = catchFault(s.g.Path, t.Name, func() { copy(dst, s.data[t.Offset:t.Offset+t.Size]) })
		}
		if err != nil {
			return b, 0, false, err
		}
		at += int(t.Size)
	}
	return b, 0, false, nil
}

// adjacent reports whether each part starts where the one before ends.
func adjacent(parts []*layout.Tensor) bool {
	for i := 1; i < len(parts); i++ {
		if parts[i].Offset != parts[i-1].Offset+parts[i-1].Size {
			return false
		}
	}
	return true
}

// release drops the pages of the mapped entry at off, n bytes, from the
// process: those wholly inside it (a page it shares with a neighbour stays,
// or faults in again if the neighbour was released first: at most two
// pages an entry).
func (s *source) release(off, n int64) {
	page := int64(os.Getpagesize())
	start, end := (off+page-1)/page*page, (off+n)/page*page
	if off+n == int64(len(s.data)) {
		end = off + n
	}
	if start < end {
		unix.Madvise(s.data[start:end], unix.MADV_DONTNEED)
	}
}

// advise gives advice on the pages that hold off, n bytes of the mapping.
// The reader asks for MADV_POPULATE_READ (Linux 5.14): it maps an entry's
// pages in one call, so that neither its hash nor the packer takes a page
// fault every 64 KiB. It is advice: where it is not supported, or fails on
// a truncated file, the pages fault in as they are read.
func (s *source) advise(off, n int64, advice int) {
	if n <= 0 {
		return
	}
	page := int64(os.Getpagesize())
	start := off / page * page
	unix.Madvise(s.data[start:off+n], advice)
}

// catchFault runs f, which reads the mapping of file, and returns a fault
// in it (a page past the end of a file truncated under us) as an error
// naming file and tensor; any other panic goes on.
func catchFault(file, tensor string, f func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			fault, ok := p.(interface{ Addr() uintptr })
			if !ok {
				panic(p)
			}
			err = &layout.FormatError{File: file, Offset: -1, Tensor: tensor, Msg: fmt.Sprintf("reading data: fault at %#x (file truncated while packing?)", fault.Addr())}
		}
	}()
	f()
	return nil
}
