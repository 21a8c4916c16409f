// Package xrt is the real NPU: an npu.Device over XRT (>= 2.18) and the
// amdxdna driver, for AMD Ryzen AI machines. The calls into XRT's C++ API
// go through a small extern "C" shim (shim.h, shim.cpp) compiled only with
// the build tag xrt (and cgo); see README.md for building and testing on a
// Ryzen AI machine.
//
// The package splits in two so that its logic builds and is tested
// everywhere:
//
//   - device.go (no tag): the Device, which validates every call, keeps
//     the handle tables, dedupes contexts by xclbin UUID, enforces the
//     context limit and the commands in flight, refuses to sync a buffer a
//     run still uses, and maps XRT's command states to npu errors. It talks
//     to XRT through the small interface lib.
//   - cgo.go and shim.cpp (tag xrt): lib over the C shim. Without the tag,
//     Open returns ErrNotBuilt.
//
// The call sequence is mlir-aie's (npu-stack.md 3.1; seeds-and-peers.md
// 1a): xrt::device(i); xrt::xclbin(bytes); device.register_xclbin;
// xrt::hw_context(device, uuid); xrt::kernel(context, "MLIR_AIE");
// instruction buffers xrt::bo(device, n, XCL_BO_FLAGS_CACHEABLE,
// kernel.group_id(1)); data buffers xrt::bo(device, n,
// XRT_BO_FLAGS_HOST_ONLY, kernel.group_id(3)); bo.sync; xrt::run with
// (opcode 3, instr bo, words, bo0, bo1, ...); run.wait(timeout).
package xrt

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/probe"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	aie "github.com/xdna-go/xdna/target"
	"github.com/xdna-go/xdna/xclbin"
)

// ErrNotBuilt is returned by Open in a binary built without -tags xrt.
var ErrNotBuilt = errors.New("this binary was built without XRT support (go build -tags xrt, see runtime/npu/xrt/README.md)")

// lib is the part of XRT the Device uses; cgo.go implements it over the C
// shim, tests over a fake. Handles are the shim's: kernels from 1, buffers
// from 1, runs from 1.
type lib interface {
	loadKernel(xclbin []byte, name string) (uint32, error)
	alloc(kernel uint32, instr bool, size int) (bo uint32, host []byte, err error)
	free(bo uint32) error
	sync(bo uint32, toDevice bool, offset, size int) error
	run(kernel uint32, opcode uint64, instr, words uint32, data []uint32) (uint64, error)
	// wait returns the command's state and whether it is final; a
	// non-final state after the timeout means the wait timed out.
	wait(run uint64, timeout time.Duration) (state npu.State, final bool, err error)
	release(run uint64)
	close() error
}

type kernel struct {
	id       npu.Kernel
	lib      uint32
	uuid     [16]byte
	name     string
	inflight int
}

type buffer struct {
	lib   uint32
	kind  npu.BOKind
	host  []byte
	users int // runs not yet waited for
}

type run struct {
	lib  uint64
	k    *kernel
	bufs []*buffer
}

// Device is an NPU driven through XRT. It is safe for concurrent use.
type Device struct {
	mu      sync.Mutex
	lib     lib
	info    npu.Info
	kernels []*kernel
	bos     map[npu.BO]*buffer
	nextBO  npu.BO
	runs    map[npu.Run]*run
	nextRun npu.Run
	closed  bool
}

var _ npu.Device = (*Device)(nil)

// Open opens the index-th NPU (XRT device index, the same order as
// /dev/accel/accel*). Without -tags xrt it returns ErrNotBuilt.
func Open(index int) (*Device, error) {
	if index < 0 {
		return nil, fmt.Errorf("xrt: device index %d", index)
	}
	l, err := openLib(index)
	if err != nil {
		return nil, err
	}
	return newDevice(l, infoFor(index)), nil
}

