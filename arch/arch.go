// Package arch describes each model family xdna runs as data: the tensors
// of a layer (name, shape rule, required or optional, the fused matrices
// that may stand for several), the order a layer runs its matrix products
// in, the rope mode, the norms, the activation, the attention variants
// (grouped KV heads, sliding windows and their layer pattern and rope
// base, logit soft-capping), the embedding scale, and the checks of the
// hyperparameters and tensors.
//
// The engine builds its layers by walking a Family, the packer takes its
// fusion plan from it (Fusions), the NPU cost model its execution ranks
// (Rank), and xdnapack and xdnarun both check a model with Resolve before
// running or packing it. See README.md for adding a family.
package arch

import (
	"errors"
	"fmt"
	"sort"
)

// ErrUnsupported reports a model no family can run; errors.Is matches every
// such error.
var ErrUnsupported = errors.New("unsupported model")

// unsupported is an error of ErrUnsupported with its own message.
type unsupported string

func (e unsupported) Error() string        { return string(e) }
func (e unsupported) Is(target error) bool { return target == ErrUnsupported }

// Unsupportedf returns an error of ErrUnsupported with the given message.
func Unsupportedf(format string, a ...any) error { return unsupported(fmt.Sprintf(format, a...)) }

// Role is what a tensor of a layer is for; the engine keeps a layer's
// tensors by role.
type Role int

const (
	AttnNorm     Role = iota // [dim] RMSNorm weight before attention
	Q                        // [qDim][dim] query projection
	K                        // [kvDim][dim] key projection
	V                        // [vDim][dim] value projection
	QKV                      // [qDim+kvDim+vDim][dim] rows of Q, then K, then V
	BiasQ                    // [qDim]
	BiasK                    // [kvDim]
	BiasV                    // [vDim]
	QNorm                    // [headDim] RMSNorm weight of each query head
	KNorm                    // [headDim] RMSNorm weight of each key head
	AttnOut                  // [dim][heads*headDimV] attention output projection
	PostAttnNorm             // [dim] RMSNorm of the attention output, before the residual add
	FFNNorm                  // [dim] RMSNorm weight before the feed-forward
	Gate                     // [ffn][dim]
	Up                       // [ffn][dim]
	GateUp                   // [2*ffn][dim] rows of gate, then up
	Down                     // [dim][ffn]
	PostFFNNorm              // [dim] RMSNorm of the feed-forward output, before the residual add
	NumRoles
)

// Size is a shape rule: a dimension of a tensor as a function of the
// hyperparameters.
type Size int

const (
	Embd    Size = iota // embedding
	QDim                // heads * headDim
	KVDim               // headsKV * headDim
	VDim                // headsKV * headDimV
	QKVDim              // QDim + KVDim + VDim
	OutDim              // heads * headDimV
	FFN                 // feed-forward
	FFN2                // 2 * feed-forward
	HeadDim             // headDim
)

// Of returns the size for the dimensions d.
func (s Size) Of(d Dims) int {
	switch s {
	case Embd:
		return d.Embd
	case QDim:
		return d.QDim
	case KVDim:
		return d.KVDim
	case VDim:
		return d.VDim
	case QKVDim:
		return d.QDim + d.KVDim + d.VDim
	case OutDim:
		return d.OutDim
	case FFN:
		return d.FFN
	case FFN2:
		return 2 * d.FFN
	case HeadDim:
		return d.HeadDim
	}
	panic(fmt.Sprintf("arch: unknown size %d", int(s)))
}

// Tensor is one tensor of a layer.
type Tensor struct {
	Role Role
	Name string // after "blk.N.", such as "attn_q.weight"
	// N is the rows (outputs) of a matrix or the length of a vector; K is
	// the inputs of a matrix.
	N, K   Size
	Vector bool
	// Optional tensors may be absent. A tensor with Fuses stands for those
	// parts: when present it replaces them, when absent they are required
	// (unless optional themselves).
	Optional bool
	Fuses    []Role
	// Step orders a layer's matrix products: the NPU cost model ranks
	// them by it, and the matrices of one step read the same input (the
	// fusable ones).
	Step int
}

// RopeMode is how rope pairs a head's dimensions.
type RopeMode int

const (
	RopeNorm RopeMode = iota // adjacent pairs (llama)
	RopeNeoX                 // halves of the rotated dimensions (GPT-NeoX)
)

func (m RopeMode) String() string {
	if m == RopeNeoX {
		return "neox"
	}
	return "normal"
}

// Act is the activation of a gated feed-forward.
type Act int

const (
	SiLUGLU     Act = iota // silu(gate) * up
	GELUTanhGLU            // gelu_tanh(gate) * up, as ggml's CPU backend computes it (f16 table)
)

func (a Act) String() string {
	if a == GELUTanhGLU {
		return "gelu-tanh-glu"
	}
	return "silu-glu"
}

