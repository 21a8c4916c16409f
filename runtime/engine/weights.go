package engine

import (
	"fmt"
	"os"

	"github.com/xdna-go/xdna/arch"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
)

// Weights finds packed tensors by GGUF name.
type Weights interface {
	// Matrix returns the packed 2-D tensor name; ok=false if absent.
	Matrix(name string) (m *cpu.Matrix, ok bool, err error)
	// Vector returns a 1-D F32 tensor (norm weights, biases) as float32s.
	Vector(name string) (v []float32, ok bool, err error)
}

// memWeights holds packed matrices and float vectors in memory.
type memWeights struct {
	mats map[string]*cpu.Matrix
	vecs map[string][]float32
}

func (w *memWeights) Matrix(name string) (*cpu.Matrix, bool, error) {
	m, ok := w.mats[name]
	return m, ok, nil
}

func (w *memWeights) Vector(name string) ([]float32, bool, error) {
	v, ok := w.vecs[name]
	return v, ok, nil
}

// WeightsFromGGUF reads every tensor of g from its file and packs it in
// memory: each 2-D tensor (more dimensions are flattened to rows) with
// planar.Pack into the given number of column groups, one K-tile spanning K;
// each 1-D tensor as float32s. With fuse, the parts of each fusion of the
// model's family (arch.Family.Fusions: Q, K and V into blk.N.attn_qkv.weight,
// gate and up into blk.N.ffn_gate_up.weight) are concatenated row-wise
// where they share type and K.
func WeightsFromGGUF(g *layout.GGUF, columns int, fuse bool) (Weights, error) {
	f, err := os.Open(g.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := &memWeights{mats: map[string]*cpu.Matrix{}, vecs: map[string][]float32{}}
	read := func(t *layout.Tensor) ([]byte, error) {
		buf := make([]byte, t.Size)
		if err := g.ReadTensor(f, t, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	packed := map[string]bool{}
	// packRows packs the row-wise concatenation of the tensors named parts
	// as the matrix name.
	packRows := func(name string, parts ...*layout.Tensor) error {
		typ := parts[0].Type
		_, k := parts[0].Rows()
		var n int
		var src []byte
		for _, t := range parts {
			r, _ := t.Rows()
			n += r
			b, err := read(t)
			if err != nil {
				return err
			}
			if src == nil && len(parts) == 1 {
				src = b
			} else {
				src = append(src, b...)
			}
			packed[t.Name] = true
		}
		geo := planar.Geometry{Type: typ, N: n, K: k, Columns: columns, KTile: k}
		if err := geo.Check(); err != nil {
			return fmt.Errorf("pack %s: %w", name, err)
		}
		blob := make([]byte, geo.Size())
		if err := planar.Pack(geo, src, blob); err != nil {
			return fmt.Errorf("pack %s: %w", name, err)
		}
		m := &cpu.Matrix{G: geo, Blob: blob}
		if err := m.Check(); err != nil {
			return fmt.Errorf("pack %s: %w", name, err)
		}
		w.mats[name] = m
		return nil
	}
	var fusions []arch.Fusion
	if name, _ := g.String("general.architecture"); fuse {
		if f, err := arch.Lookup(name); err == nil {
			fusions = f.Fusions()
		}
	}
	for i := 0; len(fusions) > 0; i++ {
		prefix := fmt.Sprintf("blk.%d.", i)
		if _, ok := g.Tensor(prefix + "attn_norm.weight"); !ok {
			break
		}
		for _, fu := range fusions {
			var parts []*layout.Tensor
			for _, pn := range fu.Parts {
				if t, ok := g.Tensor(prefix + pn); ok {
					parts = append(parts, t)
				}
			}
			if len(parts) == len(fu.Parts) && fusable(parts...) {
				if err := packRows(prefix+fu.Name, parts...); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range g.Tensors {
		t := &g.Tensors[i]
		if packed[t.Name] {
			continue
		}
		if len(t.Dims) == 1 {
			b, err := read(t)
			if err != nil {
				return nil, err
			}
			v := make([]float32, t.Dims[0])
			if err := planar.DequantGGUF(t.Type, b, v); err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			w.vecs[t.Name] = v
			continue
		}
		if err := packRows(t.Name, t); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// fusable reports whether matrices can be packed as one: same type, same K,
// two dimensions.
func fusable(ts ...*layout.Tensor) bool {
	for _, t := range ts {
		if len(t.Dims) != 2 || t.Type != ts[0].Type || t.Dims[0] != ts[0].Dims[0] {
			return false
		}
	}
	return true
}