// infoFor describes the index-th device from the pure-Go probe; without
// one it assumes the smaller XDNA1 limits.
func infoFor(index int) npu.Info {
	t := aie.XDNA1
	info := npu.Info{Name: fmt.Sprintf("xrt:%d", index), Gen: txn.Gen(t.Gen), Columns: t.Columns, MaxContexts: t.MaxContexts, MaxInFlight: t.MaxInFlight}
	infos, err := probe.Probe()
	if err != nil || index >= len(infos) {
		return info
	}
	if t, err = aie.ByName(infos[index].Target()); err == nil {
		info.Gen, info.Columns, info.MaxContexts = txn.Gen(t.Gen), t.Columns, t.MaxContexts
	}
	info.Name = fmt.Sprintf("xrt:%d %s", index, infos[index].Generation())
	return info
}

func newDevice(l lib, info npu.Info) *Device {
	return &Device{lib: l, info: info, bos: map[npu.BO]*buffer{}, runs: map[npu.Run]*run{}}
}

// Info describes the device.
func (d *Device) Info() npu.Info { return d.info }

// LoadKernel checks the xclbin in Go (it parses, has the kernel, is an NPU
// design no wider than the device), then registers it and creates its
// hardware context, once per UUID and kernel name.
func (d *Device) LoadKernel(data []byte, name string) (npu.Kernel, error) {
	f, err := xclbin.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, fmt.Errorf("xrt: load kernel %q: %w", name, err)
	}
	names, err := f.KernelNames()
	if err != nil {
		return 0, fmt.Errorf("xrt: load kernel %q: %w", name, err)
	}
	if !slices.Contains(names, name) {
		return 0, fmt.Errorf("xrt: load kernel %q: xclbin %x has kernels %q", name, f.UUID, names)
	}
	part, err := f.Partition()
	if err != nil {
		return 0, fmt.Errorf("xrt: load kernel %q: not an NPU xclbin: %w", name, err)
	}
	if part.ColumnWidth < 1 || int(part.ColumnWidth) > d.info.Columns {
		return 0, fmt.Errorf("xrt: load kernel %q: design is %d columns wide, device has %d", name, part.ColumnWidth, d.info.Columns)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	for _, k := range d.kernels {
		if k.uuid == f.UUID && k.name == name {
			return k.id, nil
		}
	}
	if len(d.kernels) >= d.info.MaxContexts {
		return 0, fmt.Errorf("xrt: load kernel %q: %w (%d contexts)", name, npu.ErrContextLimit, d.info.MaxContexts)
	}
	id, err := d.lib.loadKernel(data, name)
	if err != nil {
		return 0, fmt.Errorf("xrt: load kernel %q: %w", name, err)
	}
	k := &kernel{id: npu.Kernel(len(d.kernels) + 1), lib: id, uuid: f.UUID, name: name}
	d.kernels = append(d.kernels, k)
	return k.id, nil
}

// Alloc allocates a buffer object in the memory group of the most recently
// loaded kernel (every MLIR_AIE kernel has the same groups: 1 for
// instructions, 3.. for data), so a kernel must be loaded first.
func (d *Device) Alloc(kind npu.BOKind, size int) (npu.BO, error) {
	if kind != npu.BOData && kind != npu.BOInstr {
		return 0, fmt.Errorf("xrt: alloc: %v", kind)
	}
	if size <= 0 {
		return 0, fmt.Errorf("xrt: alloc: size %d", size)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	if len(d.kernels) == 0 {
		return 0, errors.New("xrt: alloc: no kernel loaded (buffer groups come from a kernel)")
	}
	h, host, err := d.lib.alloc(d.kernels[len(d.kernels)-1].lib, kind == npu.BOInstr, size)
	if err != nil {
		return 0, fmt.Errorf("xrt: alloc %v buffer of %d bytes: %w", kind, size, err)
	}
	if len(host) < size {
		d.lib.free(h)
		return 0, fmt.Errorf("xrt: alloc: mapped %d of %d bytes", len(host), size)
	}
	d.nextBO++
	d.bos[d.nextBO] = &buffer{lib: h, kind: kind, host: host[:size:size]}
	return d.nextBO, nil
}

func (d *Device) buf(h npu.BO) (*buffer, error) { return npu.Lookup(d.bos, "xrt", h, d.closed) }

// Map returns the buffer's host mapping.
func (d *Device) Map(h npu.BO) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.buf(h)
	if err != nil {
		return nil, err
	}
	return b.host, nil
}

