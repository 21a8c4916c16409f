package npu

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdna-go/xdna/arch"
	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/target"
)

// Prediction is the cost model's estimate of one decode token (one MatVec
// per matrix) of a plan on a target.
//
// The device part is kernelsel's Target.Predict: Dispatches launches at
// dispatch_us, NPUBytes (what the design's weight runs hold, padding rows
// included) streamed at weight_gbps, ContextSwitches at context_switch_us
// (per column when the catalog says so); and from each slot's design
// (design.Timing): a dispatch lasts as long as its slowest part, so where
// the activation broadcast, the outputs or the cores' kernel (its cycle
// estimates) take longer than the weights, Array is that excess. The host part
// needs the host's memory bandwidth (cpuGBs, 1e9 bytes/s; 0 leaves it
// out): the CPU matmuls read CPUBytes, and the NPU's weights are copied
// from the mapped file into the staging ring (Stage), which the Backend
// overlaps with the device (double buffering, prefetch of the next call).
// So:
//
//	Total = CPU + Switch + max(Dispatch + Stream, Stage)
//
// Everything else (attention, norms, sampling) is outside the model.
type Prediction struct {
	Target          string
	RingSize        int // staging buffer size the dispatch counts assume
	NPUMatrices     int
	CPUMatrices     int
	Dispatches      int   // kernel launches per token
	TxnWords        int   // instruction-stream words per token
	BDs             int   // shim BDs the streams write per token
	NPUBytes        int64 // weight bytes streamed by the NPU per token (the designs' runs)
	PackedBytes     int64 // of which in the package (the rest pads row blocks)
	ActBytes        int64 // activation bytes broadcast per token (headers, replays)
	CPUBytes        int64 // weight bytes read by the CPU matmuls per token
	ContextSwitches int   // per token, counting the wrap to the next token

	Dispatch time.Duration // Dispatches launches
	Stream   time.Duration // NPUBytes at the target's weight bandwidth
	Array    time.Duration // what the designs' other channels and cores add beyond Stream
	Switch   time.Duration // ContextSwitches
	Stage    time.Duration // host copy of the streamed NPUBytes into the ring at cpuGBs
	// Resident weights (Options.Resident): the budget, the bytes of the
	// matrices that fit it first-fit in execution order (as the Backend
	// takes them), and how many; their host copy per token is gone.
	ResidentBudget, ResidentBytes int64
	ResidentMatrices              int
	CPU                           time.Duration // CPUBytes at cpuGBs
	Total                         time.Duration

	Tensors []TensorCost // per matmul, in execution order
	Paths   []PathTotal  // Total with the per-dispatch cost of each direct submit path
	Figures []string     // the inputs' sources when a calibration gave them (PredictCalibrated)
}

// TensorCost is one matrix's share of a Prediction.
type TensorCost struct {
	Name       string
	Device     string // "npu" or "cpu"
	Slot       string
	Bytes      int64
	Dispatches int
	Time       time.Duration // device time (launches + stream) or CPU time
}

// MsPerToken returns Total in milliseconds.
func (p *Prediction) MsPerToken() float64 { return float64(p.Total) / 1e6 }

// TokensPerSecond returns 1/Total (0 if Total is 0).
func (p *Prediction) TokensPerSecond() float64 {
	if p.Total <= 0 {
		return 0
	}
	return 1e9 / float64(p.Total)
}

// Predict returns the cost model's time per decode token for the matmuls
// of entries (a manifest's tensors, in any order) on target t, with the
// host reading memory at cpuGBs (1e9 bytes/s; 0 for unknown) and the
// default staging ring.
func Predict(entries []layout.TensorEntry, t *kernelsel.Target, cpuGBs float64) Prediction {
	return PredictRing(entries, t, cpuGBs, DefaultRingSize)
}

