package planar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrFormat reports a planar blob that no GGUF source could have produced,
// such as a Q4_K scale byte wider than 6 bits or a Q6_K code outside
// [-32, 31]. Unpack refuses such blobs rather than silently drop bits.
var ErrFormat = errors.New("malformed planar blob")

// rowPlanes holds, for one row of a group and one K-tile, that row's slice of
// each plane (unused entries are nil).
type rowPlanes [4][]byte

// codec converts one row's K-tile between its GGUF blocks and its planes.
// The slices are exactly sized: src/dst hold T/Block GGUF blocks, p[i] holds
// PerRow(T) bytes of plane i, and dst of dequant holds T floats. pack
// converts a run of n rows at once: src holds their tiles at offsets 0,
// stride, ..., (n-1)*stride, tile bytes each, and p[i] holds n*PerRow(T)
// bytes, the rows' slices of plane i in order (packrow.go).
type codec struct {
	pack    func(src []byte, stride, tile int, p rowPlanes)
	unpack  func(p rowPlanes, dst []byte) error // error names the block inside the tile
	dequant func(p rowPlanes, dst []float32)
}

func codecOf(t Type) *codec {
	switch t {
	case Q4_0:
		return &codecQ4_0
	case Q5_0:
		return &codecQ5_0
	case Q8_0:
		return &codecQ8_0
	case Q4_K:
		return &codecQ4_K
	case Q5_K:
		return &codecQ5_K
	case Q6_K:
		return &codecQ6_K
	case F16:
		return &codecF16
	case BF16:
		return &codecBF16
	case F32:
		return &codecF32
	}
	return nil
}

// groupLayout is the placement of one column group: the offset of each plane
// in tile 0, the bytes per row of each plane, and the tile stride. Tile t of
// plane p starts at off[p] + t*stride (Geometry.PlaneOffset).
type groupLayout struct {
	first, rows int
	nplanes     int
	off, per    [4]int
	stride      int
}

func (g Geometry) groupLayout(c int) groupLayout {
	var l groupLayout
	l.first, l.rows = g.GroupRows(c)
	l.nplanes = len(g.Format().Planes)
	l.stride = g.TileBytes(l.rows)
	for p := 0; p < l.nplanes; p++ {
		l.off[p], l.per[p] = g.PlaneOffset(c, 0, p)
	}
	return l
}

// row sets p to row i's slices of the planes of tile t.
func (l *groupLayout) row(blob []byte, t, i int, p *rowPlanes) {
	for k := 0; k < l.nplanes; k++ {
		o := l.off[k] + t*l.stride + i*l.per[k]
		p[k] = blob[o : o+l.per[k] : o+l.per[k]]
	}
}

func checkLengths(g Geometry, src, dst []byte, srcWhat, dstWhat string, srcWant, dstWant int) error {
	if len(src) != srcWant {
		return fmt.Errorf("%w: %s of %d bytes for %s [%d][%d], want %d", ErrShape, srcWhat, len(src), g.Type, g.N, g.K, srcWant)
	}
	if len(dst) != dstWant {
		return fmt.Errorf("%w: %s of %d bytes for %s [%d][%d], want %d", ErrShape, dstWhat, len(dst), g.Type, g.N, g.K, dstWant)
	}
	return nil
}

// chunkBytes is the GGUF data of the rows that Pack and Unpack convert
// together, tile by tile: small enough to stay in a core's L2 cache.
const chunkBytes = 64 << 10

// Pack converts the GGUF data of a matrix, src = N rows of K elements
// (row-major, len g.SourceBytes()), into the planar blob dst (len g.Size()).
// Every byte of dst is written; the padding after each plane is zero.
// Unpack is its exact inverse. Pack fails only on an invalid geometry or
// buffer length: every byte pattern of the source blocks is representable.
func Pack(g Geometry, src, dst []byte) error { return PackFunc(g, src, dst, nil) }

// PackFunc is Pack, and calls done (if not nil) with successive pieces of
// dst, in order and together all of it, each as soon as it is final: a
// column group's run, while it is still in the cache if it is no larger
// than the cache (so that the caller can checksum the blob without reading
// it from memory again). done must not keep or change the piece.
func PackFunc(g Geometry, src, dst []byte, done func(piece []byte)) error {
	return PackGroups(g, 0, g.Columns, src, dst, done)
}

