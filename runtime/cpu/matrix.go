// Package cpu holds the matrix-vector and matrix-matrix kernels that read
// planar weight blobs in place: no repacking and no dequantised copy of the
// weights. Quantised weights are multiplied with activations quantised the
// way llama.cpp's CPU backend quantises them (Q8_0 per 32, Q8_K per 256),
// with exact integer products per block and float accumulation across
// blocks, so the results track llama.cpp's. The scalar references
// MatVecRef and MatMatRef (dequantise a row with planar.DequantRow, float
// products) are the specification the kernels are tested against.
//
// On amd64 with AVX2, F16C and FMA, the quantised formats run assembly kernels
// generated with avo (see simd.go and _generate/) whose outputs are
// bit-identical to the scalar kernels of kernels.go; SetSIMD turns them off
// and the noasm build tag leaves them out.
package cpu

import (
	"fmt"

	"github.com/xdna-go/xdna/planar"
)

// Matrix is a packed weight W[N][K] in planar layout.
type Matrix struct {
	G    planar.Geometry
	Blob []byte // [C groups][K/T tiles][planes][rows] as planar.Geometry lays it out
	// Next is the matrix a one-token step multiplies after this one, if
	// the caller knows it (a model's decoding order): the pool's helpers
	// prefetch its first lines when they are done with this one.
	Next *Matrix
}

// Check validates the geometry and that the blob holds it (it may be
// longer, as a blob inside a file padded to a page).
func (m *Matrix) Check() error {
	if err := m.G.Check(); err != nil {
		return err
	}
	if _, ok := kernelFor(m.G.Type); !ok {
		return fmt.Errorf("%w %s: no cpu kernel", planar.ErrUnsupported, m.G.Type)
	}
	if size := m.G.Size(); len(m.Blob) < size {
		return fmt.Errorf("%w: blob of %d bytes for a %s matrix [%d][%d] of %d bytes",
			planar.ErrShape, len(m.Blob), m.G.Type, m.G.N, m.G.K, size)
	}
	return nil
}

// kernelFor reports whether a type has a kernel here.
func kernelFor(t planar.Type) (actKind, bool) {
	switch t {
	case planar.F32, planar.F16, planar.BF16, planar.Q4_0, planar.Q5_0, planar.Q8_0,
		planar.Q4_K, planar.Q5_K, planar.Q6_K:
		return kindOf(t), true
	}
	return 0, false
}

// Bytes returns the size of the weights, for throughput figures.
func (m *Matrix) Bytes() int { return m.G.Size() }

// blobLayout is where the planes of a matrix are: tile t of plane p of
// group c starts at group[c] + t*tile[c] + plane[c][p], and row i of the
// group at per[p]*i from there. It is Geometry.PlaneOffset computed once per
// call without the format lookups.
type blobLayout struct {
	np    int
	per   [4]int     // bytes per row of each plane
	group [65]int    // offset of each group; group[C] is the blob size
	tile  [64]int    // tile stride of each group
	plane [64][4]int // offset of each plane inside a tile of each group
}

func (l *blobLayout) init(g planar.Geometry) {
	f := g.Format()
	l.np = len(f.Planes)
	for p, pl := range f.Planes {
		l.per[p] = pl.PerRow(g.KTile)
	}
	off := 0
	for c := 0; c < g.Columns; c++ {
		_, n := g.GroupRows(c)
		l.group[c] = off
		s := 0
		for p := 0; p < l.np; p++ {
			l.plane[c][p] = s
			s += (n*l.per[p] + planar.Align - 1) &^ (planar.Align - 1)
		}
		l.tile[c] = s
		off += g.Tiles() * s
	}
	l.group[g.Columns] = off
}

func (m *Matrix) mustFit(x, y []float32, b int, size int) {
	if b < 1 || len(x) < b*m.G.K || len(y) < b*m.G.N || len(m.Blob) < size {
		panic(fmt.Sprintf("cpu: %s matrix [%d][%d] (blob %d bytes) with %d tokens, x of %d, y of %d",
			m.G.Type, m.G.N, m.G.K, len(m.Blob), b, len(x), len(y)))
	}
}

