package engine

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// ggmlQ8_0MatMat returns a matMat that computes every product of m (all of
// whose matrices must be Q8_0 in the fixture GGUF model) with the arithmetic of
// ggml's x86 Q8_0 x Q8_0 kernels (llama.cpp 0253fb21, AVX2/AVX-512 build):
// ggml_vec_dot_q8_0_q8_0 for one token (arch/x86/quants.c) and
// llamafile's tinyBLAS_Q0_AVX for a batch (llamafile/sgemm.cpp), which do
// the same float operations. The activations are quantised per 32 as
// quantize_row_q8_0; per block, 8 lanes each take the exact int sum of 4
// consecutive products (VPDPBUSD / maddubs+madd), converted to float and
// fused-multiply-added with dw*da into the lane's accumulator; the 8 lanes
// are reduced as hsum_float_8: hi+lo, then (0+2)+(1+3).
//
// runtime/cpu's kernels instead add float(block sum)*(dw*da) block by block
// in order, which differs from this in the last bit or so of an output.
func ggmlQ8_0MatMat(t *testing.T, model string, m *Model) func(w *cpu.Matrix, x, y []float32, b int, pool *cpu.Pool) {
	t.Helper()
	g, _ := openModel(t, model)
	f, err := os.Open(g.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw := map[*cpu.Matrix][]byte{}
	for mat, name := range m.names {
		tt, ok := g.Tensor(name)
		if !ok || tt.Type != planar.Q8_0 {
			t.Fatalf("%s: tensor %s missing or not Q8_0", model, name)
		}
		buf := make([]byte, tt.Size)
		if err := g.ReadTensor(f, tt, buf); err != nil {
			t.Fatal(err)
		}
		raw[mat] = buf
	}
	return func(w *cpu.Matrix, x, y []float32, b int, _ *cpu.Pool) {
		data := raw[w]
		n, k := w.G.N, w.G.K
		nb := k / 32
		q := make([]int8, k)
		d := make([]float32, nb)
		for tk := 0; tk < b; tk++ {
			for i := 0; i < nb; i++ {
				ggmlQuantQ8_0(x[tk*k+32*i:tk*k+32*i+32], q[32*i:32*i+32], &d[i])
			}
			for r := 0; r < n; r++ {
				row := data[r*nb*34 : (r+1)*nb*34]
				var acc [8]float32
				for i := 0; i < nb; i++ {
					blk := row[34*i : 34*i+34]
					dd := cpu.F16ToF32(binary.LittleEndian.Uint16(blk)) * d[i]
					for l := range acc {
						var s int32
						for j := 0; j < 4; j++ {
							s += int32(int8(blk[2+4*l+j])) * int32(q[32*i+4*l+j])
						}
						acc[l] = cpu.Fmaf(dd, float32(s), acc[l])
					}
				}
				var h [4]float32
				for i := range h {
					h[i] = acc[i+4] + acc[i]
				}
				y[tk*n+r] = (h[0] + h[2]) + (h[1] + h[3])
			}
		}
	}
}

// ggmlQuantQ8_0 quantises 32 activations as ggml's quantize_row_q8_0 (x86):
// d = f16(amax/127), codes round-half-even(x * 127/amax).
func ggmlQuantQ8_0(x []float32, q []int8, d *float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	*d = cpu.F16ToF32(planar.F32ToF16(amax / 127))
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for i, v := range x {
		q[i] = int8(math.RoundToEven(float64(v * id)))
	}
}

// TestGemma3GoldenGGMLQ8Lanes pins the cause of rand-gemma3-q8_0's golden
// mismatch (TestGolden: first-step logits up to 0.09 away with flash
// attention and the f16 cache). With ggml's own Q8_0 product arithmetic
// (ggmlQ8_0MatMat) in place of runtime/cpu's, the rest of the forward pass
// unchanged, our logits are llama.cpp's to its printed precision and all 16
// greedy steps agree. Compared with llama-eval-callback (0253fb21, AVX-512
// build) tensor by tensor, every other operation of the gemma3 graph
// (embedding scale, norms, q/k norms, rope since ropeNeox's fusion, GELU
// table, post-norms, flash attention but for an ulp in a few outputs) is
// ggml's bit for bit; with runtime/cpu's kernels the first difference is
// layer 0's Q/K/V projections, an ulp away, which turns one key of layer 0
// into another f16 value (an f16 ulp) and moves the logits by ~0.1: this
// random model amplifies rounding (llama.cpp's own run with flash attention
// off is 0.15 away from its run with it on).
func TestGemma3GoldenGGMLQ8Lanes(t *testing.T) {
	const model = "rand-gemma3-q8_0"
	gd := readGolden(t, filepath.Join(fixtures, "golden", model+".hello.json"))
	m := loadModel(t, model, 4, false, Options{Threads: 1, Batch: 3, Cache: CacheF16, FlashAttn: true})
	old := matMat
	matMat = ggmlQ8_0MatMat(t, model, m)
	defer func() { matMat = old }()
	s := m.NewState(0)
	logits, err := s.Prefill(gd.PromptTokens)
	if err != nil {
		t.Fatal(err)
	}
	var maxErr float64
	for _, e := range gd.Steps[0].Top {
		d := math.Abs(float64(logits[int(e[0])]) - e[1])
		maxErr = max(maxErr, d)
		if d > 1e-4 {
			t.Errorf("step 0: logit of token %d is %.6f, llama.cpp %.6f", int(e[0]), logits[int(e[0])], e[1])
		}
	}
	for i, st := range gd.Steps {
		if got := argmax(logits); int32(got) != st.Token {
			t.Fatalf("step %d: argmax %d, golden %d", i, got, st.Token)
		}
		if i+1 < len(gd.Steps) {
			if logits, err = s.Decode(st.Token); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("max first-step top-8 logit error %.2g; %d/%d greedy steps agree", maxErr, len(gd.Steps), len(gd.Steps))
}

// TestRopeNeoxAgainstLlamaCpp checks ropeNeox bit for bit against
// llama.cpp 0253fb21 (AVX-512 build, llama-eval-callback on
// rand-gemma3-q8_0.gguf, "Hello world, this is", layer 0 with rope base
// 10000 over 64 dimensions): the normed query pair (x0, x1) = (x[i],
// x[i+32]) of a head at position pos came out as (y0, y1). These are
// pairs where fma(x1, c, x0*s), the fusion of the normal mode, gives
// another y1.
func TestRopeNeoxAgainstLlamaCpp(t *testing.T) {
	const dims = 64
	cases := []struct {
		pos, i         int
		x0, x1, y0, y1 float32
	}{
		{1, 0, 0.266467422, -0.506468713, 0.570151687, -0.0494216084},
		{1, 1, 0.840888262, -1.21322024, 1.4422133, -0.314670295},
		{3, 0, 1.16920853, 0.557277024, -1.23615062, -0.386701345},
		{3, 1, 0.937859058, 1.17061734, -1.49996603, -0.005151961},
		{5, 16, 2.04119706, 0.0206293836, 2.03761506, 0.122620896},
		{5, 25, 0.0985133424, -2.14431334, 0.106552668, -2.143929},
	}
	thetaScale := float32(math.Pow(10000, float64(float32(-2)/float32(dims))))
	cs := make([]float32, dims)
	x := make([]float32, dims)
	for _, c := range cases {
		ropeCache(cs, c.pos, thetaScale, 1, nil, noYarn)
		clear(x)
		x[c.i], x[c.i+dims/2] = c.x0, c.x1
		ropeNeox(x, cs)
		if y0, y1 := x[c.i], x[c.i+dims/2]; y0 != c.y0 || y1 != c.y1 {
			t.Errorf("pos %d pair %d: (%.9g, %.9g), llama.cpp (%.9g, %.9g)", c.pos, c.i, y0, y1, c.y0, c.y1)
		}
	}
}
