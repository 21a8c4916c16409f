package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The binary form of a Vocab (all integers little-endian, counts and string
// lengths as unsigned varints):
//
//	magic    "XVOC"
//	version  uint16 (blobVersion)
//	flags    uint8: bit 0 AddBOS, bit 1 AddEOS, bit 2 AddSpacePrefix, bit 3 has scores, bit 4 has types
//	ids      5 x int32: BOS, EOS, UNK, PAD, EOT
//	strings  Model, Pre, Name, ChatTemplate
//	tokens   count, then count strings
//	scores   count float32 (if flag 3)
//	types    count bytes, each a token type 0..255 (if flag 4)
//	merges   count, then count strings
//
// Nothing may follow. Every count is checked against the bytes that remain
// before anything is allocated for it.
const (
	blobMagic   = "XVOC"
	blobVersion = 1
)

const (
	flagAddBOS = 1 << iota
	flagAddEOS
	flagAddSpacePrefix
	flagScores
	flagTypes
)

// MarshalBinary encodes v in the versioned binary form that a .xdna file
// stores. Token types must lie in 0..255.
func (v *Vocab) MarshalBinary() ([]byte, error) {
	if v.Scores != nil && len(v.Scores) != len(v.Tokens) {
		return nil, fmt.Errorf("%w: %d scores for %d tokens", ErrFormat, len(v.Scores), len(v.Tokens))
	}
	if v.Types != nil && len(v.Types) != len(v.Tokens) {
		return nil, fmt.Errorf("%w: %d token types for %d tokens", ErrFormat, len(v.Types), len(v.Tokens))
	}
	size := 64 + len(v.Model) + len(v.Pre) + len(v.Name) + len(v.ChatTemplate) + 5*len(v.Tokens) + 9*len(v.Merges)
	for _, t := range v.Tokens {
		size += len(t)
	}
	for _, m := range v.Merges {
		size += len(m)
	}
	b := make([]byte, 0, size)
	b = append(b, blobMagic...)
	b = binary.LittleEndian.AppendUint16(b, blobVersion)
	var fl byte
	if v.AddBOS {
		fl |= flagAddBOS
	}
	if v.AddEOS {
		fl |= flagAddEOS
	}
	if v.AddSpacePrefix {
		fl |= flagAddSpacePrefix
	}
	if v.Scores != nil {
		fl |= flagScores
	}
	if v.Types != nil {
		fl |= flagTypes
	}
	b = append(b, fl)
	for _, id := range []int32{v.BOS, v.EOS, v.UNK, v.PAD, v.EOT} {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
	}
	for _, s := range []string{v.Model, v.Pre, v.Name, v.ChatTemplate} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(v.Tokens)))
	for _, t := range v.Tokens {
		b = appendString(b, t)
	}
	for _, s := range v.Scores {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s))
	}
	for i, t := range v.Types {
		if t < 0 || t > 255 {
			return nil, fmt.Errorf("%w: token %d has type %d (allowed 0..255)", ErrFormat, i, t)
		}
		b = append(b, byte(t))
	}
	b = binary.AppendUvarint(b, uint64(len(v.Merges)))
	for _, m := range v.Merges {
		b = appendString(b, m)
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// BlobError is a malformed vocabulary blob: what was being read and where.
type BlobError struct {
	Offset int
	What   string
	Msg    string
}

func (e *BlobError) Error() string {
	return fmt.Sprintf("vocabulary blob: %s (offset %d): %s", e.What, e.Offset, e.Msg)
}

func (e *BlobError) Unwrap() error { return ErrFormat }

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what, format string, a ...any) {
	if r.err == nil {
		r.err = &BlobError{Offset: r.off, What: what, Msg: fmt.Sprintf(format, a...)}
	}
}

func (r *reader) rest() int { return len(r.b) - r.off }

func (r *reader) bytes(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.rest() {
		r.fail(what, "%d bytes needed, %d left", n, r.rest())
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail(what, "bad varint")
		return 0
	}
	r.off += n
	return x
}

