package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// The benchmarks multiply a 4096 x 4096 matrix (2048 x 2048 for the float
// formats) with 1 token (MatVec) and 16 tokens (MatMat), on 1 and 2
// threads. SetBytes is the weight size, so MB/s is weight streaming speed.

func benchMatrix(b *testing.B, typ planar.Type) *Matrix {
	n := 4096
	if typ.BlockSize() == 1 {
		n = 2048
	}
	g := planar.Geometry{Type: typ, N: n, K: n, Columns: 8, KTile: n}
	rng := rand.New(rand.NewPCG(9, 10))
	return pack(b, g, randomGGUF(rng, typ, g.N, g.K))
}

func BenchmarkMatVec(b *testing.B) {
	for _, typ := range testTypes {
		m := benchMatrix(b, typ)
		x := randomX(rand.New(rand.NewPCG(1, 1)), m.G.K)
		y := make([]float32, m.G.N)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%dx%d/threads=%d", typ, m.G.N, m.G.K, threads), func(b *testing.B) {
				p := NewPool(threads)
				defer p.Close()
				b.SetBytes(int64(m.Bytes()))
				b.ReportAllocs()
				for b.Loop() {
					MatVec(m, x, y, p)
				}
			})
		}
	}
}

func BenchmarkMatMat(b *testing.B) {
	const tokens = 16
	for _, typ := range testTypes {
		m := benchMatrix(b, typ)
		x := randomX(rand.New(rand.NewPCG(1, 1)), tokens*m.G.K)
		y := make([]float32, tokens*m.G.N)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%dx%d/B=%d/threads=%d", typ, m.G.N, m.G.K, tokens, threads), func(b *testing.B) {
				p := NewPool(threads)
				defer p.Close()
				b.SetBytes(int64(m.Bytes()))
				b.ReportAllocs()
				for b.Loop() {
					MatMat(m, x, y, tokens, p)
				}
				b.ReportMetric(float64(b.N*tokens)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
