package emu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// The GEMV kernel, as each AIE column runs it.
//
// Column c of a dispatch reads the parameter header and the activation
// records from the broadcast stream and its rows' weights, row chunk by
// row chunk and tile by tile, from its own stream (npu/params.go); for
// every row and token it multiplies the row's tile with the token's
// activation record and adds the result into the row's f32 accumulator,
// which it drains when the chunk's last tile is done. The arithmetic, per
// row, tile and token:
//
//	Q4_0  per block of 32: isum = sum(q_w*q_x) - 8*sum(q_x)       4-bit x int8 -> int32, exact
//	      acc += float32(isum) * (d_w*d_x)                        f16 d_w, f16 d_x widened; products and sum in f32
//	Q5_0  isum = sum(lo_w*q_x) + 16*sum(q_x where bit 5) - 16*sum(q_x)
//	      acc += float32(isum) * (d_w*d_x)                        as Q4_0
//	Q8_0  isum = sum(q_w*q_x)                                     int8 x int8 -> int32
//	      acc += float32(isum) * (d_w*d_x)
//	Q4_K  per super-block of 256: sumi = sum_j sc_j*sum_32(q_w*q_x)      u6 scales, int32 exact
//	(Q5_K with the 5th bits)     summ = sum_j m_j*(bsum_2j+bsum_2j+1)   u6 mins x Q8_K bsums, int32
//	      acc += float32((d*d_x)*float32(sumi)) - float32((dmin*d_x)*float32(summ))   f16 d, dmin; f32 d_x
//	Q6_K  sumi = sum_16 sc_g*sum_16(q_w*q_x)                      int8 codes (q-32), int8 scales, int32
//	      acc += float32(sumi) * (d*d_x)
//	F32, F16, BF16: acc = (s0+s1)+(s2+s3), four f32 partial sums of w*x over
//	      the tile's elements (x rounded to f16 / bf16 by the host)
//	then  y = acc (first tile of the dispatch), else y = y + acc   f32
//
// Blocks are summed in order within a tile, and tiles in order into y.
// This is the order of package cpu's kernels, so for the same activations
// the device's output equals cpu.MatVec's bit for bit (a kernel written
// for the AIE may reorder the f32 sums; the contract it is held to is then
// the cosine bound of the tests). The integer parts are exact on any
// order; the f32 scale products are one multiply per block, cheap even on
// AIE-ML, whose fp32 multiply is emulated.

// model is the Go model of the GEMV kernel: a ColumnKernel for weights of
// one format and K-tile (any, with anyType).
type model struct {
	typ     planar.Type
	kTile   int
	anyType bool
	columns int
}

// GoKernels is the KernelFactory of the Go model.
func GoKernels(typ planar.Type, kTile int) (ColumnKernel, error) {
	return &model{typ: typ, kTile: kTile, anyType: typ == 0 && kTile == 0}, nil
}

