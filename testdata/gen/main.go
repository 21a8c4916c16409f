// Command gen writes a random-weight GGUF model for tests and benchmarks.
//
//	go run ./testdata/gen -o /tmp/big.gguf -shape qwen05b -type Q4_0
//	go run ./testdata/gen -o /tmp/huge.gguf -shape qwen05b -layers 128   # > 1 GiB
//	go run ./testdata/gen -o /tmp/l1b.gguf -layers 16 -dim 2048 -ffn 8192 -heads 32 -kv-heads 8 -vocab 128256 -tied  # Llama-3.2-1B shape
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/xdna-go/xdna/layout/gguftest"
	"github.com/xdna-go/xdna/planar"
)

func main() {
	out := flag.String("o", "", "output GGUF file (required)")
	shape := flag.String("shape", "qwen05b", "base shape: qwen05b (24 x 896 x 4864, 14/2 heads, vocab 32000) or tiny")
	typ := flag.String("type", "Q4_0", "weight type: Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K, F16, F32, or the mix Q4_K_M")
	layers := flag.Int("layers", 0, "override the layer count")
	seed := flag.Uint64("seed", 1, "random seed")
	dim := flag.Int("dim", 0, "override the embedding width")
	ffn := flag.Int("ffn", 0, "override the feed-forward width")
	heads := flag.Int("heads", 0, "override the attention heads")
	kv := flag.Int("kv-heads", 0, "override the KV heads")
	vocab := flag.Int("vocab", 0, "override the vocabulary size")
	tied := flag.Bool("tied", false, "tie the output to the token embedding (no output.weight)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -o is required")
		os.Exit(2)
	}
	s := gguftest.Qwen05B
	switch *shape {
	case "qwen05b":
	case "tiny":
		s = gguftest.Tiny
	default:
		fmt.Fprintf(os.Stderr, "gen: -shape %q: want qwen05b or tiny\n", *shape)
		os.Exit(2)
	}
	if *typ == "Q4_K_M" {
		s.Type, s.Q4KM = planar.Q4_K, true
	} else {
		t, err := planar.ParseType(*typ)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen: -type:", err)
			os.Exit(2)
		}
		s.Type = t
	}
	s.Seed = *seed
	for _, o := range []struct {
		v   int
		dst *int
	}{{*layers, &s.Layers}, {*dim, &s.Dim}, {*ffn, &s.FFN}, {*heads, &s.Heads}, {*kv, &s.HeadsKV}, {*vocab, &s.Vocab}} {
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	s.Tied = *tied
	start := time.Now()
	if err := gguftest.WriteModel(*out, s); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	st, _ := os.Stat(*out)
	fmt.Fprintf(os.Stderr, "wrote %s: %d bytes in %.1fs\n", *out, st.Size(), time.Since(start).Seconds())
}
