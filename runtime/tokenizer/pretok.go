package tokenizer

// Pre-tokenizers for byte-level BPE, written to give the splits of llama.cpp's
// unicode_regex_split (src/unicode.cpp) for the regex lists that
// llm_tokenizer_bpe (src/llama-vocab.cpp) assigns to each tokenizer.ggml.pre.
//
// llama.cpp applies the regexes of a list one after another, each to every
// piece the previous one left. Two regexes have hand-written matchers there
// (GPT-2's and Llama 3's); the others run through std::regex (ECMAScript,
// leftmost-first alternation, greedy with backtracking) in which the text
// between two matches becomes a piece of its own. Unicode classes are exact:
// llama.cpp "collapses" every codepoint >= 128 to one byte per category, which
// keeps \p{L}, \p{N}, \p{P}, \p{S}, \p{M} and \s membership intact, and maps
// every non-ASCII White_Space codepoint to \v before matching, which the
// explicit ranges below must respect (see eff).
//
// Each stage appends the end offsets (in codepoints) of the pieces that it
// cuts [lo, hi) into; the last end is always hi.

// split holds one fragment being pre-tokenized.
type split struct {
	cps  []rune  // [n] codepoints
	fl   []uint8 // [n] cpFlags of cps
	ends []int   // piece ends after the stages so far
	tmp  []int
}

type stage func(s *split, lo, hi int)

func (s *split) run(stages []stage) {
	s.ends = append(s.ends[:0], len(s.cps))
	for _, st := range stages {
		s.tmp = s.tmp[:0]
		lo := 0
		for _, hi := range s.ends {
			st(s, lo, hi)
			lo = hi
		}
		s.ends, s.tmp = s.tmp, s.ends
	}
}

func (s *split) emit(end int) { s.tmp = append(s.tmp, end) }

// flag returns the flags of position i, 0 outside [lo, hi).
func (s *split) flag(i, lo, hi int) uint8 {
	if i < lo || i >= hi {
		return 0
	}
	return s.fl[i]
}

// eff is the codepoint that std::wregex sees at i: non-ASCII White_Space
// codepoints are replaced by \v.
func (s *split) eff(i int) rune {
	c := s.cps[i]
	if c > 0x7F && s.fl[i]&fSpace != 0 {
		return 0x0B
	}
	return c
}

// isOther reports [^\s\p{L}\p{N}] for a position inside the piece.
func isOther(f uint8) bool { return f&(fSpace|fLetter|fNumber) == 0 }

// stageGPT2 splits by 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+.
func stageGPT2(s *split, lo, hi int) {
	for p := lo; p < hi; {
		c := s.cps[p]
		if c == '\'' && p+1 < hi {
			n := s.cps[p+1]
			if n == 's' || n == 't' || n == 'm' || n == 'd' {
				p += 2
				s.emit(p)
				continue
			}
			if p+2 < hi {
				nn := s.cps[p+2]
				if (n == 'r' && nn == 'e') || (n == 'v' && nn == 'e') || (n == 'l' && nn == 'l') {
					p += 3
					s.emit(p)
					continue
				}
			}
		}
		q := p
		if c == ' ' {
			q = p + 1
		}
		f2 := s.flag(q, lo, hi)
		switch {
		case f2&fLetter != 0:
			p = runOf(s, q+1, hi, fLetter)
			s.emit(p)
			continue
		case f2&fNumber != 0:
			p = runOf(s, q+1, hi, fNumber)
			s.emit(p)
			continue
		case q < hi && isOther(f2):
			p = q + 1
			for p < hi && isOther(s.fl[p]) {
				p++
			}
			s.emit(p)
			continue
		}
		w := p
		for w < hi && s.fl[w]&fSpace != 0 {
			w++
		}
		switch {
		case w-p > 1 && w < hi: // \s+(?!\S): leave the last space to the next word
			p = w - 1
		case w > p:
			p = w
		default:
			p++
		}
		s.emit(p)
	}
}

// runOf returns the end of the run of positions from i with flag f.
func runOf(s *split, i, hi int, f uint8) int {
	for i < hi && s.fl[i]&f != 0 {
		i++
	}
	return i
}

