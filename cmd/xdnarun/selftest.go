package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/device"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/probe"
	"github.com/xdna-go/xdna/runtime/npu/selftest"
	"github.com/xdna-go/xdna/runtime/npu/sim"
)

// probeNPU finds the NPU for selftest's report and --device npu; tests
// point it at the fake driver.
var probeNPU = probe.Probe

type selftestOptions struct {
	device   string // npu, emu or sim
	target   string // xdna1 or xdna2 ("": the NPU's)
	catalog  string
	json     bool
	emuFault string // SLOT:KIND: a fault on the first dispatch of SLOT (emu and sim)
	rounds   int
	stream   int // bytes of the streaming test's matrix
	stdout   io.Writer
	stderr   io.Writer
}

func addSelftestFlags(cmd *cobra.Command, o *selftestOptions) {
	f := cmd.Flags()
	f.StringVar(&o.device, "device", "npu", "the device: npu, emu (the emulator, Go kernel model) or sim (the emulator with the AIE kernel sources compiled for this CPU; a -tags sim build)")
	f.StringVar(&o.target, "target", "", "xdna1 or xdna2 (default: the NPU's)")
	f.StringVar(&o.catalog, "catalog", "", "kernel slot catalog (default: the built-in manifest.toml; on npu the xclbins are read from its paths)")
	f.IntVar(&o.rounds, "rounds", 5, "timings taken per figure (the median is reported)")
	f.IntVar(&o.stream, "stream-bytes", 8<<20, "size of the streaming test's matrix")
	f.StringVar(&o.emuFault, "emu-fault", "", "inject a fault into one slot on the emulator: SLOT:KIND (timeout, error, txn-opcode, txn-gen, txn-bd, txn-length, txn-patch)")
	f.MarkHidden("emu-fault")
}

