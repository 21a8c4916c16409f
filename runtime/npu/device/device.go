// Package device chooses and opens what runs a package's planned matrices:
// the CPU, the emulated NPU of the package's target (emu), the emulator
// with the AIE kernel sources compiled for this machine (sim), or the NPU
// itself (through XRT in a build with -tags xrt, else the pure-Go amdxdna
// driver), and builds the npu.Backend on it. The CLIs (xdnarun run, chat,
// bench, serve, selftest) all open devices here, so the choice and its
// fallbacks are made in one place.
package device

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/probe"
	"github.com/xdna-go/xdna/runtime/npu/sim"
	"github.com/xdna-go/xdna/runtime/npu/xrt"
)

// Names are the devices Open takes, in the order the help text lists them.
var Names = []string{"auto", "cpu", "emu", "sim", "npu"}

// Options says which device to open and how.
type Options struct {
	// Device is one of Names. auto: the NPU when the probe finds one of
	// the package's target and the package embeds kernels, else the CPU
	// (said on Warn).
	Device string
	// Threads is the CPU pool's size (the backend's fallback).
	Threads int
	// Warn receives device warnings (auto's choice, fallbacks to the CPU).
	Warn io.Writer
	// Fault injects a fault into the emulator: "DISPATCH:KIND" (a test
	// hook; emu and sim only).
	Fault string
	// Resident is the pin budget of resident weights (npu.Options.Resident).
	Resident int64
	// Kernel is the pure-Go driver's system-call layer (nil: the real
	// one); tests put a fake amdxdna driver here.
	Kernel amdxdna.Kernel
	// StandIns runs, with Device npu, the slots whose xclbin the package
	// does not embed on the emulator's stand-in xclbins: only a fake
	// driver, which executes them on the emulator, can (tests).
	StandIns bool
}

// Opened is an opened device with its backend. On the CPU Dev and Backend
// are nil.
type Opened struct {
	Name    string // cpu, emu, sim or npu: what runs the planned matrices
	Dev     npu.Device
	Backend *npu.Backend
	Pool    *cpu.Pool
}

// Check validates o's device name.
func Check(name string) error {
	for _, n := range Names {
		if n == name {
			return nil
		}
	}
	return fmt.Errorf("--device %q: want %s", name, strings.Join(Names, ", "))
}

// Open opens the device o names for the package f and builds the backend
// that runs f's planned matrices on it.
func Open(f *layout.File, o Options) (*Opened, error) {
	if err := Check(o.Device); err != nil {
		return nil, err
	}
	m := f.Manifest
	op := &Opened{Name: o.Device}
	if o.Device == "auto" {
		op.Name = "cpu"
		why := ""
		infos, err := probe.Probe()
		switch {
		case err != nil:
			why = err.Error()
		case len(infos) == 0:
			why = "no NPU found"
		case infos[0].Target() != m.Package.Target:
			why = fmt.Sprintf("found %s, but the package is packed for %s", infos[0].String(), m.Package.Target)
		case len(m.Slots) == 0:
			why = "the package embeds no NPU kernel"
		default:
			d, err := OpenNPU(o.Kernel)
			if err == nil {
				op.Name, op.Dev = "npu", d
			} else {
				why = fmt.Sprintf("found %s but cannot use it (%v)", infos[0].String(), err)
			}
		}
		if why != "" && o.Warn != nil {
			fmt.Fprintf(o.Warn, "xdnarun: --device auto: %s; running on the CPU\n", why)
		}
	}
	switch op.Name {
	case "cpu":
		return op, nil
	case "emu", "sim":
		d, err := openEmu(m.Package.Target, op.Name == "sim", o.Fault)
		if err != nil {
			return nil, err
		}
		op.Dev = d
	case "npu":
		if op.Dev == nil {
			d, err := OpenNPU(o.Kernel)
			if err != nil {
				return nil, fmt.Errorf("--device npu: %w", err)
			}
			op.Dev = d
		}
	}
	slots := npu.FileSlots(f)
	if op.Name == "emu" || op.Name == "sim" || op.Name == "npu" && o.StandIns {
		var err error
		if slots, err = emu.StandIns(m.Tensors, slots, m.Package.Columns); err != nil {
			op.Dev.Close()
			return nil, err
		}
	}
	op.Pool = cpu.NewPool(max(o.Threads, 1))
	timeout := 5 * time.Second
	if op.Name == "emu" || op.Name == "sim" {
		timeout = 2 * time.Second // the emulator runs a 0.5B matmul in ~100 ms
	}
	warn := o.Warn
	if warn == nil {
		warn = os.Stderr
	}
	b, err := npu.NewBackend(op.Dev, m.Tensors, slots, op.Pool, npu.Options{Warn: warn, Timeout: timeout, Resident: o.Resident})
	if err != nil {
		op.Close()
		return nil, fmt.Errorf("--device %s: %w", op.Name, err)
	}
	op.Backend = b
	return op, nil
}

// openEmu returns the emulated NPU of target: with sim, running the AIE
// kernel sources compiled for this machine; with a fault "DISPATCH:KIND",
// failing that dispatch.
func openEmu(target string, withSim bool, fault string) (*emu.Device, error) {
	cfg, err := emu.ForTarget(target)
	if err != nil {
		return nil, err
	}
	if withSim {
		if err := sim.Available(); err != nil {
			return nil, fmt.Errorf("--device sim: %w", err)
		}
		cfg.Name = "sim-" + target
		cfg.Kernels = sim.Factory(target)
	}
	d := emu.New(cfg)
	if fault != "" {
		var k int64
		var kind string
		_, err := fmt.Sscanf(strings.Replace(fault, ":", " ", 1), "%d %s", &k, &kind)
		f, ok := emu.FaultNames[kind]
		if err != nil || k < 1 || !ok {
			d.Close()
			return nil, fmt.Errorf("--emu-fault %q: want DISPATCH:KIND, KIND one of %s", fault, strings.Join(FaultKinds(), ", "))
		}
		d.InjectFault(k, f)
	}
	return d, nil
}

// FaultKinds are the emulator's fault names, sorted.
func FaultKinds() []string {
	var ks []string
	for k := range emu.FaultNames {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// OpenNPU opens the NPU: through XRT in a build with -tags xrt, else
// through the pure-Go amdxdna driver on kernel (nil: the real system
// calls).
func OpenNPU(kernel amdxdna.Kernel) (npu.Device, error) {
	d, err := xrt.Open(0)
	switch {
	case err == nil:
		return d, nil
	case !errors.Is(err, xrt.ErrNotBuilt):
		return nil, err
	}
	if kernel == nil {
		kernel = amdxdna.Sys{}
	}
	a, err := amdxdna.OpenIndex(kernel, 0)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// NPUPath names the driver path --device npu takes in this build.
func NPUPath() string {
	if xrt.Built() {
		return "xrt (built with -tags xrt)"
	}
	return "amdxdna (pure Go, direct ioctls)"
}

// Close releases the backend, the device and the pool.
func (op *Opened) Close() {
	if op.Backend != nil {
		op.Backend.Close()
		op.Backend = nil
	}
	if op.Dev != nil {
		op.Dev.Close()
		op.Dev = nil
	}
	if op.Pool != nil {
		op.Pool.Close()
		op.Pool = nil
	}
}
