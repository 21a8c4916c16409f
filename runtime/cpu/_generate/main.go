// Command _generate writes the AVX2 kernels of package cpu with avo:
//
//	cd runtime/cpu && go generate
//
// runs `go run . -out ../kernels_amd64.s -stubs ../kernels_amd64.go -pkg cpu`
// here. This is its own module so that the main module does not depend on
// avo; the generated files are committed.
//
// Every kernel computes, lane by lane, exactly the arithmetic of its scalar
// twin in kernels.go (the reference): the integer products of a block are
// exact in int32 whatever their order, and each float operation (scale
// product, block product, accumulation in block order, the add into y) is
// the same IEEE single-precision operation on the same operands, only four
// rows or four tokens at a time. No FMA is used, since the scalar code does
// not fuse. So the results are bit-identical to the scalar kernels.
//
// Two shapes of kernel:
//
//   - Rows kernels (MatVec): one token, four rows per step; the lanes of the
//     float vectors are the rows. y holds the rows' outputs, contiguous.
//   - Toks kernels (MatMat): one row per step, four tokens per step; the
//     lanes are the tokens. o holds [row][tokens] outputs.
//
// The activation layouts they read are built by scratch.prepareVec
// (runtime/cpu/simd.go), where the format of each argument is described.
package main

import (
	"encoding/binary"
	"fmt"
	"github.com/xdna-go/xdna/runtime/cpu/_generate/avoutil"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!noasm,gc")
	constants()

	rowsQ4("q4_0RowsAVX2", false)
	rowsQ4("q5_0RowsAVX2", true)
	rowsQ8("q8_0RowsAVX2")
	rowsK("q4_KRowsAVX2", false)
	rowsK("q5_KRowsAVX2", true)
	rowsQ6("q6_KRowsAVX2")

	quantQ8_0()
	quantQ8_K()
	permute64()

	avx512()

	Generate()
}

// Constant tables.
var (
	c0F    Mem // 32 x 0x0f
	ones16 Mem // 16 x int16 1
	idx01  Mem // int32 [0 0 0 0 1 1 1 1]: VPERMD/VPERMPS index, [a b ...] -> [a a a a b b b b]
	idxT   Mem // int32 [0 2 4 6 1 3 5 7]: [r0A r0B r1A r1B ...] -> [r0A r1A r2A r3A r0B ...]
	hShuf  Mem // Q5: byte i of lane L <- byte 4L + i/4 of the pair's 8 high-bit bytes
	hBit   Mem // Q5: byte i -> 1 << (2i mod 8)
	scMask [4]Mem
	c10    Mem    // 32 x 0x10
	mMask  Mem    // K-quants: int16 j <- byte 8+j (the mins), 16 bytes
	evOdd  Mem    // Q6_K: bytes 0,2,...,14 then 1,3,...,15 (16 bytes)
	wMask  [8]Mem // Q6_K: int16 j of each lane, 8 times
	absMsk Mem    // 8 x 0x7fffffff
	f127   Mem    // float32 127
	packIx Mem    // int32 [0 4 1 5 2 6 3 7]: undo the lane interleave of VPACKSS*
	permB  Mem    // per lane: the 8 even bytes, then the 8 odd ones
	// nearestInt: float32 1.5*2^23, the mantissa mask, 2^22; and 0xff
	f1p5x2p23, m23, h22, ff Mem
	// quantQ8_K: float32 1, 8 x int32 127, the float32 sign bit
	f1, i127, sign32 Mem
)

// table declares a read-only table (avoutil.Table).
func table(name string, b []byte) Mem { return avoutil.Table(name, b) }

func constants() {
	b := make([]byte, 32)
	for i := range b {
		b[i] = 0x0f
	}
	c0F = table("c0F", b)
	b = make([]byte, 32)
	for i := 0; i < 32; i += 2 {
		b[i] = 1
	}
	ones16 = table("ones16", b)
	b = make([]byte, 32)
	for i := range b {
		b[i] = 0x10
	}
	c10 = table("c10", b)
	i32 := func(v ...uint32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], x)
		}
		return b
	}
	idx01 = table("idx01", i32(0, 0, 0, 0, 1, 1, 1, 1))
	idxT = table("idxT", i32(0, 2, 4, 6, 1, 3, 5, 7))
	b = make([]byte, 32)
	for i := 0; i < 16; i++ {
		b[i] = byte(i / 4)
		b[16+i] = byte(4 + i/4)
	}
	hShuf = table("hShuf", b)
	b = make([]byte, 32)
	for i := 0; i < 32; i++ {
		b[i] = 1 << ((2 * (i % 16)) % 8)
	}
	hBit = table("hBit", b)
	// scMask[j]: from the 16 scalemin bytes broadcast to both lanes, lane 0
	// gets sc[2j] as 8 int16, lane 1 sc[2j+1].
	for j := 0; j < 4; j++ {
		b = make([]byte, 32)
		for i := 0; i < 8; i++ {
			b[2*i], b[2*i+1] = byte(2*j), 0x80
			b[16+2*i], b[16+2*i+1] = byte(2*j+1), 0x80
		}
		scMask[j] = table(fmt.Sprintf("scMask%d", j), b)
	}
	b = make([]byte, 16)
	for j := 0; j < 8; j++ {
		b[2*j], b[2*j+1] = byte(8+j), 0x80
	}
	mMask = table("mMask", b)
	b = make([]byte, 16)
	for i := 0; i < 8; i++ {
		b[i], b[8+i] = byte(2*i), byte(2*i+1)
	}
	evOdd = table("evOdd", b)
	for j := 0; j < 8; j++ {
		b = make([]byte, 32)
		for i := 0; i < 16; i++ {
			b[2*i], b[2*i+1] = byte(2*j), byte(2*j+1)
		}
		wMask[j] = table(fmt.Sprintf("wMask%d", j), b)
	}
	absMsk = table("absMsk", i32(0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff))
	f127 = table("f127", i32(0x42fe0000, 0))
	packIx = table("packIx", i32(0, 4, 1, 5, 2, 6, 3, 7))
	b = make([]byte, 32)
	for i := 0; i < 8; i++ {
		b[i], b[8+i] = byte(2*i), byte(2*i+1)
		b[16+i], b[24+i] = byte(2*i), byte(2*i+1)
	}
	permB = table("permB", b)
	f1p5x2p23 = table("f1p5x2p23", i32(0x4b400000, 0))
	m23 = table("m23", i32(0x007fffff, 0))
	h22 = table("h22", i32(0x00400000, 0))
	ff = table("ff", i32(0xff, 0))
	f1 = table("f1", i32(0x3f800000, 0))
	i127 = table("i127", i32(127, 127, 127, 127, 127, 127, 127, 127))
	sign32 = table("sign32", i32(0x80000000, 0))
}

