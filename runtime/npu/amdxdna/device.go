// Package amdxdna is the NPU without XRT: an npu.Device in pure Go (no
// cgo) over the ioctls of the amdxdna DRM driver (mainline Linux 6.14+),
// following the rules two XRT-free runtimes learned on hardware
// (../shared/reference/npu-contract.md section 4):
//
//   - one 64 MiB DEV_HEAP per process, created first and mapped at a
//     64 MiB-aligned address (reserve twice the size, then MAP_FIXED);
//   - one hardware context per xclbin: CREATE_HWCTX with a zeroed QoS,
//     max_opc from the AIE_PARTITION, num_tiles = columns x 4; then one
//     CONFIG_CU with every PDI of the partition, each in a DEV BO;
//   - instructions in DEV BOs (sub-allocated from the heap, the firmware
//     reads them at their xdna_addr), data in SHMEM BOs (the firmware
//     reads the process VA of their mapping; every one listed in EXEC_CMD's
//     args so the driver pins it), ERT packets in 4 KiB CMD BOs;
//   - ERT_START_CU with the MLIR_AIE register map (opcode 3, instruction
//     address, ninstr in words, data VAs), or ERT_CMD_CHAIN of several;
//   - wait with WAIT_CMD (or the context's timeline syncobj), then require
//     the packet's state COMPLETED: a signalled wait is not success;
//   - cache flushes with SYNC_BO direction TO_DEVICE in both directions
//     (FROM_DEVICE fails on ordinary BOs).
//
// The system calls go through the small interface Kernel, which tests
// replace with a fake driver (package amdxdnatest) that checks every
// struct as the driver does and executes the commands' TXN streams on the
// emulator.
package amdxdna

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	aie "github.com/xdna-go/xdna/target"
	"github.com/xdna-go/xdna/xclbin"
)

// Driver facts (npu-contract.md 4.4-4.7).
const (
	HeapSize      = 64 << 20 // AIE2_DEVM_SIZE
	HeapAlign     = 64 << 20 // the heap's VA alignment CREATE_HWCTX needs
	DevAlign      = 32 << 10 // DEV BO alignment: CONFIG_CU passes xdna_addr >> 15
	CoreRows      = 4        // num_tiles = columns x core rows
	MaxInFlight   = 4        // HWCTX_MAX_CMDS
	pageSize      = 4096
	maxBO         = 1 << 31
	defaultMaxOpc = 2048
)

// Errors of this package.
var (
	// ErrNoDevice reports that no amdxdna device exists.
	ErrNoDevice = errors.New("no AMD XDNA NPU: no /dev/accel/accel* device driven by amdxdna (needs Linux 6.14+)")
	// ErrNotXDNA reports an accel device of another driver.
	ErrNotXDNA = errors.New("not an amdxdna device")
)

// gem is a buffer object of the driver.
type gem struct {
	handle uint32
	typ    uint32
	size   int
	xdna   uint64         // device address (DEV, DEV_HEAP)
	mapOff uint64         // mmap offset on the accel fd
	va     unsafe.Pointer // our mapping (SHMEM, CMD, DEV_HEAP); nil for DEV
	host   []byte         // the host view
}

type buffer struct {
	gem
	kind  npu.BOKind
	users int // submitted runs not yet finished
}

type hwctx struct {
	id       npu.Kernel
	handle   uint32
	syncobj  uint32
	uuid     [16]byte
	name     string
	columns  int
	pdis     []*gem
	inflight int
	broken   error // a run on it ended badly: the context is not used again
}

type run struct {
	ctx  *hwctx
	seq  uint64
	head *gem   // the packet whose state is the run's
	cmds []*gem // every CMD BO of the run (the head last)
	bufs []*buffer
	n    int // dispatches
}

// Dispatch is one run of a kernel in a command chain: the arguments of
// npu.Device.Run.
type Dispatch struct {
	Opcode uint64
	Instr  npu.BO
	Words  int
	Data   []npu.BO
}

