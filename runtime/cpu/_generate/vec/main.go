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
// product then a separate sum (no FMA, which the Go code does not have),
// the same polynomial for exp, the same reduction tree for the dot
// product. So the results are bit-identical to the Go twins. The kernels
// take a number of elements that is a multiple of 8; vecops.go does the
// rest with the Go twins.
package main

import (
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
	siluMul()
	softmaxExp()
	sumStream()
	Generate()
}

// The constants of Expf, the same values as in vecops.go.
const (
	expLo  float32 = -104
	expHi  float32 = 89
	log2e  float32 = 0x1.715476p+0
	ln2Hi  float32 = 0x1.63p-1
	ln2Lo  float32 = -0x1.bd0106p-13
	expP0  float32 = 0x1.fffffcp-2
	expP1  float32 = 0x1.555492p-3
	expP2  float32 = 0x1.5558f2p-5
	expP3  float32 = 0x1.1239d4p-7
	expP4  float32 = 0x1.6a244cp-10
	signBt         = 0x80000000
)

// Constant vectors, each a value repeated in the 8 lanes.
var (
	vLo, vHi, vLog2e, vLn2Hi, vLn2Lo, vOne Mem
	vP                                     [5]Mem // expP0 .. expP4
	vBias                                  Mem    // int32 127, the float32 exponent bias
	vSign                                  Mem    // the float32 sign bit
)

// splat declares a table of 8 copies of the 32-bit word w.
func splat(name string, w uint32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(w))
	}
	return m
}

func constants() {
	f := func(name string, v float32) Mem { return splat(name, math.Float32bits(v)) }
	vLo = f("vecExpLo", expLo)
	vHi = f("vecExpHi", expHi)
	vLog2e = f("vecLog2e", log2e)
	vLn2Hi = f("vecLn2Hi", ln2Hi)
	vLn2Lo = f("vecLn2Lo", ln2Lo)
	vOne = f("vecOne", 1)
	for i, c := range []float32{expP0, expP1, expP2, expP3, expP4} {
		vP[i] = f("vecExpP"+string(rune('0'+i)), c)
	}
	vBias = splat("vecBias", 127)
	vSign = splat("vecSign", signBt)
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
// as expf in vecops.go does lane by lane: NaN gives x itself; otherwise x
// is clamped to [expLo, expHi], n = round(x*log2e) (to nearest even), r =
// (x - n*ln2Hi) - n*ln2Lo, p = (((P4*r + P3)*r + P2)*r + P1)*r + P0,
// y = (p*(r*r) + r) + 1, and the result is (y * 2^(n>>1)) * 2^(n-(n>>1)).
// x is left unchanged.
func exp8(x VecVirtual) VecVirtual {
	nan := YMM()
	VCMPPS(U8(3), x, x, nan) // unordered: x is NaN
	c := YMM()
	VMAXPS(vLo, x, c)
	VMINPS(vHi, c, c)
	n := YMM()
	VMULPS(vLog2e, c, n)
	VROUNDPS(U8(0), n, n)
	t, r := YMM(), YMM()
	VMULPS(vLn2Hi, n, t)
	VSUBPS(t, c, r)
	VMULPS(vLn2Lo, n, t)
	VSUBPS(t, r, r)
	p := YMM()
	VMULPS(vP[4], r, p)
	for i := 3; i >= 0; i-- {
		VADDPS(vP[i], p, p)
		if i > 0 {
			VMULPS(r, p, p)
		}
	}
	VMULPS(r, r, t)
	VMULPS(t, p, p)
	VADDPS(r, p, p)
	VADDPS(vOne, p, p)
	// The scale factors 2^k1 and 2^k2, k1 = n>>1 and k2 = n - k1, built in
	// the exponent bits; both are normal for n in [-150, 128].
	k2, k1 := n, YMM()
	VCVTPS2DQ(n, k2)
	VPSRAD(U8(1), k2, k1)
	VPSUBD(k1, k2, k2)
	VPADDD(vBias, k1, k1)
	VPSLLD(U8(23), k1, k1)
	VPADDD(vBias, k2, k2)
	VPSLLD(U8(23), k2, k2)
	VMULPS(k1, p, p)
	VMULPS(k2, p, p)
	VBLENDVPS(nan, x, p, p)
	return p
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
	var acc [4]VecVirtual
	for j := range acc {
		acc[j] = YMM()
		VXORPS(acc[j], acc[j], acc[j])
	}
	n32 := GP64()
	MOVQ(n, n32)
	ANDQ(I8(-32), n32)
	i := GP64()
	t := YMM()
	product := func(disp int) {
		VCVTPH2PS(elem(b, i, 2, 2*disp), t)
		VMULPS(elem(a, i, 4, 4*disp), t, t)
	}
	loop("dotF16_32", i, n32, 32, func() {
		for j := range acc {
			product(8 * j)
			VADDPS(t, acc[j], acc[j])
		}
	})
	// The last 0 to 3 chunks of 8 go to accumulators 0, 1, 2.
	for j := 0; j < 3; j++ {
		CMPQ(n, i)
		JE(LabelRef("dotF16_reduce"))
		product(0)
		VADDPS(t, acc[j], acc[j])
		ADDQ(U8(8), i)
	}
	Label("dotF16_reduce")
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
	Store(s, ReturnIndex(0))
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
		VXORPS(vSign, gv, x)
		e := exp8(x)
		VADDPS(vOne, e, e)
		VDIVPS(e, gv, gv)
		VMULPS(elem(u, i, 4, 0), gv, gv)
		VMOVUPS(gv, elem(h, i, 4, 0))
	})
	VZEROUPPER()
	RET()
}

// softmaxExp writes softmaxExpAVX2: x = exp(x - mx), 8 at a time, each
// value widened to float64 and added to the sum in index order.
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
	// add4 adds the 4 float64 lanes of d to sum, lane 0 first.
	add4 := func(d VecVirtual) {
		t := XMM()
		VADDSD(d.AsX(), sum, sum)
		VUNPCKHPD(d.AsX(), d.AsX(), t)
		VADDSD(t, sum, sum)
		VEXTRACTF128(U8(1), d, t)
		VADDSD(t, sum, sum)
		VUNPCKHPD(t, t, t)
		VADDSD(t, sum, sum)
	}
	loop("softmaxExp", i, n, 8, func() {
		v := YMM()
		VMOVUPS(elem(x, i, 4, 0), v)
		VSUBPS(mv, v, v)
		e := exp8(v)
		VMOVUPS(e, elem(x, i, 4, 0))
		d, hi := YMM(), XMM()
		VCVTPS2PD(e.AsX(), d)
		add4(d)
		VEXTRACTF128(U8(1), e, hi)
		VCVTPS2PD(hi, d)
		add4(d)
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
