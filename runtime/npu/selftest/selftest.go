// Package selftest checks an NPU device slot by slot against the CPU and
// measures what the cost model assumes: for every slot of a target in the
// catalog, synthetic matrices of several shapes go through an npu.Backend on
// the device and through runtime/cpu, and are compared (bit for bit where
// the design promises it, else within a named tolerance); then the dispatch
// round trip and the weight streaming at 1, 2, 4 and all columns are timed.
//
// On the emulator (emu, sim) the timings are of Go code on the host CPU,
// not of an NPU, and every figure says which device made it.
package selftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/target"
)

// Comparison names how a slot's outputs are compared with the CPU's.
type Comparison string

// The comparisons.
const (
	// BitExact: every output equals cpu.MatMat's bit for bit. The emulator
	// and the simulation promise it (kernels/README.md: the kernels do the
	// CPU's f32 operations in the CPU's order).
	BitExact Comparison = "bit-exact"
	// KChunks: a matrix staged in chunks that split K: the host adds the
	// chunks' partial sums, so the outputs equal the CPU's within f32
	// rounding, not bit for bit (npu.Backend; its TestFaultFallsBack):
	// cosine >= KChunksCosine and every output within KChunksRelTol of the
	// largest output's magnitude.
	KChunks Comparison = "k-chunks"
	// Cosine: on an NPU, f32 products are bf16-emulated on AIE-ML/AIE2P
	// (npu-contract.md section 6), so the outputs must meet DESIGN.md's
	// contract: cosine >= MinCosine against cpu.MatMat over each shape, and
	// every output within RelTol of the largest output's magnitude.
	Cosine Comparison = "cosine"
)

// The tolerance of the Cosine comparison.
const (
	MinCosine     = 0.9999
	RelTol        = 1e-2
	KChunksCosine = 0.999999
	KChunksRelTol = 1e-5
)

// Options configures a run.
type Options struct {
	Target  string             // xdna1 or xdna2
	Catalog *kernelsel.Catalog // the slots (default: kernelsel.Default())
	// Device names the device for the report: "npu", "emu" or "sim".
	Device string
	// DeviceDesc says which NPU and driver made the timings on "npu"
	// ("/dev/accel/accel0, amdxdna_accel_driver 0.1.0 (...)").
	DeviceDesc string
	// Open opens a fresh device; each slot gets its own and closes it.
	Open func() (npu.Device, error)
	// XCLBin returns the xclbin of a slot (the catalog's file on an NPU,
	// the emulator's stand-in on emu and sim).
	XCLBin func(s *kernelsel.Slot) ([]byte, error)
	// Compare is how outputs are checked (BitExact on emu and sim).
	Compare Comparison
	// Prepare, when set, is called with each slot's device before its
	// first dispatch (tests inject faults there).
	Prepare func(slot string, dev npu.Device)
	// Rounds is how many times each timing is taken (median; default 5).
	Rounds int
	// StreamBytes is the size of the streaming test's matrix (default 8 MiB).
	StreamBytes int
	// Progress receives a line per step (nil: none).
	Progress func(format string, args ...any)
	// Seed seeds the synthetic matrices (0: 1).
	Seed uint64
}

// Shape is one synthetic matrix a slot is checked on.
type Shape struct {
	What       string     `json:"what"` // why this shape
	N          int        `json:"n"`
	K          int        `json:"k"`
	Columns    int        `json:"columns"` // column groups of the planar blob
	Tokens     int        `json:"tokens"`
	Ring       int        `json:"ring"`        // staging buffer size used
	Chunks     int        `json:"chunks"`      // chunks the matrix is staged in
	ShortChunk bool       `json:"short_chunk"` // a chunk smaller than the others (the planner puts it first)
	Compare    Comparison `json:"compare"`
	Pass       bool       `json:"pass"`
	Detail     string     `json:"detail"` // the comparison's figures or the failure
}

