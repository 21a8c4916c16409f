package arch

import (
	"fmt"
	"math"
	"slices"

	"github.com/xdna-go/xdna/layout"
)

// Dims are the sizes a family's shape rules refer to.
type Dims struct {
	Embd    int // embedding
	QDim    int // heads * headDim
	KVDim   int // headsKV * headDim
	VDim    int // headsKV * headDimV
	OutDim  int // heads * headDimV
	FFN     int // feed-forward
	HeadDim int
}

// Shapes answers the shapes of a model's tensors by name, without their
// data: the engine's packed weights, or a packer's plan.
type Shapes interface {
	// Matrix returns the rows n and inputs k of the 2-D tensor name; ok is
	// false when there is none, err says why it cannot be a matrix.
	Matrix(name string) (n, k int, ok bool, err error)
	// Vector returns the length of the 1-D tensor name.
	Vector(name string) (n int, ok bool, err error)
}

// Model is a model checked against its family: the sizes, and per layer
// the tensor that plays each role.
type Model struct {
	Family *Family
	Dims   Dims
	Vocab  int
	Tied   bool // no output.weight: the output is token_embd.weight
	// RopeFreqs: the file has rope_freqs.weight ([RopeDim/2] divisors).
	RopeFreqs bool
	// KQScale is the attention scale, 1/sqrt(headDim) or, for the sizes
	// Family.EmbdPerHeadScale lists, 1/sqrt(embedding/heads), in float32.
	KQScale float32
	// AttnSoftcap and FinalSoftcap are the caps in force (0: none).
	AttnSoftcap, FinalSoftcap float64
	Layers                    []Layer
}

// Layer is one layer of a Model.
type Layer struct {
	// Tensors holds the full name of the tensor of each role the layer
	// has ("" for none): a fused matrix, or its parts, never both.
	Tensors [NumRoles]string
	// Window is the number of positions the layer attends to, its own
	// included (0: every position).
	Window int
	// RopeBase is the layer's rope base; Scaled says whether the model's
	// rope scaling applies (not on the windowed layers of gemma).
	RopeBase float64
	Scaled   bool
}

// Windowed reports whether any layer has a sliding window.
func (m *Model) Windowed() bool {
	for _, l := range m.Layers {
		if l.Window > 0 {
			return true
		}
	}
	return false
}

// Check resolves p and s (Resolve) and checks that a tokenizer of tokens
// tokens fits the model's vocabulary, with the error a run would give.
func Check(p layout.Params, s Shapes, tokens int) error {
	m, err := Resolve(p, s)
	if err != nil {
		return err
	}
	if tokens <= 0 {
		return Unsupportedf("no tokenizer: the model has no vocabulary (tokenizer.ggml.tokens)")
	}
	if tokens > m.Vocab {
		return Unsupportedf("the tokenizer has %d tokens, the model only %d rows of token_embd.weight", tokens, m.Vocab)
	}
	return nil
}

