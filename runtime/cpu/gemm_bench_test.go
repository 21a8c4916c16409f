package cpu

import (
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// BenchmarkGemmKernel runs the GEMM's kernel alone on one 32-row panel of
// K = 896 (in L1 and L2) with six tokens; MAC/s is its multiply-adds.
func BenchmarkGemmKernel(b *testing.B) {
	if !haveAVX512 {
		b.Skip("no AVX-512 VNNI here: the GEMM does not run")
	}
	const K, toks = 896, gemmToks
	nb := K / 32
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]byte, nb*1024)
	for i := range w {
		w[i] = byte(rng.IntN(16))
	}
	sc := make([]float32, nb*32)
	for i := range sc {
		sc[i] = rng.Float32()
	}
	a := make([]int8, toks*K)
	for i := range a {
		a[i] = int8(rng.IntN(255) - 127)
	}
	gd := make([]int32, nb*toks*2)
	o := make([]float32, toks*gemmRows)
	for b.Loop() {
		gemmI8AVX512(&w[0], &sc[0], &a[0], K, &gd[0], &o[0], 4*gemmRows, nb, 4, gemmRows, toks, 0)
	}
	b.ReportMetric(float64(b.N)*gemmRows*K*toks/b.Elapsed().Seconds()/1e9, "GMAC/s")
}

// BenchmarkGemmPack lays out one 32-row panel of a Q4_0 gate_up-shaped
// group (K = 896, K-tile 128, rows of 224 per group) again and again, the
// weights in cache: the layout's own cost.
func BenchmarkGemmPack(b *testing.B) {
	if !haveAVX512 {
		b.Skip("no AVX-512 VNNI here: the GEMM does not run")
	}
	g := planar.Geometry{Type: planar.Q4_0, N: 32, K: 896, Columns: 1, KTile: 128}
	m := pack(b, g, randomGGUF(rand.New(rand.NewPCG(1, 2)), g.Type, g.N, g.K))
	var l blobLayout
	l.init(g)
	nb := g.K / 32
	w := make([]byte, nb*1024)
	sc := make([]float32, nb*32)
	for b.Loop() {
		for h := 0; h < 2; h++ {
			c := l.plane[0][0] + 16*h*l.per[0]
			s := l.plane[0][1] + 16*h*l.per[1]
			gemmPackQ4_0AVX512(&m.Blob[c], &m.Blob[s], l.per[0], l.per[1], &w[64*h], &sc[16*h], 4, g.Tiles(), l.tile[0])
		}
	}
	b.ReportMetric(float64(b.N)*float64(g.N*g.K)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

// BenchmarkGemmSerial is BenchmarkPrefill05B's gate_up and ffn_down on one
// thread (the caller's), for the GEMM's share of a forward pass.
func BenchmarkGemmSerial(b *testing.B) {
	const tokens = 128
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q8_0} {
		for _, sh := range shapes05B[2:] {
			g := planar.Geometry{Type: typ, N: sh.n, K: sh.k, Columns: 8, KTile: sh.t}
			m := pack(b, g, randomGGUF(rand.New(rand.NewPCG(1, 2)), typ, g.N, g.K))
			x := randomX(rand.New(rand.NewPCG(1, 1)), tokens*g.K)
			y := make([]float32, tokens*g.N)
			b.Run(typ.String()+"/"+sh.name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				for b.Loop() {
					MatMat(m, x, y, tokens, nil)
				}
				b.ReportMetric(float64(b.N)*float64(g.N*g.K*tokens)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				// On a machine shared with other work the thread's CPU time
				// is the steadier figure.
				b.ReportMetric(float64(b.N)*float64(g.N*g.K*tokens)/(threadCPU()-c0)/1e9, "GMAC/cpu-s")
			})
		}
	}
}

// threadCPU is the calling thread's CPU time in seconds (Linux).
func threadCPU() float64 {
	var ru syscall.Rusage
	const rusageThread = 1
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkGemmCold is BenchmarkGemmSerial's gate_up cycled over copies
// (96 MB) so that the weights come from memory, as in a forward pass.
func BenchmarkGemmCold(b *testing.B) {
	const tokens = 128
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q8_0} {
		sh := shapes05B[2]
		g := planar.Geometry{Type: typ, N: sh.n, K: sh.k, Columns: 8, KTile: sh.t}
		ms := make([]*Matrix, max(1, (96<<20)/g.Size()))
		for i := range ms {
			ms[i] = pack(b, g, randomGGUF(rand.New(rand.NewPCG(uint64(i), 2)), typ, g.N, g.K))
		}
		x := randomX(rand.New(rand.NewPCG(1, 1)), tokens*g.K)
		y := make([]float32, tokens*g.N)
		b.Run(typ.String()+"/"+sh.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0 := threadCPU()
			i := 0
			for b.Loop() {
				MatMat(ms[i%len(ms)], x, y, tokens, nil)
				i++
			}
			b.ReportMetric(float64(b.N)*float64(g.N*g.K*tokens)/(threadCPU()-c0)/1e9, "GMAC/cpu-s")
		})
	}
}
