package pack_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/gguftest"
	"github.com/xdna-go/xdna/layout/pack"
)

const fixtures = "../../../shared/fixtures/models"

func fixtureModels(t testing.TB) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(fixtures, "*.gguf"))
	if len(m) == 0 {
		t.Fatalf("no fixture models under %s", fixtures)
	}
	return m
}

func packFile(t testing.TB, in, out, target string) *pack.Plan {
	t.Helper()
	cat := kernelsel.Default()
	plan, err := pack.Run(context.Background(), &pack.Options{Input: in, Output: out, Target: target, Catalog: cat, CPUMaxN: 256})
	if err != nil {
		t.Fatalf("pack %s: %v", in, err)
	}
	return plan
}

// TestFixturesExact packs every fixture model for both targets and checks
// that every tensor unpacks bit for bit to its GGUF bytes.
func TestFixturesExact(t *testing.T) {
	for _, model := range fixtureModels(t) {
		for _, target := range []string{"xdna1", "xdna2"} {
			t.Run(filepath.Base(model)+"/"+target, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "m.xdna")
				packFile(t, model, out, target)
				f, err := layout.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if errs := f.Verify(); len(errs) > 0 {
					t.Fatal(errs)
				}
				exact, errs := pack.Against(f, model)
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				g, _ := layout.OpenGGUF(model)
				if exact != len(g.Tensors) {
					t.Fatalf("%d of %d tensors exact", exact, len(g.Tensors))
				}
				for _, e := range f.Manifest.Tensors {
					if e.Offset%layout.BlobAlign != 0 {
						t.Errorf("%s: blob at %d", e.Name, e.Offset)
					}
				}
			})
		}
	}
}

// TestReproducible packs a model twice, and a copy with its tensors in
// another order, and wants identical bytes.
func TestReproducible(t *testing.T) {
	model := filepath.Join(fixtures, "tiny-llama-q4_k_m.gguf")
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.xdna"), filepath.Join(dir, "b.xdna"), filepath.Join(dir, "c.xdna")
	packFile(t, model, a, "xdna2")
	packFile(t, model, b, "xdna2")
	shuffled := filepath.Join(dir, "shuffled", filepath.Base(model))
	os.MkdirAll(filepath.Dir(shuffled), 0o755)
	shuffle(t, model, shuffled, 7)
	packFile(t, shuffled, c, "xdna2")
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	cb, _ := os.ReadFile(c)
	if !bytes.Equal(ab, bb) {
		t.Fatal("two packs of the same file differ")
	}
	if !bytes.Equal(ab, cb) {
		t.Fatal("pack of the shuffled file differs")
	}
	src, _ := os.ReadFile(model)
	sh, _ := os.ReadFile(shuffled)
	if bytes.Equal(src, sh) {
		t.Fatal("shuffle left the file unchanged")
	}
}

// shuffle rewrites the GGUF in with its tensors (and metadata) in a random order.
func shuffle(t *testing.T, in, out string, seed uint64) {
	t.Helper()
	g, err := layout.OpenGGUF(in)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(in)
	defer f.Close()
	r := rand.New(rand.NewPCG(seed, 0))
	var kvs []gguftest.KV
	for _, kv := range g.KV {
		k, err := gguftest.FromKV(kv.Key, kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		kvs = append(kvs, k)
	}
	r.Shuffle(len(kvs), func(i, j int) { kvs[i], kvs[j] = kvs[j], kvs[i] })
	var ts []gguftest.Tensor
	for _, tn := range g.Tensors {
		data := make([]byte, tn.Size)
		if _, err := f.ReadAt(data, tn.Offset); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, gguftest.Tensor{Name: tn.Name, Type: tn.Type, Dims: tn.Dims, Data: data})
	}
	r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	if err := gguftest.Write(out, kvs, ts); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPackThroughput packs a generated 0.5B-shape Q4_0 model (about
// 234 MB) and, in the same run, reads the same file as cat would; both
// report MB/s of GGUF input.
func BenchmarkPackThroughput(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "q05.gguf")
	if err := gguftest.WriteModel(in, gguftest.Qwen05B); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(in)
	b.Run("cat", func(b *testing.B) {
		b.SetBytes(st.Size())
		buf := make([]byte, 128<<10) // cat's buffer size
		for i := 0; i < b.N; i++ {
			f, _ := os.Open(in)
			for {
				if _, err := f.Read(buf); err == io.EOF {
					break
				}
			}
			f.Close()
		}
	})
	b.Run("pack", func(b *testing.B) {
		b.SetBytes(st.Size())
		for i := 0; i < b.N; i++ {
			packFile(b, in, filepath.Join(dir, "q05.xdna"), "xdna2")
		}
	})
}
