package amdxdnatest

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/xclbin"
)

// handoff executes one command's instruction stream on the emulator.
//
// Until emu.Execute (the TXN executor of the device contract) is on main,
// the Backend's instruction buffers hold an npu.Desc descriptor, which this
// runs on an emu.Device (handoffDesc); handoffTXN replaces it when the
// Backend writes TXN streams.
func handoff(instr []byte, words int, args [][]byte, t Target) error {
	return handoffDesc(instr, words, args, t)
}

var bridge struct {
	sync.Mutex
	devs map[int]*emu.Device
	ks   map[int]npu.Kernel
}

// handoffDesc runs a descriptor stream on an emulated device: the
// instruction and data bytes are copied into its buffers, synced, run,
// and the outputs (bo2) copied back.
func handoffDesc(instr []byte, words int, args [][]byte, t Target) error {
	if len(instr) < 8 {
		return fmt.Errorf("instruction stream of %d bytes", len(instr))
	}
	if n := binary.LittleEndian.Uint32(instr[4:]); binary.LittleEndian.Uint32(instr) == npu.DescMagic && int(n) != words {
		return fmt.Errorf("ninstr %d, but the descriptor is %d words (ninstr counts words)", words, n)
	}
	if len(args) != 3 {
		return fmt.Errorf("%d data buffers, the GEMV kernel takes 3", len(args))
	}
	bridge.Lock()
	defer bridge.Unlock()
	if bridge.devs == nil {
		bridge.devs, bridge.ks = map[int]*emu.Device{}, map[int]npu.Kernel{}
	}
	d := bridge.devs[t.Columns]
	if d == nil {
		d = emu.New(emu.Config{Name: "amdxdnatest-bridge", Columns: t.Columns, MaxContexts: 1, MaxInFlight: 1})
		x, err := xclbin.NewNPU(xclbin.NPUKernel, [16]byte{0xfa, 0xce, byte(t.Columns)}, []byte("amdxdnatest bridge"), t.Columns).Marshal()
		if err != nil {
			return err
		}
		k, err := d.LoadKernel(x, xclbin.NPUKernel)
		if err != nil {
			return err
		}
		bridge.devs[t.Columns], bridge.ks[t.Columns] = d, k
	}
	var bos []npu.BO
	defer func() {
		for _, b := range bos {
			d.Free(b)
		}
	}()
	put := func(kind npu.BOKind, src []byte) (npu.BO, error) {
		b, err := d.Alloc(kind, len(src))
		if err != nil {
			return 0, err
		}
		bos = append(bos, b)
		m, _ := d.Map(b)
		copy(m, src)
		return b, d.Sync(b, npu.ToDevice, 0, len(src))
	}
	ib, err := put(npu.BOInstr, instr[:4*words])
	if err != nil {
		return err
	}
	var data []npu.BO
	for _, a := range args {
		b, err := put(npu.BOData, a)
		if err != nil {
			return err
		}
		data = append(data, b)
	}
	r, err := d.Run(bridge.ks[t.Columns], npu.OpcodeTxn, ib, words, data...)
	if err != nil {
		return err
	}
	if err := d.Wait(r, 10*time.Second); err != nil {
		return err
	}
	if err := d.Sync(data[2], npu.FromDevice, 0, len(args[2])); err != nil {
		return err
	}
	m, _ := d.Map(data[2])
	copy(args[2], m)
	return nil
}
