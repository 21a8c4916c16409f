// Command vec writes the AVX2 element-wise kernels of package cpu with avo:
//
//	cd runtime/cpu && go generate
//
// runs `go run . -out ../../vec_amd64.s -stubs ../../vec_amd64.go -pkg cpu`
// here. It shares the avo module of _generate; the generated files are
// committed.
//
// Every kernel does, lane by lane, the float32 operations of its Go twin in
// vecops.go (the specification) on the same operands in the same order: a
// product then a separate sum, except in the exp (ggml's ggml_v_expf, whose
// FMAs the Go code does with Fmaf), the same reduction tree for the dot
// product and the softmax sum. So the results are bit-identical to the Go
// twins. The kernels
// take a number of elements that is a multiple of 8; vecops.go does the
// rest with the Go twins.
package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!noasm,gc")
	constants()
	dotF16()
	axpyF16()
	dotsF16()
	axpysF16()
	dotsF16x512()
	axpysF16x512()
	for h := 2; h <= 3; h++ {
		dotsF16HeadsAVX2(h)
		axpysF16HeadsAVX2(h)
	}
	for h := 2; h <= 4; h++ {
		dotsF16HeadsX512(h)
		axpysF16HeadsX512(h)
	}
	dotsF16FMA()
	madF16()
	toF16()
	roundF16()
	scaleMax()
	scale("scaleAVX2", false)
	scale("scaleRoundF16AVX2", true)
	siluMul()
	ropeNorm()
	ropeNeox()
	softmaxExp()
	sumStream()
	prefetchLines()
	Generate()
}

// The constants of expf8, the same values as in expf.go.
const (
	exp8Shift float32 = 0x1.8p23
	exp8Log2e float32 = 0x1.715476p+0
	exp8Ln2Hi float32 = 0x1.62e4p-1
	exp8Ln2Lo float32 = 0x1.7f7d1cp-20
	exp8C0    float32 = 0x1.ffffecp-1
	exp8C1    float32 = 0x1.fffdb6p-2
	exp8C2    float32 = 0x1.555e66p-3
	exp8C3    float32 = 0x1.573e2ep-5
	exp8C4    float32 = 0x1.0e4020p-7
)

// Constant vectors, each a value repeated in the 8 lanes.
var (
	vShift, vLog2e, vLn2Hi, vLn2Lo, vOne Mem
	vC                                   [5]Mem // exp8C0 .. exp8C4
	vAbs                                 Mem    // all bits but the sign
	v126, v192                           Mem    // float32 126 and 192
	vG, vS1                              Mem    // 0x82000000, 0x7f000000
	vSign, vQNaN                         Mem    // 0x80000000, 0x7fc00000
	vNegInf                              Mem    // -Inf
	vSignEven                            Mem    // 0x80000000 in the even lanes, 0 in the odd
)

// splat declares a table of 8 copies of the 32-bit word w.
func splat(name string, w uint32) Mem { return words(name, w) }

// words declares a table of 8 32-bit words, w repeated (len(w) divides 8).
func words(name string, w ...uint32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(w[i%len(w)]))
	}
	return m
}

func constants() {
	f := func(name string, v float32) Mem { return splat(name, math.Float32bits(v)) }
	vShift = f("vecExpShift", exp8Shift)
	vLog2e = f("vecLog2e", exp8Log2e)
	vLn2Hi = f("vecLn2Hi", exp8Ln2Hi)
	vLn2Lo = f("vecLn2Lo", exp8Ln2Lo)
	vOne = f("vecOne", 1)
	for i, c := range []float32{exp8C0, exp8C1, exp8C2, exp8C3, exp8C4} {
		vC[i] = f("vecExpC"+string(rune('0'+i)), c)
	}
	vAbs = splat("vecAbs", 0x7fffffff)
	vSign = splat("vecSign", 0x80000000)
	vQNaN = splat("vecQNaN", 0x7fc00000)
	vNegInf = splat("vecNegInf", 0xff800000)
	vSignEven = words("vecSignEven", 0x80000000, 0)
	v126 = f("vec126", 126)
	v192 = f("vec192", 192)
	vG = splat("vecExpG", 0x82000000)
	vS1 = splat("vecExpS1", 0x7f000000)
}

