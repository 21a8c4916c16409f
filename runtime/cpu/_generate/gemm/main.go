// Command gemm writes the AVX-512 prefill GEMM of package cpu with avo:
//
//	cd runtime/cpu && go generate
//
// runs `go run . -out ../../gemm_amd64.s -stubs ../../gemm_amd64.go -pkg cpu`
// here. It shares the avo module of _generate; the generated files are
// committed.
//
// The GEMM multiplies a block of 16 or 32 rows of Q4_0 or Q8_0 weights by
// one to six tokens of Q8_0 activations, the lanes of every vector being
// sixteen rows. Per call, gemmPack* first lays the rows out for it (the
// "packed panel", built in a per-worker buffer and read from L2 by every
// pass of tokens; nothing is stored beside the file):
//
//	w  [block][kquad 8][group 2][row 16][4]uint8   element 4*kquad+e of the block
//	sc [block][group 2][row 16]float32             the row's scale of the block
//
// The codes become unsigned bytes (Q4_0: the code 0..15; Q8_0: the code
// XOR 0x80, that is code+128), so that one VPDPBUSD with the token's four
// activation bytes of a kquad broadcast to every lane adds the four products
// of sixteen rows at once, and no horizontal sum is ever needed. The
// offset is taken off in the integer sum: the accumulator starts at
// -8*sum(a) (Q4_0) or -128*sum(a) (Q8_0), the token's code sum of the
// block times the offset, so the int32 at the end of the block is exactly
// the block's dot product of the scalar kernel (|sum| < 2^31).
//
// Then, as the scalar kernels of kernels.go do for each row and token:
//
//	acc = 0; for each block of the K-tile: acc += float32(v) * (dw * da)
//	tile 0: y = acc; later tiles: y += acc
//
// the same float32 operations in the same order, sixteen rows per vector:
// the results are bit-identical to MatVec's.
package main

import (
	"encoding/binary"
	"fmt"
	"github.com/xdna-go/xdna/runtime/cpu/_generate/avoutil"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!noasm,gc")
	constants()
	gemm("gemmI8AVX512")
	pack("gemmPackQ4_0AVX512", false, true)
	pack("gemmPackQ8_0AVX512", true, true)
	pack("gemmCodesQ4AVX512", false, false)
	pack("gemmCodesQ8AVX512", true, false)
	gemmK("gemmQ4KAVX512", false)
	gemmK("gemmQ6KAVX512", true)
	packScalesK("gemmScalesQ4KAVX512", false)
	packScalesK("gemmScalesQ6KAVX512", true)
	packHigh()
	prefetchTiles("gemmPrefetchAVX512")
	prefetchTiles("gemmPrefetchAVX2")
	avx2()
	Generate()
}

const maxT = 6 // tokens per pass

var (
	c0Fx4, c80x4   Mem
	cSpread, c01x4 Mem // 0x00204081: four bits to the low bits of four bytes
	c0Fd           Mem // the dword 0x0000000f
	idxLo, idxHi   Mem // VPERMT2D: kquads 0,1 (2,3) of eight rows from two 4-row vectors
	idxW01, idxW23 Mem // VPERMT2W: the f16 scales of blocks 0,1 (2,3) of sixteen rows from two 8-row vectors
)

// table declares a read-only table (avoutil.Table).
func table(name string, b []byte) Mem { return avoutil.Table(name, b) }

