package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/planar"
)

// TestDotsAxpysF16 checks the batched attention operations against the
// one-row ones of the scalar path, bit for bit: DotsF16 against DotF16 row
// by row, AxpysF16 against AxpyF16 row after row, for head sizes that are
// and are not multiples of 8, 16, 32 or 64 (the AVX-512 kernels' steps),
// one to 37 rows (the AVX-512 dots take four a step), strides longer than
// a row, f16 values of every exponent (Inf and NaN included), and that
// nothing past out or y is written; with the scalar kernels, the best set
// this CPU runs (SetSIMD), and every set of testLevels (the AVX-512 one
// under x86sim on a CPU without it).
func TestDotsAxpysF16(t *testing.T) { atEveryLevel(t, checkDotsAxpysF16) }

// atEveryLevel runs check with SetSIMD's two paths, then in a subtest for
// each set of testLevels with that set (on) and the scalar kernels (off).
func atEveryLevel(t *testing.T, check func(t *testing.T, withSIMD func(bool, func()))) {
	check(t, func(on bool, f func()) { withSIMD(on, f) })
	forLevels(t, func(t *testing.T, k *kernels) {
		check(t, func(on bool, f func()) {
			if on {
				withKernels(k, f)
			} else {
				withKernels(nil, f)
			}
		})
	})
}

// randF16Rows returns n f16 values of every exponent, Inf and NaN
// included, three in four with the top exponent bit clear (finite,
// moderate values).
func randF16Rows(rng *rand.Rand, n int) []uint16 {
	b := make([]uint16, n)
	for i := range b {
		b[i] = uint16(rng.Uint32())
		if rng.IntN(4) > 0 {
			b[i] &^= 0x4000
		}
	}
	return b
}

