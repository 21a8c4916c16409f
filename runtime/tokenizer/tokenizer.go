package tokenizer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Token attributes (llama.cpp's llama_token_attr), derived from the token
// types and then adjusted by text as llama_vocab::impl::load does.
const (
	attrUnknown uint16 = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrNormalized
	attrLStrip
	attrRStrip
)

// eogTexts are the texts that llama.cpp marks end-of-generation (and control).
var eogTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~[",
}

// fimEOGTexts are FIM pad/repo/separator texts, also end-of-generation.
var fimEOGTexts = [][]string{
	{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
	{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
	{"<|file_sep|>"},
}

// fimTexts are the FIM prefix, suffix and middle texts, which llama.cpp
// makes control (the first found of each group).
var fimTexts = [][]string{
	{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"},
	{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"},
	{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"},
}

// Tokenizer encodes and decodes text with one vocabulary. It is safe for
// concurrent use.
type Tokenizer struct {
	v      *Vocab
	bpe    bool
	pre    preType
	texts  []string         // [n] token texts ("" replaced as llama.cpp does)
	attrs  []uint16         // [n] token attributes
	toID   map[string]int32 // text -> id
	spec   []int32          // control, user-defined and unknown ids, longest text first
	eog    []int32          // end-of-generation ids, ascending
	clean  bool             // clean_up_tokenization_spaces in Decode
	pieces []string         // [n] token_to_piece(special=true)

	// byte-level BPE
	syms    map[string]int32 // raw byte string -> symbol (every token and merge part)
	symTok  []int32          // [symbols] token id of a symbol, -1 if it is none
	merges  map[uint64]merge // (left symbol, right symbol) -> rank and result
	byteSym [256]int32       // symbol of each single byte, -1 if none
	byteTok [256]int32       // token of each single byte, -1 if none

	// SentencePiece
	spmByte [256]int32 // token of each byte (<0xXX>, else the byte itself), -1 if none
}

type merge struct {
	rank int32
	sym  int32
}

// New builds a tokenizer for v. It fails for a model or pre-tokenizer it
// does not implement, naming it.
func New(v *Vocab) (*Tokenizer, error) {
	// Validate, with the map of texts it makes kept.
	if err := v.validateFields(); err != nil {
		return nil, err
	}
	toID, err := v.index()
	if err != nil {
		return nil, err
	}
	n := len(v.Tokens)
	t := &Tokenizer{v: v, texts: make([]string, n), attrs: make([]uint16, n), toID: toID}
	for i, s := range v.Tokens {
		if s == "" {
			s = emptyText(i)
		}
		t.texts[i] = s
	}
	switch v.Model {
	case ModelSPM:
		t.pre = preType{name: "default"}
	case ModelBPE:
		t.bpe = true
		t.pre, _ = lookupPre(v.Pre)
		t.clean = t.pre.cleanSpaces
	}
	t.setAttrs()
	if t.bpe {
		t.buildBPE()
	} else {
		for b := 0; b < 256; b++ {
			t.spmByte[b] = -1
			if id, ok := t.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.spmByte[b] = id
			} else if id, ok := t.toID[string([]byte{byte(b)})]; ok {
				t.spmByte[b] = id
			}
		}
	}
	t.pieces = make([]string, n)
	for i := range t.pieces {
		t.pieces[i] = t.tokenToPiece(int32(i), true)
	}
	return t, nil
}

// setAttrs derives the attributes, special-token list and EOG set.
func (t *Tokenizer) setAttrs() {
	v := t.v
	for i := range t.attrs {
		switch v.typ(i) {
		case TypeUnknown:
			t.attrs[i] = attrUnknown
		case TypeUnused:
			t.attrs[i] = attrUnused
		case TypeNormal:
			t.attrs[i] = attrNormal
		case TypeControl:
			t.attrs[i] = attrControl
		case TypeUserDefined:
			t.attrs[i] = attrUserDefined
		case TypeByte:
			t.attrs[i] = attrByte
		default:
			t.attrs[i] = 0
		}
	}
	eog := map[int32]bool{}
	mark := func(text string) (int32, bool) {
		id, ok := t.toID[text]
		if ok {
			t.attrs[id] |= attrControl
		}
		return id, ok
	}
	if v.EOT >= 0 {
		eog[v.EOT] = true
	}
	for _, s := range eotTexts {
		mark(s)
	}
	for _, group := range fimTexts {
		for _, s := range group {
			if _, ok := mark(s); ok {
				break
			}
		}
	}
	for _, group := range fimEOGTexts { // llama.cpp takes one of each group
		for _, s := range group {
			if id, ok := mark(s); ok {
				eog[id] = true
				break
			}
		}
	}
	for _, s := range eogTexts {
		if id, ok := mark(s); ok {
			eog[id] = true
		}
	}
	for _, s := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := t.toID[s]; ok {
			t.attrs[id] = attrUserDefined
		}
	}
	if v.EOS >= 0 {
		eog[v.EOS] = true
	}
	// <|end|> is no EOG next to <|return|> and <|call|> (o200k_harmony) or
	// <|calls|> and <|flush|> (solar-open); </s> is none next to <|tool_response> (gemma4).
	has := func(s string) bool { id, ok := t.toID[s]; return ok && eog[id] }
	if end, ok := t.toID["<|end|>"]; ok && eog[end] &&
		((has("<|return|>") && (has("<|call|>") || has("<|calls|>"))) || ((has("<|call|>") || has("<|calls|>")) && has("<|flush|>"))) {
		delete(eog, end)
		t.attrs[end] = attrUserDefined
	}
	if s, ok := t.toID["</s>"]; ok && eog[s] && has("<|tool_response>") {
		delete(eog, s)
		t.attrs[s] = attrNormal
	}
	for id := range eog {
		t.eog = append(t.eog, id)
	}
	slices.Sort(t.eog)

	for i, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.spec = append(t.spec, int32(i))
		}
	}
	// llama.cpp sorts by length only (std::sort); ties go by id here.
	slices.SortStableFunc(t.spec, func(a, b int32) int { return cmp.Compare(len(t.texts[b]), len(t.texts[a])) })

	if name := strings.ToLower(v.Name); strings.Contains(name, "phi-3") || strings.Contains(name, "phi3") {
		for _, id := range t.spec {
			t.attrs[id] |= attrRStrip
		}
		if id, ok := t.toID["</s>"]; ok {
			t.attrs[id] |= attrRStrip
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := t.toID[s]; ok {
				t.attrs[id] &^= attrRStrip
			}
		}
	}
}

// buildBPE interns every token and merge part as a raw byte string.
func (t *Tokenizer) buildBPE() {
	v := t.v
	t.syms = make(map[string]int32, len(v.Tokens)+len(v.Merges))
	t.symTok = make([]int32, 0, len(v.Tokens)+len(v.Merges)/4)
	intern := func(raw string) int32 {
		if s, ok := t.syms[raw]; ok {
			return s
		}
		s := int32(len(t.symTok))
		t.syms[raw] = s
		t.symTok = append(t.symTok, -1)
		return s
	}
	var buf []byte
	for i, s := range t.texts {
		var ok bool
		buf, ok = unByteEncode(buf[:0], s)
		if !ok {
			continue
		}
		sym := intern(string(buf))
		if t.symTok[sym] < 0 {
			t.symTok[sym] = int32(i)
		}
	}
	t.merges = make(map[uint64]merge, len(v.Merges))
	var lb, rb []byte
	for i, m := range v.Merges {
		k := strings.IndexByte(m[min(1, len(m)):], ' ')
		if k < 0 {
			continue // llama.cpp ranks it as ("", ""), which never matches
		}
		k += min(1, len(m))
		var ok1, ok2 bool
		lb, ok1 = unByteEncode(lb[:0], m[:k])
		rb, ok2 = unByteEncode(rb[:0], m[k+1:])
		if !ok1 || !ok2 || len(lb) == 0 || len(rb) == 0 {
			continue
		}
		l, r := intern(string(lb)), intern(string(rb))
		key := uint64(l)<<32 | uint64(uint32(r))
		if _, dup := t.merges[key]; dup {
			continue // the first rank wins
		}
		t.merges[key] = merge{rank: int32(i), sym: intern(string(lb) + string(rb))}
	}
	for b := 0; b < 256; b++ {
		t.byteSym[b] = -1
		t.byteTok[b] = -1
		if s, ok := t.syms[string([]byte{byte(b)})]; ok {
			t.byteSym[b] = s
			t.byteTok[b] = t.symTok[s]
		}
	}
}

// Vocab returns the vocabulary of t. It must not be modified.
func (t *Tokenizer) Vocab() *Vocab { return t.v }

// NumTokens returns the vocabulary size.
func (t *Tokenizer) NumTokens() int { return len(t.texts) }

// BOS returns the BOS id, -1 if none.
func (t *Tokenizer) BOS() int32 { return t.v.BOS }

// EOS returns the EOS id, -1 if none.
func (t *Tokenizer) EOS() int32 { return t.v.EOS }

// IsEOG reports whether id ends generation: EOS, EOT and the tokens that
// llama.cpp recognises by text (<|im_end|>, <|eot_id|>, <end_of_turn>, ...).
func (t *Tokenizer) IsEOG(id int32) bool {
	_, ok := slices.BinarySearch(t.eog, id)
	return ok
}

// EOG returns the end-of-generation ids in ascending order.
func (t *Tokenizer) EOG() []int32 { return slices.Clone(t.eog) }

// IsControl reports whether id is a control (or unknown) token, which Decode
// renders as nothing.
func (t *Tokenizer) IsControl(id int32) bool {
	return id >= 0 && int(id) < len(t.attrs) && t.attrs[id]&(attrControl|attrUnknown) != 0
}

// TokenText returns the stored text of id ("" if out of range).
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.texts) {
		return ""
	}
	return t.texts[id]
}

