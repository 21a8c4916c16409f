package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func params(temp float32) Params {
	return Params{Temp: temp, TopP: 1, MinP: 0, RepeatPenalty: 1, TopK: 0, RepeatLastN: 64, Seed: 7}
}

// freqs draws n tokens and returns the share of each id.
func freqs(s *Sampler, logits []float32, hist []int32, n int) []float64 {
	f := make([]float64, len(logits))
	for range n {
		f[s.Sample(logits, hist)]++
	}
	for i := range f {
		f[i] /= float64(n)
	}
	return f
}

func logs(ps ...float64) []float32 {
	l := make([]float32, len(ps))
	for i, p := range ps {
		l[i] = float32(math.Log(p))
	}
	return l
}

// tol is the allowed absolute error of a share over draws draws: the shares
// are binomial with standard deviation <= 0.5/sqrt(draws) = 0.0016, and 0.01
// is over six of those.
const (
	draws = 100000
	tol   = 0.01
)

func near(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol {
			t.Errorf("%s: shares %.4f, want %.4f (tolerance %g)", what, got, want, tol)
			return
		}
	}
}

func TestGreedy(t *testing.T) {
	for _, temp := range []float32{0, -1} {
		s := New(params(temp))
		if got := s.Sample([]float32{1, 3, 2, 3}, nil); got != 1 {
			t.Errorf("temp %g: %d, want 1 (first of the tied maxima)", temp, got)
		}
	}
	s := New(params(0))
	if got := s.Sample([]float32{float32(math.NaN()), -1, float32(math.Inf(-1))}, nil); got != 1 {
		t.Errorf("NaN logit: got %d, want 1", got)
	}
	if got := s.Sample(nil, nil); got != -1 {
		t.Errorf("no logits: got %d, want -1", got)
	}
	all := []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
	if got := New(DefaultParams()).Sample(all, nil); got != 0 {
		t.Errorf("all -Inf: got %d, want 0", got)
	}
}

func TestTopK1IsGreedy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := params(1.5)
	p.TopK = 1
	s := New(p)
	g := New(params(0))
	logits := make([]float32, 1000)
	for range 200 {
		for i := range logits {
			logits[i] = float32(r.NormFloat64())
		}
		if a, b := s.Sample(logits, nil), g.Sample(logits, nil); a != b {
			t.Fatalf("top-k 1 gave %d, greedy %d", a, b)
		}
	}
}

func TestTopK(t *testing.T) {
	p := params(1)
	p.TopK = 2
	got := freqs(New(p), logs(0.4, 0.1, 0.3, 0.2), nil, draws)
	near(t, "top-k 2", got, []float64{0.4 / 0.7, 0, 0.3 / 0.7, 0})
	// k >= n disables it.
	p.TopK = 10
	got = freqs(New(p), logs(0.4, 0.1, 0.3, 0.2), nil, draws)
	near(t, "top-k 10 of 4", got, []float64{0.4, 0.1, 0.3, 0.2})
}

func TestTopP(t *testing.T) {
	p := params(1)
	p.TopP = 1e-9 // keeps only the best
	s := New(p)
	for range 100 {
		if got := s.Sample(logs(0.2, 0.5, 0.3), nil); got != 1 {
			t.Fatalf("tiny top-p drew %d, want 1", got)
		}
	}
	// 0.5 + 0.3 reaches 0.7: the 0.2 token is cut.
	p.TopP = 0.7
	near(t, "top-p 0.7", freqs(New(p), logs(0.2, 0.5, 0.3), nil, draws), []float64{0, 0.5 / 0.8, 0.3 / 0.8})
	// The same after top-k (sorted path).
	p.TopK = 3
	near(t, "top-k 3, top-p 0.7", freqs(New(p), logs(0.2, 0.5, 0.3), nil, draws), []float64{0, 0.5 / 0.8, 0.3 / 0.8})
	// Exactly reaching p keeps no more.
	p.TopK, p.TopP = 0, 0.5
	near(t, "top-p 0.5", freqs(New(p), logs(0.25, 0.5, 0.25), nil, draws), []float64{0, 1, 0})
}

func TestMinP(t *testing.T) {
	p := params(1)
	p.MinP = 0.5 // keep p_i >= 0.5 * p_max = 0.25
	near(t, "min-p 0.5", freqs(New(p), logs(0.5, 0.3, 0.2), nil, draws), []float64{0.5 / 0.8, 0.3 / 0.8, 0})
	p.TopK = 3 // sorted path
	near(t, "top-k 3, min-p 0.5", freqs(New(p), logs(0.5, 0.3, 0.2), nil, draws), []float64{0.5 / 0.8, 0.3 / 0.8, 0})
	p.TopK, p.MinP = 0, 1 // only the maxima
	near(t, "min-p 1", freqs(New(p), logs(0.25, 0.5, 0.25), nil, draws), []float64{0, 1, 0})
}

func TestTemperature(t *testing.T) {
	// At temperature 1/2 the shares go as p^2: 0.25, 0.09, 0.04 over 0.38.
	near(t, "temp 0.5", freqs(New(params(0.5)), logs(0.5, 0.3, 0.2), nil, draws), []float64{0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38})
	near(t, "temp 1", freqs(New(params(1)), logs(0.5, 0.3, 0.2), nil, draws), []float64{0.5, 0.3, 0.2})
}

