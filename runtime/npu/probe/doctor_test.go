package probe_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
	"github.com/xdna-go/xdna/runtime/npu/probe"
)

func find(cs []probe.Check, name string) probe.Check {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return probe.Check{}
}

// TestDoctor breaks each precondition of the fake machine in turn, on both
// generations: the check that owns it fails with its fix, Failed says so,
// and the whole machine passes every check.
func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	xclbin := filepath.Join(dir, "have.xclbin")
	os.WriteFile(xclbin, []byte("x"), 0o644)
	o := probe.DoctorOptions{Pinned: 128 << 20, PinnedBy: "the ring",
		XCLBins: []probe.XCLBinNeed{{Slot: "a", Embedded: true}, {Slot: "b", Path: xclbin}}}
	for _, gen := range []struct {
		name string
		cfg  amdxdnatest.Config
		want string
	}{{"xdna1", amdxdnatest.XDNA1(), "npu1, AIE 2.0, 5 columns"}, {"xdna2", amdxdnatest.XDNA2(), "npu4, AIE 2.0, 8 columns"}} {
		for _, c := range []struct {
			brk   amdxdnatest.Break
			check string
			fix   string
		}{
			{amdxdnatest.BreakNone, "", ""},
			{amdxdnatest.BreakNoNode, "device node", "load the driver"},
			{amdxdnatest.BreakPermissions, "permissions", "/etc/udev/rules.d/70-amdxdna.rules"},
			{amdxdnatest.BreakProtocol, "firmware protocol", "install the firmware this driver expects"},
			{amdxdnatest.BreakMemlock, "memlock limit", "limits.d"},
		} {
			h, err := amdxdnatest.NewHost(t.TempDir(), amdxdnatest.HostConfig{Device: gen.cfg, Break: c.brk})
			if err != nil {
				t.Fatal(err)
			}
			cs := probe.Doctor(h, o)
			name := gen.name + "/" + amdxdnatest.Breaks[c.brk]
			if c.brk == amdxdnatest.BreakNone {
				for _, x := range cs {
					if x.Verdict != probe.Pass {
						t.Errorf("%s: %s: %s %s", name, x.Name, x.Verdict, x.Found)
					}
				}
				if got := find(cs, "NPU generation and columns").Found; !strings.Contains(got, gen.want) {
					t.Errorf("%s: topology %q, want %q", name, got, gen.want)
				}
				continue
			}
			x := find(cs, c.check)
			if x.Verdict != probe.Fail || !strings.Contains(x.Fix, c.fix) || !probe.Failed(cs) {
				t.Errorf("%s: %s: %+v", name, c.check, x)
			}
		}
	}
	// A missing xclbin.
	h, _ := amdxdnatest.NewHost(t.TempDir(), amdxdnatest.HostConfig{Device: amdxdnatest.XDNA2()})
	o.XCLBins = append(o.XCLBins, probe.XCLBinNeed{Slot: "c", Path: filepath.Join(dir, "missing.xclbin")})
	cs := probe.Doctor(h, o)
	if x := find(cs, "kernels (xclbins)"); x.Verdict != probe.Fail || !strings.Contains(x.Found, "1 of 3 missing: c (") {
		t.Errorf("a missing xclbin: %+v", x)
	}
}
