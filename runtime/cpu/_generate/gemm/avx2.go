package main

// The AVX2 GEMM: the same panels (read as two halves of eight rows, 32
// bytes each), the same activations, the same bits; for CPUs without
// AVX-512 (Zen 3, Intel before Ice Lake). Without VNNI the products go
// through VPMADDUBSW (unsigned by signed bytes, pairs summed into int16)
// and VPMADDWD (pairs of int16 into int32):
//
//   - Q4_0 and Q5_0: the codes (at most 31) times the activations (at most
//     127 in magnitude) summed over four kquads stay within int16 (4 * 2 *
//     31 * 127 = 31496), so one VPMADDWD per four kquads; the offset is
//     taken off in the int32 sum as in the AVX-512 kernel.
//   - Q8_0: the panel's code+128 would overflow int16, so the signed code
//     is recovered (XOR 0x80), its magnitude multiplies the activation with
//     the code's sign (VPSIGNB), and each kquad's pairs are widened at once;
//     no offset to take off.
//
// Two tokens a pass, sixteen rows per call; the float32 tile sums live in
// the frame (ymm registers run short), with the same operations in the
// same order as the scalar kernels.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var ones16 Mem // 16 x int16 1

func avx2() {
	b := make([]byte, 32)
	for i := 0; i < 32; i += 2 {
		b[i] = 1
	}
	ones16 = table("gemmOnes16", b)
	gemm2("gemm2AVX2", false)
	gemm2("gemm2Q8AVX2", true)
	pack2("gemmPackQ4_0AVX2", false, true)
	pack2("gemmPackQ8_0AVX2", true, true)
	pack2("gemmCodesQ4AVX2", false, false)
	pack2("gemmCodesQ8AVX2", true, false)
	packHigh2()
	gemmK2("gemmQ4K2AVX2", false)
	gemmK2("gemmQ6K2AVX2", true)
	packScalesK2("gemmScalesQ4KAVX2", false)
	packScalesK2("gemmScalesQ6KAVX2", true)
}

const toks2 = 2

// gemm2 writes the AVX2 kernel: sixteen rows of a panel (w, sc at the
// group) by toks (1 or 2) tokens.
func gemm2(name string, q8 bool) {
	TEXT(name, NOSPLIT, "func(w *byte, sc *float32, a *int8, astride int, gd *int32, o *float32, ostride, nb, np, toks, add int)")
	what := "Q4_0 or Q5_0"
	if q8 {
		what = "Q8_0"
	}
	Doc(name+" multiplies sixteen rows of a "+what+" panel (w and sc at the",
		"group: gemmPack*) by toks tokens (1 or 2) with the arguments and",
		"arithmetic of gemmI8AVX512 (gd's pass layout: token t's pair at",
		"gd[12i+2t:]; the offset sums are not read for Q8_0).")
	Pragma("noescape")
	acc := AllocLocal(4 * 32) // the float32 tile sums, [token][half]
	dispatch(name, nil, toks2, func(lbl string, _, t int) { variant2(lbl, t, q8, acc) })
}

// frameSlot is the float32 tile sums of half r (eight rows), token t, kept
// in the frame at acc ([token][half], 32 bytes each).
func frameSlot(acc Mem, r, t int) Mem { return acc.Offset(32 * (2*t + r)) }

// zeroFrame zeroes the frame's tile sums of T tokens.
func zeroFrame(acc Mem, T int) {
	z := YMM()
	VXORPS(z, z, z)
	for r := 0; r < 2; r++ {
		for t := 0; t < T; t++ {
			VMOVUPS(z, frameSlot(acc, r, t))
		}
	}
}

// frameAcc returns storeTile's acc for the frame's tile sums: a new
// register loaded with one.
func frameAcc(acc Mem) func(r, t int) VecVirtual {
	return func(r, t int) VecVirtual {
		v := YMM()
		VMOVUPS(frameSlot(acc, r, t), v)
		return v
	}
}

