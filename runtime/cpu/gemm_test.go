package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// gemmLevels are the kernel sets with the GEMM to check: the AVX-512 set
// natively where the CPU has it, and under x86sim on any AVX2 machine
// (so that a CPU without AVX-512 proves the same instructions), which
// the test logs; the AVX2 set natively, and under x86sim too.
func gemmLevels(t *testing.T) []*kernels {
	var l []*kernels
	if haveAVX512 {
		l = append(l, avx512Kernels)
	}
	if haveAVX2 {
		l = append(l, simSet(t, "avx512-sim", "AVX512", avx512Kernels), avx2Kernels, simSet(t, "avx2-sim", "AVX2", avx2Kernels))
	}
	if len(l) == 0 {
		t.Skip("no assembly kernels on this machine or build: the GEMM does not run")
	}
	return l
}

// arbitraryRowSet makes a one-group matrix of typ, K-tiles of T, tiles
// of them and 16 to 55 rows of arbitrary bytes (any code, any f16 scale),
// and returns the set of sixteen of its rows from any first row.
func arbitraryRowSet(rng *rand.Rand, typ planar.Type, T, tiles int) rowSet {
	g := planar.Geometry{Type: typ, N: 16 + rng.IntN(40), K: T * tiles, Columns: 1, KTile: T}
	blob := make([]byte, g.Size())
	for i := range blob {
		blob[i] = byte(rng.Uint32())
	}
	j := &mmJob{m: &Matrix{G: g, Blob: blob}}
	j.lay.init(g)
	return j.rowSet(0, rng.IntN(g.N-15), 16)
}

// TestGemmPackMatchesRef lays out panels of arbitrary bytes (any code,
// any f16 scale) with the assembly and with gemmPackRef, for every K-tile
// the kernels take and one to three tiles, and compares them byte for
// byte, scales bit for bit.
func TestGemmPackMatchesRef(t *testing.T) {
	for _, ks := range gemmLevels(t) {
		rng := rand.New(rand.NewPCG(71, 72))
		for _, typ := range []planar.Type{planar.Q4_0, planar.Q5_0, planar.Q8_0} {
			for _, T := range []int{32, 64, 128, 256} {
				for tiles := 1; tiles <= 3; tiles++ {
					rs := arbitraryRowSet(rng, typ, T, tiles)
					g, blob, l, i0 := rs.j.m.G, rs.j.m.Blob, &rs.j.lay, rs.first
					np, nb := T/32, g.K/32
					cp, hp, sp := gemmPlanes(typ)
					at := rs.at
					high, hstride := rs.high(hp)
					want, got := make([]byte, nb*1024), make([]byte, nb*1024)
					wsc, gsc := make([]float32, nb*32), make([]float32, nb*32)
					gemmPackRef(typ, blob, at(cp), high, at(sp), l.per[cp], hstride, l.per[sp], want[64:], wsc[16:], np, tiles, l.tile[0], 16)
					pack := ks.gemmPackQ4_0
					if typ == planar.Q8_0 {
						pack = ks.gemmPackQ8_0
					}
					pack(&blob[at(cp)], &blob[at(sp)], l.per[cp], l.per[sp], &got[64], &gsc[16], np, tiles, l.tile[0])
					if hp >= 0 {
						ks.gemmPackHigh(&blob[high], hstride, &got[64], np, tiles, l.tile[0])
					}
					name := fmt.Sprintf("%s %s T%d tiles %d rows %d..", ks.name, typ, T, tiles, i0)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s: panel byte %d (block %d, kquad %d, group %d, row %d): %#02x, want %#02x",
								name, i, i/1024, i%1024/128, i%128/64, i%64/4, got[i], want[i])
						}
					}
					for i := range wsc {
						if math.Float32bits(gsc[i]) != math.Float32bits(wsc[i]) {
							t.Fatalf("%s: scale %d: %#08x, want %#08x", name, i, math.Float32bits(gsc[i]), math.Float32bits(wsc[i]))
						}
					}
				}
			}
		}
	}
}

