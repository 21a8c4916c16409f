package main

// The AVX-512 kernels (AVX512F, BW, VL and VNNI: Zen 4 and 5, Intel from
// Cascade Lake on). Same arguments, activation layouts and bits as the
// AVX2 kernels of main.go: per block the same exact int32 sum, then the
// same float32 operations in the same order. What changes is how the
// integer sums are formed: VPDPBUSD (unsigned bytes times signed bytes,
// summed by fours into dwords, without the int16 saturation of VPMADDUBSW)
// replaces VPMADDUBSW+VPMADDWD+VPADDD, the weights are read 64 bytes (two
// 32-blocks) per load, and the reduction of four rows' sums to one dword
// per (row, block) takes fewer shuffles.
//
// VPDPBUSD multiplies unsigned by signed bytes. The nibble formats' codes
// are unsigned already. For Q8_0 both sides are signed: the weights are
// flipped to w+128 (XOR 0x80, an unsigned byte) and 128*sum(a) is taken
// off again, exact in int32 (|sum| < 2^31 for any block).
//
// avo v0.5.0 has no AVX512_VNNI instructions; vpdpbusd emits VPDPBUSD
// through avo's raw instruction form (the Go assembler encodes it).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// tallL2Ahead is how far past its prefetches into L1 the tall Q4_0 kernel
// prefetches the codes into L2 (PREFETCHT1), so 48 KiB ahead of the rows
// it reads in all. Decoding token by token, alternated in one process
// with the kernel without them (Zen 5 VM, 2026-12-05 01:48-01:52 UTC, nine
// runs of 200-400 tokens in both orders): the Llama-3.2-1B shape in Q4_0
// took 0-7.3% less time a token (median 3.7%), the 0.5B shape -2.6 to
// +3.9% (median +1%: level within the harness's noise); 64 KiB on instead
// took 0.5-3.5% less on the 1B. Whole `xdnarun bench -p 128 -n 64 -r 1`
// runs alternated with the build without them (02:12 UTC, the stream read
// at 37-40 GB/s): 0.5B 1.022x, 1B 1.000x. The same prefetches in every AVX-512 rows
// kernel cost 5-8% on the 0.5B shape in Q4_0, Q8_0 and the Q4_K_M mix
// (not analysed; on its short column groups 48 KiB is several groups on).
const tallL2Ahead = 32 << 10

// avx512 writes the AVX-512 kernels.
func avx512() {
	ntaCodes = true
	defer func() { ntaCodes = false }()
	constants512()
	rowsQ8x512("q8_0RowsAVX512")
	rowsQ4x512("q4_0RowsAVX512")
	// Q4_0 on tall column groups (the runtime's tallRows): the same
	// kernel prefetching the scales too (rows32x512), and the codes into
	// L2 a further tallL2Ahead bytes on (tileVars.far).
	rows32x512("q4_0RowsTallAVX512", false, false, planeAhead, tallL2Ahead)
	// Q5_0 prefetching its small planes (high bits, scales) as the tall
	// Q4_0 kernel does its scales, on column groups of every height: they
	// are a quarter of its bytes, and on a tall group the hardware's
	// prefetcher left the kernel waiting for them. The 0.5B shapes read
	// from memory, the two kernels alternated in one process (2 threads,
	// 30 rounds, three runs, Zen 5 VM, 2026-12-05 06:40-06:50 UTC): gate_up
	// 1.02-1.09x (one thread 1.13x), qkv 1.02-1.06x, attn_output
	// 0.97-1.01x, ffn_down 1.02-1.08x. Their L2 prefetches too (far,
	// tallL2Ahead) took ffn_down (K-tiles of 256) 1.2-1.3x further but
	// attn_output 0.93x, and decode of the Q4_K_M mix, whose ffn_down is
	// not Q5_0, lost 1-2%. Decoding the Q4_K_M mix token by token, the
	// two alternated in one process (the median of 300 per-token time
	// ratios, 9 runs at 06:47 and 07:03 UTC): 1.02-1.07x faster; whole
	// `xdnarun bench -p 128 -n 64 -r 1` runs alternated with the kernel
	// before (16 rounds, 06:51 UTC): decode 1.079x, prefill 1.017x.
	rows32x512("q5_0RowsAVX512", false, true, planeAhead, 0)
	rowsQ4Kx512("q4_KRowsAVX512", false)
	rowsQ4Kx512("q5_KRowsAVX512", true)
	rowsQ6x512("q6_KRowsAVX512")
}

var (
	c80x4  Mem // 4 x 0x80: VPBROADCASTD to 64 bytes of 0x80
	c0Fx4  Mem // 4 x 0x0f
	idxRed Mem // int32 [0 8 1 9 4 12 5 13] then 0s: see reducePairs
	// Eight rows: idxRed8 (VPERMT2D of two halfReduce results, the second
	// at 16+) to [A r0..3 | A r4..7 | B r0..3 | B r4..7]; idxST8 the f16
	// scales [r0A r0B r1A r1B ...] to the same; idxB8 [0 x8, 1 x8].
	idxRed8, idxST8, idxB8 Mem
	// Q4_K: lane L of scMaskZ[jj] makes int16 x8 of byte 4jj+L (the
	// scale of sub-block 4jj+L) from the 16 scalemin bytes in every lane.
	scMaskZ [2]Mem
	// Q6_K: word i of wIdxZ[jj] is 4jj + i/8: VPERMW spreads scale 4jj+L
	// of the 16 (as int16) over lane L.
	wIdxZ [4]Mem
	// Q5: hShufZ makes byte i of lane L the byte of the 8 high bytes of a
	// pair (broadcast to every qword) that holds the bits of the elements
	// 2i and 2i+1 of block L%2: byte 4(L%2) + i/4. hShufKZ does it for
	// the 16 high bytes of two pairs (Q5_K, lanes = four sub-blocks):
	// byte 4L + i/4. hBitLo, hBitHi: byte i -> 1 << (2i mod 8), 1 <<
	// (2i+1 mod 8) (elements 2i and 2i+1); hBitLH the first in the low
	// 256 bits, the second in the high ones.
	hShufZ, hShufKZ, hBitLo, hBitHi, hBitLH Mem
	c10x4                                   Mem
	// Q4_0, Q5_0 eight rows, K-tiles of np = 1..4 pairs: the rows' scales
	// of a tile (8*4np bytes, row i's at 4np*i) are loaded once a step
	// into two zmm (masked: scMaskLo/Hi[np-1], int32 word masks), and
	// word L of scIdx[np-1] (+2 per pair) picks f16 L%8 of block L/8 of
	// the pair: [A r0..7 | B r0..7]. scTwo is 32 words of 2.
	scIdx, scMaskLo, scMaskHi, scTwo Mem
	zero32                           Mem // 32 zero bytes
)