func constants() {
	c0Fx4 = table("gemmC0F", []byte{0x0f, 0x0f, 0x0f, 0x0f, 0, 0, 0, 0})
	cSpread = table("gemmSpread", []byte{0x81, 0x40, 0x20, 0x00, 0, 0, 0, 0})
	c01x4 = table("gemmC01", []byte{0x01, 0x01, 0x01, 0x01, 0, 0, 0, 0})
	c0Fd = table("gemmC0Fd", []byte{0x0f, 0, 0, 0, 0, 0, 0, 0})
	c80x4 = table("gemmC80", []byte{0x80, 0x80, 0x80, 0x80, 0, 0, 0, 0})
	// Two vectors A (rows 0..3) and B (rows 4..7), lane L of each holding
	// row L's kquads 0..3 as dwords. Dword m of the result: kquad
	// base+m/8 of row m%8, that is dword 4(m%8)+kq of A, or 16+4(m%8-4)+kq
	// of B.
	idx := func(base int) []byte { return permIdx(base, 16, 4) }
	for q6 := 0; q6 < 2; q6++ {
		for c := 0; c < 4; c++ {
			b := make([]byte, 16)
			for i := 0; i < 4; i++ {
				for k := 0; k < 4; k++ {
					b[4*i+k] = 0x80
				}
				if q6 == 1 {
					b[4*i+3] = byte(4*c + i)
				} else {
					b[4*i] = byte(4*c + i)
				}
			}
			shufK[q6][c] = table(fmt.Sprintf("gemmShufK%d%d", q6, c), b)
		}
	}
	idxLo = table("gemmIdxLo", idx(0))
	idxHi = table("gemmIdxHi", idx(2))
	// Two vectors A (rows 0..7) and B (rows 8..15), each row's f16 of four
	// blocks in four words. Word m of the result: block base+m/16 of row
	// m%16, that is word 4r+b of A, or 32+4(r-8)+b of B.
	idxW := func(base int) []byte { return permIdx(base, 32, 2) }
	idxW01 = table("gemmIdxW01", idxW(0))
	idxW23 = table("gemmIdxW23", idxW(2))
}

// vpdpbusdB emits VPDPBUSD with a broadcast dword source: each dword of
// acc gets the four products of u's unsigned bytes by the dword at m's
// signed bytes added.
func vpdpbusdB(m Mem, u, acc Register) { vnni("VPDPBUSD.BCST", m, u, acc) }

