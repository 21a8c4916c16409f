// Package amdxdnatest is a fake amdxdna driver for tests: an
// amdxdna.Kernel that checks every ioctl the way the driver does (struct
// sizes through the request numbers, MBZ fields, flags, handle lifetimes,
// the heap's size and alignment, BO types, the ERT packets) and the
// firmware-level rules learned on hardware (instructions in a DEV BO at its
// xdna_addr, data in SHMEM BOs at their VA and listed in EXEC_CMD args,
// ninstr in words equal to the TXN header's size, at most 4 commands in
// flight, no re-configuration of CUs), then hands each command's
// instruction stream and data buffers to the emulator (Exec). Every rule
// it enforces is listed in ../../../shared/reference/npu-contract.md
// section 4; the error messages name the rule.
//
// Memory is real: BOs are anonymous mappings of the test process, the heap
// is mapped where the caller asks (MAP_FIXED), so the Device under test
// reads and writes through the same pointers it would on hardware.
package amdxdnatest

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
)

// Config describes the fake device.
type Config struct {
	Driver      string // DRM driver name (default "amdxdna_accel_driver")
	Cols        uint16 // AIE columns the metadata reports (5 on Phoenix, 8 on Strix)
	Columns     int    // columns a context may use
	DevGen      int    // TXN devGen the firmware accepts: 3 npu1, 4 npu2
	MaxContexts int    // hardware contexts per process (6, 16)
	NoWaitCmd   bool   // a kernel without WAIT_CMD (ENOTTY): waits go through the syncobj
	// EnforceMemlock makes SHMEM buffer creation fail with ENOMEM once the
	// process's SHMEM buffers would pass its RLIMIT_MEMLOCK (read at each
	// creation). Inferred, not confirmed: the real driver pins a buffer's
	// pages while commands use it, and user-memory buffers are charged to
	// the memlock limit (the failures users of XRT-based NPU runtimes meet,
	// FastFlowLM #437, #460, #490); charging every SHMEM buffer is the
	// stricter reading.
	EnforceMemlock bool
	// Kernels makes the cores' kernel of the design each configured CU's
	// PDI names (nil: gemv.GoModel, the Go model).
	Kernels gemv.Factory
	// Firmware is what QUERY_FIRMWARE_VERSION answers (major, minor,
	// patch, build; zero: 1.5.5.391 on XDNA1, 1.1.2.64 on XDNA2: release
	// numbers seen in the field, not a claim about any device).
	Firmware [4]uint32
}

// XDNA1 is a Phoenix NPU.
func XDNA1() Config {
	return Config{Driver: "amdxdna_accel_driver", Cols: 5, Columns: 4, DevGen: 3, MaxContexts: 6}
}

// XDNA2 is a Strix NPU.
func XDNA2() Config {
	return Config{Driver: "amdxdna_accel_driver", Cols: 8, Columns: 8, DevGen: 4, MaxContexts: 16}
}

// FakeDesc is the driver description DRM_IOCTL_VERSION gives (the real
// driver's says "AMD XDNA DRM implementation" or the like).
const FakeDesc = "fake amdxdna driver (amdxdnatest): commands execute on the emulator"

// Path is the device path the fake answers to.
const Path = "/dev/accel/accel0"

// Devices lists the fake's one device (amdxdna.Lister).
func (k *Kernel) Devices() []string { return []string{Path} }

// Fault is an injected failure of one submission.
type Fault uint8

// The faults.
const (
	FaultNone  Fault = iota
	FaultHang        // the command never finishes: waits time out until the context is destroyed
	FaultError       // the command finishes in state ERROR
)

// Driver facts the fake enforces.
const (
	heapXDNA     = 0x4000000 // AIE2_DEVM_BASE
	invalidAddr  = ^uint64(0)
	maxParamSize = 4096 // CONFIG_HWCTX param_val buffer (PAGE_SIZE)
	fwInvalParam = 0x4000003
	maxBOSize    = 1 << 32
)

// Stats is what the fake saw.
type Stats struct {
	Submissions int64 // EXEC_CMD calls accepted
	Chains      int64 // of which ERT_CMD_CHAIN
	Commands    int64 // START_CU commands executed
	Completed   int64 // submissions finished COMPLETED
	Failed      int64 // submissions finished in another state
	Syncs       int64
	Waits       int64 // WAIT_CMD calls
	SyncobjWait int64 // SYNCOBJ_TIMELINE_WAIT calls
}

