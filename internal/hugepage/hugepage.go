// Package hugepage gives memory and maps files from 2 MiB boundaries,
// advised onto transparent huge pages, and reports how much of a mapping
// the kernel holds on them: the weights the CPU kernels stream (a mapped
// package, or the copy of --no-mmap), bench's yardstick, and the packer's
// buffers. The size and the alignment arithmetic are here once.
package hugepage

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Size is the size of a transparent huge page on x86-64.
const Size = 2 << 20

// Alloc returns n bytes of zeroed anonymous memory, from a 2 MiB
// boundary, advised onto transparent huge pages (MADV_HUGEPAGE; where the
// kernel has none, or refuses, it is 4 KiB pages), and the function that
// gives it back: for weights the kernels stream from (engine.CopiedWeights),
// to which a 4 KiB page is a TLB entry and a boundary the hardware
// prefetchers stop at, every 64 lines. Pages take room as they are first
// written (MAP_NORESERVE).
func Alloc(n int) (mem []byte, free func() error, err error) {
	if n <= 0 {
		return nil, func() error { return nil }, nil
	}
	raw, err := unix.Mmap(-1, 0, n+Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil, fmt.Errorf("%d bytes of memory: %w", n, err)
	}
	skip := (Size - int(uintptr(unsafe.Pointer(&raw[0])))%Size) % Size
	mem = raw[skip : skip+n : skip+n]
	unix.Madvise(mem, unix.MADV_HUGEPAGE) // advice: refused where the kernel has none
	return mem, func() error { return unix.Munmap(raw) }, nil
}

// MapFile maps the first size bytes of the file fd read-only, from a 2 MiB
// boundary of the address space, advised onto huge pages (MADV_HUGEPAGE),
// and returns the mapping and the function that unmaps it.
//
// Packages are mapped so (layout.Open): decode streams every matrix once a
// token, and where the page cache holds a file in 2 MiB folios (Linux 6.16
// and later on ext4, and on XFS, when the file was read into the cache; a
// file just written in smaller pieces, or copied, is cached in smaller
// ones), a 2 MiB-aligned mapping maps each with one page-table entry: one
// TLB entry and no prefetch boundary in place of 512. The advice makes a
// read of pages not yet cached (a first run after a reboot) read them
// ahead in 2 MiB folios. On the development VM (Zen 5, 2 threads, xdnarun
// bench -p 128 -n 64 -r 1, the same package cached in 2 MiB folios against
// 4 KiB ones, five runs each alternated, three models at two moments)
// decode was 0.99-1.13x and prefill 0.98-1.16x as fast (medians). Where the
// kernel has no such page cache, or refuses the advice, the mapping is
// 4 KiB pages; the bytes are the same either way.
func MapFile(fd int, size int64) (data []byte, unmap func() error, err error) {
	n := uintptr(size)
	// Reserve room for the mapping plus one huge page, map the file over
	// the reservation from its first huge-page boundary (MAP_FIXED
	// replaces the reserved pages), and give back the reserved pages
	// around it.
	res, err := unix.MmapPtr(-1, 0, nil, n+Size, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: reserving %d bytes: %w", n+Size, err)
	}
	skip := (Size - uintptr(res)%Size) % Size
	p, err := unix.MmapPtr(fd, 0, unsafe.Add(res, skip), n, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		unix.MunmapPtr(res, n+Size)
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	if skip > 0 {
		unix.MunmapPtr(res, skip)
	}
	if end := (skip + n + 4095) &^ 4095; end < n+Size {
		unix.MunmapPtr(unsafe.Add(res, end), n+Size-end)
	}
	data = unsafe.Slice((*byte)(p), n)
	unix.Madvise(data, unix.MADV_HUGEPAGE) // advice: refused where the kernel maps no files on huge pages
	return data, func() error { return unix.MunmapPtr(p, n) }, nil
}

// Share returns how many bytes of the mappings that hold mem are
// resident, and how many of those are on huge pages (AnonHugePages,
// FilePmdMapped and ShmemPmdMapped in /proc/self/smaps): the whole of each
// mapping mem overlaps. xdnarun bench reports it for the weights.
func Share(mem []byte) (resident, huge int64, err error) {
	if len(mem) == 0 {
		return 0, 0, nil
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, 0, err
	}
	return share(b, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)))
}

// share is Share on the text of smaps, for [lo, lo+n).
func share(smaps []byte, lo, n uintptr) (resident, huge int64, err error) {
	in, seen := false, false
	for line := range strings.Lines(string(smaps)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if a, z, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			start, err1 := strconv.ParseUint(a, 16, 64)
			end, err2 := strconv.ParseUint(z, 16, 64)
			if err1 != nil || err2 != nil {
				return 0, 0, fmt.Errorf("smaps: mapping line %q", strings.TrimSpace(line))
			}
			in = uintptr(start) < lo+n && lo < uintptr(end)
			seen = seen || in
			continue
		}
		if !in || len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("smaps: %q", strings.TrimSpace(line))
		}
		switch f[0] {
		case "Rss:":
			resident += kb << 10
		case "AnonHugePages:", "FilePmdMapped:", "ShmemPmdMapped:":
			huge += kb << 10
		}
	}
	if !seen {
		return 0, 0, fmt.Errorf("smaps: no mapping holds %#x", lo)
	}
	return resident, huge, nil
}
