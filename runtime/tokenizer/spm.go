package tokenizer

// SentencePiece as llm_tokenizer_spm_session::tokenize: start from one
// symbol per UTF-8 character (by lead byte, unvalidated) and repeatedly merge
// the adjacent pair whose concatenation is the token of highest score
// (leftmost on ties). Every merged symbol is a token, so a final symbol that
// is none is a single character, emitted as byte tokens (<0xXX>, else the
// byte itself, else UNK where llama.cpp would throw).

type spmSym struct {
	off, n     int32 // bytes [off, off+n) of the text; n == 0 once merged away
	prev, next int32
}

type spmBigram struct {
	score       float32
	left, right int32
	size        int32
}

// before orders the queue: highest score first, then leftmost.
func (a spmBigram) less(b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

type spmState struct {
	syms []spmSym
	heap queue[spmBigram]
}

func (t *Tokenizer) spmBigram(st *spmState, text string, left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := st.syms[left], st.syms[right]
	id, ok := t.toID[text[l.off:l.off+l.n+r.n]]
	if !ok {
		return
	}
	st.heap.push(spmBigram{score: t.v.score(int(id)), left: left, right: right, size: l.n + r.n})
}

// spm appends the tokens of text, whose spaces are already escaped.
func (t *Tokenizer) spm(out []int32, text string, st *spmState) []int32 {
	if text == "" {
		return out
	}
	st.syms = st.syms[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := int32(len(st.syms))
		st.syms = append(st.syms, spmSym{off: int32(off), n: int32(n), prev: i - 1, next: i + 1})
		off += n
	}
	st.syms[len(st.syms)-1].next = -1
	st.heap = st.heap[:0]
	for i := 1; i < len(st.syms); i++ {
		t.spmBigram(st, text, int32(i-1), int32(i))
	}
	for len(st.heap) > 0 {
		bg := st.heap.pop()
		l, r := &st.syms[bg.left], &st.syms[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			st.syms[r.next].prev = bg.left
		}
		t.spmBigram(st, text, l.prev, bg.left)
		t.spmBigram(st, text, bg.left, l.next)
	}
	for i := int32(0); i >= 0; i = st.syms[i].next {
		s := st.syms[i]
		piece := text[s.off : s.off+s.n]
		if id, ok := t.toID[piece]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			if id := t.spmByte[piece[j]]; id >= 0 {
				out = append(out, id)
			} else if t.v.UNK >= 0 {
				out = append(out, t.v.UNK)
			}
		}
	}
	return out
}
