// Package kernelsel holds the kernel-slot catalog (manifest.toml) and the
// pure function that picks, for one weight matrix, the NPU slot that runs it
// or the CPU, and says why.
package kernelsel

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/xdna-go/xdna/planar"
	aie "github.com/xdna-go/xdna/target"
)

// ErrInvalid is matched (errors.Is) by every semantic catalog error.
var ErrInvalid = errors.New("invalid catalog")

// Catalog is a decoded, validated kernel-slot catalog.
type Catalog struct {
	Version string             `toml:"version"`   // recorded in every .xdna planned with it
	CPUMaxN int                `toml:"cpu_max_n"` // N <= CPUMaxN runs on the CPU
	Targets map[string]*Target `toml:"targets"`
	Slots   []Slot             `toml:"slots"` // in file order

	// Dir is the directory slot xclbin paths are relative to: the catalog
	// file's directory after Load, "" (the working directory) otherwise.
	Dir string `toml:"-"`
}

// Target holds the hardware figures of one NPU generation that the cost
// model uses. The defaults in manifest.toml name their sources.
type Target struct {
	Name                   string  `toml:"-"`
	Columns                int     `toml:"columns"`     // usable AIE columns
	DispatchUS             float64 `toml:"dispatch_us"` // per kernel launch
	ContextSwitchUS        float64 `toml:"context_switch_us"`
	ContextSwitchPerColumn bool    `toml:"context_switch_per_column"` // ContextSwitchUS is per occupied column
	WeightGBps             float64 `toml:"weight_gbps"`               // weight streaming, 1e9 bytes/s
	MaxContexts            int     `toml:"max_contexts"`              // hardware contexts per process
}

// Slot is one compiled kernel: a GEMV for one format and K-tile on one
// target, usable for MinN <= N <= MaxN.
type Slot struct {
	Name    string `toml:"name"`
	Target  string `toml:"target"`
	Format  string `toml:"format"` // ggml type name, such as "Q4_0"
	KTile   int    `toml:"k_tile"` // a multiple of the format's block size
	MinN    int    `toml:"min_n"`
	MaxN    int    `toml:"max_n"`
	Columns int    `toml:"columns"` // optional; Validate sets 0 to the target's columns
	XCLBIN  string `toml:"xclbin"`  // path, relative to the catalog's Dir
	Kernel  string `toml:"kernel"`  // kernel name in the xclbin, such as "MLIR_AIE"

	Type planar.Type `toml:"-"` // Format parsed, set by Validate
}

//go:embed default.toml
var defaultTOML []byte

// Default returns a fresh copy of the default catalog, kernelsel/default.toml,
// which a test keeps byte-identical to the repository's manifest.toml. Its
// xclbin paths are relative to the repository root.
func Default() *Catalog {
	c, err := Parse(defaultTOML, "kernelsel/default.toml")
	if err != nil {
		panic(err) // default.toml is tested; this cannot happen in a built binary
	}
	return c
}

// Load reads and validates the catalog file at path.
func Load(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	c.Dir = filepath.Dir(path)
	return c, nil
}

// posError is a TOML syntax error with its position in front.
type posError struct {
	msg string
	err error
}

func (e *posError) Error() string { return e.msg }
func (e *posError) Unwrap() error { return e.err }

