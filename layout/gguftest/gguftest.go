// Package gguftest writes GGUF files for tests and benchmarks: a plain
// writer (metadata, tensor infos, aligned data) and a generator of
// random-weight Llama-shaped models of any size, streamed to disk.
package gguftest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
)

// KV is one metadata entry. Value may be uint32, int32, float32, bool,
// string, uint64, []string, []float32 or []int32.
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor to write. Data, if nil, is produced by Fill.
type Tensor struct {
	Name string
	Type planar.Type
	Dims []int // ne order
	Data []byte
	// Fill, if set, writes the tensor's bytes to w (for tensors too large to hold).
	Fill func(w io.Writer) error
}

// Size returns the data size of t.
func (t *Tensor) Size() int64 {
	n := int64(1)
	for _, d := range t.Dims[1:] {
		n *= int64(d)
	}
	return n * int64(t.Type.RowBytes(t.Dims[0]))
}

const alignment = 32

// Write writes a GGUF v3 file with kvs and tensors (in the given order).
func Write(path string, kvs []KV, tensors []Tensor) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = write(w, kvs, tensors)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func write(bw io.Writer, kvs []KV, tensors []Tensor) error {
	w := &counter{w: bw}
	le := binary.LittleEndian
	put := func(v any) { binary.Write(w, le, v) }
	str := func(s string) { put(uint64(len(s))); io.WriteString(w, s) }
	if err := writeHeader(w, kvs, len(tensors)); err != nil {
		return err
	}
	off := int64(0)
	for _, t := range tensors {
		str(t.Name)
		put(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			put(uint64(d))
		}
		put(uint32(t.Type))
		put(uint64(off))
		off = (off + t.Size() + alignment - 1) / alignment * alignment
	}
	pad := func() {
		if r := w.n % alignment; r != 0 {
			w.Write(make([]byte, alignment-r))
		}
	}
	pad()
	for _, t := range tensors {
		start := w.n
		if t.Fill != nil {
			if err := t.Fill(w); err != nil {
				return err
			}
		} else {
			if int64(len(t.Data)) != t.Size() {
				return fmt.Errorf("gguftest: tensor %q: %d bytes of data, shape needs %d", t.Name, len(t.Data), t.Size())
			}
			w.Write(t.Data)
		}
		if w.n-start != t.Size() {
			return fmt.Errorf("gguftest: tensor %q: wrote %d bytes, want %d", t.Name, w.n-start, t.Size())
		}
		pad()
	}
	return nil
}

func writeHeader(w io.Writer, kvs []KV, ntensors int) error {
	le := binary.LittleEndian
	put := func(v any) { binary.Write(w, le, v) }
	str := func(s string) { put(uint64(len(s))); io.WriteString(w, s) }
	w.Write([]byte("GGUF"))
	put(uint32(3))
	put(uint64(ntensors))
	put(uint64(len(kvs)))
	for _, kv := range kvs {
		str(kv.Key)
		switch v := kv.Value.(type) {
		case uint32:
			put(uint32(4))
			put(v)
		case int32:
			put(uint32(5))
			put(v)
		case float32:
			put(uint32(6))
			put(v)
		case bool:
			put(uint32(7))
			put(v)
		case string:
			put(uint32(8))
			str(v)
		case uint64:
			put(uint32(10))
			put(v)
		case []string:
			put(uint32(9))
			put(uint32(8))
			put(uint64(len(v)))
			for _, s := range v {
				str(s)
			}
		case []float32:
			put(uint32(9))
			put(uint32(6))
			put(uint64(len(v)))
			put(v)
		case []int32:
			put(uint32(9))
			put(uint32(5))
			put(uint64(len(v)))
			put(v)
		default:
			return fmt.Errorf("gguftest: metadata %q: unsupported value %T", kv.Key, kv.Value)
		}
	}
	return nil
}

