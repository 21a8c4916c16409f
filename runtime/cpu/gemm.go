package cpu

import (
	"encoding/binary"
	"math"

	"github.com/xdna-go/xdna/planar"
)

// The prefill GEMM (AVX-512 VNNI; _generate/gemm writes it): for a call of
// gemmMinTokens tokens or more with Q4_0, Q5_0 or Q8_0 weights, each worker lays
// out 32 rows at a time, all their K-tiles, into a panel of its own
// (gemmPack*: unsigned bytes four elements per dword, sixteen rows per
// vector, the f16 scales as float32), then runs every token over it, six
// at a time (gemmI8): the lanes are rows, the token's four activation
// codes are broadcast, and one VPDPBUSD adds four products to each of
// sixteen (row, token) sums, with no horizontal sum at all. The panel is built once per
// call and block of rows and read from L2 by every pass of tokens; the file
// is never copied.
//
// The arithmetic per (row, token) is the scalar kernel's (dotQ4_0,
// dotQ5_0, dotQ8_0): the same exact int32 sum per block, then the same float32
// operations in the same order, so the outputs are bit-identical to
// MatVec's, whatever the number of tokens.

// gemmMinTokens is the least number of tokens a call takes the GEMM with:
// from two tokens on it was as fast as the token kernels it replaced or
// faster (the AVX-512 VM: AMD EPYC, CPU family 26 (Zen 5), one thread,
// 4864 x 896 Q4_0, Q5_0 and Q8_0 matrices with 2 to 24 tokens: 1.0x to
// 2.6x, CPU time), so one token (MatVec, the rows kernels) is the only call
// without it.
const gemmMinTokens = 2

// gemmRows is the rows of a panel, gemmToks the tokens of a pass.
const (
	gemmRows = 32
	gemmToks = 6
)

// gemmOK reports whether the GEMM runs a call of b tokens of geometry g
// with kernel set k.
func gemmOK(k *kernels, g planar.Geometry, b int) bool {
	if k == nil || k.gemmI8 == nil && k.gemm2 == nil || b < gemmMinTokens || g.KTile%32 != 0 {
		return false
	}
	switch g.Type {
	case planar.Q4_0, planar.Q5_0, planar.Q8_0:
		return true
	case planar.Q4_K, planar.Q5_K, planar.Q6_K:
		return k.gemmQ4K != nil || k.gemmQ4K2 != nil
	}
	return false
}

// gemmOffset is what the weights' unsigned bytes exceed their values by:
// Q4_0 codes are q = w+8, Q5_0 ones q = w+16, the Q8_0 codes are flipped
// to w+128.
func gemmOffset(t planar.Type) int32 {
	switch t {
	case planar.Q4_0:
		return 8
	case planar.Q5_0:
		return 16
	}
	return 128
}

// gemmPlanes are the planes of the codes, the 5th bits (Q5_0; -1 for
// none) and the scales of a format the GEMM takes.
func gemmPlanes(t planar.Type) (codes, high, scales int) {
	if t == planar.Q5_0 {
		return 0, 1, 2
	}
	return 0, -1, 1
}

// gemmPrepare lays out the activations' scales and offset sums for the
// passes ([pass][block][gemmToks]{d, -offset*sum}, the tokens after b
// zero) and gives every worker its panel buffers.
func (j *mmJob) gemmPrepare(p *Pool) {
	g := j.m.G
	if kQuant(g.Type) {
		j.gemmPrepareK(p)
		return
	}
	s := &p.scratch
	nb := g.K / 32
	passes := (j.b + gemmToks - 1) / gemmToks
	s.gd = grow(s.gd, passes*nb*gemmToks*2)
	clear(s.gd[j.b/gemmToks*nb*gemmToks*2:]) // the last pass's tokens after b
	off := gemmOffset(g.Type)
	for tok := 0; tok < j.b; tok++ {
		ps, t := tok/gemmToks, tok%gemmToks
		d, sum := s.d[tok*nb:][:nb], s.s[tok*nb:][:nb]
		gd := s.gd[(ps*nb*gemmToks+t)*2:][:(nb-1)*gemmToks*2+2]
		for i := range nb {
			gd[i*gemmToks*2] = int32(math.Float32bits(d[i]))
			gd[i*gemmToks*2+1] = -off * sum[i]
		}
	}
	s.growPanels(p.threads, nb*1024, nb*32, 0, passes*gemmToks*gemmRows)
}