// TestGemmMatchesScalar runs MatMat through the GEMM (counted, so that
// the test knows it ran) and through the scalar kernels on random weights
// and on arbitrary bytes, and compares every output bit for bit: partial
// panels, groups that split them, K-tiles from 64 to 256, more tiles than
// one run of the panel holds, passes of one to six tokens, two and three
// workers. Below gemmMinTokens the GEMM must not run, nor where the set
// has none for the format.
func TestGemmMatchesScalar(t *testing.T) {
	for _, base := range gemmLevels(t) {
		sim := base != avx512Kernels && base != avx2Kernels
		var calls atomic.Int64
		ks := *base
		if base.gemmI8 != nil {
			ks.gemmI8 = func(w *byte, sc *float32, a *int8, astride int, gd *int32, o *float32, ostride, nb, np, rows, toks, add int) {
				calls.Add(1)
				base.gemmI8(w, sc, a, astride, gd, o, ostride, nb, np, rows, toks, add)
			}
		}
		for _, f := range []*func(w *byte, sc *float32, a *int8, astride int, gd *int32, o *float32, ostride, nb, np, toks, add int){&ks.gemm2, &ks.gemm2Q8} {
			if k := *f; k != nil {
				*f = func(w *byte, sc *float32, a *int8, astride int, gd *int32, o *float32, ostride, nb, np, toks, add int) {
					calls.Add(1)
					k(w, sc, a, astride, gd, o, ostride, nb, np, toks, add)
				}
			}
		}
		for _, f := range []*func(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, toks, add int){&ks.gemmQ4K2, &ks.gemmQ6K2} {
			if k := *f; k != nil {
				*f = func(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, toks, add int) {
					calls.Add(1)
					k(w, sc, a, astride, gd, o, ostride, nsb, nsbt, toks, add)
				}
			}
		}
		for _, f := range []*func(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, rows, toks, add int){&ks.gemmQ4K, &ks.gemmQ6K} {
			if k := *f; k != nil {
				*f = func(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, rows, toks, add int) {
					calls.Add(1)
					k(w, sc, a, astride, gd, o, ostride, nsb, nsbt, rows, toks, add)
				}
			}
		}
		pools := []*Pool{nil, NewPool(2), NewPool(3)}
		defer func() {
			for _, p := range pools {
				p.Close()
			}
		}()
		rng := rand.New(rand.NewPCG(73, 74))
		shapes := []planar.Geometry{
			{N: 37, K: 256, Columns: 1, KTile: 128},
			{N: 300, K: 384, Columns: 8, KTile: 64},
			{N: 70, K: 40 * 64, Columns: 4, KTile: 64},
			{N: 64, K: 512, Columns: 2, KTile: 256},
		}
		shapesK := []planar.Geometry{
			{N: 37, K: 512, Columns: 1, KTile: 256},
			{N: 300, K: 768, Columns: 8, KTile: 256},
			{N: 70, K: 12 * 256, Columns: 4, KTile: 512},
			{N: 33, K: 1024, Columns: 2, KTile: 1024},
		}
		tokens := []int{gemmMinTokens - 1, gemmMinTokens, 13, 64}
		if sim {
			shapes, shapesK, tokens = shapes[:2], shapesK[:2], []int{gemmMinTokens - 1, 9}
		}
		for _, typ := range []planar.Type{planar.Q4_0, planar.Q5_0, planar.Q8_0, planar.Q4_K, planar.Q5_K, planar.Q6_K} {
			sh := shapes
			if kQuant(typ) {
				sh = shapesK
			}
			for si, g := range sh {
				g.Type = typ
				for arb := 0; arb < 2; arb++ {
					var m *Matrix
					if arb == 0 {
						m = pack(t, g, randomGGUF(rng, typ, g.N, g.K))
					} else {
						blob := make([]byte, g.Size())
						for i := range blob {
							blob[i] = byte(rng.Uint32())
						}
						m = &Matrix{G: g, Blob: blob}
					}
					for i, b := range tokens {
						pool := pools[(si+i)%len(pools)]
						x := randomX(rng, b*g.K)
						want := make([]float32, b*g.N)
						withKernels(nil, func() { MatMat(m, x, want, b, pool) })
						got := make([]float32, b*g.N+16)
						for i := range got {
							got[i] = -12345
						}
						before := calls.Load()
						withKernels(&ks, func() { MatMat(m, x, got[:b*g.N], b, pool) })
						name := fmt.Sprintf("%s %s N%d K%d T%d C%d arbitrary=%v B%d threads %d", base.name, typ, g.N, g.K, g.KTile, g.Columns, arb == 1, b, pool.Threads())
						wantGEMM := b >= gemmMinTokens
						if ran := calls.Load() > before; ran != wantGEMM {
							t.Fatalf("%s: GEMM ran: %v", name, ran)
						}
						for i := range want {
							if !sameBits(got[i], want[i]) {
								t.Fatalf("%s: y[%d] (token %d row %d): %v, scalar %v", name, i, i/g.N, i%g.N, got[i], want[i])
							}
						}
						for i := b * g.N; i < len(got); i++ {
							if got[i] != -12345 {
								t.Fatalf("%s: wrote past y at %d", name, i)
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmKPackMatchesRef is TestGemmPackMatchesRef for the K-quants:
// codes (gemmCodes*, and gemmPackHigh for Q5_K) and scale areas
// (gemmScales*) of arbitrary bytes against gemmCodesRef and gemmScalesRef.
func TestGemmKPackMatchesRef(t *testing.T) {
	for _, ks := range gemmLevels(t) {
		if ks.gemmScalesQ4K == nil {
			continue // no K-quant GEMM in this set
		}
		rng := rand.New(rand.NewPCG(75, 76))
		for _, typ := range []planar.Type{planar.Q4_K, planar.Q5_K, planar.Q6_K} {
			for _, T := range []int{256, 512} {
				for tiles := 1; tiles <= 3; tiles++ {
					rs := arbitraryRowSet(rng, typ, T, tiles)
					g, blob, l, i0 := rs.j.m.G, rs.j.m.Blob, &rs.j.lay, rs.first
					np, nsbt, nsb := T/32, T/256, g.K/256
					cp, hp, mp, dp := kPlanes(typ)
					at := rs.at
					high, hstride := rs.high(hp)
					want, got := make([]byte, nsb*8192), make([]byte, nsb*8192)
					gemmCodesRef(typ, blob, at(cp), high, l.per[cp], hstride, want[64:], np, tiles, l.tile[0], 16)
					if typ == planar.Q6_K {
						ks.gemmCodesQ8(&blob[at(cp)], l.per[cp], &got[64], np, tiles, l.tile[0])
					} else {
						ks.gemmCodesQ4(&blob[at(cp)], l.per[cp], &got[64], np, tiles, l.tile[0])
					}
					if hp >= 0 {
						ks.gemmPackHigh(&blob[high], hstride, &got[64], np, tiles, l.tile[0])
					}
					wa, ga := make([]byte, nsb*kArea(typ)), make([]byte, nsb*kArea(typ))
					gemmScalesRef(typ, blob, at(mp), at(dp), l.per[mp], l.per[dp], wa[64:], nsbt, tiles, l.tile[0], 16)
					if typ == planar.Q6_K {
						ks.gemmScalesQ6K(&blob[at(mp)], &blob[at(dp)], l.per[mp], l.per[dp], &ga[64], nsbt, tiles, l.tile[0])
					} else {
						ks.gemmScalesQ4K(&blob[at(mp)], &blob[at(dp)], l.per[mp], l.per[dp], &ga[64], nsbt, tiles, l.tile[0])
					}
					name := fmt.Sprintf("%s %s T%d tiles %d rows %d..", ks.name, typ, T, tiles, i0)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s: panel byte %d (block %d, kquad %d, group %d, row %d): %#02x, want %#02x",
								name, i, i/1024, i%1024/128, i%128/64, i%64/4, got[i], want[i])
						}
					}
					for i := range wa {
						if ga[i] != wa[i] {
							t.Fatalf("%s: scale area %d byte %d (vector %d, group %d, row %d): %#02x, want %#02x",
								name, i/kArea(typ), i%kArea(typ), i%kArea(typ)/128, i%128/64, i%64/4, ga[i], wa[i])
						}
					}
				}
			}
		}
	}
}
