package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/device"
	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// loaded is an opened package: file, tokenizer and model.
type loaded struct {
	file    *layout.File
	tok     *tokenizer.Tokenizer
	model   *engine.Model
	ctx     int
	device  string                // cpu, emu or npu: what runs the planned matrices
	copied  *engine.CopiedWeights // the CPU's matrices in memory; nil when they are mapped
	backend *npu.Backend          // nil on cpu
	opened  *device.Opened
}

type loadOptions struct {
	threads   int
	ctx       int // 0: the model's training context, capped at 4096
	device    string
	kernels   string    // --cpu-kernels: "best" or one of cpu.Levels()
	resident  string    // --npu-resident: "0", a size, or "auto"
	emuFault  string    // test hook: "DISPATCH:timeout" or "DISPATCH:error" on the emulator
	flashAttn bool      // attention as llama.cpp's flash attention (engine.Options.FlashAttn)
	noMmap    bool      // --no-mmap: the CPU's matrices read into memory, not mapped
	warn      io.Writer // device warnings (fallback to the CPU)
}

func load(ctx context.Context, path string, o loadOptions) (*loaded, error) {
	if err := device.Check(o.device); err != nil {
		return nil, err
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
	// Every blob is checked once, before the device opens; with --no-mmap
	// the matrices are instead checked where they are read from, as they
	// are copied or, on a device other than the CPU, from the mapping
	// (weights, below).
	var later func(what string) bool
	if o.noMmap {
		later = f.Packed
	}
	if errs := f.VerifyExcept(later); len(errs) > 0 {
		f.Close()
		return nil, errs[0]
	}
	l := &loaded{file: f}
	fail := func(err error) (*loaded, error) { f.Close(); return nil, err }
	m := f.Manifest
	var tokens int
	if m.Tokenizer.Size > 0 {
		if l.tok, err = tokenizer.FromBinary(f.Bytes(m.Tokenizer)); err != nil {
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
	w, err := l.weights(o)
	if err != nil {
		l.closeDevice()
		return fail(err)
	}
	model, err := engine.New(m.Model, w, opts)
	if err == nil && l.copied != nil {
		if errs := l.copied.VerifyUnread(); len(errs) > 0 {
			model.Close()
			err = errs[0]
		}
	}
	if err != nil {
		l.closeCopy()
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
		l.closeCopy()
		l.closeDevice()
		return fail(fmt.Errorf("-c %d: %w", l.ctx, err))
	}
	return l, nil
}

// weights returns what the engine reads the weights from: the mapped
// package, or with --no-mmap on the CPU a copy of the matrices in memory on
// huge pages (engine.CopiedWeights), refused in one line when it would not
// fit the memory available. A device other than the CPU multiplies its
// planned matrices from its own buffers, and the rest stay mapped. With
// --no-mmap the matrices were not checked at open: mapped ones are checked
// here, copied ones as they are read.
func (l *loaded) weights(o loadOptions) (engine.Weights, error) {
	f := l.file
	if !o.noMmap {
		return engine.FileWeights{F: f}, nil
	}
	if l.device != "cpu" {
		if errs := f.VerifyExcept(func(what string) bool { return !f.Packed(what) }); len(errs) > 0 {
			return nil, errs[0]
		}
		return engine.FileWeights{F: f}, nil
	}
	if need := engine.CopyBytes(f); need > 0 {
		if avail, src := availableMemory(); avail > 0 && need > avail {
			return nil, fmt.Errorf("--no-mmap: the weights need %d bytes (%s) in memory; %s has %s", need, cli.Human(need), src, cli.Human(avail))
		}
	}
	w, err := engine.CopyWeights(f)
	if err != nil {
		return nil, err
	}
	l.copied = w
	return w, nil
}

// weightsFrom says where the CPU reads the matrices from: memory (the copy)
// or mapped.
func (l *loaded) weightsFrom() string {
	if l.copied != nil {
		return "memory"
	}
	return "mapped"
}

// weightsMemory is the memory the CPU reads the matrices from: the copy,
// or the mapped package.
func (l *loaded) weightsMemory() []byte {
	if l.copied != nil {
		return l.copied.Memory()
	}
	return l.file.Bytes(layout.BlobRef{Size: l.file.Size()})
}

// closeCopy gives back the copy of the weights, once the model is closed.
func (l *loaded) closeCopy() {
	if l.copied != nil {
		l.copied.Close()
		l.copied = nil
	}
}

// npuKernel is the system-call layer of the pure-Go NPU driver; tests put
// a fake amdxdna driver (amdxdnatest) here.
var npuKernel amdxdna.Kernel = amdxdna.Sys{}

// npuStandIns runs the slots whose xclbin the package does not embed on
// the emulator's stand-in xclbins with --device npu: only a fake driver,
// which executes them on the emulator, can (tests).
var npuStandIns bool

// openDevice opens the device of --device (runtime/npu/device).
func (l *loaded) openDevice(o loadOptions) error {
	budget, note, err := device.ParseResident(cmp.Or(o.resident, "0"), device.ReadLimits())
	if err != nil {
		return err
	}
	if note != "" && o.warn != nil && o.device != "cpu" {
		fmt.Fprintf(o.warn, "xdnarun: %s\n", note)
	}
	op, err := device.Open(l.file, device.Options{Device: o.device, Threads: o.threads, Warn: o.warn,
		Fault: o.emuFault, Kernel: npuKernel, StandIns: npuStandIns, Resident: budget})
	if err != nil {
		return err
	}
	l.opened, l.device, l.backend = op, op.Name, op.Backend
	return nil
}

func (l *loaded) closeDevice() {
	if l.opened != nil {
		l.opened.Close()
	}
}

func (l *loaded) Close() {
	if l.model != nil {
		l.model.Close()
	}
	l.closeCopy()
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
