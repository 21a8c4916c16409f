package main

// The K-quants' GEMM on AVX2: the panels and scale areas of kquant.go,
// sixteen rows and one or two tokens a call, with VPMADDUBSW and VPMADDWD
// in place of VNNI: Q4_K and Q5_K codes (at most 31) times activations
// summed into int16 four kquads at a time stay within 4*2*31*127 = 31496
// (a sub-block's eight would not, for Q5_K); Q6_K's
// signed codes (the panel's XOR 0x80 undone) by the sign trick of gemm2Q8,
// with no offset to take off. Q4_K's mins go through VPMADDWD. The float32
// tile sums live in the frame.

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func gemmK2(name string, q6 bool) {
	TEXT(name, NOSPLIT, "func(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, toks, add int)")
	base := "gemmQ4KAVX512"
	if q6 {
		base = "gemmQ6KAVX512"
	}
	Doc(name+" is "+base+" for CPUs without AVX-512: sixteen rows (w and sc at the",
		"group) by toks tokens (1 or 2), token t's sums at gd[32t:] of each",
		"super-block's four; the same arithmetic.")
	Pragma("noescape")
	acc := AllocLocal(4 * 32) // the float32 tile sums, [token][half]
	dispatch(name, nil, toks2, func(lbl string, _, t int) { variantK2(lbl, t, q6, acc) })
}

func variantK2(lbl string, T int, q6 bool, acc Mem) {
	pw := Load(Param("w"), GP64())
	ps := Load(Param("sc"), GP64())
	a := newTokens("a", "astride", false)
	pg := Load(Param("gd"), GP64())
	nsb := Load(Param("nsb"), GP64())
	first := firstTile()
	facc := func(r, t int) Mem { return frameSlot(acc, r, t) }
	Label(lbl + "_tile")
	zeroFrame(acc, T)
	cnt := Load(Param("nsbt"), GP64())
	Label(lbl + "_sb")
	var SUMI, S [2][toks2]VecVirtual
	for r := 0; r < 2; r++ {
		for t := 0; t < T; t++ {
			SUMI[r][t], S[r][t] = YMM(), YMM()
			VPXOR(SUMI[r][t], SUMI[r][t], SUMI[r][t])
		}
	}
	ng, kq := 8, 8
	if q6 {
		ng, kq = 16, 4
	}
	var c80 VecVirtual
	if q6 {
		c80 = YMM()
		VPBROADCASTD(c80x4, c80)
	}
	for gi := 0; gi < ng; gi++ {
		// S: the group's int32 sums (int16 pairs first for the nibbles).
		for r := 0; r < 2; r++ {
			for t := 0; t < T; t++ {
				VPXOR(S[r][t], S[r][t], S[r][t])
			}
		}
		for q0 := 0; q0 < kq; q0 += 4 {
			var S16 [2][toks2]VecVirtual
			for q := q0; q < q0+4; q++ {
				k := gi*kq + q
				if q6 {
					var ws, wa [2]VecVirtual
					for r := 0; r < 2; r++ {
						ws[r], wa[r] = YMM(), YMM()
						VPXOR(Mem{Base: pw, Disp: 128*k + 32*r}, c80, ws[r])
						VPABSB(ws[r], wa[r])
					}
					for t := 0; t < T; t++ {
						ab := YMM()
						VPBROADCASTD(a.at(t, 4*k), ab)
						for r := 0; r < 2; r++ {
							p := YMM()
							VPSIGNB(ws[r], ab, p)
							VPMADDUBSW(p, wa[r], p)
							VPMADDWD(ones16, p, p)
							VPADDD(p, S[r][t], S[r][t])
						}
					}
					continue
				}
				var W [2]VecVirtual
				for r := 0; r < 2; r++ {
					W[r] = YMM()
					VMOVDQU(Mem{Base: pw, Disp: 128*k + 32*r}, W[r])
				}
				for t := 0; t < T; t++ {
					ab := YMM()
					VPBROADCASTD(a.at(t, 4*k), ab)
					for r := 0; r < 2; r++ {
						if q == q0 {
							S16[r][t] = YMM()
							VPMADDUBSW(ab, W[r], S16[r][t])
							continue
						}
						p := YMM()
						VPMADDUBSW(ab, W[r], p)
						VPADDW(p, S16[r][t], S16[r][t])
					}
				}
			}
			if !q6 {
				for r := 0; r < 2; r++ {
					for t := 0; t < T; t++ {
						VPMADDWD(ones16, S16[r][t], S16[r][t])
						VPADDD(S16[r][t], S[r][t], S[r][t])
					}
				}
			}
		}
		for r := 0; r < 2; r++ {
			for t := 0; t < T; t++ {
				VPMULLD(Mem{Base: ps, Disp: 128*gi + 32*r}, S[r][t], S[r][t])
				VPADDD(S[r][t], SUMI[r][t], SUMI[r][t])
			}
		}
	}
	if q6 {
		for r := 0; r < 2; r++ {
			d := YMM()
			VMOVUPS(Mem{Base: ps, Disp: 2048 + 32*r}, d)
			for t := 0; t < T; t++ {
				x := YMM()
				VBROADCASTSS(Mem{Base: pg, Disp: kTokStride * t}, x)
				VMULPS(x, d, x) // f16(d) * dx
				VCVTDQ2PS(SUMI[r][t], SUMI[r][t])
				VMULPS(x, SUMI[r][t], SUMI[r][t])
				VADDPS(facc(r, t), SUMI[r][t], SUMI[r][t])
				VMOVUPS(SUMI[r][t], facc(r, t))
			}
		}
	} else {
		// summ, in S: the mins' word pairs times the pairs of sums.
		for r := 0; r < 2; r++ {
			for t := 0; t < T; t++ {
				VPXOR(S[r][t], S[r][t], S[r][t])
			}
		}
		for k := 0; k < 4; k++ {
			var m [2]VecVirtual
			for r := 0; r < 2; r++ {
				m[r] = YMM()
				VMOVDQU(Mem{Base: ps, Disp: 1024 + 128*k + 32*r}, m[r])
			}
			for t := 0; t < T; t++ {
				b := YMM()
				VPBROADCASTD(Mem{Base: pg, Disp: kTokStride*t + 4 + 4*k}, b)
				for r := 0; r < 2; r++ {
					p := YMM()
					VPMADDWD(b, m[r], p)
					VPADDD(p, S[r][t], S[r][t])
				}
			}
		}
		for r := 0; r < 2; r++ {
			d, dm := YMM(), YMM()
			VMOVUPS(Mem{Base: ps, Disp: 1536 + 32*r}, d)
			VMOVUPS(Mem{Base: ps, Disp: 1664 + 32*r}, dm)
			for t := 0; t < T; t++ {
				x, y := YMM(), YMM()
				VBROADCASTSS(Mem{Base: pg, Disp: kTokStride * t}, x)
				VMULPS(x, dm, y) // dmin
				VMULPS(x, d, x)  // dd
				VCVTDQ2PS(SUMI[r][t], SUMI[r][t])
				VMULPS(x, SUMI[r][t], SUMI[r][t]) // dd*float32(sumi)
				VCVTDQ2PS(S[r][t], S[r][t])
				VMULPS(y, S[r][t], S[r][t])             // dmin*float32(summ)
				VSUBPS(S[r][t], SUMI[r][t], SUMI[r][t]) // the first minus the second
				VADDPS(facc(r, t), SUMI[r][t], SUMI[r][t])
				VMOVUPS(SUMI[r][t], facc(r, t))
			}
		}
	}
	nextSuperBlock(lbl, q6, pw, ps, pg, cnt, a)
	storeTile(lbl, first, 2, T, 32, frameAcc(acc), newTokens("o", "ostride", false))
	SUBQ(Load(Param("nsbt"), GP64()), nsb)
	JNZ(LabelRef(lbl + "_tile"))
	VZEROUPPER()
}

