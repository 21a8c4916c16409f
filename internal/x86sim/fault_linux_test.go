package x86sim

import (
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestFault: a load past the end of the memory a function was given, into
// an inaccessible page, is an error naming the instruction, as the CPU's
// fault would be, not a crash of the test.
func TestFault(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	fn := asmFunc(t, "mov rax, QWORD PTR [rsp+8]\nvmovdqu ymm0, YMMWORD PTR [rax]\nvmovdqu ymm1, YMMWORD PTR [rax+0x10]\nret")
	p := unsafe.Pointer(&mem[page-32])
	err = fn.Call(Ptr(p))
	if err == nil || !strings.Contains(err.Error(), "memory fault") || !strings.Contains(err.Error(), "[rax+0x10]") {
		t.Fatalf("load across a guard page: err = %v, want a memory fault naming the instruction", err)
	}
}