// count reads a count of items of at least minSize bytes each, checked
// against the remaining bytes and max.
func (r *reader) count(what string, minSize, max int) int {
	x := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	if x > uint64(max) || x*uint64(minSize) > uint64(r.rest()) {
		r.fail(what, "count %d exceeds the %d bytes left (or the cap %d)", x, r.rest(), max)
		return 0
	}
	return int(x)
}

func (r *reader) str(what string) string {
	n := r.count(what, 1, math.MaxInt32)
	return string(r.bytes(what, n))
}

// MaxMerges caps the merge count accepted from a blob.
const MaxMerges = 1 << 23

// UnmarshalBinary decodes a blob written by MarshalBinary and validates the
// result (see Validate).
func (v *Vocab) UnmarshalBinary(data []byte) error {
	var nv Vocab
	if err := nv.decode(data); err != nil {
		return err
	}
	if err := nv.Validate(); err != nil {
		return fmt.Errorf("vocabulary blob: %w", err)
	}
	*v = nv
	return nil
}

// FromBinary is UnmarshalBinary and then New, with the vocabulary validated
// once (by New, whose map of the token texts the tokenizer keeps) rather
// than twice: on a vocabulary of 128 Ki tokens each validation builds a
// map of them. The errors are UnmarshalBinary's.
func FromBinary(data []byte) (*Tokenizer, error) {
	v := new(Vocab)
	if err := v.decode(data); err != nil {
		return nil, err
	}
	t, err := New(v)
	if err != nil {
		return nil, fmt.Errorf("vocabulary blob: %w", err)
	}
	return t, nil
}

// decode is UnmarshalBinary without the validation, into v, a zero Vocab
// (which it may leave part filled on an error).
func (v *Vocab) decode(data []byte) error {
	r := &reader{b: data}
	if m := r.bytes("magic", len(blobMagic)); r.err == nil && string(m) != blobMagic {
		r.off = 0
		r.fail("magic", "got %q, want %q", m, blobMagic)
	}
	if p := r.bytes("version", 2); r.err == nil {
		if ver := binary.LittleEndian.Uint16(p); ver != blobVersion {
			r.fail("version", "version %d, this build reads %d", ver, blobVersion)
		}
	}
	var fl byte
	if p := r.bytes("flags", 1); r.err == nil {
		fl = p[0]
		if fl >= 1<<5 {
			r.fail("flags", "unknown flag bits %#x", fl)
		}
	}
	if p := r.bytes("special ids", 20); r.err == nil {
		for i, id := range []*int32{&v.BOS, &v.EOS, &v.UNK, &v.PAD, &v.EOT} {
			*id = int32(binary.LittleEndian.Uint32(p[4*i:]))
		}
	}
	v.Model = r.str("model")
	v.Pre = r.str("pre")
	v.Name = r.str("name")
	v.ChatTemplate = r.str("chat template")
	n := r.count("token count", 1, MaxTokens)
	if r.err == nil {
		v.Tokens = make([]string, n)
		for i := range v.Tokens {
			v.Tokens[i] = r.str("token")
		}
	}
	if fl&flagScores != 0 {
		if p := r.bytes("scores", 4*n); r.err == nil {
			v.Scores = make([]float32, n)
			for i := range v.Scores {
				v.Scores[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
			}
		}
	}
	if fl&flagTypes != 0 {
		if p := r.bytes("token types", n); r.err == nil {
			v.Types = make([]int32, n)
			for i := range v.Types {
				v.Types[i] = int32(p[i])
			}
		}
	}
	if m := r.count("merge count", 1, MaxMerges); r.err == nil && m > 0 {
		v.Merges = make([]string, m)
		for i := range v.Merges {
			v.Merges[i] = r.str("merge")
		}
	}
	if r.err == nil && r.rest() != 0 {
		r.fail("end", "%d trailing bytes", r.rest())
	}
	if r.err != nil {
		return r.err
	}
	v.AddBOS = fl&flagAddBOS != 0
	v.AddEOS = fl&flagAddEOS != 0
	v.AddSpacePrefix = fl&flagAddSpacePrefix != 0
	return nil
}
