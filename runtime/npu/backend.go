package npu

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	"github.com/xdna-go/xdna/xclbin"
)

// Defaults of Options.
const (
	DefaultRingSize = 64 << 20 // bytes per staging buffer (two of them)
	DefaultIOSize   = 1 << 20  // bytes of the activation and of the output buffer
	DefaultTimeout  = 5 * time.Second
	instrBOSize     = 8192 // one dispatch's TXN stream: 2304 bytes on 8 columns (txn.GEMVWords), more if BDs split
)

// Options tunes a Backend; the zero value gives the defaults.
type Options struct {
	// RingSize is the size of each of the two staging buffers the weights
	// stream through (default 64 MiB). Pinned memory stays below
	// 2*RingSize plus the I/O and instruction buffers whatever the model.
	RingSize int
	// IOSize is the size of the activation buffer and of the output buffer
	// (default 1 MiB); a call whose tokens do not fit is run in groups. The
	// buffers grow to one token's need if that is larger.
	IOSize int
	// Timeout bounds each wait for a run (default 5 s).
	Timeout time.Duration
	// MaxBDBytes splits shim BDs moving more bytes (0: the hardware's
	// limit, txn.MaxBDBytes); tests lower it to exercise BD chains.
	MaxBDBytes int
	// Warn receives the one warning of a device fault and the load-time
	// notes (slots that could not be loaded). nil discards them.
	Warn io.Writer
}

// Slot is a kernel slot of the package, with its embedded xclbin.
type Slot struct {
	Name   string // slot name, as tensor entries refer to it
	Kernel string // kernel name in the xclbin, such as "MLIR_AIE"
	XCLBin []byte // the xclbin; nil when the package does not embed it
}

// FileSlots returns the slots embedded in an opened .xdna file, their
// xclbins sub-slices of the mapping.
func FileSlots(f *layout.File) []Slot {
	var s []Slot
	for _, e := range f.Manifest.Slots {
		s = append(s, Slot{Name: e.Name, Kernel: e.Kernel, XCLBin: f.Bytes(e.BlobRef)})
	}
	return s
}

// Stats counts what a Backend did since it was made.
type Stats struct {
	NPUCalls        int64 // matmul calls computed on the device
	CPUCalls        int64 // matmul calls computed on the CPU (by plan or after a fault)
	Dispatches      int64 // kernel runs submitted
	ContextSwitches int64 // runs on another kernel (hardware context) than the run before
	Syncs           int64 // buffer syncs, both directions
	BytesToDevice   int64 // bytes synced to the device: weights, activations, descriptors
	WeightBytes     int64 // of which weights copied into the staging ring
	StreamedBytes   int64 // weight bytes the device read: every run's share of its ring buffer
	TxnWords        int64 // TXN instruction words submitted
	BDs             int64 // shim BDs the streams wrote
	ReusedBytes     int64 // weight bytes found still staged from an earlier call, not copied again
	Prefetches      int64 // chunks staged in the background ahead of their call
	PrefetchHits    int64 // of which used by the call that followed
	BytesFromDevice int64 // output bytes synced back
	PinnedBytes     int64 // buffer-object bytes allocated now
	PinnedPeak      int64 // high-water mark of PinnedBytes
	Fallbacks       int64 // NPU-planned calls computed on the CPU after a fault, the failed one included
	Faults          int64 // device faults (at most 1: the first one ends device use)
}

