package pack

import (
	"fmt"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/engine"
)

// CheckModel runs the engine's model check (engine.Check: architecture,
// hyperparameters, rope scaling, tensors, tokenizer) on the plan before any
// byte is written, so that xdnapack refuses what xdnarun could not run,
// with the error xdnarun would give.
func CheckModel(g *layout.GGUF, plan *Plan, columns int) error {
	tokens := 0
	if toks, ok := g.Strings("tokenizer.ggml.tokens"); ok {
		tokens = len(toks)
	}
	w := planWeights{entries: map[string]*Entry{}, columns: columns}
	var most int64
	for _, e := range plan.Entries {
		w.entries[e.Name] = e
		most = max(most, e.Size)
	}
	w.zeros = make([]byte, most) // fresh pages: never touched, never resident
	if err := engine.Check(plan.Params, w, tokens); err != nil {
		return fmt.Errorf("%s: %w (xdnarun could not run the package)", g.Path, err)
	}
	return nil
}

// planWeights serves the planned tensors to engine.Check as the run's
// weights would be served from the package (engine.FileWeights): the
// same geometry from the same entry, a blob of zeros of the planned size
// (untouched, so never resident) in place of the packed bytes.
type planWeights struct {
	entries map[string]*Entry
	columns int
	zeros   []byte // [largest entry] the blob of every matrix
}

func (w planWeights) Matrix(name string) (*cpu.Matrix, bool, error) {
	e, ok := w.entries[name]
	if !ok {
		return nil, false, nil
	}
	if e.Format == layout.FormatRaw {
		return nil, true, fmt.Errorf("tensor %q: stored raw, not as a matrix", name)
	}
	g, err := e.Geometry(w.columns)
	if err != nil {
		return nil, true, fmt.Errorf("tensor %q: %w", name, err)
	}
	return &cpu.Matrix{G: g, Blob: w.zeros[:e.Size]}, true, nil
}

func (w planWeights) Vector(name string) ([]float32, bool, error) {
	e, ok := w.entries[name]
	if !ok {
		return nil, false, nil
	}
	if e.Format != layout.FormatRaw || len(e.Shape) != 1 {
		return nil, true, fmt.Errorf("tensor %q: %v %s is not a vector", name, e.Shape, e.Format)
	}
	if e.Type != "F32" && e.Type != "F16" {
		return nil, true, fmt.Errorf("tensor %q: vector of type %s", name, e.Type)
	}
	return make([]float32, e.Shape[0]), true, nil
}
