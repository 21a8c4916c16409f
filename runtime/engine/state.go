package engine

import (
	"fmt"

	"github.com/xdna-go/xdna/runtime/cpu"
)

// State is one sequence being run on a Model: its KV cache, its position
// and every buffer the forward pass needs, allocated once by NewState.
// A State is not safe for concurrent use.
type State struct {
	m     *Model
	ctx   int // positions the cache holds
	batch int // tokens per forward step
	pos   int // tokens in the cache

	kc   []float32 // [layer][ctx][kvDim] keys, roped (CacheF32)
	vc   []float32 // [layer][ctx][vDim] values (CacheF32)
	kc16 []uint16  // [layer][ctx][kvDim] keys as f16 (CacheF16)
	vc16 []uint16  // [layer][ctx][vDim] values as f16 (CacheF16)

	x      []float32 // [batch][dim] residual stream
	xn     []float32 // [batch][dim] normed input of a block
	tmp    []float32 // [batch][dim] block output
	qkv    []float32 // [batch][qDim+kvDim+vDim] fused projection output
	q      []float32 // [batch][qDim]
	k      []float32 // [batch][kvDim]
	v      []float32 // [batch][vDim]
	ao     []float32 // [batch][Heads*HeadDimV] attention output
	gu     []float32 // [batch][2*ffn] fused gate|up output
	gate   []float32 // [batch][ffn], then silu(gate)*up
	up     []float32 // [batch][ffn]
	cs     []float32 // [batch][RopeDim] cos/sin per token
	scores []float32 // [threads][ctx] attention scratch
	qh     []float32 // [threads][HeadDim] query rounded to f16 (CacheF16)
	logits []float32 // [vocab]

	attn  attnTask
	norm  normTask
	qkvT  qkvTask
	siluT siluTask
}

// DefaultContext caps the context that NewState picks by itself (from the
// model's training context, which can be 128 Ki tokens and a KV cache of
// tens of GiB).
const DefaultContext = 4096

// NewState returns a fresh sequence with a KV cache of ctx positions
// (ctx <= 0: Options.Context, else the model's training context capped at
// DefaultContext).
func (m *Model) NewState(ctx int) *State {
	if ctx <= 0 {
		ctx = m.opts.Context
	}
	if ctx <= 0 {
		ctx = min(m.P.ContextLength, DefaultContext)
	}
	if ctx <= 0 {
		ctx = DefaultContext
	}
	batch := m.opts.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	batch = min(batch, ctx)
	p := m.P
	ffn := p.FeedForward
	s := &State{
		m: m, ctx: ctx, batch: batch,
		x:      make([]float32, batch*m.dim),
		xn:     make([]float32, batch*m.dim),
		tmp:    make([]float32, batch*m.dim),
		qkv:    make([]float32, batch*(m.qDim+m.kvDim+m.vDim)),
		q:      make([]float32, batch*m.qDim),
		k:      make([]float32, batch*m.kvDim),
		v:      make([]float32, batch*m.vDim),
		ao:     make([]float32, batch*p.Heads*p.HeadDimV),
		gu:     make([]float32, batch*2*ffn),
		gate:   make([]float32, batch*ffn),
		up:     make([]float32, batch*ffn),
		cs:     make([]float32, batch*p.RopeDim),
		scores: make([]float32, m.pool.Threads()*ctx),
		logits: make([]float32, m.vocab),
	}
	if m.opts.Cache == CacheF16 {
		s.kc16 = make([]uint16, p.Layers*ctx*m.kvDim)
		s.vc16 = make([]uint16, p.Layers*ctx*m.vDim)
		s.qh = make([]float32, m.pool.Threads()*p.HeadDim)
	} else {
		s.kc = make([]float32, p.Layers*ctx*m.kvDim)
		s.vc = make([]float32, p.Layers*ctx*m.vDim)
	}
	s.attn.s = s
	s.qkvT.s = s
	return s
}

// Pos returns the number of tokens in the cache: the position of the next
// token.
func (s *State) Pos() int { return s.pos }

// Context returns the number of positions the cache holds.
func (s *State) Context() int { return s.ctx }

// Reset empties the cache; the next token is at position 0.
func (s *State) Reset() { s.pos = 0 }

