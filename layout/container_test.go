package layout_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
)

// smallPackage writes an .xdna with one raw and one planar tensor.
func smallPackage(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "small.xdna")
	w, err := layout.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	norm, _ := w.AddBlob(make([]byte, 4*64))
	mat, _ := w.AddBlob(make([]byte, 17408)) // Q8_0 [64, 256], 4 columns, K-tile 64
	m := &layout.Manifest{Format: "xdna", Version: layout.ManifestVersion, Creator: "test",
		Package: layout.Package{Target: "xdna1", Columns: 4, CPUMaxN: 256},
		Model:   layout.Params{Arch: "llama"},
		Tensors: []layout.TensorEntry{
			{Name: "output_norm.weight", Shape: []int{64}, Type: "F32", Format: layout.FormatRaw, BlobRef: norm, Device: "cpu", Reason: "1-D"},
			{Name: "blk.0.ffn_up.weight", Shape: []int{64, 256}, Type: "Q8_0", Format: "q8_0.p1", KTile: 64, BlobRef: mat, Device: "cpu", Reason: "test"},
		},
	}
	if err := w.Commit(m); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestContainerRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := smallPackage(t, dir)
	f, err := layout.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if errs := f.Verify(); len(errs) > 0 {
		t.Fatal(errs)
	}
	e, blob, ok := f.Tensor("blk.0.ffn_up.weight")
	if !ok || len(blob) != 17408 || e.Offset%layout.BlobAlign != 0 {
		t.Fatalf("tensor: %v %d %v", ok, len(blob), e)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
	// The index File looks names up in finds what the manifest holds, and
	// nothing else.
	for i := range f.Manifest.Tensors {
		want := &f.Manifest.Tensors[i]
		if e, _, ok := f.Tensor(want.Name); !ok || e != want {
			t.Errorf("Tensor(%q) = %p %v, want the manifest's entry %p", want.Name, e, ok, want)
		}
		if got, raw := f.Packed(want.Name), want.Format == layout.FormatRaw; got == raw {
			t.Errorf("Packed(%q) = %v for format %s", want.Name, got, want.Format)
		}
	}
	if _, _, ok := f.Tensor("blk.1.ffn_up.weight"); ok || f.Packed("blk.1.ffn_up.weight") {
		t.Error("a name the manifest lacks was found")
	}
}

func TestWriterAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	w, err := layout.Create(filepath.Join(dir, "x.xdna"))
	if err != nil {
		t.Fatal(err)
	}
	w.AddBlob([]byte("hello"))
	w.Abort()
	// A manifest that fails validation aborts too.
	w, _ = layout.Create(filepath.Join(dir, "y.xdna"))
	if err := w.Commit(&layout.Manifest{Format: "nope"}); err == nil {
		t.Fatal("bad manifest committed")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestContainerBad(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile(smallPackage(t, dir))
	flip := func(off int) []byte { b := append([]byte(nil), data...); b[off] ^= 1; return b }
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":     {nil, "too short"},
		"truncated": {data[:len(data)-10], "truncated"},
		"magic":     {flip(0), "magic"},
		"header":    {flip(20), "header checksum"},
		"manifest":  {flip(len(data) - 5), "manifest checksum"},
	}
	for name, c := range cases {
		p := filepath.Join(dir, name+".xdna")
		os.WriteFile(p, c.data, 0o644)
		_, err := layout.Open(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), name+".xdna") {
			t.Errorf("%s: %v, want an error naming the file and %q", name, err, c.want)
		}
	}
	// A corrupted blob is found by Verify, naming the tensor.
	f, _ := layout.Open(filepath.Join(dir, "small.xdna"))
	off := f.Manifest.Tensor("blk.0.ffn_up.weight").Offset
	f.Close()
	p := filepath.Join(dir, "blob.xdna")
	os.WriteFile(p, flip(int(off)+100), 0o644)
	f, err := layout.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	errs := f.Verify()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "blk.0.ffn_up.weight") {
		t.Errorf("verify: %v", errs)
	}
}

func FuzzReader(f *testing.F) {
	data, _ := os.ReadFile(smallPackage(f, f.TempDir()))
	f.Add(data)
	f.Add(data[:layout.HeaderSize])
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := layout.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		x.Verify()
		for _, e := range x.Manifest.Tensors {
			_ = x.Bytes(e.BlobRef)
		}
	})
}