// RunColumn parses the header object, checks that the streams hold exactly
// what it implies (on hardware a short stream hangs the core and a long
// one the DMA), and computes the column's rows chunk by chunk, reading
// each row chunk's replay of the activation records.
func (k *model) RunColumn(col int, w, acts, out []byte) (int, error) {
	p, err := npu.ParseParams(acts, npu.MaxColumns)
	if err != nil {
		return 0, err
	}
	if !k.anyType && (p.Type != k.typ || p.T != k.kTile) {
		return 0, fmt.Errorf("%w: %s tiles of %d, the kernel is a %s GEMV with tiles of %d", npu.ErrParams, p.Type, p.T, k.typ, k.kTile)
	}
	rows := 0
	if col < len(p.Rows) {
		rows = p.Rows[col]
	}
	if want := 4 * p.Tokens * rows; len(out) != want {
		return 0, fmt.Errorf("column %d: %d rows x %d tokens make %d output bytes, the stream drains %d", col, rows, p.Tokens, want, len(out))
	}
	if want := npu.ParamsBytes + p.RowChunks*p.ActBytes(); len(acts) != want {
		return 0, fmt.Errorf("activation stream of %d bytes, the header implies %d (%d row chunks of %d)", len(acts), want, p.RowChunks, p.ActBytes())
	}
	if rows == 0 {
		if len(w) != 0 {
			return 0, fmt.Errorf("column %d has no rows but streamed %d weight bytes", col, len(w))
		}
		return 0, nil
	}
	pc := *p
	pc.Rows = []int{rows}
	if want := pc.WeightBytes(0); len(w) != want {
		return 0, fmt.Errorf("column %d: weight stream of %d bytes, %d rows x %d tiles need %d", col, len(w), rows, p.Tiles, want)
	}
	al := npu.ActLayoutOf(p.Type, p.T)
	rec := p.RecordBytes()
	f, _ := planar.FormatOf(p.Type) // ParseParams checked it
	np := len(f.Planes)
	acc := make([]float32, p.Tokens*p.RowChunk)
	wo, oo := 0, 0
	for r := 0; r < p.RowChunks; r++ {
		rc := p.ChunkRows(rows, r)
		replay := acts[npu.ParamsBytes+r*p.ActBytes():]
		g := npu.RunGeometry(p.Type, rc, p.T, 1)
		var off, per [4]int
		for q := 0; q < np; q++ {
			off[q], per[q] = g.PlaneOffset(0, 0, q)
		}
		tb := g.TileBytes(rc)
		var pl [4][]byte
		for i := 0; i < p.Tiles; i++ {
			tile := w[wo : wo+tb]
			for row := 0; row < rc; row++ {
				for q := 0; q < np; q++ {
					pl[q] = tile[off[q]+row*per[q] : off[q]+(row+1)*per[q]]
				}
				for b := 0; b < p.Tokens; b++ {
					a := replay[(i*p.Tokens+b)*rec : (i*p.Tokens+b+1)*rec]
					v := dot(p.Type, &al, &pl, a, 0, p.T)
					if i > 0 {
						v = acc[b*rc+row] + v
					}
					acc[b*rc+row] = v
				}
			}
			wo += tb
		}
		for _, v := range acc[:p.Tokens*rc] {
			binary.LittleEndian.PutUint32(out[oo:], math.Float32bits(v))
			oo += 4
		}
	}
	return oo, nil
}

