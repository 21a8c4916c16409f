// Package tokenizer turns text into token ids and back exactly as llama.cpp
// (src/llama-vocab.cpp) does for SentencePiece ("llama") and byte-level BPE
// ("gpt2") vocabularies, and renders chat prompts for the common template
// families.
package tokenizer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xdna-go/xdna/layout"
)

var (
	// ErrFormat reports a malformed vocabulary or vocabulary blob.
	ErrFormat = errors.New("malformed vocabulary")
	// ErrUnsupported reports a tokenizer model, pre-tokenizer or chat
	// template that this package does not implement.
	ErrUnsupported = errors.New("unsupported")
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	TypeUndefined   = 0
	TypeNormal      = 1
	TypeUnknown     = 2
	TypeControl     = 3
	TypeUserDefined = 4
	TypeUnused      = 5
	TypeByte        = 6
)

// Tokenizer models (tokenizer.ggml.model).
const (
	ModelSPM = "llama" // SentencePiece with byte fallback
	ModelBPE = "gpt2"  // byte-level BPE
)

// Vocab is a vocabulary as read from a GGUF file, with llama.cpp's defaults
// already applied, so that it is final when stored in a .xdna file.
type Vocab struct {
	Model  string    // tokenizer.ggml.model: "llama" or "gpt2"
	Pre    string    // tokenizer.ggml.pre ("" for SPM; "default" when a BPE file has none)
	Name   string    // general.name (llama.cpp sets per-token strip flags for Phi-3 by it)
	Tokens []string  // [n] token texts (byte-level BPE: GPT-2 byte-encoded)
	Scores []float32 // [n] SPM merge scores, or nil
	Types  []int32   // [n] token types (TypeNormal...), or nil for all normal
	Merges []string  // [m] BPE merges "left right", rank = index; nil for SPM

	BOS, EOS, UNK, PAD, EOT int32 // token ids, -1 if none

	AddBOS, AddEOS, AddSpacePrefix bool
	ChatTemplate                   string // tokenizer.chat_template (Jinja), "" if none
}

// MaxTokens caps the vocabulary size accepted from any input.
const MaxTokens = 1 << 22

// VocabFromGGUF reads the vocabulary of g and applies llama.cpp's defaults
// (llama_vocab::impl::load): special ids, add_bos/add_eos by model and
// pre-tokenizer, add_space_prefix, and the EOT token found by its text when
// the file names none.
func VocabFromGGUF(g *layout.GGUF) (*Vocab, error) {
	ferr := func(format string, a ...any) error {
		return fmt.Errorf("%s: %w: %s", g.Path, ErrFormat, fmt.Sprintf(format, a...))
	}
	v := &Vocab{PAD: -1, EOT: -1}
	var ok bool
	if v.Model, ok = g.String("tokenizer.ggml.model"); !ok {
		return nil, ferr("no tokenizer.ggml.model")
	}
	v.Pre, _ = g.String("tokenizer.ggml.pre")
	v.Name, _ = g.String("general.name")
	v.ChatTemplate, _ = g.String("tokenizer.chat_template")
	if v.Tokens, ok = g.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, ferr("no tokenizer.ggml.tokens string array")
	}
	n := len(v.Tokens)
	if n == 0 || n > MaxTokens {
		return nil, ferr("%d tokens (allowed 1..%d)", n, MaxTokens)
	}
	if _, present := g.Get("tokenizer.ggml.scores"); present {
		if f, ok := g.Floats("tokenizer.ggml.scores"); ok {
			v.Scores = f
		} else if is, ok := g.Ints("tokenizer.ggml.scores"); ok {
			v.Scores = make([]float32, len(is))
			for i, x := range is {
				v.Scores[i] = float32(x)
			}
		} else {
			return nil, ferr("tokenizer.ggml.scores is not a number array")
		}
		if len(v.Scores) < n {
			return nil, ferr("%d scores for %d tokens", len(v.Scores), n)
		}
		v.Scores = v.Scores[:n:n]
	}
	if _, present := g.Get("tokenizer.ggml.token_type"); present {
		ts, ok := g.Ints("tokenizer.ggml.token_type")
		if !ok {
			return nil, ferr("tokenizer.ggml.token_type is not an integer array")
		}
		if len(ts) < n {
			return nil, ferr("%d token types for %d tokens", len(ts), n)
		}
		v.Types = make([]int32, n)
		for i := range v.Types {
			v.Types[i] = int32(ts[i])
			if int64(v.Types[i]) != ts[i] {
				v.Types[i] = TypeUndefined
			}
		}
	}

	switch v.Model {
	case ModelSPM:
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS, v.AddSpacePrefix = true, true
	case ModelBPE:
		if v.Pre == "" {
			v.Pre = "default"
		}
		pt, ok := lookupPre(v.Pre)
		if !ok {
			return nil, fmt.Errorf("%s: %w pre-tokenizer %q", g.Path, ErrUnsupported, v.Pre)
		}
		var present bool
		if v.Merges, present = g.Strings("tokenizer.ggml.merges"); !present {
			return nil, ferr("no tokenizer.ggml.merges string array")
		}
		v.BOS, v.EOS, v.UNK = 11, 11, -1
		if pt.noBOS {
			v.BOS = -1
		}
		v.AddBOS = pt.addBOS
	default:
		return nil, fmt.Errorf("%s: %w tokenizer model %q", g.Path, ErrUnsupported, v.Model)
	}
	for _, s := range []struct {
		key string
		id  *int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS},
		{"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.eot_token_id", &v.EOT},
		{"tokenizer.ggml.unknown_token_id", &v.UNK},
		{"tokenizer.ggml.padding_token_id", &v.PAD},
	} {
		if *s.id >= int32(n) { // a default out of range is dropped
			*s.id = -1
		}
		if u, ok := g.Uint(s.key); ok && u < uint64(n) { // an id out of range keeps the default
			*s.id = int32(u)
		}
	}
	if b, ok := g.Bool("tokenizer.ggml.add_space_prefix"); ok {
		v.AddSpacePrefix = b
	}
	if b, ok := g.Bool("tokenizer.ggml.add_bos_token"); ok {
		v.AddBOS = b
	}
	if b, ok := g.Bool("tokenizer.ggml.add_eos_token"); ok {
		v.AddEOS = b
	}
	if v.EOT < 0 {
		v.EOT = findEOT(v.Tokens)
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", g.Path, err)
	}
	return v, nil
}

