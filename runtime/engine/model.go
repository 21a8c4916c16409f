// Package engine is the forward pass of the Llama family (llama: Llama 2/3,
// Mistral, TinyLlama, SmolLM; qwen2; qwen3) over packed weights: token
// embedding, RMSNorm, rotary attention with grouped KV heads and an f32 KV
// cache, SwiGLU feed-forward, output projection; one-token decode and
// batched prefill. Every matrix product goes through runtime/cpu.
//
// The arithmetic follows llama.cpp's CPU backend (llama-model.cpp
// build_llama / build_qwen2 / build_qwen3 and ggml's ops) so that greedy
// tokens and logits agree with it.
package engine

import (
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// ErrUnsupported reports a model the engine cannot run; errors.Is matches
// every such error.
var ErrUnsupported = errors.New("unsupported model")

// unsupported is an error of ErrUnsupported with its own message.
type unsupported string

func (e unsupported) Error() string        { return string(e) }
func (e unsupported) Is(target error) bool { return target == ErrUnsupported }

func unsupportedf(format string, a ...any) error { return unsupported(fmt.Sprintf(format, a...)) }

// Options configure a Model.
type Options struct {
	Threads int       // kernel threads, the caller included; <= 0: GOMAXPROCS
	Context int       // default context of NewState(0); <= 0: the training context, at most DefaultContext
	Batch   int       // tokens per forward step of Prefill; <= 0: DefaultBatch
	Cache   CacheType // KV cache element type; the zero value is CacheF32
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

type ropeMode int

const (
	ropeNormal ropeMode = iota // adjacent pairs
	ropeNeoX                   // halves
)

// Model is a loaded model: its hyperparameters, packed weights and a
// kernel pool. A Model may serve several States; their calls are serialised
// on the pool.
type Model struct {
	P    layout.Params
	opts Options
	pool *cpu.Pool

	mode   ropeMode
	qkNorm bool // qwen3: RMSNorm of each Q and K head

	dim, qDim, kvDim, vDim int // embedding, Heads*HeadDim, HeadsKV*HeadDim, HeadsKV*HeadDimV
	vocab                  int
	eps                    float32
	thetaScale, freqScale  float32
	ropeFactors            []float32 // [RopeDim/2] frequency divisors, or nil
	yarn                   yarn
	kqScale                float32

	embd, output *cpu.Matrix
	names        map[*cpu.Matrix]string // tensor name of every matrix, for Options.MatMul
	outNorm      []float32              // [dim]
	layers       []layer
}

type layer struct {
	attnNorm []float32 // [dim]
	qkv      *cpu.Matrix
	q, k, v  *cpu.Matrix // when not fused
	bq       []float32   // [qDim] or nil
	bk, bv   []float32   // [kvDim], [vDim] or nil
	qNorm    []float32   // [HeadDim] (qwen3)
	kNorm    []float32   // [HeadDim] (qwen3)
	wo       *cpu.Matrix
	ffnNorm  []float32 // [dim]
	gateUp   *cpu.Matrix
	gate, up *cpu.Matrix // when not fused
	down     *cpu.Matrix
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
// w (architecture, hyperparameters, rope scaling, every tensor's presence,
// type and shape) and whether a tokenizer of tokens tokens fits the model's
// vocabulary, with the error a run would give. It reads no tensor data
// (xdnapack calls it with the planned shapes before packing).
func Check(p layout.Params, w Weights, tokens int) error {
	m, err := build(p, w, Options{})
	if err != nil {
		return err
	}
	if tokens <= 0 {
		return unsupportedf("no tokenizer: the model has no vocabulary (tokenizer.ggml.tokens)")
	}
	if tokens > m.vocab {
		return unsupportedf("the tokenizer has %d tokens, the model only %d rows of token_embd.weight", tokens, m.vocab)
	}
	return nil
}

// build checks p and w and builds a Model without its kernel pool.
func build(p layout.Params, w Weights, opts Options) (*Model, error) {
	m := &Model{P: p, opts: opts, names: map[*cpu.Matrix]string{}}
	if opts.Cache != CacheF32 && opts.Cache != CacheF16 {
		return nil, unsupportedf("unsupported KV cache type %v", opts.Cache)
	}
	switch p.Arch {
	case "llama":
		m.mode = ropeNormal
	case "qwen2":
		m.mode = ropeNeoX
	case "qwen3":
		m.mode, m.qkNorm = ropeNeoX, true
	default:
		return nil, unsupportedf("unsupported architecture %q", p.Arch)
	}
	if p.Embedding <= 0 || p.Layers <= 0 || p.FeedForward <= 0 || p.Heads <= 0 || p.HeadsKV <= 0 ||
		p.HeadDim <= 0 || p.HeadDimV <= 0 || p.Heads%p.HeadsKV != 0 {
		return nil, unsupportedf("unsupported hyperparameters: embedding %d, layers %d, feed-forward %d, heads %d (%d kv), head dim %d (%d v)",
			p.Embedding, p.Layers, p.FeedForward, p.Heads, p.HeadsKV, p.HeadDim, p.HeadDimV)
	}
	if p.RopeDim <= 0 || p.RopeDim > p.HeadDim || p.RopeDim%2 != 0 {
		return nil, unsupportedf("unsupported rope dimension %d for head dimension %d", p.RopeDim, p.HeadDim)
	}
	m.dim = p.Embedding
	m.qDim, m.kvDim, m.vDim = p.Heads*p.HeadDim, p.HeadsKV*p.HeadDim, p.HeadsKV*p.HeadDimV
	m.eps = float32(p.RMSEps)
	m.kqScale = 1 / float32(math.Sqrt(float64(p.HeadDim)))
	base := float32(p.RopeBase)
	if base <= 0 {
		base = 10000
	}
	m.thetaScale = float32(math.Pow(float64(base), float64(float32(-2)/float32(p.RopeDim))))
	m.freqScale = 1
	m.yarn = noYarn

	mat := func(name string, n, k int) (*cpu.Matrix, error) {
		x, ok, err := w.Matrix(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if !ok {
			return nil, fmt.Errorf("%s: missing", name)
		}
		if err := x.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if n >= 0 && (x.G.N != n || x.G.K != k) {
			return nil, fmt.Errorf("%s: shape [%d %d], want [%d %d]", name, x.G.K, x.G.N, k, n)
		}
		m.names[x] = name
		return x, nil
	}
	optMat := func(name string, n, k int) (*cpu.Matrix, error) {
		if _, ok, err := w.Matrix(name); err != nil || !ok {
			return nil, err
		}
		return mat(name, n, k)
	}
	vec := func(name string, n int, required bool) ([]float32, error) {
		v, ok, err := w.Vector(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if !ok {
			if required {
				return nil, fmt.Errorf("%s: missing", name)
			}
			return nil, nil
		}
		if len(v) != n {
			return nil, fmt.Errorf("%s: shape [%d], want [%d]", name, len(v), n)
		}
		return v, nil
	}

	var err error
	if m.embd, err = mat("token_embd.weight", -1, 0); err != nil {
		return nil, err
	}
	m.vocab = m.embd.G.N
	if p.VocabSize > 0 && p.VocabSize != m.vocab {
		return nil, fmt.Errorf("token_embd.weight: shape [%d %d], want [%d %d]", m.embd.G.K, m.embd.G.N, m.dim, p.VocabSize)
	}
	if m.embd.G.K != m.dim {
		return nil, fmt.Errorf("token_embd.weight: shape [%d %d], want [%d %d]", m.embd.G.K, m.embd.G.N, m.dim, m.vocab)
	}
	if m.outNorm, err = vec("output_norm.weight", m.dim, true); err != nil {
		return nil, err
	}
	if m.output, err = optMat("output.weight", m.vocab, m.dim); err != nil {
		return nil, err
	}
	if m.output == nil {
		m.output = m.embd // tied embeddings
	}

	switch p.RopeScaling {
	case "", "none":
	case "linear":
		if p.RopeFactor > 0 {
			m.freqScale = float32(1 / p.RopeFactor)
		}
	case "llama3":
	case "yarn":
		if p.RopeFactor < 1 {
			return nil, unsupportedf("rope scaling yarn with factor %g: want 1 or more", p.RopeFactor)
		}
		orig := p.RopeOrigCtx
		if orig <= 0 {
			orig = p.ContextLength
		}
		if orig <= 0 {
			return nil, unsupportedf("rope scaling yarn without an original context length")
		}
		m.freqScale = float32(1 / p.RopeFactor)
		m.yarn = newYarn(p.RopeDim, orig, base, m.freqScale)
	default:
		return nil, unsupportedf("unsupported rope scaling %q", p.RopeScaling)
	}
	if m.ropeFactors, err = vec("rope_freqs.weight", p.RopeDim/2, false); err != nil {
		return nil, err
	}
	if m.ropeFactors == nil && p.RopeScaling == "llama3" {
		m.ropeFactors = llama3Factors(p)
	}

	m.layers = make([]layer, p.Layers)
	for i := range m.layers {
		l := &m.layers[i]
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		if l.attnNorm, err = vec(name("attn_norm.weight"), m.dim, true); err != nil {
			return nil, err
		}
		if l.qkv, err = optMat(fmt.Sprintf(fusedQKV, i), m.qDim+m.kvDim+m.vDim, m.dim); err != nil {
			return nil, err
		}
		if l.qkv == nil {
			if l.q, err = mat(name("attn_q.weight"), m.qDim, m.dim); err != nil {
				return nil, err
			}
			if l.k, err = mat(name("attn_k.weight"), m.kvDim, m.dim); err != nil {
				return nil, err
			}
			if l.v, err = mat(name("attn_v.weight"), m.vDim, m.dim); err != nil {
				return nil, err
			}
		}
		if l.bq, err = vec(name("attn_q.bias"), m.qDim, false); err != nil {
			return nil, err
		}
		if l.bk, err = vec(name("attn_k.bias"), m.kvDim, false); err != nil {
			return nil, err
		}
		if l.bv, err = vec(name("attn_v.bias"), m.vDim, false); err != nil {
			return nil, err
		}
		if m.qkNorm {
			if l.qNorm, err = vec(name("attn_q_norm.weight"), p.HeadDim, true); err != nil {
				return nil, err
			}
			if l.kNorm, err = vec(name("attn_k_norm.weight"), p.HeadDim, true); err != nil {
				return nil, err
			}
		}
		if l.wo, err = mat(name("attn_output.weight"), m.dim, p.Heads*p.HeadDimV); err != nil {
			return nil, err
		}
		if l.ffnNorm, err = vec(name("ffn_norm.weight"), m.dim, true); err != nil {
			return nil, err
		}
		if l.gateUp, err = optMat(fmt.Sprintf(fusedGateUp, i), 2*p.FeedForward, m.dim); err != nil {
			return nil, err
		}
		if l.gateUp == nil {
			if l.gate, err = mat(name("ffn_gate.weight"), p.FeedForward, m.dim); err != nil {
				return nil, err
			}
			if l.up, err = mat(name("ffn_up.weight"), p.FeedForward, m.dim); err != nil {
				return nil, err
			}
		}
		if l.down, err = mat(name("ffn_down.weight"), m.dim, p.FeedForward); err != nil {
			return nil, err
		}
	}
	return m, nil
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