// Encode tokenizes text as llama_tokenize with add_special: BOS first when
// the vocabulary adds it (and EOS last when it adds that). With special,
// control tokens written in the text (such as "<|im_start|>") become their
// ids; user-defined tokens always do.
func (t *Tokenizer) Encode(text string, special bool) []int32 {
	return t.encode(text, true, special)
}

// EncodeRaw is Encode without BOS and EOS.
func (t *Tokenizer) EncodeRaw(text string, special bool) []int32 {
	return t.encode(text, false, special)
}

type frag struct {
	tok    int32 // >= 0: a special token; -1: text[lo:hi]
	lo, hi int
}

func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// partition splits text at the special tokens as tokenizer_st_partition does:
// longest token text first, each over the text fragments still left.
func (t *Tokenizer) partition(text string, parseSpecial bool) []frag {
	if text == "" {
		return nil
	}
	frags := []frag{{-1, 0, len(text)}}
	var next []frag
	for _, id := range t.spec {
		a := t.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		s := t.texts[id]
		if !strings.Contains(text, s) {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.tok >= 0 {
				next = append(next, f)
				continue
			}
			lo, hi := f.lo, f.hi
			for lo < hi {
				k := strings.Index(text[lo:hi], s)
				if k < 0 {
					break
				}
				m := lo + k
				l := m
				if a&attrLStrip != 0 {
					for l > lo && isCSpace(text[l-1]) {
						l--
					}
				}
				if l > lo {
					next = append(next, frag{-1, lo, l})
				}
				next = append(next, frag{id, 0, 0})
				lo = m + len(s)
				if lo < hi && a&attrRStrip != 0 {
					for lo < hi && isCSpace(text[lo]) {
						lo++
					}
				}
			}
			if lo < hi {
				next = append(next, frag{-1, lo, hi})
			}
		}
		frags, next = next, frags
	}
	return frags
}

