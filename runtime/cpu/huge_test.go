package cpu

import (
	"testing"
	"unsafe"
)

func TestHugeAlloc(t *testing.T) {
	for _, size := range []int{1, 4096, 3<<20 + 17} {
		mem, free, err := HugeAlloc(size)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if len(mem) != size || cap(mem) != size {
			t.Errorf("%d bytes: len %d cap %d", size, len(mem), cap(mem))
		}
		if a := uintptr(unsafe.Pointer(&mem[0])) % hugePage; a != 0 {
			t.Errorf("%d bytes: at %d past a 2 MiB boundary", size, a)
		}
		for i, b := range mem {
			if b != 0 {
				t.Fatalf("%d bytes: byte %d is %d, not zero", size, i, b)
			}
		}
		mem[0], mem[size-1] = 1, 2
		if err := free(); err != nil {
			t.Errorf("%d bytes: free: %v", size, err)
		}
	}
	if mem, free, err := HugeAlloc(0); err != nil || len(mem) != 0 || free() != nil {
		t.Errorf("0 bytes: %v, %d", err, len(mem))
	}
}
