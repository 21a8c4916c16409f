package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// dotsF16x512 writes dotsF16AVX512: dotsF16AVX2 with 16-lane registers and
// four rows a step, prefetching the four rows rowsAhead rows on. Partial
// sum j of dotF16Go (the elements i = j mod 32)
// is lane j of the rows' two accumulators [p0..p15] [p16..p31], so every
// product and sum is dotF16Go's, in its order; the reduction tree of four
// rows runs in the lanes of one register (reduce4x512).
func dotsF16x512() {
	a, b, n, stride, out, count, n32 := dotsBegin("dotsF16AVX512")
	k := K()
	m := GP32()
	MOVL(U32(0x1111), m)
	KMOVW(m, k)
	ahead := aheadOf(stride)

	Label("dotsF16x_4")
	CMPQ(count, U8(4))
	JL(LabelRef("dotsF16x_1"))
	rows := []Register{b, GP64(), GP64(), GP64()}
	LEAQ(Mem{Base: b, Index: stride, Scale: 1}, rows[1])
	LEAQ(Mem{Base: b, Index: stride, Scale: 2}, rows[2])
	LEAQ(Mem{Base: rows[1], Index: stride, Scale: 2}, rows[3])
	for r := range rows {
		prefetchRow(rows[r], ahead, n, fmt.Sprintf("dotsF16x_4_pf%d", r))
	}
	s := dotsRows512("dotsF16x_4", a, rows, n, n32)
	reduce4x512(s, k, out)
	ADDQ(U8(16), out)
	LEAQ(Mem{Base: b, Index: stride, Scale: 4}, b)
	SUBQ(U8(4), count)
	JMP(LabelRef("dotsF16x_4"))

	Label("dotsF16x_1")
	CMPQ(count, U8(0))
	JE(LabelRef("dotsF16x_done"))
	prefetchRow(b, ahead, n, "dotsF16x_1_pf")
	sv := dotsRows512("dotsF16x_1", a, []Register{b}, n, n32)[0]
	r, h := sv.AsX(), XMM()
	VEXTRACTF128(U8(1), sv, h)
	VADDPS(h, r, r) // t_k = s_k + s_k+4
	VMOVHLPS(r, r, h)
	VADDPS(h, r, r) // (t0+t2, t1+t3, ...)
	VMOVSHDUP(r, h)
	VADDSS(h, r, r) // (t0+t2) + (t1+t3)
	VMOVSS(r, Mem{Base: out})
	ADDQ(U8(4), out)
	ADDQ(stride, b)
	DECQ(count)
	JMP(LabelRef("dotsF16x_1"))

	Label("dotsF16x_done")
	VZEROUPPER()
	RET()
}

// dotsRows512 accumulates the products of a[:n] with each of rows (f16)
// in two 16-lane partial sums per row, the elements i of [32c, 32c+32) in
// [p0..p15 | p16..p31], the last 8, 16 or 24 in p0..p7, p0..p15 and then
// p16..p23, as dotF16Go; it returns each row's s_j = (p_j + p_j+8) +
// (p_j+16 + p_j+24), j < 8, in a YMM register. A partial sum is never -0
// (it starts at +0, and x + y is -0 only for two -0), so the zero upper
// lanes of a last 8 products leave it unchanged.
func dotsRows512(name string, a Register, rows []Register, n, n32 Register) []VecVirtual {
	pa, pb := zeroPairs512(len(rows))
	i := GP64()
	add16 := func(r int, acc VecVirtual, disp int) {
		t := ZMM()
		VCVTPH2PS(Mem{Base: rows[r], Index: i, Scale: 2, Disp: 2 * disp}, t)
		VMULPS(Mem{Base: a, Index: i, Scale: 4, Disp: 4 * disp}, t, t)
		VADDPS(t, acc, acc)
	}
	add8 := func(r int, acc VecVirtual, disp int) {
		t := YMM()
		VCVTPH2PS(Mem{Base: rows[r], Index: i, Scale: 2, Disp: 2 * disp}, t)
		VMULPS(Mem{Base: a, Index: i, Scale: 4, Disp: 4 * disp}, t, t)
		VADDPS(t.AsZ(), acc, acc)
	}
	loop(name+"_32", i, n32, 32, func() {
		for r := range rows {
			add16(r, pa[r], 0)
			add16(r, pb[r], 16)
		}
	})
	rem := tail512(name, n, i)
	for r := range rows {
		add16(r, pa[r], 0)
	}
	CMPQ(rem, U8(16))
	JE(LabelRef(name + "_sum"))
	for r := range rows {
		add8(r, pb[r], 16)
	}
	JMP(LabelRef(name + "_sum"))
	Label(name + "_8")
	for r := range rows {
		add8(r, pa[r], 0)
	}
	Label(name + "_sum")
	s := make([]VecVirtual, len(rows))
	for r := range rows {
		s[r] = halves512(pa[r], pb[r])
	}
	return s
}

