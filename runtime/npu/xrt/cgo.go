//go:build xrt && cgo

package xrt

// The only file that imports "C". Its preamble includes nothing but
// shim.h, plain C without XRT headers, so cgo (and go vet, which runs cgo
// to type-check this file) works on machines without XRT; shim.cpp, which
// includes XRT, is compiled only by go build.

/*
#cgo CXXFLAGS: -std=c++17 -O2 -I/opt/xilinx/xrt/include
#cgo LDFLAGS: -L/opt/xilinx/xrt/lib -lxrt_coreutil -lstdc++
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"time"
	"unsafe"

	"github.com/xdna-go/xdna/runtime/npu"
)

type cgoLib struct{ d *C.xdna_xrt }

func openLib(index int) (lib, error) {
	var err [C.XDNA_XRT_ERRLEN]C.char
	var d *C.xdna_xrt
	if C.xdna_xrt_open(C.uint(index), &d, &err[0]) != 0 {
		return nil, cErr(&err)
	}
	return &cgoLib{d}, nil
}

func cErr(e *[C.XDNA_XRT_ERRLEN]C.char) error { return errors.New(C.GoString(&e[0])) }

func (l *cgoLib) loadKernel(x []byte, name string) (uint32, error) {
	var err [C.XDNA_XRT_ERRLEN]C.char
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var k C.uint32_t
	if C.xdna_xrt_load_kernel(l.d, unsafe.Pointer(unsafe.SliceData(x)), C.size_t(len(x)), cname, &k, &err[0]) != 0 {
		return 0, cErr(&err)
	}
	return uint32(k), nil
}

func (l *cgoLib) alloc(kernel uint32, instr bool, size int) (uint32, []byte, error) {
	var err [C.XDNA_XRT_ERRLEN]C.char
	var bo C.uint32_t
	var host unsafe.Pointer
	in := C.int(0)
	if instr {
		in = 1
	}
	if C.xdna_xrt_alloc(l.d, C.uint32_t(kernel), in, C.size_t(size), &bo, &host, &err[0]) != 0 {
		return 0, nil, cErr(&err)
	}
	// The mapping is C memory owned by the xrt::bo until free.
	return uint32(bo), unsafe.Slice((*byte)(host), size), nil
}

func (l *cgoLib) free(bo uint32) error {
	var err [C.XDNA_XRT_ERRLEN]C.char
	if C.xdna_xrt_free(l.d, C.uint32_t(bo), &err[0]) != 0 {
		return cErr(&err)
	}
	return nil
}

func (l *cgoLib) sync(bo uint32, toDevice bool, offset, size int) error {
	var err [C.XDNA_XRT_ERRLEN]C.char
	dir := C.int(0)
	if toDevice {
		dir = 1
	}
	if C.xdna_xrt_sync(l.d, C.uint32_t(bo), dir, C.size_t(offset), C.size_t(size), &err[0]) != 0 {
		return cErr(&err)
	}
	return nil
}

func (l *cgoLib) run(kernel uint32, opcode uint64, instr, words uint32, data []uint32) (uint64, error) {
	var err [C.XDNA_XRT_ERRLEN]C.char
	ids := make([]C.uint32_t, len(data)+1) // +1: never a nil pointer
	for i, v := range data {
		ids[i] = C.uint32_t(v)
	}
	var r C.uint64_t
	if C.xdna_xrt_run(l.d, C.uint32_t(kernel), C.uint64_t(opcode), C.uint32_t(instr), C.uint32_t(words),
		&ids[0], C.size_t(len(data)), &r, &err[0]) != 0 {
		return 0, cErr(&err)
	}
	return uint64(r), nil
}

func (l *cgoLib) wait(run uint64, timeout time.Duration) (npu.State, bool, error) {
	var err [C.XDNA_XRT_ERRLEN]C.char
	ms := min(max(timeout.Milliseconds(), 1), 1<<31-1)
	var state, final C.int
	if C.xdna_xrt_wait(l.d, C.uint64_t(run), C.uint32_t(ms), &state, &final, &err[0]) != 0 {
		return 0, false, cErr(&err)
	}
	return npu.State(state), final != 0, nil
}

func (l *cgoLib) release(run uint64) { C.xdna_xrt_release(l.d, C.uint64_t(run)) }

func (l *cgoLib) close() error {
	C.xdna_xrt_close(l.d)
	l.d = nil
	return nil
}
