package planar

import "encoding/binary"

// This file holds Pack's row kernels (codec.pack): each converts the K-tile
// of GGUF blocks of consecutive rows, src[o:o+tile] for o = 0, stride, ...
// while o+tile <= len(src), into those rows' bytes of the planes, p[k] holding
// the rows' slices of plane k one after the other (a run of rows is
// contiguous in every plane of a tile). They work on
// 64-bit words (SWAR) with little-endian loads and stores and loops written so
// that the compiler drops the bounds checks. Each one's reference is the
// *Ref function of the same name in packref_test.go (the straightforward
// loops Pack used before), and TestPackMatchesRef compares them over random
// blocks and odd shapes.

var le = binary.LittleEndian

// swapMidNibbles exchanges the two middle nibbles of every 16-bit lane of x:
// a lane holding the nibbles [n0 n1 n2 n3] (low first) becomes [n0 n2 n1 n3].
func swapMidNibbles(x uint64) uint64 {
	t := (x ^ x>>4) & 0x00f000f000f000f0
	return x ^ t ^ t<<4
}

// unzipBytes moves the even bytes of x to its low half and the odd bytes to
// its high half: bytes [b0 .. b7] become [b0 b2 b4 b6 b1 b3 b5 b7].
func unzipBytes(x uint64) uint64 {
	t := (x ^ x>>8) & 0x0000ff000000ff00
	x ^= t ^ t<<8
	t = (x ^ x>>16) & 0x00000000ffff0000
	return x ^ t ^ t<<16
}

// splitToSeq converts 16 consecutive bytes q[8m:8m+16] of ggml's split nibble
// layout (element j < 2h is the low nibble of q[j], element 2h+j the high
// nibble), given as the words x0, x1, into 8 bytes of sequential low-half
// codes (out[4m:4m+8]) and 8 bytes of high-half codes (out[h+4m:h+4m+8]).
// Within a 16-bit lane, the middle-nibble swap pairs the low nibbles of the
// lane's two bytes into its even byte and their high nibbles into its odd
// byte; unzipping the bytes then separates the two.
func splitToSeq(x0, x1 uint64) (lo, hi uint64) {
	x0 = unzipBytes(swapMidNibbles(x0))
	x1 = unzipBytes(swapMidNibbles(x1))
	return x0&0xffffffff | x1<<32, x0>>32 | x1&0xffffffff00000000
}

// nibbles32ToSeq is nibblesToSeqRef for h = 16 (one 64-element chunk of a
// block_q4_K or block_q5_K): q and out are 32 bytes.
func nibbles32ToSeq(q, out []byte) {
	q, out = q[:32], out[:32]
	lo, hi := splitToSeq(le.Uint64(q[0:]), le.Uint64(q[8:]))
	le.PutUint64(out[0:], lo)
	le.PutUint64(out[16:], hi)
	lo, hi = splitToSeq(le.Uint64(q[16:]), le.Uint64(q[24:]))
	le.PutUint64(out[8:], lo)
	le.PutUint64(out[24:], hi)
}

// packQ4_0 is packQ4_0Ref: per block_q4_0 {d; qs[16]}, d to the scales plane
// and the 32 codes, sequential, to the codes plane.
func packQ4_0(src []byte, stride, tile int, p rowPlanes) {
	codes, scales := p[0], p[1]
	for o := 0; o+tile <= len(src); o += stride {
		src := src[o : o+tile]
		for len(src) >= 18 && len(codes) >= 16 && len(scales) >= 2 {
			le.PutUint16(scales, le.Uint16(src))
			lo, hi := splitToSeq(le.Uint64(src[2:]), le.Uint64(src[10:]))
			le.PutUint64(codes, lo)
			le.PutUint64(codes[8:], hi)
			src, codes, scales = src[18:], codes[16:], scales[2:]
		}
	}
}

// packQ5_0 is packQ5_0Ref: per block_q5_0 {d; qh[4]; qs[16]}, as Q4_0 plus
// qh copied to the high plane (its bit e is already element e's 5th bit).
func packQ5_0(src []byte, stride, tile int, p rowPlanes) {
	codes, high, scales := p[0], p[1], p[2]
	for o := 0; o+tile <= len(src); o += stride {
		src := src[o : o+tile]
		for len(src) >= 22 && len(codes) >= 16 && len(high) >= 4 && len(scales) >= 2 {
			le.PutUint16(scales, le.Uint16(src))
			le.PutUint32(high, le.Uint32(src[2:]))
			lo, hi := splitToSeq(le.Uint64(src[6:]), le.Uint64(src[14:]))
			le.PutUint64(codes, lo)
			le.PutUint64(codes[8:], hi)
			src, codes, high, scales = src[22:], codes[16:], high[4:], scales[2:]
		}
	}
}

// packQ8_0 is packQ8_0Ref: per block_q8_0 {d; qs[32]}, d and the codes are
// copied to their planes.
func packQ8_0(src []byte, stride, tile int, p rowPlanes) {
	codes, scales := p[0], p[1]
	for o := 0; o+tile <= len(src); o += stride {
		src := src[o : o+tile]
		for len(src) >= 34 && len(codes) >= 32 && len(scales) >= 2 {
			le.PutUint16(scales, le.Uint16(src))
			le.PutUint64(codes[0:], le.Uint64(src[2:]))
			le.PutUint64(codes[8:], le.Uint64(src[10:]))
			le.PutUint64(codes[16:], le.Uint64(src[18:]))
			le.PutUint64(codes[24:], le.Uint64(src[26:]))
			src, codes, scales = src[34:], codes[32:], scales[2:]
		}
	}
}

