//go:build !linux

package amdxdna

import (
	"errors"
	"unsafe"
)

// Sys is the real Kernel; amdxdna exists only on Linux.
type Sys struct{}

var errNotLinux = errors.New("amdxdna: the driver exists only on Linux")

func (Sys) Open(string) (int, error)                 { return -1, errNotLinux }
func (Sys) Close(int) error                          { return errNotLinux }
func (Sys) Ioctl(int, uintptr, unsafe.Pointer) error { return errNotLinux }
func (Sys) Munmap(unsafe.Pointer, uintptr) error     { return errNotLinux }
func (Sys) Monotonic() int64                         { return 0 }
func (Sys) Mmap(unsafe.Pointer, uintptr, int, int, int, int64) (unsafe.Pointer, error) {
	return nil, errNotLinux
}