// Shape is the shape of a generated Llama-family model.
type Shape struct {
	Arch             string // "llama" or "qwen2"
	Layers, Dim, FFN int
	Heads, HeadsKV   int
	Vocab            int
	Type             planar.Type // weight type of every matrix (Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K, F16, F32)
	// Q4KM overrides Type with llama.cpp's Q4_K_M choice per tensor
	// (Q4KMType).
	Q4KM    bool
	Seed    uint64
	Context int
	Tied    bool // no output.weight: the output reuses token_embd
}

// Qwen05B is the shape of Qwen2.5-0.5B with a 32000-token vocabulary.
var Qwen05B = Shape{Arch: "llama", Layers: 24, Dim: 896, FFN: 4864, Heads: 14, HeadsKV: 2, Vocab: 32000, Type: planar.Q4_0, Seed: 1, Context: 2048}

// Tiny is a small model shape (a few MiB) for tests that need no fixture.
var Tiny = Shape{Arch: "llama", Layers: 2, Dim: 128, FFN: 384, Heads: 4, HeadsKV: 2, Vocab: 512, Type: planar.Q8_0, Seed: 1, Context: 512}

// RandomBlocks writes n blocks of typ of random but valid data to w: f16
// scales small and finite, codes uniform.
func RandomBlocks(w io.Writer, typ planar.Type, elems int64, r *rand.Rand) error {
	bs := int64(typ.BlockSize())
	nb := elems / bs
	buf := make([]byte, 0, 1<<16)
	scale := func(b []byte) { binary.LittleEndian.PutUint16(b, f16(float32(0.002+0.01*r.Float64()))) }
	for i := int64(0); i < nb; i++ {
		blk := make([]byte, typ.BlockBytes())
		switch typ {
		case planar.Q4_0, planar.Q5_0, planar.Q8_0:
			scale(blk)
			for j := 2; j < len(blk); j++ {
				blk[j] = byte(r.Uint32())
			}
		case planar.Q4_K, planar.Q5_K:
			// d, dmin, then 6-bit scales and mins, (high bits,) codes: every
			// byte pattern after the two f16 is a valid block.
			scale(blk)
			scale(blk[2:])
			for j := 4; j < len(blk); j++ {
				blk[j] = byte(r.Uint32())
			}
		case planar.Q6_K:
			// low codes, high codes, int8 scales, then d.
			for j := 0; j < len(blk)-2; j++ {
				blk[j] = byte(r.Uint32())
			}
			binary.LittleEndian.PutUint16(blk[len(blk)-2:], f16(float32(0.0002+0.001*r.Float64())))
		case planar.F16:
			binary.LittleEndian.PutUint16(blk, f16(float32(r.NormFloat64()*0.05)))
		case planar.F32:
			binary.LittleEndian.PutUint32(blk, math.Float32bits(float32(r.NormFloat64()*0.05)))
		default:
			return fmt.Errorf("gguftest: random %s not supported", typ)
		}
		buf = append(buf, blk...)
		if len(buf) >= 1<<16-64 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

// f16 converts a small normal float32 to IEEE half (truncating the mantissa).
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	if exp <= 0 {
		return sign
	}
	if exp >= 31 {
		return sign | 0x7bff
	}
	return sign | uint16(exp)<<10 | uint16((b>>13)&0x3ff)
}

// Q4KMType is the type llama.cpp's quantizer (llama_tensor_get_type) gives
// the matrix name, of rows of k elements in a model of layers layers, for
// the mix Q4_K_M: Q6_K for the output and for attn_v and ffn_down in the
// layers use_more_bits picks (the first and last eighth and every third one
// between), Q4_K elsewhere; where k is not a multiple of 256 the K-quant
// falls back to Q5_0 (for Q4_K) or Q8_0 (for Q6_K), as it does for
// Qwen2.5-0.5B (896 wide), whose Q4_K_M file is mostly Q5_0 and Q8_0.
func Q4KMType(name string, layers, k int) planar.Type {
	t := planar.Q4_K
	layer := -1
	fmt.Sscanf(name, "blk.%d.", &layer)
	moreBits := layer >= 0 && (layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2)
	switch {
	case name == "output.weight":
		t = planar.Q6_K
	case moreBits && (strings.HasSuffix(name, ".attn_v.weight") || strings.HasSuffix(name, ".ffn_down.weight")):
		t = planar.Q6_K
	}
	if k%256 != 0 {
		if t == planar.Q6_K {
			return planar.Q8_0
		}
		return planar.Q5_0
	}
	return t
}

// WriteModel writes a random-weight model of shape s to path, streaming the
// weights so that memory stays small whatever the size. The vocabulary is a
// SentencePiece-style byte vocabulary padded with synthetic pieces.
func WriteModel(path string, s Shape) error {
	hd := s.Dim / s.Heads
	kvDim := hd * s.HeadsKV
	r := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	ones := func(n int) []byte {
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
		}
		return b
	}
	mat := func(name string, k, n int) Tensor {
		seed := r.Uint64()
		typ := s.Type
		if s.Q4KM {
			typ = Q4KMType(name, s.Layers, k)
		}
		return Tensor{Name: name, Type: typ, Dims: []int{k, n}, Fill: func(w io.Writer) error {
			return RandomBlocks(w, typ, int64(k)*int64(n), rand.New(rand.NewPCG(seed, 1)))
		}}
	}
	var ts []Tensor
	ts = append(ts, mat("token_embd.weight", s.Dim, s.Vocab))
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			Tensor{Name: p + "attn_norm.weight", Type: planar.F32, Dims: []int{s.Dim}, Data: ones(s.Dim)},
			mat(p+"attn_q.weight", s.Dim, s.Dim),
			mat(p+"attn_k.weight", s.Dim, kvDim),
			mat(p+"attn_v.weight", s.Dim, kvDim),
			mat(p+"attn_output.weight", s.Dim, s.Dim),
			Tensor{Name: p + "ffn_norm.weight", Type: planar.F32, Dims: []int{s.Dim}, Data: ones(s.Dim)},
			mat(p+"ffn_gate.weight", s.Dim, s.FFN),
			mat(p+"ffn_up.weight", s.Dim, s.FFN),
			mat(p+"ffn_down.weight", s.FFN, s.Dim),
		)
	}
	ts = append(ts, Tensor{Name: "output_norm.weight", Type: planar.F32, Dims: []int{s.Dim}, Data: ones(s.Dim)})
	if !s.Tied {
		ts = append(ts, mat("output.weight", s.Dim, s.Vocab))
	}
	a := s.Arch
	ctx := s.Context
	if ctx == 0 {
		ctx = 2048
	}
	kvs := []KV{
		{"general.architecture", a},
		{"general.name", fmt.Sprintf("random-%s-%dx%d", a, s.Layers, s.Dim)},
		{a + ".context_length", uint32(ctx)},
		{a + ".embedding_length", uint32(s.Dim)},
		{a + ".block_count", uint32(s.Layers)},
		{a + ".feed_forward_length", uint32(s.FFN)},
		{a + ".attention.head_count", uint32(s.Heads)},
		{a + ".attention.head_count_kv", uint32(s.HeadsKV)},
		{a + ".attention.layer_norm_rms_epsilon", float32(1e-6)},
		{a + ".rope.freq_base", float32(10000)},
	}
	kvs = append(kvs, Vocab(s.Vocab)...)
	return Write(path, kvs, ts)
}

