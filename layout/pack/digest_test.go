package pack

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
)

// TestContentDigest: the packer's content digest is BLAKE3-256 over the
// metadata in key order and each planned tensor's header and bytes in plan
// order (layout.Source.ContentDigest), computed here again from the GGUF
// file with its own reads; a package has no SHA-256 digest; a byte changed
// in any one tensor changes it.
func TestContentDigest(t *testing.T) {
	in := filepath.Join("../../../shared/fixtures/models", "stories260K-q8_0.gguf")
	dir := t.TempDir()
	digestOf := func(in string) (string, *Plan) {
		out := filepath.Join(dir, "m.xdna")
		plan, err := Run(context.Background(), &Options{Input: in, Output: out, Target: "xdna2", Catalog: kernelsel.Default(), CPUMaxN: 256})
		if err != nil {
			t.Fatal(err)
		}
		f, err := layout.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.Manifest.Source.ContentSHA256 != "" {
			t.Errorf("a new package with content_sha256 %q", f.Manifest.Source.ContentSHA256)
		}
		return f.Manifest.Source.ContentDigest, plan
	}
	got, plan := digestOf(in)

	g, err := layout.OpenGGUF(in)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := blake3.New()
	hashMetadata(h, g)
	var first *layout.Tensor
	for _, e := range plan.Entries {
		for _, p := range e.parts {
			data := make([]byte, p.Size)
			if _, err := src.ReadAt(data, p.Offset); err != nil {
				t.Fatal(err)
			}
			hashTensor(h, p, data)
			if first == nil {
				first = p
			}
		}
	}
	if want := layout.ContentScheme + ":" + hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("content digest %s, want %s", got, want)
	}

	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	b[first.Offset+first.Size/2] ^= 1
	changed := filepath.Join(dir, "changed.gguf")
	if err := os.WriteFile(changed, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if again, _ := digestOf(changed); again == got {
		t.Errorf("a byte of %s changed, the digest did not", first.Name)
	}
}

// hashTensor is what the digest holds of one tensor: its head, then its
// data (the serial reference's order; the pipeline hashes it in pieces,
// hashPiece).
func hashTensor(h hash.Hash, t *layout.Tensor, data []byte) {
	hashTensorHead(h, t, int64(len(data)))
	h.Write(data)
}

// recorder is a hash.Hash that keeps what is written to it.
type recorder struct{ bytes.Buffer }

func (r *recorder) Sum(b []byte) []byte { return append(b, r.Bytes()...) }
func (r *recorder) Size() int           { return 0 }
func (r *recorder) BlockSize() int      { return 1 }

// TestHashMetadataAsFmt: hashMetadata writes, byte for byte, the lines fmt
// prints for "%q=%T:%v\n" of every key and value in key order (the digest
// of every package made before it formatted the arrays itself): the
// metadata of every fixture model, and values made for the edge cases:
// floats of every class and of random bits, integers at the extremes,
// strings empty, spaced, quoted, invalid UTF-8 and longer than the
// buffer, empty arrays, arrays larger than the buffer, every scalar type.
func TestHashMetadataAsFmt(t *testing.T) {
	fmtLines := func(g *layout.GGUF) []byte {
		kvs := append([]layout.KV(nil), g.KV...)
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
		var b bytes.Buffer
		for _, kv := range kvs {
			fmt.Fprintf(&b, "%q=%T:%v\n", kv.Key, kv.Value, kv.Value)
		}
		return b.Bytes()
	}
	check := func(name string, g *layout.GGUF) {
		t.Helper()
		var r recorder
		hashMetadata(&r, g)
		want := fmtLines(g)
		if !bytes.Equal(r.Bytes(), want) {
			i := 0
			for i < min(r.Len(), len(want)) && r.Bytes()[i] == want[i] {
				i++
			}
			t.Errorf("%s: %d bytes, fmt %d; first difference at byte %d: %q, fmt %q", name, r.Len(), len(want), i,
				r.Bytes()[max(0, i-20):min(r.Len(), i+20)], want[max(0, i-20):min(len(want), i+20)])
		}
	}
	models, err := filepath.Glob("../../../shared/fixtures/models/*.gguf")
	if err != nil || len(models) == 0 {
		t.Fatalf("no fixture models (%v)", err)
	}
	for _, m := range models {
		g, err := layout.OpenGGUF(m)
		if err != nil {
			t.Fatal(err)
		}
		check(filepath.Base(m), g)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	floats := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.1, 1e6, 1e-5, 123456789, 1e21, 1e-7, 100000, 1e-4,
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for range 200000 {
		floats = append(floats, math.Float32frombits(rng.Uint32()))
	}
	ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 7}
	for range 100000 {
		ints = append(ints, int64(rng.Uint64())>>rng.IntN(64))
	}
	strs := []string{"", " ", "  ", "a b", `"q"`, "\\", "\xff\xfe", "▁{", "\n\t", strings.Repeat("x", 70<<10), "", "tail"}
	for i := range 50000 {
		strs = append(strs, fmt.Sprintf("tok%d", i))
	}
	g := &layout.GGUF{KV: []layout.KV{
		{Key: "f", Value: floats}, {Key: "i", Value: ints}, {Key: "s", Value: strs},
		{Key: "f0", Value: []float32{}}, {Key: "i0", Value: []int64{}}, {Key: "s0", Value: []string{}},
		{Key: "s1", Value: []string{""}}, {Key: "sbig", Value: []string{strings.Repeat("y", 100<<10)}},
		{Key: "str", Value: "a \"b\"\n"}, {Key: "u", Value: uint64(math.MaxUint64)}, {Key: "n", Value: int64(-3)},
		{Key: "x", Value: 1.5e300}, {Key: "b", Value: true}, {Key: "key \"quoted\"\x00", Value: "v"},
	}}
	check("edge cases", g)
}
