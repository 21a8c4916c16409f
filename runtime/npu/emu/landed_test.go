package emu

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	"github.com/xdna-go/xdna/target"
)

// The landed dataflow's defects (issue 19's review of kernels/common/
// design.py, the IRON design since removed, and the host of that time),
// each reproduced by executing a
// design that has it against what the host sends: the emulator refuses,
// deadlocks naming what waits, or the outputs differ from the CPU's. The
// design-level ones (three input channels per core, three MM2S channels on
// a shim, join offsets in bytes) are design.TestValidateRefuses. With the
// defect undone (the design as design.New makes it) every case passes.

// landedCase runs one dispatch of g (tokens tokens) staged by the host for
// design.New's design, on the array of the same design changed by mut.
func landedCase(t *testing.T, g planar.Geometry, tokens int, mut func(d *design.Design)) (y, want []float32, err error) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(g.N), uint64(tokens)))
	blob := randomMatrix(t, rng, g)
	host, e := design.New(target.XDNA1, g.Type, g.KTile)
	if e != nil {
		t.Fatal(e)
	}
	dev, _ := design.New(target.XDNA1, g.Type, g.KTile)
	if mut != nil {
		mut(dev)
	}
	k, _ := gemv.NewModel(dev.Type, dev.KTile, dev.Rows)
	arr, e := NewArray(dev, k)
	if e != nil {
		t.Fatal(e)
	}
	x := make([]float32, tokens*g.K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	p := hostDispatch(host, g, blob, x, tokens)
	w, _, e := p.gv.Build()
	if e != nil {
		t.Fatal(e)
	}
	out := make([]byte, p.outLen)
	_, err = arr.Execute(txn.Bytes(w), [][]byte{p.w, p.act, out}, len(w))
	want = make([]float32, tokens*g.N)
	cpu.MatMat(&cpu.Matrix{G: g, Blob: blob}, x, want, tokens, nil)
	return p.gather(host, g, out, tokens), want, err
}