// param returns the stack slot of an argument, used as a variable by the
// outer loops to keep the general registers for the inner ones.
func param(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// rowMem addresses row k (0..3) of a plane: base + k*stride + disp, with t =
// base + 2*stride precomputed for row 3.
func rowMem(base, stride, t Register, k, disp int) Mem {
	switch k {
	case 0:
		return Mem{Base: base, Disp: disp}
	case 1:
		return Mem{Base: base, Index: stride, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: base, Index: stride, Scale: 2, Disp: disp}
	}
	return Mem{Base: t, Index: stride, Scale: 1, Disp: disp}
}

// reduce4 sums, per 128-bit lane, the four dwords of each of v[0..3]: lane
// L of the result is [sum v0.L, sum v1.L, sum v2.L, sum v3.L]. Exact (int32).
func reduce4(v [4]VecVirtual, y bool) VecVirtual {
	mk := func() VecVirtual {
		if y {
			return YMM()
		}
		return XMM()
	}
	t0, t1 := mk(), mk()
	VPUNPCKLDQ(v[1], v[0], t0) // [v0_0 v1_0 v0_1 v1_1]
	VPUNPCKHDQ(v[1], v[0], t1) // [v0_2 v1_2 v0_3 v1_3]
	VPADDD(t1, t0, t0)
	t2, t3 := mk(), mk()
	VPUNPCKLDQ(v[3], v[2], t2)
	VPUNPCKHDQ(v[3], v[2], t3)
	VPADDD(t3, t2, t2)
	u := mk()
	VPUNPCKHQDQ(t2, t0, u)  // [v0_13 v1_13 v2_13 v3_13]
	VPUNPCKLQDQ(t2, t0, t0) // [v0_02 v1_02 v2_02 v3_02]
	VPADDD(u, t0, t0)
	return t0
}

// fold adds the two 128-bit lanes of v: [a | b] -> a+b (xmm).
func fold(v VecVirtual) VecVirtual {
	h := XMM()
	VEXTRACTI128(U8(1), v, h)
	VPADDD(h, v.AsX(), h)
	return h
}

// nibbles splits 32 bytes of 4-bit codes into lo (low nibbles) and hi.
func nibbles(src Mem, m0F Op) (lo, hi VecVirtual) {
	lo, hi = YMM(), YMM()
	VMOVDQU(src, lo)
	VPSRLW(U8(4), lo, hi)
	VPAND(m0F, lo, lo)
	VPAND(m0F, hi, hi)
	return
}

// highBits ORs the 5th bits of two 32-element blocks into lo and hi (the
// even and odd elements of each block, see nibbles): src is the blocks' 8
// high bytes, bit e of each block's little-endian u32 for element e.
func highBits(src Mem, lo, hi VecVirtual) {
	h := YMM()
	VPBROADCASTQ(src, h)
	VPSHUFB(hShuf, h, h) // byte i of lane L: the byte holding the bits of elements 2i, 2i+1
	e := YMM()
	VPAND(hBit, h, e)
	VPCMPEQB(hBit, e, e) // 0xff where element 2i has its 5th bit
	VPAND(c10, e, e)
	VPOR(e, lo, lo)
	VPSRLW(U8(1), h, h) // bit 2i+1 to bit 2i; bit 7, from the next byte, is masked off
	VPAND(hBit, h, h)
	VPCMPEQB(hBit, h, h)
	VPAND(c10, h, h)
	VPOR(h, hi, hi)
}

// gather4 loads the dword at base + k*stride for rows k = 0..3 into an xmm.
func gather4(base, stride Register) VecVirtual {
	g := XMM()
	VMOVD(Mem{Base: base}, g)
	VPINSRD(U8(1), Mem{Base: base, Index: stride, Scale: 1}, g, g)
	VPINSRD(U8(2), Mem{Base: base, Index: stride, Scale: 2}, g, g)
	t := GP64()
	LEAQ(Mem{Base: base, Index: stride, Scale: 2}, t)
	VPINSRD(U8(3), Mem{Base: t, Index: stride, Scale: 1}, g, g)
	return g
}

// halvesT converts the f16 pairs [r0a r0b r1a r1b r2a r2b r3a r3b] of g to
// float32 [r0a r1a r2a r3a | r0b r1b r2b r3b].
func halvesT(g VecVirtual) VecVirtual {
	w := YMM()
	VCVTPH2PS(g, w)
	it := YMM()
	VMOVDQU(idxT, it)
	VPERMPS(w, it, w)
	return w
}

// bcast2 loads the two dwords at m and spreads them [a a a a | b b b b].
func bcast2(m Mem) VecVirtual {
	v := XMM()
	VMOVQ(m, v)
	idx := YMM()
	VMOVDQU(idx01, idx)
	w := YMM()
	VPERMD(v.AsY(), idx, w)
	return w
}

// addTo accumulates the 8 lanes [A | B] of f into the 4 lanes of acc, A
// then B.
func addTo(f VecVirtual, acc VecVirtual) {
	VADDPS(f.AsX(), acc, acc)
	h := XMM()
	VEXTRACTF128(U8(1), f, h)
	VADDPS(h, acc, acc)
}

// store writes acc to p, or adds it to p's values when the add argument is
// not 0: y = acc on the first K-tile of a row, y = y + acc on the others.
func store(name string, acc VecVirtual, p Register, add Mem) {
	CMPQ(add, U8(0))
	JE(LabelRef(name + "_store"))
	VADDPS(Mem{Base: p}, acc, acc)
	Label(name + "_store")
	VMOVUPS(acc, Mem{Base: p})
}

// advance adds n*stride to the pointer argument name.
func advance(name string, stride Register, n int) {
	p := Load(Param(name), GP64())
	LEAQ(Mem{Base: p, Index: stride, Scale: uint8(n)}, p)
	Store(p, Param(name))
}

// addParam adds the argument by to the pointer argument name.
func addParam(name, by string) {
	p := Load(Param(name), GP64())
	ADDQ(param(by), p)
	Store(p, Param(name))
}

// rowsDoc documents a rows kernel by its reference loop (kernels.go).
func rowsDoc(name, ref string) {
	Doc(name+" multiplies rows rows (a multiple of 4) of tiles K-tiles, the",
		"tiles tstride bytes apart in every plane, with one token, four rows at a",
		"time, with exactly the arithmetic of the scalar kernel:",
		"",
		"\tfor t := range tiles {",
		"\t\tfor i := range rows {",
		"\t\t\tv := "+ref,
		"\t\t\tif t == 0 { y[i] = v } else { y[i] += v }",
		"\t\t}",
		"\t}")
}

// tileVars are the rows kernels' per-K-tile variables: the plane
// pointers of the current tile, the output pointer and the rows left, and
// whether to add to y (every tile but the first).
type tileVars struct {
	planes []string
	local  map[string]Mem
	rows   Mem
	y      Mem
	add    Mem
	pf     Mem  // the prefetch pointer: ahead bytes ahead in the codes
	far    int  // with far > 0, the codes are prefetched into L2 far bytes past pf too
	nta    bool // the codes' prefetches are PREFETCHNTA (ntaCodes), else PREFETCHT0
}

// beginTiles allocates the variables and opens the K-tile loop; the rows
// kernels take tiles K-tiles, tstride bytes apart in every plane. The codes
// are prefetched prefetchAhead bytes ahead, ntaAhead in the AVX-512 set
// (ntaCodes; beginTilesAhead).
func beginTiles(name string, planes ...string) *tileVars {
	if ntaCodes {
		return beginTilesAhead(name, ntaAhead, planes...)
	}
	return beginTilesAhead(name, prefetchAhead, planes...)
}

// beginTilesAhead is beginTiles prefetching the codes ahead bytes ahead.
//
// One prefetch pointer runs over the whole call, not one per K-tile: a
// call on whole column groups (as MatVec makes for one token) reads one
// contiguous run, K-tile after K-tile, each tile's codes then its small
// planes, so the pointer only has to catch up at a tile's start to ahead
// bytes past the tile's codes, prefetching the lines from where it was
// (the small planes' bytes, ahead further on), not the whole ahead bytes
// again. The first tile's start prefetches its first ahead bytes.
func beginTilesAhead(name string, ahead int, planes ...string) *tileVars {
	v := &tileVars{planes: planes, local: map[string]Mem{}, nta: ntaCodes}
	for _, p := range planes {
		v.local[p] = AllocLocal(8)
	}
	v.rows, v.y, v.add, v.pf = AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8)
	MOVQ(U32(0), v.add)
	r := Load(Param("codes"), GP64())
	MOVQ(r, v.pf)
	Label(name + "_tile")
	for _, p := range planes[1:] {
		// The first bytes of each small plane, which the prefetches of
		// the loops (nextRows) do not cover.
		r := Load(Param(p), GP64())
		for o := 0; o < planeAhead; o += 64 {
			PREFETCHT0(Mem{Base: r, Disp: o})
		}
	}
	for _, p := range planes {
		r := Load(Param(p), GP64())
		MOVQ(r, v.local[p])
	}
	r = Load(Param("rows"), GP64())
	MOVQ(r, v.rows)
	r = Load(Param("y"), GP64())
	MOVQ(r, v.y)
	// The codes' lines from max(pf, codes) to codes+ahead.
	q, end := GP64(), Load(Param("codes"), GP64())
	MOVQ(v.pf, q)
	CMPQ(q, end)
	CMOVQLT(end, q)
	ADDQ(U32(ahead), end)
	Label(name + "_pf")
	CMPQ(q, end)
	JAE(LabelRef(name + "_pfdone"))
	v.prefetchLine(Mem{Base: q})
	ADDQ(U8(64), q)
	JMP(LabelRef(name + "_pf"))
	Label(name + "_pfdone")
	MOVQ(end, v.pf)
	return v
}

