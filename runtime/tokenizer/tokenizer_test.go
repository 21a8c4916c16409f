package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var (
	storiesPath = filepath.Join(fixtures, "models/stories260K-f32.gguf")
	gpt2Path    = filepath.Join(fixtures, "vocab/ggml-vocab-gpt-2.gguf")
	phi3Path    = filepath.Join(fixtures, "vocab/ggml-vocab-phi-3.gguf")
	spmPath     = filepath.Join(fixtures, "vocab/ggml-vocab-llama-spm.gguf")
	mptPath     = filepath.Join(fixtures, "vocab/ggml-vocab-mpt.gguf")
)

// vocabFiles are the vocabularies the round-trip tests cover.
var vocabFiles = []string{
	storiesPath, spmPath, phi3Path, gpt2Path, mptPath,
	filepath.Join(fixtures, "vocab/ggml-vocab-deepseek-coder.gguf"),
	filepath.Join(fixtures, "vocab/ggml-vocab-deepseek-llm.gguf"),
	filepath.Join(fixtures, "vocab/ggml-vocab-falcon.gguf"),
	filepath.Join(fixtures, "vocab/ggml-vocab-starcoder.gguf"),
	filepath.Join(fixtures, "vocab/ggml-vocab-refact.gguf"),
	filepath.Join(fixtures, "vocab/ggml-vocab-gpt-neox.gguf"),
	filepath.Join(fixtures, "vocab/ggml-vocab-baichuan.gguf"),
}

// TestGoldenPrompts checks the prompt tokens and generated pieces that
// llama.cpp recorded for the fixture models (BOS added, specials parsed).
func TestGoldenPrompts(t *testing.T) {
	cases := []struct{ golden, model, prompt string }{
		{"stories260K-f32.once.json", "stories260K-f32.gguf", "Once upon a time"},
		{"stories260K-f32.dog.json", "stories260K-f32.gguf", "The little dog"},
		{"tiny-llama-q8_0.pierre.json", "tiny-llama-q8_0.gguf", "Pierre said that"},
		{"rand-qwen2-q8_0.hello.json", "rand-qwen2-q8_0.gguf", "Hello world, this is"},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(fixtures, "golden", c.golden))
			if err != nil {
				t.Fatal(err)
			}
			var g struct {
				PromptTokens []int32 `json:"prompt_tokens"`
				Steps        []struct {
					Token int32  `json:"token"`
					Piece string `json:"piece"`
				} `json:"steps"`
			}
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatal(err)
			}
			tk := loadTokenizer(t, filepath.Join(fixtures, "models", c.model))
			if got := tk.Encode(c.prompt, true); !equalIDs(got, g.PromptTokens) {
				t.Errorf("Encode(%q) = %v, want %v", c.prompt, got, g.PromptTokens)
			}
			for i, s := range g.Steps {
				if p := tk.Piece(s.Token); p != s.Piece {
					t.Errorf("step %d: Piece(%d) = %q, want %q", i, s.Token, p, s.Piece)
				}
			}
		})
	}
}

// covered reports whether every byte of s has a byte token, so that no
// byte can be lost (llama.cpp drops a byte without one, or gives UNK).
func covered(tk *Tokenizer, s string) bool {
	for i := 0; i < len(s); i++ {
		if (tk.bpe && tk.byteTok[s[i]] < 0) || (!tk.bpe && tk.spmByte[s[i]] < 0) {
			return false
		}
	}
	return true
}