// MatVec computes y[n] = sum_k W[n][k]*x[k] for the N rows of m, x holding K
// values and y N. The rows are shared out over pool (nil: the caller's
// goroutine). It panics if the slices are short; m should have passed
// Check.
//
// The reference loop (MatVecRef, up to the activation quantisation):
//
//	for n := range N { planar.DequantRow(m.G, m.Blob, n, w); y[n] = dot(w, x) }
func MatVec(m *Matrix, x, y []float32, pool *Pool) {
	MatMat(m, x, y, 1, pool)
}

// MatMat computes y[b][n] = sum_k W[n][k]*x[b][k] for b tokens: x is
// [b][K] and y [b][N], both row-major. Each worker takes a range of rows and
// runs every token over a block of rows while its tile is in cache, so the
// weights are read from memory once per call, not once per token. With the
// assembly kernels (simd.go) one unpacking of a row's weights serves eight
// tokens; with the scalar ones, the activation codes of three tokens are
// packed into one int64 per element, so that one multiply serves three
// tokens (see split3). Each output has exactly the arithmetic of MatVec on
// its token: the results do not depend on b, the pool, the token's place in
// the batch or the kernel set.
func MatMat(m *Matrix, x, y []float32, b int, pool *Pool) {
	if pool == nil {
		pool = serial
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	g := m.G
	j := &pool.mm
	*j = mmJob{m: m, s: &pool.scratch, b: b}
	if err := g.Check(); err != nil {
		panic("cpu: " + err.Error())
	}
	j.lay.init(g)
	m.mustFit(x, y, b, j.lay.group[g.Columns])
	x, y = x[:b*g.K], y[:b*g.N]
	j.x, j.y = x, y
	j.k = active.Load()
	pool.scratch.prepare(j.k, g.Type, x, b, g.K, pool)
	// One token takes the rows kernels, a batch the GEMM, where the set
	// has them; else the scalar kernels.
	j.vec = j.k != nil && vecOK(g) && (b == 1 || gemmOK(j.k, g, b))
	if j.vec && b > 1 {
		j.gemm = true
		j.gemmPrepare(pool)
	} else if j.vec {
		pool.scratch.prepareVec(j.k, g.Type, g.K)
	} else if k := kindOf(g.Type); b > 1 && (k == actQ8_0 || k == actQ8_K) {
		pool.scratch.pack3(b, g.K)
		j.packed = true
	}
	// Tokens per pass over a block of rows: their activations of one tile
	// (1 byte per element quantised, 4 as floats) stay within 128 KiB, in
	// L2 while the rows stream by.
	ab := 1
	if k := kindOf(g.Type); k == actF32 || k == actF16 || k == actBF16 {
		ab = 4
	}
	j.tb = max(1, min(b, (128<<10)/(ab*g.KTile)))
	if j.packed {
		// Whole triples per pass; packed, they take 8 bytes per 3 codes.
		j.tb = max(3, min(b+2, (3*(128<<10))/(8*g.KTile))/3*3)
	}
	// Rows per block: their bytes of one tile stay within 256 KiB, so that
	// the passes of the token blocks after the first read them from L2 and
	// the weights come from memory once per call.
	rowTile := max(1, g.TileBytes(g.RowsPerGroup())/g.RowsPerGroup())
	j.rb = max(1, (256<<10)/rowTile)
	// Rows per chunk: at least 64 Ki multiply-adds, so that small matrices
	// run on the caller alone, and whole steps of the kernels (4 rows; 16
	// for a batch), so that no chunk leaves rows to the scalar tail.
	step := 4
	if b > 1 {
		step = 16
	}
	grain := ((64<<10)/(g.K*b) + step - 1) / step * step
	grain = max(grain, step)
	if b == 1 {
		// One token: a chunk is whole column groups. A group is K-tile
		// major, so a chunk of part of one reads a short run of every tile
		// and jumps, which the prefetchers follow badly: on the 0.5B shape
		// decode ran 15-25% slower with half groups than with whole ones.
		r := g.RowsPerGroup()
		grain = (grain + r - 1) / r * r
	}
	if j.gemm {
		// Whole panels: a chunk of 64 rows is two.
		grain = 2 * gemmRows
	}
	if b == 1 && m.Next != nil {
		pool.ahead = m.Next.Blob[:min(len(m.Next.Blob), m.Next.G.Size())]
	}
	pool.run(g.N, grain, j)
	pool.ahead = nil
	j.m, j.s, j.x, j.y = nil, nil, nil, nil
}

// mmJob is one MatMat call, run by row ranges.
type mmJob struct {
	m  *Matrix
	s  *scratch
	x  []float32 // [b][K] activations (for F32 weights)
	y  []float32 // [b][N]
	b  int       // tokens
	tb int       // tokens per pass over a block of rows
	rb int       // rows per block
	// packed: the codes of token triples are in s.p, for the dot3 kernels
	packed bool
	// k: the assembly kernel set (simd.go), nil for the scalar kernels;
	// vec: its kernels run this call (the rows kernels, or with gemm the
	// GEMM of gemm.go)
	k    *kernels
	vec  bool
	gemm bool
	lay  blobLayout
}

// Run computes rows [lo, hi) of y for every token, on worker w.
func (j *mmJob) Run(w, lo, hi int) {
	if j.gemm {
		j.gemmRun(w, lo, hi)
		return
	}
	if j.vec {
		j.vecRows(lo, hi)
		return
	}
	g := j.m.G
	r := g.RowsPerGroup()
	l := &j.lay
	np := l.np
	var off [4]int
	per := &l.per
	for c := lo / r; c < g.Columns; c++ {
		first, n := g.GroupRows(c)
		if first >= hi {
			break
		}
		r0, r1 := max(lo, first), min(hi, first+n)
		if r0 >= r1 {
			continue
		}
		for t := 0; t < g.Tiles(); t++ {
			for p := 0; p < np; p++ {
				off[p] = l.group[c] + t*l.tile[c] + l.plane[c][p]
			}
			for q0 := r0; q0 < r1; q0 += j.rb {
				q1 := min(q0+j.rb, r1)
				for b0 := 0; b0 < j.b; b0 += j.tb {
					j.tile(t, first, q0, q1, b0, min(b0+j.tb, j.b), &off, per)
				}
			}
		}
	}
}

// tile runs rows [r0, r1) of the group starting at row first, K-tile t,
// tokens [b0, b1). off and per are the tile's plane offsets and bytes per row.
func (j *mmJob) tile(t, first, r0, r1, b0, b1 int, off, per *[4]int) {
	g := j.m.G
	blob := j.m.Blob
	N, K, T := g.N, g.K, g.KTile
	y := j.y
	s := j.s
	// plane returns row i's bytes in plane p.
	plane := func(p, i int) []byte { return blob[off[p]+i*per[p] : off[p]+(i+1)*per[p]] }
	store := func(b, row int, v float32) {
		if t == 0 {
			y[b*N+row] = v
		} else {
			y[b*N+row] += v
		}
	}
	if j.packed {
		j.tile3(t, first, r0, r1, b0, b1, off, per)
		return
	}
	for row := r0; row < r1; row++ {
		i := row - first
		switch g.Type {
		case planar.Q4_0:
			codes, scales := plane(0, i), plane(1, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotQ4_0(codes, scales, s.q[o:o+T], s.d[o/32:(o+T)/32], s.s[o/32:(o+T)/32]))
			}
		case planar.Q5_0:
			codes, high, scales := plane(0, i), plane(1, i), plane(2, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotQ5_0(codes, high, scales, s.q[o:o+T], s.d[o/32:(o+T)/32], s.s[o/32:(o+T)/32]))
			}
		case planar.Q8_0:
			codes, scales := plane(0, i), plane(1, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotQ8_0(codes, scales, s.q[o:o+T], s.d[o/32:(o+T)/32]))
			}
		case planar.Q4_K:
			codes, sm, dm := plane(0, i), plane(1, i), plane(2, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotQ4_K(codes, sm, dm, s.q[o:o+T], s.d[o/256:(o+T)/256], s.s[o/16:(o+T)/16]))
			}
		case planar.Q5_K:
			codes, high, sm, dm := plane(0, i), plane(1, i), plane(2, i), plane(3, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotQ5_K(codes, high, sm, dm, s.q[o:o+T], s.d[o/256:(o+T)/256], s.s[o/16:(o+T)/16]))
			}
		case planar.Q6_K:
			codes, scales, dp := plane(0, i), plane(1, i), plane(2, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotQ6_K(codes, scales, dp, s.q[o:o+T], s.d[o/256:(o+T)/256]))
			}
		case planar.F32:
			w := plane(0, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotF32(w, j.x[o:o+T]))
			}
		case planar.F16:
			w := plane(0, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotF16(w, s.f[o:o+T]))
			}
		case planar.BF16:
			w := plane(0, i)
			for b := b0; b < b1; b++ {
				o := b*K + t*T
				store(b, row, dotBF16(w, s.f[o:o+T]))
			}
		}
	}
}

