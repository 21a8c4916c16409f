// Package emu is an emulated NPU: an npu.Device that executes each run's
// TXN instruction stream as the firmware would (exec.go: shim BDs, address
// patches, queue pushes, syncs) on an emulated AIE array running the
// physical design the context's xclbin was compiled from (array.go,
// dma.go, core.go: every tile's memory, locks and DMA channels, the stream
// routes, each core's program calling the kernel: gemv.Model, the Go
// model, or package sim, the AIE kernel sources compiled for the host), so
// that the whole host path of package npu (ring, planner, streams,
// fallback) runs and is tested without hardware, through the same design
// the toolchain compiles.
//
// It is honest in the ways a real device is strict:
//
//   - Every buffer has a host view (Map) and a device view. The kernel reads
//     and writes only device views; Sync copies between the two. A missing
//     sync gives stale data, as it would on the non-coherent NPU.
//   - Syncing a buffer that an unfinished run uses is refused (ErrBusy).
//   - The instruction stream is decoded and executed strictly (Execute):
//     what the hardware refuses, or a stream on which it would hang or
//     move bytes outside a buffer, ends the run in state ERROR with the op
//     and field; so does a parameter header or stream length the kernel
//     does not take.
//   - Runs execute in submission order on one device queue; a run on
//     another hardware context than the one before counts a context switch.
//   - Contexts are limited (6 on XDNA1, 16 on XDNA2), as are commands in
//     flight per context (4) and the instruction heap (64 MiB).
//
// Faults can be injected: InjectFault makes the k-th run hang (its Wait
// times out), finish in state ERROR, or run a corrupted stream.
package emu

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	"github.com/xdna-go/xdna/target"
	"github.com/xdna-go/xdna/xclbin"
)

// Config describes the emulated device.
type Config struct {
	Name   string         // default "emu-" + the target's name
	Target *target.Target // the NPU it emulates (default XDNA1): generation, columns, limits
	// MaxContexts and MaxInFlight override the target's limits (0: the
	// target's; tests lower them).
	MaxContexts, MaxInFlight int
	// MaxAllocated bounds the bytes of live buffer objects (0: no bound):
	// the pin limit (RLIMIT_MEMLOCK, or the memory the driver can pin) a
	// real device would refuse an allocation past. Tests set it.
	MaxAllocated int64
	// Kernels makes each context's kernel (nil: the Go model, gemv.GoModel;
	// package sim compiles the AIE kernel sources instead).
	Kernels gemv.Factory
}

// XDNA1 is a Phoenix / Hawk Point NPU: 4 usable columns, 6 contexts.
func XDNA1() Config { return Config{Target: target.XDNA1} }

// XDNA2 is a Strix NPU: 8 columns, 16 contexts.
func XDNA2() Config { return Config{Target: target.XDNA2} }

// ForTarget returns the configuration for a target name, "xdna1" or "xdna2".
func ForTarget(name string) (Config, error) {
	t, err := target.ByName(name)
	if err != nil {
		return Config{}, fmt.Errorf("emu: %w", err)
	}
	return Config{Target: t}, nil
}

// instrHeap is the device heap instruction buffers come from (AIE2_DEVM_SIZE).
const instrHeap = 64 << 20

// maxBO bounds one buffer object.
const maxBO = 1 << 31

// Fault is an injected failure of one run.
type Fault uint8

// The faults.
const (
	FaultNone    Fault = iota
	FaultTimeout       // the run never finishes: Wait times out
	FaultError         // the run finishes in state ERROR
	// Wrong streams: the run's instruction stream is corrupted before the
	// device executes it, as a host bug would (each must fail the run).
	FaultStreamOpcode // the first op's opcode made unknown
	FaultStreamGen    // the header names the other generation
	FaultStreamBD     // a BD written at index 16, past a shim tile's 16
	FaultStreamLength // the first weight BD's length past its buffer
	FaultStreamPatch  // the first patch aimed at a BD's length word
)

const faultStream = FaultStreamOpcode

// FaultNames are the fault kinds by the names --emu-fault takes.
var FaultNames = map[string]Fault{
	"timeout": FaultTimeout, "error": FaultError,
	"txn-opcode": FaultStreamOpcode, "txn-gen": FaultStreamGen, "txn-bd": FaultStreamBD,
	"txn-length": FaultStreamLength, "txn-patch": FaultStreamPatch,
}

