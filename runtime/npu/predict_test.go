package npu_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/gguftest"
	"github.com/xdna-go/xdna/layout/pack"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// shape is a Llama-family decoder's matrix shapes.
type shape struct {
	name                  string
	layers, dim, ffn      int
	heads, kvHeads, vocab int
}

// entries returns the planned matmul entries of s with every matrix of type typ (0:
// llama.cpp's Q4_K_M mix, gguftest.Q4KMType), planned as layout/pack plans them
// without a 700 MB GGUF: Q,K,V and gate,up fused when they share type, each matrix
// the catalog's slot for target or the CPU, then one slot per format when one fits
// all its matrices (pack's oneSlotPerFormat), sized as its planar blob.
// TestPredictPlanMatchesPack checks this against pack.MakePlan on a small shape.
func (s shape) entries(t *testing.T, cat *kernelsel.Catalog, target string, typ planar.Type) []layout.TensorEntry {
	t.Helper()
	cols := cat.Targets[target].Columns
	hd := s.dim / s.heads
	typeOf := func(name string, k int) planar.Type {
		if typ != 0 {
			return typ
		}
		return gguftest.Q4KMType(name, s.layers, k)
	}
	var out []layout.TensorEntry
	add := func(name string, n, k int, ty planar.Type) {
		e := layout.TensorEntry{Name: name, Shape: []int{k, n}, Type: ty.String(), Device: "cpu"}
		f, err := planar.FormatOf(ty)
		if err != nil {
			t.Fatal(err)
		}
		e.Format = f.Name
		c := cat.Select(target, ty, n, k, cat.CPUMaxN)
		e.KTile = c.KTile
		if !c.CPU() {
			e.Device, e.Slot = "npu", c.Slot.Name
		}
		out = append(out, e)
	}
	for l := 0; l < s.layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		kv := hd * s.kvHeads
		tq, tk, tv := typeOf(p+"attn_q.weight", s.dim), typeOf(p+"attn_k.weight", s.dim), typeOf(p+"attn_v.weight", s.dim)
		if tq == tk && tk == tv {
			add(p+"attn_qkv.weight", s.dim+2*kv, s.dim, tq)
		} else {
			add(p+"attn_q.weight", s.dim, s.dim, tq)
			add(p+"attn_k.weight", kv, s.dim, tk)
			add(p+"attn_v.weight", kv, s.dim, tv)
		}
		add(p+"attn_output.weight", s.dim, s.dim, typeOf(p+"attn_output.weight", s.dim))
		tg, tu := typeOf(p+"ffn_gate.weight", s.dim), typeOf(p+"ffn_up.weight", s.dim)
		if tg == tu {
			add(p+"ffn_gate_up.weight", 2*s.ffn, s.dim, tg)
		} else {
			add(p+"ffn_gate.weight", s.ffn, s.dim, tg)
			add(p+"ffn_up.weight", s.ffn, s.dim, tu)
		}
		add(p+"ffn_down.weight", s.dim, s.ffn, typeOf(p+"ffn_down.weight", s.ffn))
	}
	// Tied embeddings: token_embd.weight is the output projection (its type: the
	// output's, Q6_K in the Q4_K_M mix).
	add("token_embd.weight", s.vocab, s.dim, typeOf("output.weight", s.dim))
	// One slot per format when one of the chosen ones fits every matrix of it.
	byType := map[string]map[string]int{}
	for _, e := range out {
		if e.Device == "npu" {
			if byType[e.Type] == nil {
				byType[e.Type] = map[string]int{}
			}
			byType[e.Type][e.Slot]++
		}
	}
	for ty, count := range byType {
		var best *kernelsel.Slot
		for name := range count {
			sl := cat.Slot(name)
			fits := true
			for _, e := range out {
				fits = fits && (e.Type != ty || e.Device != "npu" || e.Shape[0]%sl.KTile == 0 && sl.MinN <= e.Shape[1] && e.Shape[1] <= sl.MaxN)
			}
			if fits && (best == nil || count[name] > count[best.Name] || count[name] == count[best.Name] && name < best.Name) {
				best = sl
			}
		}
		for i := range out {
			if best != nil && out[i].Type == ty && out[i].Device == "npu" {
				out[i].Slot, out[i].KTile = best.Name, best.KTile
			}
		}
	}
	for i := range out {
		ty, _ := planar.ParseType(out[i].Type)
		out[i].Size = int64(planar.Geometry{Type: ty, N: out[i].Shape[1], K: out[i].Shape[0], Columns: cols, KTile: out[i].KTile}.Size())
	}
	return out
}

