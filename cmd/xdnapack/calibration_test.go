package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/runtime/npu"
)

// TestPackReadsCalibration: with an NPU's calibration in the cache, the
// prediction after a pack uses its figures and names their sources; an
// emulator's calibration is not taken for an NPU's.
func TestPackReadsCalibration(t *testing.T) {
	cacheDir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheDir)
	cat := kernelsel.Default()
	c := npu.Assumed(cat.Targets["xdna2"], cat.Version)
	c.Device = "npu"
	c.DispatchUS = npu.Figure{Value: 61, Measured: true, Source: "test: written by hand"}
	b, _ := json.Marshal(c)
	dir := filepath.Join(cacheDir, "xdna", "calibration")
	os.MkdirAll(dir, 0o755)
	model := filepath.Join(fixtures, "tiny-llama-q8_0.gguf")
	for _, device := range []string{"emu", "npu"} {
		if err := os.WriteFile(filepath.Join(dir, "xdna2-"+device+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, err := run(t, model, "-o", filepath.Join(t.TempDir(), "m.xdna"), "--target", "xdna2", "--cpu-max-n", "0")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		got := strings.Contains(stdout, "figure: dispatch 61 us: measured on npu [test: written by hand]")
		if got != (device == "npu") {
			t.Errorf("with only the %s calibration: calibrated prediction %v\n%s", device, got, stdout)
		}
	}
}