// PredictRing is Predict with staging buffers of ringSize bytes.
//
// The matmuls are the packed 2-D entries, except token_embd.weight when an
// output.weight exists (then it is only an embedding lookup). An NPU entry
// costs the dispatches the Backend makes for one token (Dispatches); an
// entry whose matrix cannot be staged (ErrTooLarge) counts as CPU.
// Context switches are counted along the execution order (ExecOrder):
// each NPU matmul whose slot differs from the previous NPU matmul's,
// including the wrap from the last of one token to the first of the next.
func PredictRing(entries []layout.TensorEntry, t *kernelsel.Target, cpuGBs float64, ringSize int) Prediction {
	return PredictResident(entries, t, cpuGBs, ringSize, 0)
}

// PredictResident is PredictRing with a pin budget of resident weights:
// the NPU matrices whose streamed bytes fit it, first-fit in execution
// order, are not copied by the host (Stage counts the rest).
func PredictResident(entries []layout.TensorEntry, t *kernelsel.Target, cpuGBs float64, ringSize int, budget int64) Prediction {
	p := Prediction{Target: t.Name, RingSize: ringSize, ResidentBudget: budget}
	hasOutput := false
	for i := range entries {
		if entries[i].Name == "output.weight" {
			hasOutput = true
		}
	}
	cpuTime := func(b int64) time.Duration {
		if !(cpuGBs > 0) {
			return 0
		}
		return time.Duration(math.Round(float64(b) / cpuGBs))
	}
	var slots []string
	counts := map[planar.Geometry]countsOf{} // by geometry: a model's layers repeat a few shapes
	for _, e := range ExecOrder(entries) {
		if e.Format == layout.FormatRaw || len(e.Shape) != 2 || e.Name == "token_embd.weight" && hasOutput {
			continue
		}
		tc := TensorCost{Name: e.Name, Device: "cpu", Bytes: e.Size}
		var extra time.Duration
		if e.Device == "npu" {
			if cnt, ok := npuCountsMemo(counts, e, t, ringSize); ok {
				tc.Device, tc.Slot, tc.Dispatches, tc.Bytes = "npu", e.Slot, cnt.Dispatches, cnt.WeightBytes
				p.TxnWords += cnt.Words
				p.BDs += cnt.BDs
				p.ActBytes += cnt.ActBytes
				p.PackedBytes += e.Size
				// The weights' time is the catalog's (overridable) figure;
				// the array's other parts are the design's.
				w := t.Predict(0, cnt.WeightBytes, 0)
				extra = max(0, max(cnt.Timing.Acts, cnt.Timing.Outs, cnt.Timing.Compute)-w)
			}
		}
		if tc.Device == "npu" {
			p.NPUMatrices++
			p.Dispatches += tc.Dispatches
			p.NPUBytes += tc.Bytes
			p.Array += extra
			if p.ResidentBytes+tc.Bytes <= budget {
				p.ResidentBytes += tc.Bytes
				p.ResidentMatrices++
			}
			tc.Time = t.Predict(tc.Dispatches, tc.Bytes, 0) + extra
			slots = append(slots, tc.Slot)
		} else {
			p.CPUMatrices++
			p.CPUBytes += tc.Bytes
			tc.Time = cpuTime(tc.Bytes)
		}
		p.Tensors = append(p.Tensors, tc)
	}
	for i := range slots {
		if len(slots) > 1 && slots[i] != slots[(i+1)%len(slots)] {
			p.ContextSwitches++
		}
	}
	p.Dispatch = t.Predict(p.Dispatches, 0, 0)
	p.Stream = t.Predict(0, p.NPUBytes, 0) + p.Array
	p.Switch = t.Predict(0, 0, p.ContextSwitches)
	p.Stage = cpuTime(p.NPUBytes - p.ResidentBytes)
	p.CPU = cpuTime(p.CPUBytes)
	p.Total = p.CPU + p.Switch + max(p.Dispatch+p.Stream, p.Stage)
	for _, path := range SubmitPaths(t.Name) {
		us := 0.0
		for _, tc := range p.Tensors {
			if tc.Dispatches > 0 {
				us += path.FirstUS + float64(tc.Dispatches-1)*path.NextUS
			}
		}
		d := time.Duration(math.Round(us * 1e3))
		p.Paths = append(p.Paths, PathTotal{SubmitPath: path, Dispatch: d,
			Total: p.CPU + p.Switch + max(d+p.Stream, p.Stage)})
	}
	return p
}