func checkDotsAxpysF16(t *testing.T, withSIMD func(bool, func())) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, n := range []int{8, 13, 16, 24, 40, 64, 72, 80, 96, 120, 128, 136, 192, 248, 256} {
		for _, rows := range []int{1, 3, 4, 5, 8, 37} {
			stride := n + 8*rng.IntN(4)
			b := randF16Rows(rng, (rows-1)*stride+n)
			a, y0 := make([]float32, n), make([]float32, n)
			for i := range a {
				a[i], y0[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			coef := make([]float32, rows)
			for i := range coef {
				coef[i] = float32(rng.Float64())
			}
			name := fmt.Sprintf("n %d rows %d stride %d", n, rows, stride)

			want := make([]float32, rows)
			wantY := append([]float32(nil), y0...)
			withSIMD(false, func() {
				for r := range want {
					want[r] = DotF16(a, b[r*stride:])
				}
				for r, c := range coef {
					AxpyF16(c, b[r*stride:r*stride+n], wantY)
				}
			})
			for _, on := range []bool{false, true} {
				got, ok := guarded(make([]float32, rows))
				gotY, okY := guarded(y0)
				withSIMD(on, func() {
					DotsF16(a, b, stride, got)
					AxpysF16(coef, b, stride, gotY)
				})
				if !ok() || !okY() {
					t.Fatalf("%s %s: wrote past out or y", name, modeName(on))
				}
				if i := sameSlices(got, want); i >= 0 {
					t.Fatalf("%s %s: DotsF16 row %d: %v, DotF16 %v", name, modeName(on), i, got[i], want[i])
				}
				if i := sameSlices(gotY, wantY); i >= 0 {
					t.Fatalf("%s %s: AxpysF16 y[%d]: %v, AxpyF16 row by row %v", name, modeName(on), i, gotY[i], wantY[i])
				}
			}
		}
	}
}

// TestDotsAxpysF16Heads checks the grouped-query forms against the
// one-row operations of the scalar path, bit for bit: DotsF16Heads against
// DotF16 head by head and row by row, AxpysF16Heads against AxpyF16 head by
// head, row after row, for one to nine heads (the AVX-512 kernels take two
// to four a call, the AVX2 ones two or three, the rest one at a time), head
// sizes that are and are not multiples of 8, 16, 32 or 64, one to 37 rows,
// strides longer than a row, outputs and weights spaced wider than a
// head's, and f16 values of every exponent; nothing past the outputs nor
// between the heads' is written; with the scalar kernels, the best set
// this CPU runs, and every set of testLevels (the AVX-512 one under x86sim
// on a CPU without it).
func TestDotsAxpysF16Heads(t *testing.T) { atEveryLevel(t, checkDotsAxpysF16Heads) }

func checkDotsAxpysF16Heads(t *testing.T, withSIMD func(bool, func())) {
	rng := rand.New(rand.NewPCG(85, 86))
	const sentinel = -54321
	for heads := 1; heads <= 9; heads++ {
		for _, n := range []int{8, 24, 40, 64, 72, 128, 136, 256} {
			for _, rows := range []int{1, 3, 4, 37} {
				stride := n + 8*rng.IntN(4)
				b := randF16Rows(rng, (rows-1)*stride+n)
				a, y0 := make([]float32, heads*n), make([]float32, heads*n)
				for i := range a {
					a[i], y0[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
				}
				ostride := rows + rng.IntN(3)
				coef := make([]float32, (heads-1)*ostride+rows)
				for i := range coef {
					coef[i] = float32(rng.Float64())
				}
				name := fmt.Sprintf("heads %d n %d rows %d stride %d", heads, n, rows, stride)

				want := make([]float32, (heads-1)*ostride+rows)
				for i := range want {
					want[i] = sentinel
				}
				wantY := append([]float32(nil), y0...)
				withSIMD(false, func() {
					for j := 0; j < heads; j++ {
						for r := 0; r < rows; r++ {
							want[j*ostride+r] = DotF16(a[j*n:(j+1)*n], b[r*stride:])
						}
						for r := 0; r < rows; r++ {
							AxpyF16(coef[j*ostride+r], b[r*stride:r*stride+n], wantY[j*n:(j+1)*n])
						}
					}
				})
				for _, on := range []bool{false, true} {
					init := make([]float32, len(want))
					for i := range init {
						init[i] = sentinel
					}
					got, ok := guarded(init)
					gotY, okY := guarded(y0)
					withSIMD(on, func() {
						DotsF16Heads(a, heads, b, stride, got, ostride, rows)
						AxpysF16Heads(coef, ostride, b, stride, gotY, heads, rows)
					})
					if !ok() || !okY() {
						t.Fatalf("%s %s: wrote past out or y", name, modeName(on))
					}
					if i := sameSlices(got, want); i >= 0 {
						t.Fatalf("%s %s: DotsF16Heads out[%d] (head %d, row %d): %v, DotF16 %v", name, modeName(on), i, i/ostride, i%ostride, got[i], want[i])
					}
					if i := sameSlices(gotY, wantY); i >= 0 {
						t.Fatalf("%s %s: AxpysF16Heads y[%d] (head %d): %v, AxpyF16 row by row %v", name, modeName(on), i, i/n, gotY[i], wantY[i])
					}
				}
			}
		}
	}
}

// TestFlashF16 checks flash attention's operations against their Go
// specifications bit for bit: DotsF16FMA against dotF16FMAGo (and its
// float64 tail) row by row, MadF16 against madF16Go, for head sizes that
// are and are not multiples of 8 and 64, one to 37 rows, strides longer
// than a row, f16 values of every exponent (Inf and NaN included) and
// weights of every size; nothing past out or y is written; with the
// scalar kernels, the best set this CPU runs, and every set of testLevels.
func TestFlashF16(t *testing.T) { atEveryLevel(t, checkFlashF16) }

func checkFlashF16(t *testing.T, withSIMD func(bool, func())) {
	rng := rand.New(rand.NewPCG(87, 88))
	// A fused and an unfused multiply-add round to different f16 in about
	// one case of 100,000 here: a million of them, so that a kernel that
	// does not fuse fails.
	const chunk = 4096
	x, y0 := randF16Rows(rng, 256*chunk), make([]float32, 256*chunk)
	vs := make([]float32, 256)
	for i := range y0 {
		y0[i] = f16(planar.F32ToF16(float32(rng.NormFloat64() * 4)))
	}
	for c := range vs {
		vs[c] = float32(math.Ldexp(rng.Float64(), rng.IntN(40)-30))
	}
	want := append([]float32(nil), y0...)
	for c, v := range vs {
		madF16Go(want[c*chunk:(c+1)*chunk], x[c*chunk:], v)
	}
	for _, on := range []bool{false, true} {
		got := append([]float32(nil), y0...)
		withSIMD(on, func() {
			for c, v := range vs {
				MadF16(got[c*chunk:(c+1)*chunk], x[c*chunk:(c+1)*chunk], v)
			}
		})
		if i := sameSlices(got, want); i >= 0 {
			t.Fatalf("%s: MadF16 of %d values, y[%d]: %v, madF16Go %v", modeName(on), len(got), i, got[i], want[i])
		}
	}
	for _, n := range []int{8, 13, 40, 64, 72, 96, 128, 136, 192, 256} {
		for _, rows := range []int{1, 3, 37} {
			stride := n + 8*rng.IntN(4)
			k := randF16Rows(rng, (rows-1)*stride+n)
			q, y0 := make([]float32, n), make([]float32, n)
			for i := range q {
				q[i] = f16(planar.F32ToF16(float32(rng.NormFloat64())))
				y0[i] = f16(planar.F32ToF16(float32(rng.NormFloat64() * 4)))
			}
			v := float32(math.Ldexp(rng.Float64(), rng.IntN(40)-30))
			name := fmt.Sprintf("n %d rows %d stride %d", n, rows, stride)
			want := make([]float32, rows)
			wantY := append([]float32(nil), y0...)
			np := n &^ 63
			for r := range want {
				sum := 0.0
				if np > 0 {
					sum = float64(dotF16FMAGo(q[:np], k[r*stride:r*stride+np]))
				}
				want[r] = dotF16FMATail(sum, q[np:], k[r*stride+np:r*stride+n])
			}
			madF16Go(wantY, k[(rows-1)*stride:], v)
			for _, on := range []bool{false, true} {
				got, ok := guarded(make([]float32, rows))
				gotY, okY := guarded(y0)
				withSIMD(on, func() {
					DotsF16FMA(q, k, stride, got)
					MadF16(gotY, k[(rows-1)*stride:(rows-1)*stride+n], v)
				})
				if !ok() || !okY() {
					t.Fatalf("%s %s: wrote past out or y", name, modeName(on))
				}
				if i := sameSlices(got, want); i >= 0 {
					t.Fatalf("%s %s: DotsF16FMA row %d: %v, dotF16FMAGo %v", name, modeName(on), i, got[i], want[i])
				}
				if i := sameSlices(gotY, wantY); i >= 0 {
					t.Fatalf("%s %s: MadF16 y[%d]: %v, madF16Go %v", name, modeName(on), i, gotY[i], wantY[i])
				}
			}
		}
	}
}

// TestToF16 checks ToF16 against planar.F32ToF16 (and RoundF16 against
// it and back) bit for bit on both
// paths: every float32 whose low 13 bits are 0, 0x1000, 0x0fff or 0x1fff
// (every exponent and sign, the rounding ties and their neighbours:
// subnormal, normal, overflowing to Inf), every NaN class, and random
// values, with lengths not a multiple of 8.
func TestToF16(t *testing.T) {
	var x []float32
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range []uint32{0, 0x1000, 0x0fff, 0x1fff} {
			x = append(x, math.Float32frombits(hi<<13|lo))
		}
	}
	rng := rand.New(rand.NewPCG(83, 84))
	for range 1 << 16 {
		x = append(x, math.Float32frombits(rng.Uint32()))
	}
	x = append(x, 1, 2, 3) // a tail
	want := make([]uint16, len(x))
	for i, v := range x {
		want[i] = planar.F32ToF16(v)
	}
	for _, on := range []bool{false, true} {
		got := make([]uint16, len(x))
		withSIMD(on, func() { ToF16(got, x) })
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: ToF16(%#08x) = %#04x, want %#04x", modeName(on), math.Float32bits(x[i]), got[i], want[i])
			}
		}
		r := append([]float32(nil), x...)
		withSIMD(on, func() { RoundF16(r) })
		for i := range r {
			if w := F16ToF32(want[i]); math.Float32bits(r[i]) != math.Float32bits(w) {
				t.Fatalf("%s: RoundF16(%#08x) = %#08x, want %#08x", modeName(on), math.Float32bits(x[i]), math.Float32bits(r[i]), math.Float32bits(w))
			}
		}
	}
}