// Parse decodes data, a catalog named name in errors, into typed structs,
// rejects keys the schema does not know, and validates the result. Syntax
// errors carry "name:line:column"; unknown keys are named in full, such as
// "slots.k_tiles".
func Parse(data []byte, name string) (*Catalog, error) {
	var c Catalog
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if pe.LastKey != "" {
				msg = fmt.Sprintf("%s (last key %q)", msg, pe.LastKey)
			}
			return nil, &posError{fmt.Sprintf("%s:%d:%d: %s", name, pe.Position.Line, pe.Position.Col, msg), err}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		s := ""
		if len(keys) > 1 {
			s = "s"
		}
		return nil, fmt.Errorf("%s: %w: unknown key%s %s", name, ErrInvalid, s, strings.Join(keys, ", "))
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

// Validate checks the catalog's meaning: known targets with their hardware
// column counts and positive, finite cost figures; for every slot a unique
// name, a defined target, a format the planar package can pack, a K-tile
// that is a positive multiple of the format's block size,
// 1 <= min_n <= max_n, columns within the target, and an xclbin and kernel
// name. It reports every problem it finds, and fills Target.Name, Slot.Type
// and a zero Slot.Columns.
func (c *Catalog) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	if c.Version == "" {
		bad("version missing")
	}
	if c.CPUMaxN < 0 {
		bad("cpu_max_n %d is negative", c.CPUMaxN)
	}
	if len(c.Targets) == 0 {
		bad("no [targets]")
	}
	names := make([]string, 0, len(c.Targets))
	for name := range c.Targets {
		names = append(names, name)
	}
	sort.Strings(names)
	positive := func(t, key string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			bad("target %s: %s %v is not a positive finite number", t, key, v)
		}
	}
	for _, name := range names {
		t := c.Targets[name]
		if t == nil {
			bad("target %s is empty", name)
			continue
		}
		t.Name = name
		hw, err := aie.ByName(name)
		if err != nil || hw.Name != name {
			bad("unknown target %q (known: %s)", name, knownTargets())
			continue
		}
		if t.Columns != hw.Columns {
			bad("target %s: columns %d, but %s has %d usable columns", name, t.Columns, name, hw.Columns)
		}
		if t.MaxContexts > hw.MaxContexts {
			bad("target %s: max_contexts %d, but the driver allows %d", name, t.MaxContexts, hw.MaxContexts)
		}
		positive(name, "dispatch_us", t.DispatchUS)
		positive(name, "context_switch_us", t.ContextSwitchUS)
		positive(name, "weight_gbps", t.WeightGBps)
		if t.MaxContexts < 1 {
			bad("target %s: max_contexts %d is not positive", name, t.MaxContexts)
		}
	}
	seen := map[string]int{}
	for i := range c.Slots {
		s := &c.Slots[i]
		where := fmt.Sprintf("slot %d %q", i, s.Name)
		if s.Name == "" {
			bad("slot %d: name missing", i)
		} else if j, dup := seen[s.Name]; dup {
			bad("%s: duplicate name (also slot %d)", where, j)
		} else {
			seen[s.Name] = i
		}
		t, ok := c.Targets[s.Target]
		switch {
		case s.Target == "":
			bad("%s: target missing", where)
		case !ok || t == nil:
			bad("%s: target %q is not defined in [targets]", where, s.Target)
		}
		typ, err := planar.ParseType(s.Format)
		var f *planar.Format
		if err == nil {
			f, err = planar.FormatOf(typ)
		}
		if err != nil {
			bad("%s: format %q: %v", where, s.Format, err)
		} else {
			s.Type = typ
			if s.KTile <= 0 || s.KTile%f.Block != 0 {
				bad("%s: k_tile %d is not a positive multiple of the %s block size %d", where, s.KTile, typ, f.Block)
			}
		}
		if s.MinN < 1 || s.MaxN < s.MinN {
			bad("%s: need 1 <= min_n <= max_n, have min_n %d, max_n %d", where, s.MinN, s.MaxN)
		}
		if ok && t != nil {
			if s.Columns == 0 {
				s.Columns = t.Columns
			}
			if s.Columns < 1 || s.Columns > t.Columns {
				bad("%s: columns %d outside [1, %d] of %s", where, s.Columns, t.Columns, s.Target)
			}
		}
		if s.XCLBIN == "" {
			bad("%s: xclbin missing", where)
		}
		if s.Kernel == "" {
			bad("%s: kernel missing", where)
		}
	}
	return errors.Join(errs...)
}

func knownTargets() string { return strings.Join(aie.Names(), ", ") }

// Target returns the target called name.
func (c *Catalog) Target(name string) (*Target, error) {
	t, ok := c.Targets[name]
	if !ok || t == nil {
		names := make([]string, 0, len(c.Targets))
		for n := range c.Targets {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown target %q (catalog %s has %s)", name, c.Version, strings.Join(names, ", "))
	}
	return t, nil
}

// Slot returns the slot called name, or nil.
func (c *Catalog) Slot(name string) *Slot {
	for i := range c.Slots {
		if c.Slots[i].Name == name {
			return &c.Slots[i]
		}
	}
	return nil
}

// XCLBINPath returns the path of s's xclbin: relative paths are taken from
// the catalog's Dir.
func (c *Catalog) XCLBINPath(s *Slot) string {
	if filepath.IsAbs(s.XCLBIN) || c.Dir == "" {
		return filepath.FromSlash(s.XCLBIN)
	}
	return filepath.Join(c.Dir, filepath.FromSlash(s.XCLBIN))
}