// prefetch asks for the cache lines of the n bytes of codes prefetchAhead
// bytes ahead of the ones read now (the rows of a tile are contiguous, so
// the codes are read in order) and moves the prefetch pointer on: the
// hardware prefetcher alone keeps too few lines in flight for a kernel that
// computes between its loads.
func (v *tileVars) prefetch(n int) {
	r := GP64()
	MOVQ(v.pf, r)
	for o := 0; o < n; o += 64 {
		v.prefetchLine(Mem{Base: r, Disp: o})
	}
	for o := 0; v.far > 0 && o < n; o += 64 {
		PREFETCHT1(Mem{Base: r, Disp: v.far + o})
	}
	ADDQ(U32(n), r)
	MOVQ(r, v.pf)
}

// prefetchLine prefetches the codes' line at m: PREFETCHNTA if v.nta, else
// PREFETCHT0.
func (v *tileVars) prefetchLine(m Mem) {
	if v.nta {
		PREFETCHNTA(m)
		return
	}
	PREFETCHT0(m)
}

// load returns the current tile's pointer of plane p.
func (v *tileVars) load(p string) Register {
	r := GP64()
	MOVQ(v.local[p], r)
	return r
}

// nextRows stores acc to the four rows' outputs and moves the plane
// pointers on by four rows.
func (v *tileVars) nextRows(name string, acc VecVirtual, strides map[string]Register) {
	y := GP64()
	MOVQ(v.y, y)
	store(name, acc, y, v.add)
	ADDQ(U8(16), y)
	MOVQ(y, v.y)
	for i, p := range v.planes {
		r := v.load(p)
		if i > 0 {
			// A small plane (scales, high bits, mins) is a stream of
			// its own, which the codes' prefetches do not reach. With
			// the K-tiles of 128 and 256 that xdnapack gives every
			// large matrix it takes at most 16 bytes a row: one line
			// per four rows covers it (a wider tile's, partly).
			PREFETCHT0(Mem{Base: r, Disp: planeAhead})
		}
		LEAQ(Mem{Base: r, Index: strides[p], Scale: 4}, r)
		MOVQ(r, v.local[p])
	}
	SUBQ(U8(4), v.rows)
	JMP(LabelRef(name + "_rows"))
}

// nextRowsN is nextRows for the kernels that step n (8 or 4) rows: it
// stores acc (n floats) to the rows' outputs, moves the plane pointers on
// by n rows and jumps back to the step's label lbl.
func (v *tileVars) nextRowsN(lbl string, n int, acc VecVirtual, strides map[string]Register) {
	y := GP64()
	MOVQ(v.y, y)
	store(lbl, acc, y, v.add)
	ADDQ(U8(4*n), y)
	MOVQ(y, v.y)
	for i, p := range v.planes {
		r := v.load(p)
		if i > 0 {
			// A small plane, as in nextRows: one line per four rows.
			for o := 0; o < n/4; o++ {
				PREFETCHT0(Mem{Base: r, Disp: planeAhead + 64*o})
			}
		}
		LEAQ(Mem{Base: r, Index: strides[p], Scale: uint8(n)}, r)
		MOVQ(r, v.local[p])
	}
	SUBQ(U8(n), v.rows)
	JMP(LabelRef(lbl))
}

// endTiles closes the K-tile loop: the planes move on by tstride, the
// caller's advance moves the activations, and the next tiles add to y.
func (v *tileVars) endTiles(name string, advance func()) {
	Label(name + "_rowsdone")
	for _, p := range v.planes {
		addParam(p, "tstride")
	}
	advance()
	MOVQ(U32(1), v.add)
	DECQ(param("tiles"))
	JNZ(LabelRef(name + "_tile"))
	VZEROUPPER()
	RET()
}

// prefetchAhead is how far ahead of the codes they read the rows kernels
// prefetch, in bytes. On the AVX-512 VM (AMD EPYC, CPU family 26: Zen 5; 2 threads, 4 KiB pages: the
// weights are a mapped file) 16 KiB ahead, with one prefetch pointer over
// the K-tiles of a call, read the 0.5B decode shapes from memory 5-45%
// faster than 2 KiB ahead restarted at every K-tile (BenchmarkDecode05B's
// shapes, one thread, medians of calls interleaved with the old kernels):
// the most on the short K-tiles of ffn_down and on the small qkv, where a
// group is gone before 2 KiB of prefetches ahead have caught up.
const prefetchAhead = 16 << 10

// ntaAhead is how far ahead the AVX-512 rows kernels prefetch their codes,
// in bytes, and they prefetch them with PREFETCHNTA rather than
// PREFETCHT0 (tileVars.nta; the AVX2 kernels keep prefetchAhead and
// PREFETCHT0). A weight's line is read once a token: a non-temporal
// prefetch brings it to L1 without keeping it in L2, which holds the
// token's activations and the small planes instead. Whole `xdnarun bench
// -p 128 -n 64 -r 1 -t 2` runs alternated with the kernels before (Zen 5
// VM, 2026-12-05, medians of per-round decode ratios), this set against
// the one before (15:09-15:14 UTC, 20 then 24 rounds): Q4_0 1.062 and
// 1.052, the Q4_K_M mix 1.066 and 1.088, Q8_0 0.999 and 1.019, and again
// 0.991 (15:30, 24 rounds); in five rounds of `-r 3` benches, before and
// after in each (15:25-15:29): Q4_0 1.105, the mix 0.997, Q8_0 0.916 (Q8_0's
// tall groups, most of its bytes, keep the AVX2 kernel: the same with
// these prefetches measured 1.001 against 0.991, not kept). Before it
// (14:59-15:07): NTA 16 KiB ahead, Q8_0 1.105, 1.060 and 1.045, the mix
// 1.106 and 1.055, Q4_0 1.058, 1.000 and 0.987; NTA 8 KiB in both sets,
// Q8_0 1.067, the mix 1.043, Q4_0 1.024, the AVX2 kernels so changed
// 1.006, 1.024 and 1.007; PREFETCHT1 in place of T0, 0.94-0.96; T0 32
// KiB ahead, 0.95-0.98. A line prefetched non-temporally lives in L1
// only, so the distance is 8 KiB, a quarter of the 32 KiB L1 of the Zen 4
// laptops that run these kernels too.
const ntaAhead = 8 << 10