// SlotResult is one slot's verdict.
type SlotResult struct {
	Slot    string     `json:"slot"`
	Format  string     `json:"format"`
	KTile   int        `json:"k_tile"`
	Compare Comparison `json:"compare"`
	Pass    bool       `json:"pass"`
	Error   string     `json:"error,omitempty"` // why the slot could not be checked
	Shapes  []Shape    `json:"shapes"`
}

// Timing is a measured figure and what made it.
type Timing struct {
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Source string  `json:"source"`
}

// ColumnStream is the streaming measured through a number of columns.
type ColumnStream struct {
	Columns int    `json:"columns"`
	GBps    Timing `json:"gbps"`
}

// Report is a selftest's result.
type Report struct {
	Device   string         `json:"device"`
	Target   string         `json:"target"`
	Catalog  string         `json:"catalog"`
	Emulated bool           `json:"emulated"` // the figures time an emulator, not an NPU
	Slots    []SlotResult   `json:"slots"`
	Dispatch *Timing        `json:"dispatch_round_trip,omitempty"`
	Stream   []ColumnStream `json:"stream,omitempty"`
	Failed   []string       `json:"failed,omitempty"` // the slots that are wrong
}

// Run checks every slot of o.Target and takes the timings.
func Run(o Options) (*Report, error) {
	if o.Catalog == nil {
		o.Catalog = kernelsel.Default()
	}
	if o.Rounds <= 0 {
		o.Rounds = 5
	}
	if o.StreamBytes <= 0 {
		o.StreamBytes = 8 << 20
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	tgt, err := target.ByName(o.Target)
	if err != nil {
		return nil, err
	}
	if _, err := o.Catalog.Target(o.Target); err != nil {
		return nil, err
	}
	r := &Report{Device: o.Device, Target: o.Target, Catalog: o.Catalog.Version, Emulated: o.Device != "npu"}
	var slots []*kernelsel.Slot
	for i := range o.Catalog.Slots {
		if s := &o.Catalog.Slots[i]; s.Target == o.Target {
			slots = append(slots, s)
		}
	}
	if len(slots) == 0 {
		return nil, fmt.Errorf("catalog %s has no slot for %s", o.Catalog.Version, o.Target)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 22))
	for _, s := range slots {
		o.Progress("slot %s", s.Name)
		res := checkSlot(o, tgt, s, rng)
		if !res.Pass {
			r.Failed = append(r.Failed, s.Name)
		}
		r.Slots = append(r.Slots, res)
	}
	// The timings run on the first slot that passed.
	for i, s := range slots {
		if !r.Slots[i].Pass {
			continue
		}
		o.Progress("dispatch round trip and streaming on %s", s.Name)
		if err := measure(o, tgt, s, rng, r); err != nil {
			return r, fmt.Errorf("timing on %s: %w", s.Name, err)
		}
		break
	}
	return r, nil
}

// source names what made a timing.
func (o Options) source(what string) string {
	switch o.Device {
	case "npu":
		return "measured on " + cmpOr(o.DeviceDesc, "the NPU") + ": " + what
	case "sim":
		return "emulator (sim: the AIE kernel sources compiled for the host CPU), host wall clock, not an NPU figure: " + what
	}
	return "emulator (emu: the Go model of the kernels), host wall clock, not an NPU figure: " + what
}

// shapes returns the shapes a slot is checked on: odd N over several
// K-tiles, a matrix staged in chunks one of which is short, and K of exactly
// one K-tile (the slot's largest) with a batch of tokens.
func shapes(s *kernelsel.Slot, cols int) []Shape {
	kt := s.KTile
	return []Shape{
		{What: "odd N, not a multiple of the columns, 3 K-tiles", N: 333, K: 3 * kt, Columns: cols, Tokens: 1},
		{What: "staged in chunks, one of them short", N: 1001, K: 5 * kt, Columns: cols, Tokens: 1},
		{What: "K of one K-tile (" + fmt.Sprint(kt) + "), 3 tokens", N: 257, K: kt, Columns: cols, Tokens: 3},
	}
}

