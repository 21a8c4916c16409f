package tokenizer

import (
	"sync"
	"unicode"
)

// Codepoint flags, one general category each plus White_Space, as llama.cpp's
// unicode_cpt_flags (src/unicode.h) which its gen-unicode-data.py derives from
// the regex \p{N}, \p{L}, \p{Z}, \p{M}, \p{P}, \p{S}, \p{C} and \s classes.
// Unassigned codepoints (Cn) count as \p{C}.
const (
	fNumber uint8 = 1 << iota
	fLetter
	fSeparator
	fMark
	fPunct
	fSymbol
	fControl
	fSpace // White_Space, regex \s
)

var (
	bmpOnce  sync.Once
	bmpFlags []uint8 // [0x10000] flags of the Basic Multilingual Plane
)

func buildBMP() {
	t := make([]uint8, 0x10000)
	for i := range t {
		t[i] = fControl
	}
	set := func(tab *unicode.RangeTable, f uint8) {
		for _, r := range tab.R16 {
			for c := int(r.Lo); c <= int(r.Hi); c += int(r.Stride) {
				t[c] = f
			}
		}
	}
	set(unicode.L, fLetter)
	set(unicode.N, fNumber)
	set(unicode.Z, fSeparator)
	set(unicode.M, fMark)
	set(unicode.P, fPunct)
	set(unicode.S, fSymbol)
	for _, r := range unicode.White_Space.R16 {
		for c := int(r.Lo); c <= int(r.Hi); c += int(r.Stride) {
			t[c] |= fSpace
		}
	}
	bmpFlags = t
}

// cpFlags returns the flags of codepoint r.
func cpFlags(r rune) uint8 {
	if r >= 0 && r < 0x10000 {
		bmpOnce.Do(buildBMP)
		return bmpFlags[r]
	}
	switch {
	case r < 0 || r > unicode.MaxRune:
		return fControl
	case unicode.Is(unicode.L, r):
		return fLetter
	case unicode.Is(unicode.N, r):
		return fNumber
	case unicode.Is(unicode.M, r):
		return fMark
	case unicode.Is(unicode.P, r):
		return fPunct
	case unicode.Is(unicode.S, r):
		return fSymbol
	case unicode.Is(unicode.Z, r):
		return fSeparator
	}
	return fControl
}

// utf8Len is llama.cpp's unicode_len_utf8: the sequence length announced by a
// lead byte, without validation (continuation bytes count 1).
func utf8Len(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// decodeLenient decodes s to codepoints the way llama.cpp's
// unicode_cpts_from_utf8 does: only the lead bits and the 10xxxxxx
// continuation pattern are checked (overlong forms and surrogates decode);
// a byte that starts no such sequence becomes U+FFFD and is skipped alone.
// Unlike llama.cpp (which throws later on re-encoding), a sequence decoding
// above U+10FFFF is also replaced by U+FFFD, one byte at a time.
func decodeLenient(dst []rune, s string) []rune {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			dst = append(dst, rune(c))
			i++
			continue
		}
		cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
		switch {
		case c&0x40 == 0: // stray continuation byte
		case c&0x20 == 0:
			if cont(1) {
				dst = append(dst, rune(c&0x1F)<<6|rune(s[i+1]&0x3F))
				i += 2
				continue
			}
		case c&0x10 == 0:
			if cont(1) && cont(2) {
				dst = append(dst, rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F))
				i += 3
				continue
			}
		case c&0x08 == 0:
			if cont(1) && cont(2) && cont(3) {
				r := rune(c&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
				if r <= unicode.MaxRune {
					dst = append(dst, r)
					i += 4
					continue
				}
			}
		}
		dst = append(dst, 0xFFFD)
		i++
	}
	return dst
}

// appendCP appends the UTF-8 form of r as llama.cpp's unicode_cpt_to_utf8
// does: surrogates are encoded like any other codepoint.
func appendCP(dst []byte, r rune) []byte {
	switch {
	case r < 0:
		return append(dst, 0xEF, 0xBF, 0xBD)
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	case r <= unicode.MaxRune:
		return append(dst, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(dst, 0xEF, 0xBF, 0xBD)
}

// byteRunes is GPT-2's bytes_to_unicode: every byte maps to a printable
// codepoint (printable Latin-1 maps to itself, the rest to 256+n in order).
var byteRunes, runeBytes = func() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	n := 0
	for c := 0; c < 256; c++ {
		if (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF) {
			b2r[c] = rune(c)
		} else {
			b2r[c] = rune(256 + n)
			n++
		}
		r2b[b2r[c]] = byte(c)
	}
	return
}()

// unByteEncode maps a byte-level BPE token text back to raw bytes; ok is
// false when a codepoint is not in the GPT-2 byte map.
func unByteEncode(dst []byte, s string) ([]byte, bool) {
	for _, r := range s {
		b, ok := runeBytes[r]
		if !ok {
			return dst, false
		}
		dst = append(dst, b)
	}
	return dst, true
}