// TestRoundTripCodepoints follows llama.cpp's test-tokenizer-1-{spm,bpe}:
// every codepoint (but surrogates, and U+2581 for SPM) decodes to itself,
// where the vocabulary has a byte token for each of its bytes.
func TestRoundTripCodepoints(t *testing.T) {
	for _, path := range vocabFiles {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			tk := loadTokenizer(t, path)
			bad, skipped := 0, 0
			// Every codepoint below 0x3400, then a stride through the rest.
			for cp := rune(0); cp <= 0x10FFFF; {
				if s := string(cp); !covered(tk, s) {
					skipped++
				} else if (cp < 0xD800 || cp > 0xDFFF) && cp != 0x2581 {
					if got := tk.Decode(tk.EncodeRaw(s, false)); got != s {
						if bad++; bad <= 5 {
							t.Errorf("U+%04X: %q -> %v -> %q", cp, s, tk.EncodeRaw(s, false), got)
						}
					}
				}
				if cp < 0x3400 {
					cp++
				} else {
					cp += 97
				}
			}
			if bad > 0 {
				t.Errorf("%d codepoints do not round-trip", bad)
			}
			if skipped > 0 {
				t.Logf("%d codepoints skipped: some of their bytes have no token", skipped)
			}
		})
	}
}

// TestRoundTripVectors: the pieces of every vector input join to the input,
// and Decode restores it where llama.cpp does not clean up spaces.
func TestRoundTripVectors(t *testing.T) {
	vs := readVectors(t, filepath.Join(fixtures, "vocab/ggml-vocab-gpt-2.gguf"))
	for _, path := range vocabFiles {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			tk := loadTokenizer(t, path)
			for _, v := range vs {
				ids := tk.EncodeRaw(v.in, false)
				var b strings.Builder
				for _, id := range ids {
					b.WriteString(tk.Piece(id))
				}
				joined := b.String()
				if !tk.bpe && tk.v.AddSpacePrefix && v.in != "" {
					joined = strings.TrimPrefix(joined, " ")
				}
				if joined != v.in {
					t.Errorf("pieces of %q join to %q", v.in, joined)
				}
				if !tk.clean {
					if got := tk.Decode(ids); got != v.in {
						t.Errorf("Decode(EncodeRaw(%q)) = %q", v.in, got)
					}
				}
			}
		})
	}
}

func TestEncodeSpecial(t *testing.T) {
	tk := loadTokenizer(t, phi3Path)
	id := func(s string) int32 {
		i, ok := tk.toID[s]
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return i
	}
	text := "<|user|>\nHi<|end|>\n<|assistant|>\n"
	got := tk.Encode(text, true)
	if got[0] != tk.BOS() || got[1] != id("<|user|>") {
		t.Errorf("Encode(%q, true) = %v: want BOS then <|user|>", text, got)
	}
	var n int
	for _, x := range got {
		if x == id("<|end|>") || x == id("<|assistant|>") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("Encode(%q, true) = %v: want <|end|> and <|assistant|> once each", text, got)
	}
	// Without special parsing the control texts are plain text.
	for _, x := range tk.EncodeRaw(text, false) {
		if x == id("<|user|>") || x == id("<|end|>") {
			t.Errorf("EncodeRaw(%q, false) = %v: control token parsed", text, tk.EncodeRaw(text, false))
		}
	}
	if !tk.IsEOG(id("<|end|>")) || !tk.IsEOG(tk.EOS()) || tk.IsEOG(id("<|user|>")) {
		t.Errorf("IsEOG: <|end|> %v, EOS %v, <|user|> %v", tk.IsEOG(id("<|end|>")), tk.IsEOG(tk.EOS()), tk.IsEOG(id("<|user|>")))
	}
	// Decode drops control tokens; Piece shows them.
	if got := tk.Decode(tk.Encode("<|user|>Hi", true)); got != " Hi" {
		t.Errorf("Decode = %q, want %q (llama.cpp keeps the space after a dropped BOS)", got, " Hi")
	}
	if p := tk.Piece(id("<|user|>")); p != "<|user|>" {
		t.Errorf("Piece(<|user|>) = %q", p)
	}
}

func TestEOG(t *testing.T) {
	tk := loadTokenizer(t, gpt2Path)
	if tk.EOS() != 50256 || !tk.IsEOG(50256) || tk.IsEOG(0) || tk.IsEOG(-1) {
		t.Errorf("gpt-2: EOS %d, EOG %v", tk.EOS(), tk.EOG())
	}
	st := loadTokenizer(t, storiesPath)
	if st.BOS() != 1 || st.EOS() != 2 || !st.IsEOG(2) || st.IsEOG(1) {
		t.Errorf("stories260K: BOS %d EOS %d EOG %v", st.BOS(), st.EOS(), st.EOG())
	}
}

