// Package sim runs the AIE kernel sources (kernels/common/gemv.hpp through
// kernels/xdna1/gemv.cc and kernels/xdna2/gemv.cc), compiled for this
// machine against the aie_api host shim (kernels/aie_api_shim), as the
// kernel of the array emulator: Factory(target) is a gemv.Factory whose
// Kernel.Call runs the compiled entry point of the slot on the buffers the
// emulator passes, the bytes of the cores' memories. Nothing is reshaped
// here: the emulator moves the bytes the design says, the compiled kernel
// reads them as the core would.
//
// The kernels are compiled in only with the sim build tag and cgo (a C++
// compiler); without them Available and Factory say so.
package sim

import (
	"fmt"
	"sync"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/target"
)

// Kernel is the compiled kernel of one slot for the cores of a design. Each
// core keeps its own rounding and saturation modes, at power-up until its
// program calls gemv.FnInit, as a real core does.
type Kernel struct {
	Piece  gemv.Piece
	Record gemv.Record

	slot  cSlot
	mu    sync.Mutex
	modes map[[2]int]*modes
}

// Factory returns the compiled kernels of target ("xdna1" or "xdna2") as a
// gemv.Factory.
func Factory(name string) gemv.Factory {
	return func(typ planar.Type, t, rows int) (gemv.Kernel, error) { return New(name, typ, t, rows) }
}

// New returns the compiled kernel of target name for pieces of rows rows of
// K-tile t of weights of type typ.
func New(name string, typ planar.Type, t, rows int) (*Kernel, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	tg, err := target.ByName(name)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s, ok := lookup(tg.Name, typ, t)
	if !ok {
		return nil, fmt.Errorf("sim: no compiled %s kernel for %s K-tile %d", tg.Name, typ, t)
	}
	if rows != s.lanes {
		return nil, fmt.Errorf("sim: the compiled %s kernel takes pieces of %d rows, not %d", tg.Name, s.lanes, rows)
	}
	p, err := gemv.PieceOf(typ, t, rows)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return &Kernel{Piece: p, Record: gemv.RecordOf(typ, t), slot: s, modes: map[[2]int]*modes{}}, nil
}

// Call runs one kernel function for core (col, row). It checks the
// buffers' sizes and the token as gemv.Model does (a wrong size would let
// the compiled kernel read or write past them); it does not require FnInit
// first: a core that skips it computes with its power-up modes, as on the
// device.
func (k *Kernel) Call(col, row int, name string, args []gemv.Value) error {
	R := k.Piece.Rows
	fn := fnInit
	var c gemv.Call
	switch name {
	case gemv.FnInit:
		if len(args) != 0 {
			return fmt.Errorf("sim: %s takes no arguments, got %d", name, len(args))
		}
	default:
		var err error
		if c, err = k.Piece.Args(k.Record, name, args); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		fn = fnAcc
		if name == gemv.FnOut {
			fn = fnOut
		}
		// The compiled kernels index the accumulators of all MaxTokens.
		if len(c.Acc) != 4*R*design.MaxTokens {
			return fmt.Errorf("sim: %s: accumulators of %d bytes, want %d tokens of %d rows", name, len(c.Acc), design.MaxTokens, R)
		}
	}
	w, rec, acc, out, t, first := c.W, c.Rec, c.Acc, c.Out, c.T, c.First
	k.mu.Lock()
	m := k.modes[[2]int{col, row}]
	if m == nil {
		pu := powerUp()
		m = &pu
		k.modes[[2]int{col, row}] = m
	}
	err := k.slot.call(fn, m, w, rec, acc, out, t, first)
	k.mu.Unlock()
	if err != nil {
		return fmt.Errorf("core (%d,%d) %s: %w", col, row, name, err)
	}
	return nil
}
