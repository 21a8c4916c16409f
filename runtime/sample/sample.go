// Package sample picks the next token from logits with llama.cpp's default
// sampler chain (common/sampling.cpp): repetition penalty, top-k, top-p,
// min-p, temperature, then a seeded draw; a temperature <= 0 is greedy.
package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Params configures a Sampler. The zero value of a filter disables it where
// noted; DefaultParams gives llama.cpp's defaults.
type Params struct {
	Temp          float32 // <= 0: greedy (argmax, lowest id on ties)
	TopP          float32 // (0, 1]; 1 disables
	MinP          float32 // [0, 1]; 0 disables
	RepeatPenalty float32 // > 0; 1 disables
	TopK          int     // >= 0; 0 disables
	RepeatLastN   int     // tokens of history penalised; 0 disables, -1 all
	Seed          uint64
}

// DefaultParams returns llama.cpp's defaults: temp 0.8, top-k 40, top-p
// 0.95, min-p 0.05, repeat penalty 1 (off) over the last 64 tokens.
func DefaultParams() Params {
	return Params{Temp: 0.8, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, TopK: 40, RepeatLastN: 64}
}

// Validate checks every parameter and names the offending flag.
func (p Params) Validate() error {
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	switch {
	case !finite(p.Temp) || p.Temp < 0:
		return fmt.Errorf("--temp %g: must be >= 0 (0: greedy)", p.Temp)
	case !finite(p.TopP) || p.TopP <= 0 || p.TopP > 1:
		return fmt.Errorf("--top-p %g: must be in (0, 1]", p.TopP)
	case !finite(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return fmt.Errorf("--min-p %g: must be in [0, 1]", p.MinP)
	case !finite(p.RepeatPenalty) || p.RepeatPenalty <= 0:
		return fmt.Errorf("--repeat-penalty %g: must be > 0 (1: off)", p.RepeatPenalty)
	case p.TopK < 0:
		return fmt.Errorf("--top-k %d: must be >= 0 (0: off)", p.TopK)
	case p.RepeatLastN < -1:
		return fmt.Errorf("--repeat-last-n %d: must be >= -1 (0: off, -1: all history)", p.RepeatLastN)
	}
	return nil
}

type cand struct {
	id    int32
	logit float32
	p     float32
}

// above orders candidates: higher logit first, then lower id.
func above(a, b cand) bool { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id) }

// Sampler draws tokens. Its buffers are allocated on the first call (and
// when the vocabulary grows) and reused after, so Sample does not allocate.
// A Sampler is not safe for concurrent use.
type Sampler struct {
	p     Params
	rng   *rand.Rand
	cand  []cand   // [vocab] candidates
	stamp []uint32 // [vocab] penalty marks: stamp[id] == gen when id is in the window
	gen   uint32
}

// New returns a sampler for p, which should pass Validate, seeded with
// p.Seed: the same seed and inputs give the same tokens.
func New(p Params) *Sampler {
	s := &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, 0x9E3779B97F4A7C15))}
	return s
}

// Params returns the parameters of s.
func (s *Sampler) Params() Params { return s.p }

// Reset restarts the random sequence from the seed.
func (s *Sampler) Reset() { s.rng = rand.New(rand.NewPCG(s.p.Seed, 0x9E3779B97F4A7C15)) }

// Sample returns the next token for logits (one per vocabulary entry) given
// the tokens so far (prompt included), or -1 if logits is empty. logits is
// not modified. NaN logits count as -Inf.
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	n := len(logits)
	if n == 0 {
		return -1
	}
	if cap(s.cand) < n {
		s.cand = make([]cand, n)
		s.stamp = make([]uint32, n)
		s.gen = 0
	}
	c := s.cand[:n]
	for i, l := range logits {
		if l != l {
			l = float32(math.Inf(-1))
		}
		c[i] = cand{id: int32(i), logit: l}
	}
	s.penalize(c, history)

	if s.p.Temp <= 0 {
		best := 0
		for i := 1; i < n; i++ {
			if c[i].logit > c[best].logit {
				best = i
			}
		}
		return c[best].id
	}

	sorted := false
	if k := s.p.TopK; k > 0 && k < n {
		c = topK(c, k)
		sorted = true
	}
	if s.p.TopP < 1 {
		c = topP(c, s.p.TopP, sorted)
		sorted = true
	}
	if s.p.MinP > 0 {
		c = minP(c, s.p.MinP, sorted)
	}
	inv := 1 / s.p.Temp
	for i := range c {
		c[i].logit *= inv
	}
	return s.draw(c)
}

