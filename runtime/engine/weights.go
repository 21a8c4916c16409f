package engine

import (
	"fmt"
	"os"

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

// Names of the fused matrices a packer may write in place of the separate
// ones: rows of Q, then K, then V; rows of gate, then up.
const (
	fusedQKV    = "blk.%d.attn_qkv.weight"
	fusedGateUp = "blk.%d.ffn_gate_up.weight"
)

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
// each 1-D tensor as float32s. With fuse, the Q, K and V matrices of a
// layer are concatenated row-wise into blk.N.attn_qkv.weight, and gate and
// up into blk.N.ffn_gate_up.weight, where the parts share type and K.
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
	if fuse {
		for i := 0; ; i++ {
			q, okq := g.Tensor(fmt.Sprintf("blk.%d.attn_q.weight", i))
			gate, okg := g.Tensor(fmt.Sprintf("blk.%d.ffn_gate.weight", i))
			if !okq && !okg {
				break
			}
			k, okk := g.Tensor(fmt.Sprintf("blk.%d.attn_k.weight", i))
			v, okv := g.Tensor(fmt.Sprintf("blk.%d.attn_v.weight", i))
			if okq && okk && okv && fusable(q, k, v) {
				if err := packRows(fmt.Sprintf(fusedQKV, i), q, k, v); err != nil {
					return nil, err
				}
			}
			up, oku := g.Tensor(fmt.Sprintf("blk.%d.ffn_up.weight", i))
			if okg && oku && fusable(gate, up) {
				if err := packRows(fmt.Sprintf(fusedGateUp, i), gate, up); err != nil {
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
