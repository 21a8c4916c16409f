package cpu

import (
	"math"

	"github.com/xdna-go/xdna/planar"
)

// Activation quantisation, as llama.cpp's CPU backend does it before every
// quantised matrix product (ggml-cpu type_traits_cpu[t].vec_dot_type):
//
//   - Q4_0, Q5_0, Q8_0 weights: activations as Q8_0, per block of 32:
//     d = amax/127 stored as f16, q = round-half-even(x * 127/amax). This is the
//     AVX2 quantize_row_q8_0 of ggml-cpu/arch/x86/quants.c (the scalar
//     reference uses roundf; the two differ only on exact ties).
//   - Q4_K, Q5_K, Q6_K weights: activations as Q8_K, per block of 256:
//     iscale = -127/max (max: the element of largest magnitude, with its
//     sign), q = min(127, nearest_int(iscale*x)), d = 1/iscale (f32), and the
//     sums of q per 16 (bsums) for the mins (quantize_row_q8_K_ref).
//   - F16 and BF16 weights: activations rounded to f16 / bf16.
//   - F32 weights: activations as they are.
//
// Upstream: ggml-org/llama.cpp, ggml/src/ggml-quants.c
// (quantize_row_q8_K_ref, nearest_int), ggml/src/ggml-cpu/arch/x86/quants.c
// (quantize_row_q8_0) and ggml/src/ggml-cpu/ggml-cpu.c (type_traits_cpu).
// The engine's golden tests reproduce llama.cpp's logits to ~1e-5 with
// these rules, which is the check that they are the ones llama.cpp runs.

