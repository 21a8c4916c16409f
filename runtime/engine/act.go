package engine

import (
	"math"
	"sync"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// GELU as ggml's CPU backend computes it (ggml-org/llama.cpp @ 0253fb21,
// ggml/src/ggml-cpu/vec.h: GGML_GELU_FP16 is defined, so
// ggml_vec_geglu_f32 looks the activation up in a table of f16 values,
// ggml_table_gelu_f16, filled by ggml-cpu.c from ggml_gelu_f32 at every
// f16 input):
//
//	gelu_f32(x) = 0.5f*x*(1.0f + tanhf(SQRT_2_OVER_PI*x*(1.0f + GELU_COEF_A*x*x)))
//	geglu(x, g) = 0                       x <= -10
//	              x * g                   x >= 10
//	              f16(gelu_f32(f16(x)))*g otherwise
const (
	geluCoefA       = float32(0.044715)
	geluSqrt2OverPi = float32(0.79788456080286535587989211986876)
)

// geluF32 is ggml_gelu_f32 in float32 arithmetic; tanhf is computed in
// float64 and rounded (glibc's tanhf is within an ulp; the table rounds
// the result to f16 anyway). gcc contracts 1 + A*x*x into one fma.
func geluF32(x float32) float32 {
	inner := geluSqrt2OverPi * x * cpu.Fmaf(geluCoefA*x, x, 1)
	return 0.5 * x * (1 + tanhf(inner))
}

var (
	geluOnce  sync.Once
	geluTable []float32 // [1<<16] f16(gelu(f16 input)) as float32, by f16 bits
)

func geluTab() []float32 {
	geluOnce.Do(func() {
		t := make([]float32, 1<<16)
		for i := range t {
			t[i] = cpu.F16ToF32(planar.F32ToF16(geluF32(cpu.F16ToF32(uint16(i)))))
		}
		geluTable = t
	})
	return geluTable
}

// gegluRow writes h[i] = gelu(g[i]) * u[i] for i < len(h), as
// ggml_vec_geglu_f32 with its f16 table (see above).
func gegluRow(h, g, u []float32) {
	tab := geluTab()
	g, u = g[:len(h)], u[:len(h)]
	for i, x := range g {
		switch {
		case x <= -10:
			h[i] = 0
		case x >= 10:
			h[i] = x * u[i]
		default:
			h[i] = tab[planar.F32ToF16(x)] * u[i]
		}
	}
}

// expf is exp in float64, rounded to float32 (glibc's expf is correctly
// rounded in all but rare cases).
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// tanhf is tanh in float64, rounded to float32.
func tanhf(x float32) float32 { return float32(math.Tanh(float64(x))) }

// softcap replaces each x by c*tanhf(x*(1/c)), as llama.cpp's soft-capping
// (ggml_scale by 1/c, ggml_tanh, ggml_scale by c).
func softcap(x []float32, c float32) {
	inv := 1 / c
	for i, v := range x {
		x[i] = tanhf(v*inv) * c
	}
}

// scale multiplies x by a (ggml_scale).
func scale(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}