// corrupt returns a corrupted copy of a valid stream for a design whose
// weight chains start at shim BD weightBD0 (one that does not decode is
// returned as it is).
func corrupt(f Fault, instr []byte, weightBD0 int) []byte {
	b := bytes.Clone(instr)
	switch f {
	case FaultStreamOpcode:
		b[16] = 0x77
		return b
	case FaultStreamGen:
		b[2] ^= byte(txn.NPU1 ^ txn.NPU2)
		return b
	}
	s, err := txn.Decode(b)
	if err != nil {
		return b
	}
ops:
	for i := range s.Ops {
		op := &s.Ops[i]
		_, id, word, isBD := txn.ShimBDAt(op.Addr)
		switch {
		case f == FaultStreamBD && op.Code == txn.OpBlockWrite && isBD:
			op.Addr += uint32(txn.ShimBDs-id) * txn.ShimBDStride
		case f == FaultStreamLength && op.Code == txn.OpBlockWrite && isBD && id == weightBD0:
			op.Words[0] = 1<<30 - 1 // 4 GiB: past any buffer
		case f == FaultStreamPatch && op.Code == txn.OpDDRPatch && isBD && word == 1:
			op.Addr -= 4
		default:
			continue
		}
		break ops
	}
	w, err := txn.EncodeWords(s.Header, s.Ops)
	if err != nil {
		return b
	}
	return txn.Bytes(w)
}

// Counters is what the device saw.
type Counters struct {
	Dispatches      int64 // runs submitted
	Completed       int64 // runs finished COMPLETED
	Failed          int64 // runs finished in another state
	ContextSwitches int64 // runs executed on another context than the run before
	Syncs           int64
	BytesToDevice   int64
	BytesFromDevice int64
	Contexts        int       // hardware contexts created
	Allocated       int64     // bytes of live buffer objects
	AllocatedPeak   int64     // high-water mark of Allocated
	Exec            ExecStats // what the executed streams held and moved, on the arrays too
	// Designs are the designs of the contexts, by slot name: their limits
	// and use (Usage).
	Designs []*design.Design
}

type bo struct {
	kind  npu.BOKind
	host  []byte // what Map returns
	dev   []byte // what the kernel sees
	users int    // unfinished runs using it
}

type hwctx struct {
	id       npu.Kernel
	name     string
	uuid     [16]byte
	array    *Array // the design the xclbin was compiled from, loaded
	inflight int
}

type run struct {
	id    npu.Run
	seq   int64 // dispatch number, from 1
	ctx   *hwctx
	instr *bo
	words int
	data  []*bo
	fault Fault
	done  chan struct{}
	state npu.State
	msg   string
}

// Device is the emulated NPU. It is safe for concurrent use.
type Device struct {
	mu       sync.Mutex
	cfg      Config
	bos      map[npu.BO]*bo
	nextBO   npu.BO
	ctxs     []*hwctx
	runs     map[npu.Run]*run
	nextRun  npu.Run
	queue    chan *run
	closing  chan struct{}
	worker   sync.WaitGroup
	lastCtx  *hwctx
	faults   map[int64]Fault
	c        Counters
	closed   bool
	instrUse int
}

var _ npu.Device = (*Device)(nil)

// New returns an emulated device with its execution queue running.
func New(cfg Config) *Device {
	if cfg.Target == nil {
		cfg.Target = target.XDNA1
	}
	if cfg.Name == "" {
		cfg.Name = "emu-" + cfg.Target.Name
	}
	if cfg.Kernels == nil {
		cfg.Kernels = gemv.GoModel
	}
	if cfg.MaxContexts <= 0 {
		cfg.MaxContexts = cfg.Target.MaxContexts
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = cfg.Target.MaxInFlight
	}
	d := &Device{
		cfg: cfg, bos: map[npu.BO]*bo{}, runs: map[npu.Run]*run{}, faults: map[int64]Fault{},
		queue:   make(chan *run, cfg.MaxContexts*cfg.MaxInFlight+1),
		closing: make(chan struct{}),
	}
	d.worker.Add(1)
	go d.work()
	return d
}

// Info describes the device.
func (d *Device) Info() npu.Info {
	return npu.Info{Name: d.cfg.Name, Gen: txn.Gen(d.cfg.Target.Gen), Columns: d.cfg.Target.Columns, MaxContexts: d.cfg.MaxContexts, MaxInFlight: d.cfg.MaxInFlight}
}

// Counters returns what the device has seen so far.
func (d *Device) Counters() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.c
}

// InjectFault makes the dispatch-th run (counting from 1 over the device's
// life) fail with f: FaultTimeout hangs it, and every run queued behind it,
// until Close; FaultError finishes it in state ERROR.
func (d *Device) InjectFault(dispatch int64, f Fault) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults[dispatch] = f
}

