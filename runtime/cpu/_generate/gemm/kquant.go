package main

// The K-quants' GEMM (Q4_K, Q5_K, Q6_K) on AVX-512: their kernel and the
// layout of their scales; the codes go through the Q4_0 and Q8_0 packing
// of main.go (gemmCodes*) and gemmPackHigh.

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The K-quants' panels: the codes as Q4_0's (Q4_K, Q5_K: sub-blocks of
// 32 as blocks) or Q8_0's (Q6_K: code XOR 0x80), 8 KiB a super-block of
// 256, and per super-block a scale area of sixteen-row vectors:
//
//	Q4_K, Q5_K (1792 bytes): sc [8 sub-blocks][2 groups][16]int32, mins
//	  [4 pairs][2][16]{int16 m_2k, int16 m_2k+1}, d [2][16]float32, dmin [2][16]float32
//	Q6_K (2176 bytes): sc [16 groups of 16][2][16]int32, d [2][16]float32
//
// and per super-block and token of a pass (gd, 128 bytes each): the
// activations' scale (float32), then Q4_K: the four pairs of sums of
// 32 {int16 b_2k, int16 b_2k+1}; Q6_K: -128 times each sum of 16 (int32).
const (
	kTokens    = 4 // tokens per pass
	kAreaQ4K   = 1792
	kAreaQ6K   = 2176
	kTokStride = 128
)

// gemmK writes the K-quants' kernel: rows (16 or 32) of a panel by toks
// (1 to 4) tokens, nsb super-blocks, nsbt per K-tile.
func gemmK(name string, q6 bool) {
	TEXT(name, NOSPLIT, "func(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, rows, toks, add int)")
	kind, spec := "Q4_K and Q5_K", "dotQ4_K"
	if q6 {
		kind, spec = "Q6_K", "dotQ6_K"
	}
	Doc(name+" multiplies a "+kind+" panel (w, sc: gemmCodes*, gemmScales*) of rows",
		"rows (16 or 32) by toks tokens (1 to 4) of Q8_K activations: token t's codes",
		"at a+t*astride, its scale and sums of super-block i at gd[32(4i+t):]; nsb",
		"super-blocks, nsbt per K-tile. Token t's outputs go to o+t*ostride bytes,",
		"with exactly the arithmetic of "+spec+", the first tile's sums stored unless add is 1.")
	Pragma("noescape")
	dispatch(name, []int{1, 2}, kTokens, func(lbl string, r, t int) { variantK(lbl, r, t, q6) })
}

func variantK(lbl string, R, T int, q6 bool) {
	pw := Load(Param("w"), GP64())
	ps := Load(Param("sc"), GP64())
	a := newTokens("a", "astride", true)
	pg := Load(Param("gd"), GP64())
	nsb := Load(Param("nsb"), GP64())
	first := firstTile()
	var SUMI, ISUM, F [2][kTokens]VecVirtual
	for r := 0; r < R; r++ {
		for t := 0; t < T; t++ {
			SUMI[r][t], ISUM[r][t], F[r][t] = ZMM(), ZMM(), ZMM()
		}
	}
	Label(lbl + "_tile")
	for r := 0; r < R; r++ {
		for t := 0; t < T; t++ {
			VPXORD(F[r][t], F[r][t], F[r][t])
		}
	}
	cnt := Load(Param("nsbt"), GP64())
	Label(lbl + "_sb")
	for r := 0; r < R; r++ {
		for t := 0; t < T; t++ {
			VPXORD(SUMI[r][t], SUMI[r][t], SUMI[r][t])
		}
	}
	// groups of kquads with a scale each: Q4_K 8 of 8, Q6_K 16 of 4.
	ng, kq := 8, 8
	if q6 {
		ng, kq = 16, 4
	}
	for gi := 0; gi < ng; gi++ {
		for r := 0; r < R; r++ {
			for t := 0; t < T; t++ {
				if q6 {
					VPBROADCASTD(Mem{Base: pg, Disp: kTokStride*t + 4 + 4*gi}, ISUM[r][t]) // -128*sum
				} else {
					VPXORD(ISUM[r][t], ISUM[r][t], ISUM[r][t])
				}
			}
		}
		for q := 0; q < kq; q++ {
			k := gi*kq + q // kquad of the super-block
			var W [2]VecVirtual
			for r := 0; r < R; r++ {
				W[r] = ZMM()
				VMOVDQU32(Mem{Base: pw, Disp: 128*k + 64*r}, W[r])
			}
			for t := 0; t < T; t++ {
				if R == 1 {
					vpdpbusdB(a.at(t, 4*k), W[0], ISUM[0][t])
					continue
				}
				// The token's four codes broadcast once for both
				// groups, as in the Q4_0 kernel (main.go).
				x := ZMM()
				VPBROADCASTD(a.at(t, 4*k), x)
				for r := 0; r < R; r++ {
					vnni("VPDPBUSD", x, W[r], ISUM[r][t])
				}
			}
		}
		for r := 0; r < R; r++ {
			for t := 0; t < T; t++ {
				VPMULLD(Mem{Base: ps, Disp: 128*gi + 64*r}, ISUM[r][t], ISUM[r][t])
				VPADDD(ISUM[r][t], SUMI[r][t], SUMI[r][t])
			}
		}
	}
	if q6 {
		for r := 0; r < R; r++ {
			d := ZMM()
			VMOVUPS(Mem{Base: ps, Disp: 2048 + 64*r}, d)
			for t := 0; t < T; t++ {
				x := ZMM()
				VMULPS_BCST(Mem{Base: pg, Disp: kTokStride * t}, d, x) // f16(d) * dx
				VCVTDQ2PS(SUMI[r][t], SUMI[r][t])
				VMULPS(x, SUMI[r][t], SUMI[r][t]) // float32(sumi) * (...)
				VADDPS(SUMI[r][t], F[r][t], F[r][t])
			}
		}
	} else {
		// summ = sum of m_j * (b_2j + b_2j+1), by pairs of sub-blocks.
		for r := 0; r < R; r++ {
			for t := 0; t < T; t++ {
				VPXORD(ISUM[r][t], ISUM[r][t], ISUM[r][t])
			}
		}
		for k := 0; k < 4; k++ {
			for r := 0; r < R; r++ {
				m := ZMM()
				VMOVDQU32(Mem{Base: ps, Disp: 1024 + 128*k + 64*r}, m)
				for t := 0; t < T; t++ {
					vnni("VPDPWSSD.BCST", Mem{Base: pg, Disp: kTokStride*t + 4 + 4*k}, m, ISUM[r][t])
				}
			}
		}
		for r := 0; r < R; r++ {
			d, dm := ZMM(), ZMM()
			VMOVUPS(Mem{Base: ps, Disp: 1536 + 64*r}, d)
			VMOVUPS(Mem{Base: ps, Disp: 1664 + 64*r}, dm)
			for t := 0; t < T; t++ {
				x := ZMM()
				VMULPS_BCST(Mem{Base: pg, Disp: kTokStride * t}, d, x) // dd
				VCVTDQ2PS(SUMI[r][t], SUMI[r][t])
				VMULPS(x, SUMI[r][t], SUMI[r][t])                       // dd*float32(sumi)
				VMULPS_BCST(Mem{Base: pg, Disp: kTokStride * t}, dm, x) // dmin
				VCVTDQ2PS(ISUM[r][t], ISUM[r][t])
				VMULPS(x, ISUM[r][t], ISUM[r][t])          // dmin*float32(summ)
				VSUBPS(ISUM[r][t], SUMI[r][t], SUMI[r][t]) // the first minus the second
				VADDPS(SUMI[r][t], F[r][t], F[r][t])
			}
		}
	}
	nextSuperBlock(lbl, q6, pw, ps, pg, cnt, a)
	storeTile(lbl, first, R, T, 64, func(r, t int) VecVirtual { return F[r][t] }, newTokens("o", "ostride", true))
	SUBQ(Load(Param("nsbt"), GP64()), nsb)
	JNZ(LabelRef(lbl + "_tile"))
	VZEROUPPER()
}

// packScalesK writes gemmScalesQ4KAVX512 (q6: gemmScalesQ6KAVX512): the
// scale areas of sixteen rows, every super-block of tiles K-tiles.
func packScalesK(name string, q6 bool) {
	TEXT(name, NOSPLIT, "func(sm, dm *byte, mstride, dstride int, sc *byte, nsbt, tiles, tstride int)")
	if q6 {
		Doc(name+" lays out the scale areas of sixteen Q6_K rows: row r's 16 int8",
			"scales and f16 d of super-block i of tile t at sm + r*mstride + 16i +",
			"t*tstride and dm + r*dstride + 2i + t*tstride; area i at sc + 2176i (the",
			"caller adds 64 bytes for the second group). See gemmK's layout.")
	} else {
		Doc(name+" lays out the scale areas of sixteen Q4_K or Q5_K rows: row r's",
			"16 scalemin bytes and f16 d, dmin of super-block i of tile t at sm +",
			"r*mstride + 16i + t*tstride and dm + r*dstride + 4i + t*tstride; area i",
			"at sc + 1792i (the caller adds 64 bytes for the second group).")
	}
	Pragma("noescape")
	var ms3, ds3 Register
	var il, ih VecVirtual
	var shuf [4]VecVirtual
	scaleAreas(name, q6, func(ms, ds Register) {
		ms3, ds3 = GP64(), GP64()
		LEAQ(Mem{Base: ms, Index: ms, Scale: 2}, ms3)
		LEAQ(Mem{Base: ds, Index: ds, Scale: 2}, ds3)
		il, ih = ZMM(), ZMM()
		VMOVDQU32(idxLo, il)
		VMOVDQU32(idxHi, ih)
		// shuf[c]: dword i of each lane <- byte 4c+i, zero-extended (Q4_K)
		// or in the top byte, for an arithmetic shift (Q6_K).
		for c := range shuf {
			shuf[c] = ZMM()
			VBROADCASTI32X4(shufK[q6Index(q6)][c], shuf[c])
		}
	}, func(sm, dm, ms, ds, psc Register) {
		var V [4][4]VecVirtual // V[c][set]
		rb := GP64()
		MOVQ(sm, rb)
		for set := 0; set < 4; set++ {
			x := ZMM()
			VMOVDQU32(rowMem(rb, ms, ms3, 0, 0), x.AsX())
			for L := 1; L < 4; L++ {
				VINSERTI32X4(U8(L), rowMem(rb, ms, ms3, L, 0), x, x)
			}
			for c := 0; c < 4; c++ {
				V[c][set] = ZMM()
				VPSHUFB(shuf[c], x, V[c][set])
				if q6 {
					VPSRAD(U8(24), V[c][set], V[c][set])
				}
			}
			if set < 3 {
				LEAQ(Mem{Base: rb, Index: ms, Scale: 4}, rb)
			}
		}
		// sc (and Q4_K's mins as dwords first).
		transpose([2][4]VecVirtual{V[0], V[1]}, il, ih, func(k int, v VecVirtual) { VMOVDQU32(v, Mem{Base: psc, Disp: 128 * k}) })
		if q6 {
			transpose([2][4]VecVirtual{V[2], V[3]}, il, ih, func(k int, v VecVirtual) { VMOVDQU32(v, Mem{Base: psc, Disp: 128 * (8 + k)}) })
			VMOVUPS(gatherF16(dm, ds, ds3, 0), Mem{Base: psc, Disp: 2048})
		} else {
			var m [8]VecVirtual
			transpose([2][4]VecVirtual{V[2], V[3]}, il, ih, func(k int, v VecVirtual) { m[k] = v })
			for k := 0; k < 4; k++ {
				VPSLLD(U8(16), m[2*k+1], m[2*k+1])
				VPORD(m[2*k+1], m[2*k], m[2*k])
				VMOVDQU32(m[2*k], Mem{Base: psc, Disp: 1024 + 128*k})
			}
			VMOVUPS(gatherF16(dm, ds, ds3, 0), Mem{Base: psc, Disp: 1536})
			VMOVUPS(gatherF16(dm, ds, ds3, 2), Mem{Base: psc, Disp: 1664})
		}
	})
}

// scaleAreas writes the loops of a scale-area layout (packScalesK,
// packScalesK2): pre once with the row strides, then body per super-block
// with its rows' scale bytes sm, super-block scales dm and area psc, every
// tile.
func scaleAreas(name string, q6 bool, pre func(ms, ds Register), body func(sm, dm, ms, ds, psc Register)) {
	psm := Load(Param("sm"), GP64())
	pdm := Load(Param("dm"), GP64())
	ms := Load(Param("mstride"), GP64())
	ds := Load(Param("dstride"), GP64())
	psc := Load(Param("sc"), GP64())
	tiles := Load(Param("tiles"), GP64())
	if pre != nil {
		pre(ms, ds)
	}
	Label(name + "_tile")
	sm, dm := GP64(), GP64()
	MOVQ(psm, sm)
	MOVQ(pdm, dm)
	cnt := Load(Param("nsbt"), GP64())
	Label(name + "_sb")
	body(sm, dm, ms, ds, psc)
	if q6 {
		ADDQ(U32(kAreaQ6K), psc)
		ADDQ(U8(2), dm)
	} else {
		ADDQ(U32(kAreaQ4K), psc)
		ADDQ(U8(4), dm)
	}
	ADDQ(U8(16), sm)
	DECQ(cnt)
	JNZ(LabelRef(name + "_sb"))
	ts := Load(Param("tstride"), GP64())
	ADDQ(ts, psm)
	ADDQ(ts, pdm)
	DECQ(tiles)
	JNZ(LabelRef(name + "_tile"))
	VZEROUPPER()
	RET()
}

func q6Index(q6 bool) int {
	if q6 {
		return 1
	}
	return 0
}

// shufK[q6][c]: the VPSHUFB index of packScalesK, 16 bytes.
var shufK [2][4]Mem

// nextSuperBlock closes the super-block loop of a K-quant GEMM kernel (the
// AVX-512 and the AVX2 one): the panel's codes (8 KiB), its scale area,
// the tokens' codes and their gd move on by a super-block, and the loop
// runs again while cnt lasts.
func nextSuperBlock(lbl string, q6 bool, pw, ps, pg, cnt Register, a tokens) {
	area := kAreaQ4K
	if q6 {
		area = kAreaQ6K
	}
	ADDQ(U32(8192), pw)
	ADDQ(U32(area), ps)
	a.advance(256)
	ADDQ(U32(kTokens*kTokStride), pg)
	DECQ(cnt)
	JNZ(LabelRef(lbl + "_sb"))
}
