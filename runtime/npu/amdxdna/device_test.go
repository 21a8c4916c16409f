package amdxdna_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

func TestOpenClose(t *testing.T) {
	for _, c := range []struct {
		cfg     amdxdnatest.Config
		columns int
	}{{amdxdnatest.XDNA1(), 4}, {amdxdnatest.XDNA2(), 8}} {
		d, _ := open(t, c.cfg)
		if in := d.Info(); in.Columns != c.columns || in.MaxInFlight != 4 {
			t.Errorf("%+v: info %+v", c.cfg, in)
		}
	}
}

// TestGEMV runs matrices through the Backend on the Device over the fake
// driver and on the emulator: the outputs are identical (the same kernel
// model over the same staged bytes), and close to the CPU's.
func TestGEMV(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		cfg              amdxdnatest.Config
		ecfg             emu.Config
		typ              planar.Type
		n, k, kTile, col int
		tokens           int
	}{
		{amdxdnatest.XDNA2(), emu.XDNA2(), planar.Q8_0, 301, 288, 96, 8, 1},
		{amdxdnatest.XDNA1(), emu.XDNA1(), planar.Q4_0, 70, 160, 32, 4, 3},
		{amdxdnatest.XDNA2(), emu.XDNA2(), planar.Q8_0, 1000, 2048, 256, 8, 5}, // several ring chunks
	} {
		m := randomMatrix(t, rng, c.typ, c.n, c.k, c.kTile, c.col)
		d, k := open(t, c.cfg)
		ed := emu.New(c.ecfg)
		defer ed.Close()
		bd, be, bc := backend(t, d, m, nil), backend(t, ed, m, nil), backend(t, nil, m, nil)
		x := randomX(rng, c.tokens*c.k)
		yd, ye, yc := make([]float32, c.tokens*c.n), make([]float32, c.tokens*c.n), make([]float32, c.tokens*c.n)
		bd.MatMat("w", m, x, yd, c.tokens)
		be.MatMat("w", m, x, ye, c.tokens)
		bc.MatMat("w", m, x, yc, c.tokens)
		if s := bd.Stats(); s.NPUCalls != 1 || s.Faults != 0 {
			t.Fatalf("%v: stats %+v, notes %q", c.typ, s, bd.Notes())
		}
		if st := k.Stats(); st.Commands == 0 || st.Failed != 0 {
			t.Fatalf("fake: %+v %q", st, k.Failures())
		}
		if !slices.Equal(yd, ye) {
			t.Errorf("%v %dx%d: amdxdna output differs from the emulator's", c.typ, c.n, c.k)
		}
		if cs := cosine(yd, yc); cs < 0.9999 {
			t.Errorf("%v %dx%d: cosine against the CPU %.6f", c.typ, c.n, c.k, cs)
		}
		t.Logf("%v %dx%d x%d on %d columns: %d submissions, %d commands, cosine vs CPU %.7f",
			c.typ, c.n, c.k, c.tokens, c.col, k.Stats().Submissions, k.Stats().Commands, cosine(yd, yc))
	}
}
