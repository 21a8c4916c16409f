package layout_test

import (
	"bytes"
	"os"
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
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := layout.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
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

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
