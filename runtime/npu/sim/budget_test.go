package sim

import (
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/target"
)

// TestBudget: for every catalog slot the design gives each core a stack
// that holds the kernel's frame bound (gemv.BudgetOf), the kernel's
// program-memory estimate fits the core's program memory, and the
// buffers and stack fit its data memory. The table it logs (-v) is the
// one in the kernels' report.
func TestBudget(t *testing.T) {
	for _, s := range kernelsel.Default().Slots {
		tg, err := target.ByName(s.Target)
		if err != nil {
			t.Fatal(err)
		}
		d, err := design.New(tg, s.Type, s.KTile)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		b, stack, err := d.KernelBudget()
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		u := d.Usage()[target.Core]
		t.Logf("%-16s stack frame <= %4d of %4d, program ~%5d of %d (%3d vector ops), data memory %5d of %d",
			s.Name, b.Frame, stack, b.Program, tg.CoreTile.Program, b.Ops, u.Memory, tg.CoreTile.Memory)
		if b.Frame > stack {
			t.Errorf("%s: the kernel's frame bound %d exceeds the core's %d-byte stack", s.Name, b.Frame, stack)
		}
		if b.Program > tg.CoreTile.Program {
			t.Errorf("%s: the kernel's program estimate %d exceeds the core's %d bytes", s.Name, b.Program, tg.CoreTile.Program)
		}
		if u.Memory > tg.CoreTile.Memory {
			t.Errorf("%s: %d bytes of data memory, the core has %d", s.Name, u.Memory, tg.CoreTile.Memory)
		}
	}
}
