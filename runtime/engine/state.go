package engine

import (
	"fmt"

	"github.com/xdna-go/xdna/arch"
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

	// The KV cache holds, for each layer li, ring[li] positions from
	// position slot base[li]: ctx for a layer that attends to everything,
	// its window plus a batch for a windowed one (position p in slot
	// p % ring[li]).
	kc   []float32 // [layer][ring][kvDim] keys, roped (CacheF32)
	vc   []float32 // [layer][ring][vDim] values (CacheF32)
	kc16 []uint16  // [layer][ring][kvDim] keys as f16 (CacheF16)
	vc16 []uint16  // [layer][ring][vDim] values as f16 (CacheF16)
	base []int     // [layer] first position slot of the layer
	ring []int     // [layer] position slots of the layer

	x      []float32 // [batch][dim] residual stream
	xn     []float32 // [batch][dim] normed input of a block
	tmp    []float32 // [batch][dim] block output
	qkv    []float32 // [batch][qDim+kvDim+vDim] fused projection output
	q      []float32 // [batch][qDim]
	k      []float32 // [batch][kvDim]
	v      []float32 // [batch][vDim]
	ao     []float32 // [batch][Heads*HeadDimV] attention output
	gu     []float32 // [batch][2*ffn] fused gate|up output
	gate   []float32 // [batch][ffn], then act(gate)*up
	up     []float32 // [batch][ffn]
	cs     []float32 // [rope][batch][RopeDim] cos/sin per token, per rope of the model
	scores []float32 // [threads][m.scoreHeads()][ctx] attention scratch
	qh     []float32 // [threads][m.scoreHeads()][HeadDim] queries rounded to f16 (CacheF16)
	logits []float32 // [vocab]

	attn attnTask
	norm normTask
	qkvT qkvTask
	gluT gluTask
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
		cs:     make([]float32, len(m.ropes)*batch*p.RopeDim),
		scores: make([]float32, m.pool.Threads()*m.scoreHeads()*ctx),
		logits: make([]float32, m.vocab),
	}
	s.base, s.ring = make([]int, p.Layers), make([]int, p.Layers)
	slots := 0
	for li := range m.layers {
		s.base[li], s.ring[li] = slots, m.ringSize(li, ctx, batch)
		slots += s.ring[li]
	}
	if m.opts.Cache == CacheF16 {
		s.kc16 = make([]uint16, slots*m.kvDim)
		s.vc16 = make([]uint16, slots*m.vDim)
		s.qh = make([]float32, m.pool.Threads()*m.scoreHeads()*p.HeadDim)
	} else {
		s.kc = make([]float32, slots*m.kvDim)
		s.vc = make([]float32, slots*m.vDim)
	}
	s.attn.s = s
	s.qkvT.s = s
	return s
}

// scoreHeads returns the query heads whose scores a thread of the
// attention holds at once: a KV group's with the f16 cache (attendF16),
// one otherwise.
func (m *Model) scoreHeads() int {
	if m.opts.Cache == CacheF16 && !m.opts.FlashAttn {
		return m.P.Heads / m.P.HeadsKV
	}
	return 1
}

// ringSize returns the KV cache positions layer li keeps with a context of
// ctx and batches of batch tokens: all of them, or for a layer with a
// window w the w+batch-1 positions the window of a batch's tokens can
// reach, and one more (so that Truncate can drop a token).
func (m *Model) ringSize(li, ctx, batch int) int {
	if w := m.layers[li].window; w > 0 {
		return min(ctx, w+batch)
	}
	return ctx
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
		row := x[i*dim : (i+1)*dim]
		cpu.EmbedRow(m.embd, int(t), row)
		if m.embScale != 1 {
			scale(row, m.embScale)
		}
	}
	rd := p.RopeDim
	for r, ro := range m.ropes {
		cs := s.cs[r*s.batch*rd:]
		for i := range tokens {
			ropeCache(cs[i*rd:(i+1)*rd], s.pos+i, ro.thetaScale, ro.freqScale, ro.factors, ro.yarn)
		}
	}
	for li := range m.layers {
		l := &m.layers[li]
		s.rmsNorms(xn, x, l.vec[arch.AttnNorm], b)
		q, k, v := s.q[:b*qd], s.k[:b*kvd], s.v[:b*vd]
		qkv := l.mat[arch.QKV]
		s.qkvT.layer, s.qkvT.fused = li, qkv != nil
		if qkv != nil {
			m.matMat(qkv, xn, s.qkv[:b*(qd+kvd+vd)], b)
		} else {
			m.matMat(l.mat[arch.Q], xn, q, b)
			m.matMat(l.mat[arch.K], xn, k, b)
			m.matMat(l.mat[arch.V], xn, v, b)
		}
		m.pool.For(b, perTokenGrain, &s.qkvT)
		s.attention(li, b)
		m.matMat(l.mat[arch.AttnOut], s.ao[:b*p.Heads*p.HeadDimV], tmp, b)
		if w := l.vec[arch.PostAttnNorm]; w != nil {
			s.rmsNorms(tmp, tmp, w, b)
		}
		add(x, tmp)

		s.rmsNorms(xn, x, l.vec[arch.FFNNorm], b)
		gate, up := s.gate[:b*ffn], s.up[:b*ffn]
		gs, us, stride := gate, up, ffn // where gate and up rows are, and their stride
		if gu := l.mat[arch.GateUp]; gu != nil {
			gs, us, stride = s.gu[:b*2*ffn], s.gu[ffn:b*2*ffn], 2*ffn
			m.matMat(gu, xn, gs, b)
		} else {
			m.matMat(l.mat[arch.Gate], xn, gate, b)
			m.matMat(l.mat[arch.Up], xn, up, b)
		}
		s.gluT = gluTask{g: gs, u: us, h: gate, stride: stride, n: ffn, gelu: m.A.Family.Act == arch.GELUTanhGLU}
		m.pool.For(b, perTokenGrain, &s.gluT)
		m.matMat(l.mat[arch.Down], gate, tmp, b)
		if w := l.vec[arch.PostFFNNorm]; w != nil {
			s.rmsNorms(tmp, tmp, w, b)
		}
		add(x, tmp)
	}
	s.pos += b
	if from >= b {
		return
	}
	n := b - from
	s.rmsNorms(xn[:n*dim], x[from*dim:b*dim], m.outNorm, n)
	out := logits[:n*m.vocab]
	m.matMat(m.output, xn[:n*dim], out, n)
	if m.finalCap != 0 {
		softcap(out, m.finalCap)
	}
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