// Kernel is the fake. It is safe for concurrent use.
type Kernel struct {
	mu     sync.Mutex
	cfg    Config
	files  map[int]*client
	nextFD int
	anon   []region // anonymous mappings made for the caller
	faults map[int64]Fault
	stats  Stats
	errs   []string // why commands failed, in order
}

type region struct{ start, end uintptr }

type bo struct {
	handle  uint32
	typ     uint32
	size    int
	mem     unsafe.Pointer // backing memory (SHMEM, CMD); heap: the mapping
	xdna    uint64
	mapOff  uint64
	maps    int  // live user mappings (they share mem)
	closed  bool // GEM_CLOSE done; the memory lives while mapped or referenced
	refs    int  // unfinished commands holding it
	devBlk  int  // DEV: first 32 KiB block in the heap
	devN    int  // DEV: blocks
	cmdSeen bool
}

func (b *bo) bytes() []byte { return unsafe.Slice((*byte)(b.mem), b.size) }

type hwctx struct {
	handle    uint32
	syncobj   uint32
	columns   int
	cus       []*bo        // nil until CONFIG_CU
	arrays    []*emu.Array // per CU: the emulated array running its design
	arrayErrs []error      // per CU: why it has none
	seq       uint64
	pending   []*command
	dead      bool
}

type command struct {
	seq   uint64
	n     int64 // submission number, from 1
	head  *bo
	subs  []*bo // START_CU packets (the head itself when not a chain)
	args  []*bo
	fault Fault
	done  bool
}

type client struct {
	fd       int
	bos      map[uint32]*bo
	next     uint32
	heap     *bo
	heapVA   uintptr
	blocks   []bool // 32 KiB blocks of the heap in use
	ctxs     map[uint32]*hwctx
	nextCtx  uint32
	syncobjs map[uint32]*hwctx
	closed   bool
}

// New returns a fake with the device at Path.
func New(cfg Config) *Kernel {
	if cfg.Driver == "" {
		cfg.Driver = "amdxdna_accel_driver"
	}
	return &Kernel{cfg: cfg, files: map[int]*client{}, nextFD: 3, faults: map[int64]Fault{}}
}

var _ amdxdna.Kernel = (*Kernel)(nil)

// Errno is the fake's error: the errno the driver returns and why.
type Errno struct {
	Errno syscall.Errno
	Msg   string
}

func (e *Errno) Error() string { return fmt.Sprintf("%v (fake amdxdna: %s)", e.Errno, e.Msg) }

// Unwrap makes errors.Is(err, syscall.EINVAL) work.
func (e *Errno) Unwrap() error { return e.Errno }

func fail(no syscall.Errno, format string, args ...any) error {
	return &Errno{Errno: no, Msg: fmt.Sprintf(format, args...)}
}

// InjectFault makes the n-th submission (EXEC_CMD, counted from 1) fail.
func (k *Kernel) InjectFault(n int64, f Fault) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.faults[n] = f
}

// Stats returns the counters.
func (k *Kernel) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stats
}

// Failures returns why commands ended in a state other than COMPLETED.
func (k *Kernel) Failures() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.errs)
}

// Live reports what is still allocated: open descriptors, BOs (not closed,
// or closed but still mapped), contexts and anonymous mappings.
func (k *Kernel) Live() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	fds, bos, ctxs := 0, 0, 0
	for _, c := range k.files {
		if !c.closed {
			fds++
		}
		for _, b := range c.bos {
			if !b.closed || b.maps > 0 {
				bos++
			}
		}
		ctxs += len(c.ctxs)
	}
	if fds+bos+ctxs+len(k.anon) == 0 {
		return ""
	}
	return fmt.Sprintf("%d open files, %d BOs, %d contexts, %d anonymous mappings", fds, bos, ctxs, len(k.anon))
}

