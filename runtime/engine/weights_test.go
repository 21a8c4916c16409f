package engine

import (
	"bytes"
	"os"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// TestWeightsFromGGUF checks the in-memory weights against the GGUF bytes:
// every matrix unpacks to its tensor's data (fused ones to the row-wise
// concatenation of their parts), every vector is its tensor dequantised.
func TestWeightsFromGGUF(t *testing.T) {
	for _, model := range []string{"stories260K-q8_0", "tiny-llama-q4_k_m", "rand-qwen2-q8_0"} {
		g, _ := openModel(t, model)
		f, err := os.Open(g.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		data := func(name string) []byte {
			tt, ok := g.Tensor(name)
			if !ok {
				t.Fatalf("%s: no tensor %s", model, name)
			}
			b := make([]byte, tt.Size)
			if err := g.ReadTensor(f, tt, b); err != nil {
				t.Fatal(err)
			}
			return b
		}
		for _, fuse := range []bool{false, true} {
			w, err := WeightsFromGGUF(g, 8, fuse)
			if err != nil {
				t.Fatal(err)
			}
			mw := w.(*memWeights)
			for name, m := range mw.mats {
				var want []byte
				switch {
				case fuse && name == "blk.1.attn_qkv.weight":
					want = append(append(data("blk.1.attn_q.weight"), data("blk.1.attn_k.weight")...), data("blk.1.attn_v.weight")...)
				case fuse && name == "blk.1.ffn_gate_up.weight":
					want = append(data("blk.1.ffn_gate.weight"), data("blk.1.ffn_up.weight")...)
				case bytes.Contains([]byte(name), []byte("_qkv")) || bytes.Contains([]byte(name), []byte("gate_up")):
					continue
				default:
					want = data(name)
				}
				got := make([]byte, m.G.SourceBytes())
				if err := planar.Unpack(m.G, m.Blob, got); err != nil {
					t.Fatalf("%s %s: %v", model, name, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %s (fuse %v): unpacked blob differs from the GGUF data", model, name, fuse)
				}
			}
			_, q, _ := w.Matrix("blk.0.attn_q.weight")
			_, qkv, _ := w.Matrix("blk.0.attn_qkv.weight")
			_, gu, _ := w.Matrix("blk.0.ffn_gate_up.weight")
			if q == fuse || qkv != fuse || gu != fuse {
				t.Fatalf("%s fuse=%v: attn_q %v, attn_qkv %v, ffn_gate_up %v", model, fuse, q, qkv, gu)
			}
			v, ok, err := w.Vector("blk.0.attn_norm.weight")
			if !ok || err != nil {
				t.Fatalf("%s: attn_norm: %v %v", model, ok, err)
			}
			want := make([]float32, len(v))
			if err := planar.DequantGGUF(planar.F32, data("blk.0.attn_norm.weight"), want); err != nil {
				t.Fatal(err)
			}
			for i := range v {
				if v[i] != want[i] {
					t.Fatalf("%s: attn_norm[%d] = %v, want %v", model, i, v[i], want[i])
				}
			}
			if _, ok, _ := w.Matrix("nope"); ok {
				t.Fatal("absent matrix found")
			}
		}
	}
}
