package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// The benchmarks multiply a 4096 x 4096 matrix (2048 x 2048 for the float
// formats) with 1 token (MatVec) and 16 tokens (MatMat), on 1 and 2
// threads, with the scalar kernels (impl=go) and the assembly ones
// (impl=avx2, impl=avx512, where they run), in the same run. SetBytes is the weight
// size, so MB/s is weight streaming speed; BenchmarkStreamRead gives the
// machine's streaming-read bandwidth to compare it with.

func benchMatrix(b *testing.B, typ planar.Type) *Matrix {
	n := 4096
	if typ.BlockSize() == 1 {
		n = 2048
	}
	g := planar.Geometry{Type: typ, N: n, K: n, Columns: 8, KTile: 256}
	if typ.BlockSize() == 1 {
		g.KTile = n
	}
	rng := rand.New(rand.NewPCG(9, 10))
	return pack(b, g, randomGGUF(rng, typ, g.N, g.K))
}

// benchModes runs f as sub-benchmarks impl=go and impl=<level> for each
// kernel set this CPU runs (avx2; avx512 where the CPU has it: it is not
// simulated for speed).
func benchModes(b *testing.B, typ planar.Type, f func(b *testing.B)) {
	for _, k := range levelModes() {
		if k != nil && !vecOK(planar.Geometry{Type: typ, KTile: 256}) {
			continue
		}
		b.Run("impl="+SIMDName(k), func(b *testing.B) { withKernels(k, func() { f(b) }) })
	}
}

func BenchmarkMatVec(b *testing.B) {
	for _, typ := range testTypes {
		m := benchMatrix(b, typ)
		x := randomX(rand.New(rand.NewPCG(1, 1)), m.G.K)
		y := make([]float32, m.G.N)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%dx%d/threads=%d", typ, m.G.N, m.G.K, threads), func(b *testing.B) {
				benchModes(b, typ, func(b *testing.B) {
					p := NewPool(threads)
					defer p.Close()
					b.SetBytes(int64(m.Bytes()))
					b.ReportAllocs()
					for b.Loop() {
						MatVec(m, x, y, p)
					}
				})
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
				benchModes(b, typ, func(b *testing.B) {
					p := NewPool(threads)
					defer p.Close()
					b.SetBytes(int64(m.Bytes()))
					b.ReportAllocs()
					for b.Loop() {
						MatMat(m, x, y, tokens, p)
					}
					b.ReportMetric(float64(b.N*tokens)/b.Elapsed().Seconds(), "tokens/s")
				})
			})
		}
	}
}

// BenchmarkStreamRead measures the machine's streaming-read bandwidth with
// 1 and 2 threads: each sums its share of a 256 MiB buffer (larger than any
// cache) with SumStream, the loop cmd/xdnarun's bench times.
func BenchmarkStreamRead(b *testing.B) {
	buf := make([]uint64, (256<<20)/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			b.SetBytes(int64(len(buf) * 8))
			var sink uint64
			for b.Loop() {
				sink += SumStream(buf, threads)
			}
			_ = sink
		})
	}
}

// The 0.5B shapes (Qwen2.5-0.5B: dim 896, FFN 4864, GQA 14/2), as
// xdnapack packs them: fused Q/K/V 1152 x 896 and gate/up 9728 x 896 with
// K-tiles of 128, attn_output 896 x 896, ffn_down 896 x 4864 with K-tiles
// of 256.
var shapes05B = []struct {
	name    string
	n, k, t int
}{
	{"qkv", 1152, 896, 128},
	{"attn_output", 896, 896, 128},
	{"gate_up", 9728, 896, 128},
	{"ffn_down", 896, 4864, 256},
}