func FuzzManifest(f *testing.F) {
	dir := f.TempDir()
	x, err := layout.Open(smallPackage(f, dir))
	if err != nil {
		f.Fatal(err)
	}
	body, _ := x.Manifest.Marshal()
	f.Add(body)
	x.Manifest.Source.ContentDigest = layout.ContentScheme + ":" + strings.Repeat("5a", 32)
	body, _ = x.Manifest.Marshal()
	f.Add(body)
	x.Close()
	f.Add([]byte("format = \"xdna\"\nversion = 1\nunknown = 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := layout.ParseManifest(b)
		if err != nil {
			return
		}
		if _, err := m.Marshal(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestUpdateChecksum checks that a checksum taken piece by piece, at every
// split of a buffer, is the checksum of the whole.
func TestUpdateChecksum(t *testing.T) {
	b := make([]byte, 300)
	for i := range b {
		b[i] = byte(i*7 + i>>3)
	}
	want := layout.Checksum(b)
	for i := 0; i <= len(b); i++ {
		for _, j := range []int{i, (i + len(b)) / 2, len(b)} {
			got := layout.UpdateChecksum(layout.UpdateChecksum(layout.UpdateChecksum(0, b[:i]), b[i:j]), b[j:])
			if got != want {
				t.Fatalf("split at %d and %d: %08x, want %08x", i, j, got, want)
			}
		}
	}
}

// TestManifestSourceDigest checks the source's content digests: a package
// written before the BLAKE3 digest (content_sha256) and one written after
// (content_digest) both read back as written, each with only its own key
// in the TOML, and a manifest with both, with an unknown scheme or with a
// digest that is not 64 lowercase hex digits is refused naming the key.
func TestManifestSourceDigest(t *testing.T) {
	tree := layout.ContentScheme + ":" + strings.Repeat("0f", 32)
	flat := strings.Repeat("e1", 32)
	manifest := func(s layout.Source) *layout.Manifest {
		return &layout.Manifest{Format: "xdna", Version: layout.ManifestVersion, Creator: "test", Source: s,
			Package: layout.Package{Target: "xdna1", Columns: 4, CPUMaxN: 256}, Model: layout.Params{Arch: "llama"}}
	}
	for _, c := range []struct {
		src       layout.Source
		key, miss string
	}{
		{layout.Source{Name: "new.gguf", ContentDigest: tree}, "content_digest", "content_sha256"},
		{layout.Source{Name: "old.gguf", ContentSHA256: flat}, "content_sha256", "content_digest"},
	} {
		b, err := manifest(c.src).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(c.key+" = ")) || bytes.Contains(b, []byte(c.miss)) {
			t.Errorf("%s: want %s and no %s in\n%s", c.src.Name, c.key, c.miss, b)
		}
		m, err := layout.ParseManifest(b)
		if err != nil {
			t.Fatalf("%s: %v", c.src.Name, err)
		}
		if m.Source != c.src {
			t.Errorf("%s: source %+v, want %+v", c.src.Name, m.Source, c.src)
		}
	}
	for _, c := range []struct {
		name string
		src  layout.Source
		want string
	}{
		{"both", layout.Source{ContentDigest: tree, ContentSHA256: flat}, "both"},
		{"unknown scheme", layout.Source{ContentDigest: "sha256-tree-v1:" + strings.Repeat("0f", 32)}, "content_digest"},
		{"no scheme", layout.Source{ContentDigest: strings.Repeat("0f", 32)}, "content_digest"},
		{"short", layout.Source{ContentDigest: tree[:len(tree)-1]}, "content_digest"},
		{"upper case", layout.Source{ContentDigest: layout.ContentScheme + ":" + strings.Repeat("0F", 32)}, "content_digest"},
		{"escape", layout.Source{ContentSHA256: "\x1b[2J" + flat[4:]}, "content_sha256"},
		{"old short", layout.Source{ContentSHA256: flat[2:]}, "content_sha256"},
	} {
		b, err := manifest(c.src).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, err = layout.ParseManifest(b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %s", c.name, err, c.want)
		}
	}
}