func variant2(lbl string, T int, q8 bool, acc Mem) {
	pw := Load(Param("w"), GP64())
	ps := Load(Param("sc"), GP64())
	a := newTokens("a", "astride", false)
	pg := Load(Param("gd"), GP64())
	nb := Load(Param("nb"), GP64())
	first := firstTile()
	facc := func(r, t int) Mem { return frameSlot(acc, r, t) }
	Label(lbl + "_tile")
	zeroFrame(acc, T)
	cnt := Load(Param("np"), GP64())
	Label(lbl + "_blk")
	var I [2][toks2]VecVirtual
	for r := 0; r < 2; r++ {
		for t := 0; t < T; t++ {
			I[r][t] = YMM()
			if q8 {
				VPXOR(I[r][t], I[r][t], I[r][t])
			} else {
				VPBROADCASTD(Mem{Base: pg, Disp: 8*t + 4}, I[r][t]) // -offset*sum
			}
		}
	}
	if q8 {
		c80 := YMM()
		VPBROADCASTD(c80x4, c80)
		for k := 0; k < 8; k++ {
			var ws, wa [2]VecVirtual
			for r := 0; r < 2; r++ {
				ws[r], wa[r] = YMM(), YMM()
				VPXOR(Mem{Base: pw, Disp: 128*k + 32*r}, c80, ws[r]) // the signed code
				VPABSB(ws[r], wa[r])
			}
			for t := 0; t < T; t++ {
				ab := YMM()
				VPBROADCASTD(a.at(t, 4*k), ab)
				for r := 0; r < 2; r++ {
					p := YMM()
					VPSIGNB(ws[r], ab, p) // a with the code's sign
					VPMADDUBSW(p, wa[r], p)
					VPMADDWD(ones16, p, p)
					VPADDD(p, I[r][t], I[r][t])
				}
			}
		}
	} else {
		var S [2][toks2]VecVirtual
		for h := 0; h < 2; h++ {
			for q := 0; q < 4; q++ {
				k := 4*h + q
				var W [2]VecVirtual
				for r := 0; r < 2; r++ {
					W[r] = YMM()
					VMOVDQU(Mem{Base: pw, Disp: 128*k + 32*r}, W[r])
				}
				for t := 0; t < T; t++ {
					ab := YMM()
					VPBROADCASTD(a.at(t, 4*k), ab)
					for r := 0; r < 2; r++ {
						if q == 0 {
							S[r][t] = YMM()
							VPMADDUBSW(ab, W[r], S[r][t])
							continue
						}
						p := YMM()
						VPMADDUBSW(ab, W[r], p)
						VPADDW(p, S[r][t], S[r][t])
					}
				}
			}
			for r := 0; r < 2; r++ {
				for t := 0; t < T; t++ {
					VPMADDWD(ones16, S[r][t], S[r][t])
					VPADDD(S[r][t], I[r][t], I[r][t])
				}
			}
		}
	}
	for r := 0; r < 2; r++ {
		dw := YMM()
		VMOVUPS(Mem{Base: ps, Disp: 32 * r}, dw)
		for t := 0; t < T; t++ {
			s := YMM()
			VBROADCASTSS(Mem{Base: pg, Disp: 8 * t}, s)
			VMULPS(s, dw, s) // dw * da
			VCVTDQ2PS(I[r][t], I[r][t])
			VMULPS(s, I[r][t], I[r][t])          // float32(v) * (dw * da)
			VADDPS(facc(r, t), I[r][t], I[r][t]) // acc + ...
			VMOVUPS(I[r][t], facc(r, t))
		}
	}
	ADDQ(U32(1024), pw)
	ADDQ(U32(128), ps)
	a.advance(32)
	ADDQ(U8(48), pg)
	DECQ(cnt)
	JNZ(LabelRef(lbl + "_blk"))
	storeTile(lbl, first, 2, T, 32, frameAcc(acc), newTokens("o", "ostride", false))
	SUBQ(Load(Param("np"), GP64()), nb)
	JNZ(LabelRef(lbl + "_tile"))
	VZEROUPPER()
}

// transpose8 turns v (v[r] = eight dwords of row r: items 0..7) into the
// eight vectors of item k (row r in dword r), passed to out.
func transpose8(v [8]VecVirtual, out func(k int, x VecVirtual)) {
	var t [8]VecVirtual
	for i := 0; i < 4; i++ {
		t[2*i], t[2*i+1] = YMM(), YMM()
		VPUNPCKLDQ(v[2*i+1], v[2*i], t[2*i])   // [r0k0 r1k0 r0k1 r1k1 | k4, k5]
		VPUNPCKHDQ(v[2*i+1], v[2*i], t[2*i+1]) // [k2, k3 | k6, k7]
	}
	var u [8]VecVirtual
	for g := 0; g < 2; g++ { // rows 4g..4g+3
		a, b, c, d := t[4*g], t[4*g+1], t[4*g+2], t[4*g+3]
		u[4*g], u[4*g+1], u[4*g+2], u[4*g+3] = YMM(), YMM(), YMM(), YMM()
		VPUNPCKLQDQ(c, a, u[4*g])   // [k0 of 4 rows | k4]
		VPUNPCKHQDQ(c, a, u[4*g+1]) // [k1 | k5]
		VPUNPCKLQDQ(d, b, u[4*g+2]) // [k2 | k6]
		VPUNPCKHQDQ(d, b, u[4*g+3]) // [k3 | k7]
	}
	for k := 0; k < 4; k++ {
		lo, hi := YMM(), YMM()
		VPERM2I128(U8(0x20), u[4+k], u[k], lo) // item k of rows 0..7
		VPERM2I128(U8(0x31), u[4+k], u[k], hi) // item k+4
		out(k, lo)
		out(k+4, hi)
	}
}

