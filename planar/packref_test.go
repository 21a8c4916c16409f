package planar

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// This file keeps the Pack of before the word-at-a-time row kernels of
// packrow.go, as the reference they are tested against: packRef is that
// Pack, and each pack*Ref its row kernel for one format.

// packRef is Pack with the reference row kernels.
func packRef(g Geometry, src, dst []byte) error {
	if err := g.Check(); err != nil {
		return err
	}
	if err := checkLengths(g, src, dst, "source", "blob", g.SourceBytes(), g.Size()); err != nil {
		return err
	}
	pack := packRefOf(g.Type)
	rowBytes, tileBytes := g.Type.RowBytes(g.K), g.Type.RowBytes(g.KTile)
	chunk := max(1, chunkBytes/rowBytes)
	var p rowPlanes
	for c := 0; c < g.Columns; c++ {
		l := g.groupLayout(c)
		if l.rows == 0 {
			continue
		}
		for t := 0; t < g.Tiles(); t++ {
			for k := 0; k < l.nplanes; k++ {
				o := l.off[k] + t*l.stride
				clear(dst[o+l.rows*l.per[k] : o+align(l.rows*l.per[k])])
			}
		}
		for i0 := 0; i0 < l.rows; i0 += chunk {
			for t := 0; t < g.Tiles(); t++ {
				for i := i0; i < min(i0+chunk, l.rows); i++ {
					s := (l.first+i)*rowBytes + t*tileBytes
					l.row(dst, t, i, &p)
					pack(src[s:s+tileBytes:s+tileBytes], p)
				}
			}
		}
	}
	return nil
}

func packRefOf(t Type) func(src []byte, p rowPlanes) {
	switch t {
	case Q4_0:
		return packQ4_0Ref
	case Q5_0:
		return packQ5_0Ref
	case Q8_0:
		return packQ8_0Ref
	case Q4_K:
		return packQ4_KRef
	case Q5_K:
		return packQ5_KRef
	case Q6_K:
		return packQ6_KRef
	}
	return copyPackRef
}

func copyPackRef(src []byte, p rowPlanes) { copy(p[0], src) }

// nibblesToSeqRef reorders the 4-bit codes of ggml's split layout into
// sequential order. In q (2h bytes, h a multiple of 4), element j < 2h is
// the low nibble of q[j] and element 2h+j the high nibble (block_q4_0 with
// h = 8, one 64-element chunk of block_q4_K with h = 16). In out, element e
// is at byte e/2, low nibble for even e. The reference loop is
//
//	for i := 0; i < h; i++ {
//		out[i] = q[2*i]&0x0f | q[2*i+1]<<4
//		out[h+i] = q[2*i]>>4 | q[2*i+1]&0xf0
//	}
//
// done here eight source bytes at a time.
func nibblesToSeqRef(q, out []byte) {
	h := len(q) / 2
	out = out[:len(q)]
	for m := 0; m < h/4; m++ {
		x := binary.LittleEndian.Uint64(q[8*m:])
		lo := x & 0x0f0f0f0f0f0f0f0f
		hi := x & 0xf0f0f0f0f0f0f0f0
		binary.LittleEndian.PutUint32(out[4*m:], evenBytes(lo|lo>>4))
		binary.LittleEndian.PutUint32(out[h+4*m:], evenBytes(hi>>4|hi>>8))
	}
}

// q5kHighToSeqRef converts block_q5_K's qh[32] (the 5th bit of element 32k+l is
// bit k of qh[l]) into the sequential high plane (element e at byte e/8, bit
// e%8): out[4k+m] bit b = qh[8m+b] bit k.
func q5kHighToSeqRef(qh, out []byte) {
	qh, out = qh[:32], out[:32]
	for m := 0; m < 4; m++ {
		x := transpose8(binary.LittleEndian.Uint64(qh[8*m:]))
		for k := 0; k < 8; k++ {
			out[4*k+m] = byte(x >> (8 * k))
		}
	}
}

// packScaleMinsRef writes the 12-byte scales array q of a block_q4_K/q5_K as
// sm = the 8 sub-block scales then the 8 mins, one byte each.
func packScaleMinsRef(q, sm []byte) {
	var sc, m [8]byte
	scaleMinK4(q, &sc, &m)
	copy(sm[0:8], sc[:])
	copy(sm[8:16], m[:])
}

func packQ4_0Ref(src []byte, p rowPlanes) {
	codes, scales := p[0], p[1]
	for b := 0; b < len(scales)/2; b++ {
		s := src[18*b : 18*b+18]
		scales[2*b], scales[2*b+1] = s[0], s[1]
		nibblesToSeqRef(s[2:18], codes[16*b:16*b+16])
	}
}