// backend makes a device and a Backend with one NPU tensor "w" of g on slot
// s.
func backend(o Options, s *kernelsel.Slot, g planar.Geometry, ring int, warn *bytes.Buffer) (*npu.Backend, npu.Device, error) {
	x, err := o.XCLBin(s)
	if err != nil {
		return nil, nil, err
	}
	dev, err := o.Open()
	if err != nil {
		return nil, nil, err
	}
	f := g.Format()
	e := layout.TensorEntry{Name: "w", Shape: []int{g.K, g.N}, Type: g.Type.String(), Format: f.Name, KTile: g.KTile,
		BlobRef: layout.BlobRef{Size: int64(g.Size())}, Device: "npu", Slot: s.Name}
	be, err := npu.NewBackend(dev, []layout.TensorEntry{e}, []npu.Slot{{Name: s.Name, Kernel: s.Kernel, XCLBin: x}}, nil,
		npu.Options{RingSize: ring, Warn: warn, Timeout: 5 * time.Second})
	if err != nil {
		dev.Close()
		return nil, nil, err
	}
	if d, why := be.Placement("w"); d != "npu" {
		be.Close()
		dev.Close()
		return nil, nil, fmt.Errorf("the device did not take the slot: %s", why)
	}
	return be, dev, nil
}

func checkSlot(o Options, tgt *target.Target, s *kernelsel.Slot, rng *rand.Rand) SlotResult {
	res := SlotResult{Slot: s.Name, Format: s.Format, KTile: s.KTile, Compare: o.Compare, Pass: true}
	d, err := design.New(tgt, s.Type, s.KTile)
	if err != nil {
		res.Pass, res.Error = false, "no design: "+err.Error()
		return res
	}
	for i, sh := range shapes(s, s.Columns) {
		g := planar.Geometry{Type: s.Type, N: sh.N, K: sh.K, Columns: sh.Columns, KTile: s.KTile}
		sh.Ring = npu.DefaultRingSize
		if i == 1 { // a ring a fraction of the matrix, with a short last chunk
			total := g.Size()
			if ch, err := npu.PlanChunks(d, g, npu.DefaultRingSize); err == nil && len(ch) == 1 {
				total = ch[0].Bytes // staged: the design pads the row blocks
			}
			for _, f := range []float64{0.4, 0.45, 0.35, 0.3, 0.55, 0.65, 0.25, 0.2, 0.15} {
				ring := max(4096, int(float64(total)*f)&^4095)
				if ch, err := npu.PlanChunks(d, g, ring); err == nil && len(ch) > 1 && shortChunk(ch) {
					sh.Ring = ring
					break
				}
			}
		}
		sh.Compare = o.Compare
		if ch, err := npu.PlanChunks(d, g, sh.Ring); err == nil {
			sh.Chunks = len(ch)
			sh.ShortChunk = shortChunk(ch)
			if sh.Compare == BitExact && slices.ContainsFunc(ch, func(c npu.Chunk) bool { return c.Tiles < g.K/g.KTile }) {
				sh.Compare = KChunks
			}
		}
		sh.Pass, sh.Detail = runShape(o, s, g, sh, rng, i == 0)
		if !sh.Pass {
			res.Pass = false
		}
		res.Shapes = append(res.Shapes, sh)
	}
	return res
}

