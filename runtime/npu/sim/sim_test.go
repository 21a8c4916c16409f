package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/layout/gguftest"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
)

// needKernels skips a test that runs the compiled kernels when the build has none,
// saying why (a build without cgo or a C++ compiler).
func needKernels(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("kernels not compiled in: %v", err)
	}
}

// matrix is a random packed matrix with its GGUF source.
type matrix struct {
	g    planar.Geometry
	blob []byte
}

func randomMatrix(t *testing.T, typ planar.Type, n, k, cols, kTile int, seed uint64) matrix {
	t.Helper()
	g := planar.Geometry{Type: typ, N: n, K: k, Columns: cols, KTile: kTile}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	var src bytes.Buffer
	if err := gguftest.RandomBlocks(&src, typ, int64(n)*int64(k), rand.New(rand.NewPCG(seed, 7))); err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src.Bytes(), blob); err != nil {
		t.Fatal(err)
	}
	return matrix{g, blob}
}

// dispatch is the streams of one dispatch over a whole matrix, built per the device
// contract (runtime/npu/params.go) the way the host stages them: the header object
// and the activation records once per row chunk (what the broadcast DMA delivers),
// and each column's weight stream reordered by (row chunk, K-tile).
type dispatch struct {
	p       npu.Params
	acts    []byte
	weights [][]byte
}

func buildDispatch(m matrix, x []float32, tokens int) dispatch {
	g := m.g
	rows := make([]int, g.Columns)
	for c := range rows {
		_, rows[c] = g.GroupRows(c)
	}
	p := npu.NewParams(g.Type, g.KTile, g.Tiles(), tokens, rows)
	stride := p.RecordBytes()
	recs := make([]byte, p.ActBytes())
	for i := 0; i < p.Tiles; i++ {
		for b := 0; b < tokens; b++ {
			rec := recs[(i*tokens+b)*stride : (i*tokens+b+1)*stride]
			npu.PutActs(g.Type, x[b*g.K+i*g.KTile:b*g.K+(i+1)*g.KTile], 1, g.KTile, rec)
		}
	}
	acts := make([]byte, npu.ParamsBytes)
	p.Put(acts)
	for r := 0; r < p.RowChunks; r++ {
		acts = append(acts, recs...)
	}
	d := dispatch{p: p, acts: acts}
	planes := g.Format().Planes
	for c := 0; c < g.Columns; c++ {
		var w []byte
		for r := 0; r < p.RowChunks; r++ {
			n := p.ChunkRows(rows[c], r)
			if n == 0 {
				continue
			}
			for i := 0; i < p.Tiles; i++ {
				obj := make([]byte, npu.TileBytes(g.Type, g.KTile, n))
				o := 0
				for q, pl := range planes {
					off, per := g.PlaneOffset(c, i, q)
					copy(obj[o:], m.blob[off+r*p.RowChunk*per:off+(r*p.RowChunk+n)*per])
					o += align64(n * pl.PerRow(g.KTile))
				}
				w = append(w, obj...)
			}
		}
		d.weights = append(d.weights, w)
	}
	return d
}

// run executes every column with kernel k and returns y [tokens][N].
func (d *dispatch) run(t *testing.T, k *Column, g planar.Geometry) []float32 {
	t.Helper()
	tok := d.p.Tokens
	y := make([]float32, tok*g.N)
	for c := 0; c < g.Columns; c++ {
		first, rows := g.GroupRows(c)
		out := make([]byte, 4*tok*rows+64) // guard band past the output
		for i := range out {
			out[i] = 0xA5
		}
		got, err := k.RunColumn(c, d.weights[c], d.acts, out[:4*tok*rows])
		if err != nil {
			t.Fatalf("column %d: %v", c, err)
		}
		if got != 4*tok*rows {
			t.Fatalf("column %d: produced %d bytes, want %d", c, got, 4*tok*rows)
		}
		for _, v := range out[4*tok*rows:] {
			if v != 0xA5 {
				t.Fatalf("column %d wrote past its output", c)
			}
		}
		o := 0
		for r := 0; r < d.p.RowChunks; r++ {
			n := d.p.ChunkRows(rows, r)
			for b := 0; b < tok; b++ {
				for i := 0; i < n; i++ {
					y[b*g.N+first+r*d.p.RowChunk+i] = math.Float32frombits(binary.LittleEndian.Uint32(out[o:]))
					o += 4
				}
			}
		}
	}
	return y
}

