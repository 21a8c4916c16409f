package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout/gguftest"
)

// variant writes a copy of the GGUF src with its metadata edited by kv
// (nil: unchanged) and without the tensors drop says.
func variant(t *testing.T, src, dst string, kv func([]gguftest.KV) []gguftest.KV, drop func(string) bool) {
	t.Helper()
	if err := gguftest.Rewrite(src, dst, kv, drop); err != nil {
		t.Fatal(err)
	}
}

func setKV(key string, v any) func([]gguftest.KV) []gguftest.KV {
	return func(kvs []gguftest.KV) []gguftest.KV {
		for i := range kvs {
			if kvs[i].Key == key {
				if v == nil {
					return append(kvs[:i], kvs[i+1:]...)
				}
				kvs[i].Value = v
				return kvs
			}
		}
		if v == nil {
			return kvs
		}
		return append(kvs, gguftest.KV{Key: key, Value: v})
	}
}

// TestPackRefusesWhatCannotRun: every GGUF the engine cannot run is refused
// at pack time with the engine's message, and nothing is written; YaRN
// rope scaling packs.
func TestPackRefusesWhatCannotRun(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(fixtures, "stories260K-q8_0.gguf")
	rename := func(arch string) func([]gguftest.KV) []gguftest.KV {
		return func(kvs []gguftest.KV) []gguftest.KV {
			for i := range kvs {
				if kvs[i].Key == "general.architecture" {
					kvs[i].Value = arch
				}
				if k, ok := strings.CutPrefix(kvs[i].Key, "llama."); ok {
					kvs[i].Key = arch + "." + k
				}
			}
			return kvs
		}
	}
	none := func(string) bool { return true }
	cases := []struct {
		name string
		kv   func([]gguftest.KV) []gguftest.KV
		drop func(string) bool
		want string
	}{
		{"gpt2", rename("gpt2"), nil, `unsupported architecture "gpt2"`},
		{"falcon", rename("falcon"), nil, `unsupported architecture "falcon"`},
		// phi3 runs, from its own tensors: a llama's ffn_up lacks the gate half.
		{"phi3-llama-tensors", rename("phi3"), nil, "blk.0.ffn_up.weight: shape [64 172], want [64 344]"},
		{"su-rope", setKV("llama.rope.scaling.type", "su"), nil, `unsupported rope scaling "su"`},
		{"missing-tensor", nil, func(n string) bool { return n == "blk.3.ffn_down.weight" }, "blk.3.ffn_down.weight: missing"},
		{"no-heads", setKV("llama.attention.head_count", nil), nil, "unsupported hyperparameters"},
		{"no-tokenizer", setKV("tokenizer.ggml.tokens", nil), nil, "no tokenizer"},
		// The vocabulary is built beside the tensors; one that cannot be is
		// still the error.
		{"bad-scores", setKV("tokenizer.ggml.scores", []float32{1, 2}), nil, "tokenizer: "},
		{"bad-model", setKV("tokenizer.ggml.model", "bogus"), nil, "tokenizer: "},
		{"vocab-size", setKV("llama.vocab_size", uint32(600)), nil, "token_embd.weight: shape [64 512], want [64 600]"},
		{"vocab-only", nil, none, "token_embd.weight: missing"},
	}
	for _, c := range cases {
		in := filepath.Join(dir, c.name+".gguf")
		variant(t, src, in, c.kv, c.drop)
		out := filepath.Join(dir, c.name+".xdna")
		_, _, err := run(t, in, "-o", out, "-q")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: %s written", c.name, out)
		}
	}
	in := filepath.Join(dir, "yarn.gguf")
	variant(t, src, in, func(kvs []gguftest.KV) []gguftest.KV {
		kvs = setKV("llama.rope.scaling.type", "yarn")(kvs)
		kvs = setKV("llama.rope.scaling.factor", float32(4))(kvs)
		return setKV("llama.rope.scaling.original_context_length", uint32(512))(kvs)
	}, nil)
	if _, _, err := run(t, in, "-o", filepath.Join(dir, "yarn.xdna"), "-q"); err != nil {
		t.Errorf("yarn: %v", err)
	}
}

// TestVerifyAgainstMetadata: verify --against compares the hyperparameters
// (rope settings too), and reports each mismatched tensor once.
func TestVerifyAgainstMetadata(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(fixtures, "stories260K-q8_0.gguf")
	pkg := filepath.Join(dir, "s.xdna")
	if _, _, err := run(t, src, "-o", pkg, "-q"); err != nil {
		t.Fatal(err)
	}
	roped := filepath.Join(dir, "roped.gguf")
	variant(t, src, roped, func(kvs []gguftest.KV) []gguftest.KV {
		kvs = setKV("llama.rope.scaling.type", "linear")(kvs)
		return setKV("llama.rope.scaling.factor", float32(2))(kvs)
	}, nil)
	out, _, err := run(t, "verify", pkg, "--against", roped)
	if err == nil || !strings.Contains(out, "hyperparameter rope_scaling") || !strings.Contains(out, "hyperparameter rope_factor") {
		t.Errorf("rope scaling added: %v\n%s", err, out)
	}
	if strings.Count(out, "FAIL") != 2 {
		t.Errorf("want 2 mismatches:\n%s", out)
	}

	out, _, err = run(t, "verify", pkg, "--against", filepath.Join(fixtures, "stories260K-q4_0.gguf"))
	if err == nil {
		t.Fatal("q8_0 package verified against the q4_0 GGUF")
	}
	names := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if _, rest, ok := strings.Cut(l, "FAIL tensor \""); ok {
			name, _, _ := strings.Cut(rest, "\"")
			names[name]++
		}
	}
	if len(names) == 0 {
		t.Fatalf("no tensor mismatch reported:\n%s", out)
	}
	for n, c := range names {
		if c != 1 {
			t.Errorf("tensor %s reported %d times", n, c)
		}
	}
}

// TestSmallOnes: inspect --json has snake_case keys; K-tile is "-" for a
// raw tensor in inspect as in the plan; --host-gbps NaN is refused;
// --version.
func TestSmallOnes(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "s.xdna")
	plan, _, err := run(t, filepath.Join(fixtures, "stories260K-q8_0.gguf"), "-o", pkg)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "inspect", pkg, "--json")
	if err != nil || !strings.Contains(out, `"context_length"`) || strings.Contains(out, `"ContextLength"`) || strings.Contains(out, `"Tensors"`) {
		t.Errorf("inspect --json keys: %v\n%.400s", err, out)
	}
	out, _, _ = run(t, "inspect", pkg)
	for _, text := range []string{out, plan} {
		for _, l := range strings.Split(text, "\n") {
			if f := strings.Fields(l); len(f) > 5 && f[0] == "output_norm.weight" && f[4] != "-" {
				t.Errorf("K-tile of a raw tensor: %q", l)
			}
		}
	}
	if _, _, err := run(t, filepath.Join(fixtures, "stories260K-q8_0.gguf"), "-o", pkg, "--host-gbps", "nan"); err == nil {
		t.Error("--host-gbps nan accepted")
	}
	if out, _, err := run(t, "--version"); err != nil || strings.TrimSpace(out) != "xdnapack 0.1.0" {
		t.Errorf("--version: %v %q", err, out)
	}
}
