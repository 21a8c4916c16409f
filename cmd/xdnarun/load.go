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
	mmap      bool      // --mmap: the CPU's matrices stay mapped from the package
	noMmap    bool      // llama.cpp's --no-mmap: copy them even past the memory margin
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
	// The matrices are checked where they are read from: as they are
	// copied, or from the mapping (weights, below).
	if errs := f.VerifyExcept(f.Packed); len(errs) > 0 {
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

// copyMargin is the memory left over, beyond the copy of the weights, below
// which the weights stay mapped unless --no-mmap asks for the copy: room
// for the KV cache and buffers (checked on their own after), and for the
// rest of the machine.
const copyMargin = 1 << 30

// weights returns what the engine reads the weights from. On the CPU the
// matrices are copied into memory on huge pages (engine.CopiedWeights:
// decoding streams them every token, faster than from the mapping's 4 KiB
// pages), unless --mmap says to map them, or the copy would leave less
// than copyMargin of the memory available, which is said on o.warn. A
// device other than the CPU multiplies the planned matrices from its own
// buffers, and the rest are mapped. Mapped matrices are checked here.
func (l *loaded) weights(o loadOptions) (engine.Weights, error) {
	f := l.file
	if o.mmap && o.noMmap {
		return nil, fmt.Errorf("--mmap and --no-mmap: give one")
	}
	copyIt := l.device == "cpu" && !o.mmap
	if need := engine.CopyBytes(f); copyIt && !o.noMmap {
		if avail, src := availableMemory(); avail > 0 && need+copyMargin > avail {
			copyIt = false
			if o.warn != nil {
				fmt.Fprintf(o.warn, "xdnarun: note: the weights (%s) stay mapped from the package, not read into memory: %s has %s (decoding is slower from the mapping; --no-mmap reads them anyway)\n",
					cli.Human(need), src, cli.Human(avail))
			}
		}
	}
	if !copyIt {
		if errs := f.VerifyExcept(func(what string) bool { return !f.Packed(what) }); len(errs) > 0 {
			return nil, errs[0]
		}
		return engine.FileWeights{F: f}, nil
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
