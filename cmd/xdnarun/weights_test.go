package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
)

// TestWeightsInMemory: on the CPU the matrices are mapped unless
// --no-mmap reads them into memory; both give the same text, bench says
// which it ran, and a corrupted matrix is refused by name either way.
func TestWeightsInMemory(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	for _, c := range []struct {
		flags []string
		want  string
	}{{nil, "mapped"}, {[]string{"--no-mmap"}, "memory"}} {
		args := append([]string{"bench", x, "-p", "8", "-n", "4", "-r", "1", "--json", "--device", "cpu"}, c.flags...)
		stdout, _, err := run(t, "", args...)
		var r benchResult
		if err == nil {
			err = json.Unmarshal([]byte(stdout), &r)
		}
		if err != nil || r.Weights != c.want {
			t.Errorf("bench %v: %v, weights %q, want %q", c.flags, err, r.Weights, c.want)
		}
	}
	gen := []string{x, "-p", "Once upon a time", "-n", "12", "--temp", "0", "--device", "cpu"}
	a, _, errA := run(t, "", gen...)
	b, _, errB := run(t, "", append(gen, "--no-mmap")...)
	if errA != nil || errB != nil || a == "" || a != b {
		t.Errorf("mapped %q (%v), --no-mmap %q (%v)", a, errA, b, errB)
	}

	f, err := layout.Open(x)
	if err != nil {
		t.Fatal(err)
	}
	e := f.Manifest.Tensor("blk.1.attn_output.weight")
	f.Close()
	if e == nil {
		t.Fatal("no blk.1.attn_output.weight")
	}
	data, err := os.ReadFile(x)
	if err != nil {
		t.Fatal(err)
	}
	data[e.Offset+e.Size-1] ^= 0x40
	bad := filepath.Join(t.TempDir(), "bad.xdna")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{nil, {"--no-mmap"}} {
		_, _, err := run(t, "", append([]string{bad, "-p", "x", "-n", "1", "--device", "cpu"}, flags...)...)
		if err == nil || !strings.Contains(err.Error(), e.Name) || !strings.Contains(err.Error(), "corrupted") {
			t.Errorf("corrupted %s, %v: %v", e.Name, flags, err)
		}
	}
}

// TestNoMmapShortOfMemory: --no-mmap where the copy does not fit the memory
// available is refused in one line naming the bytes.
func TestNoMmapShortOfMemory(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	defer func(f func() (int64, string)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, string) { return 4096, "the test's machine" }
	_, _, err := run(t, "", x, "-p", "x", "-n", "2", "--device", "cpu", "--no-mmap")
	if err == nil || !strings.Contains(err.Error(), "--no-mmap") || !strings.Contains(err.Error(), "the test's machine has 4.0 KiB") {
		t.Errorf("--no-mmap short of memory: %v", err)
	}
}
