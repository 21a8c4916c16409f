//go:build !noasm && gc

package planar

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 forms of the nibble shuffle (packrow_amd64.s)
// in packQ4_0, packQ5_0, packQ4_K and packQ5_K; x/sys/cpu reports AVX2 only
// when the OS saves the YMM state. Tests turn it off to run the pure-Go
// kernels, which stay the reference.
var useAVX2 = cpu.X86.HasAVX2

// q4BlocksAVX2 packs nb blocks of each of rows rows of Q4_0 or Q5_0: the
// block at src + r*stride + b*bstride has its 16-bit scale at offset 0,
// copied to scales[2(r*nb+b):], and its 16 code bytes (split layout) at
// offset qoff, written sequential to codes[16(r*nb+b):]. The caller checks
// every bound.
//
//go:noescape
func q4BlocksAVX2(codes, scales, src *byte, rows, nb, stride, bstride, qoff int)

// nibbles128AVX2 is nibbles128ToSeq on the 128 bytes at src + r*stride +
// b*bstride for r < rows, b < nb, written to codes[128(r*nb+b):]. The
// caller checks every bound.
//
//go:noescape
func nibbles128AVX2(codes, src *byte, rows, nb, stride, bstride int)