// gluTask writes h[i] = act(g[i]) * u[i] for the rows of n elements of a
// batch (g and u rows stride apart, h rows n apart), act silu, or gelu
// (tanh) as ggml computes it (gegluRow).
type gluTask struct {
	g, u, h   []float32
	stride, n int
	gelu      bool
}

func (t *gluTask) Run(_, lo, hi int) {
	for i := lo; i < hi; i++ {
		if t.gelu {
			gegluRow(t.h[i*t.n:(i+1)*t.n], t.g[i*t.stride:], t.u[i*t.stride:])
		} else {
			cpu.SiluMul(t.h[i*t.n:(i+1)*t.n], t.g[i*t.stride:], t.u[i*t.stride:])
		}
	}
}

// qkvTask takes each token of a batch from the projections to the cache:
// the split of the fused output, biases, Q/K norms, rope, the query scale
// (arch.Family.QueryScale), and the store of K and V at the token's
// position of layer layer.
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
		if b := l.vec[arch.BiasQ]; b != nil {
			add(qi, b)
		}
		if b := l.vec[arch.BiasK]; b != nil {
			add(ki, b)
		}
		if b := l.vec[arch.BiasV]; b != nil {
			add(vi, b)
		}
		cs := s.cs[(l.rope*s.batch+i)*rd : (l.rope*s.batch+i+1)*rd]
		qNorm, kNorm := l.vec[arch.QNorm], l.vec[arch.KNorm]
		for h := 0; h < p.Heads; h++ {
			qh := qi[h*hd : (h+1)*hd]
			if qNorm != nil {
				rmsNorm(qh, qh, qNorm, m.eps)
			}
			s.rope(qh, cs)
		}
		if m.A.Family.QueryScale {
			scale(qi, m.kqScale)
		}
		for h := 0; h < p.HeadsKV; h++ {
			kh := ki[h*hd : (h+1)*hd]
			if kNorm != nil {
				rmsNorm(kh, kh, kNorm, m.eps)
			}
			s.rope(kh, cs)
		}
		slot := s.base[li] + (s.pos+i)%s.ring[li]
		if s.kc16 != nil {
			toF16(s.kc16[slot*kvd:(slot+1)*kvd], ki)
			toF16(s.vc16[slot*vd:(slot+1)*vd], vi)
		} else {
			copy(s.kc[slot*kvd:(slot+1)*kvd], ki)
			copy(s.vc[slot*vd:(slot+1)*vd], vi)
		}
	}
}

func (s *State) rope(x, cs []float32) {
	if s.m.A.Family.Rope == arch.RopeNeoX {
		ropeNeox(x, cs)
	} else {
		ropeNorm(x, cs)
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
//
// A windowed layer keeps only the positions its window reaches (and a
// batch), so a cut further back than that cannot keep its start: then the
// whole cache is dropped (Pos() says where the next token goes).
func (s *State) Truncate(n int) {
	if n < 0 {
		n = 0
	}
	if n >= s.pos {
		return
	}
	for li, l := range s.m.layers {
		// The positions still in layer li's slots are pos-ring .. pos-1;
		// the next token, at n, needs n-window+1 .. n-1.
		if l.window > 0 && max(0, n-l.window+1) < s.pos-s.ring[li] {
			n = 0
			break
		}
	}
	s.pos = n
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
	heads := int64(m.scoreHeads())
	elem, qh := int64(4), int64(0)
	if m.opts.Cache == CacheF16 {
		elem, qh = 2, threads*heads*int64(p.HeadDim)
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
	slots := int64(0)
	for li := range m.layers {
		slots += int64(m.ringSize(li, ctx, batch))
	}
	parts := []int64{
		mul(slots, int64(m.kvDim+m.vDim), elem), // K and V
		mul(threads, heads, int64(ctx), 4),      // scores
		mul(int64(batch), int64(3*m.dim+2*(m.qDim+m.kvDim+m.vDim)+p.Heads*p.HeadDimV+4*p.FeedForward+len(m.ropes)*p.RopeDim), 4),
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