// Device is an NPU driven directly through the amdxdna ioctls. It is safe
// for concurrent use.
type Device struct {
	mu   sync.Mutex
	k    Kernel
	fd   int
	path string
	info npu.Info
	meta AIEMetadata
	heap gem
	resv [2]struct {
		p unsafe.Pointer
		n uintptr
	} // unused parts of the heap reservation, unmapped after MAP_FIXED
	ctxs    []*hwctx
	bos     map[npu.BO]*buffer
	nextBO  npu.BO
	runs    map[npu.Run]*run
	nextRun npu.Run
	idle    []*gem // CMD BOs ready for reuse
	syncobj bool   // WAIT_CMD is missing: wait on the timeline syncobj
	submits int64
	closed  bool
}

// ChainError reports a chain that finished in a state other than
// COMPLETED: the dispatches before Index completed.
type ChainError struct {
	*npu.RunError
	Index int // the failed dispatch
}

// Unwrap returns the RunError.
func (e *ChainError) Unwrap() error { return e.RunError }

var _ npu.Device = (*Device)(nil)

// Open opens the index-th amdxdna device under /dev/accel (in name order,
// devices of other drivers skipped) through the real system calls.
func Open(index int) (*Device, error) { return OpenIndex(Sys{}, index) }

// Lister is a Kernel that lists its accel devices itself (a fake driver);
// for others OpenIndex globs /dev/accel/accel*.
type Lister interface {
	Devices() []string
}

// OpenIndex opens the index-th amdxdna device through k.
func OpenIndex(k Kernel, index int) (*Device, error) {
	if index < 0 {
		return nil, fmt.Errorf("amdxdna: device index %d", index)
	}
	var paths []string
	if l, ok := k.(Lister); ok {
		paths = l.Devices()
	} else {
		paths, _ = filepath.Glob("/dev/accel/accel*")
	}
	sort.Strings(paths)
	var errs []string
	n := 0
	for _, p := range paths {
		d, err := OpenWith(k, p)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if n == index {
			return d, nil
		}
		d.Close()
		n++
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w (%s)", ErrNoDevice, strings.Join(errs, "; "))
	}
	if n > 0 {
		return nil, fmt.Errorf("%w: index %d of %d devices", ErrNoDevice, index, n)
	}
	return nil, ErrNoDevice
}

// OpenWith opens the device at path through k: it checks the DRM driver,
// reads the AIE array's size, and creates and maps the device heap.
func OpenWith(k Kernel, path string) (*Device, error) {
	fd, err := k.Open(path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%w: %s: %v", ErrNoDevice, path, err)
		}
		return nil, fmt.Errorf("amdxdna: open %s: %w", path, err)
	}
	d := &Device{k: k, fd: fd, path: path, bos: map[npu.BO]*buffer{}, runs: map[npu.Run]*run{}}
	if err := d.init(); err != nil {
		d.teardown()
		return nil, fmt.Errorf("amdxdna: %s: %w", path, err)
	}
	return d, nil
}

func (d *Device) ioctl(req uintptr, arg unsafe.Pointer) error { return d.k.Ioctl(d.fd, req, arg) }

// addr returns the address of p as the u64 a uAPI struct carries, pinning
// the Go memory it points at until pin is unpinned.
func addr[T any](pin *runtime.Pinner, p *T) uint64 {
	pin.Pin(p)
	return uint64(uintptr(unsafe.Pointer(p)))
}

