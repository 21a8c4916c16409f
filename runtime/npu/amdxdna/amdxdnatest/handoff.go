package amdxdnatest

import (
	"fmt"

	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/target"
	"github.com/xdna-go/xdna/xclbin"
)

// handoff executes one command's TXN stream on the emulated array of the
// selected CU (emu.Array.Execute), with ninstr checked against the
// header's size.
func handoff(instr []byte, words int, args [][]byte, t Target) error {
	_, err := t.Array.Execute(instr[:4*words], args, words)
	return err
}

// arrayFor loads the design a configured CU's PDI names (an emulator
// stand-in's marker, emu.XCLBin) on an emulated array of the device's
// generation, with its cores' kernel from f (nil: the Go model).
func arrayFor(f gemv.Factory, devGen int, pdi []byte) (*emu.Array, error) {
	tg, err := target.ByGen(uint8(devGen))
	if err != nil {
		return nil, err
	}
	d, err := emu.DesignOf([]xclbin.PartitionPDI{{Image: pdi}}, tg)
	if err != nil {
		return nil, err
	}
	if f == nil {
		f = gemv.GoModel
	}
	k, err := f(d.Type, d.KTile, d.Rows)
	if err != nil {
		return nil, fmt.Errorf("design %s: %w", d.Name(), err)
	}
	return emu.NewArray(d, k)
}
