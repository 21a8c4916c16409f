//go:build !amd64 || noasm || !gc

package planar

// useAVX2 is false without the assembly kernels (another architecture, the
// noasm build tag, or a compiler other than gc): only the pure-Go kernels
// run, and the stubs below are never called.
var useAVX2 = false

func q4BlocksAVX2(codes, scales, src *byte, rows, nb, stride, bstride, qoff int) {
	panic("planar: assembly kernel called in a build without them")
}

func nibbles128AVX2(codes, src *byte, rows, nb, stride, bstride int) {
	panic("planar: assembly kernel called in a build without them")
}
