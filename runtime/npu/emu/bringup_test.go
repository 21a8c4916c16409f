package emu

import (
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	"github.com/xdna-go/xdna/target"
)

// TestBringUp runs the bring-up design (design.NewBringUp: one column, one
// core, Q8_0, K-tile 128; the first thing kernels/README.md has built on a
// Ryzen AI laptop) on the array with the Go model of the kernel, against
// dispatches the host stages from the same design, and compares the
// outputs with cpu.MatMat bit for bit. The shapes straddle the row block
// (32 rows on XDNA1, 64 on XDNA2: the last block is short) and take three
// K-tiles, with one token (decode) and with three; the same array runs the
// dispatches back to back, as a context does.
func TestBringUp(t *testing.T) {
	for _, tg := range target.All {
		d, err := design.NewBringUp(tg)
		if err != nil {
			t.Fatal(err)
		}
		if d.Name() != design.SlotName(tg.Name, planar.Q8_0, 128)+"-bringup" || d.Columns != 1 || d.Cores() != 1 {
			t.Fatalf("%s: design %s, %d columns, %d cores", tg.Name, d.Name(), d.Columns, d.Cores())
		}
		cores := 0
		for _, tl := range d.Tiles {
			if tl.Kind == target.Core {
				cores++
			}
		}
		if cores != 1 || len(d.Tiles) != 3 {
			t.Fatalf("%s: %d tiles, %d cores; want shim, memtile and one core", tg.Name, len(d.Tiles), cores)
		}
		k, err := gemv.NewModel(d.Type, d.KTile, d.Rows)
		if err != nil {
			t.Fatal(err)
		}
		arr, err := NewArray(d, k)
		if err != nil {
			t.Fatalf("%s: %v", tg.Name, err)
		}
		rng := rand.New(rand.NewPCG(19, uint64(tg.Gen)))
		g := planar.Geometry{Type: planar.Q8_0, N: d.BlockRows() + 11, K: 3 * 128, Columns: 1, KTile: 128}
		blob := randomMatrix(t, rng, g)
		for _, tokens := range []int{1, 3} {
			x := make([]float32, tokens*g.K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			p := hostDispatch(d, g, blob, x, tokens)
			w, _, err := p.gv.Build()
			if err != nil {
				t.Fatal(err)
			}
			out := make([]byte, p.outLen)
			st, err := arr.Execute(txn.Bytes(w), [][]byte{p.w, p.act, out}, len(w))
			if err != nil {
				t.Fatalf("%s, %d tokens: %v", d.Name(), tokens, err)
			}
			want := make([]float32, tokens*g.N)
			cpu.MatMat(&cpu.Matrix{G: g, Blob: blob}, x, want, tokens, nil)
			y := p.gather(d, g, out, tokens)
			if !same(y, want) {
				t.Fatalf("%s, %d tokens: outputs differ from cpu.MatMat (y[0] %g, want %g)", d.Name(), tokens, y[0], want[0])
			}
			// The records are replayed once per row block after the header.
			acts := d.RecordBytes() * (1 + p.h.Blocks*g.Tiles()*tokens)
			if st.WeightBytes != int64(len(p.w)) || st.ActBytes != int64(acts) || st.OutBytes != int64(p.outLen) {
				t.Errorf("%s, %d tokens: moved weights %d of %d, acts %d of %d, outputs %d of %d bytes", d.Name(), tokens,
					st.WeightBytes, len(p.w), st.ActBytes, acts, st.OutBytes, p.outLen)
			}
			t.Logf("%s: %d x %d, %d tokens, %d row blocks: outputs equal cpu.MatMat; %d weight, %d activation, %d output bytes",
				d.Name(), g.N, g.K, tokens, p.h.Blocks, st.WeightBytes, st.ActBytes, st.OutBytes)
		}
		as := arr.Stats()
		// One core: per dispatch, per row block and K-tile, one call per token.
		if want := int64(2 * 3 * (1 + 3)); as.Calls != want+1 { // + xdna_gemv_init at load
			t.Errorf("%s: %d kernel calls, want %d", d.Name(), as.Calls, want+1)
		}
		t.Logf("%s: %s; %d kernel calls, lock operations %v", d.Name(), d.UsageString(), as.Calls, as.LockOps)
	}
}
