package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// refTol bounds the relative difference between the engine on F32 weights
// with the f32 cache and the float64 reference forward pass below:
// |got - want| <= refTol * (1 + max |want|).
const refTol = 2e-4

// synth is a random model held as plain float64 matrices (the reference's
// view) and as packed F32 weights (the engine's view).
type synth struct {
	p    layout.Params
	mats map[string][][]float64 // [N][K]
	vecs map[string][]float64
	w    *memWeights
}

func newSynth(t testing.TB, arch string, seed uint64, columns int) *synth {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	p := layout.Params{
		Arch: arch, Embedding: 48, Layers: 2, FeedForward: 80, Heads: 6, HeadsKV: 2,
		HeadDim: 12, HeadDimV: 12, RMSEps: 1e-5, RopeDim: 12, RopeBase: 10000, VocabSize: 37,
		ContextLength: 64,
	}
	switch arch {
	case "qwen3":
		p.HeadDim, p.HeadDimV, p.RopeDim = 16, 16, 16 // head dim != embedding/heads
	case "gemma3":
		// head dim != embedding/heads; a window of 3 on layers 0 and 2 (a
		// pattern of 2), rope base 1e6 on layer 1, 10000 on the others.
		p.Layers, p.HeadDim, p.HeadDimV, p.RopeDim = 3, 16, 16, 16
		p.SlidingWindow, p.SlidingPattern, p.RopeBase = 3, 2, 1e6
	case "gemma2":
		// a window of 3 on layers 0 and 2, soft caps low enough to bite.
		p.Layers, p.SlidingWindow, p.AttnSoftcap, p.FinalSoftcap = 3, 3, 1.5, 4
	case "phi3":
		p.RopeDim = 8 // partial rotary: 8 of 12
	}
	s := &synth{p: p, mats: map[string][][]float64{}, vecs: map[string][]float64{},
		w: &memWeights{mats: map[string]*cpu.Matrix{}, vecs: map[string][]float32{}}}
	mat := func(name string, n, k int, scale float64) {
		m := make([][]float64, n)
		src := make([]byte, 4*n*k)
		for i := range m {
			m[i] = make([]float64, k)
			for j := range m[i] {
				v := float32(rng.NormFloat64() * scale)
				m[i][j] = float64(v)
				binary.LittleEndian.PutUint32(src[4*(i*k+j):], math.Float32bits(v))
			}
		}
		g := planar.Geometry{Type: planar.F32, N: n, K: k, Columns: columns, KTile: k}
		blob := make([]byte, g.Size())
		if err := planar.Pack(g, src, blob); err != nil {
			t.Fatal(err)
		}
		s.mats[name] = m
		s.w.mats[name] = &cpu.Matrix{G: g, Blob: blob}
	}
	vec := func(name string, n int, base, scale float64) {
		v := make([]float64, n)
		f := make([]float32, n)
		for i := range v {
			f[i] = float32(base + rng.NormFloat64()*scale)
			v[i] = float64(f[i])
		}
		s.vecs[name], s.w.vecs[name] = v, f
	}
	d, qd, kvd := p.Embedding, p.Heads*p.HeadDim, p.HeadsKV*p.HeadDim
	embScale := 1.0
	if arch == "gemma3" || arch == "gemma2" {
		embScale = 0.1 // the engine multiplies by sqrt(dim)
	}
	mat("token_embd.weight", p.VocabSize, d, embScale)
	vec("output_norm.weight", d, 1, 0.1)
	if arch != "qwen3" && arch != "gemma3" && arch != "gemma2" {
		mat("output.weight", p.VocabSize, d, 0.3) // qwen3, gemma2, gemma3 here: tied embeddings
	}
	for i := 0; i < p.Layers; i++ {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		vec(n("attn_norm.weight"), d, 1, 0.1)
		mat(n("attn_q.weight"), qd, d, 0.3)
		mat(n("attn_k.weight"), kvd, d, 0.3)
		mat(n("attn_v.weight"), kvd, d, 0.3)
		if arch == "qwen2" {
			vec(n("attn_q.bias"), qd, 0, 0.2)
			vec(n("attn_k.bias"), kvd, 0, 0.2)
			vec(n("attn_v.bias"), kvd, 0, 0.2)
		}
		if arch == "qwen3" || arch == "gemma3" {
			vec(n("attn_q_norm.weight"), p.HeadDim, 1, 0.2)
			vec(n("attn_k_norm.weight"), p.HeadDim, 1, 0.2)
		}
		mat(n("attn_output.weight"), d, qd, 0.2)
		vec(n("ffn_norm.weight"), d, 1, 0.1)
		mat(n("ffn_gate.weight"), p.FeedForward, d, 0.3)
		mat(n("ffn_up.weight"), p.FeedForward, d, 0.3)
		mat(n("ffn_down.weight"), d, p.FeedForward, 0.2)
		if arch == "gemma3" || arch == "gemma2" {
			vec(n("post_attention_norm.weight"), d, 1, 0.1)
			vec(n("post_ffw_norm.weight"), d, 1, 0.1)
		}
		if arch == "phi3" { // stored fused, as phi3 files have them
			s.fuse(n("attn_qkv.weight"), columns, n("attn_q.weight"), n("attn_k.weight"), n("attn_v.weight"))
			s.fuse(n("ffn_up.weight"), columns, n("ffn_gate.weight"), n("ffn_up.weight"))
		}
	}
	return s
}

