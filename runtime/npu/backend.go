package npu

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu/design"
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
	// Resident is the pin budget of resident weights in bytes (0: every
	// matrix streams through the ring): matrices whose staged chunks fit
	// get buffers of their own, filled once (resident.go). Pinned memory
	// stays below Resident plus the ring and I/O buffers.
	Resident int64
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
	ResidentBytes   int64 // bytes of resident weight buffers pinned now (within Options.Resident)
	ResidentMats    int64 // matrices resident now
	ResidentFilled  int64 // weight bytes copied into resident buffers (once per matrix)
	ResidentRead    int64 // of StreamedBytes, read by the device from resident buffers
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
		ResidentBytes: s.ResidentBytes, ResidentMats: s.ResidentMats,
		ResidentFilled: s.ResidentFilled - o.ResidentFilled, ResidentRead: s.ResidentRead - o.ResidentRead,
		Fallbacks: s.Fallbacks - o.Fallbacks, Faults: s.Faults - o.Faults,
	}
}

// PerToken is Stats divided by a number of tokens.
type PerToken struct {
	Dispatches, ContextSwitches, Syncs        float64
	BytesToDevice, WeightBytes, StreamedBytes float64
	TxnWords, BDs                             float64
	ResidentRead                              float64
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
		ResidentRead: float64(s.ResidentRead) / n,
	}
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
	kernels map[string]Kernel         // slot name -> loaded kernel
	designs map[string]*design.Design // slot name -> the design its xclbin was compiled from
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
		entries: map[string]*layout.TensorEntry{}, kernels: map[string]Kernel{}, designs: map[string]*design.Design{},
		mats: map[string]*mat{}, next: map[string]string{}, warned: map[string]bool{},
	}
	if b.warn == nil {
		b.warn = io.Discard
	}
	type use struct {
		name    string
		bytes   int64
		tensors int
		typ     string
		kTile   int
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
				u = &use{name: e.Slot, typ: e.Type, kTile: e.KTile}
				uses[e.Slot] = u
			}
			if e.Type != u.typ || e.KTile != u.kTile {
				return nil, fmt.Errorf("npu: slot %s: tensor %q is %s in tiles of %d, another of the slot's is %s in tiles of %d", e.Slot, e.Name, e.Type, e.KTile, u.typ, u.kTile)
			}
			u.bytes += e.Size
			u.tensors++
		}
	}
	if dev == nil || len(uses) == 0 {
		return b, nil
	}
	b.info = dev.Info()
	tgt := b.info.Gen.Target()
	if tgt == nil {
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
		if !ok || len(s.XCLBin) == 0 {
			b.note("slot %s: no xclbin in the package; its %d tensors run on the CPU", u.name, u.tensors)
			continue
		}
		typ, err := planar.ParseType(u.typ)
		if err != nil {
			b.note("slot %s: %v; its %d tensors run on the CPU", u.name, err, u.tensors)
			continue
		}
		d, err := design.New(tgt, typ, u.kTile)
		if err != nil {
			b.note("slot %s: %v; its %d tensors run on the CPU", u.name, err, u.tensors)
			continue
		}
		if f, err := xclbin.NewReader(bytes.NewReader(s.XCLBin), int64(len(s.XCLBin))); err == nil {
			if p, err := f.Partition(); err == nil && p.ColumnWidth > 0 && int(p.ColumnWidth) != d.Columns {
				b.note("slot %s: its xclbin is %d columns wide, the design %s is %d; its %d tensors run on the CPU", u.name, p.ColumnWidth, d.Name(), d.Columns, u.tensors)
				continue
			}
		}
		k, err := dev.LoadKernel(s.XCLBin, s.Kernel)
		if err != nil {
			b.note("slot %s: %v; its %d tensors run on the CPU", u.name, err, u.tensors)
			continue
		}
		b.kernels[u.name] = k
		b.designs[u.name] = d
	}
	if len(b.kernels) == 0 {
		return b, nil
	}
	if err := b.allocRing(); err != nil {
		b.note("staging ring: %s; every tensor runs on the CPU", pinAdvice(err))
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
