//go:build !amd64 || noasm || !gc

package cpu

// haveAVX2 is false without the assembly kernels (another architecture, the
// noasm build tag, or a compiler other than gc): only the scalar kernels
// run, and the stubs below are never called.
const haveAVX2 = false

// haveAVX512 is false for the same reasons.
const haveAVX512 = false

func noAsm() { panic("cpu: assembly kernel called in a build without them") }

func q4_0RowsAVX2(codes, scales *byte, cstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q5_0RowsAVX2(codes, high, scales *byte, cstride, hstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q8_0RowsAVX2(codes, scales *byte, cstride, sstride int, a *int8, d *float32, np int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q4_KRowsAVX2(codes, sm, dm *byte, cstride, mstride, dstride int, a *int8, d *float32, bp *int16, nsb int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q5_KRowsAVX2(codes, high, sm, dm *byte, cstride, hstride, mstride, dstride int, a *int8, d *float32, bp *int16, nsb int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q6_KRowsAVX2(codes, scales, dp *byte, cstride, sstride, dstride int, a *int8, d *float32, nsb int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func quantQ8_0AVX2(x *float32, q *int8, d *float32, s *int32, nb int) { noAsm() }

func quantQ8_KAVX2(x *float32, q *int8, d *float32, bsums *int32, nb int) { noAsm() }

func permute64AVX2(dst, src *int8, n, dstride int) { noAsm() }

func q4_0RowsAVX512(codes, scales *byte, cstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q4_0RowsTallAVX512(codes, scales *byte, cstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q8_0RowsAVX512(codes, scales *byte, cstride, sstride int, a *int8, d *float32, np int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q4_KRowsAVX512(codes, sm, dm *byte, cstride, mstride, dstride int, a *int8, d *float32, bp *int16, nsb int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q6_KRowsAVX512(codes, scales, dp *byte, cstride, sstride, dstride int, a *int8, d *float32, nsb int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q5_0RowsAVX512(codes, high, scales *byte, cstride, hstride, sstride int, a *int8, d *float32, s *int32, np int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func q5_KRowsAVX512(codes, high, sm, dm *byte, cstride, hstride, mstride, dstride int, a *int8, d *float32, bp *int16, nsb int, y *float32, rows, tiles, tstride int) {
	noAsm()
}

func gemmI8AVX512(w *byte, sc *float32, a *int8, astride int, gd *int32, o *float32, ostride, nb, np, rows, toks, add int) {
	noAsm()
}

func gemmPackQ4_0AVX512(codes, scales *byte, cstride, sstride int, w *byte, sc *float32, np, tiles, tstride int) {
	noAsm()
}

func gemmPackQ8_0AVX512(codes, scales *byte, cstride, sstride int, w *byte, sc *float32, np, tiles, tstride int) {
	noAsm()
}

func gemmPrefetchAVX512(p *byte, n, tiles, tstride int) { noAsm() }

func gemmPackHighAVX512(high *byte, hstride int, w *byte, np, tiles, tstride int) { noAsm() }

func gemmQ4KAVX512(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, rows, toks, add int) {
	noAsm()
}

func gemmQ6KAVX512(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, rows, toks, add int) {
	noAsm()
}

func gemmCodesQ4AVX512(codes *byte, cstride int, w *byte, np, tiles, tstride int) { noAsm() }

func gemmCodesQ8AVX512(codes *byte, cstride int, w *byte, np, tiles, tstride int) { noAsm() }

func gemmScalesQ4KAVX512(sm, dm *byte, mstride, dstride int, sc *byte, nsbt, tiles, tstride int) {
	noAsm()
}

func gemmScalesQ6KAVX512(sm, dm *byte, mstride, dstride int, sc *byte, nsbt, tiles, tstride int) {
	noAsm()
}

func gemm2AVX2(w *byte, sc *float32, a *int8, astride int, gd *int32, o *float32, ostride, nb, np, toks, add int) {
	noAsm()
}

func gemm2Q8AVX2(w *byte, sc *float32, a *int8, astride int, gd *int32, o *float32, ostride, nb, np, toks, add int) {
	noAsm()
}

func gemmPackQ4_0AVX2(codes, scales *byte, cstride, sstride int, w *byte, sc *float32, np, tiles, tstride int) {
	noAsm()
}

func gemmPackQ8_0AVX2(codes, scales *byte, cstride, sstride int, w *byte, sc *float32, np, tiles, tstride int) {
	noAsm()
}

func gemmPackHighAVX2(high *byte, hstride int, w *byte, np, tiles, tstride int) { noAsm() }

func gemmPrefetchAVX2(p *byte, n, tiles, tstride int) { noAsm() }

func gemmQ4K2AVX2(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, toks, add int) {
	noAsm()
}

func gemmQ6K2AVX2(w, sc *byte, a *int8, astride int, gd *int32, o *float32, ostride, nsb, nsbt, toks, add int) {
	noAsm()
}

func gemmCodesQ4AVX2(codes *byte, cstride int, w *byte, np, tiles, tstride int) { noAsm() }

func gemmCodesQ8AVX2(codes *byte, cstride int, w *byte, np, tiles, tstride int) { noAsm() }

func gemmScalesQ4KAVX2(sm, dm *byte, mstride, dstride int, sc *byte, nsbt, tiles, tstride int) {
	noAsm()
}

func gemmScalesQ6KAVX2(sm, dm *byte, mstride, dstride int, sc *byte, nsbt, tiles, tstride int) {
	noAsm()
}
