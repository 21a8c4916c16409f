package kernelsel

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdna-go/xdna/planar"
)

// Choice is where one weight matrix runs, and why.
type Choice struct {
	Slot      *Slot         // nil means the CPU
	KTile     int           // planar K-tile to pack with; 0 if no planar layout exists
	Reason    string        // recorded in the .xdna manifest
	Predicted time.Duration // the chosen slot's predicted time per call; 0 for the CPU
}

// CPU reports whether c sends the matrix to the CPU.
func (c Choice) CPU() bool { return c.Slot == nil }

// Predict returns the time the cost model predicts for dispatches kernel
// launches that stream bytes of weights and switch hardware contexts
// contextSwitches times:
//
//	dispatches*DispatchUS + bytes/WeightGBps + contextSwitches*switch
//
// where switch is ContextSwitchUS, times Columns when ContextSwitchPerColumn
// (the designs occupy every column). The figures and their sources
// (manifest.toml): ~150-180 us per launch (DESIGN.md; qvac ~150 us on XDNA2,
// pbonnard ~180 us on XDNA1), context switches of ~360 us per occupied column
// on XDNA2 (qvac) and ~1.3 ms on XDNA1 (pbonnard), weight streaming of 56 GB/s
// on XDNA2 (qvac's GEMV); the XDNA1 streaming figure, 32 GB/s, is an
// arithmetic bound from AIE-ML documentation, not a measurement. Launches are
// assumed not to overlap each other or the streaming. The result saturates at
// the largest Duration.
func (t *Target) Predict(dispatches int, bytes int64, contextSwitches int) time.Duration {
	sw := t.ContextSwitchUS
	if t.ContextSwitchPerColumn {
		sw *= float64(t.Columns)
	}
	us := float64(dispatches)*t.DispatchUS + float64(bytes)/(t.WeightGBps*1e3) + float64(contextSwitches)*sw
	ns := math.Round(us * 1e3)
	switch {
	case !(ns > 0): // also NaN
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// Select chooses where the matrix W[n][k] of type typ runs on target, a
// pure and deterministic function of its arguments and the catalog (which
// must have passed Validate, as Parse, Load and Default ensure).
//
// N <= cpuMaxN goes to the CPU (a negative cpuMaxN means the catalog's
// cpu_max_n). Otherwise the candidates are the target's slots for typ whose
// k_tile divides K and whose [min_n, max_n] holds N and that give a valid
// planar geometry; the cheapest by Target.Predict of one dispatch streaming
// the packed size wins, ties going to the larger k_tile, then to the name
// that sorts first. No candidate means the CPU, with a reason naming the
// filter that removed the last one.
//
// A CPU choice packs the whole row as one tile (KTile = K), which is a valid
// planar geometry whenever typ has a planar format and K is a multiple of
// its block; otherwise KTile is 0 and the reason says why.
func (c *Catalog) Select(target string, typ planar.Type, n, k int, cpuMaxN int) Choice {
	if cpuMaxN < 0 {
		cpuMaxN = c.CPUMaxN
	}
	if n <= 0 || k <= 0 {
		return cpuChoice(typ, n, k, fmt.Sprintf("bad shape N=%d K=%d", n, k))
	}
	if n <= cpuMaxN {
		return cpuChoice(typ, n, k, fmt.Sprintf("N=%d <= cpu-max-n %d", n, cpuMaxN))
	}
	t, ok := c.Targets[target]
	if !ok || t == nil {
		return cpuChoice(typ, n, k, fmt.Sprintf("unknown target %q", target))
	}
	var ofType []*Slot
	for i := range c.Slots {
		if s := &c.Slots[i]; s.Target == target && s.Type == typ {
			ofType = append(ofType, s)
		}
	}
	if len(ofType) == 0 {
		return cpuChoice(typ, n, k, fmt.Sprintf("no %s slot for %s", target, typ))
	}
	var ofK []*Slot
	for _, s := range ofType {
		if k%s.KTile == 0 {
			ofK = append(ofK, s)
		}
	}
	if len(ofK) == 0 {
		// Reasons must not depend on slot order: k_tiles largest first, once each.
		var kt []int
		for _, s := range ofType {
			kt = append(kt, s.KTile)
		}
		slices.Sort(kt)
		kt = slices.Compact(kt)
		var tiles []string
		for i := len(kt) - 1; i >= 0; i-- {
			tiles = append(tiles, strconv.Itoa(kt[i]))
		}
		return cpuChoice(typ, n, k, fmt.Sprintf("K=%d is not a multiple of any %s %s k_tile (%s)",
			k, target, typ, strings.Join(tiles, ", ")))
	}
	var ofN []*Slot
	for _, s := range ofK {
		if s.MinN <= n && n <= s.MaxN {
			ofN = append(ofN, s)
		}
	}
	if len(ofN) == 0 {
		var ranges []string
		for _, s := range ofK {
			ranges = append(ranges, fmt.Sprintf("[%d, %d]", s.MinN, s.MaxN))
		}
		slices.Sort(ranges)
		ranges = slices.Compact(ranges)
		return cpuChoice(typ, n, k, fmt.Sprintf("N=%d outside every [min_n, max_n] of the %s %s slots dividing K=%d: %s",
			n, target, typ, k, strings.Join(ranges, ", ")))
	}
	var (
		best      *Slot
		bestCost  time.Duration
		bestBytes int64
		geomErr   error
		geomSlot  string
	)
	for _, s := range ofN {
		g := planar.Geometry{Type: typ, N: n, K: k, Columns: s.Columns, KTile: s.KTile}
		if err := g.Check(); err != nil {
			if geomErr == nil || s.Name < geomSlot { // reasons must not depend on slot order
				geomErr, geomSlot = err, s.Name
			}
			continue
		}
		size := int64(g.Size())
		cost := t.Predict(1, size, 0)
		if best == nil || cost < bestCost ||
			cost == bestCost && (s.KTile > best.KTile || s.KTile == best.KTile && s.Name < best.Name) {
			best, bestCost, bestBytes = s, cost, size
		}
	}
	if best == nil {
		return cpuChoice(typ, n, k, fmt.Sprintf("no valid planar geometry for the %s %s slots: %v", target, typ, geomErr))
	}
	return Choice{
		Slot:      best,
		KTile:     best.KTile,
		Predicted: bestCost,
		Reason: fmt.Sprintf("%s: N=%d in [%d, %d], K=%d in %d tiles of %d; predicted %v = %g us dispatch + %d bytes at %g GB/s",
			best.Name, n, best.MinN, best.MaxN, k, k/best.KTile, best.KTile, bestCost, t.DispatchUS, bestBytes, t.WeightGBps),
	}
}

// cpuChoice is a CPU choice packed with the whole row as one K-tile.
func cpuChoice(typ planar.Type, n, k int, reason string) Choice {
	g := planar.Geometry{Type: typ, N: n, K: k, Columns: 1, KTile: k}
	if err := g.Check(); err != nil {
		return Choice{Reason: reason + "; no planar layout: " + err.Error()}
	}
	return Choice{KTile: k, Reason: reason}
}