// TestPredictPlanMatchesPack checks shape.entries against the packer's own plan
// (pack.MakePlan) on a small random model of the Q4_K_M mix, whose plan needs fusion
// decisions, per-matrix slots and the one-slot-per-format rule.
func TestPredictPlanMatchesPack(t *testing.T) {
	s := shape{"small", 8, 512, 1536, 8, 2, 1024}
	path := filepath.Join(t.TempDir(), "small.gguf")
	gs := gguftest.Shape{Arch: "llama", Layers: s.layers, Dim: s.dim, FFN: s.ffn, Heads: s.heads, HeadsKV: s.kvHeads,
		Vocab: s.vocab, Q4KM: true, Seed: 3, Tied: true}
	if err := gguftest.WriteModel(path, gs); err != nil {
		t.Fatal(err)
	}
	g, err := layout.OpenGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	cat := kernelsel.Default()
	for _, target := range []string{"xdna1", "xdna2"} {
		p, err := pack.MakePlan(g, &pack.Options{Target: target, Catalog: cat, CPUMaxN: cat.CPUMaxN})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, e := range p.Entries {
			if len(e.Shape) == 2 {
				want[e.Name] = fmt.Sprintf("%v %s %s %s k%d %d", e.Shape, e.Type, e.Device, e.Slot, e.KTile, e.Size)
			}
		}
		got := s.entries(t, cat, target, 0)
		// The tied token_embd is the one difference: gguftest types it Q4_K, llama.cpp
		// Q6_K (llama_tensor_get_type treats a tied token_embd as the output), which
		// the prediction follows.
		delete(want, "token_embd.weight")
		for _, e := range got {
			if e.Name == "token_embd.weight" {
				continue
			}
			if w := fmt.Sprintf("%v %s %s %s k%d %d", e.Shape, e.Type, e.Device, e.Slot, e.KTile, e.Size); want[e.Name] != w {
				t.Errorf("%s %s: predicted plan %q, pack %q", target, e.Name, w, want[e.Name])
			}
			delete(want, e.Name)
		}
		for name, w := range want {
			t.Errorf("%s %s: in pack's plan (%s), not in the predicted one", target, name, w)
		}
	}
}

// TestPredictedDecode prints the cost model's decode tok/s (npu.Predict: the
// Backend's dispatches per matmul, the bytes each slot's design streams (with its
// row-block padding) and what its other channels and cores add by their cycle
// estimates, the catalog's per-target dispatch, bandwidth and context-switch
// figures, host staging at hostGBs) for the Llama-3.2-1B and
// Qwen2.5-0.5B shapes on both targets with the kernels' slots. PREDICTED, not
// measured: no NPU ran anything here. It fails only if the plan puts no matrix on
// the NPU.
func TestPredictedDecode(t *testing.T) {
	const hostGBs = 40 // assumed host copy bandwidth into the staging ring (README's figure)
	cat := kernelsel.Default()
	shapes := []shape{
		{"Llama-3.2-1B", 16, 2048, 8192, 32, 8, 128256},
		{"Qwen2.5-0.5B", 24, 896, 4864, 14, 2, 151936},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-13s %-7s %-6s %5s %5s %9s %9s %9s %8s %9s %9s | %s\n", "shape", "weights", "target", "npu", "disp", "MiB/tok", "pad MiB", "array ms", "switches", "ms/tok", "tok/s", "tok/s with direct submit paths (per-dispatch us); all resident: tok/s, direct")
	for _, s := range shapes {
		for _, typ := range []planar.Type{planar.Q4_0, planar.Q8_0, 0} {
			for _, target := range []string{"xdna1", "xdna2"} {
				tgt, err := cat.Target(target)
				if err != nil {
					t.Fatal(err)
				}
				p := npu.Predict(s.entries(t, cat, target, typ), tgt, hostGBs)
				if p.NPUMatrices == 0 {
					t.Fatalf("%s %s: no matrix on the NPU", s.name, target)
				}
				wname := "Q4_K_M"
				if typ != 0 {
					wname = typ.String()
				}
				var paths []string
				for _, pt := range p.Paths {
					paths = append(paths, fmt.Sprintf("%.1f (%.1f/%.1f)", 1e9/float64(pt.Total), pt.FirstUS, pt.NextUS))
				}
				// Every NPU matrix resident (--npu-resident with a budget that
				// holds them): no host copy into the ring.
				r := npu.PredictResident(s.entries(t, cat, target, typ), tgt, hostGBs, npu.DefaultRingSize, 1<<40)
				if r.ResidentMatrices != p.NPUMatrices || r.Stage != 0 {
					t.Errorf("%s %s %s: %d of %d matrices resident, stage %v", s.name, wname, target, r.ResidentMatrices, p.NPUMatrices, r.Stage)
				}
				best := r.Paths[len(r.Paths)-1]
				fmt.Fprintf(&b, "%-13s %-7s %-6s %5d %5d %9.1f %9.1f %9.2f %8d %9.2f %9.1f | %s; %.1f, %.1f\n", s.name, wname, target, p.NPUMatrices, p.Dispatches,
					float64(p.NPUBytes)/(1<<20), float64(p.NPUBytes-p.PackedBytes)/(1<<20), float64(p.Array)/1e6, p.ContextSwitches, p.MsPerToken(), p.TokensPerSecond(), strings.Join(paths, ", "),
					r.TokensPerSecond(), 1e9/float64(best.Total))
			}
		}
	}
	t.Logf("PREDICTED decode speed (cost model, host staging %d GB/s assumed; FastFlowLM measured 64.5 tok/s for Llama-3.2-1B on a Ryzen AI 7 350, XDNA2):\n%s", hostGBs, b.String())
}