func constants512() {
	i32 := func(v ...uint32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
		}
		return b
	}
	c80x4 = table("c80x4", i32(0x80808080, 0))
	c0Fx4 = table("c0Fx4", i32(0x0f0f0f0f, 0))
	idxRed = table("idxRed", i32(0, 8, 1, 9, 4, 12, 5, 13, 0, 0, 0, 0, 0, 0, 0, 0))
	idxRed8 = table("idxRed8", i32(0, 8, 1, 9, 16, 24, 17, 25, 4, 12, 5, 13, 20, 28, 21, 29))
	idxST8 = table("idxST8", i32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15))
	idxB8 = table("idxB8", i32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1))
	for jj := range scMaskZ {
		b := make([]byte, 64)
		for i := 0; i < 32; i++ {
			b[2*i], b[2*i+1] = byte(4*jj+i/8), 0x80
		}
		scMaskZ[jj] = table(fmt.Sprintf("scMaskZ%d", jj), b)
	}
	hs, hk, lo, hi, lh := make([]byte, 64), make([]byte, 64), make([]byte, 64), make([]byte, 64), make([]byte, 64)
	for L := 0; L < 4; L++ {
		for i := 0; i < 16; i++ {
			hs[16*L+i] = byte(4*(L%2) + i/4)
			hk[16*L+i] = byte(4*L + i/4)
			lo[16*L+i] = 1 << ((2 * i) % 8)
			hi[16*L+i] = 1 << ((2*i + 1) % 8)
			lh[16*L+i] = lo[16*L+i]
			if L >= 2 {
				lh[16*L+i] = hi[16*L+i]
			}
		}
	}
	hShufZ, hShufKZ = table("hShufZ", hs), table("hShufKZ", hk)
	hBitLo, hBitHi, hBitLH = table("hBitLo", lo), table("hBitHi", hi), table("hBitLH", lh)
	c10x4 = table("c10x4", i32(0x10101010, 0))
	for jj := range wIdxZ {
		b := make([]byte, 64)
		for i := 0; i < 32; i++ {
			b[2*i] = byte(4*jj + i/8)
		}
		wIdxZ[jj] = table(fmt.Sprintf("wIdxZ%d", jj), b)
	}
	idx, two := make([]byte, 4*64), make([]byte, 64)
	for np := 1; np <= 4; np++ {
		for L := 0; L < 16; L++ {
			idx[64*(np-1)+2*L] = byte(L%8*2*np + L/8)
		}
	}
	for i := 0; i < 32; i++ {
		two[2*i] = 2
	}
	scIdx, scTwo = table("scIdx", idx), table("scTwo", two)
	zero32 = table("zero32", make([]byte, 32))
	scMaskLo = table("scMaskLo", i32(0xffff, 0xffffffff, 0xffffffff, 0xffffffff))
	scMaskHi = table("scMaskHi", i32(0, 0, 0xffff, 0xffffffff))
}