// ntaCodes is set while the AVX-512 kernels are written (avx512): their
// codes are then prefetched with PREFETCHNTA (tileVars.nta), ntaAhead bytes
// ahead (beginTiles).
var ntaCodes bool

// q5Ahead is prefetchAhead for the AVX2 Q5_0 rows kernel, whose three
// streams (codes, high bits, scales) and longer arithmetic per byte made
// it lose a few per cent with 16 KiB in its largest shape (gate_up) where
// 12 KiB did not.
const q5Ahead = 12 << 10

// planeAhead is how far ahead the rows kernels prefetch their other planes
// (scales, high bits, mins), in bytes: 32 to 128 rows. With these planes
// prefetched, and the first bytes of every plane of a K-tile, one-token
// decoding of the 0.5B shape took 11% (Q4_0, Q8_0) and 5% (Q4_K_M) less
// CPU time per token on one thread of a Zen 3 (planeAhead 1024 took 3%
// more than 512; on the Zen 5 VM it made no difference).
const planeAhead = 512

// rowsQ4 writes the Q4_0 (q5: Q5_0) rows kernel: rows (a multiple of 4)
// rows of tiles K-tiles against one token. Per pair of 32-blocks: codes 32
// bytes per row, high 8 bytes, scales 4 bytes (two f16); a is the token's
// codes, 64 bytes per pair (permuted: see scratch.prepareVec), d and s its
// scales and code sums, 2 per pair.
func rowsQ4(name string, q5 bool) {
	sig := "func(codes, scales *byte, cstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int)"
	bias := 3 // w = q - 8: subtract 8*sum(a)
	planes := []string{"codes", "scales"}
	if q5 {
		sig = "func(codes, high, scales *byte, cstride, hstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int)"
		bias = 4
		planes = append(planes, "high")
	}
	TEXT(name, NOSPLIT, sig)
	ref, args := "dotQ4_0", "codes, scales"
	if q5 {
		ref, args = "dotQ5_0", "codes, high, scales"
	}
	rowsDoc(name, ref+"("+args+" of row i, tile t; the token's codes, scales and sums of tile t)")
	Pragma("noescape")
	cs := Load(Param("cstride"), GP64())
	ss := Load(Param("sstride"), GP64())
	strides := map[string]Register{"codes": cs, "scales": ss}
	var hs Register
	if q5 {
		hs = Load(Param("hstride"), GP64())
		strides["high"] = hs
	}
	a := Load(Param("a"), GP64())
	d := Load(Param("d"), GP64())
	s := Load(Param("s"), GP64())
	lim := Load(Param("np"), GP64())
	SHLQ(U8(3), lim)
	m0F, ones := YMM(), YMM()
	VMOVDQU(c0F, m0F)
	VMOVDQU(ones16, ones)
	ahead := prefetchAhead
	if q5 {
		ahead = q5Ahead
	}
	tv := beginTilesAhead(name, ahead, planes...)

	// Eight rows per step while eight are left, then four: two
	// independent float chains, and the step's fixed work (the scale
	// gathers' addressing, the token's sums and scales, the y store and
	// the plane pointers) once per eight rows.
	for _, n := range []int{8, 4} {
		lbl := fmt.Sprintf("%s_rows%d", name, n)
		next := name + "_rows4"
		if n == 4 {
			next = name + "_rowsdone"
		}
		Label(lbl)
		CMPQ(tv.rows, U8(n))
		JL(LabelRef(next))
		pc, psc := tv.load("codes"), tv.load("scales")
		var ph Register
		if q5 {
			ph = tv.load("high")
		}
		x := GP64() // 8*pair
		XORQ(x, x)
		acc := make([]VecVirtual, n/4) // rows 4h..4h+3
		for h := range acc {
			acc[h] = XMM()
			VXORPS(acc[h], acc[h], acc[h])
		}

		Label(lbl + "_pair")
		tv.prefetch(32 * n) // n rows x 32 bytes of codes per pair
		r := make([]VecVirtual, n/4)
		for h := range r {
			// rows 4h..4h+3 of the codes and high bits from bc, bh
			bc, bh := pc, ph
			if h > 0 {
				bc = GP64()
				LEAQ(Mem{Base: pc, Index: cs, Scale: 4}, bc)
				if q5 {
					bh = GP64()
					LEAQ(Mem{Base: ph, Index: hs, Scale: 4}, bh)
				}
			}
			t := GP64()
			LEAQ(Mem{Base: bc, Index: cs, Scale: 2}, t)
			var th Register
			if q5 {
				th = GP64()
				LEAQ(Mem{Base: bh, Index: hs, Scale: 2}, th)
			}
			var v [4]VecVirtual
			for k := 0; k < 4; k++ {
				lo, hi := nibbles(rowMem(bc, cs, t, k, 0), m0F)
				if q5 {
					highBits(rowMem(bh, hs, th, k, 0), lo, hi)
				}
				VPMADDUBSW(Mem{Base: a, Index: x, Scale: 8}, lo, lo)
				VPMADDUBSW(Mem{Base: a, Index: x, Scale: 8, Disp: 32}, hi, hi)
				VPADDW(hi, lo, lo)
				v[k] = YMM()
				VPMADDWD(ones, lo, v[k])
			}
			r[h] = reduce4(v, true) // [r0A r1A r2A r3A | r0B r1B r2B r3B] sum(q*a)
		}
		sb := bcast2(Mem{Base: s, Index: x, Scale: 1})
		VPSLLD(U8(bias), sb, sb)
		dx := bcast2(Mem{Base: d, Index: x, Scale: 1})
		f := make([]VecVirtual, n/4)
		for h := range r {
			VPSUBD(sb, r[h], r[h])
			f[h] = YMM()
			VCVTDQ2PS(r[h], f[h])
		}
		for h := range f {
			bs := psc
			if h > 0 {
				bs = GP64()
				LEAQ(Mem{Base: psc, Index: ss, Scale: 4}, bs)
			}
			dw := halvesT(gather4(bs, ss))
			VMULPS(dx, dw, dw)     // d_w * d_x
			VMULPS(dw, f[h], f[h]) // float32(isum) * (d_w*d_x)
		}
		for h := range f {
			addTo(f[h], acc[h])
		}
		ADDQ(U8(32), pc)
		ADDQ(U8(4), psc)
		if q5 {
			ADDQ(U8(8), ph)
		}
		ADDQ(U8(8), x)
		CMPQ(x, lim)
		JL(LabelRef(lbl + "_pair"))
		out := acc[0]
		if n == 8 {
			out = YMM()
			VINSERTF128(U8(1), acc[1], acc[0].AsY(), out) // [rows 0..3 | rows 4..7]
		}
		tv.nextRowsN(lbl, n, out, strides)
	}

	tv.endTiles(name, func() {
		LEAQ(Mem{Base: a, Index: lim, Scale: 8}, a) // 64 bytes per pair
		ADDQ(lim, d)                                // 2 floats per pair
		ADDQ(lim, s)
	})
}