// tail512 starts the last n-i (0, 8, 16 or 24) elements of a row after
// the loop over 32 of dotsRows512 or dotsHeads512: on to name_sum if none
// are left, to name_8 if 8; it returns the register with their count.
func tail512(name string, n, i Register) Register {
	rem := GP64()
	MOVQ(n, rem)
	SUBQ(i, rem)
	JZ(LabelRef(name + "_sum"))
	CMPQ(rem, U8(16))
	JL(LabelRef(name + "_8"))
	return rem
}

// zeroPairs512 returns k pairs of zeroed 16-lane partial-sum registers
// (dotsRows512's [p0..p15] and [p16..p31] of a row, or of a head).
func zeroPairs512(k int) (pa, pb []VecVirtual) {
	pa, pb = make([]VecVirtual, k), make([]VecVirtual, k)
	for r := range pa {
		pa[r], pb[r] = ZMM(), ZMM()
		VPXORD(pa[r], pa[r], pa[r])
		VPXORD(pb[r], pb[r], pb[r])
	}
	return pa, pb
}

// halves512 returns s_j = (p_j + p_j+8) + (p_j+16 + p_j+24), j < 8, of the
// partial sums [p0..p15] in pa and [p16..p31] in pb.
func halves512(pa, pb VecVirtual) VecVirtual {
	h, g := YMM(), YMM()
	VEXTRACTF64X4(U8(1), pa, h)
	VADDPS(h, pa.AsY(), h) // p_j + p_j+8
	VEXTRACTF64X4(U8(1), pb, g)
	VADDPS(g, pb.AsY(), g) // p_j+16 + p_j+24
	s := YMM()
	VADDPS(g, h, s)
	return s
}

// reduce4x512 finishes the dot products of four rows from their s (8
// lanes each) with dotF16Go's tree, t_k = s_k + s_k+4 then (t0 + t2) +
// (t1 + t3), one 128-bit lane per row, and stores the four to out; k
// holds the mask 0x1111 (lane 0 of each 128-bit lane).
func reduce4x512(s []VecVirtual, k Register, out Register) {
	VCOMPRESSPS(reduce4Lanes512(s), k, Mem{Base: out})
}

// reduce4Lanes512 is reduce4x512 but the store: it returns the register
// whose lanes 0, 4, 8 and 12 hold the four dot products.
func reduce4Lanes512(s []VecVirtual) VecVirtual {
	p01, p23 := ZMM(), ZMM()
	VINSERTF64X4(U8(1), s[1], s[0].AsZ(), p01) // [L0 H0 L1 H1]
	VINSERTF64X4(U8(1), s[3], s[2].AsZ(), p23) // [L2 H2 L3 H3]
	u, v := ZMM(), ZMM()
	VSHUFF32X4(U8(0x88), p23, p01, u) // [L0 L1 L2 L3]
	VSHUFF32X4(U8(0xdd), p23, p01, v) // [H0 H1 H2 H3]
	VADDPS(v, u, u)                   // per row [t0 t1 t2 t3]
	w := ZMM()
	VPERMILPS(U8(0x4e), u, w) // [t2 t3 t0 t1]
	VADDPS(w, u, u)           // [t0+t2 t1+t3 ...]
	VPERMILPS(U8(0xb1), u, w) // [t1+t3 t0+t2 ...]
	VADDPS(w, u, u)           // lane 0: (t0+t2) + (t1+t3)
	return u
}

// axpysF16x512 writes axpysF16AVX512: axpysF16AVX2 with 16-lane registers,
// chunks of 128 elements of y in eight registers over every row, then of
// 16, then of 8; each element gets the same product and sum per row, in
// row order.
func axpysF16x512() {
	axpys("axpysF16AVX512", "axpysF16x", []axpysChunk{{8, 16}, {4, 16}, {2, 16}, {1, 16}, {1, 8}},
		"row t at x + t*stride bytes, n a multiple of 8 and count at least 1.")
}

