package engine

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// fixtures is the shared fixture tree, from this package's directory.
const fixtures = "../../../shared/fixtures"

// Tolerances.
const (
	// logitTol bounds |ours - llama.cpp| for the top-8 logits of the first
	// generated step, with the f16 KV cache that llama.cpp used for the
	// goldens (CacheF16; we measure at most 1e-5, the goldens' precision).
	logitTol = 0.05
	// logitTolF32 is logitTol for the exact f32 KV cache. The goldens carry
	// llama.cpp's f16 cache rounding (~0.008 on the f32 stories260K, see
	// fixtures/README.md); on the quantised models every matrix product
	// re-quantises its activations to int8, which turns those small
	// differences into different codes, and the logits move by up to ~0.15.
	logitTolF32 = 0.25
	// flipMargin: where the golden's top-2 logits are closer than this, a
	// different argmax is forgiven (and the comparison of that run stops,
	// since the sequences then diverge).
	flipMargin = 0.05
	// flipMarginF32 is flipMargin with the f32 cache, whose logits stray
	// further (see logitTolF32): stories260K-q8_0.bear flips at step 29,
	// where llama.cpp's top-2 margin is 0.096 and ours 0.031 (the f16
	// cache matches llama.cpp there to 1e-5).
	flipMarginF32 = 0.1
	// prefillTol bounds |Prefill - token-by-token Decode| on the logits.
	// The kernels give each (row, token) the same arithmetic whatever the
	// batch, so the two agree bit for bit today; the bound leaves room for
	// batch kernels that accumulate in another order.
	prefillTol = 1e-4
)

// flashAttnGoldens are the goldens whose llama.cpp run computed attention
// with flash attention (llama.cpp 0253fb21; the fixtures' README says it
// was off, but only flash attention's arithmetic, f16 value accumulation
// and an online softmax, reproduces their logits: phi3 to 2e-6, where the
// plain attention is 0.07 away). llama.cpp 0253fb21 itself, built for
// AVX-512 and run with -fa on, reproduces rand-gemma3-q8_0's first-step
// logits to the last printed digit (17035: 16.3208809, 24601: 15.4004765);
// with -fa off it gives 16.3045 and 15.2484. Their f16-cache runs use
// Options.FlashAttn.
var flashAttnGoldens = map[string]bool{"rand-gemma3-q8_0": true, "rand-phi3-q8_0": true}

// amplifyingGoldens are the goldens of random-weight models that amplify a
// last-bit difference about tenfold a layer, with the first-step logit
// bound they are held to and whether the f32-cache run is compared at step
// 0 only. rand-gemma3-q8_0: our Q8_0 kernels add a block's 32 products as
// one integer sum and the blocks in order; ggml keeps 8 FMA lanes of 4
// products each. That one-ulp difference in layer 0's Q/K/V (inp_scaled
// and attn_norm-0 are identical to llama.cpp's bit for bit; Qcur-0 differs
// by <= 4.8e-7) moves one f16 key to its neighbour and the logits by 0.092
// (llama.cpp's own -fa on and -fa off runs differ by 0.15 on this model).
// TestGemma3GoldenGGMLQ8Lanes runs the model with ggml's lane arithmetic
// and matches the golden to 1e-4 and all 16 tokens: the model is right,
// the kernels' summation order differs.
var amplifyingGoldens = map[string]struct {
	tol      float64
	f32Step0 bool
}{"rand-gemma3-q8_0": {0.10, true}}

type golden struct {
	PromptTokens []int32 `json:"prompt_tokens"`
	Steps        []struct {
		Token int32       `json:"token"`
		Piece string      `json:"piece"`
		Top   [][]float64 `json:"top"`
	} `json:"steps"`
}