// Open opens the fake device.
func (k *Kernel) Open(path string) (int, error) {
	if path != Path {
		return -1, syscall.ENOENT
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	fd := k.nextFD
	k.nextFD++
	k.files[fd] = &client{fd: fd, bos: map[uint32]*bo{}, ctxs: map[uint32]*hwctx{}, syncobjs: map[uint32]*hwctx{},
		blocks: make([]bool, amdxdna.HeapSize/amdxdna.DevAlign)}
	return fd, nil
}

// Close closes the file: the driver destroys what the client left.
func (k *Kernel) Close(fd int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.files[fd]
	if c == nil || c.closed {
		return syscall.EBADF
	}
	for _, x := range c.ctxs {
		k.destroy(c, x)
	}
	for _, b := range c.bos {
		if !b.closed {
			b.closed = true
			k.maybeFree(c, b)
		}
	}
	c.closed = true
	delete(k.files, fd)
	return nil
}

// Monotonic is a clock that does not move: the fake never sleeps.
func (k *Kernel) Monotonic() int64 { return 1e9 }

func (k *Kernel) client(fd int) (*client, error) {
	c := k.files[fd]
	if c == nil || c.closed {
		return nil, syscall.EBADF
	}
	return c, nil
}

// realMmap maps anonymous memory for the fake's BOs and the caller's
// reservations.
func realMmap(addr unsafe.Pointer, n uintptr, prot, flags int) (unsafe.Pointer, error) {
	return unix.MmapPtr(-1, 0, addr, n, prot, flags|unix.MAP_ANONYMOUS)
}

// Mmap maps a BO of the device (by its map offset) or anonymous memory.
func (k *Kernel) Mmap(addr unsafe.Pointer, length uintptr, prot, flags, fd int, offset int64) (unsafe.Pointer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if flags&amdxdna.MapAnonymous != 0 {
		if fd != -1 {
			return nil, fail(syscall.EINVAL, "anonymous mmap with fd %d", fd)
		}
		p, err := realMmap(addr, length, prot, flags&^amdxdna.MapAnonymous)
		if err != nil {
			return nil, err
		}
		k.addAnon(uintptr(p), uintptr(p)+length)
		return p, nil
	}
	c, err := k.client(fd)
	if err != nil {
		return nil, err
	}
	var b *bo
	for _, x := range c.bos {
		if !x.closed && x.mapOff == uint64(offset) {
			b = x
		}
	}
	switch {
	case b == nil:
		return nil, fail(syscall.EINVAL, "mmap offset %#x is no BO's map_offset", offset)
	case b.typ == amdxdna.BODev:
		return nil, fail(syscall.EINVAL, "DEV BO %d has no mmap of its own: its host view is the heap's", b.handle)
	case int(length) != b.size:
		return nil, fail(syscall.EINVAL, "mmap of BO %d: %d bytes, the BO has %d", b.handle, length, b.size)
	case flags&amdxdna.MapShared == 0:
		return nil, fail(syscall.EINVAL, "mmap of BO %d without MAP_SHARED", b.handle)
	case prot&(amdxdna.ProtRead|amdxdna.ProtWrite) != amdxdna.ProtRead|amdxdna.ProtWrite:
		return nil, fail(syscall.EACCES, "mmap of BO %d: prot %#x, want read-write", b.handle, prot)
	}
	if b.typ == amdxdna.BODevHeap {
		if b.maps > 0 {
			return nil, fail(syscall.EBUSY, "device heap mapped twice")
		}
		fl := unix.MAP_SHARED
		if flags&amdxdna.MapFixed != 0 {
			fl |= unix.MAP_FIXED
		}
		p, err := realMmap(addr, length, unix.PROT_READ|unix.PROT_WRITE, fl)
		if err != nil {
			return nil, err
		}
		k.cutAnon(uintptr(p), uintptr(p)+length) // MAP_FIXED replaced part of a reservation
		b.mem, b.maps = p, 1
		c.heapVA = uintptr(p)
		return p, nil
	}
	b.maps++
	return b.mem, nil
}

func (k *Kernel) addAnon(s, e uintptr) {
	k.anon = append(k.anon, region{s, e})
	sort.Slice(k.anon, func(i, j int) bool { return k.anon[i].start < k.anon[j].start })
}

// cutAnon removes [s, e) from the anonymous regions and reports whether it
// was all inside them.
func (k *Kernel) cutAnon(s, e uintptr) bool {
	covered := uintptr(0)
	var out []region
	for _, r := range k.anon {
		if r.end <= s || r.start >= e {
			out = append(out, r)
			continue
		}
		covered += min(r.end, e) - max(r.start, s)
		if r.start < s {
			out = append(out, region{r.start, s})
		}
		if r.end > e {
			out = append(out, region{e, r.end})
		}
	}
	k.anon = out
	return covered == e-s
}

// Munmap unmaps a BO mapping or anonymous memory the caller mapped.
func (k *Kernel) Munmap(addr unsafe.Pointer, length uintptr) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	a := uintptr(addr)
	for _, c := range k.files {
		for _, b := range c.bos {
			if b.mem == nil || uintptr(b.mem) != a || b.maps == 0 {
				continue
			}
			if int(length) != b.size {
				return fail(syscall.EINVAL, "munmap of BO %d: %d bytes, mapped %d", b.handle, length, b.size)
			}
			b.maps--
			if b.typ == amdxdna.BODevHeap {
				c.heapVA = 0
			}
			k.maybeFree(c, b)
			return nil
		}
	}
	if !k.cutAnon(a, a+length) {
		return fail(syscall.EINVAL, "munmap [%#x, +%d): not a mapping of this process", a, length)
	}
	return unix.MunmapPtr(addr, length)
}

