package pack_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/gguftest"
	"github.com/xdna-go/xdna/layout/pack"
	"github.com/xdna-go/xdna/xclbin"
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
	// copy: read the file and write it to a new one with fsync, the I/O a
	// pack does, without the repacking.
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(st.Size())
		for i := 0; i < b.N; i++ {
			src, _ := os.Open(in)
			dst, _ := os.Create(filepath.Join(dir, "copy.gguf"))
			io.Copy(dst, src)
			dst.Sync()
			dst.Close()
			src.Close()
		}
	})
	b.Run("pack", func(b *testing.B) {
		b.SetBytes(st.Size())
		for i := 0; i < b.N; i++ {
			packFile(b, in, filepath.Join(dir, "q05.xdna"), "xdna2")
		}
	})
}

// TestEmbedXCLBIN: slots whose xclbin is present are validated and embedded;
// a broken one is an error naming the slot.
func TestEmbedXCLBIN(t *testing.T) {
	dir := t.TempDir()
	base, err := os.ReadFile("../../manifest.toml")
	if err != nil {
		t.Fatal(err)
	}
	catPath := filepath.Join(dir, "catalog.toml")
	os.WriteFile(catPath, base, 0o644)
	cat, err := kernelsel.Load(catPath)
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(fixtures, "tiny-llama-q4_k_m.gguf")
	g, _ := layout.OpenGGUF(model)
	plan, err := pack.MakePlan(g, &pack.Options{Target: "xdna2", Catalog: cat, CPUMaxN: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Slots) == 0 {
		t.Fatal("plan uses no slot")
	}
	for i, s := range plan.Slots {
		p := cat.XCLBINPath(s)
		os.MkdirAll(filepath.Dir(p), 0o755)
		x := xclbin.NewNPU(s.Kernel, [16]byte{byte(i + 1)}, []byte("pdi"), 8)
		b, err := x.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, b, 0o644)
	}
	out := filepath.Join(dir, "m.xdna")
	if _, err := pack.Run(context.Background(), &pack.Options{Input: model, Output: out, Target: "xdna2", Catalog: cat, CPUMaxN: 256}); err != nil {
		t.Fatal(err)
	}
	f, err := layout.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Manifest.Slots) != len(plan.Slots) {
		t.Errorf("%d slots embedded, plan uses %d", len(f.Manifest.Slots), len(plan.Slots))
	}
	for _, s := range f.Manifest.Slots {
		x, err := xclbin.NewReader(bytes.NewReader(f.Bytes(s.BlobRef)), s.Size)
		if err != nil || x.UUID == [16]byte{} {
			t.Errorf("slot %s: %v", s.Name, err)
		}
	}
	f.Close()
	// Corrupt one xclbin: the pack fails naming the slot, and leaves nothing.
	bad := cat.XCLBINPath(plan.Slots[0])
	os.WriteFile(bad, []byte("xclbin2\x00 but not really"), 0o644)
	os.Remove(out)
	_, err = pack.Run(context.Background(), &pack.Options{Input: model, Output: out, Target: "xdna2", Catalog: cat, CPUMaxN: 256})
	if err == nil || !strings.Contains(err.Error(), plan.Slots[0].Name) {
		t.Fatalf("broken xclbin: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("output left behind")
	}
}

// TestOneSlotPerFormat: K = 384 fits only the k128 Q4_0 slot, K = 1024 fits
// k256 better; the plan still uses one slot (one hardware context) for all.
func TestOneSlotPerFormat(t *testing.T) {
	in := filepath.Join(t.TempDir(), "m.gguf")
	s := gguftest.Shape{Arch: "llama", Layers: 2, Dim: 384, FFN: 1024, Heads: 6, HeadsKV: 2, Vocab: 600, Type: 2, Seed: 3}
	if err := gguftest.WriteModel(in, s); err != nil {
		t.Fatal(err)
	}
	g, err := layout.OpenGGUF(in)
	if err != nil {
		t.Fatal(err)
	}
	cat := kernelsel.Default()
	plan, err := pack.MakePlan(g, &pack.Options{Target: "xdna1", Catalog: cat, CPUMaxN: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Slots) != 1 || plan.Slots[0].KTile != 128 {
		t.Fatalf("plan uses slots %v, want the one k128 slot", plan.Slots)
	}
	down := 0
	for _, e := range plan.Entries {
		if e.Device == "npu" && e.Slot != plan.Slots[0].Name {
			t.Errorf("%s on %s", e.Name, e.Slot)
		}
		if strings.HasSuffix(e.Name, "ffn_down.weight") {
			down++
			if ch := cat.Select("xdna1", g.Tensors[0].Type, e.Shape[1], e.Shape[0], 256); ch.Slot == nil || ch.Slot.KTile != 256 {
				t.Errorf("%s alone: %v, want the k256 slot (else this test tests nothing)", e.Name, ch)
			}
		}
	}
	if down != 2 {
		t.Errorf("%d ffn_down matrices", down)
	}
}