func lowerASCII(c rune) rune {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// contraction matches (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]) at p.
func contraction(s *split, p, hi int) int {
	if s.cps[p] != '\'' || p+1 >= hi {
		return -1
	}
	n := lowerASCII(s.cps[p+1])
	if n == 's' || n == 't' || n == 'm' || n == 'd' {
		return p + 2
	}
	if p+2 < hi {
		nn := lowerASCII(s.cps[p+2])
		if (n == 'r' && nn == 'e') || (n == 'v' && nn == 'e') || (n == 'l' && nn == 'l') {
			return p + 3
		}
	}
	return -1
}

// llama3Like splits by
// (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// which is Llama 3's regex (maxDigits 3) and Qwen2's (maxDigits 1). Every
// codepoint matches one alternative, so no gaps arise.
func llama3Like(s *split, lo, hi, maxDigits int) {
	for p := lo; p < hi; {
		if e := contraction(s, p, hi); e > 0 {
			p = e
			s.emit(p)
			continue
		}
		c, f := s.cps[p], s.fl[p]
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if f&fLetter != 0 {
			p = runOf(s, p+1, hi, fLetter)
			s.emit(p)
			continue
		}
		if c != '\r' && c != '\n' && f&fNumber == 0 && s.flag(p+1, lo, hi)&fLetter != 0 {
			p = runOf(s, p+2, hi, fLetter)
			s.emit(p)
			continue
		}
		// \p{N}{1,n}
		if f&fNumber != 0 {
			e := p + 1
			for e < hi && e-p < maxDigits && s.fl[e]&fNumber != 0 {
				e++
			}
			p = e
			s.emit(p)
			continue
		}
		//  ?[^\s\p{L}\p{N}]+[\r\n]*
		q := p
		if c == ' ' {
			q = p + 1
		}
		if q < hi && isOther(s.fl[q]) {
			p = q + 1
			for p < hi && isOther(s.fl[p]) {
				p++
			}
			for p < hi && (s.cps[p] == '\r' || s.cps[p] == '\n') {
				p++
			}
			s.emit(p)
			continue
		}
		// whitespace: \s*[\r\n]+ | \s+(?!\S) | \s+
		w, lastNL := p, -1
		for w < hi && s.fl[w]&fSpace != 0 {
			if s.cps[w] == '\r' || s.cps[w] == '\n' {
				lastNL = w
			}
			w++
		}
		switch {
		case lastNL >= 0:
			p = lastNL + 1
		case w-p > 1 && w < hi:
			p = w - 1
		case w > p:
			p = w
		default:
			p++
		}
		s.emit(p)
	}
}

func stageLlama3(s *split, lo, hi int) { llama3Like(s, lo, hi, 3) }
func stageQwen2(s *split, lo, hi int)  { llama3Like(s, lo, hi, 1) }

// stl splits [lo, hi) like std::regex_iterator with the matcher m (which
// returns the end of a match starting at i, or -1): matches and the gaps
// between them become pieces.
func stl(s *split, lo, hi int, m func(s *split, i, hi int) int) {
	pos := lo
	for i := lo; i < hi; {
		e := m(s, i, hi)
		if e < 0 {
			i++
			continue
		}
		if i > pos {
			s.emit(i)
		}
		s.emit(e)
		pos, i = e, e
	}
	if pos < hi {
		s.emit(hi)
	}
}

// \p{N}
func stageDigit(s *split, lo, hi int) {
	stl(s, lo, hi, func(s *split, i, hi int) int {
		if s.fl[i]&fNumber != 0 {
			return i + 1
		}
		return -1
	})
}

// \p{N}+
func stageDigits(s *split, lo, hi int) {
	stl(s, lo, hi, func(s *split, i, hi int) int {
		if s.fl[i]&fNumber != 0 {
			return runOf(s, i+1, hi, fNumber)
		}
		return -1
	})
}

// [0-9][0-9][0-9]
func stageDigits3(s *split, lo, hi int) {
	stl(s, lo, hi, func(s *split, i, hi int) int {
		if i+2 < hi && isASCIIDigit(s.cps[i]) && isASCIIDigit(s.cps[i+1]) && isASCIIDigit(s.cps[i+2]) {
			return i + 3
		}
		return -1
	})
}

func isASCIIDigit(c rune) bool { return c >= '0' && c <= '9' }

// [\p{P}\$\+<=>\^~\|]+ (default) and [\p{P}\$\+<=>\^~\|`]+ (falcon).
func punctRun(backtick bool) stage {
	in := func(s *split, i int) bool {
		if s.fl[i]&fPunct != 0 {
			return true
		}
		switch s.cps[i] {
		case '$', '+', '<', '=', '>', '^', '~', '|':
			return true
		case '`':
			return backtick
		}
		return false
	}
	return func(s *split, lo, hi int) {
		stl(s, lo, hi, func(s *split, i, hi int) int {
			if !in(s, i) {
				return -1
			}
			e := i + 1
			for e < hi && in(s, e) {
				e++
			}
			return e
		})
	}
}

// [\r\n]
func stageCRLF(s *split, lo, hi int) {
	stl(s, lo, hi, func(s *split, i, hi int) int {
		if c := s.cps[i]; c == '\r' || c == '\n' {
			return i + 1
		}
		return -1
	})
}

// spaceOptRun returns the stage \s?X+ for the class X.
func spaceOptRun(in func(s *split, i int) bool) stage {
	return func(s *split, lo, hi int) {
		stl(s, lo, hi, func(s *split, i, hi int) int {
			j := i
			if s.fl[i]&fSpace != 0 && i+1 < hi && in(s, i+1) {
				j = i + 1
			} else if !in(s, i) {
				return -1
			}
			for j < hi && in(s, j) {
				j++
			}
			return j
		})
	}
}

// \s+$: the trailing whitespace of the piece.
func stageTrailingSpace(s *split, lo, hi int) {
	t := hi
	for t > lo && s.fl[t-1]&fSpace != 0 {
		t--
	}
	if t > lo {
		s.emit(t)
	}
	if t < hi {
		s.emit(hi)
	}
}

// rangeRun returns the stage [ranges]+ matched on eff codepoints.
func rangeRun(rs []rng) stage {
	return func(s *split, lo, hi int) {
		stl(s, lo, hi, func(s *split, i, hi int) int {
			if !inRanges(rs, s.eff(i)) {
				return -1
			}
			e := i + 1
			for e < hi && inRanges(rs, s.eff(e)) {
				e++
			}
			return e
		})
	}
}

type rng struct{ lo, hi rune }

func inRanges(rs []rng, c rune) bool {
	for _, r := range rs {
		if c >= r.lo && c <= r.hi {
			return true
		}
	}
	return false
}

// [一-龥ࠀ-一가-퟿] (DeepSeek)
var hanRanges = []rng{{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}}

// [!-/:-~！-／：-～‘-‟　-。] (DeepSeek LLM)
var dsPunctRanges = []rng{{0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}}

// The letter class of DeepSeek LLM's second regex, [A-Za-zµÀ-ÖØ-öø-ƺ...𞤀-𞥃]
// (the cased letters of an older Unicode), as codepoint ranges.
var dsLetterRanges = []rng{
	{'A', 'Z'}, {'a', 'z'}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
	{0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
	{0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
	{0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD},
	{0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A},
	{0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57},
	{0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4},
	{0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3},
	{0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
	{0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124},
	{0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139},
	{0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B},
	{0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
	{0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06},
	{0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
	{0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
}

func flagClass(f uint8) func(s *split, i int) bool {
	return func(s *split, i int) bool { return s.fl[i]&f != 0 }
}

func rangeClass(rs []rng) func(s *split, i int) bool {
	return func(s *split, i int) bool { return inRanges(rs, s.eff(i)) }
}

// preType describes one tokenizer.ggml.pre family.
type preType struct {
	name         string // llama.cpp's LLAMA_VOCAB_PRE_TYPE_ name, lower case
	stages       []stage
	ignoreMerges bool // a word that is a token is not merged
	cleanSpaces  bool // clean_up_tokenization_spaces when decoding
	addBOS       bool // default of tokenizer.ggml.add_bos_token
	noBOS        bool // the BOS id defaults to none
}

var (
	stagesDefault = []stage{punctRun(false), stageGPT2, stageDigits, stageDigits3}
	stagesLlama3  = []stage{stageLlama3}
	stagesGPT2    = []stage{stageGPT2}
	stagesQwen2   = []stage{stageQwen2}
	stagesFalcon  = []stage{punctRun(true), stageGPT2, stageDigits3}
	stagesStar    = []stage{stageDigit, stageGPT2}
	stagesDSLLM   = []stage{stageCRLF, spaceOptRun(rangeClass(dsLetterRanges)),
		spaceOptRun(rangeClass(dsPunctRanges)), stageTrailingSpace, rangeRun(hanRanges), stageDigits}
	stagesDSCoder = []stage{stageCRLF, spaceOptRun(flagClass(fLetter)), spaceOptRun(flagClass(fPunct)),
		rangeRun(hanRanges), stageDigit}
)

// preTypes maps tokenizer.ggml.pre to its family as llama_vocab::impl::load
// does; "" (no pre-tokenizer recorded) means "default".
func lookupPre(pre string) (preType, bool) {
	switch pre {
	case "", "default":
		return preType{name: "default", stages: stagesDefault, cleanSpaces: true}, true
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano":
		return preType{name: "llama3", stages: stagesLlama3, ignoreMerges: true, cleanSpaces: true, addBOS: true}, true
	case "dbrx", "smaug-bpe":
		return preType{name: pre, stages: stagesLlama3, cleanSpaces: true}, true
	case "glm4", "chatglm-bpe":
		return preType{name: "chatglm4", stages: stagesLlama3, cleanSpaces: true, noBOS: true}, true
	case "deepseek-llm":
		return preType{name: pre, stages: stagesDSLLM}, true
	case "deepseek-coder":
		return preType{name: pre, stages: stagesDSCoder}, true
	case "falcon":
		return preType{name: pre, stages: stagesFalcon, cleanSpaces: true}, true
	case "mpt", "olmo", "jais", "exaone4",
		"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert":
		return preType{name: "gpt2", stages: stagesGPT2, cleanSpaces: true}, true
	case "trillion", "granite-docling":
		return preType{name: pre, stages: stagesGPT2}, true
	case "starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2":
		return preType{name: pre, stages: stagesStar, cleanSpaces: true}, true
	case "command-r", "smollm":
		return preType{name: pre, stages: stagesStar}, true
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "grok-2":
		return preType{name: "qwen2", stages: stagesQwen2}, true
	case "megrez", "stablelm2":
		return preType{name: pre, stages: stagesQwen2, cleanSpaces: true}, true
	}
	return preType{}, false
}