func (d *Device) init() error {
	var name [64]byte
	var pin runtime.Pinner
	v := DRMVersion{NameLen: uint64(len(name)), Name: addr(&pin, &name[0])}
	err := d.ioctl(IoctlVersion, unsafe.Pointer(&v))
	pin.Unpin()
	if err != nil {
		return fmt.Errorf("DRM_IOCTL_VERSION (not a DRM device?): %w", err)
	}
	drv := strings.TrimRight(string(name[:min(int(v.NameLen), len(name))]), "\x00")
	if !strings.HasPrefix(drv, "amdxdna") {
		return fmt.Errorf("driver %q: %w", drv, ErrNotXDNA)
	}
	gi := GetInfo{Param: QueryAIEMetadata, BufferSize: uint32(unsafe.Sizeof(d.meta)), Buffer: addr(&pin, &d.meta)}
	err = d.ioctl(IoctlGetInfo, unsafe.Pointer(&gi))
	pin.Unpin()
	if err != nil {
		return fmt.Errorf("GET_INFO AIE metadata: %w", err)
	}
	var tg *aie.Target
	for _, t := range aie.All {
		// Phoenix reports its 5 physical columns (HostColumns); contexts use 4.
		if int(d.meta.Cols) == t.HostColumns || int(d.meta.Cols) == t.Columns {
			tg = t
		}
	}
	if tg == nil {
		return fmt.Errorf("AIE array of %d columns: neither XDNA1 (4-5) nor XDNA2 (8)", d.meta.Cols)
	}
	d.info = npu.Info{Gen: txn.Gen(tg.Gen), Columns: tg.Columns, MaxContexts: tg.MaxContexts, MaxInFlight: MaxInFlight}
	d.info.Name = fmt.Sprintf("amdxdna:%s %s", filepath.Base(d.path), tg.Name)
	return d.mapHeap()
}

// mapHeap creates the DEV_HEAP and maps it 64 MiB-aligned: reserve 128 MiB
// of address space, map the heap over the aligned middle with MAP_FIXED,
// give back the rest (npu-contract.md 4.4).
func (d *Device) mapHeap() error {
	h, err := d.createBO(BODevHeap, HeapSize)
	if err != nil {
		return fmt.Errorf("create device heap: %w", err)
	}
	d.heap = h
	res, err := d.k.Mmap(nil, 2*HeapAlign, protNone, mapPrivate|mapAnonymous|mapNoreserve, -1, 0)
	if err != nil {
		return fmt.Errorf("reserve heap address space: %w", err)
	}
	base := uintptr(res)
	aligned := (base + HeapAlign - 1) &^ (HeapAlign - 1)
	head, tail := aligned-base, base+2*HeapAlign-(aligned+HeapSize)
	at := unsafe.Add(res, head)
	p, err := d.k.Mmap(at, HeapSize, protRead|protWrite, mapShared|mapFixed, d.fd, int64(h.mapOff))
	if err != nil {
		d.k.Munmap(res, 2*HeapAlign)
		return fmt.Errorf("map device heap: %w", err)
	}
	if p != at {
		d.k.Munmap(res, 2*HeapAlign)
		return fmt.Errorf("map device heap: MAP_FIXED at %p gave %p", at, p)
	}
	d.resv[0].p, d.resv[0].n = res, head
	d.resv[1].p, d.resv[1].n = unsafe.Add(at, HeapSize), tail
	for i := range d.resv {
		if d.resv[i].n > 0 {
			if err := d.k.Munmap(d.resv[i].p, d.resv[i].n); err != nil {
				return fmt.Errorf("trim heap reservation: %w", err)
			}
			d.resv[i].n = 0
		}
	}
	d.heap.va = p
	d.heap.host = unsafe.Slice((*byte)(p), HeapSize)
	return nil
}

// createBO creates a BO and reads its info; SHMEM and CMD BOs are mapped.
func (d *Device) createBO(typ uint32, size int) (gem, error) {
	c := CreateBO{Size: uint64(size), Type: typ}
	if err := d.ioctl(IoctlCreateBO, unsafe.Pointer(&c)); err != nil {
		return gem{}, fmt.Errorf("CREATE_BO type %d size %d: %w", typ, size, err)
	}
	g := gem{handle: c.Handle, typ: typ, size: size}
	info := GetBOInfo{Handle: c.Handle}
	if err := d.ioctl(IoctlGetBOInfo, unsafe.Pointer(&info)); err != nil {
		d.gemClose(g.handle)
		return gem{}, fmt.Errorf("GET_BO_INFO of BO %d: %w", c.Handle, err)
	}
	g.xdna, g.mapOff = info.XDNAAddr, info.MapOffset
	switch typ {
	case BOShmem, BOCmd:
		p, err := d.k.Mmap(nil, uintptr(size), protRead|protWrite, mapShared, d.fd, int64(info.MapOffset))
		if err != nil {
			d.gemClose(g.handle)
			return gem{}, fmt.Errorf("mmap BO %d: %w", c.Handle, err)
		}
		g.va, g.host = p, unsafe.Slice((*byte)(p), size)
	case BODev:
		lo := d.heap.xdna
		if g.xdna < lo || g.xdna-lo > HeapSize || uint64(size) > HeapSize-(g.xdna-lo) {
			d.gemClose(g.handle)
			return gem{}, fmt.Errorf("DEV BO %d at %#x+%d outside the heap [%#x, +%d)", g.handle, g.xdna, size, lo, HeapSize)
		}
		off := g.xdna - lo
		g.host = d.heap.host[off : off+uint64(size) : off+uint64(size)]
	}
	return g, nil
}