// scaleMins is packScaleMinsRef on words: the 12-byte scales array of a
// block_q4_K/q5_K, read as a = q[0:4], b = q[4:8], c = q[8:12], gives the
// 8 sub-block scales (sm[0:8]) and the 8 mins (sm[8:16]), one byte each
// (scaleMinK4, byte j of each word at once):
//
//	sc[j] = a[j]&63              m[j] = b[j]&63
//	sc[j+4] = c[j]&15 | a[j]>>6<<4    m[j+4] = c[j]>>4 | b[j]>>6<<4
func scaleMins(q []byte) (sc, m uint64) {
	q = q[:12]
	a, b, c := uint64(le.Uint32(q)), uint64(le.Uint32(q[4:])), uint64(le.Uint32(q[8:]))
	sc = a&0x3f3f3f3f | (c&0x0f0f0f0f|a>>2&0x30303030)<<32
	m = b&0x3f3f3f3f | (c>>4&0x0f0f0f0f|b>>2&0x30303030)<<32
	return sc, m
}

// packQ4_K is packQ4_KRef: per block_q4_K {d, dmin; scales[12]; qs[128]},
// d and dmin to the dmin plane, the scales and mins one byte each, and the
// codes sequential.
func packQ4_K(src []byte, stride, tile int, p rowPlanes) {
	codes, sm, dm := p[0], p[1], p[2]
	for o := 0; o+tile <= len(src); o += stride {
		src := src[o : o+tile]
		for len(src) >= 144 && len(codes) >= 128 && len(sm) >= 16 && len(dm) >= 4 {
			le.PutUint32(dm, le.Uint32(src))
			sc, m := scaleMins(src[4:16])
			le.PutUint64(sm, sc)
			le.PutUint64(sm[8:], m)
			nibbles32ToSeq(src[16:48], codes[0:32])
			nibbles32ToSeq(src[48:80], codes[32:64])
			nibbles32ToSeq(src[80:112], codes[64:96])
			nibbles32ToSeq(src[112:144], codes[96:128])
			src, codes, sm, dm = src[144:], codes[128:], sm[16:], dm[4:]
		}
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
	for o := 0; o+tile <= len(src); o += stride {
		src := src[o : o+tile]
		for len(src) >= 176 && len(codes) >= 128 && len(high) >= 32 && len(sm) >= 16 && len(dm) >= 4 {
			le.PutUint32(dm, le.Uint32(src))
			sc, m := scaleMins(src[4:16])
			le.PutUint64(sm, sc)
			le.PutUint64(sm[8:], m)
			q5kHigh(src[16:48], high[0:32])
			nibbles32ToSeq(src[48:80], codes[0:32])
			nibbles32ToSeq(src[80:112], codes[32:64])
			nibbles32ToSeq(src[112:144], codes[64:96])
			nibbles32ToSeq(src[144:176], codes[96:128])
			src, codes, high, sm, dm = src[176:], codes[128:], high[32:], sm[16:], dm[4:]
		}
	}
}

// q6kCodes is eight lanes of packQ6_KRef's inner loop: from a = ql[l:l+8],
// b = ql[l+32:l+40] and h = qh[l:l+8] of one half, the codes q-32 of
// elements l, l+32, l+64 and l+96 (eight each). Each 6-bit q is below 64, so
// q-32 (mod 256) is (q + 0x60) ^ 0x80 in every byte without carries.
func q6kCodes(a, b, h uint64) (o0, o1, o2, o3 uint64) {
	const n4, s2, x60, x80 = 0x0f0f0f0f0f0f0f0f, 0x3030303030303030, 0x6060606060606060, 0x8080808080808080
	o0 = (a&n4 | h<<4&s2) + x60 ^ x80
	o1 = (b&n4 | h<<2&s2) + x60 ^ x80
	o2 = (a>>4&n4 | h&s2) + x60 ^ x80
	o3 = (b>>4&n4 | h>>2&s2) + x60 ^ x80
	return
}

// packQ6_K is packQ6_KRef: per block_q6_K {ql[128]; qh[64]; scales[16]; d},
// the codes q-32 in element order, the scales and d copied.
func packQ6_K(src []byte, stride, tile int, p rowPlanes) {
	codes, scales, dd := p[0], p[1], p[2]
	for o := 0; o+tile <= len(src); o += stride {
		src := src[o : o+tile]
		for len(src) >= 210 && len(codes) >= 256 && len(scales) >= 16 && len(dd) >= 2 {
			s := src[:210]
			le.PutUint64(scales, le.Uint64(s[192:]))
			le.PutUint64(scales[8:], le.Uint64(s[200:]))
			le.PutUint16(dd, le.Uint16(s[208:]))
			for h := 0; h < 2; h++ {
				ql, qh, o := s[64*h:64*h+64], s[128+32*h:128+32*h+32], codes[128*h:128*h+128]
				for l := 0; l < 32; l += 8 {
					o0, o1, o2, o3 := q6kCodes(le.Uint64(ql[l:]), le.Uint64(ql[l+32:]), le.Uint64(qh[l:]))
					le.PutUint64(o[l:], o0)
					le.PutUint64(o[l+32:], o1)
					le.PutUint64(o[l+64:], o2)
					le.PutUint64(o[l+96:], o3)
				}
			}
			src, codes, scales, dd = src[210:], codes[256:], scales[16:], dd[2:]
		}
	}
}
