package amdxdna_test

import (
	"errors"
	"strings"

	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

func TestOpenClose(t *testing.T) {
	for _, c := range []struct {
		cfg     amdxdnatest.Config
		columns int
	}{{amdxdnatest.XDNA1(), 4}, {amdxdnatest.XDNA2(), 8}} {
		d, _ := open(t, c.cfg)
		if in := d.Info(); in.Columns != c.columns || in.MaxInFlight != 4 {
			t.Errorf("%+v: info %+v", c.cfg, in)
		}
	}
}

// TestGEMV runs matrices through the Backend on the Device over the fake
// driver and on the emulator: the outputs are identical (the same kernel
// model over the same staged bytes), and close to the CPU's.
func TestGEMV(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		cfg              amdxdnatest.Config
		ecfg             emu.Config
		typ              planar.Type
		n, k, kTile, col int
		tokens           int
	}{
		{amdxdnatest.XDNA2(), emu.XDNA2(), planar.Q8_0, 301, 288, 96, 8, 1},
		{amdxdnatest.XDNA1(), emu.XDNA1(), planar.Q4_0, 70, 160, 32, 4, 3},
		{amdxdnatest.XDNA2(), emu.XDNA2(), planar.Q8_0, 1000, 2048, 256, 8, 5}, // several ring chunks
	} {
		m := randomMatrix(t, rng, c.typ, c.n, c.k, c.kTile, c.col)
		d, k := open(t, c.cfg)
		ed := emu.New(c.ecfg)
		defer ed.Close()
		bd, be, bc := backend(t, d, m, nil), backend(t, ed, m, nil), backend(t, nil, m, nil)
		x := randomX(rng, c.tokens*c.k)
		yd, ye, yc := make([]float32, c.tokens*c.n), make([]float32, c.tokens*c.n), make([]float32, c.tokens*c.n)
		bd.MatMat("w", m, x, yd, c.tokens)
		be.MatMat("w", m, x, ye, c.tokens)
		bc.MatMat("w", m, x, yc, c.tokens)
		if s := bd.Stats(); s.NPUCalls != 1 || s.Faults != 0 {
			t.Fatalf("%v: stats %+v, notes %q", c.typ, s, bd.Notes())
		}
		if st := k.Stats(); st.Commands == 0 || st.Failed != 0 {
			t.Fatalf("fake: %+v %q", st, k.Failures())
		}
		if !slices.Equal(yd, ye) {
			t.Errorf("%v %dx%d: amdxdna output differs from the emulator's", c.typ, c.n, c.k)
		}
		if cs := cosine(yd, yc); cs < 0.9999 {
			t.Errorf("%v %dx%d: cosine against the CPU %.6f", c.typ, c.n, c.k, cs)
		}
		t.Logf("%v %dx%d x%d on %d columns: %d submissions, %d commands, cosine vs CPU %.7f",
			c.typ, c.n, c.k, c.tokens, c.col, k.Stats().Submissions, k.Stats().Commands, cosine(yd, yc))
	}
}

// TestFaults: a command that never finishes (the wait times out) and one
// that finishes in state ERROR each end in the Backend's one-warning CPU
// fallback, with the CPU's outputs, on the plain device and on the
// syncobj wait path; Close then releases everything (the hung command is
// aborted with its context).
func TestFaults(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	m := randomMatrix(t, rng, planar.Q8_0, 300, 512, 128, 8)
	x := randomX(rng, m.G.K)
	want := make([]float32, m.G.N)
	backend(t, nil, m, nil).MatVec("w", m, x, want)
	for _, c := range []struct {
		name   string
		fault  amdxdnatest.Fault
		noWait bool
		msg    string
	}{
		{"timeout", amdxdnatest.FaultHang, false, "command timed out"},
		{"error state", amdxdnatest.FaultError, false, "finished ERROR"},
		{"timeout, syncobj wait", amdxdnatest.FaultHang, true, "command timed out"},
		{"error state, syncobj wait", amdxdnatest.FaultError, true, "finished ERROR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := amdxdnatest.XDNA2()
			cfg.NoWaitCmd = c.noWait
			d, k := open(t, cfg)
			var warn strings.Builder
			b := backend(t, d, m, &warn)
			y := make([]float32, m.G.N)
			b.MatVec("w", m, x, y) // completes: the device works
			if b.Stats().Faults != 0 {
				t.Fatalf("first call faulted: %s", warn.String())
			}
			k.InjectFault(k.Stats().Submissions+1, c.fault)
			for range 3 {
				clear(y)
				b.MatVec("w", m, x, y)
				if !slices.Equal(y, want) {
					t.Fatal("output after the fault differs from the CPU's")
				}
			}
			st := b.Stats()
			if st.Faults != 1 || strings.Count(warn.String(), "every later matmul on the CPU") != 1 || !strings.Contains(warn.String(), c.msg) {
				t.Errorf("faults %d, warning %q", st.Faults, warn.String())
			}
			if fs := k.Stats(); (c.noWait && (fs.SyncobjWait == 0 || fs.Waits != 0)) || (!c.noWait && (fs.Waits == 0 || fs.SyncobjWait != 0)) {
				t.Errorf("waits: %d WAIT_CMD, %d SYNCOBJ_TIMELINE_WAIT", fs.Waits, fs.SyncobjWait)
			}
			t.Logf("%s", strings.TrimSpace(warn.String()))
			b.Close()
		})
	}
}