func (d *Device) gemClose(h uint32) error {
	c := GEMClose{Handle: h}
	if err := d.ioctl(IoctlGEMClose, unsafe.Pointer(&c)); err != nil {
		return fmt.Errorf("GEM_CLOSE %d: %w", h, err)
	}
	return nil
}

// release unmaps and closes a BO.
func (d *Device) release(g *gem) error {
	var errs []error
	if g.va != nil && g.typ != BODevHeap {
		if err := d.k.Munmap(g.va, uintptr(g.size)); err != nil {
			errs = append(errs, fmt.Errorf("munmap BO %d: %w", g.handle, err))
		}
	}
	g.va, g.host = nil, nil
	if g.handle != 0 {
		errs = append(errs, d.gemClose(g.handle))
		g.handle = 0
	}
	return errors.Join(errs...)
}

// Info describes the device.
func (d *Device) Info() npu.Info { return d.info }

// Metadata is what the driver said about the AIE array.
func (d *Device) Metadata() AIEMetadata { return d.meta }

// LoadKernel checks the xclbin, then creates its hardware context and
// configures its compute units with the partition's PDIs, once per UUID
// and kernel name.
func (d *Device) LoadKernel(data []byte, name string) (npu.Kernel, error) {
	f, err := xclbin.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, fmt.Errorf("amdxdna: load kernel %q: %w", name, err)
	}
	names, err := f.KernelNames()
	if err != nil {
		return 0, fmt.Errorf("amdxdna: load kernel %q: %w", name, err)
	}
	if !slices.Contains(names, name) {
		return 0, fmt.Errorf("amdxdna: load kernel %q: xclbin %x has kernels %q", name, f.UUID, names)
	}
	part, err := f.Partition()
	if err != nil {
		return 0, fmt.Errorf("amdxdna: load kernel %q: not an NPU xclbin: %w", name, err)
	}
	switch {
	case part.ColumnWidth < 1 || int(part.ColumnWidth) > d.info.Columns:
		return 0, fmt.Errorf("amdxdna: load kernel %q: design is %d columns wide, device has %d", name, part.ColumnWidth, d.info.Columns)
	case len(part.PDIs) == 0 || len(part.PDIs) > MaxCUs:
		return 0, fmt.Errorf("amdxdna: load kernel %q: %d PDIs (want 1..%d)", name, len(part.PDIs), MaxCUs)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	for _, c := range d.ctxs {
		if c.uuid == f.UUID && c.name == name {
			return c.id, nil
		}
	}
	if len(d.ctxs) >= d.info.MaxContexts {
		return 0, fmt.Errorf("amdxdna: load kernel %q: %w (%d contexts)", name, npu.ErrContextLimit, d.info.MaxContexts)
	}
	c := &hwctx{uuid: f.UUID, name: name, columns: int(part.ColumnWidth)}
	if err := d.createContext(c, part); err != nil {
		d.destroyContext(c)
		return 0, fmt.Errorf("amdxdna: load kernel %q: %w", name, err)
	}
	c.id = npu.Kernel(len(d.ctxs) + 1)
	d.ctxs = append(d.ctxs, c)
	return c.id, nil
}

