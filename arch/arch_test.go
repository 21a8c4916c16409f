package arch

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
)

// TestFamilies checks every descriptor's invariants: each role at most
// once, fused matrices listed before their parts, steps in order and at
// most MaxStep, the parts of a fusion matrices of one step.
func TestFamilies(t *testing.T) {
	for _, name := range Names() {
		f, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[Role]bool{}
		step := 0
		for _, ts := range f.Layer {
			if seen[ts.Role] {
				t.Errorf("%s: role %d twice", name, ts.Role)
			}
			seen[ts.Role] = true
			if ts.Step < step || ts.Step > MaxStep {
				t.Errorf("%s: %s at step %d after step %d (max %d)", name, ts.Name, ts.Step, step, MaxStep)
			}
			step = ts.Step
			for _, r := range ts.Fuses {
				p := f.tensor(r)
				if p == nil || seen[r] || p.Vector || p.Step != ts.Step || p.K != ts.K {
					t.Errorf("%s: %s fuses role %d: %+v", name, ts.Name, r, p)
				}
			}
		}
		for _, r := range []Role{AttnNorm, AttnOut, FFNNorm, Down} {
			if !seen[r] {
				t.Errorf("%s: no tensor of role %d", name, r)
			}
		}
	}
}

func TestRank(t *testing.T) {
	for role, want := range map[string]int{
		"attn_qkv.weight": 1, "attn_q.weight": 1, "attn_output.weight": 2, "ffn_gate_up.weight": 4,
		"ffn_up.weight": 4, "ffn_down.weight": 5, "post_ffw_norm.weight": 6,
	} {
		if got, ok := Rank(role); !ok || got != want {
			t.Errorf("Rank(%q) = %d, %v; want %d", role, got, ok, want)
		}
	}
	if _, ok := Rank("ssm_conv1d.weight"); ok {
		t.Error("an unknown role has a rank")
	}
}

func TestFusions(t *testing.T) {
	got := func(name string) string {
		f, _ := Lookup(name)
		return fmt.Sprint(f.Fusions())
	}
	if g := got("llama"); g != "[{attn_qkv.weight [attn_q.weight attn_k.weight attn_v.weight]} {ffn_gate_up.weight [ffn_gate.weight ffn_up.weight]}]" {
		t.Errorf("llama: %s", g)
	}
	// phi3 stores gate and up fused in ffn_up.weight: nothing to fuse, and
	// no synthetic name that its own ffn_up could collide with.
	if g := got("phi3"); g != "[{attn_qkv.weight [attn_q.weight attn_k.weight attn_v.weight]}]" {
		t.Errorf("phi3: %s", g)
	}
}

// shapes is a model's tensors by name: [K N] matrices, [N] vectors.
type shapes map[string][]int

func (s shapes) Matrix(name string) (int, int, bool, error) {
	d, ok := s[name]
	if !ok {
		return 0, 0, false, nil
	}
	if len(d) != 2 {
		return 0, 0, true, fmt.Errorf("not a matrix")
	}
	return d[1], d[0], true, nil
}

func (s shapes) Vector(name string) (int, bool, error) {
	d, ok := s[name]
	if !ok {
		return 0, false, nil
	}
	if len(d) != 1 {
		return 0, true, fmt.Errorf("not a vector")
	}
	return d[0], true, nil
}

// gemma3 returns the hyperparameters and tensors of a small gemma3.
func gemma3(layers int) (layout.Params, shapes) {
	p := layout.Params{Arch: "gemma3", Embedding: 64, Layers: layers, FeedForward: 96, Heads: 4, HeadsKV: 2,
		HeadDim: 32, HeadDimV: 32, RMSEps: 1e-6, RopeDim: 32, RopeBase: 1e6, VocabSize: 50, SlidingWindow: 8}
	s := shapes{"token_embd.weight": {64, 50}, "output_norm.weight": {64}}
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		for n, d := range map[string][]int{
			"attn_norm.weight": {64}, "attn_q.weight": {64, 128}, "attn_k.weight": {64, 64}, "attn_v.weight": {64, 64},
			"attn_q_norm.weight": {32}, "attn_k_norm.weight": {32}, "attn_output.weight": {128, 64},
			"post_attention_norm.weight": {64}, "ffn_norm.weight": {64}, "ffn_gate.weight": {64, 96},
			"ffn_up.weight": {64, 96}, "ffn_down.weight": {96, 64}, "post_ffw_norm.weight": {64},
		} {
			s[b+n] = d
		}
	}
	return p, s
}