// Family is one architecture (general.architecture).
type Family struct {
	Name   string
	Models string // the models people know it by, for the README and errors
	Rope   RopeMode
	Act    Act
	// EmbedScale multiplies the token embeddings by sqrtf(embedding).
	EmbedScale bool
	// QueryScale multiplies each query by 1/sqrt(headDim) before its
	// product with the keys (gemma, phi3) instead of scaling the scores
	// in the softmax (llama): the same in exact arithmetic, not with the
	// f16 rounding of the query.
	QueryScale bool
	// EmbdPerHeadScale lists the layer counts (model sizes) whose query
	// scale is 1/sqrt(embedding/heads) instead of 1/sqrt(headDim) (the 27B
	// gemmas: llama.cpp picks it by the model's type).
	EmbdPerHeadScale []int
	// Sliding windows. A family with WindowPattern > 0 runs attention over
	// the last SlidingWindow positions on the layers il with
	// il % pattern < pattern-1 (the file's attention.sliding_window_pattern,
	// else WindowPattern), with rope base RopeBaseSWA (the file's
	// rope.freq_base_swa, else SWABase; 0: the model's) and no rope
	// scaling there. DefaultWindow applies when the file gives none (0:
	// then no layer is windowed). WindowIgnored names a family whose files
	// carry a window that llama.cpp disables, and so do we.
	WindowPattern int
	DefaultWindow int
	SWABase       float64
	WindowIgnored bool
	// SWAScaled: the windowed layers keep the model's rope scaling (gemma2,
	// whose rope_freq_scale_train_swa is the model's); else they run
	// unscaled (gemma3).
	SWAScaled bool
	// AttnSoftcap and FinalSoftcap: the family honours the file's
	// attn_logit_softcapping / final_logit_softcapping (cap*tanh(x/cap)
	// on the attention scores / the logits). DefaultAttnSoftcap and
	// DefaultFinalSoftcap apply when the file gives none.
	AttnSoftcap, FinalSoftcap               bool
	DefaultAttnSoftcap, DefaultFinalSoftcap float64
	// Layer lists the tensors of each layer in execution order.
	Layer []Tensor
	// Refused are model-wide tensors the engine does not implement, with
	// the reason given when a file has one.
	Refused map[string]string
}

// llamaLayer is the layer of the Llama family: pre-norms, Q/K/V (fusable),
// optional biases, SwiGLU.
var llamaLayer = []Tensor{
	{Role: AttnNorm, Name: "attn_norm.weight", N: Embd, Vector: true},
	{Role: QKV, Name: "attn_qkv.weight", N: QKVDim, K: Embd, Fuses: []Role{Q, K, V}, Step: 1},
	{Role: Q, Name: "attn_q.weight", N: QDim, K: Embd, Step: 1},
	{Role: K, Name: "attn_k.weight", N: KVDim, K: Embd, Step: 1},
	{Role: V, Name: "attn_v.weight", N: VDim, K: Embd, Step: 1},
	{Role: BiasQ, Name: "attn_q.bias", N: QDim, Vector: true, Optional: true, Step: 1},
	{Role: BiasK, Name: "attn_k.bias", N: KVDim, Vector: true, Optional: true, Step: 1},
	{Role: BiasV, Name: "attn_v.bias", N: VDim, Vector: true, Optional: true, Step: 1},
	{Role: AttnOut, Name: "attn_output.weight", N: Embd, K: OutDim, Step: 2},
	{Role: FFNNorm, Name: "ffn_norm.weight", N: Embd, Vector: true, Step: 3},
	{Role: GateUp, Name: "ffn_gate_up.weight", N: FFN2, K: Embd, Fuses: []Role{Gate, Up}, Step: 4},
	{Role: Gate, Name: "ffn_gate.weight", N: FFN, K: Embd, Step: 4},
	{Role: Up, Name: "ffn_up.weight", N: FFN, K: Embd, Step: 4},
	{Role: Down, Name: "ffn_down.weight", N: Embd, K: FFN, Step: 5},
}

// with returns layer with extra tensors inserted before the tensor of role
// before (or appended when before is NumRoles), and those of roles drop
// removed.
func with(layer []Tensor, drop []Role, before Role, extra ...Tensor) []Tensor {
	var out []Tensor
	for _, t := range layer {
		if t.Role == before {
			out = append(out, extra...)
		}
		dropped := false
		for _, r := range drop {
			dropped = dropped || t.Role == r
		}
		if !dropped {
			out = append(out, t)
		}
	}
	if before == NumRoles {
		out = append(out, extra...)
	}
	return out
}