// BenchmarkDotsF16Cache times one query's scores over 1,024 rows of one
// head of an f16 cache (head size 64, two KV heads a slot), from the
// caches (hot) and from memory (cold: a cycle over 48 such caches, the K
// and V of 24 layers, with 64 MiB written between cycles), in ns a row.
func BenchmarkDotsF16Cache(b *testing.B) {
	rng := rand.New(rand.NewPCG(91, 92))
	const hd, rows, stride = 64, 1024, 128
	q := make([]float32, hd)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	cs := f16Caches(rng, rows*stride)
	sc := make([]float32, rows)
	hotCold(b, "", cs, rows, "ns/row", func(c []uint16) { DotsF16(q, c, stride, sc) })
}

// f16Caches returns the 48 f16 caches of n random values each that the
// attention benchmarks cycle over (the K and V of 24 layers).
func f16Caches(rng *rand.Rand, n int) [][]uint16 {
	cs := make([][]uint16, 48)
	for c := range cs {
		cs[c] = make([]uint16, n)
		for i := range cs[c] {
			cs[c][i] = planar.F32ToF16(float32(rng.NormFloat64()))
		}
	}
	return cs
}

// hotCold runs sub-benchmarks name+"hot", run on the first of cs (from
// the caches), and name+"cold", run on each of cs in turn with 64 MiB
// written after every cycle (from memory), each reporting its time per
// op divided by per, in unit.
func hotCold(b *testing.B, name string, cs [][]uint16, per float64, unit string, run func(c []uint16)) {
	flush := make([]byte, 64<<20)
	b.Run(name+"hot", func(b *testing.B) {
		for b.Loop() {
			run(cs[0])
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/per, unit)
	})
	b.Run(name+"cold", func(b *testing.B) {
		i := 0
		for b.Loop() {
			run(cs[i%len(cs)])
			if i++; i%len(cs) == 0 {
				b.StopTimer()
				for j := 0; j < len(flush); j += 64 {
					flush[j]++
				}
				b.StartTimer()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/per, unit)
	})
}

// BenchmarkF16Heads times the scores and the weighted sums of the seven
// query heads that share a KV head (the 0.5B shape: head size 64, two KV
// heads a slot) over 1,024 rows of an f16 cache, the heads one at a time
// (DotsF16, AxpysF16) and together (DotsF16Heads, AxpysF16Heads), from
// the caches (hot) and from memory (cold: a cycle over 48 such caches with
// 64 MiB written between cycles), in ns a row and head.
func BenchmarkF16Heads(b *testing.B) {
	rng := rand.New(rand.NewPCG(93, 94))
	const hd, rows, stride, heads = 64, 1024, 128, 7
	q := make([]float32, heads*hd)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	cs := f16Caches(rng, rows*stride)
	sc := make([]float32, heads*rows)
	for i := range sc {
		sc[i] = float32(rng.Float64()) / rows
	}
	y := make([]float32, heads*hd)
	hotCold(b, "dots-one-", cs, rows*heads, "ns/row-head", func(c []uint16) {
		for h := 0; h < heads; h++ {
			DotsF16(q[h*hd:(h+1)*hd], c, stride, sc[h*rows:(h+1)*rows])
		}
	})
	hotCold(b, "dots-grouped-", cs, rows*heads, "ns/row-head", func(c []uint16) { DotsF16Heads(q, heads, c, stride, sc, rows, rows) })
	hotCold(b, "axpys-one-", cs, rows*heads, "ns/row-head", func(c []uint16) {
		for h := 0; h < heads; h++ {
			AxpysF16(sc[h*rows:(h+1)*rows], c, stride, y[h*hd:(h+1)*hd])
		}
	})
	hotCold(b, "axpys-grouped-", cs, rows*heads, "ns/row-head", func(c []uint16) { AxpysF16Heads(sc, rows, c, stride, y, heads, rows) })
}
