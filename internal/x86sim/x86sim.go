// Package x86sim runs one assembled function of an x86-64 ELF executable
// (normally the running test binary) instruction by instruction, so that
// code for instructions this CPU lacks (AVX-512) can be tested here.
//
// The instructions come from GNU objdump's Intel-syntax disassembly of the
// function (an independent decoder), not from a decoder of our own; the
// interpreter executes each one by the Intel SDM's pseudo-code and refuses,
// with an error naming its address and text, any instruction or operand
// form it does not model: nothing is skipped.
//
// The function is called with Go's ABI0: the arguments in 8-byte stack
// slots above the return address, on a simulated stack; the call ends at
// the RET that pops that return address. Loads and stores go to real
// memory, as an offset from the pointer argument nearest at or below the
// address (so a function reads and writes the Go memory it was given);
// RIP-relative loads read the executable's ELF sections.
//
// Floating point is modeled exactly as the CPU does it with MXCSR at its
// default (round to nearest even, no DAZ or FTZ, exceptions masked): Go's
// float32 and float64 arithmetic is IEEE round-to-nearest-even, the fused
// multiply-adds round once, and NaNs propagate by the SDM's rules.
package x86sim

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"unsafe"
)

// ErrNoObjdump is returned by Open when GNU objdump is not on PATH.
var ErrNoObjdump = errors.New("x86sim: GNU objdump not found on PATH (Debian package binutils)")

// ErrUnsupported is wrapped by the error of an instruction or operand form
// the interpreter does not model.
var ErrUnsupported = errors.New("instruction not modeled")

// Image is an executable whose functions can be run.
type Image struct {
	path     string
	objdump  string
	secs     []section
	lo, hi   uint64            // the sections' address range
	syms     map[string][]span // by name; from the ELF symbols, or Go's pclntab if stripped
	fromPCLN bool
}

// span is a function's address range [lo, hi).
type span struct{ lo, hi uint64 }

// section is the bytes of an allocated ELF section, for RIP-relative loads.
type section struct {
	name     string
	addr     uint64
	data     []byte
	writable bool
}

// Self is Open of the running executable (a test binary that runs its own
// assembly under the simulator), done once per process: every call returns
// the same Image, or the same error.
func Self() (*Image, error) {
	self.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			self.err = err
			return
		}
		self.img, self.err = Open(exe)
	})
	return self.img, self.err
}

var self struct {
	once sync.Once
	img  *Image
	err  error
}

// Open reads the executable at path: its symbols and the bytes of its
// allocated sections. It refuses a position-independent executable (its
// run-time addresses would differ from the file's).
func Open(path string) (*Image, error) {
	od, err := exec.LookPath("objdump")
	if err != nil {
		return nil, ErrNoObjdump
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("x86sim: %w", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("x86sim: %s: machine %v, want x86-64", path, f.Machine)
	}
	if f.Type != elf.ET_EXEC {
		return nil, fmt.Errorf("x86sim: %s: ELF type %v: only a non-PIE executable (ET_EXEC) has its run-time addresses in the file", path, f.Type)
	}
	img := &Image{path: path, objdump: od}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("x86sim: %s: section %s: %w", path, s.Name, err)
		}
		img.secs = append(img.secs, section{s.Name, s.Addr, b, s.Flags&elf.SHF_WRITE != 0})
		if len(img.secs) == 1 || s.Addr < img.lo {
			img.lo = s.Addr
		}
		img.hi = max(img.hi, s.Addr+uint64(len(b)))
	}
	img.syms = map[string][]span{}
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if t := elf.ST_TYPE(s.Info); (t == elf.STT_FUNC || t == elf.STT_NOTYPE) && s.Size > 0 {
				img.syms[s.Name] = append(img.syms[s.Name], span{s.Value, s.Value + s.Size})
			}
		}
	}
	if len(img.syms) == 0 {
		// A stripped binary (go test strips its test binaries): Go's own
		// function table, which names an assembly function and its ABI
		// wrapper alike, without the ".abi0"; Func tells them apart.
		pcln, text := f.Section(".gopclntab"), f.Section(".text")
		if pcln == nil || text == nil {
			return nil, fmt.Errorf("x86sim: %s: no symbols and no .gopclntab", path)
		}
		b, err := pcln.Data()
		if err != nil {
			return nil, fmt.Errorf("x86sim: %s: .gopclntab: %w", path, err)
		}
		tab, err := gosym.NewTable(nil, gosym.NewLineTable(b, text.Addr))
		if err != nil {
			return nil, fmt.Errorf("x86sim: %s: .gopclntab: %w", path, err)
		}
		for _, fn := range tab.Funcs {
			img.syms[fn.Name] = append(img.syms[fn.Name], span{fn.Entry, fn.End})
		}
		img.fromPCLN = true
	}
	return img, nil
}

// Has reports whether the image has a function named sym.
func (img *Image) Has(sym string) bool {
	if img.fromPCLN {
		sym = strings.TrimSuffix(sym, ".abi0")
	}
	return len(img.syms[sym]) > 0
}

