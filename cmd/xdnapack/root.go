package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/cache"
	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/pack"
	"github.com/xdna-go/xdna/runtime/npu"
)

func newRootCmd() *cobra.Command {
	opts := &packOptions{}
	cmd := &cobra.Command{
		Use:   "xdnapack MODEL.gguf [-o OUT.xdna]",
		Short: "Pack a GGUF model into an .xdna file for AMD Ryzen AI NPUs",
		Long: `xdnapack repacks the quantised weights of a GGUF model exactly (bit for bit,
no re-quantisation) into DMA-ordered planar blobs, picks a compiled NPU kernel
slot for every matrix from the slot catalog (or the CPU, with the reason), fuses
Q/K/V and gate/up matrices, and writes one reproducible .xdna file.`,
		Example: `  xdnapack model.gguf -o model.xdna
  xdnapack model.gguf -o model.xdna --target xdna1 --cpu-max-n 512
  xdnapack verify model.xdna --against model.gguf
  xdnapack inspect model.xdna --json
  xdnapack compress model.xdna`,
		Version:       pack.Version,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.input = args[0]
			opts.stdout, opts.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runPack(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.output, "output", "o", "", "output .xdna file (default: MODEL with the extension .xdna)")
	f.StringVar(&opts.target, "target", "xdna2", "NPU generation: xdna1 (Phoenix, Hawk Point) or xdna2 (Strix, Strix Halo, Krackan)")
	f.StringVar(&opts.catalog, "catalog", "", "kernel slot catalog (TOML; default: the built-in manifest.toml)")
	f.IntVar(&opts.cpuMaxN, "cpu-max-n", 256, "matrices with at most this many output rows run on the CPU")
	f.BoolVar(&opts.noFuse, "no-fuse", false, "do not fuse Q/K/V and gate/up matrices")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress and no plan table")
	f.Float64Var(&opts.hostGBps, "host-gbps", 40, "host memory bandwidth in GB/s assumed by the decode-time prediction (measure yours with xdnarun bench)")
	cmd.SetVersionTemplate("{{.Version}}\n")
	cmd.AddCommand(newVerifyCmd(), newInspectCmd(), newCompressCmd())
	cmd.AddCommand(newTxnCmd())
	cmd.AddCommand(newPushCmd())
	cmd.AddCommand(newKernelsCmd())
	return cmd
}

type packOptions struct {
	input, output, target, catalog string
	cpuMaxN                        int
	hostGBps                       float64
	noFuse, quiet                  bool
	stdout, stderr                 io.Writer
}

func loadCatalog(path string) (*kernelsel.Catalog, error) {
	if path == "" {
		return kernelsel.Default(), nil
	}
	return kernelsel.Load(path)
}

func runPack(ctx context.Context, o *packOptions) error {
	if o.target != "xdna1" && o.target != "xdna2" {
		return fmt.Errorf("--target %q: want xdna1 or xdna2", o.target)
	}
	if !(o.hostGBps > 0 && o.hostGBps <= 10000) { // NaN fails both

		return fmt.Errorf("--host-gbps %g: want a bandwidth in (0, 10000]", o.hostGBps)
	}
	if o.cpuMaxN < 0 {
		return fmt.Errorf("--cpu-max-n %d: must be >= 0", o.cpuMaxN)
	}
	if o.output == "" {
		o.output = strings.TrimSuffix(o.input, filepath.Ext(o.input)) + ".xdna"
	}
	if abs(o.output) == abs(o.input) {
		return fmt.Errorf("-o %s: would overwrite the input", o.output)
	}
	cat, err := loadCatalog(o.catalog)
	if err != nil {
		return err
	}
	opt := &pack.Options{Input: o.input, Output: o.output, Target: o.target, Catalog: cat,
		CPUMaxN: o.cpuMaxN, NoFuse: o.noFuse}
	start := time.Now()
	var bar *cli.Progress
	if !o.quiet {
		bar = cli.NewProgress(o.stderr, "packing")
		opt.Progress = bar.Update
	}
	plan, err := pack.Run(ctx, opt)
	if bar != nil {
		bar.Done()
	}
	if err != nil {
		return err
	}
	st, _ := os.Stat(o.output)
	if !o.quiet {
		printPlan(o.stdout, plan)
		entries := make([]layout.TensorEntry, len(plan.Entries))
		for i, e := range plan.Entries {
			entries[i] = e.TensorEntry
		}
		tgt, _ := cat.Target(o.target)
		pred := npu.Predict(entries, tgt, o.hostGBps)
		// An NPU's calibration (xdnarun calibrate) replaces the catalog's
		// figures; an emulator's does not predict an NPU.
		if path, err := cache.Calibration(o.target, "npu"); err == nil {
			if c, err := npu.ReadCalibration(path); err == nil {
				if p, err := npu.PredictCalibrated(entries, tgt, o.hostGBps, c); err == nil {
					pred = p
				}
			} else if !os.IsNotExist(err) {
				fmt.Fprintf(o.stderr, "xdnapack: %v; predicting with the catalog's figures\n", err)
			}
		}
		fmt.Fprintf(o.stdout, "predicted decode (cost model, host at %g GB/s): %s\n", o.hostGBps, pred.String())
		for _, n := range plan.Notes {
			fmt.Fprintln(o.stderr, "note:", n)
		}
	}
	fmt.Fprintf(o.stderr, "wrote %s (%s, target %s) in %.2fs\n", o.output, cli.Human(st.Size()), o.target, time.Since(start).Seconds())
	return nil
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// kTile shows a K-tile, "-" for none (raw tensors), in the plan and inspect alike.
func kTile(k int) string {
	if k <= 0 {
		return "-"
	}
	return fmt.Sprint(k)
}

func printPlan(w io.Writer, plan *pack.Plan) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENSOR\tSHAPE\tTYPE\tPACKED\tK-TILE\tDEVICE\tSLOT / REASON\tBYTES")
	var npu, cpu int64
	for _, e := range plan.Entries {
		where := e.Reason
		if e.Slot != "" && !strings.HasPrefix(where, e.Slot) {
			where = e.Slot + ": " + where
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%s\t%s\t%d\n", e.Name, e.Shape, e.Type, e.Format, kTile(e.KTile), e.Device, where, e.Size)
		if e.Device == "npu" {
			npu += e.Size
		} else {
			cpu += e.Size
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "%d tensors: %s planned on the NPU, %s on the CPU\n", len(plan.Entries), cli.Human(npu), cli.Human(cpu))
}

func newVerifyCmd() *cobra.Command {
	var against string
	cmd := &cobra.Command{
		Use:   "verify FILE.xdna [--against MODEL.gguf]",
		Short: "Check every checksum; with --against, unpack every tensor and compare it bit for bit",
		Long: `verify checks the header, the manifest and the crc32c of every blob of an .xdna
file (or its .xdna.zst distribution form). With --against it also unpacks every
tensor and compares it byte for byte with the GGUF it came from; it exits 0 only
if every tensor is exact.`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd.OutOrStdout(), args[0], against)
		},
	}
	cmd.Flags().StringVar(&against, "against", "", "GGUF file to compare every unpacked tensor with")
	return cmd
}

func runVerify(w io.Writer, path, against string) error {
	f, err := layout.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	errs := f.Verify()
	for _, e := range errs {
		fmt.Fprintln(w, "FAIL", e)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %d corrupted blob(s)", path, len(errs))
	}
	fmt.Fprintf(w, "%s: header, manifest and %d blob checksums OK\n", path, len(f.Manifest.Tensors)+len(f.Manifest.Slots)+btoi(f.Manifest.Tokenizer.Size > 0))
	if against == "" {
		return nil
	}
	exact, errs := pack.Against(f, against)
	for _, e := range errs {
		fmt.Fprintln(w, "FAIL", e)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %d mismatch(es) against %s", path, len(errs), against)
	}
	fmt.Fprintf(w, "%s: all %d tensors of %s unpack bit for bit\n", path, exact, against)
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func newInspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:           "inspect FILE.xdna [--json]",
		Short:         "Print the manifest of an .xdna file: model, plan, tensors",
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInspect(cmd.OutOrStdout(), args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the manifest as JSON")
	return cmd
}

func runInspect(w io.Writer, path string, asJSON bool) error {
	f, err := layout.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	m := f.Manifest
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	p := m.Model
	fmt.Fprintf(w, "file:      %s\ncreator:   %s\nsource:    %s\n", path, m.Creator, sourceLine(m.Source))
	fmt.Fprintf(w, "target:    %s, %d columns, catalog %s, cpu-max-n %d\n", m.Package.Target, m.Package.Columns, m.Package.CatalogVersion, m.Package.CPUMaxN)
	fmt.Fprintf(w, "model:     %s %q: %d layers, dim %d, ffn %d, heads %d/%d, head dim %d, vocab %d, ctx %d\n",
		p.Arch, p.Name, p.Layers, p.Embedding, p.FeedForward, p.Heads, p.HeadsKV, p.HeadDim, p.VocabSize, p.ContextLength)
	fmt.Fprintf(w, "tokenizer: %d bytes\n", m.Tokenizer.Size)
	for _, s := range m.Slots {
		fmt.Fprintf(w, "slot:      %s kernel %s uuid %s (%d bytes)\n", s.Name, s.Kernel, s.UUID, s.Size)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENSOR\tSHAPE\tTYPE\tPACKED\tK-TILE\tDEVICE\tSLOT\tOFFSET\tBYTES\tCRC32C")
	for _, t := range m.Tensors {
		slot := t.Slot
		if slot == "" {
			slot = "-"
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%08x\n", t.Name, t.Shape, t.Type, t.Format, kTile(t.KTile), t.Device, slot, t.Offset, t.Size, t.CRC32C)
	}
	return tw.Flush()
}

// sourceLine describes the source of a package: its name and its content
// digest as it is written (scheme:hex), or the SHA-256 digest of a package
// written before it, named as such.
func sourceLine(s layout.Source) string {
	switch {
	case s.ContentDigest != "":
		return fmt.Sprintf("%s (content %s)", s.Name, s.ContentDigest)
	case s.ContentSHA256 != "":
		return fmt.Sprintf("%s (content sha256 %s, the digest of packs before %s)", s.Name, s.ContentSHA256, layout.ContentScheme)
	}
	return s.Name + " (no content digest)"
}

func newCompressCmd() *cobra.Command {
	var output string
	var level int
	cmd := &cobra.Command{
		Use:           "compress FILE.xdna [-o FILE.xdna.zst]",
		Short:         "Write the zstd distribution form of an .xdna file",
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				output = args[0] + ".zst"
			}
			lv, err := zstdLevel(level)
			if err != nil {
				return err
			}
			start := time.Now()
			if err := layout.Compress(cmd.Context(), args[0], output, lv); err != nil {
				return err
			}
			a, _ := os.Stat(args[0])
			b, _ := os.Stat(output)
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %s -> %s (%.1f%%) in %.2fs\n", output, cli.Human(a.Size()), cli.Human(b.Size()),
				100*float64(b.Size())/float64(max(a.Size(), 1)), time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output file (default: FILE.xdna.zst)")
	cmd.Flags().IntVar(&level, "level", 2, "zstd level: 1 fastest, 2 default, 3 better, 4 best")
	return cmd
}

var errLevel = errors.New("--level: want 1, 2, 3 or 4")
