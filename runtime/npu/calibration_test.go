package npu_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// TestCalibrationChangesPrediction: a calibration file whose dispatch cost
// and bandwidth differ from the catalog's changes the prediction by exactly
// what the model says, and the prediction names each figure's source; a
// file for another target or with a figure missing its source is refused.
func TestCalibrationChangesPrediction(t *testing.T) {
	cat := kernelsel.Default()
	tgt, err := cat.Target("xdna2")
	if err != nil {
		t.Fatal(err)
	}
	s := shape{"Qwen2.5-0.5B", 24, 896, 4864, 14, 2, 151936}
	entries := s.entries(t, cat, "xdna2", planar.Q4_0)
	before := npu.Predict(entries, tgt, 40)

	c := npu.Assumed(tgt, cat.Version)
	c.Device, c.Date, c.Machine = "npu", "2026-12-04T13:00:00Z", "a test: figures written by hand"
	c.DispatchUS = npu.Figure{Value: 60, Measured: true, Source: "test: a 60 us round trip"}
	c.WeightGBps = npu.Figure{Value: 28, Measured: true, Source: "test: 28 GB/s through 8 columns"}
	path := filepath.Join(t.TempDir(), "xdna2-npu.json")
	b, _ := json.MarshalIndent(c, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	read, err := npu.ReadCalibration(path)
	if err != nil {
		t.Fatal(err)
	}
	after, err := npu.PredictCalibrated(entries, tgt, 40, read)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before (catalog figures):\n%s", before.String())
	t.Logf("after (%s):\n%s", path, after.String())
	if before.Dispatches != after.Dispatches || before.NPUBytes != after.NPUBytes {
		t.Fatalf("the counts changed: %d/%d dispatches, %d/%d bytes", before.Dispatches, after.Dispatches, before.NPUBytes, after.NPUBytes)
	}
	// The model: dispatch = n x dispatch_us; stream = bytes / GB/s + the array's excess.
	wantDispatch := float64(after.Dispatches) * 60e3
	if d := float64(after.Dispatch); d < wantDispatch-1 || d > wantDispatch+1 {
		t.Errorf("dispatch %v, want %d x 60 us", after.Dispatch, after.Dispatches)
	}
	if r := float64(after.Stream-after.Array) / float64(before.Stream-before.Array); r < 2-1e-6 || r > 2+1e-6 {
		t.Errorf("weight streaming time ratio %.4f, want 56/28 = 2", r)
	}
	if after.Total == before.Total {
		t.Error("the total did not change")
	}
	out := after.String()
	for _, want := range []string{"dispatch 60 us: measured on npu [test: a 60 us round trip]", "weight streaming 28 GB/s: measured on npu", "context switch 360 us: assumed [assumed: catalog " + cat.Version} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}

	// Refused: another target, a figure without a source, an unknown field.
	if _, err := npu.PredictCalibrated(entries, cat.Targets["xdna1"], 40, read); err == nil {
		t.Error("an xdna2 calibration applied to xdna1")
	}
	bad := *read
	bad.WeightGBps.Source = ""
	b, _ = json.Marshal(bad)
	if _, err := npu.ParseCalibration(b); err == nil || !strings.Contains(err.Error(), "weight_gbps names no source") {
		t.Errorf("no source: %v", err)
	}
	if _, err := npu.ParseCalibration([]byte(`{"version":1,"target":"xdna2","dispatch_ms":3}`)); err == nil {
		t.Error("an unknown field accepted")
	}
}