// Sync flushes or invalidates part of a buffer (xrt::bo::sync).
func (d *Device) Sync(h npu.BO, dir npu.Direction, offset, size int) error {
	d.mu.Lock()
	b, err := d.buf(h)
	if err == nil {
		err = npu.CheckSync("xrt", h, len(b.host), b.users, dir, offset, size)
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if err := d.lib.sync(b.lib, dir == npu.ToDevice, offset, size); err != nil {
		return fmt.Errorf("xrt: sync buffer %d: %w", h, err)
	}
	return nil
}

// Free releases a buffer.
func (d *Device) Free(h npu.BO) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.buf(h)
	if err != nil {
		return err
	}
	if b.users > 0 {
		return fmt.Errorf("xrt: free buffer %d: %w", h, npu.ErrBusy)
	}
	delete(d.bos, h)
	return d.lib.free(b.lib)
}

// Run starts the kernel with the MLIR_AIE arguments.
func (d *Device) Run(k npu.Kernel, opcode uint64, instr npu.BO, words int, data ...npu.BO) (npu.Run, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	if k < 1 || int(k) > len(d.kernels) {
		return 0, fmt.Errorf("xrt: run: kernel %d: %w", k, npu.ErrHandle)
	}
	kk := d.kernels[k-1]
	ib, err := d.buf(instr)
	if err != nil {
		return 0, err
	}
	if ib.kind != npu.BOInstr || words <= 0 || words > len(ib.host)/4 {
		return 0, fmt.Errorf("xrt: run: %d words in %v buffer %d of %d bytes", words, ib.kind, instr, len(ib.host))
	}
	if len(data) > 5 { // MLIR_AIE has bo0..bo4 (npu-stack.md 2.5)
		return 0, fmt.Errorf("xrt: run: %d data buffers, the kernel takes at most 5", len(data))
	}
	r := &run{k: kk, bufs: []*buffer{ib}}
	ids := make([]uint32, len(data))
	for i, h := range data {
		b, err := d.buf(h)
		if err != nil {
			return 0, err
		}
		if b.kind != npu.BOData {
			return 0, fmt.Errorf("xrt: run: bo%d (buffer %d) is a %v buffer", i, h, b.kind)
		}
		ids[i] = b.lib
		r.bufs = append(r.bufs, b)
	}
	if kk.inflight >= d.info.MaxInFlight {
		return 0, fmt.Errorf("xrt: run: %w (%d on context %d)", npu.ErrInFlight, kk.inflight, k)
	}
	id, err := d.lib.run(kk.lib, opcode, ib.lib, uint32(words), ids)
	if err != nil {
		return 0, fmt.Errorf("xrt: run: %w", err)
	}
	r.lib = id
	kk.inflight++
	for _, b := range r.bufs {
		b.users++
	}
	d.nextRun++
	d.runs[d.nextRun] = r
	return d.nextRun, nil
}

// Wait waits for a run (xrt::run::wait with a timeout); a finished run's
// handle is released, one that timed out can be waited for again.
func (d *Device) Wait(h npu.Run, timeout time.Duration) error {
	d.mu.Lock()
	r := d.runs[h]
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return npu.ErrClosed
	}
	if r == nil {
		return fmt.Errorf("xrt: wait: run %d: %w", h, npu.ErrHandle)
	}
	timeout = max(timeout, time.Millisecond) // XRT takes 0 as forever
	state, final, err := d.lib.wait(r.lib, timeout)
	if err != nil {
		return fmt.Errorf("xrt: wait: run %d: %w", h, err)
	}
	if !final {
		return fmt.Errorf("xrt: run %d still %v after %v: %w", h, state, timeout, npu.ErrTimeout)
	}
	d.mu.Lock()
	delete(d.runs, h)
	r.k.inflight--
	for _, b := range r.bufs {
		b.users--
	}
	d.mu.Unlock()
	d.lib.release(r.lib)
	if state != npu.StateCompleted {
		return &npu.RunError{Run: h, State: state}
	}
	return nil
}

// Close releases everything (XRT destroys the contexts and buffers).
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	clear(d.bos)
	clear(d.runs)
	return d.lib.close()
}
