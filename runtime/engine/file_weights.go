package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// FileWeights serves a package's tensors from its mapped file, in place:
// matrices as sub-slices of the mapping, f32 vectors without a copy when
// aligned.
type FileWeights struct{ F *layout.File }

func (w FileWeights) Matrix(name string) (*cpu.Matrix, bool, error) {
	_, m, ok, err := w.matrix(name)
	return m, ok, err
}

// matrix is Matrix, with the tensor's manifest entry.
func (w FileWeights) matrix(name string) (*layout.TensorEntry, *cpu.Matrix, bool, error) {
	e, blob, ok := w.F.Tensor(name)
	if !ok {
		return nil, nil, false, nil
	}
	if e.Format == layout.FormatRaw {
		return nil, nil, true, fmt.Errorf("tensor %q: stored raw, not as a matrix", name)
	}
	g, err := e.Geometry(w.F.Manifest.Package.Columns)
	if err != nil {
		return nil, nil, true, fmt.Errorf("tensor %q: %w", name, err)
	}
	return e, &cpu.Matrix{G: g, Blob: blob}, true, nil
}

func (w FileWeights) Vector(name string) ([]float32, bool, error) {
	e, blob, ok := w.F.Tensor(name)
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