func (t *Tokenizer) encode(text string, addSpecial, parseSpecial bool) []int32 {
	frags := t.partition(text, parseSpecial)
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.v.AddBOS {
		out = append(out, t.v.BOS)
	}
	if t.bpe {
		var st bpeState
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f.tok)
				continue
			}
			out = t.bpeText(out, text[f.lo:f.hi], &st)
		}
	} else {
		var st spmState
		prevSpecial := true
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f.tok)
				prevSpecial = true
				continue
			}
			s := text[f.lo:f.hi]
			if t.v.AddSpacePrefix && prevSpecial {
				s = " " + s
			}
			out = t.spm(out, strings.ReplaceAll(s, " ", spmSpace), &st)
			prevSpecial = false
		}
	}
	if addSpecial && t.v.AddEOS {
		out = append(out, t.v.EOS)
	}
	return out
}

// spmSpace is U+2581, SentencePiece's escaped space.
const spmSpace = "\u2581"

// tokenToPiece is llama_vocab::impl::token_to_piece without lstrip.
func (t *Tokenizer) tokenToPiece(id int32, special bool) string {
	if id < 0 || int(id) >= len(t.texts) {
		return ""
	}
	a := t.attrs[id]
	if !special && a&(attrUnknown|attrControl) != 0 {
		return ""
	}
	text := t.texts[id]
	switch {
	case a&(attrUnknown|attrControl|attrUserDefined) != 0:
		return text
	case a&attrNormal != 0:
		if !t.bpe {
			return strings.ReplaceAll(text, spmSpace, " ")
		}
		return decodeBPEText(text)
	case a&attrByte != 0:
		if len(text) >= 5 {
			var b byte
			for _, c := range []byte(text[3:5]) {
				b <<= 4
				switch {
				case c >= '0' && c <= '9':
					b |= c - '0'
				case c >= 'a' && c <= 'f':
					b |= c - 'a' + 10
				case c >= 'A' && c <= 'F':
					b |= c - 'A' + 10
				}
			}
			return string([]byte{b})
		}
	}
	return ""
}