// rowsQ8 writes the Q8_0 rows kernel: per pair of blocks 64 code bytes and
// 4 scale bytes per row; a 64 bytes per pair, d 2 scales per pair.
func rowsQ8(name string) {
	TEXT(name, NOSPLIT, "func(codes, scales *byte, cstride, sstride int, a *int8, d *float32, np int, y *float32, rows, tiles, tstride int)")
	rowsDoc(name, "dotQ8_0(codes, scales of row i, tile t; the token's codes and scales of tile t)")
	Pragma("noescape")
	cs := Load(Param("cstride"), GP64())
	ss := Load(Param("sstride"), GP64())
	a := Load(Param("a"), GP64())
	d := Load(Param("d"), GP64())
	lim := Load(Param("np"), GP64())
	SHLQ(U8(3), lim)
	ones := YMM()
	VMOVDQU(ones16, ones)
	tv := beginTiles(name, "codes", "scales")

	Label(name + "_rows")
	CMPQ(tv.rows, U8(4))
	JL(LabelRef(name + "_rowsdone"))
	pc, psc := tv.load("codes"), tv.load("scales")
	x := GP64()
	XORQ(x, x)
	acc := XMM()
	VXORPS(acc, acc, acc)

	Label(name + "_pair")
	tv.prefetch(256) // 4 rows x 64 bytes of codes per pair
	aA, aB := YMM(), YMM()
	VMOVDQU(Mem{Base: a, Index: x, Scale: 8}, aA)
	VMOVDQU(Mem{Base: a, Index: x, Scale: 8, Disp: 32}, aB)
	t := GP64()
	LEAQ(Mem{Base: pc, Index: cs, Scale: 2}, t)
	var v [4]VecVirtual
	for k := 0; k < 4; k++ {
		var p [2]VecVirtual
		for h, ah := range []VecVirtual{aA, aB} {
			c, sg := YMM(), YMM()
			VMOVDQU(rowMem(pc, cs, t, k, 32*h), c)
			VPSIGNB(c, ah, sg) // a*sign(w)
			VPABSB(c, c)       // |w|
			VPMADDUBSW(sg, c, sg)
			VPMADDWD(ones, sg, sg)
			p[h] = sg
		}
		v[k] = YMM()
		VPERM2I128(U8(0x20), p[1], p[0], v[k]) // [A.lo | B.lo]
		VPERM2I128(U8(0x31), p[1], p[0], p[0]) // [A.hi | B.hi]
		VPADDD(p[0], v[k], v[k])
	}
	r := reduce4(v, true)
	f := YMM()
	VCVTDQ2PS(r, f)
	dw := halvesT(gather4(psc, ss))
	dx := bcast2(Mem{Base: d, Index: x, Scale: 1})
	VMULPS(dx, dw, dw)
	VMULPS(dw, f, f)
	addTo(f, acc)
	ADDQ(U8(64), pc)
	ADDQ(U8(4), psc)
	ADDQ(U8(8), x)
	CMPQ(x, lim)
	JL(LabelRef(name + "_pair"))
	tv.nextRows(name, acc, map[string]Register{"codes": cs, "scales": ss})

	tv.endTiles(name, func() {
		LEAQ(Mem{Base: a, Index: lim, Scale: 8}, a)
		ADDQ(lim, d)
	})
}

// rowsK writes the Q4_K (q5: Q5_K) rows kernel. Per super-block of 256 and
// row: codes 128 bytes, high 32, scalemins 16 (8 scales, 8 mins), dmin 4 (f16
// d, f16 dmin); per super-block of the token: a 256 codes (permuted), d one
// scale, bp 8 int16 sums of pairs of bsums.
func rowsK(name string, q5 bool) {
	sig := "func(codes, sm, dm *byte, cstride, mstride, dstride int, a *int8, d *float32, bp *int16, nsb int, y *float32, rows, tiles, tstride int)"
	planes := []string{"codes", "sm", "dm"}
	if q5 {
		sig = "func(codes, high, sm, dm *byte, cstride, hstride, mstride, dstride int, a *int8, d *float32, bp *int16, nsb int, y *float32, rows, tiles, tstride int)"
		planes = append(planes, "high")
	}
	TEXT(name, NOSPLIT, sig)
	ref, args := "dotQ4_K", "codes, sm, dm"
	if q5 {
		ref, args = "dotQ5_K", "codes, high, sm, dm"
	}
	rowsDoc(name, ref+"("+args+" of row i, tile t; the token's codes, scales and bsums of tile t)")
	Pragma("noescape")
	cnt := AllocLocal(8)
	cs := Load(Param("cstride"), GP64())
	ms := Load(Param("mstride"), GP64())
	ds := Load(Param("dstride"), GP64())
	strides := map[string]Register{"codes": cs, "sm": ms, "dm": ds}
	var hs Register
	if q5 {
		hs = Load(Param("hstride"), GP64())
		strides["high"] = hs
	}
	m0F := YMM()
	VMOVDQU(c0F, m0F)
	tv := beginTiles(name, planes...)

	p, acc := kRowsBegin(name, q5, tv, cnt)
	pc, psm, pdm, ph, pa, pbp := p.pc, p.psm, p.pdm, p.ph, p.pa, p.pbp
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
		smv := YMM()
		VBROADCASTI128(rowMem(psm, ms, tm, k, 0), smv)
		for j := 0; j < 4; j++ {
			lo, hi := nibbles(rowMem(pc, cs, t, k, 32*j), m0F)
			if q5 {
				highBits(rowMem(ph, hs, th, k, 8*j), lo, hi)
			}
			VPMADDUBSW(Mem{Base: pa, Disp: 64 * j}, lo, lo)
			VPMADDUBSW(Mem{Base: pa, Disp: 64*j + 32}, hi, hi)
			VPADDW(hi, lo, lo)
			sc := YMM()
			VPSHUFB(scMask[j], smv, sc)
			VPMADDWD(sc, lo, lo) // sc_j * sum(q*a) per dword
			if j == 0 {
				v[k] = lo
			} else {
				VPADDD(lo, v[k], v[k])
			}
		}
	}
	si := fold(reduce4(v, true)) // sumi of rows 0..3
	var m [4]VecVirtual
	for k := 0; k < 4; k++ {
		mv := XMM()
		VMOVDQU(rowMem(psm, ms, tm, k, 0), mv)
		VPSHUFB(mMask, mv, mv) // the 8 mins as int16
		m[k] = XMM()
		VPMADDWD(Mem{Base: pbp}, mv, m[k])
	}
	sm := reduce4(m, false)         // summ of rows 0..3
	dw := halvesT(gather4(pdm, ds)) // [d r0..3 | dmin r0..3]
	kSuperblockEnd(name, si, sm, dw, acc, p, cnt)
	tv.nextRows(name, acc, strides)

	tv.endTiles(name, func() { nextTileK(true) })
}