// Func disassembles the function named sym (for an assembly function of
// package p, "p.name.abi0") with objdump.
func (img *Image) Func(sym string) (*Func, error) {
	if !img.fromPCLN {
		sp := img.syms[sym]
		if len(sp) != 1 {
			return nil, fmt.Errorf("x86sim: %s: %d functions named %q", img.path, len(sp), sym)
		}
		return img.disassemble(sym, sp[0])
	}
	// From the pclntab: an assembly function "name.abi0" and its ABI
	// wrapper "name" share the name "name"; the wrapper is the one that
	// calls the other.
	abi0 := strings.HasSuffix(sym, ".abi0")
	name := strings.TrimSuffix(sym, ".abi0")
	sp := img.syms[name]
	switch len(sp) {
	case 0:
		return nil, fmt.Errorf("x86sim: %s: no function %q", img.path, sym)
	case 1:
		return img.disassemble(sym, sp[0])
	case 2:
		fs := [2]*Func{}
		for i := range sp {
			f, err := img.disassemble(sym, sp[i])
			if err != nil {
				return nil, err
			}
			fs[i] = f
		}
		for i := range fs {
			if fs[i].calls(sp[1-i].lo) && !fs[1-i].calls(sp[i].lo) {
				// fs[i] is the wrapper
				if abi0 {
					return fs[1-i], nil
				}
				return fs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("x86sim: %s: cannot tell which of %d functions named %q is %s", img.path, len(sp), name, sym)
}

// calls reports whether f has a CALL to address a.
func (f *Func) calls(a uint64) bool {
	for _, in := range f.insts {
		if strings.HasPrefix(in.text, "call") && len(in.args) == 0 {
			t := strings.Fields(strings.TrimPrefix(in.text, "call"))
			if len(t) > 0 && strings.TrimPrefix(t[0], "0x") == fmt.Sprintf("%x", a) {
				return true
			}
		}
	}
	return false
}

func (img *Image) disassemble(sym string, s span) (*Func, error) {
	cmd := exec.Command(img.objdump, "-d", "-M", "intel", "--no-show-raw-insn", "-w",
		fmt.Sprintf("--start-address=%#x", s.lo), fmt.Sprintf("--stop-address=%#x", s.hi), img.path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("x86sim: objdump %s: %w: %s", sym, err, strings.TrimSpace(stderr.String()))
	}
	fn, err := parseFunc(sym, string(out))
	if err != nil {
		return nil, err
	}
	if fn.insts[0].addr != s.lo {
		return nil, fmt.Errorf("x86sim: %s: disassembly starts at %#x, the function at %#x", sym, fn.insts[0].addr, s.lo)
	}
	fn.img = img
	return fn, nil
}

// section returns the allocated section of the image holding address a,
// or nil.
func (img *Image) section(a uint64) *section {
	if img == nil || a < img.lo || a >= img.hi {
		return nil
	}
	for i := range img.secs {
		if img.secs[i].contains(a) {
			return &img.secs[i]
		}
	}
	return nil
}

func (s *section) contains(a uint64) bool { return a >= s.addr && a-s.addr < uint64(len(s.data)) }

// read returns the n bytes at a, which must be in a read-only section:
// the file's bytes of a writable one need not be the running program's.
func (s *section) read(a uint64, n int) ([]byte, error) {
	if s.writable {
		return nil, fmt.Errorf("load from %#x in the writable section %s: its bytes in the file need not be the program's", a, s.name)
	}
	o := a - s.addr
	if uint64(len(s.data))-o < uint64(n) {
		return nil, fmt.Errorf("load of %d bytes at %#x past the end of section %s", n, a, s.name)
	}
	return s.data[o : o+uint64(n)], nil
}

// Func is one disassembled function.
type Func struct {
	name  string
	img   *Image
	insts []inst
	index map[uint64]int // instruction address -> index in insts

	// StepLimit bounds the instructions one Call executes (DefaultStepLimit
	// if 0).
	StepLimit int
}

// DefaultStepLimit is the step limit of a Func whose StepLimit is 0.
const DefaultStepLimit = 200_000_000

// Arg is an argument of Call: Ptr or Int.
type Arg struct {
	p unsafe.Pointer
	v uint64
}

// Ptr is a pointer argument. The function's loads and stores reach Go
// memory through the pointer arguments: an address is read or written as
// an offset from the nearest pointer argument at or below it.
func Ptr(p unsafe.Pointer) Arg { return Arg{p: p, v: uint64(uintptr(p))} }

// Int is an integer argument (one 8-byte stack slot).
func Int(v int) Arg { return Arg{v: uint64(v)} }

// Uint64 is an argument given by its 8 bytes.
func Uint64(v uint64) Arg { return Arg{v: v} }

// Call runs the function with the given arguments, each in one 8-byte slot,
// until it returns. The error names the instruction (address and text) of
// an unmodeled instruction, a misaligned aligned access, a memory access no
// argument reaches, or the step limit.
func (f *Func) Call(args ...Arg) error {
	m := newMachine(f, args)
	return m.run()
}
