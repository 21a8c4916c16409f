package emu

import (
	"fmt"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// StandIns returns slots with an emulator xclbin (XCLBin) standing in for
// every slot the tensors use whose xclbin the package does not embed, so
// that a package packed without compiled kernels still runs its NPU plan
// on the emulator. Slots that have an xclbin are kept as they are. The
// format and K-tile of a stand-in come from its tensors, which must agree;
// columns is the design width (the package's columns).
func StandIns(tensors []layout.TensorEntry, slots []npu.Slot, columns int) ([]npu.Slot, error) {
	out := make([]npu.Slot, 0, len(slots))
	have := map[string]bool{}
	for _, s := range slots {
		if len(s.XCLBin) > 0 {
			out = append(out, s)
			have[s.Name] = true
		}
	}
	type gemv struct {
		typ   planar.Type
		kTile int
		first string
	}
	need := map[string]*gemv{}
	var order []string
	for _, e := range tensors {
		if e.Device != "npu" || have[e.Slot] {
			continue
		}
		typ, err := planar.ParseType(e.Type)
		if err != nil {
			return nil, fmt.Errorf("emu: tensor %q: %w", e.Name, err)
		}
		g := need[e.Slot]
		if g == nil {
			need[e.Slot] = &gemv{typ, e.KTile, e.Name}
			order = append(order, e.Slot)
			continue
		}
		if g.typ != typ || g.kTile != e.KTile {
			return nil, fmt.Errorf("emu: slot %s: tensor %q is %s in tiles of %d, tensor %q %s in tiles of %d",
				e.Slot, g.first, g.typ, g.kTile, e.Name, typ, e.KTile)
		}
	}
	for _, name := range order {
		g := need[name]
		x, err := XCLBin(g.typ, g.kTile, columns)
		if err != nil {
			return nil, fmt.Errorf("emu: slot %s: %w", name, err)
		}
		out = append(out, npu.Slot{Name: name, Kernel: "MLIR_AIE", XCLBin: x})
	}
	return out, nil
}