// Vocab returns the metadata of a SentencePiece vocabulary of n tokens:
// <unk>, <s>, </s>, the 256 byte tokens, then synthetic pieces.
func Vocab(n int) []KV {
	toks := make([]string, 0, n)
	scores := make([]float32, 0, n)
	types := make([]int32, 0, n)
	add := func(s string, sc float32, t int32) {
		toks = append(toks, s)
		scores = append(scores, sc)
		types = append(types, t)
	}
	add("<unk>", 0, 2)
	add("<s>", 0, 3)
	add("</s>", 0, 3)
	for b := 0; b < 256 && len(toks) < n; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 0, 6)
	}
	letters := "abcdefghijklmnopqrstuvwxyz"
	for i := 0; len(toks) < n; i++ {
		s := "\u2581"
		for j := i; ; j /= 26 {
			s += string(letters[j%26])
			if j < 26 {
				break
			}
		}
		add(s, -float32(i), 1)
	}
	return []KV{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", toks},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
	}
}

// Info is a tensor info written verbatim, for crafting malformed files.
type Info struct {
	Name   string
	Type   uint32
	Dims   []uint64
	Offset uint64
}

// Raw returns the bytes of a GGUF v3 file with the given metadata and tensor
// infos taken as they are, followed by dataSize zero bytes of tensor data.
func Raw(kvs []KV, infos []Info, dataSize int) ([]byte, error) {
	var b bytesBuffer
	w := &counter{w: &b}
	if err := writeHeader(w, kvs, len(infos)); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	for _, in := range infos {
		binary.Write(w, le, uint64(len(in.Name)))
		io.WriteString(w, in.Name)
		binary.Write(w, le, uint32(len(in.Dims)))
		binary.Write(w, le, in.Dims)
		binary.Write(w, le, in.Type)
		binary.Write(w, le, in.Offset)
	}
	if r := w.n % alignment; r != 0 {
		w.Write(make([]byte, alignment-r))
	}
	w.Write(make([]byte, dataSize))
	return b, nil
}

