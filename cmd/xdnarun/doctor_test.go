package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
	"github.com/xdna-go/xdna/runtime/npu/probe"
)

func doctorRun(t *testing.T, o *doctorOptions) (string, error) {
	t.Helper()
	var out bytes.Buffer
	o.stdout = &out
	err := runDoctor(context.Background(), o)
	if err != nil && !errors.Is(err, errDoctor) {
		t.Fatalf("doctor: %v", err)
	}
	return out.String(), err
}

func checkLine(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " "+name+": ") {
			return l
		}
	}
	return ""
}

// TestDoctorFake runs the doctor on a fake machine with an NPU (the fake
// amdxdna driver behind a fake sysfs, /dev and kernel log), first whole,
// then with each precondition broken in turn: each time the broken one's
// line has the verdict and the fix, and the exit status is 1.
func TestDoctorFake(t *testing.T) {
	for _, c := range []struct {
		brk      amdxdnatest.Break
		check    string
		verdict  string
		found    string
		fix      string
		outOfTre bool
	}{
		{amdxdnatest.BreakNone, "firmware protocol", "pass", "accepted the firmware", "", true},
		{amdxdnatest.BreakNoNode, "device node", "fail", "no /dev/accel/accel*", "load the driver", false},
		{amdxdnatest.BreakPermissions, "permissions", "fail", "crw-------", "udev rule", false},
		{amdxdnatest.BreakProtocol, "firmware protocol", "fail", "protocol 7.3; the in-kernel driver of Linux 6.14-6.19 expects protocol 6.12", "install the firmware this driver expects", false},
		{amdxdnatest.BreakMemlock, "memlock limit", "fail", "RLIMIT_MEMLOCK 8 MiB", "memlock unlimited", false},
	} {
		name := amdxdnatest.Breaks[c.brk]
		t.Run(name, func(t *testing.T) {
			h, err := amdxdnatest.NewHost(t.TempDir(), amdxdnatest.HostConfig{Device: amdxdnatest.XDNA2(), Break: c.brk, OutOfTree: c.outOfTre})
			if err != nil {
				t.Fatal(err)
			}
			out, err := doctorRun(t, &doctorOptions{host: h})
			t.Logf("doctor, %s (exit %d):\n%s", name, exitOf(err), out)
			l := checkLine(out, c.check)
			if !strings.HasPrefix(l, c.verdict) || !strings.Contains(l, c.found) || !strings.Contains(l, c.fix) {
				t.Errorf("%s: line %q, want %s ... %q ... %q", c.check, l, c.verdict, c.found, c.fix)
			}
			if c.brk == amdxdnatest.BreakNone {
				if err != nil || strings.Contains(out, "\nfail") || strings.HasPrefix(out, "fail") {
					t.Errorf("a whole machine: %v\n%s", err, out)
				}
				for _, want := range []string{"driver: amdxdna_accel_driver 0.1.0, out-of-tree (amd/xdna-driver) version 2.21.0",
					"NPU generation and columns: npu4, AIE 2.0, 8 columns x 6 rows", "target xdna2", "firmware: version 1.1.2.64 running"} {
					if !strings.Contains(out, want) {
						t.Errorf("no %q in\n%s", want, out)
					}
				}
			} else if !errors.Is(err, errDoctor) {
				t.Errorf("%s: exit status 0, want 1", name)
			}
		})
	}
}

func exitOf(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

// TestDoctorXCLBins: a package planned on the NPU whose slots are neither
// embedded nor built fails the kernels check, naming each; with the
// xclbins where the catalog says, it passes; the package's target is
// checked against the NPU's.
func TestDoctorXCLBins(t *testing.T) {
	x := packFixtureN(t, "tiny-llama-q8_0", "xdna2", 0)
	h, err := amdxdnatest.NewHost(t.TempDir(), amdxdnatest.HostConfig{Device: amdxdnatest.XDNA2()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cat := filepath.Join(dir, "manifest.toml")
	def, err := os.ReadFile("../../manifest.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cat, def, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := doctorRun(t, &doctorOptions{host: h, model: x, catalog: cat})
	t.Logf("doctor with the xclbins missing (exit %d):\n%s", exitOf(err), out)
	l := checkLine(out, "kernels (xclbins)")
	if !strings.HasPrefix(l, "fail") || !strings.Contains(l, "xdna2-q8_0-k") || !strings.Contains(l, filepath.Join(dir, "kernels/xdna2/")) || !strings.Contains(l, "kernels/README.md") || !errors.Is(err, errDoctor) {
		t.Errorf("kernels line %q, exit %v", l, err)
	}
	// Build it (any bytes: the check looks for the file).
	p := filepath.Join(dir, "kernels/xdna2/gemv_q8_0_k256.xclbin")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("xclbin"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = doctorRun(t, &doctorOptions{host: h, model: x, catalog: cat})
	if l := checkLine(out, "kernels (xclbins)"); !strings.HasPrefix(l, "pass") || err != nil {
		t.Errorf("with the xclbins: %q, %v\n%s", l, err, out)
	}
	// A package for xdna2 on an XDNA1 machine.
	h1, _ := amdxdnatest.NewHost(t.TempDir(), amdxdnatest.HostConfig{Device: amdxdnatest.XDNA1()})
	out, err = doctorRun(t, &doctorOptions{host: h1, model: x, catalog: cat})
	if l := checkLine(out, "NPU generation and columns"); !strings.HasPrefix(l, "fail") || !strings.Contains(l, "--target xdna1") || err == nil {
		t.Errorf("xdna2 package on xdna1: %q, %v", l, err)
	}
}

// TestDoctorHere: on this machine every check gives a verdict, JSON
// included; without an NPU the exit status is 1 and says so.
func TestDoctorHere(t *testing.T) {
	var out bytes.Buffer
	err := runDoctor(context.Background(), &doctorOptions{json: true, stdout: &out})
	var cs []probe.Check
	if jerr := json.Unmarshal(out.Bytes(), &cs); jerr != nil || len(cs) < 9 {
		t.Fatalf("doctor --json: %v, %d checks\n%s", jerr, len(cs), out.String())
	}
	for _, c := range cs {
		if c.Verdict != probe.Pass && c.Verdict != probe.Fail && c.Verdict != probe.Unknown || c.Found == "" {
			t.Errorf("check %+v", c)
		}
	}
	if _, perr := probe.Probe(); perr != nil && !errors.Is(err, errDoctor) {
		t.Errorf("no NPU, exit status 0")
	}
}

// TestDoctorResidentBudget: the memlock check counts the resident budget
// the user names with the ring's 128 MiB.
func TestDoctorResidentBudget(t *testing.T) {
	h, err := amdxdnatest.NewHost(t.TempDir(), amdxdnatest.HostConfig{Device: amdxdnatest.XDNA2(), Break: amdxdnatest.BreakMemlock})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := doctorRun(t, &doctorOptions{host: h, resident: "2G"})
	l := checkLine(out, "memlock limit")
	if !strings.Contains(l, "pins 2176 MiB") || !strings.Contains(l, "resident budget, 2048 MiB") {
		t.Errorf("memlock line %q: want the ring and the 2 GiB budget counted", l)
	}
	var out2 bytes.Buffer
	if err := runDoctor(context.Background(), &doctorOptions{host: h, resident: "lots", stdout: &out2}); err == nil || !strings.Contains(err.Error(), "--npu-resident") {
		t.Errorf("--npu-resident lots: %v", err)
	}
}
