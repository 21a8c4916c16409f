package planar

import "encoding/binary"

// This file holds Pack's row kernels (codec.pack). Each converts the K-tiles
// of GGUF blocks of a run of consecutive rows, src[o:o+tile] for o = 0,
// stride, ... while o+tile <= len(src), into those rows' bytes of the planes:
// p[k] holds the rows' slices of plane k one after the other (a run of rows
// is contiguous in every plane of a tile). They work on 64-bit words (SWAR)
// with little-endian loads and stores, one call per row into a function with
// an index loop over the row's blocks that keeps few values live (with more,
// the compiler spills them to the stack inside the loop). Each kernel's
// reference is the *Ref function of the same name in packref_test.go (the
// byte loops Pack used before); TestRowKernelsMatchRef, TestPackMatchesRef
// and FuzzPackMatchesRef compare them. The six row loops look alike but are
// written out: one shared loop calling a closure per row halved Pack's speed
// at xdnapack's usual K-tile of 128 (4 Q4_0 blocks a row).

var le = binary.LittleEndian

// unzipBytes moves the even bytes of x to its low half and the odd bytes to
// its high half: bytes [b0 .. b7] become [b0 b2 b4 b6 b1 b3 b5 b7] (two
// delta swaps: bytes 1 and 2 of each 32-bit half, then 16-bit units 1 and 2).
func unzipBytes(x uint64) uint64 {
	t := (x ^ x>>8) & 0x0000ff000000ff00
	x ^= t ^ t<<8
	t = (x ^ x>>16) & 0x00000000ffff0000
	return x ^ t ^ t<<16
}

// The nibble shuffle of Q4_0, Q5_0, Q4_K and Q5_K. In ggml's split layout q
// (2h bytes), element j < 2h is the low nibble of q[j] and element 2h+j the
// high nibble (block_q4_0 with h = 8, one 64-element chunk of block_q4_K with
// h = 16); in the sequential layout out, element e is at byte e/2, low nibble
// for even e. The reference loop (nibblesToSeqRef) is
//
//	for i := 0; i < h; i++ {
//		out[i] = q[2*i]&0x0f | q[2*i+1]<<4
//		out[h+i] = q[2*i]>>4 | q[2*i+1]&0xf0
//	}
//
// For 16 bytes x0, x1 = q[8m:8m+8], q[8m+8:8m+16] (little-endian words),
//
//	a = x0&b8 | (x1&b8)<<8     bytes q[8m], q[8m+8], q[8m+2], q[8m+10], ...
//	y = x0>>8&b8 | x1&^b8      bytes q[8m+1], q[8m+9], q[8m+3], ...
//
// (b8 = 0x00ff00ff00ff00ff) hold the bytes 2i and 2i+1 in the same lane, so
// a&n4 | (y&n4)<<4 holds out[4m+i] and a>>4&n4 | y&^n4 holds out[h+4m+i]
// (n4 = 0x0f0f0f0f0f0f0f0f) for i = 0..7 in the byte order 0 4 1 5 2 6 3 7,
// which unzipBytes puts in order. The kernels write this out in place: as a
// function it would not be inlined.

// rowCount is the number of rows r of a tile with r*stride+tile <= srcLen
// (stride > 0): the rows the row loops below visit when the planes are
// large enough. The AVX2 paths (packrow_amd64.s, used when useAVX2 is set)
// take the smaller of it and the rows each plane holds, so that they read
// and write exactly the bytes the pure-Go loops do.
func rowCount(srcLen, stride, tile int) int {
	if tile > srcLen {
		return 0
	}
	return (srcLen-tile)/stride + 1
}

// packQ4_0 is packQ4_0Ref: per block_q4_0 {d; qs[16]}, d to the scales plane
// and the 32 codes, sequential, to the codes plane.
func packQ4_0(src []byte, stride, tile int, p rowPlanes) {
	codes, scales := p[0], p[1]
	nb := tile / 18
	if useAVX2 && nb > 0 && stride > 0 {
		if n := min(rowCount(len(src), stride, tile), len(codes)/(16*nb), len(scales)/(2*nb)); n > 0 {
			q4BlocksAVX2(&codes[0], &scales[0], &src[0], n, nb, stride, 18, 2)
		}
		return
	}
	for o := 0; o+tile <= len(src) && 16*nb <= len(codes) && 2*nb <= len(scales); o += stride {
		packQ4_0Row(src[o:o+18*nb], codes[:16*nb], scales[:2*nb])
		codes, scales = codes[16*nb:], scales[2*nb:]
	}
}

