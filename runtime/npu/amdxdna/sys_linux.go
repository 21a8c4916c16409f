package amdxdna

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sys is the real Kernel: system calls through golang.org/x/sys/unix (no
// cgo).
type Sys struct{}

var _ Kernel = Sys{}

// Open opens the device read-write, close-on-exec.
func (Sys) Open(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// Close closes fd.
func (Sys) Close(fd int) error { return unix.Close(fd) }

// Ioctl issues the request, retrying on EINTR and EAGAIN as libdrm's
// drmIoctl does.
func (Sys) Ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		switch e {
		case 0:
			return nil
		case unix.EINTR, unix.EAGAIN:
			continue
		}
		return e
	}
}

// Mmap is mmap(2).
func (Sys) Mmap(addr unsafe.Pointer, length uintptr, prot, flags, fd int, offset int64) (unsafe.Pointer, error) {
	return unix.MmapPtr(fd, offset, addr, length, prot, flags)
}

// Munmap is munmap(2).
func (Sys) Munmap(addr unsafe.Pointer, length uintptr) error { return unix.MunmapPtr(addr, length) }

// Monotonic reads CLOCK_MONOTONIC.
func (Sys) Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