// param returns the stack slot of an argument.
func param(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// elem addresses element i (a register) of an array of size-byte elements
// at base, plus disp bytes.
func elem(base, i Register, size uint8, disp int) Mem {
	return Mem{Base: base, Index: i, Scale: size, Disp: disp}
}

// exp8 returns a new register with the exp of the 8 floats of x, computed
// as expf8 in expf.go (ggml_v_expf) does lane by lane, with the same FMAs:
// z = x*log2e + shift, n = z - shift, b = x - n*ln2Hi - n*ln2Lo (fused),
// k = 2^n from the bits of z, u = b*b, j = ((C4*b + C3)*u + (C2*b + C1))*u
// + C0*b, and k*j + k; lanes with |n| > 126 take (s2*j + s2)*s1 and those
// with |n| > 192 s1*s1 instead. x is left unchanged; name makes its
// label unique.
func exp8(x VecVirtual, name string) VecVirtual {
	z := YMM()
	VMOVUPS(vShift, z)
	VFMADD231PS(vLog2e, x, z) // z = x*log2e + shift
	n := YMM()
	VSUBPS(vShift, z, n) // n = z - shift
	b := YMM()
	VMOVUPS(x, b)
	VFNMADD231PS(vLn2Hi, n, b) // b = -(n*ln2Hi) + x
	VFNMADD231PS(vLn2Lo, n, b) // b = -(n*ln2Lo) + b
	e, k := YMM(), YMM()
	VPSLLD(U8(23), z, e)
	VPADDD(vOne, e, k) // k = 2^n: bits of z << 23 plus those of 1.0
	u := YMM()
	VMULPS(b, b, u)
	p, q, j := YMM(), YMM(), YMM()
	VMOVUPS(vC[3], p)
	VFMADD231PS(vC[4], b, p) // p = C4*b + C3
	VMOVUPS(vC[1], q)
	VFMADD231PS(vC[2], b, q) // q = C2*b + C1
	VFMADD213PS(q, u, p)     // p = p*u + q
	VMULPS(vC[0], b, j)      // j = C0*b
	VFMADD231PS(u, p, j)     // j = p*u + j
	res := YMM()
	VMOVUPS(k, res)
	VFMADD231PS(j, k, res) // res = k*j + k
	// The lanes with |n| > 126 (c) and > 192 (d), taken only when there
	// are any, as ggml_v_expf does (computing s1*s1 for every lane would
	// underflow, and underflows cost microcode assists).
	an, c := YMM(), YMM()
	VANDPS(vAbs, n, an)
	VCMPPS(U8(0x1e), v126, an, c) // GT_OQ: an > 126
	mask := GP32()
	VMOVMSKPS(c, mask)
	TESTL(mask, mask)
	JZ(LabelRef(name + "_exp_done"))
	d, g, s1 := YMM(), YMM(), YMM()
	VCMPPS(U8(0x1e), v192, an, d)
	VXORPS(g, g, g)
	VCMPPS(U8(0x12), g, n, g) // LE_OQ: n <= 0
	VANDPS(vG, g, g)
	VPADDD(vS1, g, s1) // s1 = g + 0x7f000000
	VPSUBD(g, e, e)    // s2 = e - g
	VMOVUPS(e, g)
	VFMADD231PS(j, e, g) // s2*j + s2
	VMULPS(s1, g, g)
	VBLENDVPS(c, g, res, res)
	VMULPS(s1, s1, s1)
	VBLENDVPS(d, s1, res, res)
	Label(name + "_exp_done")
	return res
}

// loop emits a loop over n elements (n a multiple of step, maybe 0) with
// the index i, calling body once per step elements.
func loop(name string, i, n Register, step int, body func()) {
	XORQ(i, i)
	CMPQ(n, i)
	JE(LabelRef(name + "_done"))
	Label(name + "_loop")
	body()
	ADDQ(U8(step), i)
	CMPQ(n, i)
	JNE(LabelRef(name + "_loop"))
	Label(name + "_done")
}

// rowsAhead is how many rows ahead of the one they read the dots and
// axpys kernels prefetch: the f16 cache is read from memory by the first
// head of each KV group, rows a stride apart that the hardware's
// prefetchers follow badly (a row of 64 took 9 ns from memory, 2.4 from
// the caches).
const rowsAhead = 64

// aheadOf returns a new register with rowsAhead*stride.
func aheadOf(stride Register) Register {
	r := GP64()
	MOVQ(stride, r)
	SHLQ(U8(6), r) // rowsAhead
	return r
}

// prefetchRow prefetches the lines of the row at base+ahead that hold its
// first n f16 (n a register; up to four lines, 128 elements).
func prefetchRow(base, ahead, n Register, lbl string) {
	for o := 0; o < 256; o += 64 {
		if o > 0 {
			CMPQ(n, U8(o/2))
			JLE(LabelRef(lbl))
		}
		PREFETCHT0(Mem{Base: base, Index: ahead, Scale: 1, Disp: o})
	}
	Label(lbl)
}

// dotF16 writes dotF16AVX2: partial sum j (lane j%8 of accumulator j/8)
// adds the products of the elements i = j mod 32; then the fixed reduction
// tree of dotF16Go.
func dotF16() {
	TEXT("dotF16AVX2", NOSPLIT, "func(a *float32, b *uint16, n int) float32")
	Pragma("noescape")
	Doc("dotF16AVX2 returns dotF16Go(a[:n], b[:n]), n a multiple of 8.")
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n"), GP64())
	n32 := GP64()
	MOVQ(n, n32)
	ANDQ(I8(-32), n32)
	Store(dotF16Body("dotF16", a, b, n, n32), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// dotF16Body writes the dot product of a and b (n elements, n32 of them
// in whole steps of 32) and returns the xmm whose low lane holds it.
func dotF16Body(name string, a, b, n, n32 Register) Register {
	var acc [4]VecVirtual
	for j := range acc {
		acc[j] = YMM()
		VXORPS(acc[j], acc[j], acc[j])
	}
	i := GP64()
	t := YMM()
	product := func(disp int) {
		VCVTPH2PS(elem(b, i, 2, 2*disp), t)
		VMULPS(elem(a, i, 4, 4*disp), t, t)
	}
	loop(name+"_32", i, n32, 32, func() {
		for j := range acc {
			product(8 * j)
			VADDPS(t, acc[j], acc[j])
		}
	})
	// The last 0 to 3 chunks of 8 go to accumulators 0, 1, 2.
	for j := 0; j < 3; j++ {
		CMPQ(n, i)
		JE(LabelRef(name + "_reduce"))
		product(0)
		VADDPS(t, acc[j], acc[j])
		ADDQ(U8(8), i)
	}
	Label(name + "_reduce")
	return reduceDot(acc)
}

// reduceDot reduces dotF16Go's 32 partial sums in acc (partial sum j in
// lane j%8 of acc[j/8]) with its tree: s_j = (p_j + p_j+8) + (p_j+16 +
// p_j+24), t_k = s_k + s_k+4, then (t0 + t2) + (t1 + t3), in the low lane
// of the register it returns (acc[0]'s low half).
func reduceDot(acc [4]VecVirtual) Register {
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	s, h := acc[0].AsX(), XMM()
	VEXTRACTF128(U8(1), acc[0], h)
	VADDPS(h, s, s)
	VMOVHLPS(s, s, h)
	VADDPS(h, s, s)
	VMOVSHDUP(s, h)
	VADDSS(h, s, s)
	return s
}

// dotsF16 writes dotsF16AVX2: dotF16AVX2 of a with count rows of b, the
// rows stride bytes apart, each with the same partial sums and reduction
// tree, into out (the attention scores of one query, in one call); each
// row's call prefetches the row rowsAhead rows on.
func dotsF16() {
	a, b, n, stride, out, count, n32 := dotsBegin("dotsF16AVX2")
	ahead := aheadOf(stride)
	Label("dotsF16_row")
	prefetchRow(b, ahead, n, "dotsF16_pf")
	sx := dotF16Body("dotsF16", a, b, n, n32)
	VMOVSS(sx, Mem{Base: out})
	rowsEnd("dotsF16", out, b, stride, count)
}

// dotsF16HeadsAVX2 writes dotsF16H<h>AVX2 (h = 2 or 3): dotsF16AVX2 for h
// query vectors against the same rows, each row's f16 converted once for
// all h (the query heads that share a KV head): head j's partial sums,
// tail and reduction tree are dotF16Body's for that head alone, so
// out[j*outStride+t] is dotF16Go(a[j*n:(j+1)*n], row t) bit for bit.
func dotsF16HeadsAVX2(h int) {
	lbl := fmt.Sprintf("dotsF16H%dv2", h)
	as, b, n, stride, out, os, count, n32, ahead := dotsHeadsBegin(fmt.Sprintf("dotsF16H%dAVX2", h), h)

	Label(lbl + "_row")
	prefetchRow(b, ahead, n, lbl+"_pf")
	acc := make([][4]VecVirtual, h)
	for j := range acc {
		for c := range acc[j] {
			acc[j][c] = YMM()
			VXORPS(acc[j][c], acc[j][c], acc[j][c])
		}
	}
	i := GP64()
	t, m := YMM(), YMM()
	products := func(disp int, c int) {
		VCVTPH2PS(elem(b, i, 2, 2*disp), t)
		for j := range as {
			VMULPS(elem(as[j], i, 4, 4*disp), t, m)
			VADDPS(m, acc[j][c], acc[j][c])
		}
	}
	loop(lbl+"_32", i, n32, 32, func() {
		for c := 0; c < 4; c++ {
			products(8*c, c)
		}
	})
	// The last 0 to 3 chunks of 8 go to accumulators 0, 1, 2.
	for c := 0; c < 3; c++ {
		CMPQ(n, i)
		JE(LabelRef(lbl + "_reduce"))
		products(0, c)
		ADDQ(U8(8), i)
	}
	Label(lbl + "_reduce")
	for j := range acc {
		s := reduceDot(acc[j])
		switch j {
		case 0:
			VMOVSS(s, Mem{Base: out})
		case 1, 2:
			VMOVSS(s, Mem{Base: out, Index: os, Scale: uint8(j)})
		}
	}
	rowsEnd(lbl, out, b, stride, count)
}

// axpysF16HeadsAVX2 writes axpysF16H<h>AVX2 (h = 2 or 3): axpysF16AVX2 for
// h weight vectors and h outputs over the same rows, each row's f16
// converted once for all h, by chunks of y of four registers (h = 2) or
// two (h = 3), then one; each element of each output gets axpysF16AVX2's
// product and sum per row, in row order.
func axpysF16HeadsAVX2(h int) {
	chunks := []axpysChunk{{4, 8}, {2, 8}, {1, 8}}
	if h == 3 {
		chunks = chunks[1:]
	}
	axpysHeads(fmt.Sprintf("axpysF16H%dAVX2", h), fmt.Sprintf("axpysF16H%dv2", h), h, chunks)
}

// axpysHeads writes the axpys kernel name for h heads (labels from label),
// axpysF16HeadsX512 or axpysF16HeadsAVX2: for each chunk of y in the order
// given, as long as n has room for it, the h outputs' registers over every
// row, each row's f16 converted a register at a time and multiplied by
// each head's weight.
func axpysHeads(name, label string, h int, chunks []axpysChunk) {
	TEXT(name, NOSPLIT, "func(p *float32, pStride int, x *uint16, stride int, y *float32, n, count int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s does axpyF16Go(p[j*pStride+t], row t of x, y[j*n:(j+1)*n]) for j < %d", name, h),
		"and t = 0, 1, ..., count-1, row t at x + t*stride bytes, n a multiple of 8 and count at least 1.")
	ps := Load(Param("pStride"), GP64())
	SHLQ(U8(2), ps)
	x := Load(Param("x"), GP64())
	stride := Load(Param("stride"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	nb := GP64()
	MOVQ(n, nb)
	SHLQ(U8(2), nb)
	ahead := aheadOf(stride)
	for ci, c := range chunks {
		size, lbl, vec := chunkStart(label, chunks, ci, n)
		var y3 Register
		if h == 4 {
			y3 = GP64()
			LEAQ(Mem{Base: y, Index: nb, Scale: 2}, y3)
			ADDQ(nb, y3)
		}
		yAt := func(j, disp int) Mem {
			switch j {
			case 0:
				return Mem{Base: y, Disp: disp}
			case 3:
				return Mem{Base: y3, Disp: disp}
			}
			return Mem{Base: y, Index: nb, Scale: uint8(j), Disp: disp}
		}
		acc := make([][]VecVirtual, h)
		for j := range acc {
			acc[j] = make([]VecVirtual, c.regs)
			for r := range acc[j] {
				acc[j][r] = vec()
				VMOVUPS(yAt(j, 4*c.lanes*r), acc[j][r])
			}
		}
		xr, pr, cnt := GP64(), GP64(), GP64()
		MOVQ(x, xr)
		Load(Param("p"), pr)
		var pr3 Register
		if h == 4 {
			pr3 = GP64()
			LEAQ(Mem{Base: pr, Index: ps, Scale: 2}, pr3)
			ADDQ(ps, pr3)
		}
		pAt := func(j int) Mem {
			switch j {
			case 0:
				return Mem{Base: pr}
			case 3:
				return Mem{Base: pr3}
			}
			return Mem{Base: pr, Index: ps, Scale: uint8(j)}
		}
		Load(Param("count"), cnt)
		Label(lbl + "t")
		// the chunk's lines of the row rowsAhead rows on
		for o := 0; o < 2*size; o += 64 {
			PREFETCHT0(Mem{Base: xr, Index: ahead, Scale: 1, Disp: o})
		}
		bc := make([]VecVirtual, h)
		for j := range bc {
			bc[j] = vec()
			VBROADCASTSS(pAt(j), bc[j])
		}
		for r := 0; r < c.regs; r++ {
			v := vec()
			VCVTPH2PS(Mem{Base: xr, Disp: 2 * c.lanes * r}, v)
			for j := range bc {
				t := vec()
				VMULPS(bc[j], v, t)
				VADDPS(t, acc[j][r], acc[j][r])
			}
		}
		ADDQ(U8(4), pr)
		if h == 4 {
			ADDQ(U8(4), pr3)
		}
		ADDQ(stride, xr)
		DECQ(cnt)
		JNZ(LabelRef(lbl + "t"))
		for j := range acc {
			for r := range acc[j] {
				VMOVUPS(acc[j][r], yAt(j, 4*c.lanes*r))
			}
		}
		chunkNext(lbl, size, x, y, n)
	}
	Label(label + "_done")
	VZEROUPPER()
	RET()
}

// chunkStart opens chunk ci of an axpys kernel's chunks (labels from
// label): its label, then the jump to the next chunk's (or label_done)
// where n, the elements left, has no room for it. It returns the chunk's
// size in elements, its label and a maker of its registers.
func chunkStart(label string, chunks []axpysChunk, ci int, n Register) (size int, lbl string, vec func() VecVirtual) {
	c := chunks[ci]
	size = c.regs * c.lanes
	lbl = fmt.Sprintf("%s_%d", label, size)
	next := label + "_done"
	if ci+1 < len(chunks) {
		next = fmt.Sprintf("%s_%d", label, chunks[ci+1].regs*chunks[ci+1].lanes)
	}
	Label(lbl)
	CMPQ(n, U8(size))
	JL(LabelRef(next))
	vec = func() VecVirtual {
		if c.lanes == 16 {
			return ZMM()
		}
		return YMM()
	}
	return
}

// chunkNext moves an axpys kernel on from a chunk of size elements of y
// (x and y past it, n less it) and back to the chunk's label lbl.
func chunkNext(lbl string, size int, x, y, n Register) {
	ADDQ(U32(4*size), y)
	ADDQ(U32(2*size), x)
	SUBQ(U32(size), n)
	JMP(LabelRef(lbl))
}

// rowsEnd closes the loop over rows of a dots kernel: on to the next output
// and row, back to label lbl+"_row" until count is 0, then the return.
func rowsEnd(lbl string, out, b, stride, count Register) {
	ADDQ(U8(4), out)
	ADDQ(stride, b)
	DECQ(count)
	JNZ(LabelRef(lbl + "_row"))
	VZEROUPPER()
	RET()
}

// dotsHeadsBegin opens the dots kernel name for h heads (dotsF16H<h>AVX2
// or its AVX-512 twin) and loads its arguments: the heads' query vectors
// (as, n floats apart), the rows, the output stride in bytes, n rounded
// down to a multiple of 32 and rowsAhead rows in bytes.
func dotsHeadsBegin(name string, h int) (as []Register, b, n, stride, out, os, count, n32, ahead Register) {
	TEXT(name, NOSPLIT, "func(a *float32, b *uint16, n, stride int, out *float32, outStride, count int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets out[j*outStride+t] = dotF16Go(a[j*n:(j+1)*n], row t of b) for j < %d", name, h),
		"and t < count, row t at b + t*stride bytes, n a multiple of 8 and count at least 1.")
	a := Load(Param("a"), GP64())
	b = Load(Param("b"), GP64())
	n = Load(Param("n"), GP64())
	stride = Load(Param("stride"), GP64())
	out = Load(Param("out"), GP64())
	os = Load(Param("outStride"), GP64())
	SHLQ(U8(2), os)
	count = Load(Param("count"), GP64())
	n32 = GP64()
	MOVQ(n, n32)
	ANDQ(I8(-32), n32)
	as = []Register{a}
	nb := GP64()
	MOVQ(n, nb)
	SHLQ(U8(2), nb)
	for j := 1; j < h; j++ {
		r := GP64()
		LEAQ(Mem{Base: as[j-1], Index: nb, Scale: 1}, r)
		as = append(as, r)
	}
	ahead = aheadOf(stride)
	return
}

// dotsBegin opens the dots kernel name (dotsF16AVX2 or its AVX-512 twin)
// and loads its arguments, and n rounded down to a multiple of 32.
func dotsBegin(name string) (a, b, n, stride, out, count, n32 Register) {
	TEXT(name, NOSPLIT, "func(a *float32, b *uint16, n, stride int, out *float32, count int)")
	Pragma("noescape")
	Doc(name+" sets out[t] = dotF16Go(a[:n], row t of b) for t < count, row t",
		"at b + t*stride bytes, n a multiple of 8 and count at least 1.")
	a = Load(Param("a"), GP64())
	b = Load(Param("b"), GP64())
	n = Load(Param("n"), GP64())
	stride = Load(Param("stride"), GP64())
	out = Load(Param("out"), GP64())
	count = Load(Param("count"), GP64())
	n32 = GP64()
	MOVQ(n, n32)
	ANDQ(I8(-32), n32)
	return
}

// axpysF16 writes axpysF16AVX2: for t < count, axpyF16Go(a[t], row t of x,
// y), by chunks of 64 elements of y held in registers over every t (each
// element gets the same operations in the same order as count calls of
// axpyF16AVX2), then a chunk of 8 at a time.
func axpysF16() {
	axpys("axpysF16AVX2", "axpysF16", []axpysChunk{{8, 8}, {4, 8}, {2, 8}, {1, 8}},
		"row t at x + t*stride bytes, n a multiple of 8 and count at least 1 (the",
		"attention's weighted sum of the values).")
}

// axpysChunk is a chunk of y an axpys kernel holds in regs registers of
// lanes floats (8: YMM, 16: ZMM) over every row.
type axpysChunk struct{ regs, lanes int }

// axpys writes the axpys kernel name (labels from label): the chunks of y
// in the order given, each as long as n has room for it; doc follows the
// first line of its documentation.
func axpys(name, label string, chunks []axpysChunk, doc ...string) {
	TEXT(name, NOSPLIT, "func(a *float32, x *uint16, stride int, y *float32, n, count int)")
	Pragma("noescape")
	Doc(append([]string{name + " does axpyF16Go(a[t], row t of x, y[:n]) for t = 0, 1, ..., count-1,"}, doc...)...)
	pa := Load(Param("a"), GP64())
	x := Load(Param("x"), GP64())
	stride := Load(Param("stride"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	ahead := aheadOf(stride)
	for i, c := range chunks {
		size, lbl, vec := chunkStart(label, chunks, i, n)
		acc := make([]VecVirtual, c.regs)
		for j := range acc {
			acc[j] = vec()
			VMOVUPS(Mem{Base: y, Disp: 4 * c.lanes * j}, acc[j])
		}
		xr, ar, cnt := GP64(), GP64(), GP64()
		MOVQ(x, xr)
		MOVQ(pa, ar)
		Load(Param("count"), cnt)
		Label(lbl + "t")
		av, t := vec(), vec()
		// the chunk's lines of the row rowsAhead rows on
		for o := 0; o < 2*size; o += 64 {
			PREFETCHT0(Mem{Base: xr, Index: ahead, Scale: 1, Disp: o})
		}
		VBROADCASTSS(Mem{Base: ar}, av)
		for j := range acc {
			VCVTPH2PS(Mem{Base: xr, Disp: 2 * c.lanes * j}, t)
			VMULPS(av, t, t)
			VADDPS(t, acc[j], acc[j])
		}
		ADDQ(U8(4), ar)
		ADDQ(stride, xr)
		DECQ(cnt)
		JNZ(LabelRef(lbl + "t"))
		for j := range acc {
			VMOVUPS(acc[j], Mem{Base: y, Disp: 4 * c.lanes * j})
		}
		chunkNext(lbl, size, x, y, n)
	}
	Label(label + "_done")
	VZEROUPPER()
	RET()
}

// toF16 writes toF16AVX2: VCVTPS2PH rounding to nearest even, which is
// planar.F32ToF16 (ggml's fp32-to-fp16) for every value but NaNs; a NaN
// is first made the quiet NaN of its sign with no payload, which both
// turn into sign|0x7e00.
func toF16() {
	TEXT("toF16AVX2", NOSPLIT, "func(dst *uint16, x *float32, n int)")
	Pragma("noescape")
	Doc("toF16AVX2 sets dst[i] = planar.F32ToF16(x[i]) for i < n, n a multiple of 8.")
	d := Load(Param("dst"), GP64())
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	i := GP64()
	loop("toF16_8", i, n, 8, func() { VMOVDQU(f16Of(elem(x, i, 4, 0)), elem(d, i, 2, 0)) })
	VZEROUPPER()
	RET()
}

// f16Of returns an xmm of the binary16 values of the eight float32 at m,
// as planar.F32ToF16 gives them (toF16).
func f16Of(m Op) VecVirtual {
	v, k, c := YMM(), YMM(), YMM()
	VMOVUPS(m, v)
	VCMPPS(U8(3), v, v, k) // unordered: NaN
	VANDPS(vSign, v, c)
	VORPS(vQNaN, c, c)
	VBLENDVPS(k, c, v, v)
	h := XMM()
	VCVTPS2PH(U8(0), v, h)
	return h
}

// roundF16 writes roundF16AVX2: toF16's conversion and back (VCVTPH2PS),
// in place.
func roundF16() {
	TEXT("roundF16AVX2", NOSPLIT, "func(x *float32, n int)")
	Pragma("noescape")
	Doc("roundF16AVX2 sets x[i] = F16ToF32(planar.F32ToF16(x[i])) for i < n, n a multiple of 8.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	i := GP64()
	loop("roundF16_8", i, n, 8, func() {
		v := YMM()
		VCVTPH2PS(f16Of(elem(x, i, 4, 0)), v)
		VMOVUPS(v, elem(x, i, 4, 0))
	})
	VZEROUPPER()
	RET()
}

// scaleMax writes scaleMaxAVX2: each element times s, in place, and the
// largest product. A NaN product makes the result NaN, as Go's max does;
// VMAXPS alone would drop it.
func scaleMax() {
	TEXT("scaleMaxAVX2", NOSPLIT, "func(x *float32, n int, s float32) float32")
	Pragma("noescape")
	Doc("scaleMaxAVX2 sets x[i] *= s for i < n and returns the largest of the new x[i],",
		"NaN if one is NaN (-Inf for n = 0; a zero largest may have either sign), n a",
		"multiple of 8.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	sv, m, nan := YMM(), YMM(), YMM()
	VBROADCASTSS(param("s"), sv)
	VMOVUPS(vNegInf, m)
	VXORPS(nan, nan, nan)
	i := GP64()
	loop("scaleMax_8", i, n, 8, func() {
		v, k := YMM(), YMM()
		VMULPS(elem(x, i, 4, 0), sv, v)
		VMOVUPS(v, elem(x, i, 4, 0))
		VCMPPS(U8(3), v, v, k) // unordered: NaN
		VORPS(k, nan, nan)
		VMAXPS(v, m, m)
	})
	r, h := m.AsX(), XMM()
	VEXTRACTF128(U8(1), m, h)
	VMAXPS(h, r, r)
	VMOVHLPS(r, r, h)
	VMAXPS(h, r, r)
	VMOVSHDUP(r, h)
	VMAXSS(h, r, r)
	VTESTPS(nan, nan)
	JZ(LabelRef("scaleMax_ret"))
	VMOVSS(vQNaN, r)
	Label("scaleMax_ret")
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// scale writes scaleAVX2 (each element times s, in place) or, with round,
// scaleRoundF16AVX2 (the product then roundF16's conversion and back).
func scale(name string, round bool) {
	TEXT(name, NOSPLIT, "func(x *float32, n int, s float32)")
	Pragma("noescape")
	if round {
		Doc(name + " sets x[i] = F16ToF32(planar.F32ToF16(x[i]*s)) for i < n, n a multiple of 8.")
	} else {
		Doc(name + " sets x[i] *= s for i < n, n a multiple of 8.")
	}
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	sv := YMM()
	VBROADCASTSS(param("s"), sv)
	i := GP64()
	loop(name+"_8", i, n, 8, func() {
		v := YMM()
		VMULPS(elem(x, i, 4, 0), sv, v)
		if round {
			VCVTPH2PS(f16Of(v), v)
		}
		VMOVUPS(v, elem(x, i, 4, 0))
	})
	VZEROUPPER()
	RET()
}

// dotsF16FMA writes dotsF16FMAAVX2: for each of count rows, dotF16FMAGo's
// sum of the first n (a multiple of 64) products (ggml_vec_dot_f16 of the
// AVX-512 build, flash attention's scores): four accumulators of 16 lanes,
// each as two YMM registers, fused multiply-adds in steps of 64, then
// (acc0 + acc2) + (acc1 + acc3), lanes l + l+8, l + l+4, and (0 + 2) +
// (1 + 3); each row's call prefetches the row rowsAhead rows on.
func dotsF16FMA() {
	TEXT("dotsF16FMAAVX2", NOSPLIT, "func(q *float32, k *uint16, n, stride int, out *float32, count int)")
	Pragma("noescape")
	Doc("dotsF16FMAAVX2 sets out[t] to dotF16FMAGo's sum of the first n products of q and row t of k",
		"(at k + t*stride bytes), n a multiple of 64 and count at least 1.")
	q := Load(Param("q"), GP64())
	k := Load(Param("k"), GP64())
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	out := Load(Param("out"), GP64())
	count := Load(Param("count"), GP64())
	ahead := aheadOf(stride)
	Label("dotsF16FMA_row")
	prefetchRow(k, ahead, n, "dotsF16FMA_pf")
	var acc [4][2]VecVirtual // acc[j][h]: lanes 8h..8h+7 of accumulator j
	for j := range acc {
		for h := range acc[j] {
			acc[j][h] = YMM()
			VXORPS(acc[j][h], acc[j][h], acc[j][h])
		}
	}
	i := GP64()
	loop("dotsF16FMA_64", i, n, 64, func() {
		for j := range acc {
			for h := range acc[j] {
				kv := YMM()
				VCVTPH2PS(elem(k, i, 2, 2*(16*j+8*h)), kv)
				VFMADD231PS(elem(q, i, 4, 4*(16*j+8*h)), kv, acc[j][h]) // acc += q*k, rounded once
			}
		}
	})
	var c [2]VecVirtual
	for h := range c {
		VADDPS(acc[2][h], acc[0][h], acc[0][h])
		VADDPS(acc[3][h], acc[1][h], acc[1][h])
		VADDPS(acc[1][h], acc[0][h], acc[0][h]) // c = (acc0 + acc2) + (acc1 + acc3)
		c[h] = acc[0][h]
	}
	VADDPS(c[1], c[0], c[0]) // t_l = c_l + c_l+8
	s, x := c[0].AsX(), XMM()
	VEXTRACTF128(U8(1), c[0], x)
	VADDPS(x, s, s) // u_l = t_l + t_l+4
	VMOVHLPS(s, s, x)
	VADDPS(x, s, s) // (u0 + u2, u1 + u3)
	VMOVSHDUP(s, x)
	VADDSS(x, s, s) // (u0 + u2) + (u1 + u3)
	VMOVSS(s, Mem{Base: out})
	rowsEnd("dotsF16FMA", out, k, stride, count)
}

// madF16 writes madF16AVX2: y[i] = f16(fma(f16 x[i], v, y[i])), the fused
// multiply-add rounded once to float32 and then to binary16 as toF16 does.
func madF16() {
	TEXT("madF16AVX2", NOSPLIT, "func(y *float32, x *uint16, vbits int, n int)")
	Pragma("noescape")
	Doc("madF16AVX2 does madF16Go(y[:n], x[:n], v), n a multiple of 8, v's bits in vbits (the",
		"kernel tables pass only pointers and ints; a pointer to v would put v on the heap).")
	y := Load(Param("y"), GP64())
	x := Load(Param("x"), GP64())
	vb := Load(Param("vbits"), GP64())
	n := Load(Param("n"), GP64())
	vx, vv := XMM(), YMM()
	VMOVQ(vb, vx)
	VBROADCASTSS(vx, vv)
	i := GP64()
	loop("madF16_8", i, n, 8, func() {
		a := YMM()
		VCVTPH2PS(elem(x, i, 2, 0), a)
		VFMADD213PS(elem(y, i, 4, 0), vv, a) // a = x*v + y, rounded once
		VCVTPH2PS(f16Of(a), a)
		VMOVUPS(a, elem(y, i, 4, 0))
	})
	VZEROUPPER()
	RET()
}

// axpyF16 writes axpyF16AVX2, 16 elements per step then one step of 8.
func axpyF16() {
	TEXT("axpyF16AVX2", NOSPLIT, "func(a float32, x *uint16, y *float32, n int)")
	Pragma("noescape")
	Doc("axpyF16AVX2 does axpyF16Go(a, x[:n], y[:n]), n a multiple of 8.")
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	av := YMM()
	VBROADCASTSS(param("a"), av)
	n16 := GP64()
	MOVQ(n, n16)
	ANDQ(I8(-16), n16)
	i := GP64()
	step := func(disp int) {
		t := YMM()
		VCVTPH2PS(elem(x, i, 2, 2*disp), t)
		VMULPS(av, t, t)
		VADDPS(elem(y, i, 4, 4*disp), t, t)
		VMOVUPS(t, elem(y, i, 4, 4*disp))
	}
	loop("axpyF16_16", i, n16, 16, func() {
		step(0)
		step(8)
	})
	CMPQ(n, i)
	JE(LabelRef("axpyF16_done"))
	step(0)
	Label("axpyF16_done")
	VZEROUPPER()
	RET()
}

// siluMul writes siluMulAVX2: h = x/(1+exp(-x)) * u, 8 at a time. (The
// gate is x, not g: g names a register in Go assembly.)
func siluMul() {
	TEXT("siluMulAVX2", NOSPLIT, "func(h, x, u *float32, n int)")
	Pragma("noescape")
	Doc("siluMulAVX2 does siluMulGo(h[:n], x[:n], u[:n]), n a multiple of 8.")
	h := Load(Param("h"), GP64())
	g := Load(Param("x"), GP64())
	u := Load(Param("u"), GP64())
	n := Load(Param("n"), GP64())
	i := GP64()
	loop("siluMul", i, n, 8, func() {
		gv, x := YMM(), YMM()
		VMOVUPS(elem(g, i, 4, 0), gv)
		VXORPS(x, x, x)
		VSUBPS(gv, x, x) // 0 - x, as ggml_v_silu
		e := exp8(x, "siluMul")
		VADDPS(vOne, e, e)
		VDIVPS(e, gv, gv)
		VMULPS(elem(u, i, 4, 0), gv, gv)
		VMOVUPS(gv, elem(h, i, 4, 0))
	})
	VZEROUPPER()
	RET()
}

// ropeNorm writes ropeNormAVX2: ropeNormGo's rotation of the interleaved
// pairs (x[2i], x[2i+1]) with (cs[2i], cs[2i+1]) = (cos, sin), four pairs a
// step: fma(x0, c, -(x1*s)) and fma(x1, c, x0*s), each product x*s rounded
// first and each fma rounded once (VFMADD, as Fmaf), as gcc compiles ggml's
// rotate_pairs.
func ropeNorm() {
	TEXT("ropeNormAVX2", NOSPLIT, "func(x, cs *float32, n int)")
	Pragma("noescape")
	Doc("ropeNormAVX2 does ropeNormGo(x[:n], cs[:n]), n a multiple of 8.")
	x := Load(Param("x"), GP64())
	cs := Load(Param("cs"), GP64())
	n := Load(Param("n"), GP64())
	se := YMM()
	VMOVUPS(vSignEven, se)
	i := GP64()
	loop("ropeNorm", i, n, 8, func() {
		v, w, c, s, p := YMM(), YMM(), YMM(), YMM(), YMM()
		VMOVUPS(elem(x, i, 4, 0), v)
		VMOVUPS(elem(cs, i, 4, 0), w)
		VMOVSLDUP(w, c)           // [c0 c0 c1 c1 ...]
		VMOVSHDUP(w, s)           // [s0 s0 s1 s1 ...]
		VPERMILPS(U8(0xb1), v, p) // [x1 x0 ...]
		VMULPS(s, p, p)           // [x1*s x0*s ...]
		VXORPS(se, p, p)          // [-(x1*s) x0*s ...]
		VFMADD231PS(c, v, p)      // [x0*c - x1*s, x1*c + x0*s ...]
		VMOVUPS(p, elem(x, i, 4, 0))
	})
	VZEROUPPER()
	RET()
}

// ropeNeox writes ropeNeoxAVX2: ropeNeoxGo's rotation of the pairs (x[i],
// x[i+h]) with (cs[2i], cs[2i+1]) = (cos, sin) for i < n, eight pairs a
// step: fma(x0, c, -(x1*s)) and fma(x0, s, x1*c), each product rounded
// first and each fma once.
func ropeNeox() {
	TEXT("ropeNeoxAVX2", NOSPLIT, "func(x, cs *float32, h, n int)")
	Pragma("noescape")
	Doc("ropeNeoxAVX2 rotates the pairs i < n of ropeNeoxGo(x[:2*h], cs[:2*h]), n a multiple",
		"of 8.")
	x := Load(Param("x"), GP64())
	cs := Load(Param("cs"), GP64())
	h := Load(Param("h"), GP64())
	n := Load(Param("n"), GP64())
	x1 := GP64()
	LEAQ(Mem{Base: x, Index: h, Scale: 4}, x1)
	i := GP64()
	loop("ropeNeox", i, n, 8, func() {
		a, b, c, s := YMM(), YMM(), YMM(), YMM()
		VMOVUPS(Mem{Base: cs, Index: i, Scale: 8}, a)           // [c0 s0 c1 s1 c2 s2 c3 s3]
		VMOVUPS(Mem{Base: cs, Index: i, Scale: 8, Disp: 32}, b) // [c4 s4 ... c7 s7]
		VSHUFPS(U8(0x88), b, a, c)                              // [c0 c1 c4 c5 | c2 c3 c6 c7]
		VSHUFPS(U8(0xdd), b, a, s)                              // [s0 s1 s4 s5 | s2 s3 s6 s7]
		VPERMPD(U8(0xd8), c, c)                                 // [c0 .. c7]
		VPERMPD(U8(0xd8), s, s)
		v0, v1, t, u := YMM(), YMM(), YMM(), YMM()
		VMOVUPS(elem(x, i, 4, 0), v0)
		VMOVUPS(elem(x1, i, 4, 0), v1)
		VMULPS(s, v1, t)
		VXORPS(vSign, t, t)   // -(x1*s)
		VFMADD231PS(c, v0, t) // x0*c - x1*s
		VMULPS(c, v1, u)      // x1*c
		VFMADD231PS(s, v0, u) // x0*s + x1*c
		VMOVUPS(t, elem(x, i, 4, 0))
		VMOVUPS(u, elem(x1, i, 4, 0))
	})
	VZEROUPPER()
	RET()
}

// softmaxExp writes softmaxExpAVX2: x = exp(x - mx), 8 at a time, the 8
// values summed in float32 as ((e0+e4) + (e2+e6)) + ((e1+e5) + (e3+e7))
// (the hsum of ggml_vec_soft_max_f32), widened to float64 and added to the
// sum.
func softmaxExp() {
	TEXT("softmaxExpAVX2", NOSPLIT, "func(x *float32, n int, mx float32) float64")
	Pragma("noescape")
	Doc("softmaxExpAVX2 returns softmaxExpGo(x[:n], mx, 0), n a multiple of 8.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	mv := YMM()
	VBROADCASTSS(param("mx"), mv)
	sum := XMM()
	VXORPD(sum, sum, sum)
	i := GP64()
	loop("softmaxExp", i, n, 8, func() {
		v := YMM()
		VMOVUPS(elem(x, i, 4, 0), v)
		VSUBPS(mv, v, v)
		e := exp8(v, "softmaxExp")
		VMOVUPS(e, elem(x, i, 4, 0))
		t, h := XMM(), XMM()
		VEXTRACTF128(U8(1), e, t)
		VADDPS(e.AsX(), t, t) // t_j = e_j + e_{j+4}
		VMOVHLPS(t, t, h)     // h = (t2, t3, ...)
		VADDPS(h, t, t)       // (t0+t2, t1+t3, ...)
		VMOVSHDUP(t, h)       // h0 = t1+t3
		VADDSS(h, t, t)       // (t0+t2) + (t1+t3)
		VCVTSS2SD(t, t, t)
		VADDSD(t, sum, sum)
	})
	Store(sum, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// sumStream writes the streaming-read loop of SumStream: the 64-bit sum of
// n words (n a multiple of 64, 512 bytes a step) in four vector
// accumulators, prefetching 4 KiB ahead. It is as fast a read of memory
// as this machine does, the yardstick of the kernels' weight bandwidth.
func sumStream() {
	TEXT("sumStreamAVX2", NOSPLIT, "func(p *uint64, n int) uint64")
	Doc("sumStreamAVX2 returns the sum of the n words at p (n a multiple of 64), wrapping.")
	Pragma("noescape")
	p := Load(Param("p"), GP64())
	n := Load(Param("n"), GP64())
	var acc [4]VecVirtual
	for k := range acc {
		acc[k] = YMM()
		VPXOR(acc[k], acc[k], acc[k])
	}
	i := GP64()
	loop("sumStream", i, n, 64, func() {
		for o := 0; o < 512; o += 64 {
			PREFETCHT0(elem(p, i, 8, o+4096))
		}
		for o := 0; o < 16; o++ {
			VPADDQ(elem(p, i, 8, 32*o), acc[o%4], acc[o%4])
		}
	})
	VPADDQ(acc[1], acc[0], acc[0])
	VPADDQ(acc[3], acc[2], acc[2])
	VPADDQ(acc[2], acc[0], acc[0])
	h := XMM()
	VEXTRACTI128(U8(1), acc[0], h)
	VPADDQ(h, acc[0].AsX(), h)
	r := GP64()
	VMOVQ(h, r)
	t := GP64()
	VPEXTRQ(U8(1), h, t)
	ADDQ(t, r)
	VZEROUPPER()
	Store(r, ReturnIndex(0))
	RET()
}

// prefetchLines writes prefetchLinesAVX2: PREFETCHT0 of each 64-byte line
// of n bytes (n a multiple of 64), the pool's idle helpers' way of asking
// for the weights of the next matrix (prefetchAhead). A prefetch never faults,
// so it only has to name addresses of the mapping.
func prefetchLines() {
	TEXT("prefetchLinesAVX2", NOSPLIT, "func(p *byte, n int)")
	Doc("prefetchLinesAVX2 prefetches the n bytes at p (n a multiple of 64) into the caches.")
	Pragma("noescape")
	p := Load(Param("p"), GP64())
	n := Load(Param("n"), GP64())
	i := GP64()
	loop("prefetchLines", i, n, 64, func() {
		PREFETCHT0(Mem{Base: p, Index: i, Scale: 1})
	})
	RET()
}