func packQ4_0Row(src, codes, scales []byte) {
	const b8, n4 = 0x00ff00ff00ff00ff, 0x0f0f0f0f0f0f0f0f
	for b := 0; b < len(scales)/2; b++ {
		s, c := src[18*b:18*b+18], codes[16*b:16*b+16]
		le.PutUint16(scales[2*b:], le.Uint16(s))
		x0, x1 := le.Uint64(s[2:]), le.Uint64(s[10:])
		a, y := x0&b8|(x1&b8)<<8, x0>>8&b8|x1&^b8
		le.PutUint64(c, unzipBytes(a&n4|(y&n4)<<4))
		le.PutUint64(c[8:], unzipBytes(a>>4&n4|y&^n4))
	}
}

// packQ5_0 is packQ5_0Ref: per block_q5_0 {d; qh[4]; qs[16]}, as Q4_0 plus
// qh copied to the high plane (its bit e is already element e's 5th bit).
func packQ5_0(src []byte, stride, tile int, p rowPlanes) {
	codes, high, scales := p[0], p[1], p[2]
	nb := tile / 22
	if useAVX2 && nb > 0 && stride > 0 {
		n := min(rowCount(len(src), stride, tile), len(codes)/(16*nb), len(high)/(4*nb), len(scales)/(2*nb))
		if n > 0 {
			q4BlocksAVX2(&codes[0], &scales[0], &src[0], n, nb, stride, 22, 6)
		}
		for r := 0; r < n; r++ {
			s, h := src[r*stride:r*stride+22*nb], high[4*nb*r:4*nb*(r+1)]
			for b := 0; b < nb; b++ {
				le.PutUint32(h[4*b:], le.Uint32(s[22*b+2:]))
			}
		}
		return
	}
	for o := 0; o+tile <= len(src) && 16*nb <= len(codes) && 4*nb <= len(high) && 2*nb <= len(scales); o += stride {
		packQ5_0Row(src[o:o+22*nb], codes[:16*nb], high[:4*nb], scales[:2*nb])
		codes, high, scales = codes[16*nb:], high[4*nb:], scales[2*nb:]
	}
}

func packQ5_0Row(src, codes, high, scales []byte) {
	const b8, n4 = 0x00ff00ff00ff00ff, 0x0f0f0f0f0f0f0f0f
	for b := 0; b < len(scales)/2; b++ {
		s, c := src[22*b:22*b+22], codes[16*b:16*b+16]
		le.PutUint16(scales[2*b:], le.Uint16(s))
		le.PutUint32(high[4*b:], le.Uint32(s[2:]))
		x0, x1 := le.Uint64(s[6:]), le.Uint64(s[14:])
		a, y := x0&b8|(x1&b8)<<8, x0>>8&b8|x1&^b8
		le.PutUint64(c, unzipBytes(a&n4|(y&n4)<<4))
		le.PutUint64(c[8:], unzipBytes(a>>4&n4|y&^n4))
	}
}

// packQ8_0 is packQ8_0Ref: per block_q8_0 {d; qs[32]}, d and the codes are
// copied to their planes.
func packQ8_0(src []byte, stride, tile int, p rowPlanes) {
	codes, scales := p[0], p[1]
	nb := tile / 34
	for o := 0; o+tile <= len(src) && 32*nb <= len(codes) && 2*nb <= len(scales); o += stride {
		packQ8_0Row(src[o:o+34*nb], codes[:32*nb], scales[:2*nb])
		codes, scales = codes[32*nb:], scales[2*nb:]
	}
}

func packQ8_0Row(src, codes, scales []byte) {
	for b := 0; b < len(scales)/2; b++ {
		s, c := src[34*b:34*b+34], codes[32*b:32*b+32]
		le.PutUint16(scales[2*b:], le.Uint16(s))
		le.PutUint64(c[0:], le.Uint64(s[2:]))
		le.PutUint64(c[8:], le.Uint64(s[10:]))
		le.PutUint64(c[16:], le.Uint64(s[18:]))
		le.PutUint64(c[24:], le.Uint64(s[26:]))
	}
}

// scaleMins is packScaleMinsRef on words: the 12-byte scales array of a
// block_q4_K/q5_K, read as a = q[0:4], b = q[4:8], c = q[8:12], gives the
// 8 sub-block scales (sm[0:8]) and the 8 mins (sm[8:16]), one byte each
// (scaleMinK4, byte j of each word at once):
//
//	sc[j] = a[j]&63                 m[j] = b[j]&63
//	sc[j+4] = c[j]&15 | a[j]>>6<<4  m[j+4] = c[j]>>4 | b[j]>>6<<4
func scaleMins(q, sm []byte) {
	q, sm = q[:12], sm[:16]
	a, b, c := uint64(le.Uint32(q)), uint64(le.Uint32(q[4:])), uint64(le.Uint32(q[8:]))
	le.PutUint64(sm, a&0x3f3f3f3f|(c&0x0f0f0f0f|a>>2&0x30303030)<<32)
	le.PutUint64(sm[8:], b&0x3f3f3f3f|(c>>4&0x0f0f0f0f|b>>2&0x30303030)<<32)
}