func TestUserDefinedAlwaysSplit(t *testing.T) {
	// GPT-NeoX/MPT space runs are user-defined tokens: matched before BPE
	// even without special parsing.
	tk := loadTokenizer(t, mptPath)
	if got := tk.EncodeRaw("    Hello", false); !equalIDs(got, []int32{50274, 12092}) {
		t.Errorf("EncodeRaw = %v", got)
	}
}

func TestDecodeCleanSpaces(t *testing.T) {
	tk := loadTokenizer(t, gpt2Path)
	for in, want := range map[string]string{
		"Hello , world !":     "Hello, world!",
		"I 'm sure he 's ok":  "I'm sure he's ok",
		"a ' b":               "a'b",
		"we 'll see":          "we 'll see",
		"":                    "",
		" .":                  ".",
		"nothing to clean up": "nothing to clean up",
	} {
		if got := tk.Decode(tk.EncodeRaw(in, false)); got != want {
			t.Errorf("Decode(EncodeRaw(%q)) = %q, want %q", in, got, want)
		}
	}
}

func TestVocabFromGGUF(t *testing.T) {
	tk := loadTokenizer(t, storiesPath)
	v := tk.Vocab()
	if v.Model != ModelSPM || len(v.Tokens) != 512 || !v.AddBOS || v.AddEOS || !v.AddSpacePrefix ||
		v.BOS != 1 || v.EOS != 2 || v.UNK != 0 || v.PAD != -1 {
		t.Errorf("stories260K vocabulary: %+v", *v)
	}
	g := loadTokenizer(t, gpt2Path).Vocab()
	if g.Model != ModelBPE || g.Pre != "gpt-2" || g.AddBOS || g.BOS != 50256 || g.UNK != -1 || len(g.Merges) != 50000 {
		t.Errorf("gpt-2 vocabulary: model %q pre %q addBOS %v BOS %d UNK %d merges %d", g.Model, g.Pre, g.AddBOS, g.BOS, g.UNK, len(g.Merges))
	}
	n := loadTokenizer(t, filepath.Join(fixtures, "vocab/ggml-vocab-gpt-neox.gguf")).Vocab()
	if n.Pre != "default" {
		t.Errorf("gpt-neox (no tokenizer.ggml.pre): Pre = %q, want default", n.Pre)
	}
	if m := loadTokenizer(t, mptPath).Vocab(); m.Tokens[50276] != "  " {
		t.Errorf("mpt token 50276 = %q, want two spaces", m.Tokens[50276])
	}
}

