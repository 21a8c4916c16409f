//go:build !amd64 || noasm || !gc

package cpu

// The stubs of the AVX2 element-wise kernels (vec_amd64.s) in builds
// without them, where haveAVX2 is false and vecops.go never calls them.

func dotF16AVX2(a *float32, b *uint16, n int) float32 {
	noAsm()
	return 0
}

func axpyF16AVX2(a float32, x *uint16, y *float32, n int) { noAsm() }

func siluMulAVX2(h, x, u *float32, n int) { noAsm() }

func softmaxExpAVX2(x *float32, n int, mx float32) float64 {
	noAsm()
	return 0
}

func sumStreamAVX2(p *uint64, n int) uint64 {
	noAsm()
	return 0
}

func dotsF16AVX2(a *float32, b *uint16, n, stride int, out *float32, count int) { noAsm() }

func axpysF16AVX2(a *float32, x *uint16, stride int, y *float32, n, count int) { noAsm() }

func toF16AVX2(dst *uint16, x *float32, n int) { noAsm() }

func roundF16AVX2(x *float32, n int) { noAsm() }

func prefetchLinesAVX2(p *byte, n int) { noAsm() }

func scaleMaxAVX2(x *float32, n int, s float32) float32 {
	noAsm()
	return 0
}

func scaleAVX2(x *float32, n int, s float32) { noAsm() }

func scaleRoundF16AVX2(x *float32, n int, s float32) { noAsm() }

func dotsF16AVX512(a *float32, b *uint16, n, stride int, out *float32, count int) { noAsm() }

func axpysF16AVX512(a *float32, x *uint16, stride int, y *float32, n, count int) { noAsm() }

func dotsF16FMAAVX2(q *float32, k *uint16, n, stride int, out *float32, count int) { noAsm() }

func madF16AVX2(y *float32, x *uint16, vbits int, n int) { noAsm() }

func dotsF16H2AVX2(a *float32, b *uint16, n, stride int, out *float32, outStride, count int) {
	noAsm()
}

func dotsF16H3AVX2(a *float32, b *uint16, n, stride int, out *float32, outStride, count int) {
	noAsm()
}

func axpysF16H2AVX2(p *float32, pStride int, x *uint16, stride int, y *float32, n, count int) {
	noAsm()
}

func axpysF16H3AVX2(p *float32, pStride int, x *uint16, stride int, y *float32, n, count int) {
	noAsm()
}

func dotsF16H2AVX512(a *float32, b *uint16, n, stride int, out *float32, outStride, count int) {
	noAsm()
}

func dotsF16H3AVX512(a *float32, b *uint16, n, stride int, out *float32, outStride, count int) {
	noAsm()
}

func dotsF16H4AVX512(a *float32, b *uint16, n, stride int, out *float32, outStride, count int) {
	noAsm()
}

func axpysF16H2AVX512(p *float32, pStride int, x *uint16, stride int, y *float32, n, count int) {
	noAsm()
}

func axpysF16H3AVX512(p *float32, pStride int, x *uint16, stride int, y *float32, n, count int) {
	noAsm()
}

func axpysF16H4AVX512(p *float32, pStride int, x *uint16, stride int, y *float32, n, count int) {
	noAsm()
}

func ropeNormAVX2(x, cs *float32, n int) { noAsm() }

func ropeNeoxAVX2(x, cs *float32, h, n int) { noAsm() }