func (d *Device) createContext(c *hwctx, part *xclbin.Partition) error {
	maxOpc := part.OperationsPerCycle
	if maxOpc == 0 {
		maxOpc = defaultMaxOpc
	}
	var pin runtime.Pinner
	var qos QoSInfo // zeroed: the driver's defaults
	cr := CreateHwctx{QoSP: addr(&pin, &qos), MaxOpc: maxOpc, NumTiles: uint32(c.columns * CoreRows)}
	err := d.ioctl(IoctlCreateHwctx, unsafe.Pointer(&cr))
	pin.Unpin()
	if err != nil {
		return fmt.Errorf("CREATE_HWCTX (%d columns): %w", c.columns, err)
	}
	c.handle, c.syncobj = cr.Handle, cr.SyncobjHandle
	cfg := make([]byte, 8+8*len(part.PDIs)) // amdxdna_hwctx_param_config_cu
	binary.LittleEndian.PutUint16(cfg, uint16(len(part.PDIs)))
	for i, p := range part.PDIs {
		g, err := d.createBO(BODev, roundUp(len(p.Image), pageSize))
		if err != nil {
			return fmt.Errorf("PDI %d: %w", i, err)
		}
		c.pdis = append(c.pdis, &g)
		if g.xdna%DevAlign != 0 {
			return fmt.Errorf("PDI %d: DEV BO at %#x is not %d-byte aligned (CONFIG_CU passes xdna_addr >> 15)", i, g.xdna, DevAlign)
		}
		copy(g.host, p.Image)
		clear(g.host[len(p.Image):])
		if err := d.syncBO(g.handle, 0, g.size); err != nil {
			return fmt.Errorf("PDI %d: %w", i, err)
		}
		binary.LittleEndian.PutUint32(cfg[8+8*i:], g.handle) // cu_bo; cu_func 0 at +4
	}
	cc := ConfigHwctx{Handle: c.handle, ParamType: ConfigCUParam, ParamVal: addr(&pin, &cfg[0]), ParamValSize: uint32(len(cfg))}
	err = d.ioctl(IoctlConfigHwctx, unsafe.Pointer(&cc))
	pin.Unpin()
	if err != nil {
		return fmt.Errorf("CONFIG_HWCTX CONFIG_CU (%d PDIs): %w", len(part.PDIs), err)
	}
	return nil
}

// destroyContext destroys the context (the driver aborts its unfinished
// commands) and frees its PDIs.
func (d *Device) destroyContext(c *hwctx) error {
	var errs []error
	if c.handle != 0 {
		x := DestroyHwctx{Handle: c.handle}
		if err := d.ioctl(IoctlDestroyHwctx, unsafe.Pointer(&x)); err != nil {
			errs = append(errs, fmt.Errorf("DESTROY_HWCTX %d: %w", c.handle, err))
		}
		c.handle = 0
	}
	for _, g := range c.pdis {
		errs = append(errs, d.release(g))
	}
	c.pdis = nil
	return errors.Join(errs...)
}

func roundUp(n, a int) int { return (n + a - 1) / a * a }

func (d *Device) syncBO(h uint32, offset, size int) error {
	// Direction TO_DEVICE both ways: the driver flushes the CPU cache range
	// for either, and FROM_DEVICE fails on ordinary BOs (npu-contract.md 4.4).
	s := SyncBO{Handle: h, Direction: SyncToDevice, Offset: uint64(offset), Size: uint64(size)}
	if err := d.ioctl(IoctlSyncBO, unsafe.Pointer(&s)); err != nil {
		return fmt.Errorf("SYNC_BO %d [%d, +%d): %w", h, offset, size, err)
	}
	return nil
}

// Alloc allocates a buffer: instructions in a DEV BO from the heap, data
// in a SHMEM BO mapped into the process.
func (d *Device) Alloc(kind npu.BOKind, size int) (npu.BO, error) {
	var typ uint32
	switch kind {
	case npu.BOData:
		typ = BOShmem
	case npu.BOInstr:
		typ = BODev
	default:
		return 0, fmt.Errorf("amdxdna: alloc: %v", kind)
	}
	if size <= 0 || size > maxBO {
		return 0, fmt.Errorf("amdxdna: alloc: size %d outside [1, %d]", size, maxBO)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	g, err := d.createBO(typ, roundUp(size, pageSize))
	if err != nil {
		if typ == BOShmem && errors.Is(err, syscall.ENOMEM) {
			err = fmt.Errorf("%w (%w)", err, npu.ErrPinLimit)
		}
		return 0, fmt.Errorf("amdxdna: alloc %v buffer of %d bytes: %w", kind, size, err)
	}
	g.host = g.host[:size:size]
	d.nextBO++
	d.bos[d.nextBO] = &buffer{gem: g, kind: kind}
	return d.nextBO, nil
}

func (d *Device) buf(h npu.BO) (*buffer, error) { return npu.Lookup(d.bos, "amdxdna", h, d.closed) }

// Map returns the buffer's host view.
func (d *Device) Map(h npu.BO) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.buf(h)
	if err != nil {
		return nil, err
	}
	return b.host, nil
}