// runShape runs one shape on a fresh device and compares with the CPU.
func runShape(o Options, s *kernelsel.Slot, g planar.Geometry, sh Shape, rng *rand.Rand, first bool) (bool, string) {
	m, err := randomMatrix(rng, g)
	if err != nil {
		return false, err.Error()
	}
	var warn bytes.Buffer
	be, dev, err := backend(o, s, g, sh.Ring, &warn)
	if err != nil {
		return false, err.Error()
	}
	defer dev.Close()
	defer be.Close()
	if first && o.Prepare != nil {
		o.Prepare(s.Name, dev)
	}
	x := make([]float32, sh.Tokens*g.K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	const guard = 16
	y := make([]float32, sh.Tokens*g.N+guard)
	for i := range y {
		y[i] = -12345
	}
	be.MatMat("w", m, x, y[:sh.Tokens*g.N], sh.Tokens)
	st := be.Stats()
	if st.Faults > 0 || st.CPUCalls > 0 || st.NPUCalls != 1 {
		return false, fmt.Sprintf("the device failed (%d faults; the Backend fell back to the CPU): %s", st.Faults, strings.TrimSpace(warn.String()))
	}
	for i := sh.Tokens * g.N; i < len(y); i++ {
		if y[i] != -12345 {
			return false, fmt.Sprintf("wrote past the output at %d", i)
		}
	}
	want := make([]float32, sh.Tokens*g.N)
	cpu.MatMat(m, x, want, sh.Tokens, nil)
	return compare(sh.Compare, y[:len(want)], want)
}

// compare checks y against want as c says.
func compare(c Comparison, y, want []float32) (bool, string) {
	var ab, aa, bb, maxAbs, maxWant float64
	diff := 0
	first := -1
	for i := range want {
		a, b := float64(y[i]), float64(want[i])
		ab += a * b
		aa += a * a
		bb += b * b
		maxAbs = math.Max(maxAbs, math.Abs(a-b))
		maxWant = math.Max(maxWant, math.Abs(b))
		if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
			diff++
			if first < 0 {
				first = i
			}
		}
	}
	cos := 1.0
	if aa > 0 || bb > 0 {
		cos = ab / math.Sqrt(aa*bb)
	}
	switch c {
	case BitExact:
		if diff > 0 {
			return false, fmt.Sprintf("%d of %d outputs differ from the CPU's bits (first: y[%d] = %v, cpu %v); max |diff| %.3g", diff, len(want), first, y[first], want[first], maxAbs)
		}
		return true, fmt.Sprintf("all %d outputs equal the CPU's bit for bit", len(want))
	case KChunks:
		ok := cos >= KChunksCosine && maxAbs <= KChunksRelTol*maxWant && !math.IsNaN(cos)
		return ok, fmt.Sprintf("K split across chunks, partial sums added on the host: cosine %.8f (want >= %g), max |diff| %.3g (want <= %g x max |y| = %.3g), %d of %d outputs bit-identical",
			cos, KChunksCosine, maxAbs, KChunksRelTol, KChunksRelTol*maxWant, len(want)-diff, len(want))
	default:
		ok := cos >= MinCosine && maxAbs <= RelTol*maxWant && !math.IsNaN(cos)
		return ok, fmt.Sprintf("cosine %.6f (want >= %g), max |diff| %.3g (want <= %g x max |y| = %.3g), %d of %d outputs bit-identical",
			cos, MinCosine, maxAbs, RelTol, RelTol*maxWant, len(want)-diff, len(want))
	}
}