// actValues returns the activations the kernel sees, dequantised: code * scale
// (Q8_0 kind: f16 d per 32; Q8_K kind: f32 d per 256).
func actValues(typ planar.Type, x []float32, k int) []float64 {
	l := npu.ActLayoutOf(typ, k)
	rec := make([]byte, l.Stride)
	npu.PutActs(typ, x, 1, k, rec)
	out := make([]float64, k)
	for i := range out {
		q := float64(int8(rec[i]))
		switch l.Kind {
		case npu.ActQ8_0:
			out[i] = q * float64(planar.F16ToF32(binary.LittleEndian.Uint16(rec[l.Scales+2*(i/32):])))
		case npu.ActQ8_K:
			out[i] = q * float64(math.Float32frombits(binary.LittleEndian.Uint32(rec[l.Scales+4*(i/256):])))
		}
	}
	return out
}

// The tolerance of the float64 comparison. The kernels' integer sums are exact; each
// block adds at most a few f32 roundings (the scale product, the rescale, Q4_K/Q5_K's
// subtraction, the block sum), each tile one more (the add into y). So per row
//
//	|y - ref| <= tolUlps * (4*blocks + tiles + 1) * 2^-24 * mag
//
// where ref = sum_k DequantRow(w)_k * xq_k in float64 (xq the quantised activations
// dequantised) and mag = sum_k |w_k * xq_k| (for Q4_K/Q5_K: (|d*sc*q| + |dmin*m|)*|xq|,
// the magnitudes of the two terms that cancel).
const tolUlps = 1.0

func checkAgainstDequant(t *testing.T, m matrix, x []float32, tokens int, y []float32) {
	t.Helper()
	g := m.g
	blocks := g.K / g.Format().Block
	if g.Type == planar.Q4_K || g.Type == planar.Q5_K {
		blocks = g.K / 32
	}
	w := make([]float32, g.K)
	worst := 0.0
	for b := 0; b < tokens; b++ {
		xq := actValues(g.Type, x[b*g.K:(b+1)*g.K], g.K)
		for n := 0; n < g.N; n++ {
			planar.DequantRow(g, m.blob, n, w)
			var ref, mag float64
			for k, v := range w {
				ref += float64(v) * xq[k]
				mag += math.Abs(float64(v) * xq[k])
			}
			if g.Type == planar.Q4_K || g.Type == planar.Q5_K {
				mag = kMag(g, m.blob, n, xq)
			}
			tol := tolUlps * float64(4*blocks+g.Tiles()+1) * 0x1p-24 * mag
			diff := math.Abs(float64(y[b*g.N+n]) - ref)
			if !(diff <= tol) {
				t.Fatalf("%s N=%d K=%d T=%d token %d row %d: got %g, float64 reference %g (diff %g > tolerance %g)",
					g.Type, g.N, g.K, g.KTile, b, n, y[b*g.N+n], ref, diff, tol)
			}
			if tol > 0 {
				worst = max(worst, diff/tol)
			}
		}
	}
	t.Logf("%s N=%d K=%d T=%d tokens=%d: worst |y-ref| = %.3f of the tolerance", g.Type, g.N, g.K, g.KTile, tokens, worst)
}

// kMag is sum_k (|d*sc*q| + |dmin*m|) * |xq_k| for a Q4_K/Q5_K row, from the planes
// (docs/FORMAT.md 4.4, 4.5).
func kMag(g planar.Geometry, blob []byte, row int, xq []float64) float64 {
	c := row / g.RowsPerGroup()
	first, _ := g.GroupRows(c)
	i := row - first
	q5 := g.Type == planar.Q5_K
	var mag float64
	for t := 0; t < g.Tiles(); t++ {
		codeOff, cp := g.PlaneOffset(c, t, 0)
		smP, dmP := 1, 2
		hiOff, hp := 0, 0
		if q5 {
			hiOff, hp = g.PlaneOffset(c, t, 1)
			smP, dmP = 2, 3
		}
		smOff, sp := g.PlaneOffset(c, t, smP)
		dmOff, dp := g.PlaneOffset(c, t, dmP)
		codes := blob[codeOff+i*cp:]
		sm := blob[smOff+i*sp:]
		dm := blob[dmOff+i*dp:]
		for e := 0; e < g.KTile; e++ {
			sb, s := e/256, e%256/32
			q := int(codes[e/2]>>(4*(e%2))) & 15
			if q5 {
				q |= int(blob[hiOff+i*hp+e/8]>>(e%8)&1) << 4
			}
			d := float64(planar.F16ToF32(binary.LittleEndian.Uint16(dm[4*sb:])))
			dmin := float64(planar.F16ToF32(binary.LittleEndian.Uint16(dm[4*sb+2:])))
			a := math.Abs(d*float64(sm[16*sb+s])*float64(q)) + math.Abs(dmin*float64(sm[16*sb+8+s]))
			mag += a * math.Abs(xq[t*g.KTile+e])
		}
	}
	return mag
}