// penalize applies the repetition penalty to the last RepeatLastN tokens of
// history (each distinct token once): positive logits are divided by the
// penalty, the others multiplied, as llama_sampler_penalties.
func (s *Sampler) penalize(c []cand, history []int32) {
	pen := s.p.RepeatPenalty
	if pen == 1 || pen <= 0 || s.p.RepeatLastN == 0 || len(history) == 0 {
		return
	}
	if w := s.p.RepeatLastN; w > 0 && w < len(history) {
		history = history[len(history)-w:]
	}
	s.gen++
	if s.gen == 0 { // wrapped: clear the marks
		clear(s.stamp)
		s.gen = 1
	}
	for _, id := range history {
		if id < 0 || int(id) >= len(c) || s.stamp[id] == s.gen {
			continue
		}
		s.stamp[id] = s.gen
		if l := c[id].logit; l <= 0 {
			c[id].logit = l * pen
		} else {
			c[id].logit = l / pen
		}
	}
}

// topK keeps the k best candidates, sorted best first.
//
// Reference: sort c by above and keep c[:k]. Here a min-heap of the best k
// in c[:k] is kept while scanning, then sorted, which is O(n log k).
func topK(c []cand, k int) []cand {
	h := c[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftWorst(h, i)
	}
	for i := k; i < len(c); i++ {
		if above(c[i], h[0]) {
			h[0] = c[i]
			siftWorst(h, 0)
		}
	}
	// Heap sort: the worst goes to the end each time.
	for end := k - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		siftWorst(h[:end], 0)
	}
	return h
}

// siftWorst restores a heap whose root is its worst candidate.
func siftWorst(h []cand, i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && above(h[m], h[l]) {
			m = l
		}
		if r < len(h) && above(h[m], h[r]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// siftBest restores a heap whose root is its best candidate.
func siftBest(h []cand, i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && above(h[l], h[m]) {
			m = l
		}
		if r < len(h) && above(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// softmax sets c[i].p to the softmax of the logits (float32 sums, as
// llama.cpp) and returns the largest logit.
func softmax(c []cand) float32 {
	mx := float32(math.Inf(-1))
	for _, x := range c {
		mx = max(mx, x.logit)
	}
	var sum float32
	for i := range c {
		p := float32(math.Exp(float64(c[i].logit - mx)))
		c[i].p = p
		sum += p
	}
	for i := range c {
		c[i].p /= sum
	}
	return mx
}

// topP keeps the smallest best-first prefix whose probability reaches p (at
// least one candidate), as llama_sampler_top_p. The result is sorted.
//
// Reference: sort c by above, softmax, cut after the first index whose
// running sum is >= p. Unsorted input is popped from a max-heap only as far
// as the cut, so a peaked distribution costs O(n).
func topP(c []cand, p float32, sorted bool) []cand {
	softmax(c)
	if !sorted {
		for i := len(c)/2 - 1; i >= 0; i-- {
			siftBest(c, i)
		}
		// Pop the best to the end of the shrinking heap; the popped suffix
		// is best-first when read backwards.
		var cum float32
		end := len(c)
		for end > 0 {
			end--
			c[0], c[end] = c[end], c[0]
			siftBest(c[:end], 0)
			cum += c[end].p
			if cum >= p {
				break
			}
		}
		kept := c[end:]
		for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
			kept[i], kept[j] = kept[j], kept[i]
		}
		return kept
	}
	var cum float32
	for i := range c {
		cum += c[i].p
		if cum >= p {
			return c[:i+1]
		}
	}
	return c
}

// minP keeps the candidates whose probability is at least p times the best
// one's, i.e. logit >= max + ln p, as llama_sampler_min_p (at least one).
func minP(c []cand, p float32, sorted bool) []cand {
	mx := float32(math.Inf(-1))
	for _, x := range c {
		mx = max(mx, x.logit)
	}
	cut := mx + float32(math.Log(float64(p)))
	if sorted {
		i := 1
		for i < len(c) && c[i].logit >= cut {
			i++
		}
		return c[:i]
	}
	k := 0
	for _, x := range c {
		if x.logit >= cut {
			c[k] = x
			k++
		}
	}
	return c[:k]
}

// draw picks a candidate with probability softmax(logit).
func (s *Sampler) draw(c []cand) int32 {
	mx := float32(math.Inf(-1))
	best := 0
	for i, x := range c {
		if x.logit > mx || (x.logit == mx && x.id < c[best].id) {
			mx, best = x.logit, i
		}
	}
	if math.IsInf(float64(mx), -1) || len(c) == 1 {
		return c[best].id
	}
	var sum float64
	for i := range c {
		sum += math.Exp(float64(c[i].logit - mx))
	}
	u := s.rng.Float64() * sum
	var acc float64
	for i := range c {
		acc += math.Exp(float64(c[i].logit - mx))
		if u < acc {
			return c[i].id
		}
	}
	return c[best].id // rounding left u past the end
}
