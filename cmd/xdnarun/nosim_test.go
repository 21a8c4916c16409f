//go:build !sim

package main

import (
	"strings"
	"testing"
)

// TestSimNeedsTag: without the compiled kernels --device sim says how to get
// them and fails, writing nothing.
func TestSimNeedsTag(t *testing.T) {
	x := packFixtureN(t, "tiny-llama-q8_0", "xdna2", 0)
	stdout, _, err := run(t, "", x, "-p", "Pierre said that", "-n", "4", "--device", "sim")
	if err == nil || !strings.Contains(err.Error(), "-tags sim") || stdout != "" {
		t.Errorf("--device sim without the kernels: %v, stdout %q", err, stdout)
	}
}