// pack2 writes gemmPack*AVX2, gemmPack*AVX512's arguments and layout,
// eight rows at a time.
func pack2(name string, q8, scales bool) {
	if scales {
		TEXT(name, NOSPLIT, "func(codes, scales *byte, cstride, sstride int, w *byte, sc *float32, np, tiles, tstride int)")
		Doc(name+" is "+fmt.Sprintf("gemmPack%sAVX512", map[bool]string{false: "Q4_0", true: "Q8_0"}[q8])+" for CPUs without AVX-512: the same panel, eight rows at",
			"a time by an 8x8 transposition of dwords.")
	} else {
		TEXT(name, NOSPLIT, "func(codes *byte, cstride int, w *byte, np, tiles, tstride int)")
		Doc(name + " is " + fmt.Sprintf("gemmCodes%sAVX512", map[bool]string{false: "Q4", true: "Q8"}[q8]) + " for CPUs without AVX-512.")
	}
	Pragma("noescape")
	panelLoop(name, q8, scales, nil, nil, func(p *panelRegs, c, s Register) {
		cs, ss, pw, psc := p.cs, p.ss, p.pw, p.psc
		for half := 0; half < 2; half++ {
			rb := GP64()
			MOVQ(c, rb)
			if half == 1 {
				LEAQ(Mem{Base: c, Index: cs, Scale: 8}, rb)
			}
			var v [8]VecVirtual
			for r := 0; r < 8; r++ {
				v[r] = YMM()
				if q8 {
					m := YMM()
					VPBROADCASTD(c80x4, m)
					VPXOR(Mem{Base: rb}, m, v[r])
				} else {
					x, hi := XMM(), XMM()
					VMOVDQU(Mem{Base: rb}, x)
					m := XMM()
					VPBROADCASTD(c0Fx4, m)
					VPSRLW(U8(4), x, hi)
					VPAND(m, hi, hi)
					VPAND(m, x, x)
					l := XMM()
					VPUNPCKLBW(hi, x, l) // elements 0..15
					VPUNPCKHBW(hi, x, x) // 16..31
					VINSERTI128(U8(1), x, l.AsY(), v[r])
				}
				ADDQ(cs, rb)
			}
			transpose8(v, func(k int, x VecVirtual) { VMOVDQU(x, Mem{Base: pw, Disp: 128*k + 32*half}) })
		}
		// The sixteen f16 scales.
		for half := 0; half < 2 && scales; half++ {
			x := XMM()
			sb := GP64()
			MOVQ(s, sb)
			if half == 1 {
				LEAQ(Mem{Base: s, Index: ss, Scale: 8}, sb)
			}
			for r := 0; r < 8; r++ {
				VPINSRW(U8(r), Mem{Base: sb}, x, x)
				if r < 7 {
					ADDQ(ss, sb)
				}
			}
			f := YMM()
			VCVTPH2PS(x, f)
			VMOVUPS(f, Mem{Base: psc, Disp: 32 * half})
		}
	})
}

// packHigh2 writes gemmPackHighAVX2, gemmPackHighAVX512 for CPUs without
// AVX-512, eight rows at a time.
func packHigh2() {
	TEXT("gemmPackHighAVX2", NOSPLIT, "func(high *byte, hstride int, w *byte, np, tiles, tstride int)")
	Doc("gemmPackHighAVX2 is gemmPackHighAVX512 for CPUs without AVX-512.")
	Pragma("noescape")
	ph := Load(Param("high"), GP64())
	hs := Load(Param("hstride"), GP64())
	pw := Load(Param("w"), GP64())
	tiles := Load(Param("tiles"), GP64())
	spread, m0F, m01 := YMM(), YMM(), YMM()
	VPBROADCASTD(cSpread, spread)
	VPBROADCASTD(c0Fd, m0F)
	VPBROADCASTD(c01x4, m01)
	Label("ph2_tile")
	h0 := GP64()
	MOVQ(ph, h0)
	cnt := Load(Param("np"), GP64())
	Label("ph2_blk")
	for half := 0; half < 2; half++ {
		rb := GP64()
		MOVQ(h0, rb)
		if half == 1 {
			LEAQ(Mem{Base: h0, Index: hs, Scale: 8}, rb)
		}
		lo, hi := XMM(), XMM()
		for r := 0; r < 8; r++ {
			x := lo
			if r >= 4 {
				x = hi
			}
			VPINSRD(U8(r%4), Mem{Base: rb}, x, x)
			if r < 7 {
				ADDQ(hs, rb)
			}
		}
		h := YMM()
		VINSERTI128(U8(1), hi, lo.AsY(), h)
		addHigh(h, m0F, spread, m01, pw, 32*half, false)

	}
	ADDQ(U32(1024), pw)
	ADDQ(U8(4), h0)
	DECQ(cnt)
	JNZ(LabelRef("ph2_blk"))
	ADDQ(Load(Param("tstride"), GP64()), ph)
	DECQ(tiles)
	JNZ(LabelRef("ph2_tile"))
	VZEROUPPER()
	RET()
}
