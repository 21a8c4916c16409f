package selftest_test

import (
	"strings"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/selftest"
)

func emuOptions(t *testing.T, target string) selftest.Options {
	cfg, err := emu.ForTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	return selftest.Options{
		Target: target, Device: "emu", Compare: selftest.BitExact, Rounds: 1, StreamBytes: 256 << 10,
		Open:   func() (npu.Device, error) { return emu.New(cfg), nil },
		XCLBin: func(s *kernelsel.Slot) ([]byte, error) { return emu.XCLBin(s.Type, s.KTile, s.Columns) },
	}
}

// TestEmu: every slot of both targets passes bit for bit on the emulator,
// each shape as it says (the chunked one staged in chunks, one short), and the timings say they are the emulator's.
func TestEmu(t *testing.T) {
	for _, target := range []string{"xdna1", "xdna2"} {
		r, err := selftest.Run(emuOptions(t, target))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Failed) > 0 {
			t.Errorf("%s: failed %v", target, r.Failed)
		}
		for _, s := range r.Slots {
			if !s.Pass {
				t.Errorf("%s %s: %s %+v", target, s.Slot, s.Error, s.Shapes)
			}
			if sh := s.Shapes[1]; sh.Chunks < 2 || !sh.ShortChunk {
				t.Errorf("%s: the chunked shape: %d chunks, one short %v", s.Slot, sh.Chunks, sh.ShortChunk)
			}
		}
		if r.Dispatch == nil {
			t.Fatalf("%s: no timings", target)
		}
		if !strings.Contains(r.Dispatch.Source, "not an NPU figure") || len(r.Stream) != len(map[int]bool{1: true, 2: true, 4: true, map[string]int{"xdna1": 4, "xdna2": 8}[target]: true}) {
			t.Errorf("%s: timings %+v %+v", target, r.Dispatch, r.Stream)
		}
		t.Logf("%s: %d slots pass; dispatch %.0f us, stream %+v", target, len(r.Slots), r.Dispatch.Value, r.Stream)
	}
}

// TestFault: a wrong stream injected into one slot's first dispatch fails
// that slot alone.
func TestFault(t *testing.T) {
	o := emuOptions(t, "xdna2")
	o.Prepare = func(slot string, dev npu.Device) {
		if slot == "xdna2-q8_0-k256" {
			dev.(*emu.Device).InjectFault(1, emu.FaultNames["txn-bd"])
		}
	}
	r, err := selftest.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failed) != 1 || r.Failed[0] != "xdna2-q8_0-k256" {
		t.Fatalf("failed %v", r.Failed)
	}
	for _, s := range r.Slots {
		if s.Slot == "xdna2-q8_0-k256" {
			t.Logf("%s: %s", s.Slot, s.Shapes[0].Detail)
		}
	}
}

// wrongBits is a device that completes every run but flips the lowest bit
// of the first output it hands back: a device computing wrong results
// without an error, which only the comparison can catch.
type wrongBits struct {
	npu.Device
	outs map[npu.BO]bool
}

func (d *wrongBits) Run(k npu.Kernel, opcode uint64, instr npu.BO, words int, data ...npu.BO) (npu.Run, error) {
	if len(data) > 2 {
		d.outs[data[2]] = true // bo2: the outputs (package npu's argument convention)
	}
	return d.Device.Run(k, opcode, instr, words, data...)
}

func (d *wrongBits) Sync(bo npu.BO, dir npu.Direction, offset, size int) error {
	err := d.Device.Sync(bo, dir, offset, size)
	if err == nil && dir == npu.FromDevice && d.outs[bo] {
		if b, merr := d.Map(bo); merr == nil && len(b) > offset {
			b[offset] ^= 1
		}
	}
	return err
}

// TestWrongBits: a slot whose device returns outputs one bit off fails
// the bit-exact comparison, naming the output.
func TestWrongBits(t *testing.T) {
	o := emuOptions(t, "xdna1")
	cfg, _ := emu.ForTarget("xdna1")
	o.Open = func() (npu.Device, error) { return &wrongBits{Device: emu.New(cfg), outs: map[npu.BO]bool{}}, nil }
	r, err := selftest.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failed) != len(r.Slots) {
		t.Fatalf("failed %v of %d", r.Failed, len(r.Slots))
	}
	d := r.Slots[0].Shapes[0].Detail
	if !strings.Contains(d, "outputs differ from the CPU's bits") {
		t.Errorf("detail %q", d)
	}
	t.Logf("%s: %s", r.Slots[0].Slot, d)
}