// PackGroups is PackFunc for the column groups c0..c1-1 alone: src is the
// GGUF data of their rows (bytes SourceOffset(c0) to SourceOffset(c1) of
// it), and dst the part of the blob they fill, bytes GroupOffset(c0) to
// GroupOffset(c1) of it. The bytes it writes are those of Pack's blob, so
// a blob can be packed a run of groups at a time (a matrix too large to
// hold whole: the packer's pipeline).
func PackGroups(g Geometry, c0, c1 int, src, dst []byte, done func(piece []byte)) error {
	if err := g.Check(); err != nil {
		return err
	}
	if c0 < 0 || c1 > g.Columns || c0 >= c1 {
		return fmt.Errorf("%w: column groups %d..%d of %d", ErrShape, c0, c1-1, g.Columns)
	}
	rowBytes, tileBytes := g.Type.RowBytes(g.K), g.Type.RowBytes(g.KTile)
	first, _ := g.GroupRows(c0)
	base := g.GroupOffset(c0)
	if err := checkLengths(g, src, dst, "source", "blob", g.SourceOffset(c1)-g.SourceOffset(c0), g.GroupOffset(c1)-base); err != nil {
		return err
	}
	cd := codecOf(g.Type)
	chunk := max(1, chunkBytes/rowBytes)
	var p rowPlanes
	sent := 0 // dst[:sent] has been given to done
	for c := c0; c < c1; c++ {
		l := g.groupLayout(c)
		if l.rows == 0 {
			continue
		}
		for k := 0; k < l.nplanes; k++ {
			l.off[k] -= base
		}
		for t := 0; t < g.Tiles(); t++ {
			for k := 0; k < l.nplanes; k++ {
				o := l.off[k] + t*l.stride
				clear(dst[o+l.rows*l.per[k] : o+align(l.rows*l.per[k])])
			}
		}
		// Rows in chunks whose source stays in cache while the tiles are
		// walked, so the source is read from memory once. The chunk's rows
		// are contiguous in each plane of a tile: one call packs them.
		for i0 := 0; i0 < l.rows; i0 += chunk {
			n := min(chunk, l.rows-i0)
			for t := 0; t < g.Tiles(); t++ {
				s := (l.first-first+i0)*rowBytes + t*tileBytes
				e := s + (n-1)*rowBytes + tileBytes
				for k := 0; k < l.nplanes; k++ {
					o := l.off[k] + t*l.stride + i0*l.per[k]
					p[k] = dst[o : o+n*l.per[k] : o+n*l.per[k]]
				}
				cd.pack(src[s:e:e], rowBytes, tileBytes, p)
			}
		}
		if done != nil {
			end := l.off[0] + g.Tiles()*l.stride
			done(dst[sent:end:end])
			sent = end
		}
	}
	if done != nil && sent < len(dst) {
		done(dst[sent:])
	}
	return nil
}

// Unpack converts the planar blob src (len g.Size()) back to the GGUF data
// dst (len g.SourceBytes()), bit for bit what Pack was given. Padding bytes
// are ignored. A blob holding a value that no GGUF block can encode is
// refused with ErrFormat, naming the row and block.
func Unpack(g Geometry, src, dst []byte) error {
	if err := g.Check(); err != nil {
		return err
	}
	if err := checkLengths(g, src, dst, "blob", "destination", g.Size(), g.SourceBytes()); err != nil {
		return err
	}
	cd := codecOf(g.Type)
	rowBytes, tileBytes := g.Type.RowBytes(g.K), g.Type.RowBytes(g.KTile)
	chunk := max(1, chunkBytes/rowBytes)
	var p rowPlanes
	for c := 0; c < g.Columns; c++ {
		l := g.groupLayout(c)
		for i0 := 0; i0 < l.rows; i0 += chunk {
			for t := 0; t < g.Tiles(); t++ {
				for i := i0; i < min(i0+chunk, l.rows); i++ {
					s := (l.first+i)*rowBytes + t*tileBytes
					l.row(src, t, i, &p)
					if err := cd.unpack(p, dst[s:s+tileBytes:s+tileBytes]); err != nil {
						return fmt.Errorf("%w: %s row %d, K-tile %d: %v", ErrFormat, g.Format().Name, l.first+i, t, err)
					}
				}
			}
		}
	}
	return nil
}

