package engine

import (
	"math"

	"github.com/xdna-go/xdna/runtime/cpu"
)

// attention computes s.ao for the b tokens of the batch that starts at
// s.pos, layer li: for each token and head, softmax(q.K^T * scale) over
// the positions the token sees (0..pos, or the layer's window of the last
// positions up to pos), times V; a query head h reads KV head
// h/(Heads/HeadsKV). With a soft cap c, each score is c*tanh(score/c)
// before the scale, as llama.cpp's build_attn_mha.
func (s *State) attention(li, b int) {
	a := &s.attn
	a.layer, a.b = li, b
	n := s.pos + b // positions of the last token
	if w := s.m.layers[li].window; w > 0 {
		n = min(n, w)
	}
	p := s.m.P
	grain := max(1, (32<<10)/(n*p.HeadDim))
	// Whole KV groups a chunk where there are enough of them for the
	// threads, else a thread's share of a group: the query heads of a
	// group in one chunk read each row of the f16 cache once (attendF16).
	group, threads := p.Heads/p.HeadsKV, s.m.pool.Threads()
	if g := b * p.HeadsKV; g >= threads {
		grain = (grain + group - 1) / group * group
	} else {
		per := (threads + g - 1) / g
		grain = max(grain, (group+per-1)/per)
	}
	s.m.pool.For(b*p.Heads, grain, a)
}

// attnTask runs attention for (token, head) pairs.
type attnTask struct {
	s     *State
	layer int
	b     int
}

// Run computes pairs [lo, hi), pair = token*Heads + head.
func (a *attnTask) Run(w, lo, hi int) {
	s := a.s
	m, p := s.m, s.m.P
	hd, hdv := p.HeadDim, p.HeadDimV
	kvd, vd, qd := m.kvDim, m.vDim, m.qDim
	group := p.Heads / p.HeadsKV
	kqScale := m.kqScale
	if m.A.Family.QueryScale {
		kqScale = 1 // the queries carry it
	}
	window, ring, base := m.layers[a.layer].window, s.ring[a.layer], s.base[a.layer]
	for idx := lo; idx < hi; idx++ {
		i, h := idx/p.Heads, idx%p.Heads
		pos := s.pos + i
		first := 0 // the first position the token sees
		if window > 0 {
			first = max(0, pos-window+1)
		}
		n := pos - first + 1
		kh := h / group
		if s.kc16 != nil && !m.opts.FlashAttn {
			// The query heads from h on that share KV head kh, up to hi.
			heads := min(hi-idx, (kh+1)*group-h)
			a.attendF16(w, i, h, heads, first, n, kqScale)
			idx += heads - 1
			continue
		}
		q := s.q[i*qd+h*hd : i*qd+(h+1)*hd]
		sc := s.scores[w*s.ctx : w*s.ctx+n] // scoreHeads is 1
		out := s.ao[(i*p.Heads+h)*hdv : (i*p.Heads+h+1)*hdv]
		clear(out)
		if s.kc16 != nil {
			qh := s.qh[w*hd : (w+1)*hd]
			copy(qh, q)
			cpu.RoundF16(qh)
			s.flashAttn(out, qh, sc, a.layer, kh, first, n, kqScale)
			continue
		}
		for t := range sc {
			slot := base + (first+t)%ring
			sc[t] = s.capped(dot(q, s.kc[slot*kvd+kh*hd:])) * kqScale
		}
		softmax(sc)
		for t, pt := range sc {
			slot := base + (first+t)%ring
			axpy(pt, s.vc[slot*vd+kh*hdv:slot*vd+(kh+1)*hdv], out)
		}
	}
}

