package gemv

import "github.com/xdna-go/xdna/planar"

// ActKind is the activation format a weight type pairs with (the host
// quantises the activations into it, as llama.cpp's CPU backend does): the
// format's property, planar.Format.Act.
type ActKind = planar.Act

// The activation kinds the NPU kernels take.
const (
	ActF32  = planar.ActF32
	ActQ8_0 = planar.ActQ8_0
	ActQ8_K = planar.ActQ8_K
)

// ActKindOf returns the activation kind for weights of type t.
func ActKindOf(t planar.Type) ActKind { return planar.ActOf(t) }

// Record is the byte layout of one token's activations for K inputs: the
// planes of the kind, each on 64 bytes, the next token Stride bytes on.
//
//	Q8_0 kind: codes [K]int8 @0; d [K/32]f16 @Scales
//	Q8_K kind: codes [K]int8 @0; d [K/256]f32 @Scales; bsums [K/16]int16 @Sums
//	F32 kind:  values [K]f32 @0
type Record struct {
	Kind   ActKind
	K      int
	Scales int // offset of the scales plane (Q8_0: f16 per 32, Q8_K: f32 per 256)
	Sums   int // offset of the Q8_K bsums plane (int16 per 16)
	Stride int // bytes per token, a multiple of 64
}

// RecordOf returns the activation layout for weights of type t with K
// inputs (K a multiple of t's block size). One record of a K-tile is what
// one activation object of the design holds.
func RecordOf(t planar.Type, k int) Record {
	l := Record{Kind: ActKindOf(t), K: k}
	switch l.Kind {
	case ActQ8_0:
		l.Scales = align64(k)
		l.Stride = l.Scales + align64(2*(k/32))
	case ActQ8_K:
		l.Scales = align64(k)
		l.Sums = l.Scales + align64(4*(k/256))
		l.Stride = l.Sums + align64(2*(k/16))
	default:
		l.Stride = align64(4 * k)
	}
	return l
}