func randomX(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 11))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

var simTypes = []struct {
	typ   planar.Type
	tiles []int
}{
	{planar.Q4_0, []int{128, 256}}, {planar.Q8_0, []int{128, 256}}, {planar.Q4_K, []int{256}},
	{planar.Q6_K, []int{256}}, {planar.Q5_0, []int{128, 256}}, {planar.Q5_K, []int{256}},
}

// TestKernelsAgainstDequant runs every kernel of both targets on random matrices of
// odd shapes (rows straddling cores, row chunks and lanes; K of several tiles) and
// compares with planar.DequantRow in float64 (tolerance: tolUlps above), and with
// cpu.MatMat, which computes the same integers and the same f32 rescales per block.
func TestKernelsAgainstDequant(t *testing.T) {
	needKernels(t)
	// n < 0: -n rows per column plus 5 rows: two row chunks, the second short.
	shapes := []struct{ n, tiles, tokens int }{
		{37, 3, 1},    // fewer rows than cores in some columns, odd rows per core
		{-600, 2, 3},  // two row chunks (the contract's 512 rows), 89 rows in the last
		{1000, 1, 16}, // every token of a dispatch
	}
	for _, target := range []string{"xdna1", "xdna2"} {
		cols := map[string]int{"xdna1": 4, "xdna2": 8}[target]
		for _, st := range simTypes {
			for _, kt := range st.tiles {
				k, err := New(target, st.typ, kt)
				if err != nil {
					t.Fatal(err)
				}
				for si, sh := range shapes {
					t.Run(fmt.Sprintf("%s/%s/k%d/shape%d", target, st.typ, kt, si), func(t *testing.T) {
						n := sh.n
						if n < 0 {
							n = -n*cols + 5
						}
						m := randomMatrix(t, st.typ, n, sh.tiles*kt, cols, kt, uint64(100*si+kt)+uint64(st.typ))
						x := randomX(sh.tokens*m.g.K, uint64(si))
						d := buildDispatch(m, x, sh.tokens)
						y := d.run(t, k, m.g)
						checkAgainstDequant(t, m, x, sh.tokens, y)
						compareCPU(t, m, x, sh.tokens, y)
					})
				}
			}
		}
	}
}

// compareCPU requires every output to equal cpu.MatMat's bit for bit. The kernels
// and the CPU compute the same integer block sums, the same f32 rescale per block, the
// blocks of a K-tile summed in order from zero and the tiles added in order
// (runtime/npu/emu/kernel.go states the same order for the Go model), so with the
// host's IEEE binary32 the results are identical, not merely close.
func compareCPU(t *testing.T, m matrix, x []float32, tokens int, y []float32) {
	t.Helper()
	want := make([]float32, tokens*m.g.N)
	cpu.MatMat(&cpu.Matrix{G: m.g, Blob: m.blob}, x, want, tokens, nil)
	same := 0
	for i := range want {
		if math.Float32bits(want[i]) == math.Float32bits(y[i]) {
			same++
		} else if i-same < 3 {
			t.Logf("output %d: sim %g, cpu %g", i, y[i], want[i])
		}
	}
	if same != len(want) {
		t.Errorf("%d of %d outputs equal cpu.MatMat bit for bit, want all", same, len(want))
	}
}