// Sub returns the counters of s since o, an earlier snapshot (to count one
// phase, such as decode after prefill); the pinned figures stay s's.
func (s Stats) Sub(o Stats) Stats {
	return Stats{
		NPUCalls: s.NPUCalls - o.NPUCalls, CPUCalls: s.CPUCalls - o.CPUCalls,
		Dispatches: s.Dispatches - o.Dispatches, ContextSwitches: s.ContextSwitches - o.ContextSwitches,
		Syncs: s.Syncs - o.Syncs, BytesToDevice: s.BytesToDevice - o.BytesToDevice,
		WeightBytes: s.WeightBytes - o.WeightBytes, StreamedBytes: s.StreamedBytes - o.StreamedBytes,
		TxnWords: s.TxnWords - o.TxnWords, BDs: s.BDs - o.BDs,
		ReusedBytes: s.ReusedBytes - o.ReusedBytes, Prefetches: s.Prefetches - o.Prefetches,
		PrefetchHits: s.PrefetchHits - o.PrefetchHits, BytesFromDevice: s.BytesFromDevice - o.BytesFromDevice,
		PinnedBytes: s.PinnedBytes, PinnedPeak: s.PinnedPeak,
		Fallbacks: s.Fallbacks - o.Fallbacks, Faults: s.Faults - o.Faults,
	}
}

// PerToken is Stats divided by a number of tokens.
type PerToken struct {
	Dispatches, ContextSwitches, Syncs        float64
	BytesToDevice, WeightBytes, StreamedBytes float64
	TxnWords, BDs                             float64
}

// PerToken divides the counters by tokens.
func (s Stats) PerToken(tokens int) PerToken {
	if tokens <= 0 {
		return PerToken{}
	}
	n := float64(tokens)
	return PerToken{
		Dispatches: float64(s.Dispatches) / n, ContextSwitches: float64(s.ContextSwitches) / n,
		Syncs: float64(s.Syncs) / n, BytesToDevice: float64(s.BytesToDevice) / n,
		WeightBytes: float64(s.WeightBytes) / n, StreamedBytes: float64(s.StreamedBytes) / n,
		TxnWords: float64(s.TxnWords) / n, BDs: float64(s.BDs) / n,
	}
}

// mat is one matrix as the Backend runs it.
type mat struct {
	name   string
	m      cpu.Matrix // as last seen (geometry and blob)
	kernel Kernel     // 0: runs on the CPU
	chunks []Chunk
	why    string // why it runs on the CPU, if it does
}

// ringBuf is one staging buffer.
type ringBuf struct {
	bo    BO
	host  []byte
	owner *mat // what it holds: chunk of owner (a new blob gets a new mat)
	chunk int
	seq   int64 // last submission reading it
	ahead bool  // staged by a prefetch, not used since
}

type ioBuf struct {
	bo   BO
	host []byte
}

type instrBuf struct {
	ioBuf
	seq int64
}

type flight struct {
	seq int64
	run Run
}

// Backend runs the matmuls of a model where its pack-time plan says: on
// the NPU when the tensor's entry says "npu" and its slot's kernel is
// loaded, on the CPU otherwise. A device fault or timeout makes it compute
// the failed call, and every later one, on the CPU, with one warning.
// Its methods may be called from several goroutines; calls are serialised.
type Backend struct {
	mu      sync.Mutex
	dev     Device
	info    Info
	pool    *cpu.Pool
	opt     Options
	warn    io.Writer
	entries map[string]*layout.TensorEntry
	kernels map[string]Kernel // slot name -> loaded kernel
	widths  map[string]int    // slot name -> columns of its design (AIE_PARTITION column_width)
	mats    map[string]*mat
	notes   []string
	warned  map[string]bool

	ring     [2]ringBuf
	lastRing int // ring buffer of the latest submission, -1 before any
	instr    []instrBuf
	act, out ioBuf
	inflight []flight
	seq      int64 // submissions so far
	done     int64 // submissions waited for
	lastK    Kernel
	io       ioLayout // the I/O layout of the call being run, reused
	gemv     txn.GEMV // the dispatch being built, reused
	rows     []int

	next     map[string]string // NPU call that followed each one last time
	lastCall string
	pf       sync.WaitGroup // a prefetch running in the background
	pfErr    error
	pfBytes  int64

	faulted bool
	stats   Stats
	closed  bool
}