// eotTexts are the texts by which llama.cpp finds the EOT token when the
// file names none.
var eotTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
	"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
}

// findEOT returns the lowest id whose text is an EOT text, or -1. (llama.cpp
// takes the first in hash order; all of them end generation either way.)
func findEOT(tokens []string) int32 {
	for i, t := range tokens {
		for _, e := range eotTexts {
			if t == e {
				return int32(i)
			}
		}
	}
	return -1
}

// Validate checks that v is consistent: known model, array lengths, ids in
// range, a BOS/EOS id when they are to be added, no duplicate token text.
func (v *Vocab) Validate() error {
	if err := v.validateFields(); err != nil {
		return err
	}
	_, err := v.index()
	return err
}

// validateFields is Validate without the check for duplicate texts, which
// index makes.
func (v *Vocab) validateFields() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, a...))
	}
	n := len(v.Tokens)
	if n == 0 || n > MaxTokens {
		return bad("%d tokens (allowed 1..%d)", n, MaxTokens)
	}
	switch v.Model {
	case ModelSPM:
	case ModelBPE:
		if _, ok := lookupPre(v.Pre); !ok {
			return fmt.Errorf("%w pre-tokenizer %q", ErrUnsupported, v.Pre)
		}
	default:
		return fmt.Errorf("%w tokenizer model %q", ErrUnsupported, v.Model)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return bad("%d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return bad("%d token types for %d tokens", len(v.Types), n)
	}
	for _, s := range []struct {
		name string
		id   int32
	}{{"BOS", v.BOS}, {"EOS", v.EOS}, {"UNK", v.UNK}, {"PAD", v.PAD}, {"EOT", v.EOT}} {
		if s.id < -1 || s.id >= int32(n) {
			return bad("%s id %d outside [-1, %d)", s.name, s.id, n)
		}
	}
	if v.AddBOS && v.BOS < 0 {
		return bad("add_bos_token is true, but there is no BOS token")
	}
	if v.AddEOS && v.EOS < 0 {
		return bad("add_eos_token is true, but there is no EOS token")
	}
	return nil
}

// index maps each token's text (emptyText for an empty one) to its id,
// failing on a text that two tokens have.
func (v *Vocab) index() (map[string]int32, error) {
	seen := make(map[string]int32, len(v.Tokens))
	for i, t := range v.Tokens {
		if t == "" {
			t = emptyText(i)
		}
		if j, dup := seen[t]; dup {
			return nil, fmt.Errorf("%w: duplicate token %q has ids %d and %d", ErrFormat, t, j, i)
		}
		seen[t] = int32(i)
	}
	return seen, nil
}

// emptyText is the text llama.cpp gives an empty token.
func emptyText(i int) string { return fmt.Sprintf("[EMPTY_%d]", i) }

func (v *Vocab) typ(i int) int32 {
	if v.Types == nil {
		return TypeNormal
	}
	return v.Types[i]
}

func (v *Vocab) score(i int) float32 {
	if v.Scores == nil {
		return 0
	}
	return v.Scores[i]
}

func (v *Vocab) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s vocabulary of %d tokens", v.Model, len(v.Tokens))
	if v.Pre != "" {
		fmt.Fprintf(&b, ", pre %q", v.Pre)
	}
	if len(v.Merges) > 0 {
		fmt.Fprintf(&b, ", %d merges", len(v.Merges))
	}
	return b.String()
}
