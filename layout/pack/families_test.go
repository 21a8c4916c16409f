package pack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/arch"
	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/gguftest"
	"github.com/xdna-go/xdna/layout/pack"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// family is the shape of a released model of a family.
type family struct {
	name, arch                          string
	layers, dim, ffn, heads, kv, hd     int
	vocab, ropeDim, window              int
	fusedQKV, fusedGateUp, postNorms, q bool // phi3 stores QKV and gate+up fused; gemma has post and q/k norms
}

// shapeOnly writes a GGUF of f's tensor infos and metadata whose tensor
// data is a hole (a sparse file of the full size, all zeros): enough for
// MakePlan and CheckModel, which read no tensor data, at no cost in disk or
// time for a 2 GiB model. Every matrix is of type typ (0: llama.cpp's
// Q4_K_M mix, gguftest.Q4KMType).
func shapeOnly(t *testing.T, f family, typ planar.Type) string {
	t.Helper()
	var infos []gguftest.Info
	off := uint64(0)
	add := func(name string, ty planar.Type, dims ...int) {
		d := make([]uint64, len(dims))
		n := uint64(1)
		for i, x := range dims {
			d[i] = uint64(x)
			n *= uint64(x)
		}
		infos = append(infos, gguftest.Info{Name: name, Type: uint32(ty), Dims: d, Offset: off})
		size := n / uint64(ty.BlockSize()) * uint64(ty.BlockBytes())
		off += (size + 31) &^ 31
	}
	mat := func(name string, k, n int) {
		ty := typ
		if ty == 0 {
			ty = gguftest.Q4KMType(name, f.layers, k)
		}
		add(name, ty, k, n)
	}
	q, kv := f.heads*f.hd, f.kv*f.hd
	mat("token_embd.weight", f.dim, f.vocab)
	add("output_norm.weight", planar.F32, f.dim)
	for l := 0; l < f.layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", planar.F32, f.dim)
		if f.fusedQKV {
			mat(p+"attn_qkv.weight", f.dim, q+2*kv)
		} else {
			mat(p+"attn_q.weight", f.dim, q)
			mat(p+"attn_k.weight", f.dim, kv)
			mat(p+"attn_v.weight", f.dim, kv)
		}
		if f.q {
			add(p+"attn_q_norm.weight", planar.F32, f.hd)
			add(p+"attn_k_norm.weight", planar.F32, f.hd)
		}
		mat(p+"attn_output.weight", q, f.dim)
		add(p+"ffn_norm.weight", planar.F32, f.dim)
		if f.fusedGateUp {
			mat(p+"ffn_up.weight", f.dim, 2*f.ffn)
		} else {
			mat(p+"ffn_gate.weight", f.dim, f.ffn)
			mat(p+"ffn_up.weight", f.dim, f.ffn)
		}
		mat(p+"ffn_down.weight", f.ffn, f.dim)
		if f.postNorms {
			add(p+"post_attention_norm.weight", planar.F32, f.dim)
			add(p+"post_ffw_norm.weight", planar.F32, f.dim)
		}
	}
	a := f.arch
	kvs := []gguftest.KV{
		{Key: "general.architecture", Value: a},
		{Key: a + ".context_length", Value: uint32(4096)},
		{Key: a + ".embedding_length", Value: uint32(f.dim)},
		{Key: a + ".block_count", Value: uint32(f.layers)},
		{Key: a + ".feed_forward_length", Value: uint32(f.ffn)},
		{Key: a + ".attention.head_count", Value: uint32(f.heads)},
		{Key: a + ".attention.head_count_kv", Value: uint32(f.kv)},
		{Key: a + ".attention.key_length", Value: uint32(f.hd)},
		{Key: a + ".attention.value_length", Value: uint32(f.hd)},
		{Key: a + ".rope.dimension_count", Value: uint32(f.ropeDim)},
		{Key: a + ".attention.layer_norm_rms_epsilon", Value: float32(1e-6)},
		{Key: a + ".rope.freq_base", Value: float32(1e6)},
	}
	if f.window > 0 {
		kvs = append(kvs, gguftest.KV{Key: a + ".attention.sliding_window", Value: uint32(f.window)})
	}
	kvs = append(kvs, gguftest.Vocab(f.vocab)...)
	head, err := gguftest.Raw(kvs, infos, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), f.name+".gguf")
	if err := os.WriteFile(path, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(head))+int64(off)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFamilyPlans plans the Gemma-3-1B and Phi-4-mini shapes (shape-only
// GGUFs: the plan reads no weight) for both targets, checks them as
// xdnarun would run them (CheckModel: arch.Check), and logs the cost
// model's decode time per token for each. PREDICTED, not measured: no NPU
// ran anything. It fails if a family's plan puts no matrix on the NPU, or
// if phi3's stored fusions are re-fused or split.
func TestFamilyPlans(t *testing.T) {
	const hostGBs = 40 // assumed host copy bandwidth into the staging ring (as runtime/npu's TestPredictedDecode)
	families := []family{
		{name: "Gemma-3-1B", arch: "gemma3", layers: 26, dim: 1152, ffn: 6912, heads: 4, kv: 1, hd: 256, vocab: 262144, ropeDim: 256, window: 512, postNorms: true, q: true},
		{name: "Phi-4-mini", arch: "phi3", layers: 32, dim: 3072, ffn: 8192, heads: 24, kv: 8, hd: 128, vocab: 200064, ropeDim: 96, fusedQKV: true, fusedGateUp: true},
	}
	cat := kernelsel.Default()
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %-7s %-6s %5s %5s %5s %9s %8s %9s %9s\n", "shape", "weights", "target", "npu", "cpu", "disp", "MiB/tok", "switches", "ms/tok", "tok/s")
	for _, f := range families {
		for _, typ := range []planar.Type{planar.Q4_0, planar.Q8_0, 0} {
			path := shapeOnly(t, f, typ)
			g, err := layout.OpenGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, target := range []string{"xdna1", "xdna2"} {
				tgt, err := cat.Target(target)
				if err != nil {
					t.Fatal(err)
				}
				plan, err := pack.MakePlan(g, &pack.Options{Target: target, Catalog: cat, CPUMaxN: cat.CPUMaxN})
				if err != nil {
					t.Fatal(err)
				}
				if err := pack.CheckModel(g, plan, tgt.Columns); err != nil {
					t.Fatal(err)
				}
				var entries []layout.TensorEntry
				for _, e := range plan.Entries {
					entries = append(entries, e.TensorEntry)
					if f.arch == "phi3" && (strings.Contains(e.Name, "ffn_gate") || len(e.Parts) > 0) {
						t.Errorf("%s: phi3 plan has %s (parts %v): its stored fusions must stay as they are", f.name, e.Name, e.Parts)
					}
				}
				p := npu.Predict(entries, tgt, hostGBs)
				if p.NPUMatrices == 0 {
					t.Errorf("%s %s: no matrix on the NPU", f.name, target)
				}
				wname := "Q4_K_M"
				if typ != 0 {
					wname = typ.String()
				}
				fmt.Fprintf(&b, "%-11s %-7s %-6s %5d %5d %5d %9.1f %8d %9.2f %9.1f\n", f.name, wname, target, p.NPUMatrices, p.CPUMatrices,
					p.Dispatches, float64(p.NPUBytes)/(1<<20), p.ContextSwitches, p.MsPerToken(), p.TokensPerSecond())
			}
		}
		fam, _ := arch.Lookup(f.arch)
		t.Logf("%s: %s (%s), fusions %v", f.name, fam.Name, fam.Models, fam.Fusions())
	}
	t.Logf("PREDICTED decode (cost model; host staging %d GB/s assumed; no NPU ran anything):\n%s", hostGBs, b.String())
}