// NewBackend makes a Backend over dev for the tensors of a manifest and the
// slots embedded with them, computing CPU work on pool (nil: the calling
// goroutine). It loads the kernel of every slot the plan uses, largest
// share of the weights first; a slot that cannot be loaded (no xclbin, a
// bad one, the hardware-context limit) sends its tensors to the CPU with a
// note to opt.Warn. dev may be nil: everything then runs on the CPU. The
// Backend does not close dev.
func NewBackend(dev Device, tensors []layout.TensorEntry, slots []Slot, pool *cpu.Pool, opt Options) (*Backend, error) {
	opt.RingSize = orDefault(opt.RingSize, DefaultRingSize)
	opt.IOSize = orDefault(opt.IOSize, DefaultIOSize)
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.RingSize > math.MaxInt32 || opt.IOSize > math.MaxInt32 {
		return nil, fmt.Errorf("npu: ring size %d or I/O size %d above 2 GiB", opt.RingSize, opt.IOSize)
	}
	b := &Backend{
		dev: dev, pool: pool, opt: opt, warn: opt.Warn, lastRing: -1,
		entries: map[string]*layout.TensorEntry{}, kernels: map[string]Kernel{}, widths: map[string]int{},
		mats: map[string]*mat{}, next: map[string]string{}, warned: map[string]bool{},
	}
	if b.warn == nil {
		b.warn = io.Discard
	}
	type use struct {
		name    string
		bytes   int64
		tensors int
	}
	uses := map[string]*use{}
	for i := range tensors {
		e := tensors[i]
		if _, dup := b.entries[e.Name]; dup {
			return nil, fmt.Errorf("npu: tensor %q listed twice", e.Name)
		}
		b.entries[e.Name] = &e
		if e.Device == "npu" {
			u := uses[e.Slot]
			if u == nil {
				u = &use{name: e.Slot}
				uses[e.Slot] = u
			}
			u.bytes += e.Size
			u.tensors++
		}
	}
	if dev == nil || len(uses) == 0 {
		return b, nil
	}
	b.info = dev.Info()
	if b.info.Gen != txn.NPU1 && b.info.Gen != txn.NPU2 {
		b.note("device %s names no TXN generation (%v); its %d slots run on the CPU", b.info.Name, b.info.Gen, len(uses))
		return b, nil
	}
	order := make([]*use, 0, len(uses))
	for _, u := range uses {
		order = append(order, u)
	}
	slices.SortFunc(order, func(x, y *use) int {
		return cmp.Or(cmp.Compare(y.bytes, x.bytes), cmp.Compare(x.name, y.name))
	})
	byName := map[string]Slot{}
	for _, s := range slots {
		byName[s.Name] = s
	}
	for _, u := range order {
		s, ok := byName[u.name]
		switch {
		case !ok || len(s.XCLBin) == 0:
			b.note("slot %s: no xclbin in the package; its %d tensors run on the CPU", u.name, u.tensors)
			continue
		}
		k, err := dev.LoadKernel(s.XCLBin, s.Kernel)
		if err != nil {
			b.note("slot %s: %v; its %d tensors run on the CPU", u.name, err, u.tensors)
			continue
		}
		b.kernels[u.name] = k
		b.widths[u.name] = b.info.Columns
		if f, err := xclbin.NewReader(bytes.NewReader(s.XCLBin), int64(len(s.XCLBin))); err == nil {
			if p, err := f.Partition(); err == nil && p.ColumnWidth > 0 {
				b.widths[u.name] = int(p.ColumnWidth)
			}
		}
	}
	if len(b.kernels) == 0 {
		return b, nil
	}
	if err := b.allocRing(); err != nil {
		b.note("staging ring: %v; every tensor runs on the CPU", err)
		b.freeAll()
		clear(b.kernels)
	}
	return b, nil
}

func (b *Backend) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	b.notes = append(b.notes, s)
	fmt.Fprintf(b.warn, "npu: %s\n", s)
}

// Notes returns what the Backend decided against the plan, and why: slots
// not loaded, NPU-planned tensors that run on the CPU.
func (b *Backend) Notes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.notes)
}

