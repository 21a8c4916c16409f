package npu_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

// xdna2 holds the catalog's XDNA2 figures (manifest.toml).
var xdna2 = &kernelsel.Target{Name: "xdna2", Columns: 8, DispatchUS: 150, ContextSwitchUS: 360,
	ContextSwitchPerColumn: true, WeightGBps: 56, MaxContexts: 16}

// tinyModel is a two-layer Llama-shaped plan on xdna2: fused qkv, output
// and gate_up in Q4_K, ffn_down and the head in Q6_K, the embedding on the
// CPU, plus a norm stored raw.
type tinyModel struct {
	entries []layout.TensorEntry
	mats    map[string]*cpu.Matrix
	slots   []npu.Slot
}

func newTinyModel(t testing.TB, rng *rand.Rand) *tinyModel {
	m := &tinyModel{mats: map[string]*cpu.Matrix{}}
	add := func(name string, typ planar.Type, n, k int, device, slot string) {
		g := planar.Geometry{Type: typ, N: n, K: k, Columns: 8, KTile: 256}
		mat := packed(t, rng, g)
		m.mats[name] = mat
		m.entries = append(m.entries, entry(name, mat, device, slot))
	}
	add("token_embd.weight", planar.Q4_K, 1000, 512, "cpu", "")
	for _, l := range []string{"blk.1.", "blk.0."} { // any order: Predict sorts
		add(l+"attn_qkv.weight", planar.Q4_K, 768, 512, "npu", "q4k")
		add(l+"attn_output.weight", planar.Q4_K, 512, 512, "npu", "q4k")
		add(l+"ffn_gate_up.weight", planar.Q4_K, 2048, 512, "npu", "q4k")
		add(l+"ffn_down.weight", planar.Q6_K, 512, 1024, "npu", "q6k")
	}
	add("output.weight", planar.Q6_K, 1000, 512, "npu", "q6k")
	m.entries = append(m.entries, layout.TensorEntry{Name: "output_norm.weight", Shape: []int{512}, Type: "F32",
		Format: layout.FormatRaw, BlobRef: layout.BlobRef{Size: 2048}, Device: "cpu"})
	m.slots = []npu.Slot{slotFor(t, "q4k", m.mats["blk.0.attn_qkv.weight"].G, 8),
		slotFor(t, "q6k", m.mats["output.weight"].G, 8)}
	return m
}

func TestExecOrder(t *testing.T) {
	m := newTinyModel(t, rand.New(rand.NewPCG(1, 1)))
	var names []string
	for _, e := range npu.ExecOrder(m.entries) {
		names = append(names, e.Name)
	}
	want := "token_embd.weight blk.0.attn_qkv.weight blk.0.attn_output.weight blk.0.ffn_gate_up.weight blk.0.ffn_down.weight " +
		"blk.1.attn_qkv.weight blk.1.attn_output.weight blk.1.ffn_gate_up.weight blk.1.ffn_down.weight output.weight output_norm.weight"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("order\n%s\nwant\n%s", got, want)
	}
}

