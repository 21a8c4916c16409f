package layout_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/gguftest"
)

const fixtures = "../../shared/fixtures/models"

func fixtureModels(t testing.TB) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(fixtures, "*.gguf"))
	if len(m) == 0 {
		t.Fatalf("no fixture models under %s", fixtures)
	}
	return m
}

func TestOpenGGUFFixtures(t *testing.T) {
	for _, p := range fixtureModels(t) {
		g, err := layout.OpenGGUF(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(g.Tensors) == 0 {
			t.Errorf("%s: no tensors", p)
		}
		if _, err := layout.ParamsFromGGUF(g); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenGGUFBad(t *testing.T) {
	arch := []gguftest.KV{{Key: "general.architecture", Value: "llama"}}
	raw := func(infos []gguftest.Info, data int) []byte {
		b, err := gguftest.Raw(arch, infos, data)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := raw([]gguftest.Info{{Name: "a", Type: 0, Dims: []uint64{8}, Offset: 0}}, 32)
	if _, err := layout.OpenGGUF(writeFile(t, good)); err != nil {
		t.Fatalf("control file: %v", err)
	}
	fixture, err := os.ReadFile(filepath.Join(fixtures, "stories260K-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	rnd := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(r.Uint32())
	}
	cases := []struct {
		name string
		data []byte
		want string // substring of the error
	}{
		{"empty", nil, "too short"},
		{"random", rnd, "not a GGUF"},
		{"truncated header", fixture[:100], "bad.gguf"},
		{"truncated data", fixture[:len(fixture)-1000], "past the end"},
		{"tensor past end", raw([]gguftest.Info{{Name: "a", Type: 0, Dims: []uint64{64}, Offset: 0}}, 32), "past the end"},
		{"overlap", raw([]gguftest.Info{{Name: "a", Type: 0, Dims: []uint64{16}, Offset: 0}, {Name: "b", Type: 0, Dims: []uint64{16}, Offset: 32}}, 128), "overlaps"},
		{"dims overflow", raw([]gguftest.Info{{Name: "big", Type: 0, Dims: []uint64{1 << 62, 1 << 62}, Offset: 0}}, 32), "big"},
		{"unknown type", raw([]gguftest.Info{{Name: "odd", Type: 99, Dims: []uint64{8}, Offset: 0}}, 32), "odd"},
		{"retired Q4_2", raw([]gguftest.Info{{Name: "q42", Type: 4, Dims: []uint64{32}, Offset: 0}}, 32), "q42"},
		{"unaligned row", raw([]gguftest.Info{{Name: "rag", Type: 2, Dims: []uint64{33}, Offset: 0}}, 64), "rag"},
		{"unaligned offset", raw([]gguftest.Info{{Name: "mis", Type: 0, Dims: []uint64{2}, Offset: 4}}, 64), "mis"},
		{"duplicate name", raw([]gguftest.Info{{Name: "d", Type: 0, Dims: []uint64{8}, Offset: 0}, {Name: "d", Type: 0, Dims: []uint64{8}, Offset: 32}}, 64), "d"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, c.data)
			_, err := layout.OpenGGUF(p)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, "bad.gguf") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming the file and %q", msg, c.want)
			}
			if !errors.Is(err, layout.ErrFormat) {
				t.Errorf("error %v is not ErrFormat", err)
			}
		})
	}
	if _, err := layout.OpenGGUF(filepath.Join(t.TempDir(), "missing.gguf")); err == nil || !strings.Contains(err.Error(), "missing.gguf") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzOpenGGUF(f *testing.F) {
	for _, name := range []string{"stories260K-q4_0.gguf", "stories260K-f16.gguf"} {
		b, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 8192)])
	}
	b, _ := gguftest.Raw([]gguftest.KV{{Key: "general.architecture", Value: "llama"}},
		[]gguftest.Info{{Name: "big", Type: 0, Dims: []uint64{1 << 62, 1 << 62}}}, 32)
	f.Add(b)
	b, _ = gguftest.Raw(nil, []gguftest.Info{{Name: "q42", Type: 4, Dims: []uint64{32}}}, 32)
	f.Add(b)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.gguf")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := layout.OpenGGUF(p)
		if err != nil {
			return
		}
		for _, tn := range g.Tensors {
			if tn.Offset < 0 || tn.Size < 0 || tn.Offset+tn.Size > int64(len(data)) {
				t.Fatalf("tensor %q outside the file", tn.Name)
			}
		}
	})
}