// fuse replaces the matrices parts of the engine's view by their rows
// concatenated as name (the reference keeps reading the parts).
func (s *synth) fuse(name string, columns int, parts ...string) {
	var src []byte
	n, k := 0, 0
	for _, pn := range parts {
		m := s.mats[pn]
		n, k = n+len(m), len(m[0])
		for _, row := range m {
			for _, v := range row {
				src = binary.LittleEndian.AppendUint32(src, math.Float32bits(float32(v)))
			}
		}
		delete(s.w.mats, pn)
	}
	g := planar.Geometry{Type: planar.F32, N: n, K: k, Columns: columns, KTile: k}
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		panic(err)
	}
	s.w.mats[name] = &cpu.Matrix{G: g, Blob: blob}
}

// reference is a plain float64 forward pass of s over tokens (f32 cache
// semantics, exact activations): the logits at every position. It follows
// the model definitions directly (HF transformers' LlamaModel,
// Qwen2Model, Qwen3Model, Gemma3TextModel, Phi3Model), not the engine's
// code; gemma3's GELU is ggml's (the tanh approximation looked up in an
// f16 table), since the engine matches llama.cpp's CPU backend there.
func (s *synth) reference(tokens []int32, freqScale float64, factors []float64) [][]float64 {
	p := s.p
	d := p.Embedding
	hd := p.HeadDim
	matvec := func(m [][]float64, x []float64) []float64 {
		y := make([]float64, len(m))
		for i, row := range m {
			for j, w := range row {
				y[i] += w * x[j]
			}
		}
		return y
	}
	norm := func(x, w []float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+p.RMSEps)
		y := make([]float64, len(x))
		for i := range x {
			y[i] = x[i] * r * w[i]
		}
		return y
	}
	gemma := p.Arch == "gemma3" || p.Arch == "gemma2"
	pattern := map[string]int{"gemma3": p.SlidingPattern, "gemma2": 2}[p.Arch]
	// windowed reports whether layer l attends to its last SlidingWindow
	// positions only (gemma: all but the last layer of each pattern).
	windowed := func(l int) bool { return gemma && l%pattern < pattern-1 }
	// local reports whether layer l has gemma3's local rope: base 10000,
	// unscaled (gemma2's windowed layers keep the model's rope).
	local := func(l int) bool { return p.Arch == "gemma3" && windowed(l) }
	softcap := func(x, c float64) float64 {
		if c == 0 {
			return x
		}
		return c * math.Tanh(x/c)
	}
	rope := func(x []float64, pos, l int) {
		base, fs := p.RopeBase, freqScale
		if local(l) {
			base, fs = 10000, 1
		}
		for i := 0; i < p.RopeDim/2; i++ {
			theta := float64(pos) * math.Pow(base, -2*float64(i)/float64(p.RopeDim)) * fs
			if factors != nil && !local(l) {
				theta /= factors[i]
			}
			c, sn := math.Cos(theta), math.Sin(theta)
			a, b := 2*i, 2*i+1 // llama: adjacent pairs
			if p.Arch != "llama" {
				a, b = i, i+p.RopeDim/2 // neox: halves
			}
			x0, x1 := x[a], x[b]
			x[a], x[b] = x0*c-x1*sn, x0*sn+x1*c
		}
	}
	type kv struct{ k, v [][]float64 } // [pos][kvd]
	cache := make([]kv, p.Layers)
	var out [][]float64
	for pos, tok := range tokens {
		x := append([]float64{}, s.mats["token_embd.weight"][tok]...)
		if gemma {
			for i := range x {
				x[i] *= math.Sqrt(float64(d))
			}
		}
		for l := 0; l < p.Layers; l++ {
			n := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
			h := norm(x, s.vecs[n("attn_norm.weight")])
			q := matvec(s.mats[n("attn_q.weight")], h)
			k := matvec(s.mats[n("attn_k.weight")], h)
			v := matvec(s.mats[n("attn_v.weight")], h)
			if b := s.vecs[n("attn_q.bias")]; b != nil {
				for i := range q {
					q[i] += b[i]
				}
				for i := range k {
					k[i] += s.vecs[n("attn_k.bias")][i]
					v[i] += s.vecs[n("attn_v.bias")][i]
				}
			}
			for hh := 0; hh < p.Heads; hh++ {
				qh := q[hh*hd : (hh+1)*hd]
				if w := s.vecs[n("attn_q_norm.weight")]; w != nil {
					copy(qh, norm(qh, w))
				}
				rope(qh, pos, l)
			}
			for hh := 0; hh < p.HeadsKV; hh++ {
				kh := k[hh*hd : (hh+1)*hd]
				if w := s.vecs[n("attn_k_norm.weight")]; w != nil {
					copy(kh, norm(kh, w))
				}
				rope(kh, pos, l)
			}
			cache[l].k = append(cache[l].k, k)
			cache[l].v = append(cache[l].v, v)
			att := make([]float64, p.Heads*hd)
			for hh := 0; hh < p.Heads; hh++ {
				g := hh / (p.Heads / p.HeadsKV)
				sc := make([]float64, pos+1)
				mx := math.Inf(-1)
				first := 0
				if windowed(l) {
					first = max(0, pos-p.SlidingWindow+1)
				}
				for t := range sc {
					if t < first {
						sc[t] = math.Inf(-1)
						continue
					}
					for i := 0; i < hd; i++ {
						sc[t] += q[hh*hd+i] * cache[l].k[t][g*hd+i]
					}
					sc[t] = softcap(sc[t]/math.Sqrt(float64(hd)), p.AttnSoftcap)
					mx = max(mx, sc[t])
				}
				var sum float64
				for t := range sc {
					sc[t] = math.Exp(sc[t] - mx)
					sum += sc[t]
				}
				for t := range sc {
					for i := 0; i < hd; i++ {
						att[hh*hd+i] += sc[t] / sum * cache[l].v[t][g*hd+i]
					}
				}
			}
			o := matvec(s.mats[n("attn_output.weight")], att)
			if w := s.vecs[n("post_attention_norm.weight")]; w != nil {
				o = norm(o, w)
			}
			for i := range x {
				x[i] += o[i]
			}
			h = norm(x, s.vecs[n("ffn_norm.weight")])
			gt := matvec(s.mats[n("ffn_gate.weight")], h)
			up := matvec(s.mats[n("ffn_up.weight")], h)
			for i := range gt {
				if gemma {
					gt[i] = ggmlGELU(gt[i]) * up[i]
				} else {
					gt[i] = gt[i] / (1 + math.Exp(-gt[i])) * up[i]
				}
			}
			o = matvec(s.mats[n("ffn_down.weight")], gt)
			if w := s.vecs[n("post_ffw_norm.weight")]; w != nil {
				o = norm(o, w)
			}
			for i := range x {
				x[i] += o[i]
			}
		}
		outW := s.mats["output.weight"]
		if outW == nil {
			outW = s.mats["token_embd.weight"]
		}
		logits := matvec(outW, norm(x, s.vecs["output_norm.weight"]))
		for i := range logits {
			logits[i] = softcap(logits[i], p.FinalSoftcap)
		}
		out = append(out, logits)
	}
	_ = d
	return out
}

