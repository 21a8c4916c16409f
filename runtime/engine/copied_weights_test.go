package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/pack"
)

// TestCopiedWeights: a model on the copy of a package's matrices gives the
// logits of the model on its mapping bit for bit, from the same bytes,
// each matrix on a page boundary of memory of its own.
func TestCopiedWeights(t *testing.T) {
	for _, name := range []string{"stories260K-q4_0", "rand-qwen2-q8_0"} {
		f, cw := openCopied(t, packFixture(t, name))
		defer f.Close()
		opts := Options{Threads: 2, Cache: CacheF16}
		mapped, err := New(f.Manifest.Model, FileWeights{F: f}, opts)
		if err != nil {
			t.Fatal(err)
		}
		copied, err := New(f.Manifest.Model, cw, opts)
		if err != nil {
			t.Fatal(err)
		}
		if errs := cw.VerifyUnread(); len(errs) > 0 {
			t.Errorf("%s: VerifyUnread: %v", name, errs)
		}
		if cw.Copied() != CopyBytes(f) {
			t.Errorf("%s: copied %d bytes, the package's matrices take %d", name, cw.Copied(), CopyBytes(f))
		}
		for _, e := range f.Manifest.Tensors {
			if !f.Packed(e.Name) {
				continue
			}
			m, ok, err := cw.Matrix(e.Name)
			if !ok || err != nil || !bytes.Equal(m.Blob, f.Bytes(e.BlobRef)) {
				t.Fatalf("%s: %s: %v %v, the copy differs from the file", name, e.Name, ok, err)
			}
			if uintptr(unsafe.Pointer(&m.Blob[0]))%4096 != 0 || &m.Blob[0] == &f.Bytes(e.BlobRef)[0] {
				t.Errorf("%s: %s: not a page-aligned copy", name, e.Name)
			}
		}
		prompt := []int32{1, 5, 9, 3, 7, 2}
		var logits [2][][]float32
		for i, m := range []*Model{mapped, copied} {
			s := m.NewState(32)
			l, err := s.Prefill(prompt)
			if err != nil {
				t.Fatal(err)
			}
			logits[i] = append(logits[i], slices.Clone(l))
			for _, tok := range []int32{4, 8, 6} {
				l, err := s.Decode(tok)
				if err != nil {
					t.Fatal(err)
				}
				logits[i] = append(logits[i], slices.Clone(l))
			}
		}
		for step := range logits[0] {
			if !slices.Equal(logits[0][step], logits[1][step]) {
				t.Errorf("%s: step %d: the copy's logits differ from the mapping's", name, step)
			}
		}
		mapped.Close()
		copied.Close()
		if err := cw.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
}

// TestCopiedWeightsCorrupt: a corrupted matrix is an error naming it, from
// the copy (New) and from VerifyUnread when the engine did not read it.
func TestCopiedWeightsCorrupt(t *testing.T) {
	out := packFixture(t, "stories260K-q4_0")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := layout.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	e := f.Manifest.Tensor("blk.0.ffn_down.weight")
	if e == nil || !f.Packed(e.Name) {
		t.Fatalf("no packed blk.0.ffn_down.weight")
	}
	data[e.Offset+e.Size/2] ^= 0x10
	f.Close()
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, cw := openCopied(t, out)
	defer f.Close()
	defer cw.Close()
	if errs := cw.VerifyUnread(); len(errs) != 1 || !strings.Contains(errs[0].Error(), e.Name) {
		t.Errorf("VerifyUnread: %v", errs)
	}
	if _, err := New(f.Manifest.Model, cw, Options{Threads: 1}); err == nil || !strings.Contains(err.Error(), e.Name) || !strings.Contains(err.Error(), "corrupted") {
		t.Errorf("New on the copy: %v", err)
	}
}

// packFixture packs the fixture model name into a temporary .xdna.
func packFixture(t *testing.T, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".xdna")
	opt := &pack.Options{Input: filepath.Join(fixtures, "models", name+".gguf"), Output: out, Target: "xdna2", Catalog: kernelsel.Default(), CPUMaxN: 256}
	if _, err := pack.Run(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	return out
}

// openCopied opens the package at path and reserves the copy of its matrices.
func openCopied(t *testing.T, path string) (*layout.File, *CopiedWeights) {
	t.Helper()
	f, err := layout.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cw, err := CopyWeights(f)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	return f, cw
}
