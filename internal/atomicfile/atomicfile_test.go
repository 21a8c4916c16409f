package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite writes a file, replaces it, writes one in a directory that does
// not exist yet and one through another directory, and wants each file's
// bytes and permissions and no temporary file left; a write that cannot be
// renamed into place (the name is a directory) fails and leaves nothing.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	for _, c := range []struct {
		data string
		perm os.FileMode
	}{{"first\n", 0o644}, {"second, longer\n", 0o600}} {
		if err := Write(p, []byte(c.data), c.perm); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != c.data {
			t.Fatalf("%s: %q %v, want %q", p, b, err, c.data)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != c.perm {
			t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), c.perm)
		}
	}
	deep := filepath.Join(dir, "x", "y", "b.json")
	if err := Write(deep, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(dir, "tmp")
	viaOut := filepath.Join(dir, "z", "c.bin")
	if err := WriteVia(via, viaOut, []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(viaOut); err != nil || string(b) != "\x01\x02\x03" {
		t.Fatalf("%s: %q %v", viaOut, b, err)
	}
	if err := os.Mkdir(filepath.Join(dir, "isdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "isdir", "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "isdir"), []byte("x"), 0o644); err == nil {
		t.Error("a write over a non-empty directory succeeded")
	}
	for _, d := range []string{dir, filepath.Join(dir, "x", "y"), via, filepath.Join(dir, "z")} {
		left, _ := filepath.Glob(filepath.Join(d, ".*.tmp-*"))
		if len(left) > 0 {
			t.Errorf("%s: temporary files left: %v", d, left)
		}
	}
}
