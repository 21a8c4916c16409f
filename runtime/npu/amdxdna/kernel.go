package amdxdna

import "unsafe"

// Kernel is the part of the operating system the Device uses: the system
// calls on the accel device. Sys is the real one; tests replace it with a
// fake driver (package amdxdnatest) that checks every call the way the
// driver and firmware do.
type Kernel interface {
	// Open opens path (O_RDWR|O_CLOEXEC) and returns its descriptor.
	Open(path string) (fd int, err error)
	// Close closes a descriptor.
	Close(fd int) error
	// Ioctl issues request req with the argument struct at arg (pinned by
	// the caller, with whatever its pointer fields point at).
	Ioctl(fd int, req uintptr, arg unsafe.Pointer) error
	// Mmap maps length bytes as mmap(2) does; addr is a hint, or the
	// address itself with MAP_FIXED; fd -1 with MAP_ANONYMOUS.
	Mmap(addr unsafe.Pointer, length uintptr, prot, flags, fd int, offset int64) (unsafe.Pointer, error)
	// Munmap unmaps [addr, addr+length).
	Munmap(addr unsafe.Pointer, length uintptr) error
	// Monotonic is CLOCK_MONOTONIC in nanoseconds (syncobj waits take an
	// absolute deadline).
	Monotonic() int64
}

// The mmap constants the Device uses (Linux, all architectures it runs on).
const (
	protNone     = 0x0
	protRead     = 0x1
	protWrite    = 0x2
	mapShared    = 0x01
	mapPrivate   = 0x02
	mapFixed     = 0x10
	mapAnonymous = 0x20
	mapNoreserve = 0x4000
)

// Exported for fakes: the flags and protections the Device passes to Mmap.
const (
	ProtNone, ProtRead, ProtWrite                        = protNone, protRead, protWrite
	MapShared, MapPrivate, MapFixed, MapAnonymous, MapNR = mapShared, mapPrivate, mapFixed, mapAnonymous, mapNoreserve
)