// nibbles128ToSeq converts the qs[128] of a block_q4_K or block_q5_K (four
// chunks of h = 16) to sequential codes.
func nibbles128ToSeq(q, out []byte) {
	const b8, n4 = 0x00ff00ff00ff00ff, 0x0f0f0f0f0f0f0f0f
	q, out = q[:128], out[:128]
	for m := 0; m < 8; m++ {
		x0, x1 := le.Uint64(q[16*m:]), le.Uint64(q[16*m+8:])
		a, y := x0&b8|(x1&b8)<<8, x0>>8&b8|x1&^b8
		// Chunk m/2, its words 2(m%2) and 2(m%2)+1.
		o := m/2*32 + m%2*8
		le.PutUint64(out[o:], unzipBytes(a&n4|(y&n4)<<4))
		le.PutUint64(out[o+16:], unzipBytes(a>>4&n4|y&^n4))
	}
}

// packQ4_K is packQ4_KRef: per block_q4_K {d, dmin; scales[12]; qs[128]},
// d and dmin to the dmin plane, the scales and mins one byte each, and the
// codes sequential.
func packQ4_K(src []byte, stride, tile int, p rowPlanes) {
	codes, sm, dm := p[0], p[1], p[2]
	nb := tile / 144
	if useAVX2 && nb > 0 && stride > 0 {
		n := min(rowCount(len(src), stride, tile), len(codes)/(128*nb), len(sm)/(16*nb), len(dm)/(4*nb))
		if n > 0 {
			nibbles128AVX2(&codes[0], &src[16], n, nb, stride, 144)
		}
		for r := 0; r < n; r++ {
			s := src[r*stride : r*stride+144*nb]
			sms, dms := sm[16*nb*r:16*nb*(r+1)], dm[4*nb*r:4*nb*(r+1)]
			for b := 0; b < nb; b++ {
				le.PutUint32(dms[4*b:], le.Uint32(s[144*b:]))
				scaleMins(s[144*b+4:], sms[16*b:])
			}
		}
		return
	}
	for o := 0; o+tile <= len(src) && 128*nb <= len(codes) && 16*nb <= len(sm) && 4*nb <= len(dm); o += stride {
		packQ4_KRow(src[o:o+144*nb], codes[:128*nb], sm[:16*nb], dm[:4*nb])
		codes, sm, dm = codes[128*nb:], sm[16*nb:], dm[4*nb:]
	}
}

func packQ4_KRow(src, codes, sm, dm []byte) {
	for b := 0; b < len(dm)/4; b++ {
		s := src[144*b : 144*b+144]
		le.PutUint32(dm[4*b:], le.Uint32(s))
		scaleMins(s[4:16], sm[16*b:])
		nibbles128ToSeq(s[16:144], codes[128*b:])
	}
}

// q5kHigh is q5kHighToSeqRef: block_q5_K's qh[32] (the 5th bit of element
// 32k+l is bit k of qh[l]) to the sequential high plane (element e at byte
// e/8, bit e%8), out[4k+m] bit b = qh[8m+b] bit k. Transposing the bits of
// word m = qh[8m:8m+8] gives t_m with byte k = out[4k+m]; the 4x8 byte
// matrix t then is transposed into out by zipping bytes and 16-bit units.
func q5kHigh(qh, out []byte) {
	qh, out = qh[:32], out[:32]
	t0 := transpose8(le.Uint64(qh[0:]))
	t1 := transpose8(le.Uint64(qh[8:]))
	t2 := transpose8(le.Uint64(qh[16:]))
	t3 := transpose8(le.Uint64(qh[24:]))
	const b8, b16, b32 = 0x00ff00ff00ff00ff, 0x0000ffff0000ffff, 0x00000000ffffffff
	// s0 = [t0[k] t1[k]] for k = 0, 2, 4, 6 and s1 for k = 1, 3, 5, 7 (16-bit units);
	// r0, r1 the same for t2, t3.
	s0, s1 := t0&b8|(t1&b8)<<8, t0>>8&b8|t1&^b8
	r0, r1 := t2&b8|(t3&b8)<<8, t2>>8&b8|t3&^b8
	// e0 = [s k=0, r k=0, s k=4, r k=4], e1 for k = 2, 6; f0, f1 for k = 1, 5 and 3, 7.
	e0, e1 := s0&b16|(r0&b16)<<16, s0>>16&b16|r0&^b16
	f0, f1 := s1&b16|(r1&b16)<<16, s1>>16&b16|r1&^b16
	le.PutUint64(out[0:], e0&b32|f0<<32)
	le.PutUint64(out[8:], e1&b32|f1<<32)
	le.PutUint64(out[16:], e0>>32|f0&^b32)
	le.PutUint64(out[24:], e1>>32|f1&^b32)
}