// kPtrs are the pointers a K-quant rows kernel moves on by a super-block:
// the token's scale, the rows' codes, high bits (Q5_K, else nil), scales
// and mins, d and dmin, the token's codes and bsums.
type kPtrs struct{ pd, pc, ph, psm, pdm, pa, pbp Register }

// kRowsBegin opens a K-quant rows kernel's loop over four rows (tv.rows
// of them left) and, for them, its loop over the super-blocks (cnt of them
// left): the rows' pointers, the token's, and acc cleared.
func kRowsBegin(name string, q5 bool, tv *tileVars, cnt Mem) (kPtrs, VecVirtual) {
	Label(name + "_rows")
	CMPQ(tv.rows, U8(4))
	JL(LabelRef(name + "_rowsdone"))
	pc, psm, pdm := tv.load("codes"), tv.load("sm"), tv.load("dm")
	var ph Register
	if q5 {
		ph = tv.load("high")
	}
	pa := Load(Param("a"), GP64())
	pd := Load(Param("d"), GP64())
	pbp := Load(Param("bp"), GP64())
	n := Load(Param("nsb"), GP64())
	MOVQ(n, cnt)
	acc := XMM()
	VXORPS(acc, acc, acc)

	Label(name + "_sb")
	tv.prefetch(512) // 4 rows x 128 bytes of codes per super-block
	return kPtrs{pd, pc, ph, psm, pdm, pa, pbp}, acc
}

// kSuperblockEnd ends a super-block of a K-quant rows kernel of either set:
// acc += d*dx*float32(sumi) - dmin*dx*float32(summ) for the four rows (si,
// sm: their int32 sums; dw: [d r0..3 | dmin r0..3]), the pointers moved
// on, and the loop over the super-blocks (cnt of them left) closed.
func kSuperblockEnd(name string, si, sm, dw, acc VecVirtual, p kPtrs, cnt Mem) {
	dx := YMM()
	VBROADCASTSS(Mem{Base: p.pd}, dx)
	VMULPS(dx, dw, dw)
	fi, fm := XMM(), XMM()
	VCVTDQ2PS(si, fi)
	VCVTDQ2PS(sm, fm)
	VMULPS(dw.AsX(), fi, fi) // dd*float32(sumi)
	dmn := XMM()
	VEXTRACTF128(U8(1), dw, dmn)
	VMULPS(dmn, fm, fm) // dmin*float32(summ)
	VSUBPS(fm, fi, fi)
	VADDPS(fi, acc, acc)
	ADDQ(U8(128), p.pc)
	if p.ph != nil {
		ADDQ(U8(32), p.ph)
	}
	ADDQ(U8(16), p.psm)
	ADDQ(U8(4), p.pdm)
	ADDQ(U32(256), p.pa)
	ADDQ(U8(4), p.pd)
	ADDQ(U8(16), p.pbp)
	DECQ(cnt)
	JNZ(LabelRef(name + "_sb"))
}

// rowsQ6 writes the Q6_K rows kernel. Per super-block and row: codes 256
// int8 (q-32), scales 16 int8, dp 2 bytes (f16 d); per super-block of the
// token: a 256 codes, d one scale.
func rowsQ6(name string) {
	rowsQ6With(name, q6Kernel{
		row: func(k int, r q6Regs, v *[4]VecVirtual) {
			sv := XMM()
			VMOVDQU(rowMem(r.psc, r.ss, r.ts, k, 0), sv)
			VPSHUFB(evOdd, sv, sv)
			u := YMM()
			VPMOVSXBW(sv, u) // [even scales | odd scales] as int16
			for j := 0; j < 8; j++ {
				c, av := YMM(), YMM()
				VMOVDQU(rowMem(r.pc, r.cs, r.t, k, 32*j), c)
				VMOVDQU(Mem{Base: r.pa, Disp: 32 * j}, av)
				VPSIGNB(c, av, av)
				VPABSB(c, c)
				VPMADDUBSW(av, c, c)
				sc := YMM()
				VPSHUFB(wMask[j], u, sc) // [scale 2j x8 | scale 2j+1 x8]
				VPMADDWD(sc, c, c)
				if j == 0 {
					v[k] = c
				} else {
					VPADDD(c, v[k], v[k])
				}
			}
		},
		reduce: func(v [4]VecVirtual) VecVirtual { return fold(reduce4(v, true)) },
	})
}

// q6Kernel is what the Q6_K rows kernels of the two sets do differently
// (rowsQ6With does the rest): setup after the strides are loaded, tokens
// per super-block after the prefetch, row the int32 sums of row k of four
// into v[k], reduce the four rows' sums to one lane each (an XMM).
type q6Kernel struct {
	setup  func()
	tokens func(pa Register)
	row    func(k int, r q6Regs, v *[4]VecVirtual)
	reduce func(v [4]VecVirtual) VecVirtual
}

// q6Regs are the registers of a Q6_K rows kernel's super-block: the codes
// and scales of row 0 (pc, psc) and row 2 (t, ts), their strides, the
// token's codes.
type q6Regs struct{ pc, psc, t, ts, cs, ss, pa Register }

// rowsQ6With writes a Q6_K rows kernel: four rows a step, each super-block
// of 256 codes summed by q.row and q.reduce, times the rows' f16 scales d
// and the token's scale, into acc.
func rowsQ6With(name string, q q6Kernel) {
	TEXT(name, NOSPLIT, "func(codes, scales, dp *byte, cstride, sstride, dstride int, a *int8, d *float32, nsb int, y *float32, rows, tiles, tstride int)")
	rowsDoc(name, "dotQ6_K(codes, scales, dp of row i, tile t; the token's codes and scales of tile t)")
	Pragma("noescape")
	cnt := AllocLocal(8)
	cs := Load(Param("cstride"), GP64())
	ss := Load(Param("sstride"), GP64())
	ds := Load(Param("dstride"), GP64())
	if q.setup != nil {
		q.setup()
	}
	tv := beginTiles(name, "codes", "scales", "dp")

	Label(name + "_rows")
	CMPQ(tv.rows, U8(4))
	JL(LabelRef(name + "_rowsdone"))
	pc, psc, pdp := tv.load("codes"), tv.load("scales"), tv.load("dp")
	pa := Load(Param("a"), GP64())
	pd := Load(Param("d"), GP64())
	n := Load(Param("nsb"), GP64())
	MOVQ(n, cnt)
	acc := XMM()
	VXORPS(acc, acc, acc)

	Label(name + "_sb")
	tv.prefetch(1024) // 4 rows x 256 bytes of codes per super-block
	if q.tokens != nil {
		q.tokens(pa)
	}
	t := GP64()
	LEAQ(Mem{Base: pc, Index: cs, Scale: 2}, t)
	ts := GP64()
	LEAQ(Mem{Base: psc, Index: ss, Scale: 2}, ts)
	var v [4]VecVirtual
	for k := 0; k < 4; k++ {
		q.row(k, q6Regs{pc: pc, psc: psc, t: t, ts: ts, cs: cs, ss: ss, pa: pa}, &v)
	}
	si := q.reduce(v)
	g := XMM()
	VPXOR(g, g, g)
	VPINSRW(U8(0), Mem{Base: pdp}, g, g)
	VPINSRW(U8(1), Mem{Base: pdp, Index: ds, Scale: 1}, g, g)
	VPINSRW(U8(2), Mem{Base: pdp, Index: ds, Scale: 2}, g, g)
	t3 := GP64()
	LEAQ(Mem{Base: pdp, Index: ds, Scale: 2}, t3)
	VPINSRW(U8(3), Mem{Base: t3, Index: ds, Scale: 1}, g, g)
	dw := XMM()
	VCVTPH2PS(g, dw)
	dx := XMM()
	VBROADCASTSS(Mem{Base: pd}, dx)
	VMULPS(dx, dw, dw)
	f := XMM()
	VCVTDQ2PS(si, f)
	VMULPS(dw, f, f)
	VADDPS(f, acc, acc)
	ADDQ(U32(256), pc)
	ADDQ(U8(16), psc)
	ADDQ(U8(2), pdp)
	ADDQ(U32(256), pa)
	ADDQ(U8(4), pd)
	DECQ(cnt)
	JNZ(LabelRef(name + "_sb"))
	tv.nextRows(name, acc, map[string]Register{"codes": cs, "scales": ss, "dp": ds})

	tv.endTiles(name, func() { nextTileK(false) })
}

