package cpu

import (
	"fmt"
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