// packQ5_K is packQ5_KRef: per block_q5_K {d, dmin; scales[12]; qh[32];
// qs[128]}, as Q4_K plus qh to the high plane.
func packQ5_K(src []byte, stride, tile int, p rowPlanes) {
	codes, high, sm, dm := p[0], p[1], p[2], p[3]
	nb := tile / 176
	if useAVX2 && nb > 0 && stride > 0 {
		n := min(rowCount(len(src), stride, tile), len(codes)/(128*nb), len(high)/(32*nb), len(sm)/(16*nb), len(dm)/(4*nb))
		if n > 0 {
			nibbles128AVX2(&codes[0], &src[48], n, nb, stride, 176)
		}
		for r := 0; r < n; r++ {
			s := src[r*stride : r*stride+176*nb]
			hs, sms, dms := high[32*nb*r:32*nb*(r+1)], sm[16*nb*r:16*nb*(r+1)], dm[4*nb*r:4*nb*(r+1)]
			for b := 0; b < nb; b++ {
				le.PutUint32(dms[4*b:], le.Uint32(s[176*b:]))
				scaleMins(s[176*b+4:], sms[16*b:])
				q5kHigh(s[176*b+16:], hs[32*b:])
			}
		}
		return
	}
	for o := 0; o+tile <= len(src) && 128*nb <= len(codes) && 32*nb <= len(high) && 16*nb <= len(sm) && 4*nb <= len(dm); o += stride {
		packQ5_KRow(src[o:o+176*nb], codes[:128*nb], high[:32*nb], sm[:16*nb], dm[:4*nb])
		codes, high, sm, dm = codes[128*nb:], high[32*nb:], sm[16*nb:], dm[4*nb:]
	}
}

func packQ5_KRow(src, codes, high, sm, dm []byte) {
	for b := 0; b < len(dm)/4; b++ {
		s := src[176*b : 176*b+176]
		le.PutUint32(dm[4*b:], le.Uint32(s))
		scaleMins(s[4:16], sm[16*b:])
		q5kHigh(s[16:48], high[32*b:])
		nibbles128ToSeq(s[48:176], codes[128*b:])
	}
}

// packQ6_K is packQ6_KRef: per block_q6_K {ql[128]; qh[64]; scales[16]; d},
// the codes q-32 in element order, the scales and d copied.
func packQ6_K(src []byte, stride, tile int, p rowPlanes) {
	codes, scales, dd := p[0], p[1], p[2]
	nb := tile / 210
	for o := 0; o+tile <= len(src) && 256*nb <= len(codes) && 16*nb <= len(scales) && 2*nb <= len(dd); o += stride {
		packQ6_KRow(src[o:o+210*nb], codes[:256*nb], scales[:16*nb], dd[:2*nb])
		codes, scales, dd = codes[256*nb:], scales[16*nb:], dd[2*nb:]
	}
}

func packQ6_KRow(src, codes, scales, dd []byte) {
	for b := 0; b < len(dd)/2; b++ {
		s := src[210*b : 210*b+210]
		le.PutUint64(scales[16*b:], le.Uint64(s[192:]))
		le.PutUint64(scales[16*b+8:], le.Uint64(s[200:]))
		le.PutUint16(dd[2*b:], le.Uint16(s[208:]))
		q6kCodes(s[:192], codes[256*b:])
	}
}

// q6kCodes writes the 256 codes q-32 of block_q6_K's ql[128], qh[64] (s) to
// out, eight lanes of packQ6_KRef's inner loop at a time: in half h, from
// a = ql[l:l+8], b = ql[l+32:l+40] and c = qh[l:l+8], the codes of elements
// l, l+32, l+64 and l+96. Each 6-bit q is below 64, so q-32 (mod 256) is
// (q + 0x60) ^ 0x80 in every byte, without carries between bytes.
func q6kCodes(s, out []byte) {
	const n4, s2, x60, x80 = 0x0f0f0f0f0f0f0f0f, 0x3030303030303030, 0x6060606060606060, 0x8080808080808080
	s, out = s[:192], out[:256]
	for h := 0; h < 2; h++ {
		ql, qh, o := s[64*h:64*h+64], s[128+32*h:128+32*h+32], out[128*h:128*h+128]
		for l := 0; l < 32; l += 8 {
			a, b, c := le.Uint64(ql[l:]), le.Uint64(ql[l+32:]), le.Uint64(qh[l:])
			le.PutUint64(o[l:], (a&n4|c<<4&s2)+x60^x80)
			le.PutUint64(o[l+32:], (b&n4|c<<2&s2)+x60^x80)
			le.PutUint64(o[l+64:], (a>>4&n4|c&s2)+x60^x80)
			le.PutUint64(o[l+96:], (b>>4&n4|c>>2&s2)+x60^x80)
		}
	}
}
