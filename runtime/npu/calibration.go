package npu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
)

// CalibrationVersion is the version of the calibration file written here.
const CalibrationVersion = 1

// Figure is one cost-model input and where it came from: measured on this
// machine (by xdnarun calibrate, on the device named in the file) or
// assumed (the catalog's figure and its reference).
type Figure struct {
	Value    float64 `json:"value"`
	Measured bool    `json:"measured"`
	Source   string  `json:"source"`
}

// ColumnFigure is the weight streaming measured through a number of columns.
type ColumnFigure struct {
	Columns int    `json:"columns"`
	GBps    Figure `json:"gbps"`
}

// Calibration is the file xdnarun calibrate writes under the cache
// directory: the cost model reads its figures in place of the catalog's.
type Calibration struct {
	Version int    `json:"version"` // CalibrationVersion
	Target  string `json:"target"`  // xdna1 or xdna2
	// Device is what made the measured figures: "npu" (an NPU, through the
	// driver path named in Machine), or "emu"/"sim" (the emulator: its
	// figures time Go code on the host CPU, never an NPU).
	Device  string `json:"device"`
	Date    string `json:"date"`    // RFC 3339
	Machine string `json:"machine"` // CPU, kernel, driver, firmware

	DispatchUS      Figure         `json:"dispatch_us"`       // one dispatch's round trip: submit, run, wait
	WeightGBps      Figure         `json:"weight_gbps"`       // weight streaming through all columns, 1e9 bytes/s
	ContextSwitchUS Figure         `json:"context_switch_us"` // as the catalog's (per column where it says so)
	Columns         []ColumnFigure `json:"columns,omitempty"` // streaming at 1, 2, 4, ... columns
}

// Emulated reports whether the figures were measured on an emulator.
func (c *Calibration) Emulated() bool { return c.Device != "npu" }

// Assumed returns a calibration holding the catalog's figures for t, each
// naming the catalog as its source.
func Assumed(t *kernelsel.Target, catalog string) Calibration {
	src := "assumed: catalog " + catalog + " (manifest.toml; its comments give each figure's reference)"
	return Calibration{Version: CalibrationVersion, Target: t.Name,
		DispatchUS:      Figure{Value: t.DispatchUS, Source: src},
		WeightGBps:      Figure{Value: t.WeightGBps, Source: src},
		ContextSwitchUS: Figure{Value: t.ContextSwitchUS, Source: src},
	}
}

// ReadCalibration reads and checks a calibration file (strict: unknown
// fields are errors).
func ReadCalibration(path string) (*Calibration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, err
	}
	c, err := ParseCalibration(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseCalibration decodes and checks a calibration.
func ParseCalibration(b []byte) (*Calibration, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Calibration
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks the version, the target and that every figure is a
// positive finite number with a source.
func (c *Calibration) Validate() error {
	if c.Version != CalibrationVersion {
		return fmt.Errorf("calibration: version %d, this program reads %d", c.Version, CalibrationVersion)
	}
	if c.Target != "xdna1" && c.Target != "xdna2" {
		return fmt.Errorf("calibration: target %q", c.Target)
	}
	check := func(name string, f Figure) error {
		if !(f.Value > 0) || math.IsInf(f.Value, 0) {
			return fmt.Errorf("calibration: %s %v is not a positive finite number", name, f.Value)
		}
		if strings.TrimSpace(f.Source) == "" {
			return fmt.Errorf("calibration: %s names no source", name)
		}
		return nil
	}
	for _, e := range []struct {
		n string
		f Figure
	}{{"dispatch_us", c.DispatchUS}, {"weight_gbps", c.WeightGBps}, {"context_switch_us", c.ContextSwitchUS}} {
		if err := check(e.n, e.f); err != nil {
			return err
		}
	}
	for _, cf := range c.Columns {
		if err := check(fmt.Sprintf("columns %d", cf.Columns), cf.GBps); err != nil {
			return err
		}
	}
	return nil
}

// Apply returns a copy of t with the calibration's figures.
func (c *Calibration) Apply(t *kernelsel.Target) (*kernelsel.Target, error) {
	if c.Target != t.Name {
		return nil, errors.New("calibration: made for " + c.Target + ", the target is " + t.Name)
	}
	u := *t
	u.DispatchUS, u.WeightGBps, u.ContextSwitchUS = c.DispatchUS.Value, c.WeightGBps.Value, c.ContextSwitchUS.Value
	return &u, nil
}

// Describe says each figure and its source, one per line.
func (c *Calibration) Describe() []string {
	on := ""
	if c.Device != "" {
		on = " on " + c.Device
		if c.Emulated() {
			on += " (emulator figures, not an NPU's)"
		}
	}
	f := func(name, unit string, x Figure) string {
		how := "assumed"
		if x.Measured {
			how = "measured" + on
		}
		return fmt.Sprintf("%s %.4g %s: %s [%s]", name, x.Value, unit, how, x.Source)
	}
	return []string{f("dispatch", "us", c.DispatchUS), f("weight streaming", "GB/s", c.WeightGBps), f("context switch", "us", c.ContextSwitchUS)}
}

// PredictCalibrated is Predict with the calibration's figures in place of
// the catalog's; the prediction names each figure's source.
func PredictCalibrated(entries []layout.TensorEntry, t *kernelsel.Target, cpuGBs float64, c *Calibration) (Prediction, error) {
	return PredictCalibratedResident(entries, t, cpuGBs, c, 0)
}

// PredictCalibratedResident is PredictCalibrated with a resident budget
// (PredictResident).
func PredictCalibratedResident(entries []layout.TensorEntry, t *kernelsel.Target, cpuGBs float64, c *Calibration, budget int64) (Prediction, error) {
	u, err := c.Apply(t)
	if err != nil {
		return Prediction{}, err
	}
	p := PredictResident(entries, u, cpuGBs, DefaultRingSize, budget)
	p.Figures = c.Describe()
	if c.DispatchUS.Measured {
		p.Paths = nil // the measured round trip replaces the submit paths' published figures
	}
	return p, nil
}
