package engine

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// pplTol bounds the relative difference from llama-perplexity's value
// (DESIGN.md: perplexity within 0.5%).
const pplTol = 0.005

// TestPerplexity runs llama-perplexity's method on text/wap-excerpt.txt with
// a context of 128 and compares with fixtures/golden/perplexity.tsv, with
// the f16 KV cache llama.cpp used.
func TestPerplexity(t *testing.T) {
	f, err := os.Open(filepath.Join(fixtures, "golden", "perplexity.tsv"))
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	text, err := os.ReadFile(filepath.Join(fixtures, "text", "wap-excerpt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Scan() // header: model text ctx ppl_llama_cpp
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 4 {
			t.Fatalf("perplexity.tsv: bad line %q", sc.Text())
		}
		model := fields[0]
		ctx, err1 := strconv.Atoi(fields[2])
		want, err2 := strconv.ParseFloat(fields[3], 64)
		if err1 != nil || err2 != nil || fields[1] != "text/wap-excerpt.txt" {
			t.Fatalf("perplexity.tsv: bad line %q", sc.Text())
		}
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			g, _ := openModel(t, model)
			v, err := tokenizer.VocabFromGGUF(g)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizer.New(v)
			if err != nil {
				t.Fatal(err)
			}
			tokens := tok.Encode(string(text), false)
			bos := int32(-1)
			if v.AddBOS {
				bos = v.BOS
			}
			m := loadModel(t, model, 4, true, Options{Threads: 2, Cache: CacheF16})
			ppl, err := PerplexityBOS(m, tokens, ctx, bos)
			if err != nil {
				t.Fatal(err)
			}
			rel := math.Abs(ppl-want) / want
			t.Logf("%s: %d tokens, %d chunks of %d: perplexity %.4f, llama.cpp %.4f (relative difference %.5f)", model, len(tokens), len(tokens)/ctx, ctx, ppl, want, rel)
			if rel > pplTol {
				t.Errorf("perplexity %.4f, llama.cpp %.4f: relative difference %.4f > %v", ppl, want, rel, pplTol)
			}
		})
	}
}
