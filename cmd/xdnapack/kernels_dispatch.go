package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/internal/atomicfile"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// dispatchOptions is one test dispatch of a slot.
type dispatchOptions struct {
	kernelsOptions
	slot            string
	rows, k, tokens int
	seed            uint64
}

func newKernelsDispatchCmd() *cobra.Command {
	o := &dispatchOptions{}
	cmd := &cobra.Command{
		Use:   "dispatch --target T --slot NAME -o DIR",
		Short: "Write one test dispatch of a slot: its TXN stream, input buffers and the CPU's outputs",
		Long: `dispatch writes what the host sends the NPU for one dispatch of a random matrix on a
slot's design, as files a runner on the device loads (kernels/README.md, bring-up):

  insts.bin      the TXN stream (little-endian words; the run's instruction buffer)
  bo0.bin        the weights, staged as the design takes them (argument 0)
  bo1.bin        the header object and the activation records (argument 1)
  want.bin       the outputs the design writes to argument 2, computed by the CPU
                 (cpu.MatMat; padding rows 0)
  dispatch.json  the slot, kernel name, opcode, word count, shapes and buffer sizes

The matrix has random codes and scales of 0.01; the activations are normal. Formats whose
blocks start with their f16 scale (Q4_0, Q5_0, Q8_0) only.`,
		Example:       `  xdnapack kernels dispatch --target xdna1 --slot xdna1-q8_0-k128-bringup -o bringup`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stdout = cmd.OutOrStdout()
			return runKernelsDispatch(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.target, "target", "", "NPU generation: xdna1 or xdna2 (required)")
	f.StringVar(&o.slot, "slot", "", "slot name (kernels list shows them; required)")
	f.StringVarP(&o.output, "output", "o", "", "directory to write the files into (required)")
	f.IntVar(&o.rows, "rows", 0, "output rows of the matrix (default: one and a half row blocks of every column)")
	f.IntVar(&o.k, "k", 0, "inputs of the matrix, a multiple of the K-tile (default: three K-tiles)")
	f.IntVar(&o.tokens, "tokens", 1, "activation vectors, 1..16")
	f.Uint64Var(&o.seed, "seed", 1, "random seed")
	f.StringVar(&o.catalog, "catalog", "", "kernel slot catalog (TOML; default: the built-in manifest.toml)")
	return cmd
}

// testDispatch is one dispatch staged as design.Design documents it.
type testDispatch struct {
	words          []uint32
	bo0, bo1, want []byte
	g              planar.Geometry
	h              design.Header
}

func runKernelsDispatch(o *dispatchOptions) error {
	_, ds, err := slotDesigns(o.target, o.catalog)
	if err != nil {
		return err
	}
	var d *design.Design
	for _, x := range ds {
		if x.Name() == o.slot {
			d = x
		}
	}
	switch {
	case o.slot == "":
		return fmt.Errorf("--slot: required (kernels list --target %s names the slots)", o.target)
	case d == nil:
		return fmt.Errorf("--slot %q: %s has no such slot (kernels list --target %s names them)", o.slot, o.target, o.target)
	case o.output == "":
		return fmt.Errorf("-o: required (the directory to write the files into)")
	}
	p, err := stageDispatch(d, o.rows, o.k, o.tokens, o.seed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.output, 0o755); err != nil {
		return err
	}
	meta, _ := json.MarshalIndent(map[string]any{
		"slot": d.Name(), "device": d.Target.Device, "kernel": "MLIR_AIE", "opcode": npu.OpcodeTxn,
		"insts_words": len(p.words), "rows": p.g.N, "k": p.g.K, "tokens": p.h.Tokens, "type": d.Type.String(),
		"bo0_bytes": len(p.bo0), "bo1_bytes": len(p.bo1), "bo2_bytes": len(p.want),
		"out_layout": "per column, per row block, per token: the block's rows as f32",
		"tolerance":  "cosine >= 0.9999 with want.bin (f32 multiplies are emulated on the device)",
	}, "", "  ")
	for name, b := range map[string][]byte{"insts.bin": txn.Bytes(p.words), "bo0.bin": p.bo0, "bo1.bin": p.bo1,
		"want.bin": p.want, "dispatch.json": append(meta, '\n')} {
		if err := atomicfile.Write(filepath.Join(o.output, name), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.stdout, "%s: %s, %d x %d %s, %d token(s), %d row block(s): insts.bin %d words, bo0 %d, bo1 %d, bo2 %d bytes\n",
		o.output, d.Name(), p.g.N, p.g.K, d.Type, p.h.Tokens, p.h.Blocks, len(p.words), len(p.bo0), len(p.bo1), len(p.want))
	return nil
}

// stageDispatch makes a random matrix and activations for design d and
// stages one dispatch of all its K-tiles: the weight runs of every column
// (bo0), the header object and the records (bo1), the stream on the
// design's shim map, and the CPU's outputs in the layout the design writes.
func stageDispatch(d *design.Design, rows, k, tokens int, seed uint64) (*testDispatch, error) {
	switch d.Type {
	case planar.Q4_0, planar.Q5_0, planar.Q8_0:
	default:
		return nil, fmt.Errorf("slot %s: test dispatches are made for Q4_0, Q5_0 and Q8_0 slots, not %s", d.Name(), d.Type)
	}
	if rows == 0 {
		rows = d.Columns * (d.BlockRows() + d.BlockRows()/2)
	}
	if k == 0 {
		k = 3 * d.KTile
	}
	if tokens < 1 || tokens > design.MaxTokens {
		return nil, fmt.Errorf("--tokens %d: want 1..%d", tokens, design.MaxTokens)
	}
	g := planar.Geometry{Type: d.Type, N: rows, K: k, Columns: d.Columns, KTile: d.KTile}
	if err := g.Check(); err != nil {
		return nil, fmt.Errorf("--rows %d --k %d: %w", rows, k, err)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(rows)<<32|uint64(k)))
	src := make([]byte, g.SourceBytes())
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	bb := g.Type.RowBytes(g.Type.BlockSize())
	for o := 0; o < len(src); o += bb {
		binary.LittleEndian.PutUint16(src[o:], planar.F32ToF16(0.01))
	}
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		return nil, err
	}
	x := make([]float32, tokens*g.K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	var colRows []int
	for c := 0; c < g.Columns; c++ {
		_, n := g.GroupRows(c)
		colRows = append(colRows, n)
	}
	p := &testDispatch{g: g, h: d.NewHeader(g.Tiles(), tokens, colRows)}
	rec := d.RecordBytes()
	gv := txn.GEMV{Gen: txn.Gen(d.Target.Gen), Map: d.Shim, Header: txn.Range{Bytes: rec},
		Records: txn.Range{Off: rec, Bytes: rec * g.Tiles() * tokens}, Replays: p.h.Blocks}
	y := make([]float32, tokens*g.N)
	cpu.MatMat(&cpu.Matrix{G: g, Blob: blob}, x, y, tokens, nil)
	for c, n := range colRows {
		first, _ := g.GroupRows(c)
		start, outStart := len(p.bo0), len(p.want)
		p.bo0 = append(p.bo0, make([]byte, g.Tiles()*npu.StagedTileBytes(d, n))...)
		npu.StageChunk(d, g, blob, npu.Chunk{Group0: c, Groups: 1, Tiles: g.Tiles()}, p.bo0[start:])
		for b := 0; b < d.Blocks(n); b++ {
			for t := 0; t < tokens; t++ {
				for i := 0; i < d.BlockRows(); i++ {
					v := float32(0)
					if r := b*d.BlockRows() + i; r < n {
						v = y[t*g.N+first+r]
					}
					p.want = binary.LittleEndian.AppendUint32(p.want, math.Float32bits(v))
				}
			}
		}
		gv.Weights = append(gv.Weights, txn.Range{Off: start, Bytes: len(p.bo0) - start})
		gv.Outs = append(gv.Outs, txn.Range{Off: outStart, Bytes: len(p.want) - outStart})
	}
	p.bo1 = make([]byte, rec*(1+g.Tiles()*tokens))
	npu.PutRecords(d, g, p.h, x, 0, g.Tiles(), tokens, p.bo1)
	w, _, err := gv.Build()
	if err != nil {
		return nil, err
	}
	p.words = w
	return p, nil
}
