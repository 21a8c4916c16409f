package npu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
)

// The activation stream (bo1 of a GEMV run).
//
// The host quantises the activations once per matmul, as llama.cpp's CPU
// backend does before every quantised product (and as package cpu does, so
// that the device and the CPU see the same integers):
//
//   - Q4_0, Q5_0, Q8_0 weights: Q8_0 per block of 32: d = f16(amax/127),
//     q = nearest_int(x*127/amax) (ggml-cpu x86 quantize_row_q8_0).
//   - Q4_K, Q5_K, Q6_K weights: Q8_K per block of 256: iscale = -127/max
//     (max signed, of largest magnitude), q = min(127, nearest_int(iscale*x)),
//     d = 1/iscale in f32, bsums = sums of q per 16 (quantize_row_q8_K_ref).
//   - F16 and BF16 weights: x rounded to f16 / bf16 and sent as f32.
//   - F32 weights: x as f32.
//
// Each token's activations are planes, each starting on 64 bytes, and the
// next token starts ActLayout.Stride bytes later:
//
//	Q8_0 kind: codes [K]int8 @0; d [K/32]f16 @Scales
//	Q8_K kind: codes [K]int8 @0; d [K/256]f32 @Scales; bsums [K/16]int16 @Sums
//	F32 kind:  values [K]f32 @0
//
// The kernel computes the Q8_0 block sums it needs itself (sum of the 32
// codes, exact in int32).

// ActKind is the activation format a weight type pairs with.
type ActKind = gemv.ActKind

// The activation kinds.
const (
	ActF32  = gemv.ActF32
	ActQ8_0 = gemv.ActQ8_0
	ActQ8_K = gemv.ActQ8_K
)

// ActKindOf returns the activation kind for weights of type t.
func ActKindOf(t planar.Type) ActKind { return gemv.ActKindOf(t) }

// ActLayout is the byte layout of one token's activations for K inputs
// (gemv.Record: one activation object of the design per token and K-tile).
type ActLayout = gemv.Record

func align64(n int) int { return (n + 63) &^ 63 }

// ActLayoutOf returns the activation layout for weights of type t with K
// inputs (K a multiple of t's block size).
func ActLayoutOf(t planar.Type, k int) ActLayout { return gemv.RecordOf(t, k) }

// PutActs quantises the b tokens of x ([b][K]) for weights of type t into
// dst, token i at dst[i*l.Stride:], where l = ActLayoutOf(t, K). Padding
// bytes are zeroed. It panics if x or dst is short.
func PutActs(t planar.Type, x []float32, b, k int, dst []byte) {
	l := ActLayoutOf(t, k)
	if len(x) < b*k || len(dst) < b*l.Stride {
		panic(fmt.Sprintf("npu: PutActs: %d tokens of %d into x of %d, dst of %d bytes (want %d)", b, k, len(x), len(dst), b*l.Stride))
	}
	for i := 0; i < b; i++ {
		xt := x[i*k : (i+1)*k]
		d := dst[i*l.Stride : (i+1)*l.Stride]
		clear(d)
		switch l.Kind {
		case ActQ8_0:
			for j := 0; j < k/32; j++ {
				s := quantQ8_0(xt[32*j:32*j+32], d[32*j:32*j+32])
				binary.LittleEndian.PutUint16(d[l.Scales+2*j:], s)
			}
		case ActQ8_K:
			for j := 0; j < k/256; j++ {
				var bs [16]int16
				s := quantQ8_K(xt[256*j:256*j+256], d[256*j:256*j+256], &bs)
				binary.LittleEndian.PutUint32(d[l.Scales+4*j:], math.Float32bits(s))
				for m, v := range bs {
					binary.LittleEndian.PutUint16(d[l.Sums+2*(16*j+m):], uint16(v))
				}
			}
		default:
			for j, v := range xt {
				switch t {
				case planar.F16:
					v = planar.F16ToF32(planar.F32ToF16(v))
				case planar.BF16:
					v = planar.BF16ToF32(f32ToBF16(v))
				}
				binary.LittleEndian.PutUint32(d[4*j:], math.Float32bits(v))
			}
		}
	}
}

// nearestInt rounds f to the nearest integer, ties to even, for |f| < 2^22,
// as ggml's nearest_int.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// quantQ8_0 quantises 32 activations to q (as int8 bytes) and returns the
// f16 bits of the block scale.
func quantQ8_0(x []float32, q []byte) uint16 {
	x, q = x[:32], q[:32]
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := planar.F32ToF16(amax / 127)
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for i, v := range x {
		q[i] = byte(int8(nearestInt(v * id)))
	}
	return d
}

// quantQ8_K quantises 256 activations to q and bsums and returns the f32
// block scale.
func quantQ8_K(x []float32, q []byte, bsums *[16]int16) float32 {
	x, q = x[:256], q[:256]
	var amax, vmax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax == 0 {
		clear(q)
		*bsums = [16]int16{}
		return 0
	}
	iscale := -127 / vmax
	for i, v := range x {
		q[i] = byte(int8(min(127, nearestInt(iscale*v))))
	}
	for j := range bsums {
		var s int16
		for _, v := range q[16*j : 16*j+16] {
			s += int16(int8(v))
		}
		bsums[j] = s
	}
	return 1 / iscale
}

// f32ToBF16 rounds f to bfloat16, ties to even, NaNs made quiet (ggml's
// ggml_compute_fp32_to_bf16).
func f32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16 | 64)
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}
