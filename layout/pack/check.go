package pack

import (
	"fmt"

	"github.com/xdna-go/xdna/arch"
	"github.com/xdna-go/xdna/layout"
)

// CheckModel runs the model check (arch.Check: architecture,
// hyperparameters, rope scaling, tensors, tokenizer; the check xdnarun's
// engine makes) on the plan before any byte is written, so that xdnapack
// refuses what xdnarun could not run, with the error xdnarun would give.
func CheckModel(g *layout.GGUF, plan *Plan, columns int) error {
	tokens := 0
	if toks, ok := g.Strings("tokenizer.ggml.tokens"); ok {
		tokens = len(toks)
	}
	w := planShapes{entries: map[string]*Entry{}, columns: columns}
	for _, e := range plan.Entries {
		w.entries[e.Name] = e
	}
	if err := arch.Check(plan.Params, w, tokens); err != nil {
		return fmt.Errorf("%s: %w (xdnarun could not run the package)", g.Path, err)
	}
	return nil
}

// planShapes serves the planned tensors' shapes to arch.Check as the run's
// weights would be served from the package (engine.FileWeights): the same
// geometry from the same entry, checked as the engine checks it.
type planShapes struct {
	entries map[string]*Entry
	columns int
}

func (w planShapes) Matrix(name string) (n, k int, ok bool, err error) {
	e, ok := w.entries[name]
	if !ok {
		return 0, 0, false, nil
	}
	if e.Format == layout.FormatRaw {
		return 0, 0, true, fmt.Errorf("tensor %q: stored raw, not as a matrix", name)
	}
	g, err := e.Geometry(w.columns)
	if err != nil {
		return 0, 0, true, fmt.Errorf("tensor %q: %w", name, err)
	}
	if err := g.Check(); err != nil {
		return 0, 0, true, fmt.Errorf("tensor %q: %w", name, err)
	}
	return g.N, g.K, true, nil
}

func (w planShapes) Vector(name string) (n int, ok bool, err error) {
	e, ok := w.entries[name]
	if !ok {
		return 0, false, nil
	}
	if e.Format != layout.FormatRaw || len(e.Shape) != 1 {
		return 0, true, fmt.Errorf("tensor %q: %v %s is not a vector", name, e.Shape, e.Format)
	}
	if e.Type != "F32" && e.Type != "F16" {
		return 0, true, fmt.Errorf("tensor %q: vector of type %s", name, e.Type)
	}
	return e.Shape[0], true, nil
}