// TestLimits: commands in flight and contexts are refused by the Device
// before the driver would block or fail.
func TestLimits(t *testing.T) {
	d, _ := open(t, amdxdnatest.XDNA1())
	for i := range 6 {
		x, err := emu.XCLBin(planar.Q8_0, 32*(i+1), 4)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.LoadKernel(x, "MLIR_AIE"); err != nil {
			t.Fatalf("context %d: %v", i+1, err)
		}
		if k2, err := d.LoadKernel(x, "MLIR_AIE"); err != nil || int(k2) != i+1 {
			t.Fatalf("reload of context %d: %d %v", i+1, k2, err)
		}
	}
	x, _ := emu.XCLBin(planar.Q4_0, 32, 4)
	if _, err := d.LoadKernel(x, "MLIR_AIE"); !errors.Is(err, npu.ErrContextLimit) {
		t.Errorf("7th context: %v", err)
	}
	x, _ = emu.XCLBin(planar.Q4_0, 32, 8)
	if _, err := d.LoadKernel(x, "MLIR_AIE"); err == nil || !strings.Contains(err.Error(), "8 columns wide") {
		t.Errorf("8-column design on XDNA1: %v", err)
	}
	ins, _ := d.Alloc(npu.BOInstr, 4096)
	bo, _ := d.Alloc(npu.BOData, 4096)
	for i := range 4 {
		if _, err := d.Run(1, npu.OpcodeTxn, ins, 4, bo); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if _, err := d.Run(1, npu.OpcodeTxn, ins, 4, bo); !errors.Is(err, npu.ErrInFlight) {
		t.Errorf("5th run: %v", err)
	}
	if err := d.Sync(bo, npu.ToDevice, 0, 16); !errors.Is(err, npu.ErrBusy) {
		t.Errorf("sync of a busy buffer: %v", err)
	}
	if err := d.Free(bo); !errors.Is(err, npu.ErrBusy) {
		t.Errorf("free of a busy buffer: %v", err)
	}
	if _, err := d.Run(1, npu.OpcodeTxn, bo, 4, ins); err == nil {
		t.Error("data buffer as instructions accepted")
	}
}

// TestOpenIndex: the device list comes from a Lister kernel; without a
// device, or past the last one, the error matches ErrNoDevice.
func TestOpenIndex(t *testing.T) {
	fk := amdxdnatest.New(amdxdnatest.XDNA2())
	d, err := amdxdna.OpenIndex(fk, 0)
	if err != nil {
		t.Fatal(err)
	}
	if in := d.Info(); in.Name != "amdxdna:accel0 xdna2" {
		t.Errorf("name %q", in.Name)
	}
	d.Close()
	if _, err := amdxdna.OpenIndex(fk, 1); !errors.Is(err, amdxdna.ErrNoDevice) {
		t.Errorf("index 1: %v", err)
	}
	// The real system: this machine has no NPU unless /dev/accel says so.
	d, err = amdxdna.Open(0)
	if err != nil {
		if !errors.Is(err, amdxdna.ErrNoDevice) {
			t.Fatalf("Open(0): %v, want ErrNoDevice or a device", err)
		}
		t.Logf("Open(0) here: %v", err)
		return
	}
	t.Logf("Open(0) here: %s, %+v", d.Info().Name, d.Metadata())
	d.Close()
}
