package layout_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
)

// TestReadBlob: ReadBlob gives the blob's bytes from the file and checks
// them where it put them; VerifyExcept leaves out what it is told to; Packed names the
// matrices.
func TestReadBlob(t *testing.T) {
	p := smallPackage(t, t.TempDir())
	f0, err := layout.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	mat := f0.Manifest.Tensor("blk.0.ffn_up.weight")
	norm := f0.Manifest.Tensor("output_norm.weight")
	if mat == nil || norm == nil || !f0.Packed(mat.Name) || f0.Packed(norm.Name) || f0.Packed("tokenizer") {
		t.Fatalf("Packed: %v %v", mat, norm)
	}
	want := append([]byte(nil), f0.Bytes(mat.BlobRef)...)
	got := make([]byte, mat.Size)
	if err := f0.ReadBlob(mat.Name, mat.BlobRef, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadBlob: %v, equal %v", err, bytes.Equal(got, want))
	}
	if err := f0.ReadBlob(mat.Name, mat.BlobRef, got[1:]); err == nil || !strings.Contains(err.Error(), mat.Name) {
		t.Errorf("ReadBlob into a short buffer: %v", err)
	}
	off := mat.Offset + 100
	f0.Close()

	bad := append([]byte(nil), mustRead(t, p)...)
	bad[off] ^= 1
	f := rewrite(t, p, bad)
	if err := f.ReadBlob(mat.Name, mat.BlobRef, got); err == nil || !strings.Contains(err.Error(), mat.Name) || !strings.Contains(err.Error(), "corrupted") {
		t.Errorf("ReadBlob of a corrupted blob: %v", err)
	}
	if got[100] == want[100] {
		t.Errorf("ReadBlob did not read the file's bytes")
	}
	if errs := f.VerifyExcept(f.Packed); len(errs) != 0 {
		t.Errorf("VerifyExcept(Packed) checked the matrix: %v", errs)
	}
	if errs := f.VerifyExcept(func(what string) bool { return !f.Packed(what) }); len(errs) != 1 || !strings.Contains(errs[0].Error(), mat.Name) {
		t.Errorf("VerifyExcept(not Packed): %v", errs)
	}
	if errs := f.Verify(); len(errs) != 1 {
		t.Errorf("Verify: %v", errs)
	}
}

// rewrite writes b to the package p and opens it, closed when the test ends.
func rewrite(t *testing.T, p string, b []byte) *layout.File {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := layout.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVerifyOrder: Verify checks the blobs on several goroutines (the
// largest first) and returns one error per corrupted blob, each naming it,
// in the manifest's order, whatever the number of goroutines.
func TestVerifyOrder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "many.xdna")
	w, err := layout.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	m := &layout.Manifest{Format: "xdna", Version: layout.ManifestVersion, Creator: "test",
		Package: layout.Package{Target: "xdna1", Columns: 4, CPUMaxN: 256}, Model: layout.Params{Arch: "llama"}}
	for i := range 12 {
		n := 64 << ((i * 5) % 7) // sizes out of the manifest's order
		b := make([]byte, 4*n)
		for j := range b {
			b[j] = byte(i + j)
		}
		ref, err := w.AddBlob(b)
		if err != nil {
			t.Fatal(err)
		}
		m.Tensors = append(m.Tensors, layout.TensorEntry{Name: fmt.Sprintf("blk.%d.attn_norm.weight", i), Shape: []int{n}, Type: "F32",
			Format: layout.FormatRaw, BlobRef: ref, Device: "cpu", Reason: "1-D"})
	}
	if err := w.Commit(m); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), mustRead(t, p)...)
	var want []string
	for i, te := range m.Tensors {
		if i%2 == 1 {
			bad[te.Offset+te.Size-1] ^= 0x80
			want = append(want, te.Name)
		}
	}
	f := rewrite(t, p, bad)
	for _, procs := range []int{1, 2, 5} {
		old := runtime.GOMAXPROCS(procs)
		errs := f.Verify()
		runtime.GOMAXPROCS(old)
		if len(errs) != len(want) {
			t.Fatalf("GOMAXPROCS %d: %d errors for %d corrupted blobs: %v", procs, len(errs), len(want), errs)
		}
		for i, e := range errs {
			if !strings.Contains(e.Error(), want[i]) || !strings.Contains(e.Error(), "corrupted") {
				t.Errorf("GOMAXPROCS %d: error %d is %v, want the corruption of %s", procs, i, e, want[i])
			}
		}
	}
}
