package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/device"
	"github.com/xdna-go/xdna/runtime/npu/probe"
	"github.com/xdna-go/xdna/runtime/npu/xrt"
)

type doctorOptions struct {
	model    string // a package whose needs are checked too ("" for none)
	catalog  string // the slot catalog whose xclbins are looked for (default: the built-in one)
	resident string // --npu-resident: the pin budget whose memory is checked with the ring's
	json     bool
	host     *probe.Host // the machine (nil: this one); tests pass a fake
	stdout   io.Writer
}

// errDoctor is the doctor's exit status 1: a needed precondition failed.
var errDoctor = errors.New("the NPU path cannot run here: a needed check failed (the fixes are above)")

func newDoctorCmd() *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor [MODEL.xdna] [--json]",
		Short: "Check every precondition of the NPU path, each with its verdict and fix",
		Long: `doctor checks what the NPU path needs, one line each with pass, fail or
unknown and the fix: the NPU on the PCI bus, the amdxdna driver (in-kernel or
out-of-tree, version), the firmware's protocol against the driver's, the device
node and its permissions (group, udev rule), the firmware version, the NPU's
generation and columns (the driver's topology query), the memlock limit against
what the staging ring pins, the xclbins a package needs (with MODEL.xdna, else
the catalog's for this NPU), and XRT in a -tags xrt build. It exits 1 when a
check the NPU path needs fails (xdnarun still runs on the CPU).`,
		Example: `  xdnarun doctor
  xdnarun doctor model.xdna --json`,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.model = args[0]
			}
			o.stdout = cmd.OutOrStdout()
			return runDoctor(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the checks as JSON")
	cmd.Flags().StringVar(&o.resident, "npu-resident", "0", "the pin budget you will run with (0, a size such as 2G, or auto): the memlock check counts it with the ring")
	cmd.Flags().StringVar(&o.catalog, "catalog", "", "kernel slot catalog whose xclbins are looked for (default: the built-in manifest.toml, paths relative to the current directory)")
	return cmd
}

func runDoctor(ctx context.Context, o *doctorOptions) error {
	h := o.host
	if h == nil {
		h = probe.System()
	}
	do := probe.DoctorOptions{
		Pinned:   2 * npu.DefaultRingSize,
		PinnedBy: fmt.Sprintf("the staging ring, 2 x %d MiB", npu.DefaultRingSize>>20),
	}
	budget, _, err := device.ParseResident(cmp.Or(o.resident, "0"), device.ReadLimits())
	if err != nil {
		return err
	}
	if budget > 0 {
		do.Pinned += budget
		do.PinnedBy += fmt.Sprintf(", and the resident budget, %d MiB", budget>>20)
	}
	if withXRT() {
		do.XRT = func() (string, error) {
			d, err := xrt.Open(0)
			if err != nil {
				return "", err
			}
			defer d.Close()
			return "opened " + d.Info().Name, nil
		}
	}
	cat := kernelsel.Default()
	if o.catalog != "" {
		var err error
		if cat, err = kernelsel.Load(o.catalog); err != nil {
			return err
		}
	}
	target := ""
	if o.model != "" {
		f, err := layout.Open(o.model)
		if err != nil {
			return err
		}
		m := f.Manifest
		f.Close()
		target, do.Target = m.Package.Target, m.Package.Target
		do.XCLBins = packageXCLBins(m, cat)
	} else if infos, err := probe.Probe(); err == nil && o.host == nil {
		target = infos[0].Target()
	}
	if o.model == "" && target != "" {
		do.XCLBins = []probe.XCLBinNeed{}
		for i := range cat.Slots {
			if s := &cat.Slots[i]; s.Target == target {
				do.XCLBins = append(do.XCLBins, probe.XCLBinNeed{Slot: s.Name, Path: cat.XCLBINPath(s)})
			}
		}
	}
	checks := probe.Doctor(h, do)
	if o.json {
		if err := json.NewEncoder(o.stdout).Encode(checks); err != nil {
			return outErr(err)
		}
	} else {
		for _, c := range checks {
			line := fmt.Sprintf("%-7s %s: %s", c.Verdict, c.Name, c.Found)
			if c.Fix != "" && c.Verdict != probe.Pass {
				line += " -> fix: " + c.Fix
			}
			if _, err := fmt.Fprintln(o.stdout, line); err != nil {
				return outErr(err)
			}
		}
	}
	if probe.Failed(checks) {
		return errDoctor
	}
	return nil
}

// packageXCLBins lists the slots m's NPU tensors use: embedded in the
// package, or looked for where the catalog says.
func packageXCLBins(m *layout.Manifest, cat *kernelsel.Catalog) []probe.XCLBinNeed {
	embedded := map[string]bool{}
	for _, s := range m.Slots {
		embedded[s.Name] = true
	}
	seen := map[string]bool{}
	need := []probe.XCLBinNeed{}
	for _, t := range m.Tensors {
		if t.Device != "npu" || t.Slot == "" || seen[t.Slot] {
			continue
		}
		seen[t.Slot] = true
		x := probe.XCLBinNeed{Slot: t.Slot, Embedded: embedded[t.Slot]}
		if s := cat.Slot(t.Slot); s != nil {
			x.Path = cat.XCLBINPath(s)
		} else {
			x.Path = "(not in catalog " + cat.Version + ")"
		}
		need = append(need, x)
	}
	return need
}

// withXRT reports whether this binary was built with -tags xrt.
func withXRT() bool { return xrt.Built() }

// driverPath names the driver path --device npu takes in this binary.
func driverPath() string { return device.NPUPath() }