// TestPredict checks the breakdown by hand and then runs the same plan for
// a few decode tokens on the emulator: dispatches, streamed bytes and
// context switches per token are what the model predicts, and every output
// equals the CPU's.
func TestPredict(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	m := newTinyModel(t, rng)
	const cpuGBs = 20
	p := npu.Predict(m.entries, xdna2, cpuGBs)
	var npuBytes, cpuBytes int64
	for _, e := range m.entries {
		switch {
		case e.Device == "npu":
			npuBytes += e.Size
		case e.Name == "token_embd.weight", e.Format == layout.FormatRaw:
		default:
			cpuBytes += e.Size
		}
	}
	// Sequence of slots: q4k q4k q4k q6k | q4k q4k q4k q6k | q6k, and the wrap
	// back to q4k: 4 switches.
	if p.NPUMatrices != 9 || p.CPUMatrices != 0 || p.Dispatches != 9 || p.ContextSwitches != 4 ||
		p.PackedBytes != npuBytes || p.NPUBytes < npuBytes || p.CPUBytes != cpuBytes {
		t.Fatalf("prediction %+v; want 9 NPU matrices, 9 dispatches, 4 switches, %d bytes", p, npuBytes)
	}
	if p.Dispatch != 9*150*time.Microsecond || p.Switch != 4*8*360*time.Microsecond ||
		p.Stream != xdna2.Predict(0, p.NPUBytes, 0)+p.Array || p.Stage != time.Duration(float64(p.NPUBytes)/cpuGBs+0.5) {
		t.Errorf("breakdown %v %v %v %v", p.Dispatch, p.Switch, p.Stream, p.Stage)
	}
	if p.Total != p.CPU+p.Switch+max(p.Dispatch+p.Stream, p.Stage) || p.TokensPerSecond() <= 0 {
		t.Errorf("total %v, %v tok/s", p.Total, p.TokensPerSecond())
	}
	if !strings.Contains(p.String(), "ms/token") {
		t.Errorf("String: %q", p.String())
	}

	dev := emu.New(emu.XDNA2())
	defer dev.Close()
	be, err := npu.NewBackend(dev, m.entries, m.slots, nil, npu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	const tokens = 4
	for tok := 0; tok < tokens; tok++ {
		for _, e := range npu.ExecOrder(m.entries) {
			mat := m.mats[e.Name]
			if mat == nil || e.Name == "token_embd.weight" {
				continue
			}
			x := randomX(rng, mat.G.K)
			y := make([]float32, mat.G.N)
			be.MatVec(e.Name, mat, x, y)
			want := make([]float32, mat.G.N)
			cpu.MatVec(mat, x, want, nil)
			if c, _ := cosine(y, want); c < 0.999999 {
				t.Fatalf("token %d %s: cosine %v against cpu.MatVec", tok, e.Name, c)
			}
		}
	}
	st := be.Stats()
	pt := st.PerToken(tokens)
	if pt.TxnWords != float64(p.TxnWords) || pt.BDs != float64(p.BDs) || dev.Counters().Exec.Words != int(st.TxnWords) || dev.Counters().Exec.BDs != int(st.BDs) {
		t.Errorf("counted %v TXN words and %v BDs per token (device executed %d, %d over %d tokens); predicted %d, %d",
			pt.TxnWords, pt.BDs, dev.Counters().Exec.Words, dev.Counters().Exec.BDs, tokens, p.TxnWords, p.BDs)
	}
	if pt.Dispatches != float64(p.Dispatches) || st.StreamedBytes != tokens*p.NPUBytes {
		t.Errorf("counted %v dispatches, %d bytes streamed per token; predicted %d, %d", pt.Dispatches, st.StreamedBytes/tokens, p.Dispatches, p.NPUBytes)
	}
	// The first token has no switch into it.
	if st.ContextSwitches != int64(tokens*p.ContextSwitches-1) || dev.Counters().ContextSwitches != st.ContextSwitches {
		t.Errorf("%d context switches (device %d), predicted %d per token", st.ContextSwitches, dev.Counters().ContextSwitches, p.ContextSwitches)
	}
	// From the second token on, every call's weights were staged by the
	// prefetch of the call before (except the first call of each token,
	// whose predecessor, the head, learned it at the end of token 1).
	if st.PrefetchHits < int64((tokens-1)*p.NPUMatrices-1) {
		t.Errorf("%d prefetch hits of %d prefetches over %d tokens", st.PrefetchHits, st.Prefetches, tokens)
	}
	if st.PinnedPeak > 2*npu.DefaultRingSize+2*npu.DefaultIOSize+4*8192 {
		t.Errorf("pinned peak %d", st.PinnedPeak)
	}
	t.Logf("\n%s%s", p.String(), p.Against(st, tokens))
}

// TestPredictAllCPU: a plan with nothing on the NPU says so, without the
// dispatch, stream and submit-path lines, which would be zeros.
func TestPredictAllCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	m := newTinyModel(t, rng)
	for i := range m.entries {
		m.entries[i].Device = "cpu"
	}
	p := npu.Predict(m.entries, xdna2, 20)
	s := p.String()
	if p.NPUMatrices != 0 || !strings.Contains(s, "no matrix planned on it") || strings.Contains(s, "dispatch") ||
		strings.Contains(s, "amdxdna") || strings.Count(s, "\n") != 2 {
		t.Errorf("all-CPU prediction:\n%s", s)
	}
}