// quantQ8_0 writes the Q8_0 activation quantiser of nb blocks of 32, the
// arithmetic of quantQ8_0 in quant.go for finite x: amax = max|x| (exact),
// d = f16(amax/127) rounded to nearest even (VCVTPS2PH, as F32ToF16) and
// widened, id = 127/amax (0 if amax is 0), r = nearestInt(x*id) by the same
// float trick, q = int8(r), sum = sum(r) in int32.
func quantQ8_0() {
	TEXT("quantQ8_0AVX2", NOSPLIT, "func(x *float32, q *int8, d *float32, s *int32, nb int)")
	Pragma("noescape")
	Doc("quantQ8_0AVX2 quantises nb blocks of 32 activations as Q8_0, exactly as",
		"quantQ8_0 does for finite values:",
		"",
		"\tfor i := range nb { quantQ8_0(x[32*i:], q[32*i:], &d[i], &s[i]) }")
	x := Load(Param("x"), GP64())
	q := Load(Param("q"), GP64())
	d := Load(Param("d"), GP64())
	s := Load(Param("s"), GP64())
	n := Load(Param("nb"), GP64())
	am, ix := YMM(), YMM()
	VMOVDQU(absMsk, am)
	VMOVDQU(packIx, ix)
	magic, mant, half, low8 := YMM(), YMM(), YMM(), YMM()
	VBROADCASTSS(f1p5x2p23, magic)
	VPBROADCASTD(m23, mant)
	VPBROADCASTD(h22, half)
	VPBROADCASTD(ff, low8)
	TESTQ(n, n)
	JZ(LabelRef("quantQ8_0_done"))
	Label("quantQ8_0_block")
	var v [4]VecVirtual
	for i := range v {
		v[i] = YMM()
		VMOVUPS(Mem{Base: x, Disp: 32 * i}, v[i])
	}
	a0, a1 := YMM(), YMM()
	VANDPS(am, v[0], a0)
	VANDPS(am, v[1], a1)
	VMAXPS(a1, a0, a0)
	VANDPS(am, v[2], a1)
	t := YMM()
	VANDPS(am, v[3], t)
	VMAXPS(t, a1, a1)
	VMAXPS(a1, a0, a0)
	h := XMM()
	VEXTRACTF128(U8(1), a0, h)
	VMAXPS(h, a0.AsX(), h)
	h2 := XMM()
	VMOVHLPS(h, h, h2)
	VMAXPS(h2, h, h)
	VPSHUFD(U8(1), h, h2)
	VMAXSS(h2, h, h) // amax in lane 0
	// d = f16(amax/127), widened
	dd := XMM()
	VDIVSS(f127, h, dd)
	VCVTPS2PH(U8(0), dd, dd)
	VCVTPH2PS(dd, dd)
	VMOVSS(dd, Mem{Base: d})
	// id = 127/amax, or 0 when amax is 0
	id, z := XMM(), XMM()
	VMOVSS(f127, id)
	VDIVSS(h, id, id)
	VXORPS(z, z, z)
	VCMPSS(U8(4), z, h, z) // amax != 0
	VANDPS(z, id, id)
	idy := YMM()
	VBROADCASTSS(id, idy)
	// r = nearestInt(x*id) as ggml computes it, the float plus 1.5*2^23,
	// whose low mantissa bits are the integer: exactly what VCVTPS2DQ
	// gives for |x*id| < 2^22, and the same garbage beyond (an amax so
	// small that id overflows to Inf), which the scalar code produces too.
	for i := range v {
		VMULPS(idy, v[i], v[i])
		VADDPS(magic, v[i], v[i])
		VPAND(mant, v[i], v[i])
		VPSUBD(half, v[i], v[i])
	}
	sum := YMM()
	VPADDD(v[1], v[0], sum)
	VPADDD(v[3], v[2], t)
	VPADDD(t, sum, sum)
	// q = int8(r): the low bytes, packed without saturation
	for i := range v {
		VPAND(low8, v[i], v[i])
	}
	VPACKUSDW(v[1], v[0], v[0]) // uint16, lanes interleaved
	VPACKUSDW(v[3], v[2], v[2])
	VPACKUSWB(v[2], v[0], v[0]) // bytes [q0..3 q8..11 q16..19 q24..27 | q4..7 ...]
	VPERMD(v[0], ix, v[0])
	VMOVDQU(v[0], Mem{Base: q})
	sx := fold(sum)
	VPHADDD(sx, sx, sx)
	VPHADDD(sx, sx, sx)
	VMOVD(sx, Mem{Base: s})
	ADDQ(U32(128), x)
	ADDQ(U8(32), q)
	ADDQ(U8(4), d)
	ADDQ(U8(4), s)
	DECQ(n)
	JNZ(LabelRef("quantQ8_0_block"))
	Label("quantQ8_0_done")
	VZEROUPPER()
	RET()
}

