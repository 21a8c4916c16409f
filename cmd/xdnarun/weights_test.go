package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
)

// TestWeightsInMemory: on the CPU the matrices are read into memory unless
// --mmap; both give the same text, bench says which it ran, and a corrupted
// matrix is refused by name either way.
func TestWeightsInMemory(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	for _, c := range []struct {
		flags []string
		want  string
	}{{nil, "memory"}, {[]string{"--mmap"}, "mapped"}} {
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
	b, _, errB := run(t, "", append(gen, "--mmap")...)
	c, _, errC := run(t, "", append(gen, "--no-mmap")...)
	if errA != nil || errB != nil || errC != nil || a == "" || a != b || a != c {
		t.Errorf("in memory %q (%v), --mmap %q (%v), --no-mmap %q (%v)", a, errA, b, errB, c, errC)
	}
	if _, _, err := run(t, "", append(gen, "--mmap", "--no-mmap")...); err == nil || !strings.Contains(err.Error(), "--mmap and --no-mmap") {
		t.Errorf("--mmap --no-mmap: %v", err)
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
	for _, flags := range [][]string{nil, {"--mmap"}} {
		_, _, err := run(t, "", append([]string{bad, "-p", "x", "-n", "1", "--device", "cpu"}, flags...)...)
		if err == nil || !strings.Contains(err.Error(), e.Name) || !strings.Contains(err.Error(), "corrupted") {
			t.Errorf("corrupted %s, %v: %v", e.Name, flags, err)
		}
	}
}

// TestWeightsMappedWhenShort: where the copy would leave less than
// copyMargin available, the weights stay mapped and stderr says so;
// --no-mmap copies them anyway.
func TestWeightsMappedWhenShort(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	defer func(f func() (int64, string)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, string) { return copyMargin + 4096, "the test's machine" }
	stdout, stderr, err := run(t, "", "bench", x, "-p", "8", "-n", "4", "-r", "1", "--json", "--device", "cpu")
	var r benchResult
	if err == nil {
		err = json.Unmarshal([]byte(stdout), &r)
	}
	if err != nil || r.Weights != "mapped" || !strings.Contains(stderr, "stay mapped") || !strings.Contains(stderr, "the test's machine") {
		t.Errorf("short of memory: %v, weights %q, stderr %q", err, r.Weights, stderr)
	}
	_, stderr, err = run(t, "", x, "-p", "x", "-n", "2", "--device", "cpu", "--no-mmap")
	if err != nil || strings.Contains(stderr, "stay mapped") {
		t.Errorf("--no-mmap short of memory: %v, stderr %q", err, stderr)
	}
}