// maybeFree releases a BO's memory once it is closed, unmapped and
// unreferenced.
func (k *Kernel) maybeFree(c *client, b *bo) {
	if !b.closed || b.maps > 0 || b.refs > 0 {
		return
	}
	switch b.typ {
	case amdxdna.BODev:
		for i := range b.devN {
			c.blocks[b.devBlk+i] = false
		}
	case amdxdna.BODevHeap:
		if b.mem != nil {
			unix.MunmapPtr(b.mem, uintptr(b.size))
		}
		if c.heap == b {
			c.heap = nil
		}
	default:
		unix.MunmapPtr(b.mem, uintptr(b.size))
	}
	b.mem = nil
	delete(c.bos, b.handle)
}

// ptr turns a user pointer of a uAPI struct into a pointer.
func ptr(a uint64) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// Ioctl dispatches one request.
func (k *Kernel) Ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, err := k.client(fd)
	if err != nil {
		return err
	}
	if arg == nil {
		return fail(syscall.EFAULT, "ioctl %#x with a nil argument", req)
	}
	switch req {
	case amdxdna.IoctlVersion:
		return k.version((*amdxdna.DRMVersion)(arg))
	case amdxdna.IoctlGetInfo:
		return k.getInfo((*amdxdna.GetInfo)(arg))
	case amdxdna.IoctlCreateBO:
		return k.createBO(c, (*amdxdna.CreateBO)(arg))
	case amdxdna.IoctlGetBOInfo:
		return k.getBOInfo(c, (*amdxdna.GetBOInfo)(arg))
	case amdxdna.IoctlSyncBO:
		return k.syncBO(c, (*amdxdna.SyncBO)(arg))
	case amdxdna.IoctlGEMClose:
		return k.gemClose(c, (*amdxdna.GEMClose)(arg))
	case amdxdna.IoctlCreateHwctx:
		return k.createHwctx(c, (*amdxdna.CreateHwctx)(arg))
	case amdxdna.IoctlDestroyHwctx:
		return k.destroyHwctx(c, (*amdxdna.DestroyHwctx)(arg))
	case amdxdna.IoctlConfigHwctx:
		return k.configHwctx(c, (*amdxdna.ConfigHwctx)(arg))
	case amdxdna.IoctlExecCmd:
		return k.execCmd(c, (*amdxdna.ExecCmd)(arg))
	case amdxdna.IoctlWaitCmd:
		if k.cfg.NoWaitCmd {
			return fail(syscall.ENOTTY, "this kernel has no WAIT_CMD")
		}
		return k.waitCmd(c, (*amdxdna.WaitCmd)(arg))
	case amdxdna.IoctlSyncobjTimelineWait:
		return k.syncobjWait(c, (*amdxdna.SyncobjTimelineWait)(arg))
	}
	if req>>8&0xFF == 'd' && req&0xFF < 0x40 {
		return fail(syscall.EACCES, "DRM core ioctl %#x (nr %#x): driver ioctls start at DRM_COMMAND_BASE 0x40", req, req&0xFF)
	}
	return fail(syscall.ENOTTY, "unknown ioctl %#x (wrong size or direction in the request number?)", req)
}