var (
	qkNorms = []Tensor{
		{Role: QNorm, Name: "attn_q_norm.weight", N: HeadDim, Vector: true, Step: 1},
		{Role: KNorm, Name: "attn_k_norm.weight", N: HeadDim, Vector: true, Step: 1},
	}
	postAttnNorm = Tensor{Role: PostAttnNorm, Name: "post_attention_norm.weight", N: Embd, Vector: true, Step: 3}
	postFFNNorm  = Tensor{Role: PostFFNNorm, Name: "post_ffw_norm.weight", N: Embd, Vector: true, Step: 6}
	noBiases     = []Role{BiasQ, BiasK, BiasV}
)

// families are the families the engine runs, by general.architecture.
var families = map[string]*Family{
	"llama": {
		Name: "llama", Models: "Llama 2/3, Mistral, TinyLlama, SmolLM", Rope: RopeNorm, Act: SiLUGLU,
		Layer: llamaLayer,
	},
	"qwen2": {
		Name: "qwen2", Models: "Qwen2, Qwen2.5", Rope: RopeNeoX, Act: SiLUGLU,
		Layer: llamaLayer,
	},
	"qwen3": {
		Name: "qwen3", Models: "Qwen3 (dense)", Rope: RopeNeoX, Act: SiLUGLU,
		Layer: with(llamaLayer, nil, AttnOut, qkNorms...),
	},
	"gemma3": {
		Name: "gemma3", Models: "Gemma 3 (text: 270M, 1B, 4B and up; QAT Q4_0 builds)", Rope: RopeNeoX, Act: GELUTanhGLU,
		EmbedScale: true, QueryScale: true, EmbdPerHeadScale: []int{62},
		WindowPattern: 6, SWABase: 10000, FinalSoftcap: true,
		Layer: with(with(with(llamaLayer, noBiases, AttnOut, qkNorms...), nil, FFNNorm, postAttnNorm), nil, NumRoles, postFFNNorm),
	},
	"gemma2": {
		Name: "gemma2", Models: "Gemma 2", Rope: RopeNeoX, Act: GELUTanhGLU,
		EmbedScale: true, QueryScale: true, EmbdPerHeadScale: []int{46},
		WindowPattern: 2, DefaultWindow: 4096, SWAScaled: true,
		AttnSoftcap: true, FinalSoftcap: true, DefaultAttnSoftcap: 50, DefaultFinalSoftcap: 30,
		Layer: with(with(llamaLayer, noBiases, FFNNorm, postAttnNorm), nil, NumRoles, postFFNNorm),
	},
	"phi3": {
		Name: "phi3", Models: "Phi-3, Phi-3.5-mini, Phi-4-mini", Rope: RopeNeoX, Act: SiLUGLU,
		QueryScale: true, WindowIgnored: true,
		// ffn_up.weight holds the gate rows, then the up rows, as stored.
		Layer: with(llamaLayer, []Role{GateUp, Gate, Up, BiasQ, BiasK, BiasV}, Down,
			Tensor{Role: GateUp, Name: "ffn_up.weight", N: FFN2, K: Embd, Step: 4}),
		Refused: map[string]string{
			"rope_factors_long.weight":  "longrope scaling (the 128k variants) is not supported",
			"rope_factors_short.weight": "longrope scaling (the 128k variants) is not supported",
		},
	},
}

// Lookup returns the family of an architecture name.
func Lookup(name string) (*Family, error) {
	f, ok := families[name]
	if !ok {
		return nil, Unsupportedf("unsupported architecture %q", name)
	}
	return f, nil
}

// Names returns the architectures the engine runs, sorted.
func Names() []string {
	var s []string
	for n := range families {
		s = append(s, n)
	}
	sort.Strings(s)
	return s
}

// Fusion is a matrix a packer may write in place of its parts (rows of
// each part in turn), all in one layer: "blk.N."+Name from "blk.N."+Parts.
type Fusion struct {
	Name  string
	Parts []string
}

// Fusions returns the fusions of the family, in layer order.
func (f *Family) Fusions() []Fusion {
	var out []Fusion
	for _, t := range f.Layer {
		if len(t.Fuses) == 0 {
			continue
		}
		fu := Fusion{Name: t.Name}
		for _, r := range t.Fuses {
			fu.Parts = append(fu.Parts, f.tensor(r).Name)
		}
		out = append(out, fu)
	}
	return out
}

// tensor returns the layer tensor of role r, or nil.
func (f *Family) tensor(r Role) *Tensor {
	for i := range f.Layer {
		if f.Layer[i].Role == r {
			return &f.Layer[i]
		}
	}
	return nil
}

// MaxStep is the largest Tensor.Step of any family.
const MaxStep = 6

// Rank returns the step of the layer at which the tensor named role (the
// name after "blk.N.") runs, from the first family that names it; ok is
// false for a name no family knows.
func Rank(role string) (step int, ok bool) {
	for _, name := range Names() {
		for _, t := range families[name].Layer {
			if t.Name == role {
				return t.Step, true
			}
		}
	}
	return 0, false
}