// LoadKernel parses the xclbin, finds the kernel and its AIE partition,
// builds the physical design its PDI was compiled from and loads it on an
// emulated array (a context), or returns the context already made for the
// same UUID and kernel. The emulator executes designs, not AIE machine
// code: an xclbin's PDI must name its design (XCLBin's marker: the slot's
// format and K-tile); any other is refused.
func (d *Device) LoadKernel(data []byte, name string) (npu.Kernel, error) {
	f, err := xclbin.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return 0, fmt.Errorf("emu: load kernel %q: %w", name, err)
	}
	names, err := f.KernelNames()
	if err != nil {
		return 0, fmt.Errorf("emu: load kernel %q: %w", name, err)
	}
	if !slices.Contains(names, name) {
		return 0, fmt.Errorf("emu: load kernel %q: xclbin %x has kernels %q", name, f.UUID, names)
	}
	part, err := f.Partition()
	if err != nil {
		return 0, fmt.Errorf("emu: load kernel %q: not an NPU xclbin: %w", name, err)
	}
	tg := d.cfg.Target
	if int(part.ColumnWidth) != tg.Columns {
		return 0, fmt.Errorf("emu: load kernel %q: design is %d columns wide, the %s designs are %d", name, part.ColumnWidth, tg.Name, tg.Columns)
	}
	dsn, err := DesignOf(part.PDIs, tg)
	if err != nil {
		return 0, fmt.Errorf("emu: load kernel %q: %w", name, err)
	}
	d.mu.Lock()
	for _, x := range d.ctxs {
		if x.uuid == f.UUID && x.name == name {
			d.mu.Unlock()
			return x.id, nil
		}
	}
	d.mu.Unlock()
	k, err := d.cfg.Kernels(dsn.Type, dsn.KTile, dsn.Rows)
	if err != nil {
		return 0, fmt.Errorf("emu: load kernel %q: %w", name, err)
	}
	arr, err := NewArray(dsn, k)
	if err != nil {
		return 0, fmt.Errorf("emu: load kernel %q: %w", name, err)
	}
	c := &hwctx{name: name, uuid: f.UUID, array: arr}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	if len(d.ctxs) >= d.cfg.MaxContexts {
		return 0, fmt.Errorf("emu: load kernel %q: %w (%d contexts)", name, npu.ErrContextLimit, d.cfg.MaxContexts)
	}
	c.id = npu.Kernel(len(d.ctxs) + 1)
	d.ctxs = append(d.ctxs, c)
	d.c.Contexts = len(d.ctxs)
	d.c.Designs = append(d.c.Designs, dsn)
	return c.id, nil
}

// DesignOf returns the design on target t that the PDIs of an xclbin made
// by XCLBin name.
func DesignOf(pdis []xclbin.PartitionPDI, t *target.Target) (*design.Design, error) {
	for _, p := range pdis {
		typ, kt, ok, err := parseMarker(p.Image)
		if err != nil {
			return nil, err
		}
		if ok {
			return design.New(t, typ, kt)
		}
	}
	return nil, fmt.Errorf("no PDI names the design it was compiled from (the emulator runs designs, not AIE code: use an xclbin made by emu.XCLBin)")
}

// Alloc allocates a buffer object; instruction buffers come from a 64 MiB
// device heap.
func (d *Device) Alloc(kind npu.BOKind, size int) (npu.BO, error) {
	if kind != npu.BOData && kind != npu.BOInstr {
		return 0, fmt.Errorf("emu: alloc: %v", kind)
	}
	if size <= 0 || size > maxBO {
		return 0, fmt.Errorf("emu: alloc: size %d outside [1, %d]", size, maxBO)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	if kind == npu.BOInstr {
		if d.instrUse+size > instrHeap {
			return 0, fmt.Errorf("emu: alloc: instruction heap of %d bytes exhausted", instrHeap)
		}
		d.instrUse += size
	}
	if m := d.cfg.MaxAllocated; m > 0 && d.c.Allocated+int64(size) > m {
		if kind == npu.BOInstr {
			d.instrUse -= size
		}
		return 0, fmt.Errorf("emu: alloc: %d bytes would pin %d, above the limit of %d: %w", size, d.c.Allocated+int64(size), m, npu.ErrPinLimit)
	}
	d.nextBO++
	d.bos[d.nextBO] = &bo{kind: kind, host: make([]byte, size), dev: make([]byte, size)}
	d.c.Allocated += int64(size)
	d.c.AllocatedPeak = max(d.c.AllocatedPeak, d.c.Allocated)
	return d.nextBO, nil
}

func (d *Device) get(h npu.BO) (*bo, error) { return npu.Lookup(d.bos, "emu", h, d.closed) }

// Map returns the host view of the buffer.
func (d *Device) Map(h npu.BO) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.get(h)
	if err != nil {
		return nil, err
	}
	return b.host, nil
}