// seqToNibbles is the inverse of nibblesToSeqRef (and of splitToSeq); its
// reference loop is
//
//	for i := 0; i < h; i++ {
//		q[2*i] = s[i]&0x0f | s[h+i]<<4
//		q[2*i+1] = s[i]>>4 | s[h+i]&0xf0
//	}
func seqToNibbles(s, q []byte) {
	h := len(s) / 2
	q = q[:len(s)]
	for m := 0; m < h/4; m++ {
		a := spreadBytes(binary.LittleEndian.Uint32(s[4*m:]))
		b := spreadBytes(binary.LittleEndian.Uint32(s[h+4*m:]))
		const m0f, mf0 = 0x000f000f000f000f, 0x00f000f000f000f0
		binary.LittleEndian.PutUint64(q[8*m:], a&m0f|(a&mf0)<<4|(b&m0f)<<4|(b&mf0)<<8)
	}
}

// evenBytes gathers bytes 0, 2, 4, 6 of x into a uint32.
func evenBytes(x uint64) uint32 {
	x &= 0x00ff00ff00ff00ff
	x = (x | x>>8) & 0x0000ffff0000ffff
	return uint32(x | x>>16)
}

// spreadBytes places the bytes of x at bytes 0, 2, 4, 6 of a uint64.
func spreadBytes(x uint32) uint64 {
	y := uint64(x)
	y = (y | y<<16) & 0x0000ffff0000ffff
	return (y | y<<8) & 0x00ff00ff00ff00ff
}

// transpose8 transposes the 8x8 bit matrix held in x, where bit k of byte b
// is entry (b, k): afterwards bit b of byte k holds it (an involution).
func transpose8(x uint64) uint64 {
	t := (x ^ x>>7) & 0x00aa00aa00aa00aa
	x ^= t ^ t<<7
	t = (x ^ x>>14) & 0x0000cccc0000cccc
	x ^= t ^ t<<14
	t = (x ^ x>>28) & 0x00000000f0f0f0f0
	x ^= t ^ t<<28
	return x
}

// seqToQ5kHigh is the inverse of q5kHighToSeqRef (and of q5kHigh).
func seqToQ5kHigh(s, qh []byte) {
	s, qh = s[:32], qh[:32]
	for m := 0; m < 4; m++ {
		var x uint64
		for k := 0; k < 8; k++ {
			x |= uint64(s[4*k+m]) << (8 * k)
		}
		binary.LittleEndian.PutUint64(qh[8*m:], transpose8(x))
	}
}

// checkSixBits reports the first byte of b wider than 6 bits.
func checkSixBits(b []byte, block int) error {
	var or byte
	for _, v := range b {
		or |= v
	}
	if or < 64 {
		return nil
	}
	for i, v := range b {
		if v >= 64 {
			what := "scale"
			if i >= 8 {
				what, i = "min", i-8
			}
			return fmt.Errorf("block %d: sub-block %s %d is %d, wider than 6 bits", block, what, i, v)
		}
	}
	return nil
}

// ---- Q4_0: planes codes [T/2], scales [T/32 f16] ----

var codecQ4_0 = codec{
	pack: packQ4_0,
	unpack: func(p rowPlanes, dst []byte) error {
		codes, scales := p[0], p[1]
		for b := 0; b < len(scales)/2; b++ {
			d := dst[18*b : 18*b+18]
			d[0], d[1] = scales[2*b], scales[2*b+1]
			seqToNibbles(codes[16*b:16*b+16], d[2:18])
		}
		return nil
	},
	dequant: func(p rowPlanes, dst []float32) {
		codes, scales := p[0], p[1]
		for b := 0; b < len(scales)/2; b++ {
			d := f16At(scales, 2*b)
			c := codes[16*b : 16*b+16]
			y := dst[32*b : 32*b+32]
			for i, v := range c {
				y[2*i] = float32(int(v&0x0f)-8) * d
				y[2*i+1] = float32(int(v>>4)-8) * d
			}
		}
	},
}

// ---- Q5_0: planes codes [T/2], high [T/8], scales [T/32 f16] ----

