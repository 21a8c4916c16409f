// Package engine is the forward pass of the decoder families that package
// arch describes (llama, qwen2, qwen3, gemma2, gemma3, phi3) over packed
// weights: token embedding, RMSNorm (pre, post and per head), rotary
// attention with grouped KV heads, sliding windows and an f32 or f16 KV
// cache, gated feed-forward (SiLU or GELU), output projection; one-token
// decode and batched prefill. The layers are built by walking the family's
// descriptor; nothing here switches on an architecture's name. Every matrix
// product goes through runtime/cpu.
//
// The arithmetic follows llama.cpp's CPU backend (src/models/*.cpp,
// llama-graph.cpp and ggml's ops) so that greedy tokens and logits agree
// with it.
package engine

import (
	"fmt"
	"math"
	"runtime"

	"github.com/xdna-go/xdna/arch"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// ErrUnsupported reports a model the engine cannot run; errors.Is matches
// every such error (it is arch.ErrUnsupported).
var ErrUnsupported = arch.ErrUnsupported

func unsupportedf(format string, a ...any) error { return arch.Unsupportedf(format, a...) }

// Options configure a Model.
type Options struct {
	Threads int       // kernel threads, the caller included; <= 0: GOMAXPROCS
	Context int       // default context of NewState(0); <= 0: the training context, at most DefaultContext
	Batch   int       // tokens per forward step of Prefill; <= 0: DefaultBatch
	Cache   CacheType // KV cache element type; the zero value is CacheF32
	// FlashAttn computes attention as llama.cpp does with flash attention
	// on (its default since 2025 where the backend has it): an online
	// softmax and the values accumulated in f16. It needs CacheF16.
	FlashAttn bool
	// MatMul, if set, computes every weight matrix product instead of the
	// CPU kernels (the NPU scheduler: it sends each matrix where the pack-time
	// plan says and falls back to the CPU itself).
	MatMul MatMul
}

// MatMul computes y[b][N] = x[b][K] W^T for the packed matrix name.
type MatMul interface {
	MatMat(name string, m *cpu.Matrix, x, y []float32, b int)
}

// CacheType is the element type of the KV cache.
type CacheType int

const (
	// CacheF32 keeps keys and values in float32: the exact forward pass.
	CacheF32 CacheType = iota
	// CacheF16 keeps keys and values in IEEE binary16, half the memory, and
	// computes attention as llama.cpp does with its default f16 cache and
	// without flash attention: the query rounded to f16 for the scores,
	// softmax in float32, the probabilities rounded to f16 for the product
	// with V. With it, logits track llama.cpp's to about 1e-4 on the
	// fixture models, where the f32 cache differs by up to ~0.15 on the
	// quantised ones (re-quantising the activations of every matrix product
	// to int8 amplifies the f16 rounding into different codes).
	CacheF16
)

func (c CacheType) String() string {
	switch c {
	case CacheF32:
		return "f32"
	case CacheF16:
		return "f16"
	}
	return fmt.Sprintf("CacheType(%d)", int(c))
}

// DefaultBatch is the default number of prompt tokens run through each
// forward step of Prefill (llama.cpp's micro-batch is 512; our activations
// of a batch should stay in cache).
const DefaultBatch = 64

// Model is a loaded model: its hyperparameters, packed weights and a
// kernel pool. A Model may serve several States; their calls are serialised
// on the pool.
type Model struct {
	P    layout.Params
	A    *arch.Model // the family and the tensors of each layer
	opts Options
	pool *cpu.Pool

	dim, qDim, kvDim, vDim int // embedding, Heads*HeadDim, HeadsKV*HeadDim, HeadsKV*HeadDimV
	vocab                  int
	eps                    float32
	kqScale                float32 // arch.Model.KQScale: 1/sqrt(HeadDim), as a rule
	embScale               float32 // sqrtf(dim) (gemma), or 1
	ropes                  []rope  // the distinct rope settings of the layers
	attnCap, finalCap      float32 // soft caps (0: none)

	embd, output *cpu.Matrix
	names        map[*cpu.Matrix]string // tensor name of every matrix, for Options.MatMul
	outNorm      []float32              // [dim]
	layers       []layer
}

// rope is one rope setting: the rotation of position p's pair i is
// p * thetaScale^i / factors[i] * freqScale (ropeCache).
type rope struct {
	thetaScale, freqScale float32
	factors               []float32 // [RopeDim/2] frequency divisors, or nil
	yarn                  yarn
}

// layer holds one layer's tensors by role (arch.Role): matrices and
// vectors (norm weights [dim] or [HeadDim], biases [rows]).
type layer struct {
	mat    [arch.NumRoles]*cpu.Matrix
	vec    [arch.NumRoles][]float32
	window int // attends to the last window positions (0: all)
	rope   int // index into Model.ropes
}

// New checks p and the weights against each other and builds a Model. An
// error names the tensor at fault, such as
// "blk.3.attn_q.weight: shape [64 32], want [64 64]" (shapes in GGUF order,
// [K N]).
func New(p layout.Params, w Weights, opts Options) (*Model, error) {
	m, err := build(p, w, opts)
	if err != nil {
		return nil, err
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	m.pool = cpu.NewPool(threads)
	return m, nil
}

// Check is the engine's model check: it reports whether New accepts p and
// w (arch.Check: architecture, hyperparameters, rope scaling, every
// tensor's presence and shape; here also every matrix's packing) and
// whether a tokenizer of tokens tokens fits the model's vocabulary, with
// the error a run would give. It reads no tensor data.
func Check(p layout.Params, w Weights, tokens int) error {
	if _, err := build(p, w, Options{}); err != nil {
		return err
	}
	return arch.Check(p, shapes{w}, tokens)
}

// shapes serves the shapes of Weights to arch.Resolve.
type shapes struct{ w Weights }

func (s shapes) Matrix(name string) (n, k int, ok bool, err error) {
	x, ok, err := s.w.Matrix(name)
	if err != nil || !ok {
		return 0, 0, ok, err
	}
	if err := x.Check(); err != nil {
		return 0, 0, ok, err
	}
	return x.G.N, x.G.K, true, nil
}

func (s shapes) Vector(name string) (n int, ok bool, err error) {
	v, ok, err := s.w.Vector(name)
	return len(v), ok, err
}

// build checks p and w and builds a Model without its kernel pool.
func build(p layout.Params, w Weights, opts Options) (*Model, error) {
	if opts.Cache != CacheF32 && opts.Cache != CacheF16 {
		return nil, unsupportedf("unsupported KV cache type %v", opts.Cache)
	}
	if opts.FlashAttn && opts.Cache != CacheF16 {
		return nil, unsupportedf("flash attention needs the f16 KV cache")
	}
	a, err := arch.Resolve(p, shapes{w})
	if err != nil {
		return nil, err
	}
	m := &Model{P: p, A: a, opts: opts, names: map[*cpu.Matrix]string{}}
	m.dim = p.Embedding
	m.qDim, m.kvDim, m.vDim = a.Dims.QDim, a.Dims.KVDim, a.Dims.VDim
	m.vocab = a.Vocab
	m.eps = float32(p.RMSEps)
	m.kqScale = a.KQScale
	m.embScale = 1
	if a.Family.EmbedScale {
		m.embScale = float32(math.Sqrt(float64(float32(m.dim))))
	}
	m.attnCap, m.finalCap = float32(a.AttnSoftcap), float32(a.FinalSoftcap)

	// Every tensor was checked by arch.Resolve: fetch them.
	mat := func(name string) *cpu.Matrix {
		x, _, _ := w.Matrix(name)
		m.names[x] = name
		return x
	}
	vec := func(name string) []float32 {
		v, _, _ := w.Vector(name)
		return v
	}
	m.embd = mat("token_embd.weight")
	m.outNorm = vec("output_norm.weight")
	if a.Tied {
		m.output = m.embd
	} else {
		m.output = mat("output.weight")
	}
	var factors []float32
	if a.RopeFreqs {
		factors = vec("rope_freqs.weight")
	} else if p.RopeScaling == "llama3" {
		factors = llama3Factors(p)
	}
	ropeOf := map[[2]float64]int{} // (base, scaled) -> index in m.ropes
	m.layers = make([]layer, p.Layers)
	for i := range m.layers {
		al, l := &a.Layers[i], &m.layers[i]
		for r, name := range al.Tensors {
			switch {
			case name == "":
			case isVector(a.Family, arch.Role(r)):
				l.vec[r] = vec(name)
			default:
				l.mat[r] = mat(name)
			}
		}
		l.window = al.Window
		scaled := 0.0
		if al.Scaled {
			scaled = 1
		}
		key := [2]float64{al.RopeBase, scaled}
		idx, ok := ropeOf[key]
		if !ok {
			idx = len(m.ropes)
			ropeOf[key] = idx
			m.ropes = append(m.ropes, newRope(p, al.RopeBase, al.Scaled, factors))
		}
		l.rope = idx
	}
	m.chain()
	return m, nil
}

// chain tells each matrix which one a one-token step multiplies after it
// (cpu.Matrix.Next), in the order of State.forward: per layer the
// attention's projections (fused or Q, K, V), its output, the feed-forward
// (gate and up, fused or not) and down; then the output projection, and
// after it the first layer's again, the next token's start. The helpers
// of the pool prefetch the next matrix while the caller runs what lies
// between, so that order is worth a table of its own only here.
func (m *Model) chain() {
	var order []*cpu.Matrix
	for i := range m.layers {
		for _, r := range []arch.Role{arch.QKV, arch.Q, arch.K, arch.V, arch.AttnOut, arch.GateUp, arch.Gate, arch.Up, arch.Down} {
			if w := m.layers[i].mat[r]; w != nil {
				order = append(order, w)
			}
		}
	}
	order = append(order, m.output)
	for i, w := range order {
		w.Next = order[(i+1)%len(order)]
	}
}

// isVector reports whether role r of family f is a vector.
func isVector(f *arch.Family, r arch.Role) bool {
	for _, t := range f.Layer {
		if t.Role == r {
			return t.Vector
		}
	}
	return false
}

// newRope returns the rope of base (<= 0: 10000); scaled applies the
// model's rope scaling (checked by arch.Resolve) and frequency factors.
func newRope(p layout.Params, base float64, scaled bool, factors []float32) rope {
	if base <= 0 {
		base = 10000
	}
	b := float32(base)
	r := rope{freqScale: 1, yarn: noYarn,
		thetaScale: float32(math.Pow(float64(b), float64(float32(-2)/float32(p.RopeDim))))}
	if !scaled {
		return r
	}
	r.factors = factors
	switch p.RopeScaling {
	case "linear":
		if p.RopeFactor > 0 {
			r.freqScale = float32(1 / p.RopeFactor)
		}
	case "yarn":
		orig := p.RopeOrigCtx
		if orig <= 0 {
			orig = p.ContextLength
		}
		r.freqScale = float32(1 / p.RopeFactor)
		r.yarn = newYarn(p.RopeDim, orig, b, r.freqScale)
	}
	return r
}

// llama3Factors computes the frequency divisors of Llama 3.1 rope scaling
// from the hyperparameters, as llama.cpp's converter writes them into
// rope_freqs.weight (used when a file lacks that tensor).
func llama3Factors(p layout.Params) []float32 {
	factor, lo, hi := p.RopeFactor, p.RopeLowFreq, p.RopeHighFreq
	orig := float64(p.RopeOrigCtx)
	if factor <= 0 {
		factor = 8
	}
	if lo <= 0 {
		lo = 1
	}
	if hi <= 0 {
		hi = 4
	}
	if orig <= 0 {
		orig = 8192
	}
	lowWave, highWave := orig/lo, orig/hi
	f := make([]float32, p.RopeDim/2)
	for i := range f {
		freq := 1 / math.Pow(p.RopeBase, float64(2*i)/float64(p.RopeDim))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			f[i] = 1
		case wave > lowWave:
			f[i] = float32(factor)
		default:
			smooth := (orig/wave - lo) / (hi - lo)
			f[i] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return f
}

// Vocab returns the number of logits per token.
func (m *Model) Vocab() int { return m.vocab }

// Close stops the model's kernel threads. The model and its states must
// not be used afterwards.
func (m *Model) Close() { m.pool.Close() }
