package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/probe"
)

// TestSelftestEmu: on the emulator of each target every slot passes, the
// report names the machine, kernel, driver and firmware, and every timing
// says it is the emulator's.
func TestSelftestEmu(t *testing.T) {
	for _, target := range []string{"xdna1", "xdna2"} {
		out, _, err := run(t, "", "selftest", "--device", "emu", "--target", target, "--rounds", "1", "--stream-bytes", "262144")
		if err != nil {
			t.Fatalf("%s: %v\n%s", target, err, out)
		}
		t.Logf("selftest --device emu --target %s:\n%s", target, out)
		for _, want := range []string{"machine:  ", "kernel:   ", "driver:   ", "firmware: ", "result: 9 of 9 slots pass", "device:   emu (the emulated " + target} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q", target, want)
			}
		}
		for _, l := range strings.Split(out, "\n") {
			if (strings.HasPrefix(l, "dispatch round trip") || strings.HasPrefix(l, "weight streaming")) && !strings.Contains(l, "not an NPU figure") {
				t.Errorf("a timing that does not say it is the emulator's: %s", l)
			}
		}
	}
}

// TestSelftestFault: a fault injected into one slot's first dispatch fails
// that slot and the exit status; the JSON report says which.
func TestSelftestFault(t *testing.T) {
	out, _, err := run(t, "", "selftest", "--device", "emu", "--target", "xdna2", "--rounds", "1", "--stream-bytes", "262144", "--emu-fault", "xdna2-q4_k-k256:txn-patch", "--json")
	if err == nil || !strings.Contains(err.Error(), "1 of 9 slots wrong: xdna2-q4_k-k256") {
		t.Fatalf("exit: %v", err)
	}
	var r struct {
		Failed []string `json:"failed"`
		Slots  []struct {
			Slot string `json:"slot"`
			Pass bool   `json:"pass"`
		} `json:"slots"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Failed) != 1 || r.Failed[0] != "xdna2-q4_k-k256" {
		t.Fatalf("report: %v %s", err, out)
	}
	for _, s := range r.Slots {
		if s.Pass == (s.Slot == "xdna2-q4_k-k256") {
			t.Errorf("slot %s pass %v", s.Slot, s.Pass)
		}
	}
	t.Logf("error: %v", err)
	if _, _, err := run(t, "", "selftest", "--device", "emu", "--target", "xdna2", "--emu-fault", "nope:txn-bd"); err == nil || !strings.Contains(err.Error(), "--emu-fault") {
		t.Errorf("an unknown slot: %v", err)
	}
}

// TestCalibrateEmu: calibrate on the emulator writes the cache's
// calibration file, every figure with its source (the measured ones saying
// emulator), prints the prediction before and after, and bench --device emu
// then predicts with it.
func TestCalibrateEmu(t *testing.T) {
	for _, target := range []string{"xdna1", "xdna2"} {
		t.Run(target, func(t *testing.T) { calibrateEmu(t, target) })
	}
}

func calibrateEmu(t *testing.T, target string) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	x := packFixtureN(t, "tiny-llama-q8_0", target, 0)
	out, _, err := run(t, "", "calibrate", x, "--device", "emu", "--rounds", "1", "--stream-bytes", "262144")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("calibrate:\n%s", out)
	path := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "xdna", "calibration", target+"-emu.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	json.Unmarshal(b, &c)
	for _, k := range []string{"dispatch_us", "weight_gbps"} {
		f, _ := c[k].(map[string]any)
		if f["measured"] != true || !strings.Contains(f["source"].(string), "emulator") {
			t.Errorf("%s: %v", k, f)
		}
	}
	if f, _ := c["context_switch_us"].(map[string]any); f["measured"] != false || !strings.Contains(f["source"].(string), "assumed: catalog") {
		t.Errorf("context_switch_us: %v", f)
	}
	if c["target"] != target || c["device"] != "emu" {
		t.Errorf("target %v device %v", c["target"], c["device"])
	}
	if !strings.Contains(out, "before (catalog") || !strings.Contains(out, "after ("+path) || !strings.Contains(out, "figure: dispatch") {
		t.Errorf("no prediction before and after:\n%s", out)
	}
	_, stderr, err := run(t, "", "bench", x, "-p", "4", "-n", "2", "-r", "1", "-t", "1", "--device", "emu")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "calibrated: "+path) || !strings.Contains(stderr, "measured on emu (emulator figures, not an NPU's)") {
		t.Errorf("bench did not read the calibration:\n%s", stderr)
	}
}

// TestSelftestSimRefused: --device sim without usable compiled kernels
// (no -tags sim, or this branch's kernels awaiting their rebuild) is
// refused with the reason, before any slot runs.
func TestSelftestSimRefused(t *testing.T) {
	out, _, err := run(t, "", "selftest", "--device", "sim", "--target", "xdna2")
	if err == nil {
		t.Skip("this build's sim kernels are usable: TestSelftestEmu's checks apply to it through --device sim")
	}
	if !strings.Contains(err.Error(), "--device sim: sim:") || out != "" {
		t.Errorf("%v, stdout %q", err, out)
	}
	t.Logf("%v", err)
}

// TestSelftestNPUFake runs selftest --device npu through the pure-Go
// driver on the fake amdxdna driver (which executes each command's TXN
// stream on the emulator), with the catalog's xclbins standing in for
// built ones: every slot passes the NPU's comparison (cosine), and the
// report names the fake device's driver and firmware, and every timing
// carries the fake driver's own description (its commands run on the
// emulator), so that nothing passes them off as an NPU's.
func TestSelftestNPUFake(t *testing.T) {
	fake := amdxdnatest.New(amdxdnatest.XDNA2())
	npuKernel = fake
	probeNPU = func() ([]probe.Info, error) {
		in, err := probe.DeviceWith(fake, amdxdnatest.Path)
		if err != nil {
			return nil, err
		}
		return []probe.Info{*in}, nil
	}
	defer func() { npuKernel, probeNPU = amdxdna.Sys{}, probe.Probe }()
	dir := t.TempDir()
	def, err := os.ReadFile("../../manifest.toml")
	if err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, "manifest.toml")
	os.WriteFile(cat, def, 0o644)
	c, err := kernelsel.Load(cat)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Slots {
		s := &c.Slots[i]
		if s.Target != "xdna2" {
			continue
		}
		x, err := emu.XCLBin(s.Type, s.KTile, s.Columns)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(c.XCLBINPath(s)), 0o755)
		if err := os.WriteFile(c.XCLBINPath(s), x, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := run(t, "", "selftest", "--device", "npu", "--catalog", cat, "--rounds", "1", "--stream-bytes", "262144")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"driver:   amdxdna_accel_driver 0.1.0 (unknown npu, 8 columns)", "firmware: 1.1.2.64", "target:   xdna2", "(odd N, not a multiple of the columns, 3 K-tiles; cosine): cosine", "result: 9 of 9 slots pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if (strings.HasPrefix(l, "dispatch round trip") || strings.HasPrefix(l, "weight streaming")) && !strings.Contains(l, amdxdnatest.FakeDesc) {
			t.Errorf("a timing that does not say the fake driver made it: %s", l)
		}
	}
	if st := fake.Stats(); st.Completed == 0 || st.Failed != 0 {
		t.Errorf("the fake driver completed %d commands, %d failed", st.Completed, st.Failed)
	}
	t.Logf("selftest --device npu on the fake driver:\n%s", out)
}
