package xrt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/xclbin"
)

// fakeLib stands in for XRT: it records calls and finishes runs in the
// state the test sets.
type fakeLib struct {
	kernels int
	bos     map[uint32][]byte
	nextBO  uint32
	runs    map[uint64]npu.State // final state; StateRunning: never finishes
	nextRun uint64
	state   npu.State // state of the next run
	syncs   int
	calls   []string
}

func newFake() *fakeLib {
	return &fakeLib{bos: map[uint32][]byte{}, runs: map[uint64]npu.State{}, state: npu.StateCompleted}
}

func (f *fakeLib) loadKernel(x []byte, name string) (uint32, error) {
	f.kernels++
	f.calls = append(f.calls, "load "+name)
	return uint32(f.kernels), nil
}

func (f *fakeLib) alloc(kernel uint32, instr bool, size int) (uint32, []byte, error) {
	f.nextBO++
	f.bos[f.nextBO] = make([]byte, size)
	return f.nextBO, f.bos[f.nextBO], nil
}

func (f *fakeLib) free(bo uint32) error { delete(f.bos, bo); return nil }

func (f *fakeLib) sync(bo uint32, toDevice bool, offset, size int) error { f.syncs++; return nil }

func (f *fakeLib) run(kernel uint32, opcode uint64, instr, words uint32, data []uint32) (uint64, error) {
	f.nextRun++
	f.runs[f.nextRun] = f.state
	return f.nextRun, nil
}

func (f *fakeLib) wait(run uint64, timeout time.Duration) (npu.State, bool, error) {
	s := f.runs[run]
	return s, s != npu.StateRunning, nil
}

func (f *fakeLib) release(run uint64) { delete(f.runs, run) }
func (f *fakeLib) close() error       { return nil }

func xclbinFor(t *testing.T, kt, columns int) []byte {
	t.Helper()
	x, err := emu.XCLBin(planar.Q4_0, kt, columns)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestOpenWithoutTag(t *testing.T) {
	d, err := Open(0)
	if err == nil {
		d.Close()
		t.Skip("built with -tags xrt and a device opened")
	}
	t.Logf("Open(0): %v", err)
}

// TestDeviceLogic drives the Go side over a fake XRT: context dedupe and
// limit, kernel checks, buffer rules, in-flight limit and state mapping.
func TestDeviceLogic(t *testing.T) {
	f := newFake()
	d := newDevice(f, npu.Info{Name: "fake", Columns: 4, MaxContexts: 2, MaxInFlight: 2})
	defer d.Close()

	if _, err := d.Alloc(npu.BOData, 64); err == nil {
		t.Error("alloc before any kernel: no error")
	}
	if _, err := d.LoadKernel(xclbinFor(t, 32, 8), xclbin.NPUKernel); err == nil || !strings.Contains(err.Error(), "8 columns") {
		t.Errorf("8-column design on 4 columns: %v", err)
	}
	if _, err := d.LoadKernel(xclbinFor(t, 32, 4), "NOPE"); err == nil {
		t.Error("missing kernel name: no error")
	}
	if _, err := d.LoadKernel([]byte("not an xclbin"), xclbin.NPUKernel); err == nil {
		t.Error("garbage xclbin: no error")
	}
	k1, err := d.LoadKernel(xclbinFor(t, 32, 4), xclbin.NPUKernel)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := d.LoadKernel(xclbinFor(t, 32, 4), xclbin.NPUKernel); err != nil || k != k1 {
		t.Errorf("reload: %v %v, want the same kernel %v", k, err, k1)
	}
	if _, err := d.LoadKernel(xclbinFor(t, 64, 4), xclbin.NPUKernel); err != nil {
		t.Fatal(err)
	}
	if _, err := d.LoadKernel(xclbinFor(t, 96, 4), xclbin.NPUKernel); !errors.Is(err, npu.ErrContextLimit) {
		t.Errorf("third context: %v, want ErrContextLimit", err)
	}
	if f.kernels != 2 {
		t.Errorf("XRT asked for %d contexts, want 2", f.kernels)
	}

	ins, _ := d.Alloc(npu.BOInstr, 4096)
	data, _ := d.Alloc(npu.BOData, 4096)
	if _, err := d.Run(k1, npu.OpcodeTxn, data, 4, data); err == nil {
		t.Error("data buffer as instructions: no error")
	}
	if _, err := d.Run(k1, npu.OpcodeTxn, ins, 4, ins); err == nil {
		t.Error("instruction buffer as data: no error")
	}
	r1, err := d.Run(k1, npu.OpcodeTxn, ins, 16, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(data, npu.ToDevice, 0, 64); !errors.Is(err, npu.ErrBusy) {
		t.Errorf("sync of a buffer in use: %v, want ErrBusy", err)
	}
	if err := d.Free(data); !errors.Is(err, npu.ErrBusy) {
		t.Errorf("free of a buffer in use: %v, want ErrBusy", err)
	}
	f.state = npu.StateRunning
	r2, _ := d.Run(k1, npu.OpcodeTxn, ins, 16, data)
	if _, err := d.Run(k1, npu.OpcodeTxn, ins, 16, data); !errors.Is(err, npu.ErrInFlight) {
		t.Errorf("third run in flight: %v, want ErrInFlight", err)
	}
	if err := d.Wait(r1, time.Second); err != nil {
		t.Errorf("wait: %v", err)
	}
	if err := d.Wait(r2, time.Millisecond); !errors.Is(err, npu.ErrTimeout) {
		t.Errorf("hung run: %v, want ErrTimeout", err)
	}
	f.runs[2] = npu.StateError
	var re *npu.RunError
	if err := d.Wait(r2, time.Millisecond); !errors.As(err, &re) || re.State != npu.StateError {
		t.Errorf("failed run: %v, want a RunError in state ERROR", err)
	}
	if err := d.Sync(data, npu.ToDevice, 0, 64); err != nil {
		t.Errorf("sync after the runs: %v", err)
	}
	if err := d.Sync(data, npu.ToDevice, 4000, 200); err == nil {
		t.Error("sync past the end: no error")
	}
	if err := d.Free(data); err != nil {
		t.Errorf("free: %v", err)
	}
}