// BenchmarkDecode05B multiplies one token with the 0.5B shapes, each
// cycled over enough copies (96 MB) that the weights come from memory as
// in decoding; MB/s is the weight bandwidth, to compare with
// BenchmarkStreamRead.
func BenchmarkDecode05B(b *testing.B) {
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q8_0, planar.Q5_0, planar.Q6_K, planar.Q4_K} {
		for _, sh := range shapes05B {
			if sh.k%typ.BlockSize() != 0 || sh.t%typ.BlockSize() != 0 {
				continue
			}
			g := planar.Geometry{Type: typ, N: sh.n, K: sh.k, Columns: 8, KTile: sh.t}
			ms := make([]*Matrix, max(1, (96<<20)/g.Size()))
			for i := range ms {
				ms[i] = pack(b, g, randomGGUF(rand.New(rand.NewPCG(uint64(i), 2)), typ, g.N, g.K))
			}
			x := randomX(rand.New(rand.NewPCG(1, 1)), g.K)
			y := make([]float32, g.N)
			b.Run(fmt.Sprintf("%s/%s/%dx%d/threads=2", typ, sh.name, g.N, g.K), func(b *testing.B) {
				benchModes(b, typ, func(b *testing.B) {
					p := NewPool(2)
					defer p.Close()
					b.SetBytes(int64(g.Size()))
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						MatVec(ms[i%len(ms)], x, y, p)
						i++
					}
				})
			})
		}
	}
}

// BenchmarkPrefill05B multiplies 128 tokens with the 0.5B shapes, as a
// prefill does.
func BenchmarkPrefill05B(b *testing.B) {
	const tokens = 128
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q8_0, planar.Q5_0, planar.Q4_K, planar.Q6_K} {
		for _, sh := range shapes05B {
			if sh.k%typ.BlockSize() != 0 || sh.t%typ.BlockSize() != 0 {
				continue
			}
			g := planar.Geometry{Type: typ, N: sh.n, K: sh.k, Columns: 8, KTile: sh.t}
			m := pack(b, g, randomGGUF(rand.New(rand.NewPCG(1, 2)), typ, g.N, g.K))
			x := randomX(rand.New(rand.NewPCG(1, 1)), tokens*g.K)
			y := make([]float32, tokens*g.N)
			b.Run(fmt.Sprintf("%s/%s/%dx%d/B=%d/threads=2", typ, sh.name, g.N, g.K, tokens), func(b *testing.B) {
				benchModes(b, typ, func(b *testing.B) {
					p := NewPool(2)
					defer p.Close()
					b.ReportAllocs()
					for b.Loop() {
						MatMat(m, x, y, tokens, p)
					}
					b.ReportMetric(float64(b.N*tokens)/b.Elapsed().Seconds(), "tokens/s")
				})
			})
		}
	}
}

// BenchmarkMatVecDRAM multiplies one token with each of eight 4096 x 4096
// matrices in turn (75 MB of Q4_0, more than the L3 cache), so that the
// weights come from memory as in decoding; compare with
// BenchmarkStreamRead.
func BenchmarkMatVecDRAM(b *testing.B) {
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q8_0, planar.Q4_K, planar.Q6_K} {
		ms := make([]*Matrix, 8)
		total := 0
		for i := range ms {
			g := planar.Geometry{Type: typ, N: 4096, K: 4096, Columns: 8, KTile: 256}
			rng := rand.New(rand.NewPCG(uint64(i), 10))
			ms[i] = pack(b, g, randomGGUF(rng, typ, g.N, g.K))
			total += ms[i].Bytes()
		}
		x := randomX(rand.New(rand.NewPCG(1, 1)), 4096)
		y := make([]float32, 4096)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/8x4096x4096/threads=%d", typ, threads), func(b *testing.B) {
				benchModes(b, typ, func(b *testing.B) {
					p := NewPool(threads)
					defer p.Close()
					b.SetBytes(int64(total))
					b.ReportAllocs()
					for b.Loop() {
						for _, m := range ms {
							MatVec(m, x, y, p)
						}
					}
				})
			})
		}
	}
}