// same reports whether a and b are equal bit for bit (random scales may
// make NaNs, which are equal to themselves here).
func same(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestLandedSixteenRecordObjects: design.py's activation object held 16
// records (MAX_TOKENS) of a K-tile while the host sent tiles*tokens records:
// at decode (one token) the first object swallows the header and the
// records and the cores wait for ever for the rest of it.
func TestLandedSixteenRecordObjects(t *testing.T) {
	g := planar.Geometry{Type: planar.Q8_0, N: 256, K: 512, Columns: 2, KTile: 256}
	sixteen := func(d *design.Design) {
		n := 16 * d.RecordBytes()
		for _, tl := range d.Tiles {
			if tl.Kind != target.Core {
				continue
			}
			a := tl.Objects[1] // the activation objects
			for _, b := range a.Bufs {
				b.Size = n
			}
			next := tl.Stack // lay the buffers out again
			for _, b := range tl.Buffers {
				b.Addr = next
				next = (next + b.Size + 63) &^ 63
			}
			for _, ch := range tl.Channels {
				for _, bd := range ch.BDs {
					if bd.Buf == a.Bufs[0] || bd.Buf == a.Bufs[1] {
						bd.Len = n
					}
				}
			}
		}
		for _, f := range d.Funcs {
			for i := range f.Params {
				if f.Params[i].Name == "rec" {
					f.Params[i].Elems = n / 4
				}
			}
		}
	}
	y, want, err := landedCase(t, g, 1, nil)
	if err != nil || !same(y, want) {
		t.Fatalf("one-record objects: %v, outputs equal the CPU's: %v", err, same(y, want))
	}
	_, _, err = landedCase(t, g, 1, sixteen)
	// The header and both records (3 of 320 bytes) sit in the first
	// 16-record object; the core waits for it to fill, the DMA for bytes.
	if !errors.Is(err, ErrDeadlock) || !strings.Contains(err.Error(), "core (0,2) S2MM 0 BD 2 (a0_2_0): 960 of 5120 bytes moved") ||
		!strings.Contains(err.Error(), "core (0,2): at the acquire of a0_2 (lock 3 (a0_2_full) is 0)") {
		t.Fatalf("16-record objects at decode: %v, want a deadlock naming the half-filled activation BD and the lock the core waits on", err)
	}
	t.Logf("16-record objects, one token: %v", err.Error()[:strings.Index(err.Error(), "\n")])
}

// TestLandedRowsPerColumn: the landed core never read its column's rows
// (h[8+c]) and ran every row chunk of the dispatch: a column with fewer
// rows than the widest waits for ever for weights the host never sends.
func TestLandedRowsPerColumn(t *testing.T) {
	// 513 rows on 4 columns: 129, 129, 129 and 126: 2 row blocks (of 128)
	// for the first three, 1 for the last.
	g := planar.Geometry{Type: planar.Q4_0, N: 513, K: 256, Columns: 4, KTile: 256}
	ignoreColumn := func(d *design.Design) {
		for _, tl := range d.Tiles {
			if tl.Program == nil {
				continue
			}
			design.Walk(tl.Program.Body, func(s design.Stmt) {
				if st, ok := s.(*design.Set); ok {
					if l, ok := st.X.(*design.Load); ok && l.Word >= design.HdrColBlock && l.Word < design.HdrColRows {
						l.Word = design.HdrBlocks // every column runs the dispatch's row blocks
					}
				}
			})
		}
	}
	y, want, err := landedCase(t, g, 3, nil)
	if err != nil || !same(y, want) {
		t.Fatalf("the design: %v, outputs equal the CPU's: %v", err, same(y, want))
	}
	_, _, err = landedCase(t, g, 3, ignoreColumn)
	if !errors.Is(err, ErrDeadlock) || !strings.Contains(err.Error(), "core (3,2): at the acquire of w3_2") {
		t.Fatalf("cores ignoring their column's rows: %v, want a deadlock naming column 3's cores waiting for weights", err)
	}
}

// TestLandedOutputOrder: the landed design drained each core's outputs
// core by core ([core][tokens][rows]) while the host read them token by
// token ([token][rows]): the run completes and every output is in the
// wrong place.
func TestLandedOutputOrder(t *testing.T) {
	g := planar.Geometry{Type: planar.Q4_K, N: 300, K: 512, Columns: 2, KTile: 256}
	coreMajor := func(d *design.Design) {
		for c := 0; c < d.Columns; c++ {
			mem := d.Tile(c, target.MemRow)
			out := mem.Channels[len(mem.Channels)-1] // MM2S 5: the joined outputs to the shim
			// ping of core 0, 1, 2, 3, then pong: reorder to core 0 ping,
			// pong, core 1 ping, pong, ...: two tokens of a core in a row.
			b := out.BDs
			out.BDs = []*design.BD{b[0], b[4], b[1], b[5], b[2], b[6], b[3], b[7]}
		}
	}
	y, want, err := landedCase(t, g, 2, nil)
	if err != nil || !same(y, want) {
		t.Fatalf("the design: %v, outputs equal the CPU's: %v", err, same(y, want))
	}
	y, want, err = landedCase(t, g, 2, coreMajor)
	if err != nil {
		t.Fatalf("core-major drain: %v", err)
	}
	if same(y, want) {
		t.Fatal("core-major drain read token-major: outputs equal the CPU's, the test cannot see the disagreement")
	}
}

// TestLandedWeightCut: the landed host staged a (row chunk, tile) of all
// the chunk's rows plane by plane, row-major, and the design cut it into
// contiguous core-sized objects: each core's "object" held a quarter of
// the codes plane and no scales. Executed: the outputs are wrong.
func TestLandedWeightCut(t *testing.T) {
	g := planar.Geometry{Type: planar.Q4_0, N: 128, K: 256, Columns: 1, KTile: 256}
	rng := rand.New(rand.NewPCG(9, 9))
	blob := randomMatrix(t, rng, g)
	d, _ := design.New(target.XDNA1, g.Type, g.KTile)
	x := make([]float32, g.K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	p := hostDispatch(d, g, blob, x, 1)
	// The landed staging: the group's tile as the planar blob holds it
	// (codes plane, then scales plane), cut by the design into pieces.
	tile := blob[:g.TileBytes(g.N)]
	clear(p.w)
	copy(p.w, tile)
	k, _ := gemv.NewModel(d.Type, d.KTile, d.Rows)
	arr, err := NewArray(d, k)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _ := p.gv.Build()
	out := make([]byte, p.outLen)
	if _, err := arr.Execute(txn.Bytes(w), [][]byte{p.w, p.act, out}, len(w)); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, g.N)
	cpu.MatVec(&cpu.Matrix{G: g, Blob: blob}, x, want, nil)
	if same(p.gather(d, g, out, 1), want) {
		t.Fatal("row-major tiles cut into pieces gave the CPU's outputs")
	}
}