// Resolve checks the hyperparameters p (architecture, sizes, rope,
// attention variants) and every tensor's presence and shape against the
// family of p.Arch, and returns the model's layers. An error names the
// tensor at fault, such as "blk.3.attn_q.weight: shape [64 32], want
// [64 64]" (shapes in GGUF order, [K N]).
func Resolve(p layout.Params, s Shapes) (*Model, error) {
	f, err := Lookup(p.Arch)
	if err != nil {
		return nil, err
	}
	if p.Embedding <= 0 || p.Layers <= 0 || p.FeedForward <= 0 || p.Heads <= 0 || p.HeadsKV <= 0 ||
		p.HeadDim <= 0 || p.HeadDimV <= 0 || p.Heads%p.HeadsKV != 0 {
		return nil, Unsupportedf("unsupported hyperparameters: embedding %d, layers %d, feed-forward %d, heads %d (%d kv), head dim %d (%d v)",
			p.Embedding, p.Layers, p.FeedForward, p.Heads, p.HeadsKV, p.HeadDim, p.HeadDimV)
	}
	if p.RopeDim <= 0 || p.RopeDim > p.HeadDim || p.RopeDim%2 != 0 {
		return nil, Unsupportedf("unsupported rope dimension %d for head dimension %d", p.RopeDim, p.HeadDim)
	}
	const most = 1 << 24 // a bound on every size, so that their products stay far from overflow
	if p.Embedding > most || p.FeedForward > most || p.Heads*p.HeadDim > most || p.Heads*p.HeadDimV > most {
		return nil, Unsupportedf("unsupported hyperparameters: embedding %d, feed-forward %d, heads %d of %d (%d v)",
			p.Embedding, p.FeedForward, p.Heads, p.HeadDim, p.HeadDimV)
	}
	m := &Model{Family: f, Dims: Dims{
		Embd: p.Embedding, QDim: p.Heads * p.HeadDim, KVDim: p.HeadsKV * p.HeadDim, VDim: p.HeadsKV * p.HeadDimV,
		OutDim: p.Heads * p.HeadDimV, FFN: p.FeedForward, HeadDim: p.HeadDim,
	}}
	d := m.Dims
	m.KQScale = 1 / float32(math.Sqrt(float64(p.HeadDim)))
	if slices.Contains(f.EmbdPerHeadScale, p.Layers) {
		m.KQScale = 1 / float32(math.Sqrt(float64(float32(p.Embedding/p.Heads))))
	}

	for name, why := range f.Refused {
		if _, ok, _ := s.Vector(name); ok {
			return nil, Unsupportedf("%s: %s (%s)", name, why, f.Name)
		}
		if _, _, ok, _ := s.Matrix(name); ok {
			return nil, Unsupportedf("%s: %s (%s)", name, why, f.Name)
		}
	}
	n, k, ok, err := s.Matrix("token_embd.weight")
	if err = present("token_embd.weight", ok, err); err != nil {
		return nil, err
	}
	m.Vocab = n
	if p.VocabSize > 0 && p.VocabSize != n || k != d.Embd {
		want := p.VocabSize
		if want <= 0 {
			want = n
		}
		return nil, fmt.Errorf("token_embd.weight: shape [%d %d], want [%d %d]", k, n, d.Embd, want)
	}
	if _, err := vector(s, "output_norm.weight", d.Embd, true); err != nil {
		return nil, err
	}
	if ok, err := matrix(s, "output.weight", m.Vocab, d.Embd, false); err != nil {
		return nil, err
	} else {
		m.Tied = !ok
	}
	if err := checkRopeScaling(p); err != nil {
		return nil, err
	}
	if _, ok, _ := s.Vector("rope_freqs.weight"); ok {
		if _, err := vector(s, "rope_freqs.weight", p.RopeDim/2, true); err != nil {
			return nil, err
		}
		m.RopeFreqs = true
	}
	if err := m.attention(p); err != nil {
		return nil, err
	}

	for i := range m.Layers {
		if err := m.layer(s, i); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// attention sets the layers' windows, rope bases and the soft caps.
func (m *Model) attention(p layout.Params) error {
	f := m.Family
	window, pattern := p.SlidingWindow, p.SlidingPattern
	if f.WindowIgnored || f.WindowPattern == 0 {
		window = 0
	} else if window == 0 {
		window = f.DefaultWindow
	}
	if window < 0 {
		return Unsupportedf("unsupported sliding window %d", window)
	}
	if window > 0 {
		if pattern < 0 {
			return Unsupportedf("%s: attention.sliding_window_pattern: only a positive period of layers is supported", f.Name)
		}
		if pattern == 0 {
			pattern = f.WindowPattern
		}
	}
	swaBase := p.RopeBaseSWA
	if swaBase <= 0 {
		swaBase = f.SWABase
	}
	if swaBase <= 0 {
		swaBase = p.RopeBase
	}
	base := p.RopeBase
	if base <= 0 {
		base = 10000
	}
	for i := 0; i < p.Layers; i++ {
		// llama.cpp's set_swa_pattern(pattern): the last layer of each period
		// attends to everything.
		if window > 0 && i%pattern < pattern-1 {
			m.Layers = append(m.Layers, Layer{Window: window, RopeBase: swaBase, Scaled: f.SWAScaled})
		} else {
			m.Layers = append(m.Layers, Layer{RopeBase: base, Scaled: true})
		}
	}
	if f.AttnSoftcap {
		m.AttnSoftcap = p.AttnSoftcap
		if m.AttnSoftcap == 0 {
			m.AttnSoftcap = f.DefaultAttnSoftcap
		}
	} else if p.AttnSoftcap != 0 {
		return Unsupportedf("%s: attention logit soft-capping (%g) is not supported for this family", f.Name, p.AttnSoftcap)
	}
	if f.FinalSoftcap {
		m.FinalSoftcap = p.FinalSoftcap
		if m.FinalSoftcap == 0 {
			m.FinalSoftcap = f.DefaultFinalSoftcap
		}
	} else if p.FinalSoftcap != 0 {
		return Unsupportedf("%s: final logit soft-capping (%g) is not supported for this family", f.Name, p.FinalSoftcap)
	}
	if m.AttnSoftcap < 0 || m.FinalSoftcap < 0 {
		return Unsupportedf("unsupported soft caps %g, %g", m.AttnSoftcap, m.FinalSoftcap)
	}
	return nil
}

// layer resolves layer i: attention fields set by attention, tensors here.
func (m *Model) layer(s Shapes, i int) error {
	f, d := m.Family, m.Dims
	l := &m.Layers[i]
	name := func(t *Tensor) string { return fmt.Sprintf("blk.%d.%s", i, t.Name) }
	replaced := map[Role]bool{} // parts a present fused matrix stands for
	for ti := range f.Layer {
		t := &f.Layer[ti]
		if replaced[t.Role] {
			continue
		}
		full := name(t)
		var ok bool
		var err error
		optional := t.Optional || len(t.Fuses) > 0
		if t.Vector {
			ok, err = vector(s, full, t.N.Of(d), !optional)
		} else {
			ok, err = matrix(s, full, t.N.Of(d), t.K.Of(d), !optional)
		}
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		l.Tensors[t.Role] = full
		for _, r := range t.Fuses {
			replaced[r] = true
		}
	}
	return nil
}

// present turns an absent tensor into the error "name: missing".
func present(name string, ok bool, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !ok {
		return fmt.Errorf("%s: missing", name)
	}
	return nil
}

// matrix checks the shape of the matrix name ([n][k]); absent is an error
// when required.
func matrix(s Shapes, name string, n, k int, required bool) (bool, error) {
	gn, gk, ok, err := s.Matrix(name)
	if err != nil || (!ok && required) {
		return ok, present(name, ok, err)
	}
	if ok && (gn != n || gk != k) {
		return ok, fmt.Errorf("%s: shape [%d %d], want [%d %d]", name, gk, gn, k, n)
	}
	return ok, nil
}

// vector checks the length of the vector name; absent is an error when
// required.
func vector(s Shapes, name string, n int, required bool) (bool, error) {
	gn, ok, err := s.Vector(name)
	if err != nil || (!ok && required) {
		return ok, present(name, ok, err)
	}
	if ok && gn != n {
		return ok, fmt.Errorf("%s: shape [%d], want [%d]", name, gn, n)
	}
	return ok, nil
}

// checkRopeScaling checks the rope scaling the engine implements.
func checkRopeScaling(p layout.Params) error {
	switch p.RopeScaling {
	case "", "none", "linear", "llama3":
	case "yarn":
		if p.RopeFactor < 1 {
			return Unsupportedf("rope scaling yarn with factor %g: want 1 or more", p.RopeFactor)
		}
		if p.RopeOrigCtx <= 0 && p.ContextLength <= 0 {
			return Unsupportedf("rope scaling yarn without an original context length")
		}
	default:
		return Unsupportedf("unsupported rope scaling %q", p.RopeScaling)
	}
	return nil
}