func readGolden(t testing.TB, path string) *golden {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("fixture %s not present", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &g
}

// ggufs caches opened fixture models.
var ggufs sync.Map

func openModel(t testing.TB, name string) (*layout.GGUF, layout.Params) {
	t.Helper()
	path := filepath.Join(fixtures, "models", name+".gguf")
	if g, ok := ggufs.Load(path); ok {
		gg := g.(*layout.GGUF)
		p, _ := layout.ParamsFromGGUF(gg)
		return gg, p
	}
	g, err := layout.OpenGGUF(path)
	if err != nil {
		if os.IsNotExist(err) {
			t.Skipf("fixture %s not present", path)
		}
		t.Fatal(err)
	}
	ggufs.Store(path, g)
	p, err := layout.ParamsFromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

func loadModel(t testing.TB, name string, columns int, fuse bool, opts Options) *Model {
	t.Helper()
	g, p := openModel(t, name)
	w, err := WeightsFromGGUF(g, columns, fuse)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(p, w, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// TestGolden runs every golden of fixtures/golden: prefill the prompt,
// then greedy decode; each step's argmax must be the golden token (a flip
// is forgiven where the golden's top-2 margin is below flipMargin, and the
// run stops there), and the first step's top-8 logits must be within
// logitTol of llama.cpp's (logitTolF32 and flipMarginF32 with the f32
// cache). Each golden
// runs with both caches; the runs rotate through packing and execution
// configurations (columns, fusion, threads, prefill batch).
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "golden", "*.json"))
	if len(files) == 0 {
		t.Skip("no goldens in " + fixtures)
	}
	sort.Strings(files)
	// The goldens that must be there: stories260K-q8_0.bear caught
	// llama.cpp's exps and rope FMAs (ops.go), which the shorter prompts
	// did not.
	for _, want := range []string{"stories260K-q8_0.bear.json", "stories260K-q8_0.once.json", "tiny-llama-q4_k_m.pierre.json"} {
		if !slices.Contains(files, filepath.Join(fixtures, "golden", want)) {
			t.Errorf("golden %s missing from %s", want, filepath.Join(fixtures, "golden"))
		}
	}
	configs := []struct {
		columns int
		fuse    bool
		opts    Options
	}{
		{4, true, Options{Threads: 2}},
		{8, false, Options{Threads: 1, Batch: 3}},
		{1, true, Options{Threads: 2, Batch: 2}},
		{4, false, Options{Threads: 2, Batch: 4}},
	}
	// Every CPU kernel set this machine runs (cpu.Levels: avx512 and avx2
	// where the CPU has them, go always) must match llama.cpp. The AVX-512
	// set is not run here on a CPU without it: runtime/cpu's tests prove it
	// under x86sim bit for bit against the go set, which these goldens run.
	orig := cpu.SIMD()
	defer cpu.SetLevel(orig)
	for _, level := range cpu.Levels() {
		if _, err := cpu.SetLevel(level); err != nil {
			t.Fatal(err)
		}
		t.Run(level, func(t *testing.T) {
			run := 0
			for _, file := range files {
				for _, cache := range []CacheType{CacheF16, CacheF32} {
					goldenRun(t, file, cache, configs[run%len(configs)])
					run++
				}
			}
		})
	}
}

func goldenRun(t *testing.T, file string, cache CacheType, cfg struct {
	columns int
	fuse    bool
	opts    Options
}) {
	base := filepath.Base(file)
	model := base[:strings.Index(base, ".")]
	cfg.opts.Cache = cache
	cfg.opts.FlashAttn = cache == CacheF16 && flashAttnGoldens[model]
	tol, flip := logitTol, flipMargin
	if cache == CacheF32 {
		tol, flip = logitTolF32, flipMarginF32
	}
	amp, amplifies := amplifyingGoldens[model]
	if amplifies && cache == CacheF16 {
		tol = amp.tol
	}
	steps := -1 // all
	if amplifies && cache == CacheF32 && amp.f32Step0 {
		steps = 1
	}
	{
		t.Run(strings.TrimSuffix(base, ".json")+"/"+cache.String(), func(t *testing.T) {
			t.Parallel()
			gd := readGolden(t, file)
			m := loadModel(t, model, cfg.columns, cfg.fuse, cfg.opts)
			s := m.NewState(0)
			logits, err := s.Prefill(gd.PromptTokens)
			if err != nil {
				t.Fatal(err)
			}
			matched := 0
			var maxErr float64
			for i, st := range gd.Steps {
				if i == steps {
					t.Logf("%s amplifies last-bit differences (amplifyingGoldens): the %s cache run is compared at step 0 only", model, cache)
					break
				}
				if i == 0 {
					for _, e := range st.Top {
						id, want := int(e[0]), e[1]
						d := math.Abs(float64(logits[id]) - want)
						maxErr = max(maxErr, d)
						if d > tol {
							t.Errorf("step 0: logit of token %d is %.5f, llama.cpp %.5f (|diff| %.4f > %v)", id, logits[id], want, d, tol)
						}
					}
				}
				got := argmax(logits)
				if int32(got) != st.Token {
					margin := st.Top[0][1] - st.Top[1][1]
					if margin < flip {
						t.Logf("step %d: argmax %d, golden %d (%q) with a top-2 margin of %.4f: forgiven, stopping", i, got, st.Token, st.Piece, margin)
						break
					}
					t.Fatalf("step %d: argmax %d (logit %.4f), golden %d %q (logit %.4f here, %.4f in llama.cpp; margin %.4f)",
						i, got, logits[got], st.Token, st.Piece, logits[st.Token], st.Top[0][1], margin)
				}
				matched++
				if i+1 < len(gd.Steps) {
					if logits, err = s.Decode(st.Token); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Logf("%s, %s cache (flash attention %v, columns %d, fused %v, threads %d, batch %d): %d/%d steps matched, max first-step top-8 logit error %.5f",
				model, cache, cfg.opts.FlashAttn, cfg.columns, cfg.fuse, cfg.opts.Threads, s.batch, matched, len(gd.Steps), maxErr)
		})
	}
}

// TestPrefillMatchesDecode compares the logits of a batched prefill with
// those of the same prompt fed token by token.
func TestPrefillMatchesDecode(t *testing.T) {
	for _, c := range []struct {
		model, golden string
		batch         int
	}{
		{"stories260K-q4_0", "stories260K-q4_0.once.json", 0},
		{"tiny-llama-q4_k_m", "tiny-llama-q4_k_m.pierre.json", 2},
		{"rand-qwen2-q8_0", "rand-qwen2-q8_0.hello.json", 3},
	} {
		t.Run(c.model, func(t *testing.T) {
			gd := readGolden(t, filepath.Join(fixtures, "golden", c.golden))
			m := loadModel(t, c.model, 4, true, Options{Threads: 2, Batch: c.batch})
			prompt := append(append([]int32{}, gd.PromptTokens...), gd.Steps[0].Token, gd.Steps[1].Token)
			a := m.NewState(64)
			pl, err := a.Prefill(prompt)
			if err != nil {
				t.Fatal(err)
			}
			pl = append([]float32{}, pl...)
			b := m.NewState(64)
			var dl []float32
			for _, tok := range prompt {
				if dl, err = b.Decode(tok); err != nil {
					t.Fatal(err)
				}
			}
			var maxd float64
			for i := range pl {
				maxd = max(maxd, math.Abs(float64(pl[i]-dl[i])))
			}
			if maxd > prefillTol {
				t.Fatalf("prefill and decode logits differ by %g > %g", maxd, prefillTol)
			}
			if a.Pos() != len(prompt) || b.Pos() != len(prompt) {
				t.Fatalf("positions %d, %d, want %d", a.Pos(), b.Pos(), len(prompt))
			}
			t.Logf("max |prefill - decode| = %g", maxd)
		})
	}
}