var codecQ5_0 = codec{
	pack: packQ5_0,
	unpack: func(p rowPlanes, dst []byte) error {
		codes, high, scales := p[0], p[1], p[2]
		for b := 0; b < len(scales)/2; b++ {
			d := dst[22*b : 22*b+22]
			d[0], d[1] = scales[2*b], scales[2*b+1]
			copy(d[2:6], high[4*b:4*b+4])
			seqToNibbles(codes[16*b:16*b+16], d[6:22])
		}
		return nil
	},
	dequant: func(p rowPlanes, dst []float32) {
		codes, high, scales := p[0], p[1], p[2]
		for b := 0; b < len(scales)/2; b++ {
			d := f16At(scales, 2*b)
			qh := binary.LittleEndian.Uint32(high[4*b:])
			c := codes[16*b : 16*b+16]
			y := dst[32*b : 32*b+32]
			for i, v := range c {
				h0 := byte(qh>>(2*i)&1) << 4
				h1 := byte(qh>>(2*i+1)&1) << 4
				y[2*i] = float32(int(v&0x0f|h0)-16) * d
				y[2*i+1] = float32(int(v>>4|h1)-16) * d
			}
		}
	},
}

// ---- Q8_0: planes codes [T int8], scales [T/32 f16] ----

var codecQ8_0 = codec{
	pack: packQ8_0,
	unpack: func(p rowPlanes, dst []byte) error {
		codes, scales := p[0], p[1]
		for b := 0; b < len(scales)/2; b++ {
			d := dst[34*b : 34*b+34]
			d[0], d[1] = scales[2*b], scales[2*b+1]
			copy(d[2:34], codes[32*b:32*b+32])
		}
		return nil
	},
	dequant: func(p rowPlanes, dst []float32) {
		codes, scales := p[0], p[1]
		for b := 0; b < len(scales)/2; b++ {
			d := f16At(scales, 2*b)
			y := dst[32*b : 32*b+32]
			for i, v := range codes[32*b : 32*b+32] {
				y[i] = float32(int8(v)) * d
			}
		}
	},
}

// ---- Q4_K: planes codes [T/2], scalemins [T/256][16], dmin [T/256][2 f16] ----

var codecQ4_K = codec{
	pack: packQ4_K,
	unpack: func(p rowPlanes, dst []byte) error {
		codes, sm, dm := p[0], p[1], p[2]
		for b := 0; b < len(dm)/4; b++ {
			if err := checkSixBits(sm[16*b:16*b+16], b); err != nil {
				return err
			}
			d := dst[144*b : 144*b+144]
			copy(d[0:4], dm[4*b:4*b+4])
			unpackScaleMins(sm[16*b:16*b+16], d[4:16])
			q, c := d[16:144], codes[128*b:128*b+128]
			for j := 0; j < 4; j++ {
				seqToNibbles(c[32*j:32*j+32], q[32*j:32*j+32])
			}
		}
		return nil
	},
	dequant: func(p rowPlanes, dst []float32) { dequantK(p[0], nil, p[1], p[2], dst) },
}

// ---- Q5_K: planes codes [T/2], high [T/8], scalemins [T/256][16], dmin [T/256][2 f16] ----

var codecQ5_K = codec{
	pack: packQ5_K,
	unpack: func(p rowPlanes, dst []byte) error {
		codes, high, sm, dm := p[0], p[1], p[2], p[3]
		for b := 0; b < len(dm)/4; b++ {
			if err := checkSixBits(sm[16*b:16*b+16], b); err != nil {
				return err
			}
			d := dst[176*b : 176*b+176]
			copy(d[0:4], dm[4*b:4*b+4])
			unpackScaleMins(sm[16*b:16*b+16], d[4:16])
			seqToQ5kHigh(high[32*b:32*b+32], d[16:48])
			q, c := d[48:176], codes[128*b:128*b+128]
			for j := 0; j < 4; j++ {
				seqToNibbles(c[32*j:32*j+32], q[32*j:32*j+32])
			}
		}
		return nil
	},
	dequant: func(p rowPlanes, dst []float32) { dequantK(p[0], p[1], p[2], p[3], dst) },
}

// unpackScaleMins is the inverse of packScaleMinsRef (and of scaleMins): sm,
// the 8 sub-block scales then the 8 mins, back to the 12-byte scales array q.
func unpackScaleMins(sm, q []byte) {
	sc, m := [8]byte(sm[0:8]), [8]byte(sm[8:16])
	packScaleMinK4(&sc, &m, q)
}

