package cache

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// fileKey calls FileKey on path and reports the key and how many bytes
// it read.
func fileKey(t *testing.T, path string) (string, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &countingReader{r: f}
	k, err := FileKey(f, c)
	if err != nil {
		t.Fatal(err)
	}
	return k, c.n
}

func wantKey(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	k, err := Key(f)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestFileKey: a file is hashed once, then its key comes from the record;
// a file rewritten in place (same size, its modification time set back),
// replaced, or grown is hashed again; a file changed within racyWindow of
// the hash is not recorded; a broken or foreign record is ignored; and
// without a cache the key is still right.
func TestFileKey(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(p, []byte("GGUF one"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // the times strictly before the first fstat
	k1, n := fileKey(t, p)
	if k1 != wantKey(t, p) || n != 8 {
		t.Fatalf("first call: key %s read %d bytes, want %s, 8", k1, n, wantKey(t, p))
	}
	if k, n := fileKey(t, p); k != k1 || n != 0 {
		t.Fatalf("second call: key %s read %d bytes, want the record's %s, 0", k, n, k1)
	}

	// Rewritten in place with as many bytes, its modification time set back:
	// the status-change time moves on all the same.
	st, _ := os.Stat(p)
	if err := os.WriteFile(p, []byte("GGUF two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if k, n := fileKey(t, p); k == k1 || k != wantKey(t, p) || n != 8 {
		t.Fatalf("rewritten: key %s (read %d), want %s", k, n, wantKey(t, p))
	}
	// Replaced by another file (another inode), and grown.
	q := filepath.Join(dir, "new")
	os.WriteFile(q, []byte("GGUF three"), 0o644)
	if err := os.Rename(q, p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if k, n := fileKey(t, p); k != wantKey(t, p) || n != 10 {
		t.Fatalf("replaced: key %s (read %d), want %s", k, n, wantKey(t, p))
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("+"))
	f.Close()
	time.Sleep(10 * time.Millisecond)
	if k, n := fileKey(t, p); k != wantKey(t, p) || n != 11 {
		t.Fatalf("grown: key %s (read %d), want %s", k, n, wantKey(t, p))
	}

	// Racy: times within the window of the hash are not recorded.
	racyWindow = time.Hour
	r := filepath.Join(dir, "racy.gguf")
	os.WriteFile(r, []byte("GGUF racy"), 0o644)
	for i := range 2 {
		if k, n := fileKey(t, r); k != wantKey(t, r) || n != 9 {
			t.Fatalf("racy file, call %d: key %s read %d bytes, want it hashed", i, k, n)
		}
	}
	racyWindow = 0

	// A broken record, and one with a bad key, are ignored and rewritten.
	time.Sleep(10 * time.Millisecond)
	fileKey(t, r) // recorded now
	recs, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "xdna", "keys", "*.json"))
	if len(recs) == 0 {
		t.Fatal("no records written")
	}
	for _, bad := range []string{"{", `{"stat":{"size":9},"key":"../../x"}`} {
		for _, rec := range recs {
			os.WriteFile(rec, []byte(bad), 0o644)
		}
		if k, n := fileKey(t, r); k != wantKey(t, r) || n != 9 {
			t.Fatalf("record %q: key %s read %d bytes, want it hashed", bad, k, n)
		}
		if k, n := fileKey(t, r); k != wantKey(t, r) || n != 0 {
			t.Fatalf("after record %q: key %s read %d bytes, want it recorded again", bad, k, n)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "xdna", "keys", ".key-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// No cache (no absolute HOME or XDG_CACHE_HOME): hashed every time.
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	for range 2 {
		if k, n := fileKey(t, r); k != wantKey(t, r) || n != 9 {
			t.Fatalf("no cache: key %s read %d bytes, want it hashed", k, n)
		}
	}
	// A read error is the error.
	f, _ = os.Open(r)
	defer f.Close()
	if _, err := FileKey(f, errReader{}); !errors.Is(err, errRead) {
		t.Fatalf("read error: %v", err)
	}
}

var errRead = errors.New("read failed")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errRead }