// quantQ8_K writes the Q8_K activation quantiser of nb blocks of 256, the
// arithmetic of quantQ8_K in quant.go: amax = max|x| over the block, NaNs
// passed over as the scalar comparison passes over them, vmax the first
// element whose magnitude is amax; an all-zero block (amax 0) gives zero
// codes, sums and scale; otherwise iscale = -127/vmax, r = nearestInt(x*iscale)
// by the float trick of quantQ8_0, q = int8(min(127, r)), bsums the sums of
// each 16 codes as int8, d = 1/iscale. Every step is the scalar code's
// float operation, so the bits are the same for every input.
func quantQ8_K() {
	TEXT("quantQ8_KAVX2", NOSPLIT, "func(x *float32, q *int8, d *float32, bsums *int32, nb int)")
	Pragma("noescape")
	Doc("quantQ8_KAVX2 quantises nb blocks of 256 activations as Q8_K, exactly as",
		"quantQ8_K does:",
		"",
		"\tfor i := range nb { quantQ8_K(x[256*i:], q[256*i:], &d[i], bsums[16*i:]) }")
	x := Load(Param("x"), GP64())
	q := Load(Param("q"), GP64())
	d := Load(Param("d"), GP64())
	s := Load(Param("bsums"), GP64())
	n := Load(Param("nb"), GP64())
	TESTQ(n, n)
	JZ(LabelRef("quantQ8_K_done"))
	Label("quantQ8_K_block")
	// amax: four running maxima; VMAXPS returns its second source (the
	// running maximum) when the first (|x|) is NaN, as x > amax is false.
	am := YMM()
	VMOVDQU(absMsk, am)
	var acc [4]VecVirtual
	for i := range acc {
		acc[i] = YMM()
		VXORPS(acc[i], acc[i], acc[i])
	}
	t := YMM()
	for i := 0; i < 32; i++ {
		VANDPS(Mem{Base: x, Disp: 32 * i}, am, t)
		VMAXPS(acc[i%4], t, acc[i%4])
	}
	VMAXPS(acc[1], acc[0], acc[0])
	VMAXPS(acc[3], acc[2], acc[2])
	VMAXPS(acc[2], acc[0], acc[0])
	h, h2 := XMM(), XMM()
	VEXTRACTF128(U8(1), acc[0], h)
	VMAXPS(h, acc[0].AsX(), h)
	VMOVHLPS(h, h, h2)
	VMAXPS(h2, h, h)
	VPSHUFD(U8(1), h, h2)
	VMAXSS(h2, h, h) // amax in lane 0
	am0 := GP32()
	VMOVD(h, am0)
	TESTL(am0, am0) // amax >= +0: zero exactly when its bits are
	JNZ(LabelRef("quantQ8_K_nonzero"))
	// amax 0: zero codes, sums and scale
	zy := YMM()
	VXORPS(zy, zy, zy)
	for i := 0; i < 8; i++ {
		VMOVDQU(zy, Mem{Base: q, Disp: 32 * i})
	}
	VMOVDQU(zy, Mem{Base: s})
	VMOVDQU(zy, Mem{Base: s, Disp: 32})
	VMOVSS(zy.AsX(), Mem{Base: d})
	JMP(LabelRef("quantQ8_K_next"))

	Label("quantQ8_K_nonzero")
	// vmax is +amax or -amax: the sign of the first element whose
	// magnitude is amax (the lowest set bit of the first nonzero mask of
	// |x| == amax, in the sign mask of the same eight elements).
	ay := YMM()
	VBROADCASTSS(h, ay)
	p, m, sg := GP64(), GP64(), GP64()
	MOVQ(x, p)
	Label("quantQ8_K_find")
	VMOVUPS(Mem{Base: p}, t)
	VMOVMSKPS(t, sg.As32())
	VANDPS(am, t, t)
	VCMPPS(U8(0), ay, t, t) // |x| == amax
	VMOVMSKPS(t, m.As32())
	ADDQ(U8(32), p)
	TESTL(m.As32(), m.As32())
	JZ(LabelRef("quantQ8_K_find"))
	MOVL(m.As32(), p.As32())
	NEGL(p.As32())
	ANDL(p.As32(), m.As32()) // the lowest set bit
	// iscale = -127/vmax: 127/amax, its sign flipped when vmax is +amax
	// (division rounds the same for either sign); d = 1/iscale.
	is := XMM()
	VMOVSS(f127, is)
	VDIVSS(h, is, is)
	TESTL(sg.As32(), m.As32())
	JNZ(LabelRef("quantQ8_K_neg"))
	sb := XMM()
	VMOVSS(sign32, sb)
	VXORPS(sb, is, is)
	Label("quantQ8_K_neg")
	dd := XMM()
	VMOVSS(f1, dd)
	VDIVSS(is, dd, dd)
	VMOVSS(dd, Mem{Base: d})
	isy := YMM()
	VBROADCASTSS(is, isy)
	magic, mant, half, low8, ix := YMM(), YMM(), YMM(), YMM(), YMM()
	VBROADCASTSS(f1p5x2p23, magic)
	VPBROADCASTD(m23, mant)
	VPBROADCASTD(h22, half)
	VPBROADCASTD(ff, low8)
	VMOVDQU(packIx, ix)
	for g := 0; g < 8; g++ {
		var v, w [4]VecVirtual
		for i := range v {
			v[i] = YMM()
			VMULPS(Mem{Base: x, Disp: 128*g + 32*i}, isy, v[i])
			VADDPS(magic, v[i], v[i])
			VPAND(mant, v[i], v[i])
			VPSUBD(half, v[i], v[i])
			VPMINSD(i127, v[i], v[i])
			VPAND(low8, v[i], v[i])
			// int8(r) widened again, for the sums
			w[i] = YMM()
			VPSLLD(U8(24), v[i], w[i])
			VPSRAD(U8(24), w[i], w[i])
		}
		// bsums 2g (elements 0-15 of the group) and 2g+1 (16-31)
		VPADDD(w[1], w[0], w[0])
		VPADDD(w[3], w[2], w[2])
		VPHADDD(w[2], w[0], w[0]) // [a01 a23 b01 b23 | a45 a67 b45 b67]
		VPHADDD(w[0], w[0], w[0]) // [a0-3 b0-3 . . | a4-7 b4-7 . .]
		hx := XMM()
		VEXTRACTI128(U8(1), w[0], hx)
		VPADDD(hx, w[0].AsX(), hx)
		VMOVQ(hx, Mem{Base: s, Disp: 8 * g})
		VPACKUSDW(v[1], v[0], v[0])
		VPACKUSDW(v[3], v[2], v[2])
		VPACKUSWB(v[2], v[0], v[0])
		VPERMD(v[0], ix, v[0])
		VMOVDQU(v[0], Mem{Base: q, Disp: 32 * g})
	}
	Label("quantQ8_K_next")
	ADDQ(U32(1024), x)
	ADDQ(U32(256), q)
	ADDQ(U8(4), d)
	ADDQ(U8(64), s)
	DECQ(n)
	JNZ(LabelRef("quantQ8_K_block"))
	Label("quantQ8_K_done")
	VZEROUPPER()
	RET()
}

// permute64 writes permute64AVX2: n chunks of 64 codes from src
// (contiguous) to dst, chunk c at dst + c*dstride, each reordered as
// permute64 in simd.go does: A's even, B's even, A's odd, B's odd elements.
func permute64() {
	TEXT("permute64AVX2", NOSPLIT, "func(dst, src *int8, n, dstride int)")
	Pragma("noescape")
	Doc("permute64AVX2 reorders n chunks of 64 activation codes for the nibble",
		"kernels, chunk c going to dst[c*dstride:]:",
		"",
		"\tfor c := range n { permute64(dst[c*dstride:], src[64*c:]) }")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	ds := Load(Param("dstride"), GP64())
	pm := YMM()
	VMOVDQU(permB, pm)
	TESTQ(n, n)
	JZ(LabelRef("permute64_done"))
	Label("permute64_chunk")
	a, b := YMM(), YMM()
	VMOVDQU(Mem{Base: src}, a)
	VMOVDQU(Mem{Base: src, Disp: 32}, b)
	VPSHUFB(pm, a, a) // [A0-15 even, odd | A16-31 even, odd]
	VPSHUFB(pm, b, b)
	VPERMQ(U8(0xd8), a, a) // [A even | A odd]
	VPERMQ(U8(0xd8), b, b)
	e := YMM()
	VPERM2I128(U8(0x20), b, a, e) // [A even | B even]
	VPERM2I128(U8(0x31), b, a, a) // [A odd | B odd]
	VMOVDQU(e, Mem{Base: dst})
	VMOVDQU(a, Mem{Base: dst, Disp: 32})
	ADDQ(U8(64), src)
	ADDQ(ds, dst)
	DECQ(n)
	JNZ(LabelRef("permute64_chunk"))
	Label("permute64_done")
	VZEROUPPER()
	RET()
}
