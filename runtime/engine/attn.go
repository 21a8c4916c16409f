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
	grain := max(1, (32<<10)/(n*s.m.P.HeadDim))
	s.m.pool.For(b*s.m.P.Heads, grain, a)
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
		q := s.q[i*qd+h*hd : i*qd+(h+1)*hd]
		sc := s.scores[w*s.ctx : w*s.ctx+n]
		out := s.ao[(i*p.Heads+h)*hdv : (i*p.Heads+h+1)*hdv]
		clear(out)
		if s.kc16 != nil {
			qh := s.qh[w*hd : (w+1)*hd]
			copy(qh, q)
			cpu.RoundF16(qh)
			if m.opts.FlashAttn {
				s.flashAttn(out, qh, a.layer, kh, first, n, kqScale)
				continue
			}
			// The positions by runs of consecutive slots (the ring wraps
			// once at most), each in one call.
			for t := 0; t < n; {
				slot := base + (first+t)%ring
				run := min(n-t, base+ring-slot)
				cpu.DotsF16(qh, s.kc16[slot*kvd+kh*hd:], kvd, sc[t:t+run])
				t += run
			}
			// softmax(sc) then RoundF16: the scale and the maximum in one
			// pass, the normalisation and the rounding in another.
			var mx float32
			if m.attnCap == 0 {
				mx = cpu.ScaleMax(sc, kqScale)
			} else {
				mx = float32(math.Inf(-1))
				for t, v := range sc {
					sc[t] = s.capped(v) * kqScale
					mx = max(mx, sc[t])
				}
			}
			softmaxFrom(sc, mx, true)
			for t := 0; t < n; {
				slot := base + (first+t)%ring
				run := min(n-t, base+ring-slot)
				cpu.AxpysF16(sc[t:t+run], s.vc16[slot*vd+kh*hdv:], vd, out)
				t += run
			}
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

// flashAttn writes to out the attention of the f16 query qh over the n
// positions from first of KV head kh of layer li, as ggml's CPU flash
// attention (ggml-org/llama.cpp @ 0253fb21, ggml/src/ggml-cpu/ops.cpp:
// ggml_compute_forward_flash_attn_ext_f16_one_chunk) with an f16 cache:
// an online softmax over the positions in order, the values accumulated
// in binary16 (VKQ16: each rescale and each multiply-add rounded to f16),
// divided by the sum at the end. With a soft cap c the score is
// c*tanhf(dot*(scale/c)).
func (s *State) flashAttn(out, qh []float32, li, kh, first, n int, scale float32) {
	m, p := s.m, s.m.P
	hd, hdv, kvd, vd := p.HeadDim, p.HeadDimV, m.kvDim, m.vDim
	ring, base := s.ring[li], s.base[li]
	c := m.attnCap
	if c != 0 {
		scale /= c
	}
	mx, sum := float32(math.Inf(-1)), float32(0)
	for t := 0; t < n; t++ {
		slot := base + (first+t)%ring
		sv := dotF16(qh, s.kc16[slot*kvd+kh*hd:]) * scale
		if c != 0 {
			sv = c * tanhf(sv)
		}
		ms, vs := float32(1), float32(1)
		if sv > mx {
			ms = expf(mx - sv)
			mx = sv
			for j, v := range out {
				out[j] = roundF16(v * ms)
			}
		} else {
			vs = expf(sv - mx)
		}
		madF16(out, s.vc16[slot*vd+kh*hdv:slot*vd+(kh+1)*hdv], vs)
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
