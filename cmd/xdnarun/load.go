package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/probe"
	"github.com/xdna-go/xdna/runtime/npu/sim"
	"github.com/xdna-go/xdna/runtime/npu/xrt"
	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// loaded is an opened package: file, tokenizer and model.
type loaded struct {
	file    *layout.File
	tok     *tokenizer.Tokenizer
	model   *engine.Model
	ctx     int
	device  string       // cpu, emu or npu: what runs the planned matrices
	backend *npu.Backend // nil on cpu
	dev     npu.Device
	pool    *cpu.Pool // the backend's CPU fallback
}

type loadOptions struct {
	threads   int
	ctx       int // 0: the model's training context, capped at 4096
	device    string
	kernels   string    // --cpu-kernels: "best" or one of cpu.Levels()
	emuFault  string    // test hook: "DISPATCH:timeout" or "DISPATCH:error" on the emulator
	flashAttn bool      // attention as llama.cpp's flash attention (engine.Options.FlashAttn)
	warn      io.Writer // device warnings (fallback to the CPU)
}

func load(ctx context.Context, path string, o loadOptions) (*loaded, error) {
	switch o.device {
	case "auto", "cpu", "emu", "sim", "npu":
	default:
		return nil, fmt.Errorf("--device %q: want auto, cpu, emu, sim or npu", o.device)
	}
	if err := setKernels(o.kernels); err != nil {
		return nil, err
	}
	if o.threads < 1 || o.threads > 1024 {
		return nil, fmt.Errorf("-t %d: want 1..1024 threads", o.threads)
	}
	if o.ctx < 0 {
		return nil, fmt.Errorf("-c %d: must be >= 0", o.ctx)
	}
	path, err := packedPath(ctx, path, o)
	if err != nil {
		return nil, err
	}
	f, err := layout.Open(path)
	if err != nil {
		return nil, err
	}
	if errs := f.Verify(); len(errs) > 0 {
		f.Close()
		return nil, errs[0]
	}
	l := &loaded{file: f}
	fail := func(err error) (*loaded, error) { f.Close(); return nil, err }
	m := f.Manifest
	var tokens int
	if m.Tokenizer.Size > 0 {
		var v tokenizer.Vocab
		if err := v.UnmarshalBinary(f.Bytes(m.Tokenizer)); err != nil {
			return fail(fmt.Errorf("%s: tokenizer: %w", path, err))
		}
		if l.tok, err = tokenizer.New(&v); err != nil {
			return fail(fmt.Errorf("%s: tokenizer: %w", path, err))
		}
		tokens = l.tok.NumTokens()
	}
	if err := engine.Check(m.Model, engine.FileWeights{F: f}, tokens); err != nil {
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	l.ctx = o.ctx
	if l.ctx == 0 {
		l.ctx = min(m.Model.ContextLength, engine.DefaultContext)
		if l.ctx <= 0 {
			l.ctx = engine.DefaultContext
		}
	}
	if train := m.Model.ContextLength; train > 0 && l.ctx > train && o.warn != nil {
		fmt.Fprintf(o.warn, "xdnarun: warning: -c %d is above the model's training context of %d; past %d tokens the output degrades\n", l.ctx, train, train)
	}
	opts := engine.Options{Threads: o.threads, Context: l.ctx, Cache: engine.CacheF16, FlashAttn: o.flashAttn}
	if err := l.openDevice(o); err != nil {
		return fail(err)
	}
	if l.backend != nil {
		opts.MatMul = l.backend
	}
	model, err := engine.New(m.Model, engine.FileWeights{F: f}, opts)
	if err != nil {
		l.closeDevice()
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	l.model = model
	// Refuse a state that cannot be allocated before allocating it.
	need, err := model.StateBytes(l.ctx)
	if err == nil {
		if avail, src := availableMemory(); avail > 0 && need > avail {
			err = fmt.Errorf("needs %d bytes (%s) for the KV cache and buffers; %s has %s", need, cli.Human(need), src, cli.Human(avail))
		}
	}
	if err != nil {
		l.model.Close()
		l.closeDevice()
		return fail(fmt.Errorf("-c %d: %w", l.ctx, err))
	}
	return l, nil
}

// npuKernel is the system-call layer of the pure-Go NPU driver; tests put
// a fake amdxdna driver (amdxdnatest) here.
var npuKernel amdxdna.Kernel = amdxdna.Sys{}

// npuStandIns runs the slots whose xclbin the package does not embed on
// the emulator's stand-in xclbins with --device npu: only a fake driver,
// which executes them on the emulator, can (tests).
var npuStandIns bool

// openNPU opens the NPU: through XRT in a build with -tags xrt, else
// through the pure-Go amdxdna driver.
func openNPU() (npu.Device, error) {
	d, err := xrt.Open(0)
	switch {
	case err == nil:
		return d, nil
	case !errors.Is(err, xrt.ErrNotBuilt):
		return nil, err
	}
	a, err := amdxdna.OpenIndex(npuKernel, 0)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// npuPath names the driver path --device npu takes in this build.
func npuPath() string {
	if _, err := xrt.Open(-1); errors.Is(err, xrt.ErrNotBuilt) {
		return "amdxdna (pure Go, direct ioctls)"
	}
	return "xrt (built with -tags xrt)"
}

// openDevice picks the device: cpu; emu (the emulated NPU of the package's
// target); npu (XRT); auto: npu when the probe finds one whose target the
// package was packed for and this build has XRT, else cpu.
func (l *loaded) openDevice(o loadOptions) error {
	m := l.file.Manifest
	l.device = o.device
	if o.device == "auto" {
		l.device = "cpu"
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
			d, err := openNPU()
			if err == nil {
				l.device, l.dev = "npu", d
			} else {
				why = fmt.Sprintf("found %s but cannot use it (%v)", infos[0].String(), err)
			}
		}
		if why != "" && o.warn != nil {
			fmt.Fprintf(o.warn, "xdnarun: --device auto: %s; running on the CPU\n", why)
		}
	}
	switch l.device {
	case "cpu":
		return nil
	case "emu", "sim":
		cfg, err := emu.ForTarget(m.Package.Target)
		if err != nil {
			return err
		}
		if l.device == "sim" {
			if err := sim.Available(); err != nil {
				return fmt.Errorf("--device sim: %w", err)
			}
			cfg.Name = "sim-" + m.Package.Target
			cfg.Kernels = sim.Factory(m.Package.Target)
		}
		d := emu.New(cfg)
		if o.emuFault != "" {
			var k int64
			var kind string
			_, err := fmt.Sscanf(strings.Replace(o.emuFault, ":", " ", 1), "%d %s", &k, &kind)
			f, ok := emu.FaultNames[kind]
			if err != nil || k < 1 || !ok {
				return fmt.Errorf("--emu-fault %q: want DISPATCH:KIND, KIND one of timeout, error, txn-opcode, txn-gen, txn-bd, txn-length, txn-patch", o.emuFault)
			}
			d.InjectFault(k, f)
		}
		l.dev = d
	case "npu":
		if l.dev == nil {
			d, err := openNPU()
			if err != nil {
				return fmt.Errorf("--device npu: %w", err)
			}
			l.dev = d
		}
	}
	slots := npu.FileSlots(l.file)
	if l.device == "emu" || l.device == "sim" || l.device == "npu" && npuStandIns {
		var err error
		if slots, err = emu.StandIns(m.Tensors, slots, m.Package.Columns); err != nil {
			l.dev.Close()
			return err
		}
	}
	l.pool = cpu.NewPool(o.threads)
	warn := o.warn
	if warn == nil {
		warn = os.Stderr
	}
	timeout := 5 * time.Second
	if l.device == "emu" || l.device == "sim" {
		timeout = 2 * time.Second // the emulator's Go kernels run a 0.5B matmul in ~100 ms
	}
	b, err := npu.NewBackend(l.dev, m.Tensors, slots, l.pool, npu.Options{Warn: warn, Timeout: timeout})
	if err != nil {
		l.closeDevice()
		return fmt.Errorf("--device %s: %w", l.device, err)
	}
	l.backend = b
	return nil
}

func (l *loaded) closeDevice() {
	if l.backend != nil {
		l.backend.Close()
	}
	if l.dev != nil {
		l.dev.Close()
	}
	if l.pool != nil {
		l.pool.Close()
	}
}

func (l *loaded) Close() {
	if l.model != nil {
		l.model.Close()
	}
	l.closeDevice()
	l.file.Close()
}

// setKernels selects the CPU kernel set of --cpu-kernels: "best" (or
// empty) for the best this CPU and build run, or one of cpu.Levels().
func setKernels(name string) error {
	if name == "" || name == "best" {
		cpu.SetSIMD(true)
		return nil
	}
	if _, err := cpu.SetLevel(name); err != nil {
		return fmt.Errorf("--cpu-kernels %q: this CPU and build run best, %s", name, strings.Join(cpu.Levels(), ", "))
	}
	return nil
}
