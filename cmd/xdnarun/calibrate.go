package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/cache"
	"github.com/xdna-go/xdna/internal/atomicfile"
	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/npu"
)

type calibrateOptions struct {
	selftestOptions
	output string // the calibration file ("": the cache's)
	model  string // a package whose prediction is shown before and after ("": none)
}

func newCalibrateCmd() *cobra.Command {
	o := &calibrateOptions{}
	cmd := &cobra.Command{
		Use:   "calibrate [MODEL.xdna] [--device npu|emu|sim]",
		Short: "Measure the dispatch cost and weight streaming and write them where the cost model reads them",
		Long: `calibrate runs selftest's measurements (every slot is checked first: a
device that computes wrong results is not calibrated) and writes the dispatch
round trip, the weight streaming (all columns, and 1, 2, 4) and the catalog's
context-switch figure to a calibration file, each figure naming its source
(measured here, on which device, or assumed from the catalog):
$XDG_CACHE_HOME/xdna/calibration/TARGET-DEVICE.json. xdnarun bench reads the
file of the device it runs on in place of the catalog's figures. Figures made
on emu or sim time the emulator on this CPU and say so. With MODEL.xdna the
cost model's prediction for it is printed before and after.`,
		Example: `  xdnarun calibrate
  xdnarun calibrate model.xdna --device emu --target xdna2`,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.model = args[0]
			}
			o.stdout, o.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runCalibrate(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write the calibration here (default: the cache's calibration/TARGET-DEVICE.json)")
	addSelftestFlags(cmd, &o.selftestOptions)
	return cmd
}

func runCalibrate(ctx context.Context, o *calibrateOptions) error {
	var m *layout.Manifest
	if o.model != "" {
		f, err := layout.Open(o.model)
		if err != nil {
			return err
		}
		m = f.Manifest
		f.Close()
		if o.target == "" {
			o.target = m.Package.Target
		}
	}
	r, err := runSelftest(ctx, &o.selftestOptions)
	if err != nil {
		return err
	}
	if len(r.Failed) > 0 || r.Dispatch == nil || len(r.Stream) == 0 {
		writeSelftest(&o.selftestOptions, r)
		return fmt.Errorf("calibrate: the device got %d slots wrong (%v): not calibrated", len(r.Failed), r.Failed)
	}
	cat := kernelsel.Default()
	if o.catalog != "" {
		if cat, err = kernelsel.Load(o.catalog); err != nil {
			return err
		}
	}
	tgt, err := cat.Target(r.Target)
	if err != nil {
		return err
	}
	c := npu.Assumed(tgt, cat.Version)
	c.Device, c.Date = r.Device, time.Now().UTC().Format(time.RFC3339)
	c.Machine = fmt.Sprintf("%s; kernel %s; driver %s; firmware %s", r.Machine, r.Kernel, r.Driver, r.Firmware)
	c.DispatchUS = npu.Figure{Value: r.Dispatch.Value, Measured: true, Source: r.Dispatch.Source}
	all := r.Stream[len(r.Stream)-1]
	c.WeightGBps = npu.Figure{Value: all.GBps.Value, Measured: true, Source: all.GBps.Source}
	for _, s := range r.Stream {
		c.Columns = append(c.Columns, npu.ColumnFigure{Columns: s.Columns, GBps: npu.Figure{Value: s.GBps.Value, Measured: true, Source: s.GBps.Source}})
	}
	if err := c.Validate(); err != nil {
		return err
	}
	path := o.output
	if path == "" {
		if path, err = cache.Calibration(r.Target, r.Device); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(o.stdout, "wrote %s\n", path)
	for _, l := range c.Describe() {
		fmt.Fprintf(o.stdout, "  %s\n", l)
	}
	if m != nil {
		before := npu.Predict(m.Tensors, tgt, 0)
		after, err := npu.PredictCalibrated(m.Tensors, tgt, 0, &c)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.stdout, "cost model for %s, before (catalog %s):\n%safter (%s):\n%s", o.model, cat.Version, before.String(), path, after.String())
	}
	return nil
}

// readCalibration returns the calibration calibrate wrote for target on
// device, or nil when there is none.
func readCalibration(target, device string) (*npu.Calibration, string, error) {
	path, err := cache.Calibration(target, device)
	if err != nil {
		return nil, "", nil
	}
	c, err := npu.ReadCalibration(path)
	if os.IsNotExist(err) {
		return nil, path, nil
	}
	return c, path, err
}
