package main

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
)

// TestResidentFlag: --npu-resident 0, a budget that holds part of the
// model and one that holds all of it give the CPU's text on the emulated
// NPU; bench reports what was resident and the host bytes copied a token.
func TestResidentFlag(t *testing.T) {
	x := packFixtureN(t, "tiny-llama-q4_0", "xdna2", 0)
	args := []string{x, "-p", "Pierre said that", "-n", "12", "--temp", "0", "-t", "2"}
	want, _, err := run(t, "", append(args, "--device", "cpu")...)
	if err != nil {
		t.Fatal(err)
	}
	var copied []float64
	for _, budget := range []string{"0", "600K", "1G"} {
		got, stderr, err := run(t, "", append(args, "--device", "emu", "--npu-resident", budget)...)
		if err != nil {
			t.Fatalf("--npu-resident %s: %v\n%s", budget, err, stderr)
		}
		if got != want {
			t.Errorf("--npu-resident %s: %q, cpu %q", budget, got, want)
		}
		out, stderr, err := run(t, "", "bench", x, "-p", "8", "-n", "8", "-r", "1", "-t", "2", "--device", "emu", "--npu-resident", budget, "--json")
		if err != nil {
			t.Fatalf("bench --npu-resident %s: %v\n%s", budget, err, stderr)
		}
		var res benchResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("bench --json: %v\n%s", err, out)
		}
		t.Logf("--npu-resident %s: %d matrices, %d bytes resident; per token: host copied %.0f B, read from resident %.0f B, streamed %.0f B; pinned peak %d B",
			budget, res.ResidentMatrices, res.ResidentBytes, res.Stats.WeightBytes, res.Stats.ResidentRead, res.Stats.StreamedBytes, res.PinnedPeak)
		if (budget == "0") != (res.ResidentBytes == 0) {
			t.Errorf("--npu-resident %s: %d bytes resident", budget, res.ResidentBytes)
		}
		copied = append(copied, res.Stats.WeightBytes)
	}
	if !(copied[0] > copied[1] && copied[1] > copied[2] && copied[2] == 0) {
		t.Errorf("host bytes copied a token with budgets 0, 600K, 1G: %v; want decreasing to 0", copied)
	}
	if _, _, err := run(t, "", append(args, "--device", "emu", "--npu-resident", "lots")...); err == nil || !strings.Contains(err.Error(), "--npu-resident") {
		t.Errorf("--npu-resident lots: %v", err)
	}
}

// TestMemlockBelowRing lowers this process's memlock limit below the
// staging ring, with a fake driver that enforces it: one line names the
// limit and how to raise it, and the text is the CPU's.
func TestMemlockBelowRing(t *testing.T) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	low := unix.Rlimit{Cur: 4 << 20, Max: old.Max}
	if old.Max != unix.RLIM_INFINITY && old.Max < low.Cur {
		low.Cur = old.Max
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &low); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	defer unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old)
	cfg := amdxdnatest.XDNA2()
	cfg.EnforceMemlock = true
	npuKernel, npuStandIns = amdxdnatest.New(cfg), true
	defer func() { npuKernel, npuStandIns = amdxdna.Sys{}, false }()

	x := packFixtureN(t, "tiny-llama-q4_0", "xdna2", 0)
	args := []string{x, "-p", "Pierre said that", "-n", "8", "--temp", "0", "-t", "2"}
	got, stderr, err := run(t, "", append(args, "--device", "npu")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old)
	want, _, err := run(t, "", append(args, "--device", "cpu")...)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("text %q, cpu %q", got, want)
	}
	t.Logf("stderr: %s", stderr)
	if strings.Count(stderr, "memlock limit") != 1 || !strings.Contains(stderr, "memlock limit (ulimit -l) is 4096 KiB") || !strings.Contains(stderr, "runs on the CPU") {
		t.Errorf("stderr %q: want one line naming the 4096 KiB memlock limit, how to raise it, and the CPU", stderr)
	}
	if !strings.Contains(stderr, "device npu (0 of ") {
		t.Errorf("stderr %q: the summary should say no matmul ran on the npu", stderr)
	}
}
