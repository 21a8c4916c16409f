package engine

import (
	"math"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// The element-wise operations of the forward pass, each in ggml's float32
// arithmetic (ggml-org/llama.cpp @ 0049e3cb202d8a8cebcfdbb137059e7e46627171,
// ggml/src/ggml-cpu/ops.cpp: ggml_compute_forward_rms_norm_f32,
// ggml_rope_cache_init, rope_yarn, rotate_pairs, soft_max; vec.cpp:
// ggml_vec_soft_max_f32, ggml_vec_swiglu_f32), as llama.cpp's x86-64 build
// computes it. Go has no float32 libm: sqrtf is computed in float64 and
// rounded (exactly sqrtf), cosf and sinf are glibc's algorithm (sincosf.go),
// bit for bit. The
// exponentials of softmax and silu are ggml's own two (cpu.SoftmaxExp,
// cpu.SiluMul: ggml_v_expf on the multiples of 8 of a row, glibc's expf on
// the rest), and the rotations of rope fuse one product of each line as the
// gcc build does (ropeNorm): without those, stories260K-q8_0 on "One day, a
// big bear found a" came out up to 0.09 away from llama.cpp's logits.

// rmsNorm writes y = x * 1/sqrt(mean(x^2) + eps) * w, as
// ggml_compute_forward_rms_norm_f32 followed by the weight multiply: the
// squares in float32 summed in float64, the mean narrowed to float32, then
// scale = 1.0f/sqrtf(mean + eps).
func rmsNorm(y, x, w []float32, eps float32) {
	x = x[:len(w)]
	y = y[:len(w)]
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		y[i] = v * scale * w[i]
	}
}

// ropeCache fills cs with the cos/sin pairs of position pos for the
// rotation pairs i < len(cs)/2, as ggml_rope_cache_init and rope_yarn:
// theta starts at pos and is multiplied by thetaScale = base^(-2/n_dims)
// per pair (in float32, so the rounding accumulates as ggml's does) and
// divided by the pair's frequency factor (theta_extrap); theta_interp is
// that times freqScale. Without YaRN (y.ext == 0) the angle is theta_interp;
// with it, the pairs below the correction range keep theta_extrap, those
// above take theta_interp, with a linear ramp between, and cos and sin are
// multiplied by y.mscale:
//
//	ramp = 1 - clamp((i - y.lo) / max(0.001, y.hi - y.lo), 0, 1)
//	mix  = ramp * y.ext
//	t    = theta_interp*(1-mix) + theta_extrap*mix
//	cs[2i], cs[2i+1] = cosf(t)*y.mscale, sinf(t)*y.mscale
func ropeCache(cs []float32, pos int, thetaScale, freqScale float32, factors []float32, y yarn) {
	theta := float32(pos)
	for i := 0; i < len(cs)/2; i++ {
		ff := float32(1)
		if factors != nil {
			ff = factors[i]
		}
		extrap := theta / ff
		t := freqScale * extrap
		if y.ext != 0 {
			r := (float32(i) - y.lo) / max(0.001, y.hi-y.lo)
			mix := (1 - min(1, max(0, r))) * y.ext
			t = t*(1-mix) + extrap*mix
		}
		cs[2*i] = cosf(t) * y.mscale
		cs[2*i+1] = sinf(t) * y.mscale
		theta *= thetaScale
	}
}

// yarn holds the YaRN parameters of ropeCache: the correction range of
// pairs [lo, hi], the extrapolation mix ext (0: no YaRN) and the magnitude
// scale of cos and sin.
type yarn struct{ lo, hi, ext, mscale float32 }

// noYarn is plain rope.
var noYarn = yarn{mscale: 1}

// YaRN's defaults in llama.cpp (llama-cparams, llama-model.cpp): the
// extrapolation factor is 1 when the model's scaling type is yarn, the
// attention factor 1, beta_fast 32 and beta_slow 1 rotations.
const (
	yarnBetaFast = 32
	yarnBetaSlow = 1
)

// newYarn computes the YaRN parameters as ggml_rope_yarn_corr_dims and
// rope_yarn do: the pairs whose wavelength makes betaFast and betaSlow
// rotations over the original context bound the ramp, and the magnitude is
// 1 + 0.1*ln(1/freqScale).
func newYarn(nDims, nCtxOrig int, base, freqScale float32) yarn {
	corr := func(nRot float32) float32 {
		return float32(nDims) * float32(math.Log(float64(float32(nCtxOrig)/(nRot*2*math.Pi)))) / (2 * float32(math.Log(float64(base))))
	}
	lo := float32(math.Floor(float64(corr(yarnBetaFast))))
	hi := float32(math.Ceil(float64(corr(yarnBetaSlow))))
	return yarn{
		lo:     max(0, lo),
		hi:     min(float32(nDims-1), hi),
		ext:    1,
		mscale: 1 * (1 + 0.1*float32(math.Log(float64(1/freqScale)))),
	}
}

// ropeNorm rotates adjacent pairs (x[2i], x[2i+1]) of one head (llama's
// "normal" mode) for the pairs that cs covers, as gcc compiles ggml's
// rotate_pairs (cpu.RopeNorm says how).
func ropeNorm(x, cs []float32) { cpu.RopeNorm(x, cs) }

// ropeNeox rotates the pairs (x[i], x[i+n/2]) of one head, n = len(cs)
// rotated dimensions (GPT-NeoX mode: qwen2, qwen3, gemma, phi3), as gcc
// compiles ggml's rotate_pairs for it (cpu.RopeNeox).
func ropeNeox(x, cs []float32) { cpu.RopeNeox(x, cs) }

// softmax turns scores into probabilities in place, as ggml's soft_max:
// subtract the max, expf, sum in float64, multiply by float32(1/sum).
func softmax(x []float32) { softmaxFrom(x, cpu.ScaleMax(x, 1), false) }

// softmaxFrom is softmax of x whose largest value is mx; with round, each
// probability is then rounded to binary16 (the attention's with an f16
// cache), in the same pass.
func softmaxFrom(x []float32, mx float32, round bool) {
	inv := float32(1 / cpu.SoftmaxExp(x, mx))
	if round {
		cpu.ScaleRoundF16(x, inv)
	} else {
		cpu.Scale(x, inv)
	}
}

// dot returns the float32 dot product of a and b (len(a) <= len(b)).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		aa := (*[4]float32)(a[i:])
		bb := (*[4]float32)(b[i:])
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy adds a*x to y (len(x) <= len(y)).
func axpy(a float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += a * v
	}
}

// add adds x to y element-wise.
func add(y, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += x[i]
	}
}

// roundF16 rounds x to the nearest binary16 value (as a float32).
func roundF16(x float32) float32 { return cpu.F16ToF32(planar.F32ToF16(x)) }

// toF16 stores x as binary16 values (planar.F32ToF16's).
func toF16(dst []uint16, x []float32) { cpu.ToF16(dst, x) }