// ggmlGELU is GELU with the tanh approximation as ggml's CPU backend looks
// it up: the input and the result rounded to binary16, 0 at or below -10,
// x at or above 10.
func ggmlGELU(x float64) float64 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x
	}
	f16 := func(v float64) float64 { return float64(planar.F16ToF32(planar.F32ToF16(float32(v)))) }
	x = f16(x)
	return f16(0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x))))
}

func compareLogits(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	var mx float64
	for _, v := range want {
		mx = max(mx, math.Abs(v))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); d > refTol*(1+mx) {
			t.Fatalf("%s: logit %d = %v, reference %v (|diff| %g > %g)", what, i, got[i], want[i], d, refTol*(1+mx))
		}
	}
}

// TestArchitecturesAgainstReference runs random llama, qwen2, qwen3,
// gemma3 (windows reached by the 11 tokens), gemma2 (windows, attention
// and final soft caps) and phi3 (fused as stored, partial rotary) models (F32 weights, f32 cache) against the float64 reference, by
// prefill and by decode, with and without rope scaling.
func TestArchitecturesAgainstReference(t *testing.T) {
	tokens := []int32{1, 5, 36, 7, 7, 20, 0, 3, 11, 2, 30}
	for i, arch := range []string{"llama", "qwen2", "qwen3", "gemma3", "gemma2", "phi3"} {
		for _, scaling := range []string{"none", "linear", "freqs"} {
			t.Run(arch+"/"+scaling, func(t *testing.T) {
				s := newSynth(t, arch, uint64(i+1), 1+3*i)
				freqScale := 1.0
				var factors []float64
				switch scaling {
				case "linear":
					s.p.RopeScaling, s.p.RopeFactor = "linear", 4
					freqScale = 0.25
				case "freqs":
					f := make([]float32, s.p.RopeDim/2)
					for j := range f {
						f[j] = float32(1 + j%3)
						factors = append(factors, float64(f[j]))
					}
					s.w.vecs["rope_freqs.weight"] = f
				}
				want := s.reference(tokens, freqScale, factors)
				m, err := New(s.p, s.w, Options{Threads: 2, Batch: 4})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				st := m.NewState(0)
				got, err := st.Prefill(tokens[:6])
				if err != nil {
					t.Fatal(err)
				}
				compareLogits(t, "prefill", got, want[5])
				for j := 6; j < len(tokens); j++ {
					if got, err = st.Decode(tokens[j]); err != nil {
						t.Fatal(err)
					}
					compareLogits(t, fmt.Sprintf("decode at %d", j), got, want[j])
				}
			})
		}
	}
}

