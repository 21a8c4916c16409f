package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/internal/atomicfile"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/target"
)

func newKernelsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kernels",
		Short: "Write the toolchain's input for the NPU kernel slots: each slot's physical design as mlir-aie MLIR",
		Long: `Each NPU kernel slot (a GEMV for one weight format and K-tile on one target) has one
physical design in Go (runtime/npu/design): tiles, buffers at their addresses, locks,
DMA channels with their BD chains, stream routes, the shim channels the host drives and
each core's program. The emulator runs it and the host's streams follow it; these
commands write it for the toolchain (kernels/build.sh, kernels/README.md).`,
		Example: `  xdnapack kernels list --target xdna1
  xdnapack kernels mlir --target xdna1 --slot xdna1-q8_0-k128-bringup -o aie.mlir
  xdnapack kernels mlir --target xdna2 --slot all -o build/mlir`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.AddCommand(newKernelsListCmd(), newKernelsMLIRCmd(), newKernelsDispatchCmd())
	return cmd
}

// kernelsOptions selects slots of a target.
type kernelsOptions struct {
	target, catalog string
	slots           []string
	output, object  string
	stdout          io.Writer
}

func newKernelsListCmd() *cobra.Command {
	o := &kernelsOptions{}
	cmd := &cobra.Command{
		Use:   "list --target T",
		Short: "List the target's slots (the catalog's and the bring-up slot): name, format, K-tile, rows a piece, cores",
		Long: `list prints one line per slot of the target, tab-separated: the slot name, the target,
the weight format, the K-tile, the rows of one weight piece (one core's share of a row
block), the columns and the cores per column the design uses. The catalog's slots come
first, then the bring-up slot (one column, one core, Q8_0, K-tile 128), which is not in
the catalog. kernels/build.sh reads this list.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stdout = cmd.OutOrStdout()
			return runKernelsList(o)
		},
	}
	cmd.Flags().StringVar(&o.target, "target", "", "NPU generation: xdna1 or xdna2 (required)")
	cmd.Flags().StringVar(&o.catalog, "catalog", "", "kernel slot catalog (TOML; default: the built-in manifest.toml)")
	return cmd
}

func newKernelsMLIRCmd() *cobra.Command {
	o := &kernelsOptions{}
	cmd := &cobra.Command{
		Use:   "mlir --target T --slot NAME[,NAME...] [-o FILE|DIR]",
		Short: "Write slots' physical designs in mlir-aie's physical dialect, for aiecc",
		Long: `mlir writes the physical design of each named slot in mlir-aie's physical dialect
(aie.device, aie.tile, aie.buffer, aie.lock, aie.flow, aie.shim_dma_allocation,
aie.memtile_dma and aie.mem with their BD chains, aie.core with the program calling the
kernel functions), so that aiecc compiles it without the objectFifo lowering. The
spelling is that of the mlir-aie release kernels/README.md pins.

--slot takes slot names (kernels list shows them), several separated by commas or given
as repeated flags, or "all" for every slot of the target. With one slot -o names the
file ("-" or no -o: standard output); with several, -o names a directory that receives
one SLOT.mlir per slot. Every core links --object, the slot's kernel object compiled by
Peano (kernels/build.sh names it gemv.o in the slot's build directory).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stdout = cmd.OutOrStdout()
			return runKernelsMLIR(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.target, "target", "", "NPU generation: xdna1 or xdna2 (required)")
	f.StringSliceVar(&o.slots, "slot", nil, `slot names, comma-separated or repeated, or "all" (required)`)
	f.StringVarP(&o.output, "output", "o", "", "output file (one slot; default standard output) or directory (several slots)")
	f.StringVar(&o.object, "object", "gemv.o", "kernel object file every core links (link_with)")
	f.StringVar(&o.catalog, "catalog", "", "kernel slot catalog (TOML; default: the built-in manifest.toml)")
	return cmd
}

// slotDesigns returns the designs of the target's slots: the catalog's in
// its order, then the bring-up slot.
func slotDesigns(targetName, catalog string) (*target.Target, []*design.Design, error) {
	if targetName == "" {
		return nil, nil, fmt.Errorf("--target: required (%s)", strings.Join(target.Names(), " or "))
	}
	tg, err := target.ByName(targetName)
	if err != nil {
		return nil, nil, fmt.Errorf("--target: %w", err)
	}
	cat, err := loadCatalog(catalog)
	if err != nil {
		return nil, nil, err
	}
	var ds []*design.Design
	for _, s := range cat.Slots {
		if s.Target != tg.Name {
			continue
		}
		d, err := design.New(tg, s.Type, s.KTile)
		if err != nil {
			return nil, nil, fmt.Errorf("slot %s: %w", s.Name, err)
		}
		if d.Name() != s.Name {
			return nil, nil, fmt.Errorf("slot %s: its design is named %s", s.Name, d.Name())
		}
		ds = append(ds, d)
	}
	b, err := design.NewBringUp(tg)
	if err != nil {
		return nil, nil, err
	}
	return tg, append(ds, b), nil
}

func runKernelsList(o *kernelsOptions) error {
	_, ds, err := slotDesigns(o.target, o.catalog)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintln(&b, "#slot\ttarget\tformat\tk_tile\trows\tcolumns\tcores")
	for _, d := range ds {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%d\t%d\t%d\t%d\n", d.Name(), d.Target.Name, d.Type, d.KTile, d.Rows, d.Columns, d.Cores())
	}
	_, err = o.stdout.Write(b.Bytes())
	return err
}

func runKernelsMLIR(ctx context.Context, o *kernelsOptions) error {
	tg, ds, err := slotDesigns(o.target, o.catalog)
	if err != nil {
		return err
	}
	if len(o.slots) == 0 {
		return fmt.Errorf(`--slot: required (a slot name of %s, several separated by commas, or "all")`, tg.Name)
	}
	if o.object == "" {
		return fmt.Errorf("--object: the kernel object file name must not be empty")
	}
	byName := map[string]*design.Design{}
	var names []string
	for _, d := range ds {
		byName[d.Name()] = d
		names = append(names, d.Name())
	}
	var sel []*design.Design
	seen := map[string]bool{}
	for _, s := range o.slots {
		s = strings.TrimSpace(s)
		switch {
		case s == "all":
			sel = ds
			seen = map[string]bool{}
			for _, d := range ds {
				seen[d.Name()] = true
			}
			continue
		case seen[s]:
			continue
		case byName[s] == nil:
			if other := otherTarget(s, tg); other != "" {
				return fmt.Errorf("--slot %q: a slot of %s, not of --target %s", s, other, tg.Name)
			}
			sort.Strings(names)
			return fmt.Errorf("--slot %q: %s has no such slot (it has %s)", s, tg.Name, strings.Join(names, ", "))
		}
		seen[s] = true
		sel = append(sel, byName[s])
	}
	if len(sel) == 1 {
		var b bytes.Buffer
		if err := sel[0].MLIR(&b, design.MLIROptions{Object: o.object}); err != nil {
			return err
		}
		if o.output == "" || o.output == "-" {
			_, err := o.stdout.Write(b.Bytes())
			return err
		}
		return atomicfile.Write(o.output, b.Bytes(), 0o644)
	}
	if o.output == "" || o.output == "-" {
		return fmt.Errorf("-o: %d slots need a directory to write one SLOT.mlir each into", len(sel))
	}
	if st, err := os.Stat(o.output); err == nil && !st.IsDir() {
		return fmt.Errorf("-o %s: %d slots need a directory, this is a file", o.output, len(sel))
	}
	if err := os.MkdirAll(o.output, 0o755); err != nil {
		return err
	}
	for _, d := range sel {
		if err := ctx.Err(); err != nil {
			return err
		}
		var b bytes.Buffer
		if err := d.MLIR(&b, design.MLIROptions{Object: o.object}); err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(o.output, d.Name()+".mlir"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// otherTarget names the target whose slot s is, if not t.
func otherTarget(s string, t *target.Target) string {
	for _, o := range target.All {
		if o != t && strings.HasPrefix(s, o.Name+"-") {
			return o.Name
		}
	}
	return ""
}