// dequantK decodes the planes of a Q4_K (high == nil) or Q5_K tile row:
// element e of block b has sub-block s = e/32 and
// y = (d*sc[s])*q - dmin*m[s], with the products rounded to float32.
func dequantK(codes, high, sm, dm []byte, dst []float32) {
	for b := 0; b < len(dm)/4; b++ {
		d, dmin := f16At(dm, 4*b), f16At(dm, 4*b+2)
		s := sm[16*b : 16*b+16]
		c := codes[128*b : 128*b+128]
		var h []byte
		if high != nil {
			h = high[32*b : 32*b+32]
		}
		for sb := 0; sb < 8; sb++ {
			d1, m1 := d*float32(s[sb]), dmin*float32(s[8+sb])
			y := dst[256*b+32*sb : 256*b+32*sb+32]
			cc := c[16*sb : 16*sb+16]
			if h == nil {
				for i, v := range cc {
					y[2*i] = float32(d1*float32(v&0x0f)) - m1
					y[2*i+1] = float32(d1*float32(v>>4)) - m1
				}
				continue
			}
			hb := binary.LittleEndian.Uint32(h[4*sb:])
			for i, v := range cc {
				q0 := v&0x0f | byte(hb>>(2*i)&1)<<4
				q1 := v>>4 | byte(hb>>(2*i+1)&1)<<4
				y[2*i] = float32(d1*float32(q0)) - m1
				y[2*i+1] = float32(d1*float32(q1)) - m1
			}
		}
	}
}

// ---- Q6_K: planes codes [T int8, q-32], scales [T/16 int8], d [T/256 f16] ----

var codecQ6_K = codec{
	pack: packQ6_K,
	unpack: func(p rowPlanes, dst []byte) error {
		codes, scales, dd := p[0], p[1], p[2]
		for b := 0; b < len(dd)/2; b++ {
			c := codes[256*b : 256*b+256]
			var or byte
			for _, v := range c {
				or |= v + 32
			}
			if or >= 64 {
				for i, v := range c {
					if v+32 >= 64 {
						return fmt.Errorf("block %d: code %d is %d, outside [-32, 31]", b, i, int8(v))
					}
				}
			}
			d := dst[210*b : 210*b+210]
			copy(d[192:208], scales[16*b:16*b+16])
			d[208], d[209] = dd[2*b], dd[2*b+1]
			for h := 0; h < 2; h++ {
				ql := d[64*h : 64*h+64]
				qh := d[128+32*h : 128+32*h+32]
				o := c[128*h : 128*h+128]
				for l := 0; l < 32; l++ {
					q1, q2, q3, q4 := o[l]+32, o[l+32]+32, o[l+64]+32, o[l+96]+32
					ql[l] = q1&0x0f | q3<<4
					ql[l+32] = q2&0x0f | q4<<4
					qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
				}
			}
		}
		return nil
	},
	dequant: func(p rowPlanes, dst []float32) {
		codes, scales, dd := p[0], p[1], p[2]
		for b := 0; b < len(dd)/2; b++ {
			d := f16At(dd, 2*b)
			for s := 0; s < 16; s++ {
				ds := d * float32(int8(scales[16*b+s]))
				y := dst[256*b+16*s : 256*b+16*s+16]
				for i, v := range codes[256*b+16*s : 256*b+16*s+16] {
					y[i] = ds * float32(int8(v))
				}
			}
		}
	},
}

// ---- F16, BF16, F32: one plane, values [T], copied ----

// copyPack packs the rows of a float format: each row's tile is copied.
func copyPack(src []byte, stride, tile int, p rowPlanes) {
	v := p[0]
	for o := 0; o+tile <= len(src) && tile <= len(v); o += stride {
		copy(v[:tile], src[o:o+tile])
		v = v[tile:]
	}
}

func copyUnpack(p rowPlanes, dst []byte) error { copy(dst, p[0]); return nil }

var (
	codecF16 = codec{copyPack, copyUnpack, func(p rowPlanes, dst []float32) {
		v := p[0]
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(v[2*i:]))
		}
	}}
	codecBF16 = codec{copyPack, copyUnpack, func(p rowPlanes, dst []float32) {
		v := p[0]
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(v[2*i:]))
		}
	}}
	codecF32 = codec{copyPack, copyUnpack, func(p rowPlanes, dst []float32) {
		v := p[0]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:]))
		}
	}}
)
