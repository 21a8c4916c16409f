//go:build sim

package main

import (
	"strings"
	"testing"
)

// A -tags sim build runs every golden on the emulator with the AIE kernel
// sources compiled for this machine (runtime/npu/sim) too.
func init() {
	goldenDevices = append(goldenDevices, struct{ name, target string }{"sim", "xdna1"}, struct{ name, target string }{"sim", "xdna2"})
}

// TestSimDevice: --device sim gives the CPU's text and names itself.
func TestSimDevice(t *testing.T) {
	for _, target := range []string{"xdna1", "xdna2"} {
		x := packFixtureN(t, "tiny-llama-q4_k_m", target, 0)
		args := []string{x, "-p", "Pierre said that", "-n", "16", "--temp", "0", "-t", "2"}
		want, _, err := run(t, "", append(args, "--device", "cpu")...)
		if err != nil {
			t.Fatal(err)
		}
		got, stderr, err := run(t, "", append(args, "--device", "sim")...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", target, err, stderr)
		}
		if got != want || !strings.Contains(stderr, "device sim") || strings.Contains(stderr, "CPU") {
			t.Errorf("%s: sim %q (stderr %q), cpu %q", target, got, stderr, want)
		}
	}
}
