package layout

import (
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/internal/hugepage"
)

// ChunkWriter returns a writer that writes to w, from its start, in whole
// chunks of 2 MiB (the last excepted), and the function that writes what it
// holds: a package written so is cached, where the kernel can, in 2 MiB
// folios, each written whole by one write at a 2 MiB offset, which a
// mapping maps on huge pages (see hugepage.MapFile). Smaller or unaligned
// writes make smaller folios, which the cache keeps as long as the file is
// read.
// (A bufio.Writer does not do this: it hands a large write, or the rest of
// a copy into an *os.File, to the file as it comes.)
func ChunkWriter(w io.Writer) (io.Writer, func() error) {
	c := &chunkWriter{w: w, buf: make([]byte, 0, hugepage.Size)}
	return c, c.flush
}

type chunkWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && c.err == nil {
		k := copy(c.buf[len(c.buf):cap(c.buf)], p)
		c.buf, p, n = c.buf[:len(c.buf)+k], p[k:], n+k
		if len(c.buf) == cap(c.buf) {
			c.flush()
		}
	}
	return n, c.err
}

func (c *chunkWriter) flush() error {
	if c.err == nil && len(c.buf) > 0 {
		_, c.err = c.w.Write(c.buf)
		c.buf = c.buf[:0]
	}
	return c.err
}

// dropCached asks the kernel to drop f's pages from the page cache
// (POSIX_FADV_DONTNEED), after f has been synced: they are on the disk, and
// the next reader reads them back through a mapping advised onto huge
// pages (hugepage.MapFile). A file written as the Writer writes it, a blob
// at a time through a pipe, is cached in folios of at most the pipe's size,
// which no mapping maps on huge pages, and the cache keeps those as long as
// the file is read; read back, it is cached in 2 MiB folios where the
// kernel can. On the development VM reading the 0.5B Q4_0
// package back cost its first run 0.03-0.08 s (a run of one token: 0.12-0.17
// s against 0.09-0.10 s); a package benched right after packing had 98-99%
// of its weights on huge pages in place of none, and decoded 1.00x (Q4_0),
// 1.21x (Q8_0) and 1.12x (the Q4_K_M mix) as fast, prefill 1.06x, 1.29x
// and 1.57x (the 0.5B shape, four rounds each of pack then bench -r 1,
// alternated with the packer before). It is advice: an error changes
// nothing but the cache, and is not reported.
func dropCached(f *os.File) {
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