// TestBadStreams feeds broken headers and streams: each is an error naming the
// word or stream, never a panic or a partial output.
func TestBadStreams(t *testing.T) {
	needKernels(t)
	k, err := New("xdna2", planar.Q4_0, 128)
	if err != nil {
		t.Fatal(err)
	}
	m := randomMatrix(t, planar.Q4_0, 40, 256, 2, 128, 1)
	d := buildDispatch(m, randomX(256, 1), 1)
	out := make([]byte, 4*20)
	if _, err := k.RunColumn(0, d.weights[0], d.acts, out); err != nil {
		t.Fatalf("good stream: %v", err)
	}
	mut := func(word int, v uint32) []byte {
		a := bytes.Clone(d.acts)
		binary.LittleEndian.PutUint32(a[4*word:], v)
		return a
	}
	cases := []struct {
		name         string
		col          int
		w, acts, out []byte
	}{
		{"magic", 0, d.weights[0], mut(0, 1), out},
		{"type", 0, d.weights[0], mut(1, 8), out},
		{"tokens", 0, d.weights[0], mut(4, 17), out},
		{"row chunk", 0, d.weights[0], mut(5, 64), out},
		{"row chunks", 0, d.weights[0], mut(6, 5), out},
		{"rows beyond ncols", 0, d.weights[0], mut(10, 3), out},
		{"short weights", 0, d.weights[0][:64], d.acts, out},
		{"short acts", 0, d.weights[0], d.acts[:100], out},
		{"output size", 0, d.weights[0], d.acts, out[:8]},
	}
	for _, c := range cases {
		if _, err := k.RunColumn(c.col, c.w, c.acts, c.out); err == nil {
			t.Errorf("%s: no error", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	// A column past ncols has no rows: it must stream and produce nothing.
	if n, err := k.RunColumn(5, nil, d.acts, nil); err != nil || n != 0 {
		t.Errorf("column without rows: %d bytes, %v", n, err)
	}
	if _, err := New("xdna1", planar.Q6_K, 128); err == nil {
		t.Error("Q6_K with K-tile 128: no error")
	}
	if _, err := New("xdna3", planar.Q4_0, 128); err == nil {
		t.Error("unknown target: no error")
	}
}

// TestSpecialScales runs every kernel on blocks whose f16 scales are the edge cases of
// the vector unit's f16 widening (f16v in gemv.hpp): zero and negative zero, the
// smallest and largest subnormals, negative normals, the largest finite value. The
// outputs must equal cpu.MatMat's bit for bit (Inf and NaN scales are outside what
// the kernels reproduce, kernels/README.md).
func TestSpecialScales(t *testing.T) {
	needKernels(t)
	specials := []uint16{0x0000, 0x8000, 0x0001, 0x03ff, 0x8001, 0x0400, 0xbc00, 0x7bff, 0xfbff, 0x3555, 0x1234}
	scaleOffsets := map[planar.Type][]int{ // byte offsets of the f16 scales in a GGUF block
		planar.Q4_0: {0}, planar.Q5_0: {0}, planar.Q8_0: {0},
		planar.Q4_K: {0, 2}, planar.Q5_K: {0, 2}, planar.Q6_K: {208},
	}
	for _, target := range []string{"xdna1", "xdna2"} {
		for _, st := range simTypes {
			kt := st.tiles[len(st.tiles)-1]
			k, err := New(target, st.typ, kt)
			if err != nil {
				t.Fatal(err)
			}
			n, K := 70, 2*kt
			var src bytes.Buffer
			if err := gguftest.RandomBlocks(&src, st.typ, int64(n*K), rand.New(rand.NewPCG(9, uint64(st.typ)))); err != nil {
				t.Fatal(err)
			}
			b := src.Bytes()
			bb := st.typ.BlockBytes()
			// One special value per row (d) and per row and block (dmin), so that a row's
			// output depends on its scale alone and a wrong widening cannot hide in the
			// rounding of larger blocks.
			perRow := K / st.typ.BlockSize()
			for i := 0; i*bb < len(b); i++ {
				for j, off := range scaleOffsets[st.typ] {
					binary.LittleEndian.PutUint16(b[i*bb+off:], specials[(i/perRow+j*i)%len(specials)])
				}
			}
			g := planar.Geometry{Type: st.typ, N: n, K: K, Columns: Columns(target), KTile: kt}
			blob := make([]byte, g.Size())
			if err := planar.Pack(g, b, blob); err != nil {
				t.Fatal(err)
			}
			m := matrix{g, blob}
			x := randomX(2*K, 5)
			d := buildDispatch(m, x, 2)
			compareCPU(t, m, x, 2, d.run(t, k, g))
		}
	}
}