type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

// FromKV converts metadata as layout normalises it (uint64, int64, float64,
// []int64, ...) back to values Write accepts. Round trips through layout
// give the same normalised values.
func FromKV(key string, v any) (KV, error) {
	switch x := v.(type) {
	case uint64, string, bool, []string, []float32:
		return KV{key, x}, nil
	case int64:
		if x < math.MinInt32 || x > math.MaxInt32 {
			return KV{}, fmt.Errorf("gguftest: %q: %d does not fit int32", key, x)
		}
		return KV{key, int32(x)}, nil
	case float64:
		if float64(float32(x)) != x {
			return KV{}, fmt.Errorf("gguftest: %q: %v is no float32", key, x)
		}
		return KV{key, float32(x)}, nil
	case []int64:
		out := make([]int32, len(x))
		for i, e := range x {
			if e < math.MinInt32 || e > math.MaxInt32 {
				return KV{}, fmt.Errorf("gguftest: %q[%d]: %d does not fit int32", key, i, e)
			}
			out[i] = int32(e)
		}
		return KV{key, out}, nil
	}
	return KV{}, fmt.Errorf("gguftest: %q: cannot write %T", key, v)
}

// Rewrite writes dst, a copy of the GGUF file src with its metadata edited
// by kv (nil: unchanged) and without the tensors drop says (nil: none),
// for tests of what a model that differs from a good one in one way does.
// The metadata goes through layout's normalised values (FromKV); the
// alignment is Write's.
func Rewrite(src, dst string, kv func([]KV) []KV, drop func(name string) bool) error {
	g, err := layout.OpenGGUF(src)
	if err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var kvs []KV
	for _, x := range g.KV {
		if strings.HasPrefix(x.Key, "general.alignment") {
			continue
		}
		k, err := FromKV(x.Key, x.Value)
		if err != nil {
			return err
		}
		kvs = append(kvs, k)
	}
	if kv != nil {
		kvs = kv(kvs)
	}
	var ts []Tensor
	for i := range g.Tensors {
		x := &g.Tensors[i]
		if drop != nil && drop(x.Name) {
			continue
		}
		b := make([]byte, x.Size)
		if err := g.ReadTensor(f, x, b); err != nil {
			return err
		}
		ts = append(ts, Tensor{Name: x.Name, Type: x.Type, Dims: x.Dims, Data: b})
	}
	return Write(dst, kvs, ts)
}