// vnni emits the AVX512_VNNI instruction op m, u, acc (avo v0.5.0 has
// none; the Go assembler encodes them).
func vnni(op string, m Op, u, acc Register) {
	Instruction(&ir.Instruction{
		Opcode:   op,
		Operands: []Op{m, u, acc},
		Inputs:   []Op{m, u, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}

// gemm writes gemmI8AVX512: rows (16 or 32) rows of a packed panel times
// toks (1..6) tokens.
func gemm(name string) {
	TEXT(name, NOSPLIT, "func(w *byte, sc *float32, a *int8, astride int, gd *int32, o *float32, ostride, nb, np, rows, toks, add int)")
	Doc(name+" multiplies a packed panel (w, sc: gemmPack*) of rows rows (16 or 32)",
		"by toks tokens (1 to 6) of Q8_0 activations: token t's codes at",
		"a+t*astride, its scale and offset sum of block i at gd[12i+2t] and",
		"gd[12i+2t+1] (float32 bits, int32); nb blocks, np per K-tile. Token t's",
		"outputs go to o+t*ostride bytes, with exactly the arithmetic of the",
		"scalar kernels (see _generate/gemm), the first tile's sums stored",
		"unless add is 1:",
		"",
		"\tfor tile: acc = 0; for block of tile: acc += float32(v) * (sc * d); o = acc (first tile, add 0) or o += acc",
	)
	Pragma("noescape")
	dispatch(name, []int{1, 2}, maxT, variant)
}

func variant(lbl string, R, T int) {
	pw := Load(Param("w"), GP64())
	ps := Load(Param("sc"), GP64())
	a := newTokens("a", "astride", true)
	pg := Load(Param("gd"), GP64())
	nb := Load(Param("nb"), GP64())
	first := firstTile()
	var I, F [2][maxT]VecVirtual
	for r := 0; r < R; r++ {
		for t := 0; t < T; t++ {
			I[r][t], F[r][t] = ZMM(), ZMM()
		}
	}
	Label(lbl + "_tile")
	for r := 0; r < R; r++ {
		for t := 0; t < T; t++ {
			VPXORD(F[r][t], F[r][t], F[r][t])
		}
	}
	cnt := Load(Param("np"), GP64())
	Label(lbl + "_blk")
	for r := 0; r < R; r++ {
		for t := 0; t < T; t++ {
			VPBROADCASTD(Mem{Base: pg, Disp: 8*t + 4}, I[r][t])
		}
	}
	for q := 0; q < 8; q++ {
		var W [2]VecVirtual
		for r := 0; r < R; r++ {
			W[r] = ZMM()
			VMOVDQU32(Mem{Base: pw, Disp: 128*q + 64*r}, W[r])
		}
		for t := 0; t < T; t++ {
			if R == 1 {
				vpdpbusdB(a.at(t, 4*q), W[0], I[0][t])
				continue
			}
			// The token's four codes broadcast once for both groups,
			// one load in place of two: on Zen 5 the kernel alone went
			// from 82 to 99 multiply-adds a cycle, of the 102 that its
			// VPDPBUSDs and VMULPSs allow (they share two pipes).
			x := ZMM()
			VPBROADCASTD(a.at(t, 4*q), x)
			for r := 0; r < R; r++ {
				vnni("VPDPBUSD", x, W[r], I[r][t])
			}
		}
	}
	for r := 0; r < R; r++ {
		dw := ZMM()
		VMOVUPS(Mem{Base: ps, Disp: 64 * r}, dw)
		for t := 0; t < T; t++ {
			s := ZMM()
			VMULPS_BCST(Mem{Base: pg, Disp: 8 * t}, dw, s) // dw * da
			VCVTDQ2PS(I[r][t], I[r][t])
			VMULPS(s, I[r][t], I[r][t])       // float32(v) * (dw * da)
			VADDPS(I[r][t], F[r][t], F[r][t]) // acc += ...
		}
	}
	ADDQ(U32(1024), pw)
	ADDQ(U32(128), ps)
	a.advance(32)
	ADDQ(U8(48), pg)
	DECQ(cnt)
	JNZ(LabelRef(lbl + "_blk"))

	// The tile's sums: stored at tile 0, added after.
	storeTile(lbl, first, R, T, 64, func(r, t int) VecVirtual { return F[r][t] }, newTokens("o", "ostride", true))
	SUBQ(Load(Param("np"), GP64()), nb)
	JNZ(LabelRef(lbl + "_tile"))
	VZEROUPPER()
}

// pack writes gemmPack*: one group of sixteen rows of a panel.
func pack(name string, q8, scales bool) {
	if scales {
		TEXT(name, NOSPLIT, "func(codes, scales *byte, cstride, sstride int, w *byte, sc *float32, np, tiles, tstride int)")
		Doc(name+" lays out sixteen rows of tiles K-tiles (np blocks each) for",
			"gemmI8AVX512: row r's codes and f16 scales of tile t at codes and scales",
			"+ r*cstride (sstride) + t*tstride; block i of the panel at w+1024i and",
			"sc+128i bytes (the caller adds 64 bytes to both for the second group",
			"of a 32-row panel). See _generate/gemm for the layout.")
	} else {
		TEXT(name, NOSPLIT, "func(codes *byte, cstride int, w *byte, np, tiles, tstride int)")
		Doc(name+" lays out the codes of sixteen rows of tiles K-tiles (np blocks of 32",
			"each) as the Q4_0 (Q8_0) panels of gemmI8AVX512 are: the K-quants' panels",
			"(gemmQ4KAVX512, gemmQ6KAVX512), whose scales gemmScales* lay out.")
	}
	Pragma("noescape")
	var mask, il, ih VecVirtual
	var cs3, ss3 Register
	pre := func(p *panelRegs) {
		mask = ZMM()
		if q8 {
			VPBROADCASTD(c80x4, mask)
		} else {
			VPBROADCASTD(c0Fx4, mask)
		}
		il, ih = ZMM(), ZMM()
		VMOVDQU32(idxLo, il)
		VMOVDQU32(idxHi, ih)
		cs3 = GP64()
		LEAQ(Mem{Base: p.cs, Index: p.cs, Scale: 2}, cs3)
		if scales {
			ss3 = GP64()
			LEAQ(Mem{Base: p.ss, Index: p.ss, Scale: 2}, ss3)
		}
	}
	// The weights come from memory once per call, two tiles ahead of the
	// layout: the sixteen rows' codes and scales of tile t+2 (a prefetch
	// past the blob is a hint that never faults).
	tile := func(p *panelRegs) {
		planes := []struct{ base, stride Register }{{p.pc, p.cs}}
		if scales {
			planes = append(planes, struct{ base, stride Register }{p.pss, p.ss})
		}
		for i, reg := range planes {
			pf, end := GP64(), GP64()
			ts := Load(Param("tstride"), GP64())
			LEAQ(Mem{Base: reg.base, Index: ts, Scale: 2}, pf)
			MOVQ(reg.stride, end)
			SHLQ(U8(4), end)
			ADDQ(pf, end)
			Label(fmt.Sprintf("%s_pf%d", name, i))
			PREFETCHT0(Mem{Base: pf})
			ADDQ(U8(64), pf)
			CMPQ(pf, end)
			JB(LabelRef(fmt.Sprintf("%s_pf%d", name, i)))
		}
		if scales {
			scalesByFour(name, p, ss3)
		}
	}
	panelLoop(name, q8, scales, pre, tile, func(p *panelRegs, c, s Register) {
		cs, ss, pw, psc := p.cs, p.ss, p.pw, p.psc
		// U[h][set]: lane L = row 4*set+L, dword j = kquad 4h+j.
		var U [2][4]VecVirtual
		rb := GP64()
		MOVQ(c, rb)
		for set := 0; set < 4; set++ {
			rowM := func(L, disp int) Mem { return rowMem(rb, cs, cs3, L, disp) }
			if q8 {
				for h := 0; h < 2; h++ {
					x := ZMM()
					VMOVDQU32(rowM(0, 16*h), x.AsX())
					for L := 1; L < 4; L++ {
						VINSERTI32X4(U8(L), rowM(L, 16*h), x, x)
					}
					VPXORD(mask, x, x)
					U[h][set] = x
				}
			} else {
				x := ZMM()
				VMOVDQU32(rowM(0, 0), x.AsX())
				for L := 1; L < 4; L++ {
					VINSERTI32X4(U8(L), rowM(L, 0), x, x)
				}
				hi := ZMM()
				VPSRLW(U8(4), x, hi)
				VPANDD(mask, hi, hi)
				VPANDD(mask, x, x)
				U[0][set], U[1][set] = ZMM(), ZMM()
				VPUNPCKLBW(hi, x, U[0][set]) // lo0 hi0 lo1 hi1 ...: elements 0..15
				VPUNPCKHBW(hi, x, U[1][set]) // elements 16..31
			}
			if set < 3 {
				LEAQ(Mem{Base: rb, Index: cs, Scale: 4}, rb)
			}
		}
		transpose(U, il, ih, func(k int, v VecVirtual) { VMOVDQU32(v, Mem{Base: pw, Disp: 128 * k}) })
		if scales {
			// The sixteen f16 scales of the block, unless scalesByFour
			// laid out the tile's.
			TESTQ(U32(3), Load(Param("np"), GP64()))
			JZ(LabelRef(name + "_sc4"))
			VMOVUPS(gatherF16(s, ss, ss3, 0), Mem{Base: psc})
			Label(name + "_sc4")
		}
	})
}

// scalesByFour lays out the scales of a tile (row 0's f16 at p.pss, the
// panel's at p.psc) four blocks at a time when np is a multiple of four:
// each row's four f16 in one quadword, eight rows a vector, two VPERMT2W
// to blocks of sixteen rows, in place of sixteen word inserts a block.
func scalesByFour(name string, p *panelRegs, ss3 Register) {
	n := Load(Param("np"), GP64())
	TESTQ(U32(3), n)
	JNZ(LabelRef(name + "_s4done"))
	SHRQ(U8(2), n)
	sb, d := GP64(), GP64()
	MOVQ(p.pss, sb)
	MOVQ(p.psc, d)
	Label(name + "_s4")
	var half [2]VecVirtual // rows 0..7, 8..15
	rb := GP64()
	MOVQ(sb, rb)
	for h := 0; h < 2; h++ {
		var x [4]VecVirtual
		for q := 0; q < 4; q++ {
			x[q] = XMM()
			VMOVQ(rowMem(rb, p.ss, ss3, 2*(q%2), 0), x[q])
			VPINSRQ(U8(1), rowMem(rb, p.ss, ss3, 2*(q%2)+1, 0), x[q], x[q])
			if q%2 == 1 && !(h == 1 && q == 3) {
				LEAQ(Mem{Base: rb, Index: p.ss, Scale: 4}, rb)
			}
		}
		VINSERTI32X4(U8(1), x[1], x[0].AsY(), x[0].AsY())
		VINSERTI32X4(U8(1), x[3], x[2].AsY(), x[2].AsY())
		half[h] = ZMM()
		VINSERTI64X4(U8(1), x[2].AsY(), x[0].AsZ(), half[h])
	}
	for i, idx := range []Mem{idxW01, idxW23} {
		o, ix := ZMM(), ZMM()
		VMOVDQU16(idx, ix)
		VMOVDQA64(half[0], o)
		VPERMT2W(half[1], ix, o)
		lo, hi := ZMM(), ZMM()
		VCVTPH2PS(o.AsY(), lo)
		y := YMM()
		VEXTRACTI64X4(U8(1), o, y)
		VCVTPH2PS(y, hi)
		VMOVUPS(lo, Mem{Base: d, Disp: 256 * i})
		VMOVUPS(hi, Mem{Base: d, Disp: 256*i + 128})
	}
	ADDQ(U8(8), sb)
	ADDQ(U32(512), d)
	DECQ(n)
	JNZ(LabelRef(name + "_s4"))
	Label(name + "_s4done")
}

// panelRegs are the arguments of a panel layout (gemmPack*, gemmCodes*):
// codes and their row stride, the panel, and with scales the f16 scales,
// their row stride and the panel's scales.
type panelRegs struct{ pc, cs, pw, pss, ss, psc Register }

// panelLoop writes the loops of a panel layout (pack, pack2): the
// arguments loaded, pre once, then per tile tile (nil: nothing) and per
// block body with the block's row 0 of codes c and of scales s; the block
// of the panel moves on 1024 bytes, of its scales 128.
func panelLoop(name string, q8, scales bool, pre, tile func(p *panelRegs), body func(p *panelRegs, c, s Register)) {
	var p panelRegs
	p.pc = Load(Param("codes"), GP64())
	p.cs = Load(Param("cstride"), GP64())
	p.pw = Load(Param("w"), GP64())
	if scales {
		p.pss = Load(Param("scales"), GP64())
		p.ss = Load(Param("sstride"), GP64())
		p.psc = Load(Param("sc"), GP64())
	}
	tiles := Load(Param("tiles"), GP64())
	if pre != nil {
		pre(&p)
	}
	Label(name + "_tile")
	if tile != nil {
		tile(&p)
	}
	c := GP64() // this block's row 0
	MOVQ(p.pc, c)
	var s Register
	if scales {
		s = GP64()
		MOVQ(p.pss, s)
	}
	cnt := Load(Param("np"), GP64())
	Label(name + "_blk")
	body(&p, c, s)
	ADDQ(U32(1024), p.pw)
	if q8 {
		ADDQ(U8(32), c)
	} else {
		ADDQ(U8(16), c)
	}
	if scales {
		ADDQ(U32(128), p.psc)
		ADDQ(U8(2), s)
	}
	DECQ(cnt)
	JNZ(LabelRef(name + "_blk"))
	ts := Load(Param("tstride"), GP64())
	ADDQ(ts, p.pc)
	if scales {
		ADDQ(ts, p.pss)
	}
	DECQ(tiles)
	JNZ(LabelRef(name + "_tile"))
	VZEROUPPER()
	RET()
}

// prefetchTiles writes gemmPrefetchAVX512: PREFETCHT1 of n bytes at p in
// each of tiles tiles, tstride bytes apart (the next panel's weights, into
// L2 while the tokens run over this one).
func prefetchTiles(name string) {
	TEXT(name, NOSPLIT, "func(p *byte, n, tiles, tstride int)")
	Doc(name+" prefetches (PREFETCHT1) the n bytes at p + t*tstride for",
		"t < tiles, tiles at least 1; a hint that reads and writes nothing.")
	Pragma("noescape")
	p := Load(Param("p"), GP64())
	n := Load(Param("n"), GP64())
	tiles := Load(Param("tiles"), GP64())
	ts := Load(Param("tstride"), GP64())
	Label(name + "_tile")
	q, end := GP64(), GP64()
	MOVQ(p, q)
	LEAQ(Mem{Base: p, Index: n, Scale: 1}, end)
	Label(name + "_line")
	PREFETCHT1(Mem{Base: q})
	ADDQ(U8(64), q)
	CMPQ(q, end)
	JB(LabelRef(name + "_line"))
	ADDQ(ts, p)
	DECQ(tiles)
	JNZ(LabelRef(name + "_tile"))
	RET()
}

// packHigh writes gemmPackHighAVX512, the 5th bits of Q5_0 added to a
// panel laid out by gemmPackQ4_0AVX512 from the codes: bit e of a row's
// little-endian u32 of the block becomes bit 4 of its element e. The
// four bits of a kquad are spread to the low bits of four bytes by a
// multiplication by 0x00204081 (no carries: the shifted copies do not
// overlap in the bits kept).
func packHigh() {
	TEXT("gemmPackHighAVX512", NOSPLIT, "func(high *byte, hstride int, w *byte, np, tiles, tstride int)")
	Doc("gemmPackHighAVX512 adds the 5th bits of sixteen Q5_0 rows to a panel: row r's",
		"u32 of block i of tile t at high + r*hstride + 4i + t*tstride; block",
		"t*np+i of the panel at w + 1024(t*np+i) (the caller adds 64 bytes for the",
		"second group).")
	Pragma("noescape")
	ph := Load(Param("high"), GP64())
	hs := Load(Param("hstride"), GP64())
	pw := Load(Param("w"), GP64())
	tiles := Load(Param("tiles"), GP64())
	hs3 := GP64()
	LEAQ(Mem{Base: hs, Index: hs, Scale: 2}, hs3)
	spread, m0F, m01 := ZMM(), ZMM(), ZMM()
	VPBROADCASTD(cSpread, spread)
	VPBROADCASTD(c0Fd, m0F)
	VPBROADCASTD(c01x4, m01)
	Label("ph_tile")
	h0 := GP64()
	MOVQ(ph, h0)
	cnt := Load(Param("np"), GP64())
	Label("ph_blk")
	// The sixteen rows' u32s, row r in dword r.
	var x [4]VecVirtual
	rb := GP64()
	MOVQ(h0, rb)
	for q := 0; q < 4; q++ {
		x[q] = XMM()
		for L := 0; L < 4; L++ {
			var m Mem
			switch L {
			case 0:
				m = Mem{Base: rb}
			case 3:
				m = Mem{Base: rb, Index: hs3, Scale: 1}
			default:
				m = Mem{Base: rb, Index: hs, Scale: uint8(L)}
			}
			VPINSRD(U8(L), m, x[q], x[q])
		}
		if q < 3 {
			LEAQ(Mem{Base: rb, Index: hs, Scale: 4}, rb)
		}
	}
	h := ZMM()
	VINSERTI32X4(U8(1), x[1], x[0].AsY(), x[0].AsY())
	VINSERTI32X4(U8(1), x[3], x[2].AsY(), x[2].AsY())
	VINSERTI64X4(U8(1), x[2].AsY(), x[0].AsZ(), h)
	addHigh(h, m0F, spread, m01, pw, 0, true)
	ADDQ(U32(1024), pw)
	ADDQ(U8(4), h0)
	DECQ(cnt)
	JNZ(LabelRef("ph_blk"))
	ADDQ(Load(Param("tstride"), GP64()), ph)
	DECQ(tiles)
	JNZ(LabelRef("ph_tile"))
	VZEROUPPER()
	RET()
}

// transpose turns U[h][set] (lane L = row 4*set+L, dword j = item 4h+j)
// into eight vectors of sixteen rows, item k's in dword r, and passes each
// to out.
func transpose(U [2][4]VecVirtual, il, ih VecVirtual, out func(k int, v VecVirtual)) {
	for h := 0; h < 2; h++ {
		var P, Q [2]VecVirtual
		for p := 0; p < 2; p++ {
			P[p], Q[p] = ZMM(), ZMM()
			VMOVDQA64(U[h][2*p], P[p])
			VPERMT2D(U[h][2*p+1], il, P[p])
			VMOVDQA64(U[h][2*p], Q[p])
			VPERMT2D(U[h][2*p+1], ih, Q[p])
		}
		for k, v := range [][2]VecVirtual{P, Q} {
			for j, imm := range []uint8{0x44, 0xee} {
				o := ZMM()
				VSHUFI64X2(U8(imm), v[1], v[0], o)
				out(4*h+2*k+j, o)
			}
		}
	}
}

// rowMem addresses row L (0..3) of a set at rb, rows stride apart (s3 =
// 3*stride), plus disp.
func rowMem(rb, stride, s3 Register, L, disp int) Mem {
	switch L {
	case 0:
		return Mem{Base: rb, Disp: disp}
	case 3:
		return Mem{Base: rb, Index: s3, Scale: 1, Disp: disp}
	}
	return Mem{Base: rb, Index: stride, Scale: uint8(L), Disp: disp}
}

// gatherF16 returns a zmm of the f16 at base+disp of sixteen rows (stride
// apart, s3 = 3*stride) as float32, row r in lane r.
func gatherF16(base, stride, s3 Register, disp int) VecVirtual {
	lo, hi := XMM(), XMM()
	sb := GP64()
	MOVQ(base, sb)
	for r := 0; r < 16; r++ {
		x := lo
		if r >= 8 {
			x = hi
		}
		VPINSRW(U8(r%8), rowMem(sb, stride, s3, r%4, disp), x, x)
		if r%4 == 3 && r < 15 {
			LEAQ(Mem{Base: sb, Index: stride, Scale: 4}, sb)
		}
	}
	VINSERTI32X4(U8(1), hi, lo.AsY(), lo.AsY())
	f := ZMM()
	VCVTPH2PS(lo.AsY(), f)
	return f
}

// dispatch writes the entry of a kernel with variants: for each rows (16
// times 1 or 2; none for the AVX2 kernels, which take sixteen) and toks
// (1 to most), a comparison of the arguments and, where they match, the
// variant body writes, then RET.
func dispatch(name string, rows []int, most int, body func(lbl string, r, t int)) {
	if rows == nil {
		rows = []int{0}
	}
	for _, r := range rows {
		for t := 1; t <= most; t++ {
			lbl := fmt.Sprintf("%s_t%d", name, t)
			if r > 0 {
				lbl = fmt.Sprintf("%s_r%dt%d", name, r, t)
				CMPQ(Load(Param("rows"), GP64()), U8(16*r))
				JNE(LabelRef(lbl + "_no"))
			}
			CMPQ(Load(Param("toks"), GP64()), U8(t))
			JNE(LabelRef(lbl + "_no"))
			body(lbl, r, t)
			RET()
			Label(lbl + "_no")
		}
	}
	RET()
}

// tokens addresses token t's data, t*stride bytes past base: base,
// base+stride, base+2*stride, then, with base3 = base+3*stride, three more.
type tokens struct{ base, base3, stride Register }

// newTokens loads the tokens of params base and stride (base3 only for
// more than three tokens).
func newTokens(base, stride string, more3 bool) tokens {
	k := tokens{base: Load(Param(base), GP64()), stride: Load(Param(stride), GP64())}
	if more3 {
		k.base3 = GP64()
		LEAQ(Mem{Base: k.base, Index: k.stride, Scale: 2}, k.base3)
		ADDQ(k.stride, k.base3)
	}
	return k
}

func (k tokens) at(t, disp int) Mem {
	switch t {
	case 0:
		return Mem{Base: k.base, Disp: disp}
	case 1, 2:
		return Mem{Base: k.base, Index: k.stride, Scale: uint8(t), Disp: disp}
	case 3:
		return Mem{Base: k.base3, Disp: disp}
	}
	return Mem{Base: k.base3, Index: k.stride, Scale: uint8(t - 3), Disp: disp}
}

// advance moves the tokens on by n bytes.
func (k tokens) advance(n int) {
	ADDQ(U32(n), k.base)
	if k.base3 != nil {
		ADDQ(U32(n), k.base3)
	}
}

// storeTile writes a tile's sums (acc gives the register of row group r,
// token t) to the outputs o: stored when first is not 0 (which it then
// clears), else added to them (y += acc); width is the bytes of a group.
func storeTile(lbl string, first Register, R, T, width int, acc func(r, t int) VecVirtual, o tokens) {
	CMPQ(first, U8(0))
	JE(LabelRef(lbl + "_add"))
	for r := 0; r < R; r++ {
		for t := 0; t < T; t++ {
			VMOVUPS(acc(r, t), o.at(t, width*r))
		}
	}
	XORQ(first, first)
	JMP(LabelRef(lbl + "_next"))
	Label(lbl + "_add")
	for r := 0; r < R; r++ {
		for t := 0; t < T; t++ {
			v := acc(r, t)
			VADDPS(o.at(t, width*r), v, v) // y += acc
			VMOVUPS(v, o.at(t, width*r))
		}
	}
	Label(lbl + "_next")
}

// firstTile returns a register that is 1 while the kernel is on its first
// tile unless the add argument is 1 (storeTile clears it).
func firstTile() Register {
	first := GP64()
	MOVQ(U32(1), first)
	SUBQ(Load(Param("add"), GP64()), first)
	return first
}

// addHigh ORs into the eight kquads of a block of the panel at pw+disp
// (128 bytes apart) the 5th bits in h (row r's u32 in dword r): bits
// 4k..4k+3 are spread to bit 4 of the four bytes of kquad k by the
// multiplication by 0x00204081 of packHigh. zmm: sixteen rows with EVEX
// instructions, else eight with VEX ones.
func addHigh(h, m0F, spread, m01 VecVirtual, pw Register, disp int, zmm bool) {
	and := func(a, b, c Op) { VPAND(a, b, c) }
	or := func(a, b, c Op) { VPOR(a, b, c) }
	mov := func(a, b Op) { VMOVDQU(a, b) }
	if zmm {
		and = func(a, b, c Op) { VPANDD(a, b, c) }
		or = func(a, b, c Op) { VPORD(a, b, c) }
		mov = func(a, b Op) { VMOVDQU32(a, b) }
	}
	for k := 0; k < 8; k++ {
		t := YMM()
		if zmm {
			t = ZMM()
		}
		m := Mem{Base: pw, Disp: 128*k + disp}
		VPSRLD(U8(4*k), h, t)
		and(m0F, t, t)
		VPMULLD(spread, t, t)
		and(m01, t, t)
		VPSLLD(U8(4), t, t)
		or(m, t, t)
		mov(t, m)
	}
}

// permIdx is a two-source permute's index (VPERMT2D for size 4, VPERMT2W
// for 2) of n entries over two vectors that hold n/2 rows of four units,
// the first n/4 rows in A and the rest in B: entry m picks unit base +
// m/(n/2) of row r = m%(n/2), entry 4r+unit of A or n+4(r-n/4)+unit of B.
func permIdx(base, n, size int) []byte {
	b := make([]byte, n*size)
	rows := n / 2
	for m := 0; m < n; m++ {
		u, r := base+m/rows, m%rows
		v := 4*r + u
		if r >= rows/2 {
			v = n + 4*(r-rows/2) + u
		}
		if size == 4 {
			binary.LittleEndian.PutUint32(b[4*m:], uint32(v))
		} else {
			binary.LittleEndian.PutUint16(b[2*m:], uint16(v))
		}
	}
	return b
}
