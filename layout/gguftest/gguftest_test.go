package gguftest

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// TestQ4KMType checks the Q4_K_M choice on the Qwen2.5-0.5B shape (24
// layers, 896 wide, FFN 4864), where only ffn_down (K = 4864) keeps a
// K-quant and the rest falls back as llama.cpp's quantizer does.
func TestQ4KMType(t *testing.T) {
	for _, c := range []struct {
		name string
		k    int
		want planar.Type
	}{
		{"token_embd.weight", 896, planar.Q5_0},
		{"output.weight", 896, planar.Q8_0},
		{"output.weight", 1024, planar.Q6_K},
		{"blk.0.attn_q.weight", 896, planar.Q5_0},
		{"blk.0.attn_v.weight", 896, planar.Q8_0},    // first eighth: more bits
		{"blk.4.attn_v.weight", 896, planar.Q5_0},    // (4-3)%3 != 2
		{"blk.0.ffn_down.weight", 4864, planar.Q6_K}, // first eighth
		{"blk.4.ffn_down.weight", 4864, planar.Q4_K},
		{"blk.5.ffn_down.weight", 4864, planar.Q6_K},  // (5-3)%3 == 2
		{"blk.21.ffn_down.weight", 4864, planar.Q6_K}, // last eighth
		{"blk.20.ffn_down.weight", 4864, planar.Q6_K}, // (20-3)%3 == 2
		{"blk.19.ffn_down.weight", 4864, planar.Q4_K},
		{"blk.19.ffn_gate.weight", 896, planar.Q5_0},
		{"blk.19.ffn_gate.weight", 1024, planar.Q4_K},
	} {
		if got := Q4KMType(c.name, 24, c.k); got != c.want {
			t.Errorf("Q4KMType(%s, K=%d) = %s, want %s", c.name, c.k, got, c.want)
		}
	}
}

// TestRandomBlocksPack checks that the random blocks of every generated
// type are valid: the planar packer accepts them and they decode to finite,
// not all zero values.
func TestRandomBlocksPack(t *testing.T) {
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q5_0, planar.Q8_0, planar.Q4_K, planar.Q5_K, planar.Q6_K, planar.F16, planar.F32} {
		g := planar.Geometry{Type: typ, N: 16, K: 512, Columns: 2, KTile: 256}
		var src bytes.Buffer
		if err := RandomBlocks(&src, typ, int64(g.N*g.K), rand.New(rand.NewPCG(1, 2))); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if want := g.N * typ.RowBytes(g.K); src.Len() != want {
			t.Fatalf("%s: %d bytes, want %d", typ, src.Len(), want)
		}
		dst := make([]byte, g.Size())
		if err := planar.Pack(g, src.Bytes(), dst); err != nil {
			t.Fatalf("%s: Pack: %v", typ, err)
		}
		row := make([]float32, g.K)
		nonzero := 0
		for r := 0; r < g.N; r++ {
			planar.DequantRow(g, dst, r, row)
			for i, v := range row {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s: row %d [%d] = %v", typ, r, i, v)
				}
				if v != 0 {
					nonzero++
				}
			}
		}
		if nonzero < g.N*g.K/2 {
			t.Errorf("%s: only %d of %d values nonzero", typ, nonzero, g.N*g.K)
		}
	}
}