// Prefill runs the prompt tokens from the current position, in batches of
// Options.Batch tokens (matrix-matrix products, causal attention), and
// returns the logits of the last token. The slice is the State's own and
// is overwritten by the next call.
func (s *State) Prefill(tokens []int32) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("empty prompt")
	}
	if err := s.check(tokens); err != nil {
		return nil, err
	}
	for i := 0; i < len(tokens); i += s.batch {
		b := tokens[i:min(i+s.batch, len(tokens))]
		from, out := len(b), []float32(nil)
		if i+len(b) == len(tokens) {
			from, out = len(b)-1, s.logits
		}
		s.forward(b, from, out)
	}
	return s.logits, nil
}

// Decode runs one token at the current position and returns its logits
// (the State's own slice, overwritten by the next call). It allocates
// nothing.
func (s *State) Decode(token int32) ([]float32, error) {
	t := [1]int32{token}
	if err := s.check(t[:]); err != nil {
		return nil, err
	}
	s.forward(t[:], 0, s.logits)
	return s.logits, nil
}

func (s *State) check(tokens []int32) error {
	if s.pos+len(tokens) > s.ctx {
		if s.pos == 0 {
			return fmt.Errorf("prompt of %d tokens exceeds the context of %d", len(tokens), s.ctx)
		}
		return fmt.Errorf("%d tokens at position %d exceed the context of %d", len(tokens), s.pos, s.ctx)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= s.m.vocab {
			return fmt.Errorf("token %d (at %d) is outside the vocabulary of %d", t, i, s.m.vocab)
		}
	}
	return nil
}

// forward runs tokens (at most s.batch, checked) at positions s.pos.. and
// advances s.pos. The logits of tokens[from:] are written to logits, one
// row of Vocab() per token.
func (s *State) forward(tokens []int32, from int, logits []float32) {
	m, p := s.m, s.m.P
	b := len(tokens)
	dim, qd, kvd, vd, ffn := m.dim, m.qDim, m.kvDim, m.vDim, p.FeedForward
	x, xn, tmp := s.x[:b*dim], s.xn[:b*dim], s.tmp[:b*dim]
	for i, t := range tokens {
		cpu.EmbedRow(m.embd, int(t), x[i*dim:(i+1)*dim])
	}
	rd := p.RopeDim
	for i := range tokens {
		ropeCache(s.cs[i*rd:(i+1)*rd], s.pos+i, m.thetaScale, m.freqScale, m.ropeFactors, m.yarn)
	}
	for li := range m.layers {
		l := &m.layers[li]
		s.rmsNorms(xn, x, l.attnNorm, b)
		q, k, v := s.q[:b*qd], s.k[:b*kvd], s.v[:b*vd]
		s.qkvT.layer, s.qkvT.fused = li, l.qkv != nil
		if l.qkv != nil {
			m.matMat(l.qkv, xn, s.qkv[:b*(qd+kvd+vd)], b)
		} else {
			m.matMat(l.q, xn, q, b)
			m.matMat(l.k, xn, k, b)
			m.matMat(l.v, xn, v, b)
		}
		m.pool.For(b, perTokenGrain, &s.qkvT)
		s.attention(li, b)
		m.matMat(l.wo, s.ao[:b*p.Heads*p.HeadDimV], tmp, b)
		add(x, tmp)

		s.rmsNorms(xn, x, l.ffnNorm, b)
		gate, up := s.gate[:b*ffn], s.up[:b*ffn]
		gs, us, stride := gate, up, ffn // where gate and up rows are, and their stride
		if l.gateUp != nil {
			gs, us, stride = s.gu[:b*2*ffn], s.gu[ffn:b*2*ffn], 2*ffn
			m.matMat(l.gateUp, xn, gs, b)
		} else {
			m.matMat(l.gate, xn, gate, b)
			m.matMat(l.up, xn, up, b)
		}
		s.siluT = siluTask{g: gs, u: us, h: gate, stride: stride, n: ffn}
		m.pool.For(b, perTokenGrain, &s.siluT)
		m.matMat(l.down, gate, tmp, b)
		add(x, tmp)
	}
	s.pos += b
	if from >= b {
		return
	}
	n := b - from
	s.rmsNorms(xn[:n*dim], x[from*dim:b*dim], m.outNorm, n)
	m.matMat(m.output, xn[:n*dim], logits[:n*m.vocab], n)
}

