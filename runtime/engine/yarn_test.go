package engine

import (
	"math"
	"testing"
)

// The YaRN reference: llama.cpp's code transliterated line by line
// (ggml-org/llama.cpp @ 0049e3cb202d8a8cebcfdbb137059e7e46627171,
// ggml/src/ggml.c ggml_rope_yarn_corr_dim(s); ggml/src/ggml-cpu/ops.cpp
// rope_yarn_ramp, rope_yarn, ggml_rope_cache_init), float32 throughout,
// with cosf/sinf/logf as float64 rounded to float32.

func ggmlRopeYarnCorrDim(nDims, nCtxOrig int, nRot, base float32) float32 {
	return float32(nDims) * logf(float32(nCtxOrig)/(nRot*2*float32(math.Pi))) / (2 * logf(base))
}

func ggmlRopeYarnCorrDims(nDims, nCtxOrig int, freqBase, betaFast, betaSlow float32) [2]float32 {
	start := float32(math.Floor(float64(ggmlRopeYarnCorrDim(nDims, nCtxOrig, betaFast, freqBase))))
	end := float32(math.Ceil(float64(ggmlRopeYarnCorrDim(nDims, nCtxOrig, betaSlow, freqBase))))
	return [2]float32{max(0, start), min(float32(nDims-1), end)}
}

func ropeYarnRamp(low, high float32, i0 int) float32 {
	y := (float32(i0/2) - low) / max(0.001, high-low)
	return 1 - min(1, max(0, y))
}

func ropeYarn(thetaExtrap, freqScale float32, corrDims [2]float32, i0 int, extFactor, mscale float32) (float32, float32) {
	thetaInterp := freqScale * thetaExtrap
	theta := thetaInterp
	if extFactor != 0 {
		rampMix := ropeYarnRamp(corrDims[0], corrDims[1], i0) * extFactor
		theta = thetaInterp*(1-rampMix) + thetaExtrap*rampMix
		mscale *= 1 + 0.1*logf(1/freqScale)
	}
	return cosf(theta) * mscale, sinf(theta) * mscale
}

func ggmlRopeCacheInit(thetaBase, freqScale float32, freqFactors []float32, corrDims [2]float32, ne0 int, extFactor, mscale float32, thetaScale float32) []float32 {
	cache := make([]float32, ne0)
	theta := thetaBase
	for i0 := 0; i0 < ne0; i0 += 2 {
		ff := float32(1)
		if freqFactors != nil {
			ff = freqFactors[i0/2]
		}
		cache[i0], cache[i0+1] = ropeYarn(theta/ff, freqScale, corrDims, i0, extFactor, mscale)
		theta *= thetaScale
	}
	return cache
}

func logf(x float32) float32 { return float32(math.Log(float64(x))) }

// cosf and sinf are glibc's, as ggml calls them (sincosf.go).

// TestYarnAgainstLlamaCpp compares the engine's rope cache with the
// transliteration above for the long-context settings of Qwen2.5 and Qwen3
// (factor 4 over 32768 positions) and an odd one, at positions up to 128 Ki.
func TestYarnAgainstLlamaCpp(t *testing.T) {
	cases := []struct {
		dims, orig int
		base       float32
		factor     float64
	}{
		{128, 32768, 1e6, 4},   // Qwen2.5-7B-Instruct, Qwen3 with YaRN
		{64, 32768, 1e6, 4},    // Qwen2.5-0.5B's head dim
		{96, 4096, 10000, 2.5}, // odd
	}
	for _, c := range cases {
		freqScale := float32(1 / c.factor)
		thetaScale := float32(math.Pow(float64(c.base), float64(float32(-2)/float32(c.dims))))
		y := newYarn(c.dims, c.orig, c.base, freqScale)
		corr := ggmlRopeYarnCorrDims(c.dims, c.orig, c.base, 32, 1)
		if y.lo != corr[0] || y.hi != corr[1] {
			t.Errorf("%+v: correction dims [%g %g], llama.cpp's [%g %g]", c, y.lo, y.hi, corr[0], corr[1])
		}
		got := make([]float32, c.dims)
		for _, pos := range []int{0, 1, 7, 4095, 32767, 100000, 131071} {
			ropeCache(got, pos, thetaScale, freqScale, nil, y)
			want := ggmlRopeCacheInit(float32(pos), freqScale, nil, corr, c.dims, 1, 1, thetaScale)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%+v pos %d: cs[%d] = %g, llama.cpp %g", c, pos, i, got[i], want[i])
				}
			}
		}
	}
	// The correction range worked by hand for Qwen2.5 (128 dims, 32768
	// positions, base 1e6): 128*ln(32768/(32*2pi))/(2 ln 1e6) = 23.6 and
	// 128*ln(32768/(2pi))/(2 ln 1e6) = 39.6, so pairs [23, 40].
	if y := newYarn(128, 32768, 1e6, 0.25); y.lo != 23 || y.hi != 40 || math.Abs(float64(y.mscale)-(1+0.1*math.Log(4))) > 1e-6 {
		t.Errorf("Qwen2.5 YaRN: %+v, want lo 23, hi 40, mscale 1.1386", y)
	}
	// Without YaRN the cache is plain rope with linear scaling.
	got := make([]float32, 8)
	ropeCache(got, 5, 0.5, 0.25, nil, noYarn)
	want := ggmlRopeCacheInit(5, 0.25, nil, [2]float32{}, 8, 0, 1, 0.5)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("no yarn: cs[%d] = %g, want %g", i, got[i], want[i])
		}
	}
}

// TestYarnModel runs a qwen2 model with YaRN scaling: it loads, its
// logits differ from the unscaled model's and stay finite.
func TestYarnModel(t *testing.T) {
	s := newSynth(t, "qwen2", 11, 4)
	p := s.p
	p.RopeScaling, p.RopeFactor, p.RopeOrigCtx = "yarn", 4, 64
	a, err := New(p, s.w, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(s.p, s.w, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	toks := []int32{1, 2, 3, 4, 5, 6}
	la, err := a.NewState(16).Prefill(toks)
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := b.NewState(16).Prefill(toks)
	diff := 0.0
	for i := range la {
		if math.IsNaN(float64(la[i])) || math.IsInf(float64(la[i]), 0) {
			t.Fatalf("logit %d = %g", i, la[i])
		}
		diff = max(diff, math.Abs(float64(la[i]-lb[i])))
	}
	if diff == 0 {
		t.Error("YaRN changed no logit")
	}
}