// attendF16 computes, on thread w, the attention of token i for the query
// heads h..h+heads-1, which share one KV head, over the n positions from
// first of the f16 cache: their scores (DotsF16Heads), softmax then
// RoundF16 each, and their weighted sums of the values (AxpysF16Heads).
// Each row of the cache is read once for all the heads; every head's
// values are those of the same steps one head at a time (DotsF16,
// AxpysF16).
func (a *attnTask) attendF16(w, i, h, heads, first, n int, kqScale float32) {
	s := a.s
	m, p := s.m, s.m.P
	hd, hdv, kvd, vd, ctx := p.HeadDim, p.HeadDimV, m.kvDim, m.vDim, s.ctx
	group := p.Heads / p.HeadsKV
	kh := h / group
	qh := s.qh[w*group*hd : w*group*hd+heads*hd] // scoreHeads is group
	copy(qh, s.q[i*m.qDim+h*hd:])
	cpu.RoundF16(qh)
	// Head j's scores at sc[j*ctx:], each run of slots in one call.
	sc := s.scores[w*group*ctx : (w*group+heads)*ctx]
	s.slotRuns(a.layer, first, n, func(t, slot, run int) {
		cpu.DotsF16Heads(qh, heads, s.kc16[slot*kvd+kh*hd:], kvd, sc[t:], ctx, run)
	})
	for j := 0; j < heads; j++ {
		// softmax then RoundF16: the scale and the maximum in one pass,
		// the normalisation and the rounding in another.
		hs := sc[j*ctx : j*ctx+n]
		var mx float32
		if m.attnCap == 0 {
			mx = cpu.ScaleMax(hs, kqScale)
		} else {
			mx = float32(math.Inf(-1))
			for t, v := range hs {
				hs[t] = s.capped(v) * kqScale
				mx = max(mx, hs[t])
			}
		}
		softmaxFrom(hs, mx, true)
	}
	out := s.ao[(i*p.Heads+h)*hdv : (i*p.Heads+h+heads)*hdv]
	clear(out)
	s.slotRuns(a.layer, first, n, func(t, slot, run int) {
		cpu.AxpysF16Heads(sc[t:], ctx, s.vc16[slot*vd+kh*hdv:], vd, out, heads, run)
	})
}

// slotRuns calls f for the n positions from first of layer li's cache by
// runs of consecutive slots (the ring wraps once at most): the run's first
// position (counted from first), its first slot and its length.
func (s *State) slotRuns(li, first, n int, f func(t, slot, run int)) {
	ring, base := s.ring[li], s.base[li]
	for t := 0; t < n; {
		slot := base + (first+t)%ring
		run := min(n-t, base+ring-slot)
		f(t, slot, run)
		t += run
	}
}

// flashAttn writes to out the attention of the f16 query qh over the n
// positions from first of KV head kh of layer li (sc: scratch of n
// scores), as ggml's CPU flash attention (ggml-org/llama.cpp @ 0253fb21,
// ggml/src/ggml-cpu/ops.cpp:
// ggml_compute_forward_flash_attn_ext_f16_one_chunk) with an f16 cache:
// an online softmax over the positions in order, the values accumulated
// in binary16 (VKQ16: each rescale and each multiply-add rounded to f16),
// divided by the sum at the end. With a soft cap c the score is
// c*tanhf(dot*(scale/c)).
func (s *State) flashAttn(out, qh, sc []float32, li, kh, first, n int, scale float32) {
	m, p := s.m, s.m.P
	hd, hdv, kvd, vd := p.HeadDim, p.HeadDimV, m.kvDim, m.vDim
	ring, base := s.ring[li], s.base[li]
	c := m.attnCap
	if c != 0 {
		scale /= c
	}
	// The dot products first, into sc (they do not depend on the running
	// maximum), each run of slots in one call.
	s.slotRuns(li, first, n, func(t, slot, run int) {
		cpu.DotsF16FMA(qh, s.kc16[slot*kvd+kh*hd:], kvd, sc[t:t+run])
	})
	mx, sum := float32(math.Inf(-1)), float32(0)
	for t := 0; t < n; t++ {
		slot := base + (first+t)%ring
		sv := sc[t] * scale
		if c != 0 {
			sv = c * tanhf(sv)
		}
		ms, vs := float32(1), float32(1)
		if sv > mx {
			ms = expf(mx - sv)
			mx = sv
			cpu.ScaleRoundF16(out, ms)
		} else {
			vs = expf(sv - mx)
		}
		cpu.MadF16(out, s.vc16[slot*vd+kh*hdv:slot*vd+(kh+1)*hdv], vs)
		sum = sum*ms + vs
	}
	inv := 1 / sum
	for j := range out {
		out[j] *= inv
	}
}

// capped returns x soft-capped by the model's attention cap, if any.
func (s *State) capped(x float32) float32 {
	if c := s.m.attnCap; c != 0 {
		return c * tanhf(x*(1/c))
	}
	return x
}