// allocRing allocates the two staging buffers and the instruction buffers.
func (b *Backend) allocRing() error {
	for i := range b.ring {
		bo, host, err := b.alloc(BOData, b.opt.RingSize)
		if err != nil {
			return err
		}
		b.ring[i] = ringBuf{bo: bo, host: host}
	}
	depth := max(1, min(b.info.MaxInFlight, 4))
	for range depth {
		bo, host, err := b.alloc(BOInstr, instrBOSize)
		if err != nil {
			return err
		}
		b.instr = append(b.instr, instrBuf{ioBuf: ioBuf{bo, host}})
	}
	return nil
}

func (b *Backend) alloc(kind BOKind, size int) (BO, []byte, error) {
	bo, err := b.dev.Alloc(kind, size)
	if err != nil {
		return 0, nil, fmt.Errorf("allocate %s buffer of %d bytes: %w", kind, size, err)
	}
	host, err := b.dev.Map(bo)
	if err != nil {
		b.dev.Free(bo)
		return 0, nil, fmt.Errorf("map %s buffer: %w", kind, err)
	}
	b.stats.PinnedBytes += int64(size)
	b.stats.PinnedPeak = max(b.stats.PinnedPeak, b.stats.PinnedBytes)
	return bo, host[:size:size], nil
}

func (b *Backend) free(bo BO, size int) {
	if bo == 0 {
		return
	}
	b.dev.Free(bo)
	b.stats.PinnedBytes -= int64(size)
}

func (b *Backend) freeAll() {
	for i := range b.ring {
		b.free(b.ring[i].bo, len(b.ring[i].host))
		b.ring[i] = ringBuf{}
	}
	for _, in := range b.instr {
		b.free(in.bo, len(in.host))
	}
	b.instr = nil
	b.free(b.act.bo, len(b.act.host))
	b.free(b.out.bo, len(b.out.host))
	b.act, b.out = ioBuf{}, ioBuf{}
}

// Close waits for a background prefetch and frees the buffers; the device
// is left open. Later calls run on the CPU.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.pf.Wait()
	b.closed = true
	if b.dev != nil {
		if !b.faulted {
			b.waitAll() // best effort; a run that hangs is the device's to cancel
		}
		b.freeAll()
	}
	return nil
}

// Stats returns the counters.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.joinPrefetch()
	return b.stats
}

// Placement reports where the named tensor's matmuls run ("npu" or "cpu")
// and why, as far as the Backend knows before its first call.
func (b *Backend) Placement(name string) (device, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if mt := b.mats[name]; mt != nil {
		if mt.kernel != 0 && !b.faulted {
			return "npu", ""
		}
		if b.faulted {
			return "cpu", "device fault"
		}
		return "cpu", mt.why
	}
	e := b.entries[name]
	switch {
	case e == nil:
		return "cpu", "not in the manifest"
	case e.Device != "npu":
		return "cpu", e.Reason
	case b.kernels[e.Slot] == 0:
		return "cpu", "slot " + e.Slot + " not loaded"
	case b.faulted:
		return "cpu", "device fault"
	}
	return "npu", ""
}

// MatVec computes y = W x for the matrix called name (a tensor entry of the
// manifest), where the plan says: see cpu.MatVec for the shapes.
func (b *Backend) MatVec(name string, m *cpu.Matrix, x, y []float32) {
	b.MatMat(name, m, x, y, 1)
}