// dot is one row's tile (planes pl) against one token's activation tile tt
// of t inputs.
func dot(typ planar.Type, al *npu.ActLayout, pl *[4][]byte, a []byte, tt, t int) float32 {
	x := a[tt*t : (tt+1)*t] // int8 codes (Q8 kinds)
	switch typ {
	case planar.Q4_0, planar.Q5_0, planar.Q8_0:
		xd := a[al.Scales+2*(tt*t/32) : al.Scales+2*((tt+1)*t/32)]
		switch typ {
		case planar.Q4_0:
			return dotQ4_0(pl[0], pl[1], x, xd)
		case planar.Q5_0:
			return dotQ5_0(pl[0], pl[1], pl[2], x, xd)
		}
		return dotQ8_0(pl[0], pl[1], x, xd)
	case planar.Q4_K, planar.Q5_K, planar.Q6_K:
		xd := a[al.Scales+4*(tt*t/256) : al.Scales+4*((tt+1)*t/256)]
		bs := a[al.Sums+2*(tt*t/16) : al.Sums+2*((tt+1)*t/16)]
		switch typ {
		case planar.Q4_K:
			return dotK(pl[0], nil, pl[1], pl[2], x, xd, bs)
		case planar.Q5_K:
			return dotK(pl[0], pl[1], pl[2], pl[3], x, xd, bs)
		}
		return dotQ6_K(pl[0], pl[1], pl[2], x, xd)
	}
	xf := a[4*tt*t : 4*(tt+1)*t]
	return dotFloat(typ, pl[0], xf)
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
func f16(b []byte) float32 { return planar.F16ToF32(le16(b)) }
func f32(b []byte) float32 { return math.Float32frombits(le32(b)) }

// nib32 returns sum over j < 32 of code_j*x_j, code 2i in the low nibble of
// c[i] and 2i+1 in the high one, and sum of x_j.
func nib32(c, x []byte) (dot, sum int32) {
	c, x = c[:16], x[:32]
	for i, v := range c {
		a0, a1 := int32(int8(x[2*i])), int32(int8(x[2*i+1]))
		dot += int32(v&15)*a0 + int32(v>>4)*a1
		sum += a0 + a1
	}
	return dot, sum
}

// hi32 returns the sum of x_j over the j < 32 whose bit j of h is set.
func hi32(h uint32, x []byte) int32 {
	var s int32
	for j := 0; j < 32; j++ {
		if h>>j&1 != 0 {
			s += int32(int8(x[j]))
		}
	}
	return s
}

func i8dot(c, x []byte) int32 {
	x = x[:len(c)]
	var s int32
	for i, v := range c {
		s += int32(int8(v)) * int32(int8(x[i]))
	}
	return s
}

func dotQ4_0(codes, scales, x, xd []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/2; i++ {
		v, s := nib32(codes[16*i:], x[32*i:])
		v -= 8 * s
		acc += float32(v) * (f16(scales[2*i:]) * f16(xd[2*i:]))
	}
	return acc
}

func dotQ5_0(codes, high, scales, x, xd []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/2; i++ {
		xb := x[32*i : 32*i+32]
		v, s := nib32(codes[16*i:], xb)
		v += 16*hi32(le32(high[4*i:]), xb) - 16*s
		acc += float32(v) * (f16(scales[2*i:]) * f16(xd[2*i:]))
	}
	return acc
}

func dotQ8_0(codes, scales, x, xd []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/2; i++ {
		v := i8dot(codes[32*i:32*i+32], x[32*i:])
		acc += float32(v) * (f16(scales[2*i:]) * f16(xd[2*i:]))
	}
	return acc
}

// dotK is Q4_K (high == nil) or Q5_K: per super-block, codes 128 bytes,
// high 32, scalemins 16 (8 scales then 8 mins), dmin 4 (f16 d, f16 dmin).
func dotK(codes, high, sm, dm, x, xd, bs []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/4; i++ {
		c := codes[128*i:]
		a := x[256*i:]
		sc := sm[16*i : 16*i+16]
		var sumi, summ int32
		for j := 0; j < 8; j++ {
			aj := a[32*j : 32*j+32]
			v, _ := nib32(c[16*j:], aj)
			if high != nil {
				v += 16 * hi32(le32(high[32*i+4*j:]), aj)
			}
			sumi += int32(sc[j]) * v
			b0 := int32(int16(le16(bs[2*(16*i+2*j):])))
			b1 := int32(int16(le16(bs[2*(16*i+2*j+1):])))
			summ += int32(sc[8+j]) * (b0 + b1)
		}
		dx := f32(xd[4*i:])
		dd := f16(dm[4*i:]) * dx
		dmin := f16(dm[4*i+2:]) * dx
		acc += float32(dd*float32(sumi)) - float32(dmin*float32(summ))
	}
	return acc
}

func dotQ6_K(codes, scales, dp, x, xd []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/4; i++ {
		c := codes[256*i:]
		a := x[256*i:]
		var sumi int32
		for g := 0; g < 16; g++ {
			sumi += int32(int8(scales[16*i+g])) * i8dot(c[16*g:16*g+16], a[16*g:])
		}
		acc += float32(sumi) * (f16(dp[2*i:]) * f32(xd[4*i:]))
	}
	return acc
}

// dotFloat is the f32 product of a tile of F32, F16 or BF16 weights with x
// (f32, already rounded to the weights' type by the host).
func dotFloat(typ planar.Type, w, x []byte) float32 {
	n := len(x) / 4
	wv := func(i int) float32 {
		switch typ {
		case planar.F16:
			return f16(w[2*i:])
		case planar.BF16:
			return math.Float32frombits(uint32(le16(w[2*i:])) << 16)
		}
		return f32(w[4*i:])
	}
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += wv(i) * f32(x[4*i:])
		s1 += wv(i+1) * f32(x[4*i+4:])
		s2 += wv(i+2) * f32(x[4*i+8:])
		s3 += wv(i+3) * f32(x[4*i+12:])
	}
	for ; i < n; i++ {
		s0 += wv(i) * f32(x[4*i:])
	}
	return (s0 + s1) + (s2 + s3)
}