// countsOf is a memoized result of npuCounts.
type countsOf struct {
	cnt Counts
	ok  bool
}

// npuCountsMemo is npuCounts through memo, keyed by e's geometry (the only
// part of e that npuCounts reads; t and ringSize are one prediction's).
// Building a design for each of a large model's matrices cost more than
// packing it (1.3 s of CPU for a 116-layer model with 464 matrices of 4
// shapes).
func npuCountsMemo(memo map[planar.Geometry]countsOf, e layout.TensorEntry, t *kernelsel.Target, ringSize int) (Counts, bool) {
	g, err := e.Geometry(t.Columns)
	if err != nil {
		return Counts{}, false
	}
	if c, ok := memo[g]; ok {
		return c.cnt, c.ok
	}
	cnt, ok := npuCounts(e, t, ringSize)
	memo[g] = countsOf{cnt, ok}
	return cnt, ok
}

// npuCounts returns what one decode call of entry e moves on target t's
// design for its slot; ok is false when no design or dispatch carries it
// (the Backend then runs it on the CPU).
func npuCounts(e layout.TensorEntry, t *kernelsel.Target, ringSize int) (Counts, bool) {
	tgt, err := target.ByName(t.Name)
	if err != nil {
		return Counts{}, false
	}
	g, err := e.Geometry(t.Columns)
	if err != nil {
		return Counts{}, false
	}
	d, err := design.New(tgt, g.Type, g.KTile)
	if err != nil {
		return Counts{}, false
	}
	cnt, err := StreamCounts(d, g, 1, ringSize, 0)
	return cnt, err == nil
}

// SubmitPath is a way of submitting a token's dispatches and its cost per
// dispatch, from npu-contract.md section 7 with the source of each figure.
// A matmul's first dispatch costs FirstUS, each further dispatch of the
// same call NextUS: a chain can only hold the dispatches of one call, since
// the next matmul waits for the CPU's work on this one's output (decode
// has one dispatch per matmul, so chains do not shorten it).
type SubmitPath struct {
	Name            string
	FirstUS, NextUS float64 // submission and completion included
	Source          string
}

// PathTotal is a Prediction's time per token on one submit path.
type PathTotal struct {
	SubmitPath
	Dispatch, Total time.Duration
}

// SubmitPaths returns the submit paths of a target with their measured
// per-dispatch costs. The catalog's dispatch_us is the XRT path; the
// direct-driver figures were measured on XDNA2 only (XNPU), so on XDNA1
// they are the XDNA2 figures, said so in the source.
func SubmitPaths(target string) []SubmitPath {
	const (
		xnpuSeq   = "XNPU log 8: EXEC_CMD + wait round trip 53-59 us per op, sequential (XDNA2)"
		xnpuChain = "XNPU log 8: 41.2 us per op pipelined (36 us on the device + 5.3 us submit), the cost a command chain approaches (XDNA2)"
	)
	note := ""
	if target == "xdna1" {
		note = "; not measured on XDNA1"
	}
	return []SubmitPath{
		{"amdxdna direct, one command per dispatch", 56, 56, xnpuSeq + note},
		{"amdxdna direct, a call's dispatches in one chain", 56, 41.2, xnpuSeq + "; " + xnpuChain + note},
	}
}