// packScalesK2 writes gemmScales*AVX2: packScalesK for CPUs without
// AVX-512, eight rows at a time (bytes widened by VPMOVZXBD or VPMOVSXBD,
// then the 8x8 transposition of dwords).
func packScalesK2(name string, q6 bool) {
	TEXT(name, NOSPLIT, "func(sm, dm *byte, mstride, dstride int, sc *byte, nsbt, tiles, tstride int)")
	base := "gemmScalesQ4KAVX512"
	if q6 {
		base = "gemmScalesQ6KAVX512"
	}
	Doc(name + " is " + base + " for CPUs without AVX-512.")
	Pragma("noescape")
	scaleAreas(name, q6, nil, func(sm, dm, ms, ds, psc Register) {
		for half := 0; half < 2; half++ {
			for part := 0; part < 2; part++ { // bytes 0..7, then 8..15
				rb := GP64()
				MOVQ(sm, rb)
				if half == 1 {
					LEAQ(Mem{Base: sm, Index: ms, Scale: 8}, rb)
				}
				var v [8]VecVirtual
				for r := 0; r < 8; r++ {
					v[r] = YMM()
					if q6 {
						VPMOVSXBD(Mem{Base: rb, Disp: 8 * part}, v[r])
					} else {
						VPMOVZXBD(Mem{Base: rb, Disp: 8 * part}, v[r])
					}
					ADDQ(ms, rb)
				}
				if q6 || part == 0 {
					transpose8(v, func(k int, x VecVirtual) {
						VMOVDQU(x, Mem{Base: psc, Disp: 128*(8*part+k) + 32*half})
					})
					continue
				}
				// Q4_K's mins: dwords, then pairs of words.
				var m [8]VecVirtual
				transpose8(v, func(k int, x VecVirtual) { m[k] = x })
				for k := 0; k < 4; k++ {
					VPSLLD(U8(16), m[2*k+1], m[2*k+1])
					VPOR(m[2*k+1], m[2*k], m[2*k])
					VMOVDQU(m[2*k], Mem{Base: psc, Disp: 1024 + 128*k + 32*half})
				}
			}
			// d (Q6_K), d and dmin (Q4_K) of the eight rows.
			db := GP64()
			MOVQ(dm, db)
			if half == 1 {
				LEAQ(Mem{Base: dm, Index: ds, Scale: 8}, db)
			}
			if q6 {
				x := XMM()
				for r := 0; r < 8; r++ {
					VPINSRW(U8(r), Mem{Base: db}, x, x)
					if r < 7 {
						ADDQ(ds, db)
					}
				}
				f := YMM()
				VCVTPH2PS(x, f)
				VMOVUPS(f, Mem{Base: psc, Disp: 2048 + 32*half})
				continue
			}
			lo, hi := XMM(), XMM()
			for r := 0; r < 8; r++ {
				VPINSRW(U8(r), Mem{Base: db}, lo, lo)
				VPINSRW(U8(r), Mem{Base: db, Disp: 2}, hi, hi)
				if r < 7 {
					ADDQ(ds, db)
				}
			}
			f, g := YMM(), YMM()
			VCVTPH2PS(lo, f)
			VCVTPH2PS(hi, g)
			VMOVUPS(f, Mem{Base: psc, Disp: 1536 + 32*half})
			VMOVUPS(g, Mem{Base: psc, Disp: 1664 + 32*half})
		}
	})
}