func TestRepeatPenalty(t *testing.T) {
	p := params(0)
	p.RepeatPenalty = 2
	logits := []float32{2, 1.5, -1, -0.9}
	// Token 0 falls to 1 (below 1.5); token 3 to -1.8.
	if got := New(p).Sample(logits, []int32{0, 0, 3}); got != 1 {
		t.Errorf("penalised greedy: %d, want 1", got)
	}
	// Out of the window (last 2 tokens: 3, 3) token 0 keeps its lead.
	p.RepeatLastN = 2
	if got := New(p).Sample(logits, []int32{0, 3, 3}); got != 0 {
		t.Errorf("window 2: %d, want 0", got)
	}
	p.RepeatLastN = 0
	if got := New(p).Sample(logits, []int32{0}); got != 0 {
		t.Errorf("window 0 (off): %d, want 0", got)
	}
	p.RepeatLastN = -1
	if got := New(p).Sample(logits, []int32{0, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}); got != 1 {
		t.Errorf("window -1 (all): %d, want 1", got)
	}
	// Negative logits are multiplied: -0.9 becomes -1.8, below -1.
	q := params(0)
	q.RepeatPenalty = 2
	if got := New(q).Sample([]float32{-1, -0.9}, []int32{1, 99, -5}); got != 0 {
		t.Errorf("negative logit: %d, want 0", got)
	}
	// The caller's logits are not modified.
	if !slices.Equal(logits, []float32{2, 1.5, -1, -0.9}) {
		t.Errorf("logits modified: %v", logits)
	}
	// The penalty applies before the draw: logit 2 ln 3 halves to ln 3,
	// even with the other token.
	r := params(1)
	r.RepeatPenalty = 2
	got := freqs(New(r), []float32{float32(2 * math.Log(3)), float32(math.Log(3))}, []int32{0}, draws)
	near(t, "penalised draw", got, []float64{0.5, 0.5})
}

func TestSeedReproducible(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, 5000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2)
	}
	run := func(seed uint64) []int32 {
		p := DefaultParams()
		p.Seed = seed
		p.RepeatPenalty = 1.1
		s := New(p)
		var out []int32
		for range 100 {
			out = append(out, s.Sample(logits, out))
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Errorf("seed 42 gave two sequences")
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same sequence")
	}
	s := New(DefaultParams())
	first := s.Sample(logits, nil)
	s.Sample(logits, nil)
	s.Reset()
	if got := s.Sample(logits, nil); got != first {
		t.Errorf("after Reset: %d, want %d", got, first)
	}
}

func TestNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	hist := []int32{1, 2, 3, 4, 5, 31999}
	for _, p := range []Params{DefaultParams(), params(0), params(1), {Temp: 0.7, TopP: 0.9, MinP: 0, RepeatPenalty: 1.3, RepeatLastN: -1}} {
		s := New(p)
		s.Sample(logits, hist)
		if n := testing.AllocsPerRun(20, func() { s.Sample(logits, hist) }); n != 0 {
			t.Errorf("%+v: %v allocations per Sample", p, n)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	nan := float32(math.NaN())
	for _, c := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.TopP = 1.5 }, "--top-p 1.5: must be in (0, 1]"},
		{func(p *Params) { p.TopP = 0 }, "--top-p 0:"},
		{func(p *Params) { p.Temp = -1 }, "--temp -1:"},
		{func(p *Params) { p.Temp = nan }, "--temp NaN:"},
		{func(p *Params) { p.MinP = 1.01 }, "--min-p 1.01:"},
		{func(p *Params) { p.RepeatPenalty = 0 }, "--repeat-penalty 0:"},
		{func(p *Params) { p.TopK = -3 }, "--top-k -3:"},
		{func(p *Params) { p.RepeatLastN = -2 }, "--repeat-last-n -2:"},
	} {
		p := DefaultParams()
		c.edit(&p)
		err := p.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Validate() = %v, want %q...", err, c.want)
		}
	}
}

// TestTopKMatchesSort compares the heap top-k and top-p with the reference:
// a full sort.
func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		c := make([]cand, n)
		for i := range c {
			c[i] = cand{id: int32(i), logit: float32(r.IntN(20))} // many ties
		}
		ref := slices.Clone(c)
		slices.SortFunc(ref, func(a, b cand) int {
			if above(a, b) {
				return -1
			}
			if above(b, a) {
				return 1
			}
			return 0
		})
		k := 1 + r.IntN(n)
		got := topK(slices.Clone(c), k)
		for i := range got {
			if got[i].id != ref[i].id {
				t.Fatalf("trial %d: top-%d of %d differs at %d", trial, k, n, i)
			}
		}
		pp := float32(r.Float64())
		a := topP(slices.Clone(c), pp, false)
		softmax(ref)
		b := topP(slices.Clone(ref), pp, true)
		if len(a) != len(b) {
			t.Fatalf("trial %d: top-p %g keeps %d unsorted, %d sorted", trial, pp, len(a), len(b))
		}
		for i := range a {
			if a[i].id != b[i].id {
				t.Fatalf("trial %d: top-p differs at %d", trial, i)
			}
		}
	}
}

func BenchmarkSample(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 151936)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	hist := make([]int32, 64)
	for name, p := range map[string]Params{"default": DefaultParams(), "greedy": params(0), "topp-only": {Temp: 0.8, TopP: 0.95, RepeatPenalty: 1}} {
		b.Run(name, func(b *testing.B) {
			s := New(p)
			b.ReportAllocs()
			for b.Loop() {
				s.Sample(logits, hist)
			}
		})
	}
}