func packQ5_0Ref(src []byte, p rowPlanes) {
	codes, high, scales := p[0], p[1], p[2]
	for b := 0; b < len(scales)/2; b++ {
		s := src[22*b : 22*b+22]
		scales[2*b], scales[2*b+1] = s[0], s[1]
		copy(high[4*b:4*b+4], s[2:6])
		nibblesToSeqRef(s[6:22], codes[16*b:16*b+16])
	}
}

func packQ8_0Ref(src []byte, p rowPlanes) {
	codes, scales := p[0], p[1]
	for b := 0; b < len(scales)/2; b++ {
		s := src[34*b : 34*b+34]
		scales[2*b], scales[2*b+1] = s[0], s[1]
		copy(codes[32*b:32*b+32], s[2:34])
	}
}

func packQ4_KRef(src []byte, p rowPlanes) {
	codes, sm, dm := p[0], p[1], p[2]
	for b := 0; b < len(dm)/4; b++ {
		s := src[144*b : 144*b+144]
		copy(dm[4*b:4*b+4], s[0:4])
		packScaleMinsRef(s[4:16], sm[16*b:16*b+16])
		q, c := s[16:144], codes[128*b:128*b+128]
		for j := 0; j < 4; j++ {
			nibblesToSeqRef(q[32*j:32*j+32], c[32*j:32*j+32])
		}
	}
}

func packQ5_KRef(src []byte, p rowPlanes) {
	codes, high, sm, dm := p[0], p[1], p[2], p[3]
	for b := 0; b < len(dm)/4; b++ {
		s := src[176*b : 176*b+176]
		copy(dm[4*b:4*b+4], s[0:4])
		packScaleMinsRef(s[4:16], sm[16*b:16*b+16])
		q5kHighToSeqRef(s[16:48], high[32*b:32*b+32])
		q, c := s[48:176], codes[128*b:128*b+128]
		for j := 0; j < 4; j++ {
			nibblesToSeqRef(q[32*j:32*j+32], c[32*j:32*j+32])
		}
	}
}

func packQ6_KRef(src []byte, p rowPlanes) {
	codes, scales, dd := p[0], p[1], p[2]
	for b := 0; b < len(dd)/2; b++ {
		s := src[210*b : 210*b+210]
		copy(scales[16*b:16*b+16], s[192:208])
		dd[2*b], dd[2*b+1] = s[208], s[209]
		c := codes[256*b : 256*b+256]
		for h := 0; h < 2; h++ {
			ql := s[64*h : 64*h+64]
			qh := s[128+32*h : 128+32*h+32]
			o := c[128*h : 128*h+128]
			for l := 0; l < 32; l++ {
				a, bb, hh := ql[l], ql[l+32], qh[l]
				o[l] = (a&0x0f | (hh&3)<<4) - 32
				o[l+32] = (bb&0x0f | (hh>>2&3)<<4) - 32
				o[l+64] = (a>>4 | (hh>>4&3)<<4) - 32
				o[l+96] = (bb>>4 | (hh>>6)<<4) - 32
			}
		}
	}
}

// TestPackMatchesRef compares Pack with packRef byte for byte, both writing
// over stale bytes, for every format over the odd shapes of shapes, a group
// taller than one chunk, and random and patterned sources.
func TestPackMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	for _, typ := range Supported() {
		gs := shapes(typ)
		bs := max(typ.BlockSize(), 8)
		gs = append(gs,
			Geometry{typ, 3, 9 * bs, 2, 9 * bs},
			Geometry{typ, 11, 7 * bs, 3, bs},
			Geometry{typ, chunkBytes/typ.RowBytes(2*bs) + 5, 2 * bs, 1, bs}, // more rows than one chunk
		)
		for _, g := range gs {
			if err := g.Check(); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			srcs := [][]byte{randomSource(rng, g.SourceBytes())}
			for _, fill := range []byte{0x00, 0xff, 0x0f, 0xf0, 0xaa, 0x55} {
				srcs = append(srcs, bytes.Repeat([]byte{fill}, g.SourceBytes()))
			}
			for _, src := range srcs {
				got, want := make([]byte, g.Size()), make([]byte, g.Size())
				for i := range got {
					got[i], want[i] = 0xa5, 0x5a
				}
				must(t, packRef(g, src, want))
				must(t, Pack(g, src, got))
				if i := firstDiff(got, want); i >= 0 {
					t.Fatalf("%+v: Pack and packRef differ at blob byte %d: %#02x, want %#02x", g, i, got[i], want[i])
				}
			}
		}
	}
}

// TestRowKernelsMatchRef calls each row kernel on runs of 1 to 4 rows of 1
// to 9 random blocks, the rows' tiles strided as in a matrix of 1 to 3 tiles,
// and its reference on each row, with a guard band after every plane.
func TestRowKernelsMatchRef(t *testing.T) {
	for _, asm := range kernelSets {
		setAVX2(t, asm)
		rowKernelsMatchRef(t)
	}
}

func rowKernelsMatchRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 3))
	const guard = 16
	for _, typ := range Supported() {
		fast, ref := codecOf(typ).pack, packRefOf(typ)
		f := formats[typ]
		bs := max(typ.BlockSize(), 4)
		for nb := 1; nb <= 9; nb++ {
			for n := 1; n <= 4; n++ {
				for iter := 0; iter < 20; iter++ {
					tile := typ.RowBytes(nb * bs)
					stride := tile * (1 + iter%3)
					src := randomSource(rng, (n-1)*stride+tile)
					var pg, pw rowPlanes
					var bg, bw [4][]byte
					for k, pl := range f.Planes {
						m := n * pl.PerRow(nb*bs)
						bg[k] = randomSource(rng, m+guard)
						bw[k] = append([]byte(nil), bg[k]...)
						pg[k] = bg[k][:m:m]
					}
					fast(src, stride, tile, pg)
					for r := 0; r < n; r++ {
						for k, pl := range f.Planes {
							m := pl.PerRow(nb * bs)
							pw[k] = bw[k][r*m : (r+1)*m : (r+1)*m]
						}
						ref(src[r*stride:r*stride+tile], pw)
					}
					for k, pl := range f.Planes {
						if i := firstDiff(bg[k], bw[k]); i >= 0 {
							t.Fatalf("%s (useAVX2 %v), %d rows of %d blocks, stride %d: plane %s byte %d (of %d, then %d guard bytes): %#02x, reference %#02x",
								typ, useAVX2, n, nb, stride, pl.Name, i, len(pg[k]), guard, bg[k][i], bw[k][i])
						}
					}
				}
			}
		}
	}
}

// FuzzPackMatchesRef compares Pack with packRef on arbitrary bytes and shapes.
func FuzzPackMatchesRef(f *testing.F) {
	for i := range Supported() {
		f.Add(byte(i), byte(3), byte(5), byte(4), []byte{0x01, 0x7c, 0x55, 0xfd, 0xff, 0x3c})
	}
	f.Fuzz(func(t *testing.T, typ, cols, rows, tiles byte, data []byte) {
		ts := Supported()
		tp := ts[int(typ)%len(ts)]
		bs := max(tp.BlockSize(), 4)
		ntile, nblk := 1+int(tiles)%3, 1+int(tiles/3)%5
		g := Geometry{tp, 1 + int(rows)%20, ntile * nblk * bs, 1 + int(cols)%9, nblk * bs}
		src := make([]byte, g.SourceBytes())
		if len(data) > 0 {
			for i := range src {
				src[i] = data[i%len(data)] ^ byte(i/len(data)*31)
			}
		}
		got, want := make([]byte, g.Size()), make([]byte, g.Size())
		must(t, packRef(g, src, want))
		must(t, Pack(g, src, got))
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("%+v: Pack and packRef differ at blob byte %d: %#02x, want %#02x", g, i, got[i], want[i])
		}
	})
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// BenchmarkPackRef is BenchmarkPack for packRef: run both in one process
// (-bench 'Pack(Ref)?/') to compare the row kernels with their references.
func BenchmarkPackRef(b *testing.B) {
	benchPack(b, packRef)
}

// BenchmarkRowKernel runs each row kernel and its reference on one row of a
// 1024-element tile, in cache: the kernels' own speed.
func BenchmarkRowKernel(b *testing.B) {
	for _, typ := range []Type{Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K} {
		for _, v := range []struct {
			name string
			f    func([]byte, rowPlanes)
		}{{"fast", func(s []byte, p rowPlanes) { codecOf(typ).pack(s, len(s), len(s), p) }}, {"ref", packRefOf(typ)}} {
			b.Run(typ.String()+"/"+v.name, func(b *testing.B) {
				tile := 1024
				src := randomSource(rand.New(rand.NewPCG(1, 2)), typ.RowBytes(tile))
				var p rowPlanes
				for k, pl := range formats[typ].Planes {
					p[k] = make([]byte, pl.PerRow(tile))
				}
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					v.f(src, p)
				}
			})
		}
	}
}

// BenchmarkPackModel packs Q4_0 matrices of the shapes and K-tiles xdnapack
// gives a qwen05b-shaped model for xdna2 (ffn_gate_up, ffn_down, token_embd).
func BenchmarkPackModel(b *testing.B) {
	for _, g := range []Geometry{{Q4_0, 9728, 896, 8, 128}, {Q4_0, 896, 4864, 8, 128}, {Q4_0, 32000, 896, 8, 896}} {
		for _, v := range []struct {
			name string
			pack func(g Geometry, src, dst []byte) error
		}{{"Pack", Pack}, {"packRef", packRef}} {
			b.Run(fmt.Sprintf("%dx%d/%d/%s", g.N, g.K, g.KTile, v.name), func(b *testing.B) {
				src := randomSource(rand.New(rand.NewPCG(1, 2)), g.SourceBytes())
				dst := make([]byte, g.Size())
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				for b.Loop() {
					if err := v.pack(g, src, dst); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