func newSelftestCmd() *cobra.Command {
	o := &selftestOptions{}
	cmd := &cobra.Command{
		Use:   "selftest [--device npu|emu|sim] [--json]",
		Short: "Check every kernel slot on the device against the CPU, time a dispatch and the weight streaming",
		Long: `selftest runs, for every slot of the catalog for the target, synthetic matrices
of several shapes (odd N, staged in chunks one of which is short, K of one
K-tile with a batch) through the NPU path on the device and through the CPU, and
compares them: bit for bit on emu and sim (the design promises it), within the
named tolerance where the host adds partial sums of K-chunks or on an NPU (bf16
products). Then it times the dispatch round trip and the weight streaming through
1, 2, 4 and all columns. On emu and sim these are the emulator's figures (Go
code on this CPU), said so on every line, never an NPU's. The report (machine,
kernel, driver, firmware, results) is meant to be attached to an issue. It exits
1 when a slot is wrong.`,
		Example: `  xdnarun selftest > selftest.txt
  xdnarun selftest --device emu --target xdna2 --json`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stdout, o.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			r, err := runSelftest(cmd.Context(), o)
			if r != nil {
				if werr := writeSelftest(o, r); werr != nil {
					return werr
				}
			}
			if err == nil && len(r.Failed) > 0 {
				err = fmt.Errorf("selftest: %d of %d slots wrong: %s", len(r.Failed), len(r.Slots), strings.Join(r.Failed, ", "))
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the report as JSON")
	addSelftestFlags(cmd, o)
	return cmd
}

// selftestReport is the report with what it ran on.
type selftestReport struct {
	Machine  string `json:"machine"`
	Kernel   string `json:"kernel"`
	Driver   string `json:"driver"`
	Firmware string `json:"firmware"`
	Path     string `json:"path"` // the driver path --device npu takes
	*selftest.Report
}

func runSelftest(ctx context.Context, o *selftestOptions) (*selftestReport, error) {
	cat := kernelsel.Default()
	if o.catalog != "" {
		var err error
		if cat, err = kernelsel.Load(o.catalog); err != nil {
			return nil, err
		}
	}
	rep := &selftestReport{Machine: machine(), Kernel: probe.System().Release, Driver: "none", Firmware: "none", Path: driverPath()}
	infos, perr := probeNPU()
	if perr == nil {
		in := &infos[0]
		v, f := in.DriverVersion, in.Firmware
		rep.Driver = fmt.Sprintf("%s %d.%d.%d (%s, %d columns)", in.Driver, v[0], v[1], v[2], cmpOr(in.Generation(), "unknown npu"), in.Columns())
		rep.Firmware = fmt.Sprintf("%d.%d.%d.%d", f.Major, f.Minor, f.Patch, f.Build)
		if in.DriverDesc != "" {
			rep.Driver += fmt.Sprintf(", %q", in.DriverDesc)
		}
	} else {
		rep.Driver = "none: " + perr.Error()
	}
	target := o.target
	if target == "" {
		if perr != nil {
			return nil, fmt.Errorf("--target: no NPU here to take it from; give --target xdna1 or xdna2")
		}
		target = infos[0].Target()
	}
	so := selftest.Options{Target: target, Catalog: cat, Device: o.device, Rounds: o.rounds, StreamBytes: o.stream,
		Progress: func(format string, args ...any) { fmt.Fprintf(o.stderr, "selftest: "+format+"\n", args...) }}
	switch o.device {
	case "emu", "sim":
		cfg, err := emu.ForTarget(target)
		if err != nil {
			return nil, err
		}
		if o.device == "sim" {
			if err := sim.Available(); err != nil {
				return nil, fmt.Errorf("--device sim: %w", err)
			}
			cfg.Name = "sim-" + target
			cfg.Kernels = sim.Factory(target)
		}
		so.Compare = selftest.BitExact
		so.Open = func() (npu.Device, error) { return emu.New(cfg), nil }
		so.XCLBin = func(s *kernelsel.Slot) ([]byte, error) { return emu.XCLBin(s.Type, s.KTile, s.Columns) }
		if o.emuFault != "" {
			slot, kind, ok := strings.Cut(o.emuFault, ":")
			f, known := emu.FaultNames[kind]
			if !ok || !known || cat.Slot(slot) == nil {
				return nil, fmt.Errorf("--emu-fault %q: want SLOT:KIND, SLOT a slot of the catalog, KIND one of timeout, error, txn-opcode, txn-gen, txn-bd, txn-length, txn-patch", o.emuFault)
			}
			so.Prepare = func(name string, dev npu.Device) {
				if name == slot {
					dev.(*emu.Device).InjectFault(1, f)
				}
			}
		}
	case "npu":
		if o.emuFault != "" {
			return nil, errors.New("--emu-fault is for --device emu or sim")
		}
		if perr != nil {
			return nil, fmt.Errorf("--device npu: %w (xdnarun doctor says what is missing)", perr)
		}
		so.Compare = selftest.Cosine
		so.DeviceDesc = infos[0].Path + " through " + rep.Path + ", driver " + rep.Driver
		so.Open = func() (npu.Device, error) { return device.OpenNPU(npuKernel) }
		so.XCLBin = func(s *kernelsel.Slot) ([]byte, error) {
			b, err := readCapped(cat.XCLBINPath(s), 256<<20)
			if err != nil {
				return nil, fmt.Errorf("slot %s: %w (build the kernels: kernels/README.md)", s.Name, err)
			}
			return b, nil
		}
	default:
		return nil, fmt.Errorf("--device %q: want npu, emu or sim", o.device)
	}
	r, err := selftest.Run(so)
	if r == nil {
		return nil, err
	}
	rep.Report = r
	return rep, err
}

func writeSelftest(o *selftestOptions, r *selftestReport) error {
	if o.json {
		if err := json.NewEncoder(o.stdout).Encode(r); err != nil {
			return outErr(err)
		}
		return nil
	}
	var b strings.Builder
	dev := r.Device
	switch r.Device {
	case "emu":
		dev = "emu (the emulated " + r.Target + " NPU, the Go model of the kernels): timings are the emulator's, not an NPU's"
	case "sim":
		dev = "sim (the emulated " + r.Target + " NPU running the AIE kernel sources compiled for this CPU): timings are the emulator's, not an NPU's"
	case "npu":
		dev = "npu through " + r.Path
	}
	fmt.Fprintf(&b, "xdnarun selftest (%s)\nmachine:  %s\nkernel:   %s\ndriver:   %s\nfirmware: %s\ndevice:   %s\ntarget:   %s, catalog %s\n",
		Version, r.Machine, r.Kernel, r.Driver, r.Firmware, dev, r.Target, r.Catalog)
	pass := 0
	for _, s := range r.Slots {
		v := "FAIL"
		if s.Pass {
			v, pass = "pass", pass+1
		}
		fmt.Fprintf(&b, "%s slot %s (%s, K-tile %d)", v, s.Slot, s.Format, s.KTile)
		if s.Error != "" {
			fmt.Fprintf(&b, ": %s", s.Error)
		}
		b.WriteString("\n")
		for _, sh := range s.Shapes {
			v := "FAIL"
			if sh.Pass {
				v = "pass"
			}
			fmt.Fprintf(&b, "  %s N %d K %d, columns %d, tokens %d, chunks %d (%s; %s): %s\n", v, sh.N, sh.K, sh.Columns, sh.Tokens, sh.Chunks, sh.What, sh.Compare, sh.Detail)
		}
	}
	if r.Dispatch != nil {
		fmt.Fprintf(&b, "dispatch round trip: %.1f us [%s]\n", r.Dispatch.Value, r.Dispatch.Source)
	}
	for _, c := range r.Stream {
		fmt.Fprintf(&b, "weight streaming, %d columns: %.3f GB/s [%s]\n", c.Columns, c.GBps.Value, c.GBps.Source)
	}
	fmt.Fprintf(&b, "result: %d of %d slots pass", pass, len(r.Slots))
	if len(r.Failed) > 0 {
		fmt.Fprintf(&b, "; wrong: %s", strings.Join(r.Failed, ", "))
	}
	b.WriteString("\n")
	if _, err := io.WriteString(o.stdout, b.String()); err != nil {
		return outErr(err)
	}
	return nil
}

// machine describes the CPU, for reports.
func machine() string {
	name := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				name = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, %s/%s", name, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