// scratch holds the activations of one call, quantised for one weight format.
type scratch struct {
	q []int8    // [B][K] codes
	d []float32 // [B][K/32] (Q8_0) or [B][K/256] (Q8_K) scales
	s []int32   // [B][K/32] block sums (Q8_0) or [B][K/16] bsums (Q8_K)
	f []float32 // [B][K] rounded floats (F16, BF16)
	p []int64   // [ceil(B/3)][K] codes of token triples packed by pack3

	// The activations as the vector kernels read them (prepareVec): views
	// of the arrays above or of the buffers below.
	xa  []int8      // codes
	xd  []float32   // scales
	xs  []int32     // code sums per 32 (Q8_0 activations)
	xbp []int16     // sums of pairs of bsums (Q8_K activations)
	vq  []int8      // the permuted codes (nibble formats)
	qt  quantTask   // prepare's job
	gd  []int32     // the GEMM's scales and offset sums (gemmPrepare)
	gp  []gemmPanel // per worker: the GEMM's panel
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// actKind is the activation format a weight type pairs with: the format's
// property (planar.Format.Act).
type actKind = planar.Act

const (
	actF32  = planar.ActF32
	actF16  = planar.ActF16
	actBF16 = planar.ActBF16
	actQ8_0 = planar.ActQ8_0
	actQ8_K = planar.ActQ8_K
)

func kindOf(t planar.Type) actKind { return planar.ActOf(t) }

// prepare quantises the b rows of x ([b][k]) for weights of type t; with a
// kernel set ks (not nil) it uses its quantiser, which gives the same bits
// for finite activations. The quantised formats' blocks are shared out
// over pool (nil: the caller's goroutine alone), each block quantised on
// its own, so the bits do not depend on the pool.
func (s *scratch) prepare(ks *kernels, t planar.Type, x []float32, b, k int, pool *Pool) {
	switch kindOf(t) {
	case actQ8_0, actQ8_K:
		bs, ss := 32, 32 // elements per scale, per sum
		if kindOf(t) == actQ8_K {
			bs, ss = 256, 16
		}
		s.q = grow(s.q, b*k)
		s.d = grow(s.d, b*k/bs)
		s.s = grow(s.s, b*k/ss)
		q := &s.qt
		*q = quantTask{s: s, ks: ks, x: x, bs: bs}
		defer func() { q.x = nil }()
		nb := b * k / bs
		if pool == nil || nb*bs < 64<<10 {
			q.Run(0, 0, nb)
			return
		}
		pool.run(nb, (16<<10)/bs, q)
		return
	case actF16:
		s.f = grow(s.f, b*k)
		for i, v := range x[:b*k] {
			s.f[i] = planar.F16ToF32(planar.F32ToF16(v))
		}
	case actBF16:
		s.f = grow(s.f, b*k)
		for i, v := range x[:b*k] {
			s.f[i] = planar.BF16ToF32(f32ToBF16(v))
		}
	}
}

// quantTask quantises blocks [lo, hi) of bs (32: Q8_0, 256: Q8_K)
// activations into the scratch.
type quantTask struct {
	s  *scratch
	ks *kernels
	x  []float32
	bs int
}

func (t *quantTask) Run(w, lo, hi int) {
	s, x := t.s, t.x
	if t.bs == 32 {
		if t.ks != nil && hi > lo {
			xs := x[32*lo : 32*hi]
			t.ks.quantQ8_0(&xs[0], &s.q[32*lo : 32*hi][0], &s.d[lo:hi][0], &s.s[lo:hi][0], hi-lo)
			return
		}
		for i := lo; i < hi; i++ {
			quantQ8_0(x[32*i:32*i+32], s.q[32*i:32*i+32], &s.d[i], &s.s[i])
		}
		return
	}
	if t.ks != nil && hi > lo {
		xs := x[256*lo : 256*hi]
		t.ks.quantQ8_K(&xs[0], &s.q[256*lo : 256*hi][0], &s.d[lo:hi][0], &s.s[16*lo : 16*hi][0], hi-lo)
		return
	}
	for i := lo; i < hi; i++ {
		quantQ8_K(x[256*i:256*i+256], s.q[256*i:256*i+256], &s.d[i], s.s[16*i:16*i+16])
	}
}

// pack3 packs the codes of the b tokens (s.q, [b][k]) by triples: element
// k of triple g is q[3g][k] + q[3g+1][k]<<21 + q[3g+2][k]<<42, a missing
// token counting as 0 (see split3).
func (s *scratch) pack3(b, k int) {
	n := (b + 2) / 3
	s.p = grow(s.p, n*k)
	for g := 0; g < n; g++ {
		p := s.p[g*k : (g+1)*k]
		q0 := s.q[3*g*k : (3*g+1)*k]
		switch {
		case 3*g+2 < b:
			q1, q2 := s.q[(3*g+1)*k:(3*g+2)*k], s.q[(3*g+2)*k:(3*g+3)*k]
			for i := range p {
				p[i] = int64(q0[i]) + int64(q1[i])<<21 + int64(q2[i])<<42
			}
		case 3*g+1 < b:
			q1 := s.q[(3*g+1)*k : (3*g+2)*k]
			for i := range p {
				p[i] = int64(q0[i]) + int64(q1[i])<<21
			}
		default:
			for i := range p {
				p[i] = int64(q0[i])
			}
		}
	}
}

// nearestInt rounds f to the nearest integer, ties to even, for |f| < 2^22,
// as ggml's nearest_int (the float adds 1.5*2^23 and reads the mantissa).
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// quantQ8_0 quantises one block of 32 activations as Q8_0.
func quantQ8_0(x []float32, q []int8, d *float32, sum *int32) {
	x, q = x[:32], q[:32]
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	*d = planar.F16ToF32(planar.F32ToF16(amax / 127))
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	var s int32
	for i, v := range x {
		r := nearestInt(v * id)
		q[i] = int8(r)
		s += r
	}
	*sum = s
}

// quantQ8_K quantises one block of 256 activations as Q8_K.
func quantQ8_K(x []float32, q []int8, d *float32, bsums []int32) {
	x, q, bsums = x[:256], q[:256], bsums[:16]
	var amax, vmax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax == 0 {
		*d = 0
		clear(q)
		clear(bsums)
		return
	}
	iscale := -127 / vmax
	for i, v := range x {
		q[i] = int8(min(127, nearestInt(iscale*v)))
	}
	for j := range bsums {
		var s int32
		for _, v := range q[16*j : 16*j+16] {
			s += int32(v)
		}
		bsums[j] = s
	}
	*d = 1 / iscale
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// f32ToBF16 rounds f to bfloat16, ties to even, NaNs made quiet, as ggml's
// ggml_compute_fp32_to_bf16.
func f32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16 | 64)
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}
