package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

func newTxnCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "txn",
		Short: "Inspect NPU instruction (TXN) streams: disassemble one, or write the one a tensor's dispatch uses",
		Long: `The NPU firmware executes each run's instruction buffer as a TXN stream: a header,
then register writes, shim DMA buffer descriptors, address patches for the buffer
arguments, queue pushes and sync waits. These commands read and write such streams
as raw little-endian 32-bit words (what mlir-aie writes as insts.bin).`,
		Example: `  xdnapack txn decode insts.bin
  xdnapack txn decode insts.bin --json
  xdnapack txn plan model.xdna --tensor blk.0.ffn_gate_up.weight -o gate_up.bin`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.AddCommand(newTxnDecodeCmd(), newTxnPlanCmd())
	return cmd
}

func newTxnDecodeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "decode FILE [--json]",
		Short: "Disassemble a TXN stream: one op per line with its fields (shim BDs field by field)",
		Long: `decode reads FILE as little-endian 32-bit words and prints the stream's header and
one op per line: column, row, register and value; a shim buffer descriptor written by
a blockwrite is shown field by field, a task-queue write as its BD, repeat and token.
A malformed stream is an error naming the op and its byte offset.`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTxnDecode(cmd.OutOrStdout(), args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"device", "header", "ops": [...]} as JSON`)
	return cmd
}

// maxTxnFile bounds the file decode reads: a 64 MiB instruction heap.
const maxTxnFile = 64 << 20

func runTxnDecode(w io.Writer, path string, asJSON bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() > maxTxnFile {
		return fmt.Errorf("%s: %d bytes, larger than the %d-byte instruction heap", path, st.Size(), maxTxnFile)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	s, err := txn.Decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if asJSON {
		return txn.JSON(w, s)
	}
	return txn.Disasm(w, s)
}

type txnPlanOptions struct {
	tensor, output string
	tokens         int
}

func newTxnPlanCmd() *cobra.Command {
	o := &txnPlanOptions{}
	cmd := &cobra.Command{
		Use:   "plan MODEL.xdna --tensor NAME [--tokens N] -o FILE",
		Short: "Write the TXN stream of a tensor's first dispatch, as the runtime submits it",
		Long: `plan writes the instruction stream that xdnarun submits for the first dispatch of
the named tensor's matmul over N tokens (default 1, a decode step), for the package's
target: shim BDs for each column's weight run, the broadcast activation stream and
each column's outputs, with the buffer addresses left to the address patches, as on
hardware. The stream's parameter header (what travels at the front of the activation
stream) is printed to stderr.`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTxnPlan(cmd.ErrOrStderr(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.tensor, "tensor", "", "tensor name, as `xdnapack inspect` lists it (required)")
	f.IntVar(&o.tokens, "tokens", 1, "tokens of the matmul (1 = a decode step)")
	f.StringVarP(&o.output, "output", "o", "", "file to write the stream to (required)")
	return cmd
}

func runTxnPlan(stderr io.Writer, path string, o *txnPlanOptions) error {
	switch {
	case o.tensor == "":
		return fmt.Errorf("--tensor is required")
	case o.output == "":
		return fmt.Errorf("-o FILE is required")
	case o.tokens < 1 || o.tokens > 1<<20:
		return fmt.Errorf("--tokens %d: want 1..%d", o.tokens, 1<<20)
	}
	f, err := layout.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	m := f.Manifest
	gen, err := txn.GenOf(m.Package.Target)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var e *layout.TensorEntry
	for i := range m.Tensors {
		if m.Tensors[i].Name == o.tensor {
			e = &m.Tensors[i]
		}
	}
	if e == nil {
		return fmt.Errorf("%s: no tensor %q (xdnapack inspect lists them)", path, o.tensor)
	}
	if e.Device != "npu" {
		return fmt.Errorf("%s: tensor %q runs on the CPU (%s): it has no NPU dispatch", path, o.tensor, e.Reason)
	}
	typ, err := planar.ParseType(e.Type)
	if err != nil {
		return fmt.Errorf("%s: tensor %q: %w", path, o.tensor, err)
	}
	if len(e.Shape) != 2 {
		return fmt.Errorf("%s: tensor %q: shape %v is not a matrix", path, o.tensor, e.Shape)
	}
	g := planar.Geometry{Type: typ, N: e.Shape[1], K: e.Shape[0], Columns: m.Package.Columns, KTile: e.KTile}
	if err := g.Check(); err != nil {
		return fmt.Errorf("%s: tensor %q: %w", path, o.tensor, err)
	}
	d, err := design.New(gen.Target(), g.Type, g.KTile)
	if err != nil {
		return fmt.Errorf("%s: tensor %q: %w", path, o.tensor, err)
	}
	w, p, cnt, err := npu.FirstStream(d, g, o.tokens)
	if err != nil {
		return fmt.Errorf("%s: tensor %q: %w", path, o.tensor, err)
	}
	if err := layout.WriteFile(o.output, txn.Bytes(w)); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %s [%d][%d] %s, K-tile %d, %v: first dispatch of %d token(s): %d words (%d ops, %d BDs, %d patches, %d pushes, %d syncs); %d weight bytes\n",
		o.output, o.tensor, g.N, g.K, g.Type, g.KTile, gen, p.Tokens, cnt.Words, cnt.Ops, cnt.BDs, cnt.Patches, cnt.Pushes, cnt.Syncs, cnt.WeightBytes)
	fmt.Fprintf(stderr, "header object (design %s): type %s T %d tiles %d tokens %d, %d row blocks of %d rows, rows per column %v\n",
		d.Name(), p.Type, p.T, p.Tiles, p.Tokens, p.Blocks, d.BlockRows(), p.Cols)
	return nil
}
