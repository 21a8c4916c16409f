package layout

import (
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on x86-64: the alignment
// of a package's mapping (mapShared).
const hugePage = 2 << 20

// ChunkWriter returns a writer that writes to w, from its start, in whole
// chunks of 2 MiB (the last excepted), and the function that writes what it
// holds: a package written so is cached, where the kernel can, in 2 MiB
// folios, each written whole by one write at a 2 MiB offset, which a
// mapping maps on huge pages (see mapShared). Smaller or unaligned writes
// make smaller folios, which the cache keeps as long as the file is read.
// (A bufio.Writer does not do this: it hands a large write, or the rest of
// a copy into an *os.File, to the file as it comes.)
func ChunkWriter(w io.Writer) (io.Writer, func() error) {
	c := &chunkWriter{w: w, buf: make([]byte, 0, hugePage)}
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

// mapShared maps size bytes of the file fd read-only, from a hugePage
// boundary of the address space, advised onto huge pages (MADV_HUGEPAGE),
// and returns the mapping and the function that unmaps it.
//
// Decode streams every matrix once a token. Where the page cache holds a
// file in 2 MiB folios (Linux 6.16 and later on ext4, and on XFS, when the
// file was read into the cache; a file just written in smaller pieces, or
// copied, is cached in smaller ones), a 2 MiB-aligned mapping maps each
// with one page-table entry: one TLB entry and no prefetch boundary in
// place of 512. The advice makes a read of pages not yet cached (a first
// run after a reboot) read them ahead in 2 MiB folios. On the
// development VM (Zen 5, 2 threads, xdnarun bench -p 128 -n 64 -r 1, the
// same package cached in 2 MiB folios against 4 KiB ones, five runs each
// alternated, three models at two moments) decode was 0.99-1.13x and
// prefill 0.98-1.16x as fast (medians). Where the kernel has no
// such page cache, or refuses the advice, the mapping is 4 KiB pages as
// before; the bytes are the same either way.
func mapShared(fd int, size int64) (data []byte, unmap func() error, err error) {
	n := uintptr(size)
	// Reserve room for the mapping plus one huge page, map the file over
	// the reservation from its first huge-page boundary (MAP_FIXED
	// replaces the reserved pages), and give back the reserved pages
	// around it.
	res, err := unix.MmapPtr(-1, 0, nil, n+hugePage, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: reserving %d bytes: %w", n+hugePage, err)
	}
	skip := (hugePage - uintptr(res)%hugePage) % hugePage
	p, err := unix.MmapPtr(fd, 0, unsafe.Add(res, skip), n, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		unix.MunmapPtr(res, n+hugePage)
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	if skip > 0 {
		unix.MunmapPtr(res, skip)
	}
	if end := (skip + n + 4095) &^ 4095; end < n+hugePage {
		unix.MunmapPtr(unsafe.Add(res, end), n+hugePage-end)
	}
	data = unsafe.Slice((*byte)(p), n)
	unix.Madvise(data, unix.MADV_HUGEPAGE) // advice: refused where the kernel maps no files on huge pages
	return data, func() error { return unix.MunmapPtr(p, n) }, nil
}

// dropCached asks the kernel to drop f's pages from the page cache
// (POSIX_FADV_DONTNEED), after f has been synced: they are on the disk, and
// the next reader reads them back through a mapping advised onto huge
// pages (mapShared). A file written as the Writer writes it, a blob at a
// time through a pipe, is cached in folios of at most the pipe's size, which
// no mapping maps on huge pages, and the cache keeps those as long as the
// file is read; read back, it is cached in 2 MiB folios where the kernel
// can (see mapShared). On the development VM reading the 0.5B Q4_0
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
