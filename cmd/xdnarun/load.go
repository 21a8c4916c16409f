package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// loaded is an opened package: file, tokenizer and model.
type loaded struct {
	file  *layout.File
	tok   *tokenizer.Tokenizer
	model *engine.Model
	ctx   int
}

type loadOptions struct {
	threads int
	ctx     int // 0: the model's training context, capped at 4096
	device  string
}

func load(path string, o loadOptions) (*loaded, error) {
	switch o.device {
	case "auto", "cpu":
	default:
		return nil, fmt.Errorf("--device %q: want auto or cpu (this build has no NPU backend)", o.device)
	}
	if o.threads < 1 || o.threads > 1024 {
		return nil, fmt.Errorf("-t %d: want 1..1024 threads", o.threads)
	}
	if o.ctx < 0 {
		return nil, fmt.Errorf("-c %d: must be >= 0", o.ctx)
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
	if m.Tokenizer.Size == 0 {
		return fail(fmt.Errorf("%s: the package holds no tokenizer", path))
	}
	var v tokenizer.Vocab
	if err := v.UnmarshalBinary(f.Bytes(m.Tokenizer)); err != nil {
		return fail(fmt.Errorf("%s: tokenizer: %w", path, err))
	}
	if l.tok, err = tokenizer.New(&v); err != nil {
		return fail(fmt.Errorf("%s: tokenizer: %w", path, err))
	}
	l.ctx = o.ctx
	if l.ctx == 0 {
		l.ctx = min(m.Model.ContextLength, 4096)
		if l.ctx <= 0 {
			l.ctx = 4096
		}
	}
	model, err := engine.New(m.Model, fileWeights{f}, engine.Options{Threads: o.threads, Context: l.ctx, Cache: engine.CacheF16})
	if err != nil {
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	l.model = model
	return l, nil
}

func (l *loaded) Close() { l.file.Close() }

// fileWeights serves tensors from the mapped file, in place.
type fileWeights struct{ f *layout.File }

func (w fileWeights) Matrix(name string) (*cpu.Matrix, bool, error) {
	e, blob, ok := w.f.Tensor(name)
	if !ok {
		return nil, false, nil
	}
	if e.Format == layout.FormatRaw {
		return nil, true, fmt.Errorf("tensor %q: stored raw, not as a matrix", name)
	}
	g, err := e.Geometry(w.f.Manifest.Package.Columns)
	if err != nil {
		return nil, true, fmt.Errorf("tensor %q: %w", name, err)
	}
	return &cpu.Matrix{G: g, Blob: blob}, true, nil
}

func (w fileWeights) Vector(name string) ([]float32, bool, error) {
	e, blob, ok := w.f.Tensor(name)
	if !ok {
		return nil, false, nil
	}
	if e.Format != layout.FormatRaw || len(e.Shape) != 1 {
		return nil, true, fmt.Errorf("tensor %q: %v %s is not a vector", name, e.Shape, e.Format)
	}
	n := e.Shape[0]
	switch e.Type {
	case "F32":
		if uintptr(unsafe.Pointer(unsafe.SliceData(blob)))%4 == 0 {
			return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(blob))), n), true, nil
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:]))
		}
		return v, true, nil
	case "F16":
		v := make([]float32, n)
		for i := range v {
			v[i] = planar.F16ToF32(binary.LittleEndian.Uint16(blob[2*i:]))
		}
		return v, true, nil
	}
	return nil, true, fmt.Errorf("tensor %q: vector of type %s", name, e.Type)
}