// Sync copies bytes between the host and device views.
func (d *Device) Sync(h npu.BO, dir npu.Direction, offset, size int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.get(h)
	if err != nil {
		return err
	}
	if err := npu.CheckSync("emu", h, len(b.host), b.users, dir, offset, size); err != nil {
		return err
	}
	if dir == npu.ToDevice {
		copy(b.dev[offset:offset+size], b.host[offset:offset+size])
		d.c.BytesToDevice += int64(size)
	} else {
		copy(b.host[offset:offset+size], b.dev[offset:offset+size])
		d.c.BytesFromDevice += int64(size)
	}
	d.c.Syncs++
	return nil
}

// Free releases a buffer; a run still using it keeps its device view.
func (d *Device) Free(h npu.BO) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.get(h)
	if err != nil {
		return err
	}
	delete(d.bos, h)
	if b.kind == npu.BOInstr {
		d.instrUse -= len(b.host)
	}
	d.c.Allocated -= int64(len(b.host))
	return nil
}

// Run submits the GEMV kernel: opcode npu.OpcodeTxn, the instruction
// buffer holding a TXN stream of words words, and three data buffers: bo0
// the weight runs, bo1 the parameter header and activations, bo2 the
// outputs.
func (d *Device) Run(k npu.Kernel, opcode uint64, instr npu.BO, words int, data ...npu.BO) (npu.Run, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, npu.ErrClosed
	}
	if k < 1 || int(k) > len(d.ctxs) {
		return 0, fmt.Errorf("emu: run: kernel %d: %w", k, npu.ErrHandle)
	}
	c := d.ctxs[k-1]
	if opcode != npu.OpcodeTxn {
		return 0, fmt.Errorf("emu: run: opcode %d, the GEMV kernel runs transactions (%d)", opcode, npu.OpcodeTxn)
	}
	if len(data) != 3 {
		return 0, fmt.Errorf("emu: run: %d data buffers, the GEMV kernel takes 3 (weights, activations, outputs)", len(data))
	}
	ib, err := d.get(instr)
	if err != nil {
		return 0, err
	}
	if ib.kind != npu.BOInstr {
		return 0, fmt.Errorf("emu: run: buffer %d is a %v buffer, not instructions", instr, ib.kind)
	}
	if words <= 0 || words > len(ib.host)/4 {
		return 0, fmt.Errorf("emu: run: %d instruction words in a buffer of %d bytes", words, len(ib.host))
	}
	r := &run{ctx: c, instr: ib, words: words, done: make(chan struct{})}
	for i, h := range data {
		b, err := d.get(h)
		if err != nil {
			return 0, err
		}
		if b.kind != npu.BOData {
			return 0, fmt.Errorf("emu: run: bo%d (buffer %d) is a %v buffer", i, h, b.kind)
		}
		r.data = append(r.data, b)
	}
	if c.inflight >= d.cfg.MaxInFlight {
		return 0, fmt.Errorf("emu: run: %w (%d on context %d)", npu.ErrInFlight, c.inflight, c.id)
	}
	c.inflight++
	ib.users++
	for _, b := range r.data {
		b.users++
	}
	d.c.Dispatches++
	r.seq = d.c.Dispatches
	r.fault = d.faults[r.seq]
	d.nextRun++
	r.id = d.nextRun
	d.runs[r.id] = r
	d.queue <- r // never blocks: at most MaxContexts*MaxInFlight runs are unfinished
	return r.id, nil
}

// Wait waits for the run; a finished run's handle is released.
func (d *Device) Wait(h npu.Run, timeout time.Duration) error {
	d.mu.Lock()
	r := d.runs[h]
	d.mu.Unlock()
	if r == nil {
		return fmt.Errorf("emu: wait: run %d: %w", h, npu.ErrHandle)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		return fmt.Errorf("emu: run %d: %w", h, npu.ErrTimeout)
	}
	d.mu.Lock()
	delete(d.runs, h)
	d.mu.Unlock()
	if r.state != npu.StateCompleted {
		return &npu.RunError{Run: h, State: r.state, Msg: r.msg}
	}
	return nil
}

// Close stops the queue (abandoning hung runs) and frees everything.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	close(d.closing)
	d.mu.Unlock()
	d.worker.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.bos)
	clear(d.runs)
	d.c.Allocated = 0
	return nil
}