// growPanels gives each of threads workers a panel of at least w bytes, sc
// scales, ka bytes of K-quant scale areas and o outputs.
func (s *scratch) growPanels(threads, w, sc, ka, o int) {
	for len(s.gp) < threads {
		s.gp = append(s.gp, gemmPanel{})
	}
	for i := range s.gp {
		pn := &s.gp[i]
		pn.w, pn.sc, pn.ka, pn.o = grow(pn.w, w), grow(pn.sc, sc), grow(pn.ka, ka), grow(pn.o, o)
	}
}

// gemmPanel is a worker's panel: w [block][8][2][16][4] bytes, sc
// [block][2][16] scales, and o, the outputs of every token for a panel
// that is not whole ([token][32]).
type gemmPanel struct {
	w  []byte
	sc []float32
	o  []float32
	ka []byte // the K-quants' scale areas (gemmk.go)
}

// gemmRun computes rows [lo, hi) of every token with the GEMM, on worker w.
func (j *mmJob) gemmRun(w, lo, hi int) {
	g := j.m.G
	r := g.RowsPerGroup()
	for c := lo / r; c < g.Columns; c++ {
		first, n := g.GroupRows(c)
		if first >= hi {
			break
		}
		r0, r1 := max(lo, first), min(hi, first+n)
		for q := r0; q < r1; q += gemmRows {
			if next := q + gemmRows; next < r1 {
				// The next panel's weights come from memory while the
				// tokens run over this one.
				j.gemmPrefetch(c, next-first, min(gemmRows, r1-next))
			}
			j.gemmPanel(w, c, q-first, min(gemmRows, r1-q), q)
		}
	}
}

// gemmPrefetch prefetches the codes and scales of rows [i, i+n) of group
// c, every K-tile.
func (j *mmJob) gemmPrefetch(c, i, n int) {
	l := &j.lay
	ts := l.tile[c]
	tiles := j.m.G.Tiles()
	for p := 0; p < l.np; p++ {
		o := l.group[c] + l.plane[c][p] + i*l.per[p]
		b := j.m.Blob[o : o+(tiles-1)*ts+n*l.per[p]]
		j.k.gemmPrefetch(&b[0], n*l.per[p], tiles, ts)
	}
}

// rowSet is a set of sixteen rows of group c from row first of the group
// (the last set of a panel may have fewer), as gemmPanel and gemmPanelK
// lay them out.
type rowSet struct {
	j              *mmJob
	c, first, rows int
}

func (j *mmJob) rowSet(c, first, rows int) rowSet { return rowSet{j, c, first, rows} }

// at returns where plane p of the set's first row starts (tile 0).
func (r rowSet) at(p int) int {
	l := &r.j.lay
	return l.group[r.c] + l.plane[r.c][p] + r.first*l.per[p]
}

// plane returns plane p of a whole set (sixteen rows), every tile: the
// assembly reads nothing outside it.
func (r rowSet) plane(p int) *byte {
	l, o := &r.j.lay, r.at(p)
	return &r.j.m.Blob[o : o+(r.j.m.G.Tiles()-1)*l.tile[r.c]+16*l.per[p]][0]
}

// high returns where the high-bit plane hp of the set starts and its
// bytes per row, or 0, 0 for a format without one (hp < 0).
func (r rowSet) high(hp int) (off, stride int) {
	if hp < 0 {
		return 0, 0
	}
	return r.at(hp), r.j.lay.per[hp]
}