func TestNewErrors(t *testing.T) {
	base := func() *Vocab {
		return &Vocab{Model: ModelBPE, Pre: "gpt-2", Tokens: []string{"a", "b", "ab"}, Merges: []string{"a b"},
			BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	}
	for _, c := range []struct {
		name string
		edit func(v *Vocab)
		want string
	}{
		{"model", func(v *Vocab) { v.Model = "t5" }, `"t5"`},
		{"pre", func(v *Vocab) { v.Pre = "tekken" }, `"tekken"`},
		{"dup", func(v *Vocab) { v.Tokens[1] = "a" }, "duplicate"},
		{"bos", func(v *Vocab) { v.AddBOS = true }, "BOS"},
		{"id", func(v *Vocab) { v.EOS = 3 }, "EOS id 3"},
		{"types", func(v *Vocab) { v.Types = []int32{1} }, "token types"},
		{"empty", func(v *Vocab) { v.Tokens = nil }, "0 tokens"},
	} {
		v := base()
		c.edit(v)
		_, err := New(v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New error %v, want one containing %s", c.name, err, c.want)
		}
	}
	v := base()
	v.Model = "t5"
	if _, err := New(v); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown model: %v is not ErrUnsupported", err)
	}
	tk, err := New(base())
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.EncodeRaw("abba", false); !equalIDs(got, []int32{2, 1, 0}) {
		t.Errorf("tiny BPE: EncodeRaw(abba) = %v, want [2 1 0]", got)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for _, path := range []string{storiesPath, gpt2Path, phi3Path} {
		v := loadTokenizer(t, path).Vocab()
		b, err := v.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var w Vocab
		if err := w.UnmarshalBinary(b); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !reflect.DeepEqual(*v, w) {
			t.Errorf("%s: vocabulary changed in a binary round trip", path)
		}
		// Every truncation fails cleanly.
		for _, n := range []int{0, 3, 4, 6, 7, 26, 27, len(b) / 2, len(b) - 1} {
			if err := new(Vocab).UnmarshalBinary(b[:n]); !errors.Is(err, ErrFormat) {
				t.Errorf("%s truncated to %d bytes: %v", path, n, err)
			}
		}
		if err := new(Vocab).UnmarshalBinary(append(b, 0)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s with a trailing byte: %v", path, err)
		}
	}
	// A huge token count is refused before allocating.
	v := &Vocab{Model: ModelSPM, Tokens: []string{"x"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	b, err := v.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	k := len(b) - 4 // ..., count 1, "x" (len 1, 'x'), merge count 0
	if b[k] != 1 {
		t.Fatalf("layout changed: %x", b)
	}
	bad := append(append(append([]byte{}, b[:k]...), 0xff, 0xff, 0xff, 0x7f), b[k+1:]...)
	if err := new(Vocab).UnmarshalBinary(bad); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "token count") {
		t.Errorf("huge token count: %v", err)
	}
}

func TestChatPrompt(t *testing.T) {
	msgs := []Message{{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}}
	tk := loadTokenizer(t, phi3Path)
	got, err := tk.ChatPrompt(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n"
	if got != want {
		t.Errorf("phi-3 prompt:\n%q\nwant\n%q", got, want)
	}
	// No template: ChatML.
	got, err = loadTokenizer(t, storiesPath).ChatPrompt(msgs[1:2], true)
	if want := "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"; err != nil || got != want {
		t.Errorf("default prompt %q, %v; want %q", got, err, want)
	}
	for _, c := range []struct{ name, want string }{
		{TemplateLlama3, "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{TemplateLlama2Sys, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]Hello.</s>[INST] Bye [/INST]"},
		{TemplateMistralV7, "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi[/INST] Hello.</s>[INST] Bye[/INST]"},
		{TemplateGemma, "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"},
		{TemplateZephyr, "<|system|>\nBe brief.<|endoftext|>\n<|user|>\nHi<|endoftext|>\n<|assistant|>\nHello.<|endoftext|>\n<|user|>\nBye<|endoftext|>\n<|assistant|>\n"},
	} {
		got, err := ApplyTemplate(c.name, msgs, true)
		if err != nil || got != c.want {
			t.Errorf("%s:\n%q, %v\nwant\n%q", c.name, got, err, c.want)
		}
	}
	if _, err := ApplyTemplate("nonesuch", msgs, true); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown template name: %v", err)
	}
}

func TestDetectTemplate(t *testing.T) {
	for _, c := range []struct{ tmpl, want string }{
		{"", TemplateChatML},
		{"llama3", TemplateLlama3},
		{"{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}{% endfor %}", TemplateChatML},
		{"{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] | trim }}<|eot_id|>{% endfor %}", TemplateLlama3},
		{"{% if messages[0]['role'] == 'system' %}<<SYS>>\\n{% endif %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}", TemplateLlama2SysStrip},
		{"{{ bos_token }}{% for message in messages %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endfor %}", TemplateLlama2},
		{"{{'<|user|>' + '\\n' + message['content'] + '<|end|>' + '\\n' + '<|assistant|>' + '\\n'}}", TemplatePhi3},
		{"{{ '<start_of_turn>' + role + '\\n' }}", TemplateGemma},
		{"{{ '<|user|>\\n' + message['content'] + '<|endoftext|>' }}", TemplateZephyr},
		{"[SYSTEM_PROMPT]{{ system }}[/SYSTEM_PROMPT][INST]", TemplateMistralV7},
	} {
		got, ok := DetectTemplate(c.tmpl)
		if !ok || got != c.want {
			t.Errorf("DetectTemplate(%.40q) = %q, %v; want %q", c.tmpl, got, ok, c.want)
		}
	}
	if name, ok := DetectTemplate("{{ messages | tojson }}"); ok {
		t.Errorf("an unknown template was detected as %q", name)
	}
	v := &Vocab{Model: ModelSPM, Tokens: []string{"a"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1, ChatTemplate: "{{ messages | tojson }}"}
	tk, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.ChatPrompt(nil, true); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "tojson") {
		t.Errorf("ChatPrompt with an unknown template: %v", err)
	}
}

// text12K is the War and Peace excerpt (12,000 characters).
func text12K(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join(fixtures, "text/wap-excerpt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEncodeSpeed bounds the time to encode 12 KB with the 50k GPT-2
// vocabulary (target well under 100 ms; the bound leaves room for a busy
// machine).
func TestEncodeSpeed(t *testing.T) {
	tk := loadTokenizer(t, gpt2Path)
	text := text12K(t)
	best := time.Hour
	for range 3 {
		start := time.Now()
		ids := tk.EncodeRaw(text, false)
		if d := time.Since(start); d < best {
			best = d
		}
		if len(ids) < 2000 {
			t.Fatalf("%d tokens for %d bytes", len(ids), len(text))
		}
	}
	t.Logf("12 KB encoded in %v", best)
	if best > 500*time.Millisecond {
		t.Errorf("encoding 12 KB took %v", best)
	}
}

func BenchmarkEncodeBPE(b *testing.B) {
	tk := loadTokenizer(b, gpt2Path)
	text := text12K(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tk.EncodeRaw(text, false)
	}
}

func BenchmarkEncodeSPM(b *testing.B) {
	tk := loadTokenizer(b, spmPath)
	text := text12K(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tk.EncodeRaw(text, false)
	}
}

func BenchmarkDecode(b *testing.B) {
	tk := loadTokenizer(b, gpt2Path)
	ids := tk.EncodeRaw(text12K(b), false)
	b.ReportAllocs()
	for b.Loop() {
		tk.Decode(ids)
	}
}

// checkIDs fails unless every id is in range.
func checkIDs(t *testing.T, tk *Tokenizer, in string, ids []int32) {
	for _, id := range ids {
		if id < 0 || int(id) >= tk.NumTokens() {
			t.Fatalf("%q: id %d out of range", in, id)
		}
	}
}

// FuzzEncode: no panic, ids in range, and the round trips llama.cpp gives
// for valid UTF-8: SPM restores text without U+2581 (invalid UTF-8 can
// swallow the first byte of an escaped space into a byte token), byte-level
// BPE restores any valid UTF-8.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", " ", "Hello world", "  x\n\n\t y", "<|endoftext|>", "<s>hi</s>", "\xff\xfe",
		"\xe2\x96", "3333 333 3.3", "I've 'RE", "我想在apple工作", "🦙🦙", "\xed\xa0\x80", "\xc0\x80"} {
		f.Add(s)
	}
	spm := loadTokenizer(f, storiesPath)
	bpe := loadTokenizer(f, gpt2Path)
	f.Fuzz(func(t *testing.T, s string) {
		for _, special := range []bool{false, true} {
			checkIDs(t, spm, s, spm.Encode(s, special))
			checkIDs(t, bpe, s, bpe.Encode(s, special))
		}
		if !utf8.ValidString(s) {
			return
		}
		if !strings.Contains(s, "\u2581") {
			if got := spm.Decode(spm.EncodeRaw(s, false)); got != s {
				t.Errorf("SPM: %q decodes to %q", s, got)
			}
		}
		var b strings.Builder
		for _, id := range bpe.EncodeRaw(s, false) {
			b.WriteString(bpe.Piece(id))
		}
		if b.String() != s {
			t.Errorf("BPE: pieces of %q join to %q", s, b.String())
		}
	})
}

// FuzzUnmarshal: a blob never panics the decoder or New, and what decodes
// encodes to a blob that decodes to the same vocabulary. FromBinary fails
// where UnmarshalBinary does, with its error, and otherwise gives the
// tokenizer that New makes of the vocabulary UnmarshalBinary gives.
func FuzzUnmarshal(f *testing.F) {
	small := []*Vocab{
		{Model: ModelSPM, Tokens: []string{"<unk>", "<s>", "</s>", "▁a", "b"}, Scores: []float32{0, 0, 0, -1, -2},
			Types: []int32{2, 3, 3, 1, 1}, BOS: 1, EOS: 2, UNK: 0, PAD: -1, EOT: -1, AddBOS: true, AddSpacePrefix: true},
		{Model: ModelBPE, Pre: "llama3", Tokens: []string{"a", "b", "ab", "Ġ", "<|eot_id|>"}, Merges: []string{"a b", "Ġ a"},
			BOS: -1, EOS: 4, UNK: -1, PAD: -1, EOT: 4, ChatTemplate: "llama3"},
	}
	for _, v := range small {
		b, err := v.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	// Blobs that decode but do not validate: a duplicate token (the
	// check that New's map makes), a BOS id out of range, an unknown
	// pre-tokenizer.
	for _, v := range []*Vocab{
		{Model: ModelSPM, Tokens: []string{"a", "b", "a"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1},
		{Model: ModelSPM, Tokens: []string{"a", "", "[EMPTY_1]"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1},
		{Model: ModelSPM, Tokens: []string{"a"}, BOS: 1, EOS: -1, UNK: -1, PAD: -1, EOT: -1},
		{Model: ModelBPE, Pre: "nonesuch", Tokens: []string{"a"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1},
	} {
		b, err := v.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("XVOC\x01\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var v Vocab
		err := v.UnmarshalBinary(data)
		tb, errB := FromBinary(data)
		if err != nil {
			if errB == nil || errB.Error() != err.Error() {
				t.Fatalf("FromBinary: %v; UnmarshalBinary: %v", errB, err)
			}
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v is neither ErrFormat nor ErrUnsupported", err)
			}
			return
		}
		if errB != nil {
			t.Fatalf("FromBinary: %v; UnmarshalBinary took the blob", errB)
		}
		if got, want := mustMarshal(t, tb.Vocab()), mustMarshal(t, &v); !bytes.Equal(got, want) {
			t.Fatal("FromBinary's vocabulary differs from UnmarshalBinary's")
		}
		b, err := v.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		// The round trip is checked on the bytes: a NaN score (any bits
		// the blob gives) is kept bit for bit, which DeepEqual cannot see.
		var w Vocab
		err = w.UnmarshalBinary(b)
		var b2 []byte
		if err == nil {
			b2, err = w.MarshalBinary()
		}
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("re-encoded blob: %v, bytes equal %v", err, bytes.Equal(b, b2))
		}
		tk, err := New(&v)
		if err != nil {
			t.Fatalf("New of a vocabulary that UnmarshalBinary validated: %v", err)
		}
		for _, s := range []string{"ab a", "<s> b", "\xffa"} {
			ids := tk.Encode(s, true)
			if idsB := tb.Encode(s, true); !equalIDs(ids, idsB) {
				t.Fatalf("Encode(%q): New's tokenizer %v, FromBinary's %v", s, ids, idsB)
			}
			for _, id := range ids {
				if id < 0 || int(id) >= tk.NumTokens() {
					t.Fatalf("id %d out of range", id)
				}
			}
			tk.Decode(ids)
		}
		tk.ChatPrompt([]Message{{"user", "hi"}}, true)
	})
}

func mustMarshal(t *testing.T, v *Vocab) []byte {
	t.Helper()
	b, err := v.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