// tile3 is tile for quantised weights with the codes of token triples
// packed (b0 a multiple of 3): the dot3 kernels, whose arithmetic per token
// is that of the single-token ones.
func (j *mmJob) tile3(t, first, r0, r1, b0, b1 int, off, per *[4]int) {
	g := j.m.G
	blob := j.m.Blob
	N, K, T := g.N, g.K, g.KTile
	s := j.s
	bs := 32 // elements per scale
	ss := 32 // elements per sum
	if kindOf(g.Type) == actQ8_K {
		bs, ss = 256, 16
	}
	plane := func(p, i int) []byte { return blob[off[p]+i*per[p] : off[p]+(i+1)*per[p]] }
	var x tri
	var out [3]float32
	for b := b0; b < b1; b += 3 {
		n := min(3, b1-b)
		x.p = s.p[b/3*K+t*T : b/3*K+(t+1)*T]
		for l := 0; l < 3; l++ {
			o := (b+min(l, n-1))*K + t*T // a missing token reuses the last one's scales
			x.d[l] = s.d[o/bs : (o+T)/bs]
			x.s[l] = s.s[o/ss : (o+T)/ss]
		}
		for row := r0; row < r1; row++ {
			i := row - first
			switch g.Type {
			case planar.Q4_0:
				dot3Q4_0(plane(0, i), plane(1, i), &x, &out)
			case planar.Q5_0:
				dot3Q5_0(plane(0, i), plane(1, i), plane(2, i), &x, &out)
			case planar.Q8_0:
				dot3Q8_0(plane(0, i), plane(1, i), &x, &out)
			case planar.Q4_K:
				dot3K(plane(0, i), nil, plane(1, i), plane(2, i), &x, &out)
			case planar.Q5_K:
				dot3K(plane(0, i), plane(1, i), plane(2, i), plane(3, i), &x, &out)
			case planar.Q6_K:
				dot3Q6_K(plane(0, i), plane(1, i), plane(2, i), &x, &out)
			}
			for l := 0; l < n; l++ {
				if t == 0 {
					j.y[(b+l)*N+row] = out[l]
				} else {
					j.y[(b+l)*N+row] += out[l]
				}
			}
		}
	}
}

