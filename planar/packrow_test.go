package planar

import (
	"math/rand/v2"
	"testing"
)

// kernelSets lists the useAVX2 settings this build and CPU can run: false
// (the pure-Go kernels) and, where the assembly kernels run, true.
var kernelSets = func() []bool {
	if useAVX2 {
		return []bool{false, true}
	}
	return []bool{false}
}()

// setAVX2 sets useAVX2 for the rest of the test.
func setAVX2(t testing.TB, on bool) {
	old := useAVX2
	useAVX2 = on
	t.Cleanup(func() { useAVX2 = old })
}

// TestAVX2MatchesGo compares the AVX2 paths of the nibble-shuffle kernels
// (Q4_0, Q5_0, Q4_K, Q5_K) with their pure-Go kernels: random blocks and
// blocks whose bytes run through every value, 1 to 9 blocks a row, 1 to 5
// rows, row strides of whole tiles and odd byte counts past the tile, a
// source with bytes past the last tile, planes one row short, and guard
// bands after every plane, which both must leave alone.
func TestAVX2MatchesGo(t *testing.T) {
	if len(kernelSets) < 2 {
		t.Skip("no AVX2 kernels in this build or on this CPU (noasm, another architecture, or no AVX2)")
	}
	setAVX2(t, true)
	rng := rand.New(rand.NewPCG(14, 4))
	const guard = 40
	cases := 0
	for _, typ := range []Type{Q4_0, Q5_0, Q4_K, Q5_K} {
		k := codecOf(typ).pack
		f := formats[typ]
		bs := typ.BlockSize()
		for nb := 1; nb <= 9; nb++ {
			for n := 1; n <= 5; n++ {
				for iter := 0; iter < 12; iter++ {
					tile := typ.RowBytes(nb * bs)
					stride := tile*(1+iter%3) + []int{0, 1, 7, 33}[iter%4]
					src := randomSource(rng, (n-1)*stride+tile+iter%5)
					if iter%2 == 1 {
						off := rng.IntN(256)
						for i := range src {
							src[i] = byte(i + off)
						}
					}
					var pg, pa rowPlanes
					var bg, ba [4][]byte
					for j, pl := range f.Planes {
						m := n * pl.PerRow(nb*bs)
						if iter%6 == 5 && j == iter/6%len(f.Planes) {
							m -= pl.PerRow(nb * bs)
						}
						bg[j] = randomSource(rng, m+guard)
						ba[j] = append([]byte(nil), bg[j]...)
						pg[j], pa[j] = bg[j][:m:m], ba[j][:m:m]
					}
					useAVX2 = false
					k(src, stride, tile, pg)
					useAVX2 = true
					k(src, stride, tile, pa)
					cases++
					for j, pl := range f.Planes {
						if i := firstDiff(ba[j], bg[j]); i >= 0 {
							t.Fatalf("%s, %d rows of %d blocks, stride %d, source %d bytes: plane %s byte %d (of %d, then %d guard bytes): AVX2 %#02x, Go %#02x",
								typ, n, nb, stride, len(src), pl.Name, i, len(pg[j]), guard, ba[j][i], bg[j][i])
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases equal", cases)
}