// gemmPanel runs rows [i, i+n) of group c (n <= 32; row0 is the first's
// row in the matrix) for every token.
func (j *mmJob) gemmPanel(w, c, i, n, row0 int) {
	g := j.m.G
	if kQuant(g.Type) {
		j.gemmPanelK(w, c, i, n, row0)
		return
	}
	l := &j.lay
	s := j.s
	pn := &s.gp[w]
	K := g.K
	nb, np := K/32, g.KTile/32
	tiles, ts := g.Tiles(), l.tile[c]
	cp, hp, sp := gemmPlanes(g.Type)
	for h := 0; h*16 < n; h++ {
		rs := j.rowSet(c, i+16*h, min(16, n-16*h))
		pw, psc := pn.w[64*h:], pn.sc[16*h:]
		if rs.rows < 16 {
			high, hstride := rs.high(hp)
			gemmPackRef(g.Type, j.m.Blob, rs.at(cp), high, rs.at(sp), l.per[cp], hstride, l.per[sp], pw, psc, np, tiles, ts, rs.rows)
			continue
		}
		w0 := &pw[:(nb-1)*1024+64][0]
		pack := j.k.gemmPackQ4_0
		if g.Type == planar.Q8_0 {
			pack = j.k.gemmPackQ8_0
		}
		pack(rs.plane(cp), rs.plane(sp), l.per[cp], l.per[sp], w0, &psc[:(nb-1)*32+16][0], np, tiles, ts)
		if hp >= 0 {
			j.k.gemmPackHigh(rs.plane(hp), l.per[hp], w0, np, tiles, ts)
		}
	}
	j.gemmRuns(pn, n, row0, gemmUnits{elems: 32, bytes: 1024, perTile: np, toks: gemmToks, gd: 2},
		func(u0, nu int, a []int8, gd []int32, o []float32, ostride, prows, nt, add int) {
			j.gemmPass(u0, nu, np, a, gd, o, ostride, prows, nt, add, pn)
		})
}

// gemmUnits describes the GEMM's units of K for gemmRuns: blocks of 32
// (1 KiB of panel each, six tokens a pass, two int32 of gd per token) or
// the K-quants' super-blocks of 256 (8 KiB, four tokens, 32 int32).
type gemmUnits struct {
	elems, bytes, perTile, toks, gd int
}

// gemmRuns runs the passes of tokens over a panel of n rows (the first
// row0 of the matrix) by runs of K-tiles whose part of the panel stays in
// L1 while every pass reads it: the first run stores the outputs, the
// others add, as the tiles do. pass gets units [u0, u0+nu), the tokens'
// codes and gd from the first unit, the outputs (token t's at
// o[t*ostride:]), the panel's rows (16 or 32), the tokens and add. A
// panel of other than 16 or 32 rows goes through pn.o, copied to y after
// the last run.
func (j *mmJob) gemmRuns(pn *gemmPanel, n, row0 int, u gemmUnits, pass func(u0, nu int, a []int8, gd []int32, o []float32, ostride, prows, nt, add int)) {
	g := j.m.G
	s := j.s
	N, K := g.N, g.K
	units, tiles := K/u.elems, g.Tiles()
	prows := 32
	if n <= 16 {
		prows = 16
	}
	tc := max(1, gemmChunk/(u.perTile*u.bytes))
	for t0 := 0; t0 < tiles; t0 += tc {
		u0, nu := t0*u.perTile, min(tc, tiles-t0)*u.perTile
		add := 0
		if t0 > 0 {
			add = 1
		}
		for b0 := 0; b0 < j.b; b0 += u.toks {
			nt := min(u.toks, j.b-b0)
			ps := b0 / u.toks
			a := s.q[b0*K+u.elems*u0 : (b0+nt-1)*K+u.elems*(u0+nu)]
			gd := s.gd[(ps*units+u0)*u.toks*u.gd : (ps*units+u0+nu)*u.toks*u.gd]
			if n == prows {
				pass(u0, nu, a, gd, j.y[b0*N+row0:(b0+nt-1)*N+row0+n], N, prows, nt, add)
				continue
			}
			o := pn.o[ps*u.toks*gemmRows:]
			pass(u0, nu, a, gd, o, gemmRows, prows, nt, add)
			if t0+tc >= tiles {
				for t := 0; t < nt; t++ {
					copy(j.y[(b0+t)*N+row0:(b0+t)*N+row0+n], o[t*gemmRows:])
				}
			}
		}
	}
}