// vnni emits the AVX512_VNNI instruction op s, u, acc.
func vnni(op string, s Op, u, acc Register) {
	Instruction(&ir.Instruction{
		Opcode:   op,
		Operands: []Op{s, u, acc},
		Inputs:   []Op{s, u, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}

// vpdpbusd emits VPDPBUSD s, u, acc: each dword of acc gets the sum of the
// four products of its unsigned bytes in u by its signed bytes in s added
// (no saturation). s may be memory.
func vpdpbusd(s Op, u, acc Register) { vnni("VPDPBUSD", s, u, acc) }

// vpdpwssd emits VPDPWSSD s, u, acc: each dword of acc gets the sum of the
// two products of its signed words in u and s added (no saturation).
func vpdpwssd(s Op, u, acc Register) { vnni("VPDPWSSD", s, u, acc) }

// reduce4z sums all sixteen dwords of each of v[0..3] (zmm) into the xmm
// [sum v0, sum v1, sum v2, sum v3]. Exact (int32).
func reduce4z(v [4]VecVirtual) VecVirtual {
	var t [4]VecVirtual
	for i := range t {
		t[i] = ZMM()
	}
	VPUNPCKLDQ(v[1], v[0], t[0]) // [v0_0 v1_0 v0_1 v1_1] per lane
	VPUNPCKHDQ(v[1], v[0], t[1]) // [v0_2 v1_2 v0_3 v1_3]
	VPADDD(t[1], t[0], t[0])
	VPUNPCKLDQ(v[3], v[2], t[2])
	VPUNPCKHDQ(v[3], v[2], t[3])
	VPADDD(t[3], t[2], t[2])
	VPUNPCKHQDQ(t[2], t[0], t[1]) // [v0_13 v1_13 v2_13 v3_13]
	VPUNPCKLQDQ(t[2], t[0], t[0]) // [v0_02 v1_02 v2_02 v3_02]
	VPADDD(t[1], t[0], t[0])      // lane L: [v0.L v1.L v2.L v3.L]
	h := YMM()
	VEXTRACTI64X4(U8(1), t[0], h)
	VPADDD(h, t[0].AsY(), h)
	return fold(h)
}

// pairRows folds the int32 sums of two rows, v0 and v1, each
// [A.lo A.hi B.lo B.hi] by 128-bit lane (four dwords of partial sums of
// block A, then of block B), into [r0A r0B r1A r1B].
func pairRows(v0, v1 VecVirtual) VecVirtual {
	p, q := ZMM(), ZMM()
	VSHUFI64X2(U8(0x88), v1, v0, p) // [v0.0 v0.2 v1.0 v1.2]
	VSHUFI64X2(U8(0xdd), v1, v0, q) // [v0.1 v0.3 v1.1 v1.3]
	VPADDD(q, p, p)
	return p
}

// halfReduce sums the four dwords of each 128-bit lane of z01 = [r0A r0B
// r1A r1B] and z23 = [r2A r2B r3A r3B]: after the two unpacks and the qword
// swap, lane L holds [sum z01.L, sum z23.L, the same again], so r0A is
// dword 0, r2A 1, r0B 4, r2B 5, r1A 8, r3A 9, r1B 12 and r3B 13. Exact.
func halfReduce(z01, z23 VecVirtual) VecVirtual {
	u, h := ZMM(), ZMM()
	VPUNPCKLDQ(z23, z01, u) // [z01.0 z23.0 z01.1 z23.1]
	VPUNPCKHDQ(z23, z01, h) // [z01.2 z23.2 z01.3 z23.3]
	VPADDD(h, u, u)
	VPSHUFD(U8(0x4e), u, h) // swap the qwords
	VPADDD(h, u, u)
	return u
}

// reducePairs is halfReduce then the permutation idxRed to the ymm [r0A
// r1A r2A r3A | r0B r1B r2B r3B] (the low half of the zmm returned), the
// layout of the AVX2 kernels' reduce4.
func reducePairs(z01, z23, idx VecVirtual) VecVirtual {
	u := halfReduce(z01, z23)
	VPERMD(u, idx, u)
	return u
}

// consts512 are the constants the AVX-512 rows kernels keep in registers.
type consts512 struct {
	idxRed, idx01, idxT VecVirtual
	km                  [3]Register // gather4z's masks
}

func loadConsts512() consts512 { return loadConsts512With(gatherMasks()) }

// loadConsts512With loads the vectors of consts512 and takes the masks km.
func loadConsts512With(km [3]Register) consts512 {
	c := consts512{ZMM(), YMM(), YMM(), km}
	VMOVDQU64(idxRed, c.idxRed)
	VMOVDQU64(idx01, c.idx01)
	VMOVDQU64(idxT, c.idxT)
	return c
}

// gatherMasks returns the opmasks 0b10, 0b100 and 0b1000 for gather4z.
func gatherMasks() [3]Register {
	var km [3]Register
	for i := range km {
		r := GP32()
		MOVL(U32(2<<i), r)
		km[i] = K()
		KMOVW(r, km[i])
	}
	return km
}

// gather4z is main.go's gather4 (the dwords at base + k*stride, k = 0..3,
// into an xmm) with masked broadcasts in place of VPINSRD, whose EVEX form
// (on X16-X31, which avo may give an AVX-512 kernel) needs AVX512DQ, a
// feature the avx512 level does not check.
func gather4z(base, stride Register, km [3]Register) VecVirtual {
	g := XMM()
	VMOVD(Mem{Base: base}, g)
	VPBROADCASTD(Mem{Base: base, Index: stride, Scale: 1}, km[0], g)
	VPBROADCASTD(Mem{Base: base, Index: stride, Scale: 2}, km[1], g)
	t := GP64()
	LEAQ(Mem{Base: base, Index: stride, Scale: 2}, t)
	VPBROADCASTD(Mem{Base: t, Index: stride, Scale: 1}, km[2], g)
	return g
}

// finish4 is the float part of one pair of blocks for four rows, exactly
// as in the AVX2 kernels: r [r0A..r3A | r0B..r3B] (int32, the bias already
// taken off) to float32, times d_w*d_x (the rows' f16 scales at psc, rows
// ss bytes apart; the token's two scales at dx), added to acc block A then
// block B.
func finish4(r VecVirtual, psc, ss Register, dx Mem, c consts512, acc VecVirtual) {
	f := YMM()
	VCVTDQ2PS(r.AsY(), f)
	w := YMM()
	VCVTPH2PS(gather4z(psc, ss, c.km), w)
	VPERMPS(w, c.idxT, w) // [dA r0..3 | dB r0..3]
	v := XMM()
	VMOVQ(dx, v)
	x := YMM()
	VPERMD(v.AsY(), c.idx01, x) // [dxA x4 | dxB x4]
	VMULPS(x, w, w)             // d_w * d_x
	VMULPS(w, f, f)             // float32(isum) * (d_w*d_x)
	addTo(f, acc)
}

// rowsQ8x512 writes the Q8_0 rows kernel (the arguments of rowsQ8): rows32x512.
func rowsQ8x512(name string) { rows32x512(name, true, false, 0, 0) }

// rowsQ4x512 writes the Q4_0 rows kernel (the arguments of rowsQ4):
// rows32x512, without the scales' prefetches.
func rowsQ4x512(name string) { rows32x512(name, false, false, 0, 0) }

// rows32x512 writes the Q8_0 (q8), Q4_0 or Q5_0 (q5) rows kernel, a pair of
// 32-blocks at a time: Q4_0 and Q5_0 eight rows per step while eight
// remain, then four; Q8_0 four rows per step (eight, 512 bytes of codes a
// step, read the 0.5B decode shapes from memory 5-10% slower on the Zen 5 VM).
//
// Q8_0: per row one 64-byte load of the weights, flipped to unsigned
// (w+128) and multiplied by the token's 64 codes with one VPDPBUSD, into an
// accumulator that starts at -128*sum(a) per dword. Q4_0: two rows' 32
// code bytes in one zmm [row k | row k+1], split into low nibbles (even
// elements) and high (odd ones), multiplied by the token's permuted codes
// (even elements of A and B, twice; odd elements, twice) with two
// VPDPBUSD; Q5_0 adds the 5th bits to the nibbles first (highBitsZ).
// Either way each pair of rows gives [r_k A, r_k B, r_k+1 A,
// r_k+1 B] (partial dwords by 128-bit lane), which the reduction turns
// into one dword per row and block; then the float part of the AVX2
// kernel, one lane per row and block.
//
// The codes are prefetched ahead of the rows read (beginTiles: ntaAhead,
// Q5_0's too); with small > 0 the other planes (scales, high bits) are
// too, small bytes ahead, one line per four rows. A column group of a hundred or so rows
// needs no more: a K-tile's planes are a few KiB, and the codes'
// prefetches run through the next tile's scales before they are read.
// On a group of a thousand rows they do not, and a scale line that the
// hardware's prefetcher has not brought holds the step up: on the 0.5B
// shape's gate_up (1,216 rows a group) this kernel read from memory no
// faster than the AVX2 one, which prefetches its scales (nextRowsN).
// On short groups the extra prefetches cost about 1% (decode token by
// token, alternated in one process, Zen 5 VM). With far > 0 the codes are
// prefetched into L2 far bytes past those prefetches too (tileVars.far).
func rows32x512(name string, q8, q5 bool, small, far int) {
	switch {
	case q8:
		TEXT(name, NOSPLIT, "func(codes, scales *byte, cstride, sstride int, a *int8, d *float32, np int, y *float32, rows, tiles, tstride int)")
		rowsDoc(name, "dotQ8_0(codes, scales of row i, tile t; the token's codes and scales of tile t)")
	case q5:
		TEXT(name, NOSPLIT, "func(codes, high, scales *byte, cstride, hstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int)")
		rowsDoc(name, "dotQ5_0(codes, high, scales of row i, tile t; the token's codes, scales and sums of tile t)")
	default:
		TEXT(name, NOSPLIT, "func(codes, scales *byte, cstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int)")
		rowsDoc(name, "dotQ4_0(codes, scales of row i, tile t; the token's codes, scales and sums of tile t)")
	}
	Pragma("noescape")
	cs := Load(Param("cstride"), GP64())
	ss := Load(Param("sstride"), GP64())
	var hs Register
	if q5 {
		hs = Load(Param("hstride"), GP64())
	}
	a := Load(Param("a"), GP64())
	d := Load(Param("d"), GP64())
	var s Register
	if !q8 {
		s = Load(Param("s"), GP64())
	}
	lim := Load(Param("np"), GP64())
	SHLQ(U8(3), lim)
	bias := 3 // w = q-8: subtract 8*sum(a)
	if q5 {
		bias = 4 // w = q-16
	}
	// The four-row step's constants are loaded at its start (c below):
	// kept in registers over the whole kernel they leave the eight-row
	// steps too few.
	km := gatherMasks()
	wide := !q8 && !q5           // Q4_0 has rows8w (below)
	var red8, sT8, b8 VecVirtual // the eight-row steps' permutations
	if !q8 {
		red8, b8 = ZMM(), ZMM()
		if !wide {
			// Q4_0's rows8 loads it where it is used (finish8).
			sT8 = ZMM()
			VMOVDQU64(idxST8, sT8)
		}
		VMOVDQU64(idxRed8, red8)
		VMOVDQU64(idxB8, b8)
	}
	var m80, zero, m0F VecVirtual
	if q8 {
		m80, zero = ZMM(), ZMM()
		VPBROADCASTD(c80x4, m80)
		VPXORD(zero, zero, zero)
	} else {
		m0F = ZMM()
		VPBROADCASTD(c0Fx4, m0F)
	}
	var hc highConsts
	planes := []string{"codes", "scales"}
	strides := map[string]Register{"codes": cs, "scales": ss}
	if q5 {
		hc = loadHighConsts(hShufZ, true)
		planes = append(planes, "high")
		strides["high"] = hs
	}
	// Q4_0's eight-row step on K-tiles of at most 4 pairs (all that
	// xdnapack gives a large matrix) takes the rows' scales of a tile in
	// two loads a step and one VPERMI2W a pair (rows8w) instead of eight
	// masked broadcasts a pair (rows8, any K-tile). Q5_0 keeps rows8: its
	// constants leave too few registers for the tables.
	var scBase Mem // scIdx[np-1], on the stack: the registers are short
	var kLo, kHi Register
	if wide {
		t := GP64()
		MOVQ(U32(32), t)
		CMPQ(lim, t)
		CMOVQLT(lim, t) // min(8np, 32): the tables' last entry for longer tiles
		SUBQ(U8(8), t)  // 8(np-1)
		scBase = AllocLocal(64)
		v, tb := ZMM(), GP64()
		LEAQ(scIdx, tb)
		VMOVDQU64(Mem{Base: tb, Index: t, Scale: 8}, v)
		VMOVDQU64(v, scBase)
		SHRQ(U8(1), t) // 4(np-1)
		kLo, kHi = K(), K()
		m := GP32()
		LEAQ(scMaskLo, tb)
		MOVL(Mem{Base: tb, Index: t, Scale: 1}, m)
		KMOVD(m, kLo)
		LEAQ(scMaskHi, tb)
		MOVL(Mem{Base: tb, Index: t, Scale: 1}, m)
		KMOVD(m, kHi)
	}
	tv := beginTiles(name, planes...)
	tv.far = far
	// The eight-row wide step's per-pair vectors of the tile, the same for
	// every step of rows: the sums' correction (bias*sum, by b8) at
	// sumsT + 64*pair and the token's scales (by b8) at dxT + 64*pair, made
	// once a tile (np <= 4) in place of once a step.
	var sumsT, dxT Mem
	if wide {
		CMPQ(lim, U8(32))
		JG(LabelRef(name + "_rows8"))
		sumsT, dxT = AllocLocal(256), AllocLocal(256)
		x := GP64()
		XORQ(x, x)
		Label(name + "_hoist")
		VMOVDQU64(pairSums8(Mem{Base: s, Index: x, Scale: 1}, b8, bias), sumsT.Idx(x, 8))
		VMOVDQU64(pairScales8(Mem{Base: d, Index: x, Scale: 1}, b8), dxT.Idx(x, 8))
		ADDQ(U8(8), x)
		CMPQ(x, lim)
		JL(LabelRef(name + "_hoist"))
	}

	type step struct {
		n    int
		wide bool // rows8w
	}
	steps := []step{{8, true}, {8, false}, {4, false}}
	if q5 {
		steps = []step{{8, false}, {4, false}}
	}
	if q8 {
		steps = []step{{4, false}}
	}
	for _, st := range steps {
		n := st.n
		lbl := fmt.Sprintf("%s_rows%d", name, n)
		if st.wide {
			lbl += "w"
		}
		next := name + "_rows4"
		if n == 4 {
			next = name + "_rowsdone"
		}
		Label(lbl)
		CMPQ(tv.rows, U8(n))
		JL(LabelRef(next))
		pc, psc := tv.load("codes"), tv.load("scales")
		var c consts512
		if n == 4 {
			c = loadConsts512With(km)
		}
		var tlo, thi, cur VecVirtual
		if st.wide {
			// Row i's f16 scales of the tile at word 2np*i of [tlo | thi].
			tlo, thi, cur = ZMM(), ZMM(), ZMM()
			VMOVDQU16_Z(Mem{Base: psc}, kLo, tlo)
			VMOVDQU16_Z(Mem{Base: psc, Disp: 64}, kHi, thi)
			VMOVDQU64(scBase, cur)
		}
		var ph Register
		if q5 {
			ph = tv.load("high")
		}
		x := GP64() // 8*pair
		XORQ(x, x)
		var acc VecVirtual
		if n == 8 {
			acc = YMM()
		} else {
			acc = XMM()
		}
		VMOVUPS(zero32, acc) // not VXORPS: its EVEX form (X16+) is AVX512DQ

		Label(lbl + "_pair")
		if q8 {
			tv.prefetch(64 * n)
		} else {
			tv.prefetch(32 * n)
		}
		// row k of the codes at rm(k, disp)
		t := GP64()
		LEAQ(Mem{Base: pc, Index: cs, Scale: 2}, t)
		var pc4, t4 Register
		if n == 8 {
			pc4, t4 = GP64(), GP64()
			LEAQ(Mem{Base: pc, Index: cs, Scale: 4}, pc4)
			LEAQ(Mem{Base: pc4, Index: cs, Scale: 2}, t4)
		}
		rm := func(k, disp int) Mem {
			if k >= 4 {
				return rowMem(pc4, cs, t4, k-4, disp)
			}
			return rowMem(pc, cs, t, k, disp)
		}
		// hm is row k of the high bits, addressed through a fresh
		// register where it takes one (the general registers are short).
		hm := func(k int) Mem {
			switch k {
			case 0, 1, 2:
				return rowMem(ph, hs, nil, k, 0)
			}
			r := GP64()
			if k == 3 {
				LEAQ(Mem{Base: ph, Index: hs, Scale: 2}, r)
				return Mem{Base: r, Index: hs, Scale: 1}
			}
			LEAQ(Mem{Base: ph, Index: hs, Scale: 4}, r)
			if k == 7 {
				LEAQ(Mem{Base: r, Index: hs, Scale: 2}, r)
				return Mem{Base: r, Index: hs, Scale: 1}
			}
			return rowMem(r, hs, nil, k-4, 0)
		}
		z := make([]VecVirtual, n/2) // [r_2p A, r_2p B, r_2p+1 A, r_2p+1 B]
		if q8 {
			za := ZMM()
			VMOVDQU64(Mem{Base: a, Index: x, Scale: 8}, za)
			corr := ZMM()
			VPXORD(corr, corr, corr)
			vpdpbusd(za, m80, corr) // 128*sum(a) per dword
			v := make([]VecVirtual, n)
			for k := range v {
				v[k] = ZMM()
				VPSUBD(corr, zero, v[k]) // -128*sum(a)
				w := ZMM()
				VPXORD(rm(k, 0), m80, w) // w+128
				vpdpbusd(za, w, v[k])
			}
			for p := range z {
				z[p] = pairRows(v[2*p], v[2*p+1])
			}
		} else {
			ae, ao := ZMM(), ZMM()
			VBROADCASTI64X4(Mem{Base: a, Index: x, Scale: 8}, ae)           // even elements of A, B; twice
			VBROADCASTI64X4(Mem{Base: a, Index: x, Scale: 8, Disp: 32}, ao) // odd elements
			for p := range z {
				cz := ZMM()
				VMOVDQU64(rm(2*p, 0), cz.AsY())
				VINSERTI64X4(U8(1), rm(2*p+1, 0), cz, cz)
				hi := ZMM()
				VPSRLW(U8(4), cz, hi)
				VPANDD(m0F, cz, cz)
				VPANDD(m0F, hi, hi)
				if q5 {
					hv := ZMM()
					VPBROADCASTQ(hm(2*p), hv)
					VPBROADCASTQ(hm(2*p+1), hc.upper, hv) // [row 2p x4 | row 2p+1 x4]
					highBitsZ(hv, cz, hi, hc)
				}
				z[p] = ZMM()
				VPXORD(z[p], z[p], z[p])
				vpdpbusd(ae, cz, z[p])
				vpdpbusd(ao, hi, z[p])
			}
		}
		dx := Mem{Base: d, Index: x, Scale: 1}
		if n == 4 {
			r := reducePairs(z[0], z[1], c.idxRed)
			if !q8 {
				sv := XMM()
				VMOVQ(Mem{Base: s, Index: x, Scale: 1}, sv)
				sb := YMM()
				VPERMD(sv.AsY(), c.idx01, sb)
				VPSLLD(U8(bias), sb, sb)
				VPSUBD(sb, r.AsY(), r.AsY()) // - 8*sum(a), Q5_0 16*sum(a)
			}
			finish4(r, psc, ss, dx, c, acc)
		} else {
			r := halfReduce(z[0], z[1])
			VPERMT2D(halfReduce(z[2], z[3]), red8, r) // [A r0..3 | A r4..7 | B r0..3 | B r4..7]
			if st.wide {
				VPSUBD(sumsT.Idx(x, 8), r, r) // - 8*sum(a)
				t := ZMM()
				VMOVDQU64(cur, t)
				VPERMI2W(thi, tlo, t) // [A r0..7 | B r0..7], f16
				VPADDW(scTwo, cur, cur)
				w := ZMM()
				VCVTPH2PS(t.AsY(), w)
				finish8x(r, w, dxT.Idx(x, 8), acc)
			} else {
				if !q8 {
					VPSUBD(pairSums8(Mem{Base: s, Index: x, Scale: 1}, b8, bias), r, r) // - 8*sum(a), Q5_0 16*sum(a)
				}
				finish8(r, psc, ss, dx, sT8, b8, acc, km)
			}
		}
		if q8 {
			ADDQ(U8(64), pc) // code bytes per pair and row
		} else {
			ADDQ(U8(32), pc)
		}
		if !st.wide {
			ADDQ(U8(4), psc)
		}
		if q5 {
			ADDQ(U8(8), ph)
		}
		ADDQ(U8(8), x)
		CMPQ(x, lim)
		JL(LabelRef(lbl + "_pair"))

		y := GP64()
		MOVQ(tv.y, y)
		store(lbl, acc, y, tv.add)
		ADDQ(U8(4*n), y)
		MOVQ(y, tv.y)
		for i, p := range tv.planes {
			r := tv.load(p)
			for o := 0; small > 0 && i > 0 && o < n/4; o++ {
				PREFETCHT0(Mem{Base: r, Disp: small + 64*o})
			}
			LEAQ(Mem{Base: r, Index: strides[p], Scale: uint8(n)}, r)
			MOVQ(r, tv.local[p])
		}
		SUBQ(U8(n), tv.rows)
		JMP(LabelRef(lbl))
	}

	tv.endTiles(name, func() {
		LEAQ(Mem{Base: a, Index: lim, Scale: 8}, a) // 64 bytes per pair
		ADDQ(lim, d)                                // 2 floats per pair
		if !q8 {
			ADDQ(lim, s)
		}
	})
}

// highConsts are the Q5 kernels' constants for highBitsZ.
type highConsts struct {
	shuf, lo, hi, c10 VecVirtual
	upper             Register // opmask of the high four qwords
}

// loadHighConsts loads them, shuf being hShufZ or hShufKZ; lh loads hBitLo
// and hBitHi, else hBitLH (into lo).
func loadHighConsts(shuf Mem, lh bool) highConsts {
	c := highConsts{shuf: ZMM(), lo: ZMM(), c10: ZMM()}
	VMOVDQU64(shuf, c.shuf)
	VPBROADCASTD(c10x4, c.c10)
	if lh {
		c.hi = ZMM()
		VMOVDQU64(hBitLo, c.lo)
		VMOVDQU64(hBitHi, c.hi)
	} else {
		VMOVDQU64(hBitLH, c.lo)
	}
	r := GP32()
	MOVL(U32(0xf0), r)
	c.upper = K()
	KMOVW(r, c.upper)
	return c
}

// highBitsZ adds the 5th bits (16) to the nibbles lo (even elements) and hi
// (odd ones) by 128-bit lane, hv holding in each lane the high-bit bytes
// of the lane's block as c.shuf expects them; with hi nil, lo holds the
// even elements in its low 256 bits and the odd ones in its high 256 bits
// (c from loadHighConsts(_, false)). VPTESTMB makes the byte masks.
func highBitsZ(hv, lo, hi VecVirtual, c highConsts) {
	VPSHUFB(c.shuf, hv, hv)
	k := K()
	VPTESTMB(c.lo, hv, k)
	VPADDB(c.c10, lo, k, lo)
	if hi != nil {
		k2 := K()
		VPTESTMB(c.hi, hv, k2)
		VPADDB(c.c10, hi, k2, hi)
	}
}

// finish8 is finish4 for eight rows: r is [A r0..3 | A r4..7 | B r0..3 |
// B r4..7] (int32) and acc the rows' sums [r0..r7]; block A is added to
// acc, then block B.
func finish8(r VecVirtual, psc, ss Register, dx Mem, sT8, b8, acc VecVirtual, km [3]Register) {
	p4 := GP64()
	LEAQ(Mem{Base: psc, Index: ss, Scale: 4}, p4)
	g := YMM()
	VINSERTI32X4(U8(1), gather4z(p4, ss, km), gather4z(psc, ss, km).AsY(), g) // [r0 .. r7], f16 A and B each
	w := ZMM()
	VCVTPH2PS(g, w)
	if sT8 == nil {
		sT8 = ZMM()
		VMOVDQU64(idxST8, sT8)
	}
	VPERMPS(w, sT8, w)
	finish8x(r, w, pairScales8(dx, b8), acc)
}

// pairSums8 loads the token's sums of a pair of blocks (two int32 at sm)
// as the eight-row steps subtract them: [A x8 | B x8] (b8), times 1<<bias.
func pairSums8(sm Mem, b8 VecVirtual, bias int) VecVirtual {
	sv, sb := XMM(), ZMM()
	VMOVQ(sm, sv)
	VPERMD(sv.AsZ(), b8, sb)
	VPSLLD(U8(bias), sb, sb)
	return sb
}

// pairScales8 loads the token's scales of a pair of blocks (two float32 at
// dx) as the eight-row steps multiply by them: [dxA x8 | dxB x8] (b8).
func pairScales8(dx Mem, b8 VecVirtual) VecVirtual {
	v, xv := XMM(), ZMM()
	VMOVQ(dx, v)
	VPERMD(v.AsZ(), b8, xv)
	return xv
}

// finish8x is finish8 with the rows' scales w [dA r0..7 | dB r0..7]
// (float32) and the token's scales xv [dxA x8 | dxB x8] at hand (a
// register, or the tile's vector in memory).
func finish8x(r, w VecVirtual, xv Op, acc VecVirtual) {
	f := ZMM()
	VCVTDQ2PS(r, f)
	VMULPS(xv, w, w) // d_w * d_x
	VMULPS(w, f, f)  // float32(isum) * (d_w*d_x)
	VADDPS(f.AsY(), acc, acc)
	h := YMM()
	VEXTRACTF64X4(U8(1), f, h)
	VADDPS(h, acc, acc)
}

// rowsQ4Kx512 writes the Q4_K (q5: Q5_K, with the 5th bits added by
// highBitsZ) rows kernel (the arguments of rowsK). Per
// super-block and row, the 128 code bytes in two zmm (sub-blocks 4jj..4jj+3
// by 128-bit lane), their nibbles multiplied by the token's codes with
// VPMADDUBSW (int16: at most 2*31*128 per product pair, twice), then by the
// sub-block scales and summed into dwords with VPDPWSSD. The activations of
// a zmm's four sub-blocks are two 32-byte halves of the permuted codes,
// put together once per super-block for the four rows. The mins and the
// float part are the AVX2 kernel's.
func rowsQ4Kx512(name string, q5 bool) {
	if q5 {
		TEXT(name, NOSPLIT, "func(codes, high, sm, dm *byte, cstride, hstride, mstride, dstride int, a *int8, d *float32, bp *int16, nsb int, y *float32, rows, tiles, tstride int)")
		rowsDoc(name, "dotQ5_K(codes, high, sm, dm of row i, tile t; the token's codes, scales and bsums of tile t)")
	} else {
		TEXT(name, NOSPLIT, "func(codes, sm, dm *byte, cstride, mstride, dstride int, a *int8, d *float32, bp *int16, nsb int, y *float32, rows, tiles, tstride int)")
		rowsDoc(name, "dotQ4_K(codes, sm, dm of row i, tile t; the token's codes, scales and bsums of tile t)")
	}
	Pragma("noescape")
	cnt := AllocLocal(8)
	cs := Load(Param("cstride"), GP64())
	ms := Load(Param("mstride"), GP64())
	ds := Load(Param("dstride"), GP64())
	strides := map[string]Register{"codes": cs, "sm": ms, "dm": ds}
	planes := []string{"codes", "sm", "dm"}
	var hs Register
	var hc highConsts
	if q5 {
		hs = Load(Param("hstride"), GP64())
		strides["high"] = hs
		planes = append(planes, "high")
		hc = loadHighConsts(hShufKZ, true)
	}
	m0F := ZMM()
	VPBROADCASTD(c0Fx4, m0F)
	var scm [2]VecVirtual
	for jj := range scm {
		scm[jj] = ZMM()
		VMOVDQU64(scMaskZ[jj], scm[jj])
	}
	km := gatherMasks()
	mm, it := XMM(), YMM()
	VMOVDQU64(mMask, mm)
	VMOVDQU64(idxT, it)
	tv := beginTiles(name, planes...)

	p, acc := kRowsBegin(name, q5, tv, cnt)
	pc, psm, pdm, ph, pa, pbp := p.pc, p.psm, p.pdm, p.ph, p.pa, p.pbp
	// ae[jj], ao[jj]: the even (odd) elements of sub-blocks 4jj..4jj+3.
	var ae, ao [2]VecVirtual
	for jj := 0; jj < 2; jj++ {
		for h := 0; h < 2; h++ {
			z := ZMM()
			VMOVDQU64(Mem{Base: pa, Disp: 128*jj + 32*h}, z.AsY())
			VINSERTI64X4(U8(1), Mem{Base: pa, Disp: 128*jj + 64 + 32*h}, z, z)
			if h == 0 {
				ae[jj] = z
			} else {
				ao[jj] = z
			}
		}
	}
	t := GP64()
	LEAQ(Mem{Base: pc, Index: cs, Scale: 2}, t)
	tm := GP64()
	LEAQ(Mem{Base: psm, Index: ms, Scale: 2}, tm)
	var th Register
	if q5 {
		th = GP64()
		LEAQ(Mem{Base: ph, Index: hs, Scale: 2}, th)
	}
	var v [4]VecVirtual
	for k := 0; k < 4; k++ {
		smv := ZMM()
		VBROADCASTI32X4(rowMem(psm, ms, tm, k, 0), smv)
		v[k] = ZMM()
		for jj := 0; jj < 2; jj++ {
			lo, hi := ZMM(), ZMM()
			VMOVDQU64(rowMem(pc, cs, t, k, 64*jj), lo)
			VPSRLW(U8(4), lo, hi)
			VPANDD(m0F, lo, lo)
			VPANDD(m0F, hi, hi)
			if q5 {
				hv := ZMM()
				VBROADCASTI32X4(rowMem(ph, hs, th, k, 16*jj), hv) // the high bytes of pairs 2jj, 2jj+1
				highBitsZ(hv, lo, hi, hc)
			}
			VPMADDUBSW(ae[jj], lo, lo)
			VPMADDUBSW(ao[jj], hi, hi)
			VPADDW(hi, lo, lo)
			sc := ZMM()
			VPSHUFB(scm[jj], smv, sc)
			if jj == 0 {
				VPMADDWD(sc, lo, v[k]) // sc_j * sum(q*a) per dword
			} else {
				vpdpwssd(sc, lo, v[k])
			}
		}
	}
	si := reduce4z(v) // sumi of rows 0..3
	var m [4]VecVirtual
	for k := 0; k < 4; k++ {
		mv := XMM()
		VMOVDQU64(rowMem(psm, ms, tm, k, 0), mv)
		VPSHUFB(mm, mv, mv) // the 8 mins as int16
		m[k] = XMM()
		VPMADDWD(Mem{Base: pbp}, mv, m[k])
	}
	sm := reduce4(m, false) // summ of rows 0..3
	w := YMM()
	VCVTPH2PS(gather4z(pdm, ds, km), w)
	VPERMPS(w, it, w) // [d r0..3 | dmin r0..3]
	kSuperblockEnd(name, si, sm, w, acc, p, cnt)
	tv.nextRows(name, acc, strides)

	tv.endTiles(name, func() { nextTileK(true) })
}

// rowsQ6x512 writes the Q6_K rows kernel (the arguments of rowsQ6). Per
// super-block and row, the 256 codes (int8: q-32, but any byte is taken
// exactly) in four zmm (groups of 16 by 128-bit lane). As in the AVX2
// kernel the products are |w| (unsigned) times a*sign(w), but the sign
// goes on by negating the token's codes (loaded once per super-block for
// the four rows) under the mask of w's sign bits: VPMADDUBSW then sums
// pairs in int16 exactly (|a| <= 127, so at most 2*128*127), and VPDPWSSD
// multiplies them by the group scales (VPERMW spreads them) into dwords.
// The float part is the AVX2 kernel's.
func rowsQ6x512(name string) {
	var zero VecVirtual
	var wi, av [4]VecVirtual // the word indices of VPERMW; the token's codes
	rowsQ6With(name, q6Kernel{
		setup: func() {
			zero = ZMM()
			VPXORD(zero, zero, zero)
			for jj := range wi {
				wi[jj] = ZMM()
				VMOVDQU64(wIdxZ[jj], wi[jj])
			}
		},
		tokens: func(pa Register) {
			for jj := range av {
				av[jj] = ZMM()
				VMOVDQU64(Mem{Base: pa, Disp: 64 * jj}, av[jj])
			}
		},
		row: func(k int, r q6Regs, v *[4]VecVirtual) {
			sv := ZMM()
			VPMOVSXBW(rowMem(r.psc, r.ss, r.ts, k, 0), sv.AsY()) // the 16 scales as int16
			v[k] = ZMM()
			for jj := 0; jj < 4; jj++ {
				w, sg := ZMM(), K()
				VMOVDQU64(rowMem(r.pc, r.cs, r.t, k, 64*jj), w)
				VPMOVB2M(w, sg)
				VPABSB(w, w)
				x := ZMM()
				VMOVDQA64(av[jj], x)
				VPSUBB(x, zero, sg, x) // a*sign(w)
				VPMADDUBSW(x, w, x)
				sc := ZMM()
				VPERMW(sv, wi[jj], sc)
				if jj == 0 {
					VPMADDWD(sc, x, v[k])
				} else {
					vpdpwssd(sc, x, v[k])
				}
			}
		},
		reduce: reduce4z,
	})
}

// nextTileK moves the activation arguments of the K-quant rows kernels on
// by a K-tile of nsb super-blocks: d by 4 bytes per super-block, bp (if
// bp) by 16, a by 256.
func nextTileK(bp bool) {
	n := Load(Param("nsb"), GP64())
	m := GP64()
	MOVQ(n, m)
	SHLQ(U8(2), m) // 4 bytes of d per super-block
	r := Load(Param("d"), GP64())
	ADDQ(m, r)
	Store(r, Param("d"))
	if bp {
		SHLQ(U8(2), m) // 16 bytes of bp
		r = Load(Param("bp"), GP64())
		ADDQ(m, r)
		Store(r, Param("bp"))
	}
	SHLQ(U8(8), n) // 256 codes
	r = Load(Param("a"), GP64())
	ADDQ(n, r)
	Store(r, Param("a"))
}