func (k *Kernel) version(v *amdxdna.DRMVersion) error {
	name := []byte(k.cfg.Driver)
	if v.NameLen > 0 {
		if v.Name == 0 {
			return fail(syscall.EFAULT, "DRM_IOCTL_VERSION: name_len %d with a nil name", v.NameLen)
		}
		copy(unsafe.Slice((*byte)(ptr(v.Name)), v.NameLen), name)
	}
	v.Major, v.Minor, v.Patchlevel = 0, 1, 0
	v.NameLen = uint64(len(name))
	// The description says what this is, so that no report passes the
	// fake's figures off as a device's.
	desc := []byte(FakeDesc)
	if v.DescLen > 0 && v.Desc != 0 {
		copy(unsafe.Slice((*byte)(ptr(v.Desc)), v.DescLen), desc)
	}
	v.DescLen = uint64(len(desc))
	return nil
}

func (k *Kernel) getInfo(g *amdxdna.GetInfo) error {
	switch g.Param {
	case amdxdna.QueryAIEVersion:
		return putInfo(g, "AIE version", amdxdna.AIEVersion{Major: 2})
	case amdxdna.QueryFirmwareVersion:
		fw := k.cfg.Firmware
		if fw == [4]uint32{} {
			fw = [4]uint32{1, 1, 2, 64}
			if k.cfg.Cols < 8 {
				fw = [4]uint32{1, 5, 5, 391}
			}
		}
		return putInfo(g, "firmware version", amdxdna.FirmwareVersion{Major: fw[0], Minor: fw[1], Patch: fw[2], Build: fw[3]})
	case amdxdna.QueryAIEMetadata:
	default:
		return fail(syscall.EINVAL, "GET_INFO param %d not faked", g.Param)
	}
	m := amdxdna.AIEMetadata{ColSize: 0x2000000, Cols: k.cfg.Cols, Rows: 6, Version: amdxdna.AIEVersion{Major: 2},
		Core: amdxdna.TileMetadata{RowCount: 4, RowStart: 2}, Mem: amdxdna.TileMetadata{RowCount: 1, RowStart: 1},
		Shim: amdxdna.TileMetadata{RowCount: 1}}
	if g.BufferSize < uint32(unsafe.Sizeof(m)) || g.Buffer == 0 {
		return fail(syscall.EINVAL, "GET_INFO AIE metadata: buffer of %d bytes, need %d", g.BufferSize, unsafe.Sizeof(m))
	}
	*(*amdxdna.AIEMetadata)(ptr(g.Buffer)) = m
	g.BufferSize = uint32(unsafe.Sizeof(m))
	return nil
}

// putInfo answers a GET_INFO with v, as the driver does: a buffer too
// small is EINVAL.
func putInfo[T any](g *amdxdna.GetInfo, what string, v T) error {
	if g.BufferSize < uint32(unsafe.Sizeof(v)) || g.Buffer == 0 {
		return fail(syscall.EINVAL, "GET_INFO %s: buffer of %d bytes, need %d", what, g.BufferSize, unsafe.Sizeof(v))
	}
	*(*T)(ptr(g.Buffer)) = v
	g.BufferSize = uint32(unsafe.Sizeof(v))
	return nil
}

