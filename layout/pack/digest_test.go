package pack

import (
	"context"
	"encoding/hex"
	"hash"
	"os"
	"path/filepath"
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