// perTokenGrain is the tokens per chunk of the per-token element-wise
// work of a batch (norms, rope, silu), which the pool spreads over its
// threads; one token (decoding) runs on the caller.
const perTokenGrain = 4

// rmsNorms writes the RMS norms of the b rows of x (weights w) to y, rows
// spread over the pool.
func (s *State) rmsNorms(y, x, w []float32, b int) {
	s.norm = normTask{y: y, x: x, w: w, eps: s.m.eps}
	s.m.pool.For(b, perTokenGrain, &s.norm)
}

// normTask is rmsNorm over rows of len(w).
type normTask struct {
	y, x, w []float32
	eps     float32
}

func (t *normTask) Run(_, lo, hi int) {
	d := len(t.w)
	for i := lo; i < hi; i++ {
		rmsNorm(t.y[i*d:(i+1)*d], t.x[i*d:(i+1)*d], t.w, t.eps)
	}
}

// siluTask writes h[i] = silu(g[i]) * u[i] for the rows of n elements of a
// batch (g and u rows stride apart, h rows n apart).
type siluTask struct {
	g, u, h   []float32
	stride, n int
}

func (t *siluTask) Run(_, lo, hi int) {
	for i := lo; i < hi; i++ {
		cpu.SiluMul(t.h[i*t.n:(i+1)*t.n], t.g[i*t.stride:], t.u[i*t.stride:])
	}
}

// qkvTask takes each token of a batch from the projections to the cache:
// the split of the fused output, biases, Q/K norms, rope, and the store of
// K and V at the token's position of layer layer.
type qkvTask struct {
	s     *State
	layer int
	fused bool
}

func (t *qkvTask) Run(_, lo, hi int) {
	s, li := t.s, t.layer
	m, p := s.m, s.m.P
	l := &m.layers[li]
	qd, kvd, vd, hd, rd := m.qDim, m.kvDim, m.vDim, p.HeadDim, p.RopeDim
	for i := lo; i < hi; i++ {
		qi, ki, vi := s.q[i*qd:(i+1)*qd], s.k[i*kvd:(i+1)*kvd], s.v[i*vd:(i+1)*vd]
		if t.fused {
			w := qd + kvd + vd
			r := s.qkv[i*w : (i+1)*w]
			copy(qi, r[:qd])
			copy(ki, r[qd:qd+kvd])
			copy(vi, r[qd+kvd:])
		}
		if l.bq != nil {
			add(qi, l.bq)
		}
		if l.bk != nil {
			add(ki, l.bk)
		}
		if l.bv != nil {
			add(vi, l.bv)
		}
		cs := s.cs[i*rd : (i+1)*rd]
		for h := 0; h < p.Heads; h++ {
			qh := qi[h*hd : (h+1)*hd]
			if l.qNorm != nil {
				rmsNorm(qh, qh, l.qNorm, m.eps)
			}
			s.rope(qh, cs)
		}
		for h := 0; h < p.HeadsKV; h++ {
			kh := ki[h*hd : (h+1)*hd]
			if l.kNorm != nil {
				rmsNorm(kh, kh, l.kNorm, m.eps)
			}
			s.rope(kh, cs)
		}
		pos := s.pos + i
		if s.kc16 != nil {
			toF16(s.kc16[(li*s.ctx+pos)*kvd:(li*s.ctx+pos+1)*kvd], ki)
			toF16(s.vc16[(li*s.ctx+pos)*vd:(li*s.ctx+pos+1)*vd], vi)
		} else {
			copy(s.kc[(li*s.ctx+pos)*kvd:(li*s.ctx+pos+1)*kvd], ki)
			copy(s.vc[(li*s.ctx+pos)*vd:(li*s.ctx+pos+1)*vd], vi)
		}
	}
}

func (s *State) rope(x, cs []float32) {
	if s.m.mode == ropeNeoX {
		ropeNeox(x, cs)
	} else {
		ropeNorm(x, cs)
	}
}