// measure times the dispatch round trip and the streaming through 1, 2,
// 4 and all columns on slot s.
func measure(o Options, tgt *target.Target, s *kernelsel.Slot, rng *rand.Rand, r *Report) error {
	// The round trip: a matrix of one dispatch, small enough that the
	// transfer is a sliver of it.
	g := planar.Geometry{Type: s.Type, N: 257, K: s.KTile, Columns: s.Columns, KTile: s.KTile}
	m, err := randomMatrix(rng, g)
	if err != nil {
		return err
	}
	var warn bytes.Buffer
	be, dev, err := backend(o, s, g, npu.DefaultRingSize, &warn)
	if err != nil {
		return err
	}
	x := make([]float32, g.K)
	y := make([]float32, g.N)
	be.MatVec("w", m, x, y) // warm: the first call loads the context and stages the weights
	var per []float64
	for range o.Rounds * 4 {
		before := be.Stats()
		t0 := time.Now()
		be.MatVec("w", m, x, y)
		el := time.Since(t0)
		n := be.Stats().Sub(before).Dispatches
		if n > 0 {
			per = append(per, float64(el.Nanoseconds())/1e3/float64(n))
		}
	}
	st := be.Stats()
	be.Close()
	dev.Close()
	if st.Faults > 0 || len(per) == 0 {
		return fmt.Errorf("the device failed during the round trip: %s", strings.TrimSpace(warn.String()))
	}
	r.Dispatch = &Timing{Value: median(per), Unit: "us", Source: o.source(fmt.Sprintf("median of %d MatVec calls of one dispatch each (%s, N %d, K %d, weights already staged)", len(per), s.Name, g.N, g.K))}

	// Streaming: each column count streams its own matrix of about
	// StreamBytes, restaged every call.
	for _, c := range columnCounts(s.Columns) {
		k := s.KTile * max(1, 2048/s.KTile)
		n := max(c, o.StreamBytes/max(1, s.Type.RowBytes(k)))
		g := planar.Geometry{Type: s.Type, N: n, K: k, Columns: c, KTile: s.KTile}
		m, err := randomMatrix(rng, g)
		if err != nil {
			return err
		}
		var warn bytes.Buffer
		be, dev, err := backend(o, s, g, npu.DefaultRingSize, &warn)
		if err != nil {
			return err
		}
		x := make([]float32, g.K)
		y := make([]float32, g.N)
		var gbs []float64
		for range o.Rounds {
			before := be.Stats()
			t0 := time.Now()
			be.MatVec("w", m, x, y)
			el := time.Since(t0)
			d := be.Stats().Sub(before)
			if d.StreamedBytes > 0 {
				gbs = append(gbs, float64(d.StreamedBytes)/el.Seconds()/1e9)
			}
		}
		st := be.Stats()
		be.Close()
		dev.Close()
		if st.Faults > 0 || len(gbs) == 0 {
			return fmt.Errorf("the device failed streaming through %d columns: %s", c, strings.TrimSpace(warn.String()))
		}
		r.Stream = append(r.Stream, ColumnStream{Columns: c, GBps: Timing{Value: median(gbs), Unit: "GB/s",
			Source: o.source(fmt.Sprintf("median of %d MatVec calls, %.1f MiB of weight runs each through %d of %d columns (host staging and the dispatch included)", len(gbs), float64(g.Size())/(1<<20), c, s.Columns))}})
	}
	return nil
}

// shortChunk reports whether the chunks are not all of one size.
func shortChunk(ch []npu.Chunk) bool {
	return slices.ContainsFunc(ch, func(c npu.Chunk) bool { return c.Bytes != ch[0].Bytes })
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// columnCounts returns 1, 2, 4 and all (up to all).
func columnCounts(all int) []int {
	var out []int
	for _, c := range []int{1, 2, 4, all} {
		if c <= all && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// randomMatrix returns a packed matrix of g with random codes and plausible
// finite scales, as GGUF quantisers write them.
func randomMatrix(rng *rand.Rand, g planar.Geometry) (*cpu.Matrix, error) {
	t := g.Type
	src := make([]byte, g.N*t.RowBytes(g.K))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	put16 := func(o int, v float32) { binary.LittleEndian.PutUint16(src[o:], planar.F32ToF16(v)) }
	scale := func() float32 { return float32(0.002 + 0.02*rng.Float64()) }
	bb := t.BlockBytes()
	for o := 0; o+bb <= len(src); o += bb {
		switch t {
		case planar.Q4_0, planar.Q5_0, planar.Q8_0:
			put16(o, scale())
		case planar.Q4_K, planar.Q5_K:
			put16(o, scale()/8)
			put16(o+2, scale()/8)
		case planar.Q6_K:
			put16(o+208, scale()/16)
		default:
			return nil, fmt.Errorf("selftest: no NPU kernel for %s", t)
		}
	}
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		return nil, err
	}
	m := &cpu.Matrix{G: g, Blob: blob}
	return m, m.Check()
}
