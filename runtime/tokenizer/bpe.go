package tokenizer

// Byte-level BPE as llm_tokenizer_bpe_session::tokenize: pre-tokenize, then
// in each word start from one symbol per byte and repeatedly merge the
// adjacent pair of lowest merge rank (leftmost on ties). A final symbol that
// is no token is emitted byte by byte; a byte without a token is dropped.
//
// Symbols are interned raw byte strings (see buildBPE), so a merge is one map
// lookup on two symbol ids instead of a string concatenation.

type bpeSym struct {
	sym        int32 // interned symbol, -1 if the bytes are in no token or merge
	off, n     int32 // bytes [off, off+n) of the word; n == 0 once merged away
	prev, next int32
}

type bpeBigram struct {
	rank        int32
	left, right int32
	size        int32 // bytes of left+right when queued; a mismatch marks it stale
}

// less orders the queue: lowest rank first, then leftmost.
func (a bpeBigram) less(b bpeBigram) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
}

type bpeState struct {
	split split
	word  []byte
	syms  []bpeSym
	heap  queue[bpeBigram]
}

// bpeText pre-tokenizes one text fragment and appends the ids of its words.
func (t *Tokenizer) bpeText(out []int32, text string, st *bpeState) []int32 {
	sp := &st.split
	sp.cps = decodeLenient(sp.cps[:0], text)
	sp.fl = sp.fl[:0]
	for _, c := range sp.cps {
		sp.fl = append(sp.fl, cpFlags(c))
	}
	sp.run(t.pre.stages)
	lo := 0
	for _, hi := range sp.ends {
		st.word = st.word[:0]
		for _, c := range sp.cps[lo:hi] {
			st.word = appendCP(st.word, c)
		}
		out = t.bpeWord(out, st.word, st)
		lo = hi
	}
	return out
}

func (t *Tokenizer) addBigram(st *bpeState, left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := st.syms[left], st.syms[right]
	if l.sym < 0 || r.sym < 0 {
		return
	}
	m, ok := t.merges[uint64(l.sym)<<32|uint64(uint32(r.sym))]
	if !ok {
		return
	}
	st.heap.push(bpeBigram{rank: m.rank, left: left, right: right, size: l.n + r.n})
}

// bpeWord appends the tokens of one pre-tokenized word (raw bytes).
func (t *Tokenizer) bpeWord(out []int32, word []byte, st *bpeState) []int32 {
	if len(word) == 0 {
		return out
	}
	if t.pre.ignoreMerges {
		if s, ok := t.syms[string(word)]; ok && t.symTok[s] >= 0 {
			return append(out, t.symTok[s])
		}
	}
	st.syms = st.syms[:0]
	for i, b := range word {
		st.syms = append(st.syms, bpeSym{sym: t.byteSym[b], off: int32(i), n: 1, prev: int32(i) - 1, next: int32(i) + 1})
	}
	st.syms[len(st.syms)-1].next = -1
	st.heap = st.heap[:0]
	for i := 1; i < len(st.syms); i++ {
		t.addBigram(st, int32(i-1), int32(i))
	}
	for len(st.heap) > 0 {
		bg := st.heap.pop()
		l, r := &st.syms[bg.left], &st.syms[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue
		}
		l.sym = t.merges[uint64(l.sym)<<32|uint64(uint32(r.sym))].sym
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			st.syms[r.next].prev = bg.left
		}
		t.addBigram(st, l.prev, bg.left)
		t.addBigram(st, bg.left, l.next)
	}
	for i := int32(0); i >= 0; i = st.syms[i].next {
		s := st.syms[i]
		if s.sym >= 0 && t.symTok[s.sym] >= 0 {
			out = append(out, t.symTok[s.sym])
			continue
		}
		for _, b := range word[s.off : s.off+s.n] {
			if id := t.byteTok[b]; id >= 0 {
				out = append(out, id)
			}
		}
	}
	return out
}
