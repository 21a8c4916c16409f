package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestSmallOnes: the markdown table of bench has its separator row and its
// stream figure is the median of the repetitions' figures; probe --json is
// JSON without a device; --device auto says why it chose the CPU.
func TestSmallOnes(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	stdout, stderr, err := run(t, "", "bench", x, "-p", "8", "-n", "4", "-r", "1", "-t", "1")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "| --- |") {
		t.Errorf("bench table:\n%s", stdout)
	}
	var rep string
	for _, l := range strings.Split(stderr, "\n") {
		if _, after, ok := strings.Cut(l, "stream-read "); ok {
			rep = strings.TrimSuffix(after, " GB/s")
		}
	}
	if cells := strings.Split(lines[len(lines)-1], " | "); rep == "" || len(cells) < 9 || cells[7] != rep {
		t.Errorf("one repetition's stream-read %q, the table's row %q", rep, lines[len(lines)-1])
	}

	if devs, _ := filepath.Glob("/dev/accel/accel*"); len(devs) == 0 {
		out, _, err := run(t, "", "probe", "--json")
		var v []any
		if err == nil || json.Unmarshal([]byte(out), &v) != nil || len(v) != 0 {
			t.Errorf("probe --json without a device: %v, %q", err, out)
		}
		_, stderr, err := run(t, "", x, "-p", "Once", "-n", "1")
		if err != nil || !strings.Contains(stderr, "--device auto: no AMD XDNA NPU") || !strings.Contains(stderr, "running on the CPU") {
			t.Errorf("--device auto: %v, stderr %q", err, stderr)
		}
	}
}