// dotsF16HeadsX512 writes dotsF16H<h>AVX512 (h = 2, 3 or 4): dotsF16AVX512
// for h query vectors against the same rows, one row a step, its f16
// converted once for all h (grouped-query attention: the query heads that
// share a KV head). Head j's products and sums are dotsRows512's for that
// head alone, in its order, and its reduction is reduce4x512's (the four
// lanes of a step are the heads, a head repeated where h < 4), so
// out[j*outStride+t] is dotF16Go(a[j*n:(j+1)*n], row t) bit for bit.
func dotsF16HeadsX512(h int) {
	lbl := fmt.Sprintf("dotsF16H%d", h)
	as, b, n, stride, out, os, count, n32, ahead := dotsHeadsBegin(fmt.Sprintf("dotsF16H%dAVX512", h), h)

	Label(lbl + "_row")
	prefetchRow(b, ahead, n, lbl+"_pf")
	s := dotsHeads512(lbl, as, b, n, n32)
	for len(s) < 4 {
		s = append(s, s[0])
	}
	u := reduce4Lanes512(s)
	VMOVSS(u.AsX(), Mem{Base: out})
	for j := 1; j < h; j++ {
		x := XMM()
		VEXTRACTF32X4(U8(j), u, x)
		switch j {
		case 1, 2:
			VMOVSS(x, Mem{Base: out, Index: os, Scale: uint8(j)})
		case 3:
			o3 := GP64()
			LEAQ(Mem{Base: out, Index: os, Scale: 2}, o3)
			VMOVSS(x, Mem{Base: o3, Index: os, Scale: 1})
		}
	}
	rowsEnd(lbl, out, b, stride, count)
}

// dotsHeads512 is dotsRows512 for one row and the query vectors at as:
// the row's f16 are converted once a step and multiplied by each head's.
func dotsHeads512(name string, as []Register, row, n, n32 Register) []VecVirtual {
	pa, pb := zeroPairs512(len(as))
	i := GP64()
	cvt16 := func(disp int) VecVirtual {
		t := ZMM()
		VCVTPH2PS(Mem{Base: row, Index: i, Scale: 2, Disp: 2 * disp}, t)
		return t
	}
	cvt8 := func(disp int) VecVirtual {
		t := YMM()
		VCVTPH2PS(Mem{Base: row, Index: i, Scale: 2, Disp: 2 * disp}, t)
		return t
	}
	add16 := func(t VecVirtual, j int, acc VecVirtual, disp int) {
		p := ZMM()
		VMULPS(Mem{Base: as[j], Index: i, Scale: 4, Disp: 4 * disp}, t, p)
		VADDPS(p, acc, acc)
	}
	add8 := func(t VecVirtual, j int, acc VecVirtual, disp int) {
		p := YMM()
		VMULPS(Mem{Base: as[j], Index: i, Scale: 4, Disp: 4 * disp}, t, p)
		VADDPS(p.AsZ(), acc, acc)
	}
	loop(name+"_32", i, n32, 32, func() {
		t0, t1 := cvt16(0), cvt16(16)
		for j := range as {
			add16(t0, j, pa[j], 0)
			add16(t1, j, pb[j], 16)
		}
	})
	rem := tail512(name, n, i)
	t0 := cvt16(0)
	for j := range as {
		add16(t0, j, pa[j], 0)
	}
	CMPQ(rem, U8(16))
	JE(LabelRef(name + "_sum"))
	t1 := cvt8(16)
	for j := range as {
		add8(t1, j, pb[j], 16)
	}
	JMP(LabelRef(name + "_sum"))
	Label(name + "_8")
	t2 := cvt8(0)
	for j := range as {
		add8(t2, j, pa[j], 0)
	}
	Label(name + "_sum")
	s := make([]VecVirtual, len(as))
	for j := range as {
		s[j] = halves512(pa[j], pb[j])
	}
	return s
}

// axpysF16HeadsX512 writes axpysF16H<h>AVX512 (h = 2, 3 or 4): axpysF16AVX512
// for h weight vectors and h outputs over the same rows, each row's f16
// converted once for all h (the attention's weighted sums of the values
// for the query heads that share a KV head), by chunks of y of four
// 16-lane registers, then two, one, and 8 lanes. Each element of each
// output gets axpysF16AVX512's product and sum per row, in row order.
func axpysF16HeadsX512(h int) {
	axpysHeads(fmt.Sprintf("axpysF16H%dAVX512", h), fmt.Sprintf("axpysF16H%d", h), h, []axpysChunk{{4, 16}, {2, 16}, {1, 16}, {1, 8}})
}