func (k *Kernel) createBO(c *client, a *amdxdna.CreateBO) error {
	switch {
	case a.Flags != 0:
		return fail(syscall.EINVAL, "CREATE_BO: flags %#x, MBZ", a.Flags)
	case a.VAddr != 0:
		return fail(syscall.EINVAL, "CREATE_BO: vaddr %#x, MBZ (no user-pointer BOs)", a.VAddr)
	case a.Handle != 0:
		return fail(syscall.EINVAL, "CREATE_BO: handle %d on input (an output field)", a.Handle)
	case a.Size == 0 || a.Size > maxBOSize || a.Size%4096 != 0:
		return fail(syscall.EINVAL, "CREATE_BO: size %d (want whole pages, at most %d)", a.Size, uint64(maxBOSize))
	}
	b := &bo{typ: a.Type, size: int(a.Size), xdna: invalidAddr}
	switch a.Type {
	case amdxdna.BOShmem, amdxdna.BOCmd:
		if a.Type == amdxdna.BOShmem && k.cfg.EnforceMemlock {
			var r unix.Rlimit
			if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err == nil && r.Cur != unix.RLIM_INFINITY {
				pinned := uint64(0)
				for _, o := range c.bos {
					if o.typ == amdxdna.BOShmem && !o.closed {
						pinned += uint64(o.size)
					}
				}
				if pinned+a.Size > r.Cur {
					return fail(syscall.ENOMEM, "CREATE_BO: %d bytes would pin %d, above RLIMIT_MEMLOCK %d", a.Size, pinned+a.Size, r.Cur)
				}
			}
		}
		p, err := realMmap(nil, uintptr(a.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
		if err != nil {
			return fail(syscall.ENOMEM, "CREATE_BO: %v", err)
		}
		b.mem = p
	case amdxdna.BODevHeap:
		if c.heap != nil {
			return fail(syscall.EBUSY, "CREATE_BO: a second device heap (one per process)")
		}
		if a.Size != amdxdna.HeapSize {
			return fail(syscall.EINVAL, "CREATE_BO: device heap of %d bytes, want %d", a.Size, amdxdna.HeapSize)
		}
		b.xdna = heapXDNA
		c.heap = b
	case amdxdna.BODev:
		if c.heap == nil {
			return fail(syscall.ENOENT, "CREATE_BO DEV: dev heap object not exist")
		}
		if c.heap.maps == 0 {
			return fail(syscall.EINVAL, "CREATE_BO DEV: Invalid dev heap userptr (the heap is not mapped)")
		}
		n := int(a.Size+amdxdna.DevAlign-1) / amdxdna.DevAlign
		first := -1
		for i := 0; i+n <= len(c.blocks) && first < 0; i++ {
			if !slices.Contains(c.blocks[i:i+n], true) {
				first = i
			}
		}
		if first < 0 {
			return fail(syscall.ENOMEM, "CREATE_BO DEV: %d bytes do not fit in the 64 MiB heap", a.Size)
		}
		for i := range n {
			c.blocks[first+i] = true
		}
		b.devBlk, b.devN = first, n
		b.xdna = heapXDNA + uint64(first*amdxdna.DevAlign)
		b.mem = unsafe.Add(c.heap.mem, first*amdxdna.DevAlign)
		b.size = int(a.Size)
	default:
		return fail(syscall.EINVAL, "CREATE_BO: type %d", a.Type)
	}
	c.next++
	b.handle = c.next
	b.mapOff = uint64(b.handle) << 32
	c.bos[b.handle] = b
	a.Handle = b.handle
	return nil
}

func (c *client) bo(h uint32, what string) (*bo, error) {
	b := c.bos[h]
	if b == nil || b.closed {
		return nil, fail(syscall.ENOENT, "%s: BO handle %d does not exist", what, h)
	}
	return b, nil
}

func (k *Kernel) getBOInfo(c *client, a *amdxdna.GetBOInfo) error {
	if a.Ext != 0 || a.ExtFlags != 0 || a.Pad != 0 {
		return fail(syscall.EINVAL, "GET_BO_INFO: ext %#x ext_flags %#x pad %#x, MBZ", a.Ext, a.ExtFlags, a.Pad)
	}
	b, err := c.bo(a.Handle, "GET_BO_INFO")
	if err != nil {
		return err
	}
	a.XDNAAddr, a.VAddr, a.MapOffset = b.xdna, 0, b.mapOff
	return nil
}

func (k *Kernel) syncBO(c *client, a *amdxdna.SyncBO) error {
	b, err := c.bo(a.Handle, "SYNC_BO")
	if err != nil {
		return err
	}
	switch {
	case a.Direction == amdxdna.SyncFromDevice:
		return fail(syscall.EINVAL, "SYNC_BO FROM_DEVICE on BO %d: only debug BOs take it; flush with TO_DEVICE both ways", a.Handle)
	case a.Direction != amdxdna.SyncToDevice:
		return fail(syscall.EINVAL, "SYNC_BO: direction %d", a.Direction)
	case a.Size == 0 || a.Offset > uint64(b.size) || a.Size > uint64(b.size)-a.Offset:
		return fail(syscall.EINVAL, "SYNC_BO: [%d, +%d) outside BO %d of %d bytes", a.Offset, a.Size, a.Handle, b.size)
	case b.typ == amdxdna.BODevHeap:
		return fail(syscall.EINVAL, "SYNC_BO of the heap itself")
	}
	k.stats.Syncs++
	return nil
}

func (k *Kernel) gemClose(c *client, a *amdxdna.GEMClose) error {
	if a.Pad != 0 {
		return fail(syscall.EINVAL, "GEM_CLOSE: pad %#x, MBZ", a.Pad)
	}
	b, err := c.bo(a.Handle, "GEM_CLOSE")
	if err != nil {
		return err
	}
	if b.typ == amdxdna.BODevHeap {
		for _, x := range c.bos {
			if x.typ == amdxdna.BODev && !x.closed {
				return fail(syscall.EBUSY, "GEM_CLOSE of the heap while DEV BO %d lives in it", x.handle)
			}
		}
	}
	if b.typ == amdxdna.BODev {
		for _, x := range c.ctxs {
			if slices.Contains(x.cus, b) {
				return fail(syscall.EBUSY, "GEM_CLOSE of PDI BO %d while context %d uses it", b.handle, x.handle)
			}
		}
	}
	b.closed = true
	k.maybeFree(c, b)
	return nil
}

func (k *Kernel) createHwctx(c *client, a *amdxdna.CreateHwctx) error {
	switch {
	case a.Ext != 0 || a.ExtFlags != 0:
		return fail(syscall.EINVAL, "CREATE_HWCTX: ext %#x ext_flags %#x, MBZ", a.Ext, a.ExtFlags)
	case a.QoSP == 0:
		return fail(syscall.EFAULT, "CREATE_HWCTX: qos_p is NULL (point it at a zeroed amdxdna_qos_info)")
	case a.UmqBO != 0 || a.LogBufBO != 0:
		return fail(syscall.EINVAL, "CREATE_HWCTX: umq_bo %d log_buf_bo %d on a KMQ device, MBZ", a.UmqBO, a.LogBufBO)
	case a.Handle != 0 || a.SyncobjHandle != 0 || a.UmqDoorbell != 0:
		return fail(syscall.EINVAL, "CREATE_HWCTX: output fields set on input")
	case a.MaxOpc == 0:
		return fail(syscall.EINVAL, "CREATE_HWCTX: max_opc 0 (the xclbin's operations_per_cycle)")
	case a.NumTiles%amdxdna.CoreRows != 0 || a.NumTiles/amdxdna.CoreRows < 1 || int(a.NumTiles/amdxdna.CoreRows) > k.cfg.Columns:
		return fail(syscall.EINVAL, "CREATE_HWCTX: num_tiles %d: want columns x %d core rows, columns 1..%d", a.NumTiles, amdxdna.CoreRows, k.cfg.Columns)
	case c.heap == nil:
		return fail(syscall.ENOENT, "CREATE_HWCTX: dev heap object not exist (create the DEV_HEAP first)")
	case c.heap.maps == 0:
		return fail(syscall.EINVAL, "CREATE_HWCTX: Invalid dev heap userptr (the heap is not mapped)")
	case c.heapVA%amdxdna.HeapAlign != 0:
		return fail(syscall.EINVAL, "CREATE_HWCTX: firmware status %#x, Map host buffer failed: heap mapped at %#x, not 64 MiB-aligned", fwInvalParam, c.heapVA)
	case len(c.ctxs) >= k.cfg.MaxContexts:
		return fail(syscall.EINVAL, "CREATE_HWCTX: %d contexts already (the limit)", len(c.ctxs))
	}
	q := (*amdxdna.QoSInfo)(ptr(a.QoSP))
	switch q.Priority {
	case 0, 0x100, 0x180, 0x200, 0x280:
	default:
		return fail(syscall.EINVAL, "CREATE_HWCTX: QoS priority %#x", q.Priority)
	}
	c.nextCtx++
	x := &hwctx{handle: c.nextCtx, syncobj: 0x100 + c.nextCtx, columns: int(a.NumTiles / amdxdna.CoreRows)}
	c.ctxs[x.handle] = x
	c.syncobjs[x.syncobj] = x
	a.Handle, a.SyncobjHandle = x.handle, x.syncobj
	return nil
}

func (c *client) hwctx(h uint32, what string) (*hwctx, error) {
	x := c.ctxs[h]
	if x == nil {
		return nil, fail(syscall.ENOENT, "%s: hardware context %d does not exist", what, h)
	}
	return x, nil
}

func (k *Kernel) destroyHwctx(c *client, a *amdxdna.DestroyHwctx) error {
	if a.Pad != 0 {
		return fail(syscall.EINVAL, "DESTROY_HWCTX: pad %#x, MBZ", a.Pad)
	}
	x, err := c.hwctx(a.Handle, "DESTROY_HWCTX")
	if err != nil {
		return err
	}
	k.destroy(c, x)
	return nil
}

// destroy aborts the context's unfinished commands and frees it.
func (k *Kernel) destroy(c *client, x *hwctx) {
	for _, cmd := range x.pending {
		k.finish(c, cmd, npu.StateAbort, -1, "")
	}
	x.pending, x.dead, x.cus = nil, true, nil
	delete(c.ctxs, x.handle)
	delete(c.syncobjs, x.syncobj)
}

func (k *Kernel) configHwctx(c *client, a *amdxdna.ConfigHwctx) error {
	x, err := c.hwctx(a.Handle, "CONFIG_HWCTX")
	if err != nil {
		return err
	}
	switch {
	case a.Pad != 0:
		return fail(syscall.EINVAL, "CONFIG_HWCTX: pad %#x, MBZ", a.Pad)
	case a.ParamType != amdxdna.ConfigCUParam:
		return fail(syscall.EINVAL, "CONFIG_HWCTX: param_type %d not faked (CONFIG_CU is 0)", a.ParamType)
	case x.cus != nil:
		return fail(syscall.EINVAL, "CONFIG_HWCTX: Not support re-config CU (context %d is configured)", a.Handle)
	case a.ParamVal == 0:
		return fail(syscall.EFAULT, "CONFIG_HWCTX: param_val is NULL")
	case a.ParamValSize < 16 || a.ParamValSize > maxParamSize:
		return fail(syscall.EINVAL, "CONFIG_HWCTX: param_val_size %d outside [16, %d]", a.ParamValSize, maxParamSize)
	}
	// The fixed part first: a size that disagrees with num_cus is refused
	// before anything past the caller's buffer is read.
	p := unsafe.Slice((*byte)(ptr(a.ParamVal)), 8)
	le := binary.LittleEndian
	n := int(le.Uint16(p))
	switch {
	case n < 1 || n > amdxdna.MaxCUs:
		return fail(syscall.EINVAL, "CONFIG_CU: num_cus %d outside 1..%d", n, amdxdna.MaxCUs)
	case int(a.ParamValSize) != 8+8*n:
		return fail(syscall.EINVAL, "CONFIG_CU: param_val_size %d for %d CUs (want %d)", a.ParamValSize, n, 8+8*n)
	}
	p = unsafe.Slice((*byte)(ptr(a.ParamVal)), a.ParamValSize)
	switch {
	case le.Uint16(p[2:]) != 0 || le.Uint32(p[4:]) != 0:
		return fail(syscall.EINVAL, "CONFIG_CU: pad after num_cus, MBZ")
	}
	var cus []*bo
	for i := range n {
		e := p[8+8*i:]
		h := le.Uint32(e)
		if e[4] != 0 || e[5] != 0 || e[6] != 0 || e[7] != 0 {
			return fail(syscall.EINVAL, "CONFIG_CU: CU %d: cu_func %d pad %v (cu_bo at byte 8, cu_func at 12)", i, e[4], e[5:8])
		}
		b, err := c.bo(h, fmt.Sprintf("CONFIG_CU CU %d", i))
		if err != nil {
			return err
		}
		if b.typ != amdxdna.BODev {
			return fail(syscall.EINVAL, "CONFIG_CU: CU %d: BO %d is type %d, a PDI lives in a DEV BO", i, h, b.typ)
		}
		if b.xdna%amdxdna.DevAlign != 0 {
			return fail(syscall.EINVAL, "CONFIG_CU: CU %d: PDI at %#x not 32 KiB-aligned", i, b.xdna)
		}
		if allZero(b.bytes()) {
			return fail(syscall.EINVAL, "CONFIG_CU: CU %d: PDI BO %d is empty", i, h)
		}
		// The driver takes any PDI; the emulator can only run one that
		// names its design, and says so when a command selects this CU.
		arr, err := arrayFor(k.cfg.Kernels, k.cfg.DevGen, b.bytes())
		cus = append(cus, b)
		x.arrays = append(x.arrays, arr)
		x.arrayErrs = append(x.arrayErrs, err)
	}
	x.cus = cus
	return nil
}

func allZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// Mem returns the memory of BO handle of the client on fd (tests use it to
// read or corrupt a packet on its way to the driver); nil if there is none.
func (k *Kernel) Mem(fd int, handle uint32) []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.files[fd]
	if c == nil || c.bos[handle] == nil || c.bos[handle].mem == nil {
		return nil
	}
	return c.bos[handle].bytes()
}
