package cpu

import (
	"encoding/binary"
	"math"

	"github.com/xdna-go/xdna/planar"
)

// The K-quants' GEMM (Q4_K, Q5_K, Q6_K; _generate/gemm's gemmK): the same
// panels of codes as Q4_0's (Q5_0's with the 5th bits, Q8_0's for Q6_K),
// 32-element sub-blocks as blocks, and per super-block a scale area of
// sixteen-row vectors (gemmScales*: the sub-block scales as int32, Q4_K's
// mins as pairs of int16, d and dmin as float32). Four tokens a pass. Per
// (row, token) the arithmetic is the scalar kernel's: the integer sum of
// each sub-block (or group of 16) times its scale, summed exactly in
// int32, then dotQ4_K's or dotQ6_K's float32 operations in their order.

// kQuant reports whether t is a K-quant the GEMM takes.
func kQuant(t planar.Type) bool {
	return t == planar.Q4_K || t == planar.Q5_K || t == planar.Q6_K
}

const (
	gemmToksK = 4    // tokens per pass
	gemmKTok  = 32   // int32s per token and super-block in gd
	kArea4    = 1792 // bytes of a Q4_K or Q5_K scale area
	kArea6    = 2176 // of a Q6_K one
)

// kArea is the bytes of t's scale area per super-block.
func kArea(t planar.Type) int {
	if t == planar.Q6_K {
		return kArea6
	}
	return kArea4
}

// kPlanes are t's planes of codes, 5th bits (-1 for none), sub-block
// scales and super-block scales.
func kPlanes(t planar.Type) (codes, high, sm, dm int) {
	switch t {
	case planar.Q5_K:
		return 0, 1, 2, 3
	case planar.Q6_K:
		return 0, -1, 1, 2
	}
	return 0, -1, 1, 2
}

// gemmPrepareK lays out, per pass of four tokens, super-block and token
// (gd, 32 int32s each): the activations' scale (float32 bits), then for
// Q4_K and Q5_K the four pairs {int16 b_2k, int16 b_2k+1} of sums of 32
// (b_j = bsums[2j]+bsums[2j+1]), for Q6_K -128 times each of the sixteen
// sums of 16 (the codes' XOR 0x80 taken off); the tokens after b zero.
func (j *mmJob) gemmPrepareK(p *Pool) {
	g := j.m.G
	s := &p.scratch
	nsb := g.K / 256
	passes := (j.b + gemmToksK - 1) / gemmToksK
	s.gd = grow(s.gd, passes*nsb*gemmToksK*gemmKTok)
	clear(s.gd)
	for tok := 0; tok < j.b; tok++ {
		ps, t := tok/gemmToksK, tok%gemmToksK
		for i := 0; i < nsb; i++ {
			d := s.gd[((ps*nsb+i)*gemmToksK+t)*gemmKTok:][:gemmKTok]
			d[0] = int32(math.Float32bits(s.d[tok*nsb+i]))
			bs := s.s[(tok*nsb+i)*16:][:16]
			if g.Type == planar.Q6_K {
				for k, v := range bs {
					d[1+k] = -128 * v
				}
				continue
			}
			for k := 0; k < 4; k++ {
				lo, hi := bs[4*k]+bs[4*k+1], bs[4*k+2]+bs[4*k+3]
				d[1+k] = int32(uint32(uint16(lo)) | uint32(uint16(hi))<<16)
			}
		}
	}
	s.growPanels(p.threads, nsb*8192, 0, nsb*kArea6, passes*gemmToksK*gemmRows)
}

// gemmPanelK is gemmPanel for the K-quants.
func (j *mmJob) gemmPanelK(w, c, i, n, row0 int) {
	g := j.m.G
	l := &j.lay
	s := j.s
	pn := &s.gp[w]
	K := g.K
	nsb, nsbt, np := K/256, g.KTile/256, g.KTile/32
	tiles, ts := g.Tiles(), l.tile[c]
	area := kArea(g.Type)
	cp, hp, mp, dp := kPlanes(g.Type)
	for h := 0; h*16 < n; h++ {
		rs := j.rowSet(c, i+16*h, min(16, n-16*h))
		pw, pa := pn.w[64*h:], pn.ka[64*h:]
		if rs.rows < 16 {
			high, hstride := rs.high(hp)
			gemmCodesRef(g.Type, j.m.Blob, rs.at(cp), high, l.per[cp], hstride, pw, np, tiles, ts, rs.rows)
			gemmScalesRef(g.Type, j.m.Blob, rs.at(mp), rs.at(dp), l.per[mp], l.per[dp], pa, nsbt, tiles, ts, rs.rows)
			continue
		}
		w0 := &pw[:(nsb*8-1)*1024+64][0]
		if g.Type == planar.Q6_K {
			j.k.gemmCodesQ8(rs.plane(cp), l.per[cp], w0, np, tiles, ts)
		} else {
			j.k.gemmCodesQ4(rs.plane(cp), l.per[cp], w0, np, tiles, ts)
		}
		if hp >= 0 {
			j.k.gemmPackHigh(rs.plane(hp), l.per[hp], w0, np, tiles, ts)
		}
		a0 := &pa[:(nsb-1)*area+64][0]
		if g.Type == planar.Q6_K {
			j.k.gemmScalesQ6K(rs.plane(mp), rs.plane(dp), l.per[mp], l.per[dp], a0, nsbt, tiles, ts)
		} else {
			j.k.gemmScalesQ4K(rs.plane(mp), rs.plane(dp), l.per[mp], l.per[dp], a0, nsbt, tiles, ts)
		}
	}
	j.gemmRuns(pn, n, row0, gemmUnits{elems: 256, bytes: 8192, perTile: nsbt, toks: gemmToksK, gd: gemmKTok},
		func(u0, nu int, a []int8, gd []int32, o []float32, ostride, prows, nt, add int) {
			j.gemmPassK(u0, nu, nsbt, a, gd, o, ostride, prows, nt, add, pn)
		})
}