// Sync flushes the CPU cache over part of a buffer (SYNC_BO), in either
// direction.
func (d *Device) Sync(h npu.BO, dir npu.Direction, offset, size int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.buf(h)
	if err != nil {
		return err
	}
	if err := npu.CheckSync("amdxdna", h, len(b.host), b.users, dir, offset, size); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	if err := d.syncBO(b.handle, offset, size); err != nil {
		return fmt.Errorf("amdxdna: sync buffer %d: %w", h, err)
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
		return fmt.Errorf("amdxdna: free buffer %d: %w", h, npu.ErrBusy)
	}
	delete(d.bos, h)
	if err := d.release(&b.gem); err != nil {
		return fmt.Errorf("amdxdna: free buffer %d: %w", h, err)
	}
	return nil
}

// cmdBO returns an idle CMD BO, creating one if none is idle.
func (d *Device) cmdBO() (*gem, error) {
	if n := len(d.idle); n > 0 {
		g := d.idle[n-1]
		d.idle = d.idle[:n-1]
		return g, nil
	}
	g, err := d.createBO(BOCmd, CmdBOSize)
	if err != nil {
		return nil, err
	}
	return &g, nil
}

// startCU checks one dispatch and writes its ERT_START_CU packet.
func (d *Device) startCU(c *hwctx, ds *Dispatch, r *run) (*StartCU, error) {
	ib, err := d.buf(ds.Instr)
	if err != nil {
		return nil, err
	}
	if ib.kind != npu.BOInstr || ds.Words <= 0 || ds.Words > len(ib.host)/4 {
		return nil, fmt.Errorf("%d words in %v buffer %d of %d bytes", ds.Words, ib.kind, ds.Instr, len(ib.host))
	}
	if len(ds.Data) > MaxDataBOs {
		return nil, fmt.Errorf("%d data buffers, a START_CU register map holds at most %d", len(ds.Data), MaxDataBOs)
	}
	p := &StartCU{CUMask: 1, Opcode: ds.Opcode, Instr: ib.xdna, Words: uint32(ds.Words)}
	r.bufs = append(r.bufs, ib)
	for i, h := range ds.Data {
		b, err := d.buf(h)
		if err != nil {
			return nil, err
		}
		if b.kind != npu.BOData {
			return nil, fmt.Errorf("bo%d (buffer %d) is a %v buffer", i, h, b.kind)
		}
		p.Data = append(p.Data, uint64(uintptr(b.va)))
		r.bufs = append(r.bufs, b)
	}
	return p, nil
}

// Run submits one ERT_START_CU command: the MLIR_AIE arguments opcode,
// instruction buffer and its length in words, then the data buffers.
func (d *Device) Run(k npu.Kernel, opcode uint64, instr npu.BO, words int, data ...npu.BO) (npu.Run, error) {
	return d.submit(k, []Dispatch{{Opcode: opcode, Instr: instr, Words: words, Data: data}})
}

// RunChain submits several dispatches of one kernel as one ERT_CMD_CHAIN:
// one EXEC_CMD, one job, one wait. The dispatches execute in order; the
// run completes when all have, and a failure reports the failing
// dispatch's index. The chain must fit the driver's 4 KiB chain buffer
// (ChainBytes; 42 dispatches of 3 data buffers).
func (d *Device) RunChain(k npu.Kernel, ds []Dispatch) (npu.Run, error) {
	if len(ds) == 0 {
		return 0, errors.New("amdxdna: run chain: no dispatches")
	}
	return d.submit(k, ds)
}