// String is a short breakdown, one item per line.
func (p *Prediction) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "predicted on %s: %.2f ms/token, %.1f tok/s\n", p.Target, p.MsPerToken(), p.TokensPerSecond())
	for _, f := range p.Figures {
		fmt.Fprintf(&b, "  figure: %s\n", f)
	}
	if p.NPUMatrices == 0 {
		// Nothing to dispatch: the submit paths and streams would all be
		// zeros that read like a figure.
		fmt.Fprintf(&b, "  npu: no matrix planned on it; the CPU runs all %d matrices, %s (%v)\n", p.CPUMatrices, mib(p.CPUBytes), p.CPU)
		return b.String()
	}
	fmt.Fprintf(&b, "  npu: %d matrices, %d dispatches (%v), %s streamed (%v), %d context switches (%v)\n",
		p.NPUMatrices, p.Dispatches, p.Dispatch, mib(p.NPUBytes), p.Stream, p.ContextSwitches, p.Switch)
	fmt.Fprintf(&b, "  designs: %s of the package and %s of row-block padding streamed, %s of activations broadcast; the cores and the other channels add %v\n",
		mib(p.PackedBytes), mib(p.NPUBytes-p.PackedBytes), mib(p.ActBytes), p.Array)
	if p.ResidentBudget > 0 {
		fmt.Fprintf(&b, "  resident: %d matrices, %s of a %s budget, read where they are (no host copy)\n",
			p.ResidentMatrices, mib(p.ResidentBytes), mib(p.ResidentBudget))
	}
	fmt.Fprintf(&b, "  host: %s staged into the ring (%v, overlapped), %d cpu matrices %s (%v)\n",
		mib(p.NPUBytes-p.ResidentBytes), p.Stage, p.CPUMatrices, mib(p.CPUBytes), p.CPU)
	fmt.Fprintf(&b, "  streams: %d TXN words, %d shim BDs per token\n", p.TxnWords, p.BDs)
	for _, t := range p.Paths {
		fmt.Fprintf(&b, "  %s (%.1f us a call's first dispatch, %.1f each next): %.2f ms/token, %.1f tok/s [%s]\n",
			t.Name, t.FirstUS, t.NextUS, float64(t.Total)/1e6, 1e9/float64(max(t.Total, 1)), t.Source)
	}
	return b.String()
}

// Against compares the prediction with what a Backend counted over tokens
// decode tokens (one MatVec per matrix per token), one line per figure.
func (p *Prediction) Against(s Stats, tokens int) string {
	pt := s.PerToken(tokens)
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %12s %12s\n", "per token", "predicted", "counted")
	fmt.Fprintf(&b, "%-22s %12d %12.1f\n", "dispatches", p.Dispatches, pt.Dispatches)
	fmt.Fprintf(&b, "%-22s %12d %12.1f\n", "TXN words", p.TxnWords, pt.TxnWords)
	fmt.Fprintf(&b, "%-22s %12d %12.1f\n", "shim BDs", p.BDs, pt.BDs)
	fmt.Fprintf(&b, "%-22s %12s %12s\n", "weights streamed", mib(p.NPUBytes), mib(int64(pt.StreamedBytes)))
	fmt.Fprintf(&b, "%-22s %12d %12.1f\n", "context switches", p.ContextSwitches, pt.ContextSwitches)
	fmt.Fprintf(&b, "%-22s %12s %12s\n", "staged into the ring", mib(p.NPUBytes-p.ResidentBytes), mib(int64(pt.WeightBytes)))
	if p.ResidentBudget > 0 || s.ResidentBytes > 0 {
		fmt.Fprintf(&b, "%-22s %12s %12s\n", "read from resident", mib(p.ResidentBytes), mib(int64(pt.ResidentRead)))
	}
	return b.String()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// ExecOrder returns entries sorted in the order a decode step runs their
// matmuls: the embedding, then per layer (numerically) by the step its
// family's descriptor gives each tensor (arch.Rank: the attention
// projections, q, k, v or the fused qkv; attn_output; the FFN gate/up, or
// the fused gate_up, or phi3's ffn_up; ffn_down), then the output head.
// Other names keep their place by name after their layer's known ones.
func ExecOrder(entries []layout.TensorEntry) []layout.TensorEntry {
	s := slices.Clone(entries)
	slices.SortStableFunc(s, func(a, b layout.TensorEntry) int {
		la, ra := execKey(a.Name)
		lb, rb := execKey(b.Name)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(ra, rb), cmp.Compare(a.Name, b.Name))
	})
	return s
}

// execKey returns a name's layer (-1 before the layers, MaxInt after) and
// its rank inside the layer.
func execKey(name string) (layer, rank int) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		if strings.HasPrefix(name, "output") {
			return math.MaxInt, 0
		}
		return -1, 0
	}
	num, role, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(num)
	if err != nil {
		return -1, 0
	}
	if step, ok := arch.Rank(role); ok {
		return n, step
	}
	return n, arch.MaxStep + 1
}