// MatMat computes y[t] = W x[t] for n tokens (x is [n][K], y [n][N]) for
// the matrix called name, where the plan says: see cpu.MatMat. A device
// fault is reported once and the call is recomputed on the CPU, so y is
// always written.
func (b *Backend) MatMat(name string, m *cpu.Matrix, x, y []float32, n int) {
	g := m.G
	if n < 1 || len(x) < n*g.K || len(y) < n*g.N {
		panic(fmt.Sprintf("npu: %s: %d tokens of a [%d][%d] matrix with x of %d, y of %d", name, n, g.N, g.K, len(x), len(y)))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.joinPrefetch()
	mt := b.place(name, m)
	if mt.kernel == 0 || b.faulted || b.closed {
		if mt.kernel != 0 && b.faulted {
			b.stats.Fallbacks++
		}
		b.stats.CPUCalls++
		cpu.MatMat(m, x, y, n, b.pool)
		return
	}
	if b.lastCall != "" {
		b.next[b.lastCall] = name
	}
	b.lastCall = name
	if err := b.run(mt, x, y, n); err != nil {
		b.fault(name, err)
		b.stats.Fallbacks++
		b.stats.CPUCalls++
		cpu.MatMat(m, x, y, n, b.pool)
		return
	}
	b.stats.NPUCalls++
}

// fault ends device use, with one warning.
func (b *Backend) fault(name string, err error) {
	b.faulted = true
	b.stats.Faults++
	fmt.Fprintf(b.warn, "npu: %s: %v; computing it and every later matmul on the CPU\n", name, err)
}

// place returns the state of the matrix called name, deciding on first
// sight (or when its blob changes) whether it can run on the device.
func (b *Backend) place(name string, m *cpu.Matrix) *mat {
	mt := b.mats[name]
	if mt != nil && mt.m.G == m.G && sameBytes(mt.m.Blob, m.Blob) {
		return mt
	}
	mt = &mat{name: name, m: *m} // a new blob is a new mat: what is staged of the old one no longer matches
	b.mats[name] = mt
	e := b.entries[name]
	switch {
	case e == nil:
		mt.why = "not in the manifest"
		return mt
	case e.Device != "npu":
		mt.why = cmp.Or(e.Reason, "planned on the CPU")
		return mt
	}
	k := b.kernels[e.Slot]
	if k == 0 {
		mt.why = "slot " + e.Slot + " not loaded"
		return mt
	}
	cpuOnly := func(format string, args ...any) *mat {
		mt.why = fmt.Sprintf(format, args...)
		msg := fmt.Sprintf("%s: planned on the NPU, runs on the CPU: %s", name, mt.why)
		b.notes = append(b.notes, msg)
		if !b.warned[mt.why] { // one line per reason; Notes lists every tensor
			b.warned[mt.why] = true
			fmt.Fprintf(b.warn, "npu: %s\n", msg)
		}
		return mt
	}
	g := m.G
	if err := m.Check(); err != nil {
		return cpuOnly("%v", err)
	}
	if len(e.Shape) != 2 || e.Shape[0] != g.K || e.Shape[1] != g.N || e.Type != g.Type.String() || e.KTile != g.KTile {
		return cpuOnly("matrix %s [%d][%d] tile %d does not match the manifest's %s %v tile %d", g.Type, g.N, g.K, g.KTile, e.Type, e.Shape, e.KTile)
	}
	if w := b.widths[e.Slot]; g.Columns > w {
		return cpuOnly("packed for %d columns, slot %s's design is %d wide", g.Columns, e.Slot, w)
	}
	chunks, err := PlanChunks(g, b.opt.RingSize)
	if err != nil {
		return cpuOnly("%v", err)
	}
	mt.kernel, mt.chunks = k, chunks
	return mt
}

func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// run computes the call on the device: per group of tokens that fits the
// I/O buffers, it writes every dispatch's parameter header and activation
// records into bo1, stages each chunk into the ring and submits one TXN
// stream per MaxTokens tokens of it, then reads the columns' outputs back
// into y, adding the partial sums of chunks that split K.
func (b *Backend) run(mt *mat, x, y []float32, n int) error {
	g := mt.m.G
	per := ioTokens(g, mt.chunks, b.opt.IOSize, n)
	l := &b.io
	for t0 := 0; t0 < n; t0 += per {
		tb := min(per, n-t0)
		planIO(g, mt.chunks, tb, l)
		if err := b.ensureIO(l.act, l.out); err != nil {
			return err
		}
		for i := range l.d {
			b.putActs(mt, &l.d[i], x[t0*g.K:])
		}
		if err := b.sync(b.act.bo, ToDevice, l.act); err != nil {
			return err
		}
		for i := 0; i < len(l.d); {
			ci := l.d[i].ci
			ri, err := b.stage(mt, ci, false)
			if err != nil {
				return err
			}
			for ; i < len(l.d) && l.d[i].ci == ci; i++ {
				if err := b.submit(mt, &l.d[i], ri); err != nil {
					return err
				}
			}
		}
		if t0+tb == n {
			b.prefetch(mt)
		}
		if err := b.waitAll(); err != nil {
			return err
		}
		if err := b.sync(b.out.bo, FromDevice, l.out); err != nil {
			return err
		}
		for i := range l.d {
			b.gather(mt, &l.d[i], y[t0*g.N:])
		}
	}
	return nil
}

// params returns the parameter header of dispatch d of mt.
func (b *Backend) params(mt *mat, d *ioDispatch) Params {
	p := chunkParams(mt.m.G, mt.chunks[d.ci], d.ts, b.rows)
	b.rows = p.Rows
	return p
}

// putActs writes dispatch d's header and activation records into bo1
// (x is the token group's activations).
func (b *Backend) putActs(mt *mat, d *ioDispatch, x []float32) {
	g := mt.m.G
	ch := mt.chunks[d.ci]
	p := b.params(mt, d)
	p.Put(b.act.host[d.hdr:])
	rec := p.RecordBytes()
	o := d.hdr + ParamsBytes
	for i := 0; i < ch.Tiles; i++ {
		k0 := (ch.Tile0 + i) * g.KTile
		for t := d.s0; t < d.s0+d.ts; t++ {
			PutActs(g.Type, x[t*g.K+k0:t*g.K+k0+g.KTile], 1, g.KTile, b.act.host[o:o+rec])
			o += rec
		}
	}
}

// gather moves dispatch d's outputs from bo2 into y (the token group's
// outputs): the first K-chunk of a row stores, later ones add.
func (b *Backend) gather(mt *mat, d *ioDispatch, y []float32) {
	g := mt.m.G
	ch := mt.chunks[d.ci]
	out := b.out.host
	for j, c := 0, ch.Group0; c < ch.Group0+ch.Groups; j, c = j+1, c+1 {
		first, rows := g.GroupRows(c)
		o := d.outs[j]
		for r0 := 0; r0 < rows; r0 += RowChunk {
			rc := min(RowChunk, rows-r0)
			for t := d.s0; t < d.s0+d.ts; t++ {
				yy := y[t*g.N+first+r0 : t*g.N+first+r0+rc]
				for i := range yy {
					v := math.Float32frombits(binary.LittleEndian.Uint32(out[o:]))
					if ch.Tile0 > 0 {
						v = yy[i] + v
					}
					yy[i] = v
					o += 4
				}
			}
		}
	}
}

// stage returns the ring buffer holding chunk ci of mt, copying it from the
// blob into the buffer not used by the latest submission if no buffer holds
// it yet. With async, the copy and sync run in the background (a prefetch).
// Each group's run is written in the kernel's order (params.go): by row
// chunk, then tile, then plane.
func (b *Backend) stage(mt *mat, ci int, async bool) (int, error) {
	for i := range b.ring {
		r := &b.ring[i]
		if r.owner == mt && r.chunk == ci {
			switch {
			case async:
			case r.ahead:
				b.stats.PrefetchHits++
			default:
				b.stats.ReusedBytes += int64(mt.chunks[ci].Bytes)
			}
			r.ahead = r.ahead && async
			return i, nil
		}
	}
	i := 0
	if b.lastRing == 0 {
		i = 1
	}
	r := &b.ring[i]
	if err := b.waitSeq(r.seq); err != nil {
		return 0, err
	}
	r.owner, r.chunk, r.ahead = mt, ci, async
	ch := mt.chunks[ci]
	fill := func() error {
		stageChunk(mt.m.G, mt.m.Blob, ch, r.host)
		return b.dev.Sync(r.bo, ToDevice, 0, ch.Bytes)
	}
	b.stats.WeightBytes += int64(ch.Bytes)
	b.stats.BytesToDevice += int64(ch.Bytes)
	b.stats.Syncs++
	if !async {
		if err := fill(); err != nil {
			r.owner = nil
			return 0, fmt.Errorf("sync staging buffer: %w", err)
		}
		return i, nil
	}
	b.stats.Prefetches++
	b.pf.Add(1)
	go func() {
		defer b.pf.Done()
		if err := fill(); err != nil {
			b.pfErr = fmt.Errorf("prefetch: sync staging buffer: %w", err)
		}
	}()
	return i, nil
}

// stageChunk copies chunk ch of the planar blob into dst in the kernel's
// order: the chunk's groups back to back, each as row chunk, tile, plane,
// every plane of a (row chunk, tile) on 64 bytes as TileBytes lays it out.
func stageChunk(g planar.Geometry, blob []byte, ch Chunk, dst []byte) {
	np := len(g.Format().Planes)
	off := 0
	for c := ch.Group0; c < ch.Group0+ch.Groups; c++ {
		_, rows := g.GroupRows(c)
		for r0 := 0; r0 < rows; r0 += RowChunk {
			rc := min(RowChunk, rows-r0)
			tg := RunGeometry(g.Type, rc, g.KTile, 1)
			tb := tg.TileBytes(rc)
			for t := ch.Tile0; t < ch.Tile0+ch.Tiles; t++ {
				for p := 0; p < np; p++ {
					src, per := g.PlaneOffset(c, t, p)
					do, _ := tg.PlaneOffset(0, 0, p)
					copy(dst[off+do:off+do+rc*per], blob[src+r0*per:src+(r0+rc)*per])
				}
				off += tb
			}
		}
	}
}

// prefetch stages, in the background, the first chunk of the NPU call that
// followed this one last time (decode repeats the same sequence every
// token), into the buffer the latest submission does not read, so that the
// copy overlaps the device's run and the host's work until that call.
func (b *Backend) prefetch(mt *mat) {
	nm := b.mats[b.next[mt.name]]
	if nm == nil || nm.kernel == 0 || len(nm.chunks) == 0 {
		return
	}
	if _, err := b.stage(nm, 0, true); err != nil {
		b.pfErr = err
	}
}

// joinPrefetch waits for a background prefetch; its error faults the
// device at the next call.
func (b *Backend) joinPrefetch() {
	b.pf.Wait()
	if b.pfErr != nil && !b.faulted {
		err := b.pfErr
		b.pfErr = nil
		for i := range b.ring {
			b.ring[i].owner = nil
		}
		b.fault("prefetch", err)
	}
}

// ensureIO grows the activation and output buffers to hold act and out bytes.
func (b *Backend) ensureIO(act, out int) error {
	for _, x := range []struct {
		buf  *ioBuf
		need int
	}{{&b.act, act}, {&b.out, out}} {
		if len(x.buf.host) >= x.need {
			continue
		}
		b.free(x.buf.bo, len(x.buf.host))
		*x.buf = ioBuf{}
		bo, host, err := b.alloc(BOData, max(x.need, b.opt.IOSize))
		if err != nil {
			return err
		}
		*x.buf = ioBuf{bo, host}
	}
	return nil
}

func (b *Backend) sync(bo BO, dir Direction, n int) error {
	if err := b.dev.Sync(bo, dir, 0, n); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	b.stats.Syncs++
	if dir == ToDevice {
		b.stats.BytesToDevice += int64(n)
	} else {
		b.stats.BytesFromDevice += int64(n)
	}
	return nil
}

// submit builds dispatch d's TXN stream into a free instruction buffer
// and runs mt's kernel over ring buffer ri and the I/O buffers.
func (b *Backend) submit(mt *mat, d *ioDispatch, ri int) error {
	for len(b.inflight) >= len(b.instr) {
		if err := b.waitSeq(b.inflight[0].seq); err != nil {
			return err
		}
	}
	in := &b.instr[b.seq%int64(len(b.instr))]
	if err := b.waitSeq(in.seq); err != nil {
		return err
	}
	p := b.params(mt, d)
	w, cnt, err := buildStream(&b.gemv, &p, d, b.info.Gen, b.opt.MaxBDBytes)
	if err != nil {
		return fmt.Errorf("dispatch %d: %w", b.seq+1, err)
	}
	if 4*len(w) > len(in.host) {
		return fmt.Errorf("dispatch %d: a stream of %d words, instruction buffers hold %d bytes", b.seq+1, len(w), len(in.host))
	}
	for i, v := range w {
		binary.LittleEndian.PutUint32(in.host[4*i:], v)
	}
	if err := b.sync(in.bo, ToDevice, 4*len(w)); err != nil {
		return err
	}
	r, err := b.dev.Run(mt.kernel, OpcodeTxn, in.bo, len(w), b.ring[ri].bo, b.act.bo, b.out.bo)
	b.seq++
	if err != nil {
		return fmt.Errorf("dispatch %d: run: %w", b.seq, err)
	}
	b.stats.Dispatches++
	b.stats.StreamedBytes += cnt.WeightBytes
	b.stats.TxnWords += int64(cnt.Words)
	b.stats.BDs += int64(cnt.BDs)
	if b.lastK != 0 && b.lastK != mt.kernel {
		b.stats.ContextSwitches++
	}
	b.lastK = mt.kernel
	b.inflight = append(b.inflight, flight{b.seq, r})
	in.seq, b.ring[ri].seq, b.lastRing = b.seq, b.seq, ri
	return nil
}

// buildStream builds into gv the TXN stream of dispatch d with header p:
// the columns' runs back to back from the start of the staging buffer,
// the header and records at d.hdr, the outputs at d.outs.
func buildStream(gv *txn.GEMV, p *Params, d *ioDispatch, gen txn.Gen, maxBD int) ([]uint32, txn.Counts, error) {
	*gv = txn.GEMV{Gen: gen, Weights: gv.Weights[:0], Outs: gv.Outs[:0], Header: d.hdr,
		Records: txn.Range{Off: d.hdr + ParamsBytes, Bytes: p.ActBytes()}, RowChunks: p.RowChunks,
		MaxBDBytes: maxBD}
	woff := 0
	for c := range p.Rows {
		wb := p.WeightBytes(c)
		gv.Weights = append(gv.Weights, txn.Range{Off: woff, Bytes: wb})
		gv.Outs = append(gv.Outs, txn.Range{Off: d.outs[c], Bytes: p.OutBytes(c)})
		woff += wb
	}
	return gv.Build()
}

// FirstStream returns the TXN stream of the first dispatch of a call of
// tokens tokens on matrix g on a device of generation gen, with staging
// and I/O buffers of the default sizes, as the Backend submits it (the
// buffer addresses left to the patches), and its parameter header.
func FirstStream(g planar.Geometry, gen txn.Gen, tokens int) ([]uint32, Params, txn.Counts, error) {
	chunks, err := PlanChunks(g, DefaultRingSize)
	if err != nil {
		return nil, Params{}, txn.Counts{}, err
	}
	if tokens < 1 {
		return nil, Params{}, txn.Counts{}, fmt.Errorf("npu: %d tokens", tokens)
	}
	var l ioLayout
	planIO(g, chunks, min(tokens, ioTokens(g, chunks, DefaultIOSize, tokens)), &l)
	d := &l.d[0]
	p := chunkParams(g, chunks[d.ci], d.ts, nil)
	var gv txn.GEMV
	w, cnt, err := buildStream(&gv, &p, d, gen, 0)
	return w, p, cnt, err
}

// waitSeq waits for every submission up to seq.
func (b *Backend) waitSeq(seq int64) error {
	for b.done < seq && len(b.inflight) > 0 {
		f := b.inflight[0]
		b.inflight = b.inflight[1:]
		if err := b.dev.Wait(f.run, b.opt.Timeout); err != nil {
			if errors.Is(err, ErrTimeout) {
				return fmt.Errorf("dispatch %d: %w after %v", f.seq, err, b.opt.Timeout)
			}
			return fmt.Errorf("dispatch %d: %w", f.seq, err)
		}
		b.done = f.seq
	}
	return nil
}

func (b *Backend) waitAll() error { return b.waitSeq(b.seq) }