// gemmPass runs one pass of nt tokens over blocks [b0k, b0k+nbc) of the
// worker's panel (prows rows) into o (token t's outputs at o[t*ostride:],
// ostride in floats): one call of the AVX-512 kernel, or the AVX2 kernel
// by sixteen rows and two tokens.
func (j *mmJob) gemmPass(b0k, nbc, np int, a []int8, gd []int32, o []float32, ostride, prows, nt, add int, pn *gemmPanel) {
	K := j.m.G.K
	if j.k.gemmI8 != nil {
		j.k.gemmI8(&pn.w[b0k*1024], &pn.sc[b0k*32], &a[0], K, &gd[0], &o[0], 4*ostride, nbc, np, prows, nt, add)
		return
	}
	kern := j.k.gemm2
	if j.m.G.Type == planar.Q8_0 {
		kern = j.k.gemm2Q8
	}
	for t := 0; t < nt; t += 2 {
		for h := 0; h < prows/16; h++ {
			kern(&pn.w[b0k*1024+64*h], &pn.sc[b0k*32+16*h], &a[t*K], K, &gd[2*t], &o[t*ostride+16*h], 4*ostride, nbc, np, min(2, nt-t), add)
		}
	}
}

// gemmChunk is the bytes of panel a run of K-tiles takes at most.
const gemmChunk = 32 << 10

// gemmPackRef is the specification of gemmPack* (and, for Q5_0, of
// gemmPackQ4_0 followed by gemmPackHigh), for rows (at most 16) rows of a
// group of sixteen, the others zero: row r's codes, 5th bits (Q5_0) and
// scales of tile t at codes, high and scales + r*cstride (hstride,
// sstride) + t*tstride in blob; block b of the panel at w[1024b:] and
// sc[32b:] (the caller offsets both for the second group).
func gemmPackRef(t planar.Type, blob []byte, codes, high, scales, cstride, hstride, sstride int, w []byte, sc []float32, np, tiles, tstride, rows int) {
	gemmCodesRef(t, blob, codes, high, cstride, hstride, w, np, tiles, tstride, rows)
	for tile := 0; tile < tiles; tile++ {
		for i := 0; i < np; i++ {
			b := tile*np + i
			for r := 0; r < 16; r++ {
				sc[32*b+r] = 0
				if r < rows {
					sc[32*b+r] = f16(binary.LittleEndian.Uint16(blob[scales+tile*tstride+r*sstride+2*i:]))
				}
			}
		}
	}
}

// gemmCodesRef is the specification of the panels' codes (gemmPack*,
// gemmCodes*, gemmPackHigh) for every format: blocks of 32 elements, the
// nibble formats' codes (Q4_0, Q5_0, Q4_K, Q5_K: 16 bytes a block, code
// 2i in the low nibble of byte i, the 5th bits of Q5_0 and Q5_K a u32 a
// block in the high plane) as they are, the bytes of Q8_0 and Q6_K XOR
// 0x80; rows after rows zero.
func gemmCodesRef(t planar.Type, blob []byte, codes, high, cstride, hstride int, w []byte, np, tiles, tstride, rows int) {
	bytes := t == planar.Q8_0 || t == planar.Q6_K
	for tile := 0; tile < tiles; tile++ {
		for i := 0; i < np; i++ {
			b := tile*np + i
			for r := 0; r < 16; r++ {
				if r >= rows {
					for q := 0; q < 8; q++ {
						clear(w[1024*b+128*q+4*r:][:4])
					}
					continue
				}
				c := codes + tile*tstride + r*cstride
				var hb uint32
				if t == planar.Q5_0 || t == planar.Q5_K {
					hb = binary.LittleEndian.Uint32(blob[high+tile*tstride+r*hstride+4*i:])
				}
				for e := 0; e < 32; e++ {
					var v byte
					if bytes {
						v = blob[c+32*i+e] ^ 0x80
					} else {
						v = blob[c+16*i+e/2]
						if e%2 == 0 {
							v &= 15
						} else {
							v >>= 4
						}
						v |= byte(hb>>e&1) << 4
					}
					w[1024*b+128*(e/4)+4*r+e%4] = v
				}
			}
		}
	}
}
