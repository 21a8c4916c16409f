package amdxdnatest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// handoff executes one command's TXN stream on the emulator (emu.Execute),
// with ninstr checked against the header's size.
func handoff(instr []byte, words int, args [][]byte, t Target) error {
	_, err := emu.Execute(instr[:4*words], args, emu.ExecConfig{
		Gen: txn.Gen(t.DevGen), Columns: t.Columns, Kernel: t.Kernel, Words: words})
	return err
}

// pdiMarker starts the PDI of the emulator's stand-in xclbins (emu.XCLBin):
// "xdna-emu gemv <format> k<tile> c<columns>".
const pdiMarker = "xdna-emu gemv "

// kernelFor makes the column kernel of a configured CU: the GEMV its PDI
// names when it is an emulator stand-in, else a kernel of any format.
func kernelFor(f emu.KernelFactory, pdi []byte) (emu.ColumnKernel, error) {
	var typ planar.Type
	kTile := 0
	if s, ok := strings.CutPrefix(string(pdi[:min(len(pdi), 128)]), pdiMarker); ok {
		fields := strings.Fields(s)
		if len(fields) < 2 || !strings.HasPrefix(fields[1], "k") {
			return nil, fmt.Errorf("emulator PDI %q", s)
		}
		fm, err := planar.FormatByName(fields[0])
		if err != nil {
			return nil, fmt.Errorf("emulator PDI: %w", err)
		}
		if kTile, err = strconv.Atoi(fields[1][1:]); err != nil {
			return nil, fmt.Errorf("emulator PDI: k-tile %q", fields[1])
		}
		typ = fm.Source
	}
	if f == nil {
		f = emu.GoKernels
	}
	return f(typ, kTile)
}
