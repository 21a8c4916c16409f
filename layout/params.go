package layout

import (
	"fmt"
	"math"
)

// Params holds the architecture and every hyperparameter the engine needs,
// taken from the GGUF metadata ("{arch}.*" keys) at pack time.
type Params struct {
	Arch          string  `toml:"arch" json:"arch"`                     // general.architecture: llama, qwen2, qwen3, ...
	Name          string  `toml:"name" json:"name"`                     // general.name
	ContextLength int     `toml:"context_length" json:"context_length"` // training context
	Embedding     int     `toml:"embedding" json:"embedding"`           // d_model
	Layers        int     `toml:"layers" json:"layers"`
	FeedForward   int     `toml:"feed_forward" json:"feed_forward"`
	Heads         int     `toml:"heads" json:"heads"`
	HeadsKV       int     `toml:"heads_kv" json:"heads_kv"`
	HeadDim       int     `toml:"head_dim" json:"head_dim"`             // attention.key_length, else Embedding/Heads
	HeadDimV      int     `toml:"head_dim_v" json:"head_dim_v"`         // attention.value_length, else HeadDim
	RMSEps        float64 `toml:"rms_eps" json:"rms_eps"`               // attention.layer_norm_rms_epsilon
	RopeDim       int     `toml:"rope_dim" json:"rope_dim"`             // rope.dimension_count, else HeadDim
	RopeBase      float64 `toml:"rope_base" json:"rope_base"`           // rope.freq_base, default 10000
	RopeScaling   string  `toml:"rope_scaling" json:"rope_scaling"`     // rope.scaling.type: "", none, linear, yarn, llama3
	RopeFactor    float64 `toml:"rope_factor" json:"rope_factor"`       // rope.scaling.factor (0: none)
	RopeOrigCtx   int     `toml:"rope_orig_ctx" json:"rope_orig_ctx"`   // rope.scaling.original_context_length
	RopeLowFreq   float64 `toml:"rope_low_freq" json:"rope_low_freq"`   // llama3: rope.scaling.low_freq_factor
	RopeHighFreq  float64 `toml:"rope_high_freq" json:"rope_high_freq"` // llama3: rope.scaling.high_freq_factor
	VocabSize     int     `toml:"vocab_size" json:"vocab_size"`
	// Attention variants (gemma2, gemma3, phi3; 0 where the file sets none).
	SlidingWindow  int     `toml:"sliding_window,omitempty" json:"sliding_window,omitempty"`   // attention.sliding_window
	SlidingPattern int     `toml:"sliding_pattern,omitempty" json:"sliding_pattern,omitempty"` // attention.sliding_window_pattern; -1: not a positive integer (0, or a per-layer array)
	RopeBaseSWA    float64 `toml:"rope_base_swa,omitempty" json:"rope_base_swa,omitempty"`     // rope.freq_base_swa
	AttnSoftcap    float64 `toml:"attn_softcap,omitempty" json:"attn_softcap,omitempty"`       // attn_logit_softcapping
	FinalSoftcap   float64 `toml:"final_softcap,omitempty" json:"final_softcap,omitempty"`     // final_logit_softcapping
}

// ParamsFromGGUF reads the hyperparameters of g. Only the architecture is
// required here; the engine decides which architectures it runs.
func ParamsFromGGUF(g *GGUF) (Params, error) {
	var p Params
	arch, ok := g.String("general.architecture")
	if !ok || arch == "" {
		return p, &FormatError{File: g.Path, Offset: -1, Msg: "no general.architecture"}
	}
	p.Arch = arch
	p.Name, _ = g.String("general.name")
	u := func(key string) int {
		v, ok := g.Uint(arch + "." + key)
		if !ok || v > math.MaxInt32 {
			return 0
		}
		return int(v)
	}
	f := func(key string) float64 {
		v, _ := g.Float(arch + "." + key)
		return v
	}
	p.ContextLength = u("context_length")
	p.Embedding = u("embedding_length")
	p.Layers = u("block_count")
	p.FeedForward = u("feed_forward_length")
	p.Heads = u("attention.head_count")
	p.HeadsKV = u("attention.head_count_kv")
	if p.HeadsKV == 0 {
		p.HeadsKV = p.Heads
	}
	p.HeadDim = u("attention.key_length")
	if p.HeadDim == 0 && p.Heads > 0 {
		p.HeadDim = p.Embedding / p.Heads
	}
	p.HeadDimV = u("attention.value_length")
	if p.HeadDimV == 0 {
		p.HeadDimV = p.HeadDim
	}
	p.RMSEps = f("attention.layer_norm_rms_epsilon")
	if p.RMSEps == 0 {
		p.RMSEps = 1e-5
	}
	p.RopeDim = u("rope.dimension_count")
	if p.RopeDim == 0 {
		p.RopeDim = p.HeadDim
	}
	p.RopeBase = f("rope.freq_base")
	if p.RopeBase == 0 {
		p.RopeBase = 10000
	}
	p.RopeScaling, _ = g.String(arch + ".rope.scaling.type")
	p.RopeFactor = f("rope.scaling.factor")
	if p.RopeFactor == 0 {
		p.RopeFactor = f("rope.scale_linear")
		if p.RopeFactor != 0 && p.RopeScaling == "" {
			p.RopeScaling = "linear"
		}
	}
	p.RopeOrigCtx = u("rope.scaling.original_context_length")
	p.RopeLowFreq = f("rope.scaling.low_freq_factor")
	p.RopeHighFreq = f("rope.scaling.high_freq_factor")
	p.SlidingWindow = u("attention.sliding_window")
	if _, ok := g.Get(arch + ".attention.sliding_window_pattern"); ok {
		p.SlidingPattern = u("attention.sliding_window_pattern")
		if p.SlidingPattern == 0 {
			p.SlidingPattern = -1
		}
	}
	p.RopeBaseSWA = f("rope.freq_base_swa")
	p.AttnSoftcap = f("attn_logit_softcapping")
	p.FinalSoftcap = f("final_logit_softcapping")
	p.VocabSize = u("vocab_size")
	if p.VocabSize == 0 {
		if toks, ok := g.Strings("tokenizer.ggml.tokens"); ok {
			p.VocabSize = len(toks)
		}
	}
	if p.Embedding < 0 || p.Layers > 1<<16 || p.Heads > 1<<16 {
		return p, &FormatError{File: g.Path, Offset: -1, Msg: fmt.Sprintf("implausible hyperparameters %+v", p)}
	}
	return p, nil
}