// work executes the runs in submission order.
func (d *Device) work() {
	defer d.worker.Done()
	for {
		select {
		case <-d.closing:
			return
		case r := <-d.queue:
			switch r.fault {
			case FaultTimeout:
				<-d.closing // the device hangs: nothing behind this run executes
				return
			case FaultError:
				d.finish(r, npu.StateError, fmt.Sprintf("injected fault at dispatch %d", r.seq))
				continue
			}
			d.mu.Lock()
			if d.lastCtx != nil && d.lastCtx != r.ctx {
				d.c.ContextSwitches++
			}
			d.lastCtx = r.ctx
			d.mu.Unlock()
			if err := d.execute(r); err != nil {
				d.finish(r, npu.StateError, err.Error())
			} else {
				d.finish(r, npu.StateCompleted, "")
			}
		}
	}
}

func (d *Device) finish(r *run, s npu.State, msg string) {
	d.mu.Lock()
	r.state, r.msg = s, msg
	r.ctx.inflight--
	r.instr.users--
	for _, b := range r.data {
		b.users--
	}
	if s == npu.StateCompleted {
		d.c.Completed++
	} else {
		d.c.Failed++
	}
	d.mu.Unlock()
	close(r.done)
}

// execute runs the instruction stream over the device views of the run's
// buffers (Execute). While a run is unfinished its buffers cannot be
// synced or reused, so reading them without the lock is safe.
func (d *Device) execute(r *run) error {
	args := make([][]byte, len(r.data))
	for i, b := range r.data {
		args[i] = b.dev
	}
	instr := r.instr.dev[:4*r.words]
	arr := r.ctx.array
	if r.fault >= faultStream {
		instr = corrupt(r.fault, instr, arr.Design().Shim.WeightBD0)
	}
	st, err := arr.Execute(instr, args, r.words)
	d.mu.Lock()
	d.c.Exec.Add(st)
	d.mu.Unlock()
	return err
}

// markerPrefix starts the PDI image of the xclbins XCLBin makes.
const markerPrefix = "xdna-emu gemv "

// XCLBin returns an NPU xclbin for the emulator, shaped like mlir-aie's
// (xclbin.NewNPU; kernel "MLIR_AIE"), whose PDI names the GEMV it stands
// for: weights of type typ in K-tiles of kTile, on columns columns. The
// same arguments give the same bytes (the UUID is derived from them).
func XCLBin(typ planar.Type, kTile, columns int) ([]byte, error) {
	f, err := planar.FormatOf(typ)
	if err != nil {
		return nil, err
	}
	if kTile <= 0 || kTile%f.Block != 0 {
		return nil, fmt.Errorf("emu: k-tile %d for %s blocks of %d", kTile, typ, f.Block)
	}
	if columns < 1 || columns > target.MaxColumns {
		return nil, fmt.Errorf("emu: %d columns", columns)
	}
	pdi := fmt.Sprintf("%s%s k%d c%d\n", markerPrefix, f.Name, kTile, columns)
	var uuid [16]byte
	h := uint64(14695981039346656037) // FNV-1a, spread over the 16 bytes
	for i := range uuid {
		for _, c := range []byte(pdi) {
			h = (h ^ uint64(c)) * 1099511628211
		}
		h ^= uint64(i)
		uuid[i] = byte(h >> 32)
	}
	return xclbin.NewNPU(xclbin.NPUKernel, uuid, []byte(pdi), columns).Marshal()
}

// parseMarker reads the GEMV an XCLBin PDI names; ok is false for any
// other PDI.
func parseMarker(pdi []byte) (typ planar.Type, kTile int, ok bool, err error) {
	s, found := strings.CutPrefix(string(pdi[:min(len(pdi), 128)]), markerPrefix)
	if !found {
		return 0, 0, false, nil
	}
	fields := strings.Fields(s)
	if len(fields) < 2 || !strings.HasPrefix(fields[1], "k") {
		return 0, 0, false, fmt.Errorf("emulator PDI %q: want \"%s<format> k<tile>\"", s, markerPrefix)
	}
	f, err := planar.FormatByName(fields[0])
	if err != nil {
		return 0, 0, false, fmt.Errorf("emulator PDI: %w", err)
	}
	kt, err := strconv.Atoi(fields[1][1:])
	if err != nil || kt <= 0 || kt%f.Block != 0 {
		return 0, 0, false, fmt.Errorf("emulator PDI: k-tile %q", fields[1])
	}
	return f.Source, kt, true, nil
}