// attention computes s.ao for the b tokens of the batch that starts at
// s.pos, layer li: for each token and head, softmax(q.K^T * scale) over
// positions 0..pos (causal), times V; a query head h reads KV head
// h/(Heads/HeadsKV).
func (s *State) attention(li, b int) {
	a := &s.attn
	a.layer, a.b = li, b
	n := s.pos + b // positions of the last token
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
	for idx := lo; idx < hi; idx++ {
		i, h := idx/p.Heads, idx%p.Heads
		n := s.pos + i + 1
		kh := h / group
		q := s.q[i*qd+h*hd : i*qd+(h+1)*hd]
		sc := s.scores[w*s.ctx : w*s.ctx+n]
		out := s.ao[(i*p.Heads+h)*hdv : (i*p.Heads+h+1)*hdv]
		clear(out)
		if s.kc16 != nil {
			kc := s.kc16[a.layer*s.ctx*kvd : (a.layer+1)*s.ctx*kvd]
			vc := s.vc16[a.layer*s.ctx*vd : (a.layer+1)*s.ctx*vd]
			qh := s.qh[w*hd : (w+1)*hd]
			for j, v := range q {
				qh[j] = roundF16(v)
			}
			for t := range sc {
				sc[t] = cpu.DotF16(qh, kc[t*kvd+kh*hd:]) * m.kqScale
			}
			softmax(sc)
			for t, pt := range sc {
				cpu.AxpyF16(roundF16(pt), vc[t*vd+kh*hdv:t*vd+(kh+1)*hdv], out)
			}
			continue
		}
		kc := s.kc[a.layer*s.ctx*kvd : (a.layer+1)*s.ctx*kvd]
		vc := s.vc[a.layer*s.ctx*vd : (a.layer+1)*s.ctx*vd]
		for t := range sc {
			sc[t] = dot(q, kc[t*kvd+kh*hd:]) * m.kqScale
		}
		softmax(sc)
		for t, pt := range sc {
			axpy(pt, vc[t*vd+kh*hdv:t*vd+(kh+1)*hdv], out)
		}
	}
}

// matMat is the matrix product of the forward pass (a variable so that
// tests can substitute the reference).
var matMat = cpu.MatMat

// matMat computes one weight product through Options.MatMul when set, else
// on the CPU.
func (m *Model) matMat(w *cpu.Matrix, x, y []float32, b int) {
	if m.opts.MatMul != nil {
		m.opts.MatMul.MatMat(m.names[w], w, x, y, b)
		return
	}
	matMat(w, x, y, b, m.pool)
}

// Truncate drops the positions from n on, so that the next token is at
// position n (a conversation that keeps the start of its cache). n above
// Pos() changes nothing.
func (s *State) Truncate(n int) {
	if n < 0 {
		n = 0
	}
	if n < s.pos {
		s.pos = n
	}
}

// StateBytes returns the bytes NewState(ctx) allocates: the KV cache, the
// attention scratch and the buffers of a batch. It lets a caller refuse a
// context that cannot be allocated before allocating anything; it errs when
// the count passes 2^62.
func (m *Model) StateBytes(ctx int) (int64, error) {
	if ctx <= 0 {
		return 0, fmt.Errorf("context %d: want > 0", ctx)
	}
	p := m.P
	batch := m.opts.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	batch = min(batch, ctx)
	threads := int64(m.pool.Threads())
	elem, qh := int64(4), int64(0)
	if m.opts.Cache == CacheF16 {
		elem, qh = 2, threads*int64(p.HeadDim)
	}
	const limit = 1 << 62
	mul := func(a ...int64) int64 {
		r := int64(1)
		for _, x := range a {
			if x < 0 || (x != 0 && r > limit/x) {
				return -1
			}
			r *= x
		}
		return r
	}
	parts := []int64{
		mul(int64(p.Layers), int64(ctx), int64(m.kvDim+m.vDim), elem), // K and V
		mul(threads, int64(ctx), 4),                                   // scores
		mul(int64(batch), int64(3*m.dim+2*(m.qDim+m.kvDim+m.vDim)+p.Heads*p.HeadDimV+4*p.FeedForward+p.RopeDim), 4),
		mul(int64(m.vocab)+qh, 4),
	}
	var total int64
	for _, x := range parts {
		if x < 0 || total > limit-x {
			return 0, fmt.Errorf("context %d: the state's size overflows", ctx)
		}
		total += x
	}
	return total, nil
}