func (d *Device) submit(k npu.Kernel, ds []Dispatch) (npu.Run, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	if k < 1 || int(k) > len(d.ctxs) {
		return 0, fmt.Errorf("amdxdna: run: kernel %d: %w", k, npu.ErrHandle)
	}
	c := d.ctxs[k-1]
	if c.broken != nil {
		return 0, fmt.Errorf("amdxdna: run: kernel %d: context unusable after %w", k, c.broken)
	}
	if c.inflight >= d.info.MaxInFlight {
		return 0, fmt.Errorf("amdxdna: run: %w (%d on context %d)", npu.ErrInFlight, c.inflight, k)
	}
	r := &run{ctx: c, n: len(ds)}
	var pkts []*StartCU
	var words []int
	for i := range ds {
		p, err := d.startCU(c, &ds[i], r)
		if err != nil {
			if len(ds) == 1 {
				return 0, fmt.Errorf("amdxdna: run: %w", err)
			}
			return 0, fmt.Errorf("amdxdna: run chain: dispatch %d: %w", i, err)
		}
		pkts = append(pkts, p)
		words = append(words, p.RegMapWords())
	}
	if len(ds) > 1 && ChainBytes(words...) > ChainBufSize {
		return 0, fmt.Errorf("amdxdna: run chain: %d dispatches take %d bytes of the driver's %d-byte chain buffer", len(ds), ChainBytes(words...), ChainBufSize)
	}
	args := make([]uint32, 0, len(r.bufs))
	for _, b := range r.bufs {
		if !slices.Contains(args, b.handle) {
			args = append(args, b.handle)
		}
	}
	giveBack := func() { d.idle = append(d.idle, r.cmds...) }
	var chain Chain
	for _, p := range pkts {
		g, err := d.cmdBO()
		if err != nil {
			giveBack()
			return 0, fmt.Errorf("amdxdna: run: command buffer: %w", err)
		}
		r.cmds = append(r.cmds, g)
		clear(g.host)
		p.Encode(g.host)
		chain.Handles = append(chain.Handles, g.handle)
	}
	if len(pkts) > 1 {
		g, err := d.cmdBO()
		if err != nil {
			giveBack()
			return 0, fmt.Errorf("amdxdna: run chain: command buffer: %w", err)
		}
		r.cmds = append(r.cmds, g)
		clear(g.host)
		chain.Encode(g.host)
	}
	r.head = r.cmds[len(r.cmds)-1]
	var pin runtime.Pinner
	x := ExecCmd{Hwctx: c.handle, Type: CmdSubmitExecBuf, CmdHandles: uint64(r.head.handle),
		Args: addr(&pin, &args[0]), CmdCount: 1, ArgCount: uint32(len(args))}
	err := d.ioctl(IoctlExecCmd, unsafe.Pointer(&x))
	pin.Unpin()
	if err != nil {
		giveBack()
		return 0, fmt.Errorf("amdxdna: EXEC_CMD on context %d: %w", k, err)
	}
	r.seq = x.Seq
	c.inflight++
	for _, b := range r.bufs {
		b.users++
	}
	d.submits++
	d.nextRun++
	d.runs[d.nextRun] = r
	return d.nextRun, nil
}

// Submissions counts EXEC_CMD calls so far (a chain is one).
func (d *Device) Submissions() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.submits
}