// decodeBPEText is llama_decode_text: byte-encoded codepoints back to bytes,
// "[UNK_BYTE_0x..]" for any codepoint outside the byte map.
func decodeBPEText(text string) string {
	var b []byte
	for _, r := range decodeLenient(nil, text) {
		if c, ok := runeBytes[r]; ok {
			b = append(b, c)
			continue
		}
		b = append(b, "[UNK_BYTE_0x"...)
		for _, u := range appendCP(nil, r) {
			b = fmt.Appendf(b, "%02x", u)
		}
		b = append(b, text...)
		b = append(b, ']')
	}
	return string(b)
}

// Piece returns the text of one token as llama.cpp's token_to_piece with
// special rendering: SPM U+2581 becomes a space and <0xXX> its byte,
// byte-level BPE codepoints become their bytes, and control tokens show
// their text. A piece may be part of a UTF-8 sequence.
func (t *Tokenizer) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Decode returns the text of ids as llama_detokenize with remove_special
// and without unparse_special: a leading BOS and trailing EOS that the
// vocabulary adds are dropped, control tokens render as nothing, the space
// that SPM prefixes is removed from the first token (unless a BOS was
// dropped, as llama.cpp does), and byte-level BPE vocabularies with
// clean_up_tokenization_spaces tidy " ," and the like.
func (t *Tokenizer) Decode(ids []int32) string {
	removeSpace := t.v.AddSpacePrefix
	if t.v.AddBOS && len(ids) > 0 && ids[0] == t.v.BOS {
		removeSpace = false
		ids = ids[1:]
	}
	if t.v.AddEOS && len(ids) > 0 && ids[len(ids)-1] == t.v.EOS {
		ids = ids[:len(ids)-1]
	}
	var b []byte
	for i, id := range ids {
		p := ""
		if id >= 0 && int(id) < len(t.pieces) && t.attrs[id]&(attrUnknown|attrControl) == 0 {
			p = t.pieces[id] // token_to_piece(special=false) renders control and unknown as ""
		}
		if i == 0 && removeSpace && strings.HasPrefix(p, " ") {
			p = p[1:]
		}
		b = append(b, p...)
	}
	if t.clean {
		b = cleanSpaces(b)
	}
	return string(b)
}

// cleanSpaces is the three passes of llama.cpp's clean_spaces in detokenize.
func cleanSpaces(text []byte) []byte {
	n := len(text)
	// " ?", " !", " .", " ,"
	total := min(n, 1)
	for i := 1; i < n; i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			total--
		}
		text[total] = x
		total++
	}
	// " ' "
	n, total = total, min(total, 1)
	for i := 1; i < n; i++ {
		x := text[i]
		if x == '\'' && i+1 < n && text[i-1] == ' ' && text[i+1] == ' ' {
			total--
			i++
			text[i] = 0
		}
		text[total] = x
		total++
	}
	// " 's", " 'm", " 're", " 've"
	n, total = total, min(total, 1)
	for i := 1; i < n; i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < n {
			x1 := text[i+1]
			if x1 == 's' || x1 == 'm' {
				total--
			} else if i+2 < n {
				x2 := text[i+2]
				if (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e') {
					total--
				}
			}
		}
		text[total] = x
		total++
	}
	return text[:total]
}