// EmbedRow writes row row of m (a token embedding) to dst, dequantised
// exactly (planar.DequantRow, as ggml's get_rows). dst holds K values.
func EmbedRow(m *Matrix, row int, dst []float32) {
	if row < 0 || row >= m.G.N || len(dst) < m.G.K {
		panic(fmt.Sprintf("cpu: embedding row %d of %d into %d values (want %d)", row, m.G.N, len(dst), m.G.K))
	}
	planar.DequantRow(m.G, m.Blob[:m.G.Size()], row, dst[:m.G.K])
}

// MatVecRef is the scalar reference of MatVec: each row dequantised with
// planar.DequantRow, times x in float32 products summed in float64. It
// does not quantise x, so it differs from MatVec by the activation
// quantisation (see the tests for the bound).
func MatVecRef(m *Matrix, x, y []float32) {
	MatMatRef(m, x, y, 1)
}

// MatMatRef is the scalar reference of MatMat.
func MatMatRef(m *Matrix, x, y []float32, b int) {
	g := m.G
	m.mustFit(x, y, b, g.Size())
	blob := m.Blob[:g.Size()]
	w := make([]float32, g.K)
	for n := 0; n < g.N; n++ {
		planar.DequantRow(g, blob, n, w)
		for t := 0; t < b; t++ {
			xt := x[t*g.K : (t+1)*g.K]
			var s float64
			for k, v := range w {
				s += float64(v * xt[k])
			}
			y[t*g.N+n] = float32(s)
		}
	}
}