// Wait waits up to timeout for the run, then reads the final state from
// its packet: COMPLETED is success, anything else a *npu.RunError naming
// the state. A run that did not finish in time can be waited for again.
// The device is not locked during the wait: other calls (a prefetch's
// Sync of another buffer) go on; the run's own buffers stay refused.
func (d *Device) Wait(h npu.Run, timeout time.Duration) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return npu.ErrClosed
	}
	r := d.runs[h]
	if r == nil {
		d.mu.Unlock()
		return fmt.Errorf("amdxdna: wait: run %d: %w", h, npu.ErrHandle)
	}
	hwctx, syncobj, useSyncobj := r.ctx.handle, r.ctx.syncobj, d.syncobj
	d.mu.Unlock()
	err := d.waitSeq(hwctx, syncobj, r.seq, useSyncobj, timeout)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.runs[h] != r {
		return npu.ErrClosed // closed (and the run aborted) while waiting
	}
	if err != nil {
		if errors.Is(err, syscall.ETIME) || errors.Is(err, syscall.ETIMEDOUT) {
			return fmt.Errorf("amdxdna: run %d not finished after %v: %w", h, timeout, npu.ErrTimeout)
		}
		d.finish(h, r, fmt.Errorf("wait: %w", err))
		return fmt.Errorf("amdxdna: wait: run %d: %w", h, err)
	}
	hd := ParseHeader(binary.LittleEndian.Uint32(r.head.host))
	if hd.State == npu.StateCompleted {
		d.finish(h, r, nil)
		return nil
	}
	e := &npu.RunError{Run: h, State: hd.State}
	if r.n == 1 {
		d.finish(h, r, e)
		return e
	}
	ce := &ChainError{RunError: e} // no valid index: count the whole chain failed
	if ch, err := ParseChain(r.head.host); err == nil && int(ch.ErrorIndex) < r.n {
		ce.Index = int(ch.ErrorIndex)
	}
	e.Msg = fmt.Sprintf("chain of %d dispatches failed at dispatch %d", r.n, ce.Index)
	d.finish(h, r, e)
	return ce
}

// waitSeq waits for point seq on a context's timeline: WAIT_CMD, or the
// timeline syncobj on kernels without it (then for good).
func (d *Device) waitSeq(hwctx, syncobj uint32, seq uint64, useSyncobj bool, timeout time.Duration) error {
	if !useSyncobj {
		ms := uint32(min(max((timeout+time.Millisecond-1)/time.Millisecond, 1), 1<<31))
		w := WaitCmd{Hwctx: hwctx, Timeout: ms, Seq: seq}
		err := d.ioctl(IoctlWaitCmd, unsafe.Pointer(&w))
		if !errors.Is(err, syscall.ENOTTY) {
			return err
		}
		d.mu.Lock()
		d.syncobj = true
		d.mu.Unlock()
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	point := seq
	w := SyncobjTimelineWait{Handles: addr(&pin, &syncobj), Points: addr(&pin, &point),
		TimeoutNsec: d.k.Monotonic() + int64(timeout), CountHandles: 1, Flags: SyncobjWaitForSubmit}
	return d.ioctl(IoctlSyncobjTimelineWait, unsafe.Pointer(&w))
}

// finish retires a run; a failed one marks its context unusable.
func (d *Device) finish(h npu.Run, r *run, failed error) {
	delete(d.runs, h)
	r.ctx.inflight--
	for _, b := range r.bufs {
		b.users--
	}
	d.idle = append(d.idle, r.cmds...)
	if failed != nil && r.ctx.broken == nil {
		r.ctx.broken = failed
	}
}

// Close destroys the contexts (the driver aborts what still runs), frees
// every buffer, unmaps the heap and closes the device.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	err := d.teardown()
	if err != nil {
		return fmt.Errorf("amdxdna: close: %w", err)
	}
	return nil
}

func (d *Device) teardown() error {
	var errs []error
	for _, c := range d.ctxs {
		errs = append(errs, d.destroyContext(c))
	}
	d.ctxs = nil
	clear(d.runs)
	for h, b := range d.bos {
		errs = append(errs, d.release(&b.gem))
		delete(d.bos, h)
	}
	for _, g := range d.idle {
		errs = append(errs, d.release(g))
	}
	d.idle = nil
	for i := range d.resv {
		if d.resv[i].n > 0 {
			errs = append(errs, d.k.Munmap(d.resv[i].p, d.resv[i].n))
		}
	}
	if d.heap.va != nil {
		errs = append(errs, d.k.Munmap(d.heap.va, HeapSize))
		d.heap.va, d.heap.host = nil, nil
	}
	errs = append(errs, d.release(&d.heap))
	if d.fd >= 0 {
		errs = append(errs, d.k.Close(d.fd))
		d.fd = -1
	}
	return errors.Join(errs...)
}
