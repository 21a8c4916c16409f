package cpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on x86-64.
const hugePage = 2 << 20

// HugeAlloc returns size bytes of zeroed anonymous memory, from a 2 MiB
// boundary, advised onto transparent huge pages (MADV_HUGEPAGE; where the
// kernel has none, or refuses, it is 4 KiB pages), and the function that
// gives it back: for weights the kernels stream from (engine.CopiedWeights),
// to which a 4 KiB page is a TLB entry and a boundary the hardware
// prefetchers stop at, every 64 lines. Pages take room as they are first
// written (MAP_NORESERVE).
func HugeAlloc(size int) (mem []byte, free func() error, err error) {
	if size <= 0 {
		return nil, func() error { return nil }, nil
	}
	raw, err := unix.Mmap(-1, 0, size+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil, fmt.Errorf("%d bytes of memory: %w", size, err)
	}
	skip := (hugePage - int(uintptr(unsafe.Pointer(&raw[0])))%hugePage) % hugePage
	mem = raw[skip : skip+size : skip+size]
	unix.Madvise(mem, unix.MADV_HUGEPAGE) // advice: refused where the kernel has none
	return mem, func() error { return unix.Munmap(raw) }, nil
}

// HugeShare returns how many bytes of the mappings that hold mem are
// resident, and how many of those are on huge pages (AnonHugePages,
// FilePmdMapped and ShmemPmdMapped in /proc/self/smaps): the whole of each
// mapping mem overlaps. xdnarun bench reports it for the weights.
func HugeShare(mem []byte) (resident, huge int64, err error) {
	if len(mem) == 0 {
		return 0, 0, nil
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, 0, err
	}
	return hugeShare(b, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)))
}

// hugeShare is HugeShare on the text of smaps, for [lo, lo+n).
func hugeShare(smaps []byte, lo, n uintptr) (resident, huge int64, err error) {
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
