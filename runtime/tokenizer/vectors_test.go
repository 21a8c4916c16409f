package tokenizer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/xdna-go/xdna/layout"
)

const fixtures = "../../../shared/fixtures"

// openGGUF opens a fixture GGUF (llama.cpp's vocabulary-only files
// included: they end before the empty tensor data section).
func openGGUF(path string) (g *layout.GGUF, done func(), err error) {
	g, err = layout.OpenGGUF(path)
	return g, func() {}, err
}

type loaded struct {
	once sync.Once
	tk   *Tokenizer
	err  error
}

var tokCache sync.Map // path -> *loaded

// loadTokenizer returns the tokenizer of the GGUF at path, loading each file
// once for all tests.
func loadTokenizer(t testing.TB, path string) *Tokenizer {
	t.Helper()
	e, _ := tokCache.LoadOrStore(path, new(loaded))
	l := e.(*loaded)
	l.once.Do(func() {
		g, done, err := openGGUF(path)
		defer done()
		if l.err = err; err != nil {
			return
		}
		var v *Vocab
		if v, l.err = VocabFromGGUF(g); l.err == nil {
			l.tk, l.err = New(v)
		}
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.tk
}

type vector struct {
	in  string
	out []int32
}

// readVectors reads NAME.inp / NAME.out as llama.cpp's test-tokenizer-0 does.
func readVectors(t testing.TB, base string) []vector {
	t.Helper()
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	outb, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	var ins []string
	for s := string(inp); s != ""; {
		k := strings.Index(s, sep)
		if k < 0 {
			ins = append(ins, s)
			break
		}
		ins = append(ins, s[:k])
		s = s[k+len(sep):]
	}
	outs := strings.Split(strings.TrimSuffix(string(outb), "\n"), "\n")
	if len(ins) != len(outs) {
		t.Fatalf("%s: %d inputs, %d outputs", base, len(ins), len(outs))
	}
	vs := make([]vector, len(ins))
	for i := range ins {
		vs[i].in = ins[i]
		for _, f := range strings.Fields(outs[i]) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", base, i+1, err)
			}
			vs[i].out = append(vs[i].out, int32(id))
		}
	}
	return vs
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestVectors checks every llama.cpp tokenizer vector whose vocabulary is
// present: EncodeRaw without special-token parsing must give the same ids.
func TestVectors(t *testing.T) {
	cases := []struct{ name, vectors, gguf string }{
		{"llama-spm", "vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-llama-spm.gguf"},
		{"phi-3", "vocab/ggml-vocab-phi-3.gguf", "vocab/ggml-vocab-phi-3.gguf"},
		{"gpt-2", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-gpt-2.gguf"},
		{"deepseek-coder", "vocab/ggml-vocab-deepseek-coder.gguf", "vocab/ggml-vocab-deepseek-coder.gguf"},
		{"deepseek-llm", "vocab/ggml-vocab-deepseek-llm.gguf", "vocab/ggml-vocab-deepseek-llm.gguf"},
		{"falcon", "vocab/ggml-vocab-falcon.gguf", "vocab/ggml-vocab-falcon.gguf"},
		{"mpt", "vocab/ggml-vocab-mpt.gguf", "vocab/ggml-vocab-mpt.gguf"},
		{"refact", "vocab/ggml-vocab-refact.gguf", "vocab/ggml-vocab-refact.gguf"},
		{"starcoder", "vocab/ggml-vocab-starcoder.gguf", "vocab/ggml-vocab-starcoder.gguf"},
		{"stories260K", "vocab/stories260K.gguf", "models/stories260K-f32.gguf"},
		{"llama-bpe", "vocab/ggml-vocab-llama-bpe.gguf", ""},
		{"qwen2", "vocab/ggml-vocab-qwen2.gguf", ""},
		{"command-r", "vocab/ggml-vocab-command-r.gguf", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			vs := readVectors(t, filepath.Join(fixtures, c.vectors))
			if c.gguf == "" {
				t.Skipf("%d vectors, but no %s.gguf: llama.cpp does not ship this vocabulary (too large)", len(vs), c.vectors)
			}
			tk := loadTokenizer(t, filepath.Join(fixtures, c.gguf))
			pass := 0
			for i, v := range vs {
				got := tk.EncodeRaw(v.in, false)
				if equalIDs(got, v.out) {
					pass++
					continue
				}
				t.Errorf("vector %d %q:\n got  %v\n want %v", i, v.in, got, v.out)
			}
			t.Logf("%s: %d/%d identical", c.name, pass, len(vs))
		})
	}
}