// TestFusedMatchesSeparate checks that fusing Q,K,V and gate,up changes
// nothing: each output row has the same arithmetic either way.
func TestFusedMatchesSeparate(t *testing.T) {
	g, p := openModel(t, "tiny-llama-q4_k_m")
	prompt := []int32{1, 400, 30, 99, 1000, 7}
	var logits [2][]float32
	for i, fuse := range []bool{false, true} {
		w, err := WeightsFromGGUF(g, 4, fuse)
		if err != nil {
			t.Fatal(err)
		}
		_, fused, _ := w.Matrix("blk.0.attn_qkv.weight")
		_, sep, _ := w.Matrix("blk.0.attn_q.weight")
		if fused != fuse || sep == fuse {
			t.Fatalf("fuse=%v: attn_qkv present %v, attn_q present %v", fuse, fused, sep)
		}
		m, err := New(p, w, Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.NewState(32).Prefill(prompt)
		if err != nil {
			t.Fatal(err)
		}
		logits[i] = append([]float32{}, l...)
		m.Close()
	}
	for i := range logits[0] {
		if logits[0][i] != logits[1][i] {
			t.Fatalf("logit %d: separate %v, fused %v", i, logits[0][i], logits[1][i])
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	for _, cache := range []CacheType{CacheF32, CacheF16} {
		m := loadModel(t, "stories260K-q4_0", 4, true, Options{Threads: 2, Cache: cache})
		s := m.NewState(256)
		if _, err := s.Prefill([]int32{1, 403, 407}); err != nil {
			t.Fatal(err)
		}
		tok := int32(261)
		if a := testing.AllocsPerRun(50, func() {
			if _, err := s.Decode(tok); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s cache: Decode allocates %v times per call", cache, a)
		}
	}
}

func TestErrors(t *testing.T) {
	s := newSynth(t, "llama", 7, 4)

	p := s.p
	p.Arch = "gpt2"
	if _, err := New(p, s.w, Options{}); err == nil || err.Error() != `unsupported architecture "gpt2"` || !errors.Is(err, ErrUnsupported) {
		t.Errorf("gpt2: %v", err)
	}
	p = s.p
	p.RopeScaling = "su"
	if _, err := New(p, s.w, Options{}); err == nil || err.Error() != `unsupported rope scaling "su"` || !errors.Is(err, ErrUnsupported) {
		t.Errorf("su: %v", err)
	}
	p.RopeScaling, p.RopeFactor = "yarn", 0
	if _, err := New(p, s.w, Options{}); err == nil || !errors.Is(err, ErrUnsupported) {
		t.Errorf("yarn without a factor: %v", err)
	}

	// A wrong shape names the tensor, in GGUF order [K N].
	good := s.w.mats["blk.1.attn_q.weight"]
	bad := s.w.mats["blk.1.attn_k.weight"] // [48 24]
	s.w.mats["blk.1.attn_q.weight"] = bad
	_, err := New(s.p, s.w, Options{})
	if want := "blk.1.attn_q.weight: shape [48 24], want [48 72]"; err == nil || err.Error() != want {
		t.Errorf("shape: %v, want %q", err, want)
	}
	s.w.mats["blk.1.attn_q.weight"] = good

	delete(s.w.vecs, "blk.0.ffn_norm.weight")
	if _, err := New(s.p, s.w, Options{}); err == nil || err.Error() != "blk.0.ffn_norm.weight: missing" {
		t.Errorf("missing: %v", err)
	}
	s.w.vecs["blk.0.ffn_norm.weight"] = make([]float32, 47)
	if _, err := New(s.p, s.w, Options{}); err == nil || err.Error() != "blk.0.ffn_norm.weight: shape [47], want [48]" {
		t.Errorf("vector shape: %v", err)
	}
	s.w.vecs["blk.0.ffn_norm.weight"] = make([]float32, 48)

	m, err := New(s.p, s.w, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.NewState(8)
	if _, err := st.Prefill(make([]int32, 9)); err == nil || err.Error() != "prompt of 9 tokens exceeds the context of 8" {
		t.Errorf("context: %v", err)
	}
	if _, err := st.Prefill(nil); err == nil {
		t.Error("empty prompt accepted")
	}
	if _, err := st.Prefill([]int32{1, 37}); err == nil || !strings.Contains(err.Error(), "vocabulary of 37") {
		t.Errorf("token range: %v", err)
	}
	if st.Pos() != 0 {
		t.Fatalf("failed calls moved the position to %d", st.Pos())
	}
	if _, err := st.Prefill(make([]int32, 8)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Decode(1); err == nil || !strings.Contains(err.Error(), "exceed the context of 8") {
		t.Errorf("decode past the context: %v", err)
	}
	st.Reset()
	if _, err := st.Decode(1); err != nil || st.Pos() != 1 {
		t.Errorf("after Reset: %v, position %d", err, st.Pos())
	}
	if _, err := PerplexityBOS(m, make([]int32, 15), 8, 1); err == nil {
		t.Error("perplexity on fewer than 2 chunks accepted")
	}
}

// TestSoftcapF16Cache runs the gemma2 model (attention soft cap low enough
// to bite) with the f16 cache, whose attention caps, scales and takes the
// maximum of the scores in its own loop, against the same model with the
// f32 cache (TestArchitecturesAgainstReference checks that one against the
// reference): the logits of a prefill and of decoding agree to the f16
// cache's precision.
func TestSoftcapF16Cache(t *testing.T) {
	tokens := []int32{1, 5, 36, 7, 7, 20, 0, 3, 11, 2, 30}
	s := newSynth(t, "gemma2", 5, 13)
	var logits [2][][]float32
	for c, cache := range []CacheType{CacheF32, CacheF16} {
		m, err := New(s.p, s.w, Options{Threads: 2, Batch: 4, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		st := m.NewState(0)
		got, err := st.Prefill(tokens[:6])
		if err != nil {
			t.Fatal(err)
		}
		logits[c] = append(logits[c], append([]float32(nil), got...))
		for _, tok := range tokens[6:] {
			if got, err = st.Decode(tok); err != nil {
				t.Fatal(err)
			}
			logits[c] = append(logits[c], append([]float32(nil), got...))
		}
		m.Close()
	}
	for step := range logits[0] {
		want := make([]float64, len(logits[0][step]))
		for i, v := range logits[0][step] {
			want[i] = float64(v)
		}
		var mx, worst float64
		for _, v := range want {
			mx = max(mx, math.Abs(v))
		}
		for i := range want {
			worst = max(worst, math.Abs(float64(logits[1][step][i])-want[i]))
		}
		if worst > 1e-2*(1+mx) {
			t.Fatalf("step %d: f16 cache logits differ from the f32 cache's by %g (max |logit| %g)", step, worst, mx)
		}
	}
}