// gemmPassK is gemmPass for the K-quants: super-blocks [sb0, sb0+nsbc).
func (j *mmJob) gemmPassK(sb0, nsbc, nsbt int, a []int8, gd []int32, o []float32, ostride, prows, nt, add int, pn *gemmPanel) {
	g := j.m.G
	area := kArea(g.Type)
	if j.k.gemmQ4K != nil {
		kern := j.k.gemmQ4K
		if g.Type == planar.Q6_K {
			kern = j.k.gemmQ6K
		}
		kern(&pn.w[sb0*8192], &pn.ka[sb0*area], &a[0], g.K, &gd[0], &o[0], 4*ostride, nsbc, nsbt, prows, nt, add)
		return
	}
	kern := j.k.gemmQ4K2
	if g.Type == planar.Q6_K {
		kern = j.k.gemmQ6K2
	}
	for t := 0; t < nt; t += 2 {
		for h := 0; h < prows/16; h++ {
			kern(&pn.w[sb0*8192+64*h], &pn.ka[sb0*area+64*h], &a[t*g.K], g.K, &gd[t*gemmKTok], &o[t*ostride+16*h], 4*ostride, nsbc, nsbt, min(2, nt-t), add)
		}
	}
}

// gemmScalesRef is the specification of gemmScalesQ4K and gemmScalesQ6K
// for rows (at most 16) rows of a group of sixteen, the others zero: row
// r's scale bytes and super-block scales of super-block i of tile t at sm
// and dm + r*mstride (dstride) + 16i (Q4_K, Q5_K: 4i; Q6_K: 2i for dm) +
// t*tstride; area b (of kArea bytes) at a[kArea*b:], the caller offsetting
// a by 64 bytes for the second group.
func gemmScalesRef(t planar.Type, blob []byte, sm, dm, mstride, dstride int, a []byte, nsbt, tiles, tstride, rows int) {
	area := kArea(t)
	put := func(at int, v uint32) { binary.LittleEndian.PutUint32(a[at:], v) }
	for tile := 0; tile < tiles; tile++ {
		for i := 0; i < nsbt; i++ {
			base := area * (tile*nsbt + i)
			for r := 0; r < 16; r++ {
				var m []byte
				if r < rows {
					m = blob[sm+tile*tstride+r*mstride+16*i:][:16]
				}
				if t == planar.Q6_K {
					var d float32
					if r < rows {
						d = f16(binary.LittleEndian.Uint16(blob[dm+tile*tstride+r*dstride+2*i:]))
					}
					for g := 0; g < 16; g++ {
						v := uint32(0)
						if r < rows {
							v = uint32(int32(int8(m[g])))
						}
						put(base+128*g+4*r, v)
					}
					put(base+2048+4*r, math.Float32bits(d))
					continue
				}
				var d, dmin float32
				if r < rows {
					x := blob[dm+tile*tstride+r*dstride+4*i:]
					d, dmin = f16(binary.LittleEndian.Uint16(x)), f16(binary.LittleEndian.Uint16(x[2:]))
				}
				for j := 0; j < 8; j++ {
					v := uint32(0)
					if r < rows {
						v = uint32(m[j])
					}
					put(base+128*j+4*r, v)
				}
				for k := 0; k < 4; k++ {
					v := uint32(0)
					if r < rows {
						v = uint32(m[8+2*k]) | uint32(m[9+2*k])<<16
					}
					put(base+1024+128*k+4*r, v)
				}
				put(base+1536+4*r, math.Float32bits(d))
				put(base+1664+4*r, math.Float32bits(dmin))
			}
		}
	}
}
