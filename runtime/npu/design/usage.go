package design

import (
	"fmt"
	"strings"

	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/target"
)

// Use is the most one tile of a kind uses of each of its limits.
type Use struct {
	S2MM, MM2S int // DMA channels
	BDs, Locks int
	Memory     int // bytes: the end of its last buffer (a core's stack included)
}

// Usage returns, per tile kind, the most any tile of the design uses
// (shims: the BDs of the shim map, and its channels).
func (d *Design) Usage() map[target.TileKind]Use {
	u := map[target.TileKind]Use{}
	for _, t := range d.Tiles {
		var x Use
		if t.Kind == target.Shim {
			s := d.Shim
			x = Use{S2MM: 1, MM2S: 1, BDs: s.WeightBDs + 1 + s.RecordBDs + s.OutBDs}
			if t.Col == s.ActCol {
				x.MM2S = 2
			}
		} else {
			for _, ch := range t.Channels {
				if ch.Dir == S2MM {
					x.S2MM++
				} else {
					x.MM2S++
				}
				x.BDs += len(ch.BDs)
			}
			x.Locks = len(t.Locks)
			x.Memory = t.Stack
			for _, b := range t.Buffers {
				x.Memory = max(x.Memory, b.Addr+b.Size)
			}
		}
		o := u[t.Kind]
		u[t.Kind] = Use{S2MM: max(o.S2MM, x.S2MM), MM2S: max(o.MM2S, x.MM2S), BDs: max(o.BDs, x.BDs),
			Locks: max(o.Locks, x.Locks), Memory: max(o.Memory, x.Memory)}
	}
	return u
}

// String reports a Usage against the target's limits, a kind at a time.
func (d *Design) usageString(u map[target.TileKind]Use) string {
	var parts []string
	for _, k := range []target.TileKind{target.Shim, target.Mem, target.Core} {
		x, f := u[k], d.Target.Tile(k)
		s := fmt.Sprintf("%s: channels %d+%d of %d+%d, BDs %d of %d", k, x.S2MM, x.MM2S, f.S2MM, f.MM2S, x.BDs, f.BDs)
		if k != target.Shim {
			s += fmt.Sprintf(", locks %d of %d, memory %d of %d", x.Locks, f.Locks, x.Memory, f.Memory)
		}
		if k == target.Core {
			s += d.kernelString()
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// KernelBudget is the kernel's stack frame bound and program-memory
// estimate (gemv.BudgetOf) and the stack the design gives each core.
func (d *Design) KernelBudget() (b gemv.Budget, stack int, err error) {
	b, err = gemv.BudgetOf(d.Type, d.Rows)
	for _, t := range d.Tiles {
		if t.Kind == target.Core {
			stack = max(stack, t.Stack)
		}
	}
	return b, stack, err
}

func (d *Design) kernelString() string {
	b, stack, err := d.KernelBudget()
	if err != nil {
		return ", kernel: " + err.Error()
	}
	return fmt.Sprintf(", stack frame <= %d of %d, program ~%d of %d", b.Frame, stack, b.Program, d.Target.CoreTile.Program)
}

// UsageString is Usage against the limits, for logs and reports.
func (d *Design) UsageString() string { return d.usageString(d.Usage()) }