func TestResolveGemma3(t *testing.T) {
	p, s := gemma3(7)
	m, err := Resolve(p, s)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Tied || m.Vocab != 50 {
		t.Errorf("tied %v, vocab %d", m.Tied, m.Vocab)
	}
	// llama.cpp's set_swa_pattern(6): layers 0-4 windowed, 5 global, 6 windowed.
	for i, l := range m.Layers {
		global := i == 5
		if (l.Window == 0) != global || l.Scaled != global {
			t.Errorf("layer %d: window %d, scaled %v", i, l.Window, l.Scaled)
		}
		if want := map[bool]float64{true: 1e6, false: 10000}[global]; l.RopeBase != want {
			t.Errorf("layer %d: rope base %g, want %g", i, l.RopeBase, want)
		}
		if l.Tensors[PostAttnNorm] == "" || l.Tensors[QNorm] == "" || l.Tensors[QKV] != "" || l.Tensors[Q] == "" {
			t.Errorf("layer %d: tensors %q", i, l.Tensors)
		}
	}
	// No window in the file: no layer is windowed.
	p.SlidingWindow = 0
	if m, _ := Resolve(p, s); m.Windowed() {
		t.Error("gemma3 without sliding_window has windows")
	}
	p.SlidingWindow, p.SlidingPattern = 8, -1
	if _, err := Resolve(p, s); err == nil || !errors.Is(err, ErrUnsupported) {
		t.Errorf("per-layer pattern: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	for _, c := range []struct {
		edit func(p *layout.Params, s shapes)
		want string
	}{
		{func(p *layout.Params, s shapes) { p.Arch = "mamba" }, `unsupported architecture "mamba"`},
		{func(p *layout.Params, s shapes) { delete(s, "blk.1.post_ffw_norm.weight") }, "blk.1.post_ffw_norm.weight: missing"},
		{func(p *layout.Params, s shapes) { s["blk.0.attn_k.weight"] = []int{64, 32} }, "blk.0.attn_k.weight: shape [64 32], want [64 64]"},
		{func(p *layout.Params, s shapes) { s["blk.0.attn_q_norm.weight"] = []int{64} }, "blk.0.attn_q_norm.weight: shape [64], want [32]"},
		{func(p *layout.Params, s shapes) { p.RopeDim = 40 }, "unsupported rope dimension 40 for head dimension 32"},
		{func(p *layout.Params, s shapes) { p.Arch = "llama"; p.FinalSoftcap = 30 }, "llama: final logit soft-capping (30) is not supported for this family"},
		{func(p *layout.Params, s shapes) { p.Arch = "phi3"; s["rope_factors_long.weight"] = []int{16} },
			"rope_factors_long.weight: longrope scaling (the 128k variants) is not supported (phi3)"},
	} {
		p, s := gemma3(2)
		c.edit(&p, s)
		_, err := Resolve(p, s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

func TestResolvePhi3(t *testing.T) {
	p := layout.Params{Arch: "phi3", Embedding: 64, Layers: 2, FeedForward: 96, Heads: 4, HeadsKV: 2,
		HeadDim: 16, HeadDimV: 16, RMSEps: 1e-5, RopeDim: 12, RopeBase: 1e4, SlidingWindow: 2047}
	s := shapes{"token_embd.weight": {64, 50}, "output_norm.weight": {64}, "output.weight": {64, 50}}
	for i := 0; i < 2; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		s[b+"attn_norm.weight"], s[b+"attn_qkv.weight"], s[b+"attn_output.weight"] = []int{64}, []int{64, 128}, []int{64, 64}
		s[b+"ffn_norm.weight"], s[b+"ffn_up.weight"], s[b+"ffn_down.weight"] = []int{64}, []int{64, 192}, []int{96, 64}
	}
	m, err := Resolve(p, s)
	if err != nil {
		t.Fatal(err)
	}
	l := m.Layers[1]
	if l.Tensors[QKV] != "blk.1.attn_qkv.weight" || l.Tensors[GateUp] != "blk.1.ffn_up.weight" || l.Tensors[Up] != "" || m.Windowed() {
		t.Errorf("%+v", l)
	}
	// An ffn_up of FFN rows (a llama-shaped layer) is refused with the shape phi3 wants.
	s["blk.0.ffn_up.weight"] = []int{64, 96}
	if _, err := Resolve(p, s); err == nil || err.Error() != "blk.0.ffn_up.weight: shape [64 96], want [64 192]" {
		t.Errorf("llama-shaped ffn_up: %v", err)
	}
}
