package amdxdnatest

import (
	"encoding/binary"
	"fmt"
	"slices"
	"syscall"
	"unsafe"

	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

// Exec is the firmware's half: it executes one command's instruction
// stream against its data buffers. instr is the instruction BO's memory
// from the command's instruction address to the BO's end; words is the
// packet's ninstr; args[i] is data buffer i (bo0, bo1, ...) from its
// address in the register map to its BO's end. An error ends the command
// in state ERROR with the error's text as the reason.
type Exec func(instr []byte, words int, args [][]byte, t Target) error

// Target is what the executing context is.
type Target struct {
	DevGen  int        // 3 npu1, 4 npu2
	Columns int        // columns of the context (num_tiles / 4)
	Array   *emu.Array // the selected CU's design, loaded
}

// Executor is the Exec the fake uses (see handoff.go).
var Executor Exec = handoff

func (k *Kernel) execCmd(c *client, a *amdxdna.ExecCmd) error {
	switch {
	case a.Ext != 0 || a.ExtFlags != 0:
		return fail(syscall.EINVAL, "EXEC_CMD: ext %#x ext_flags %#x, MBZ", a.Ext, a.ExtFlags)
	case a.Type != amdxdna.CmdSubmitExecBuf:
		return fail(syscall.EINVAL, "EXEC_CMD: type %d (EXEC_BUF is 0)", a.Type)
	case a.CmdCount != 1:
		return fail(syscall.EINVAL, "EXEC_CMD: cmd_count %d (must be 1; chains go in an ERT_CMD_CHAIN packet)", a.CmdCount)
	case a.ArgCount > amdxdna.MaxArgs:
		return fail(syscall.EINVAL, "EXEC_CMD: arg_count %d > %d", a.ArgCount, amdxdna.MaxArgs)
	case a.ArgCount > 0 && a.Args == 0:
		return fail(syscall.EFAULT, "EXEC_CMD: args is NULL with arg_count %d", a.ArgCount)
	case a.Seq != 0:
		return fail(syscall.EINVAL, "EXEC_CMD: seq %d on input (an output field)", a.Seq)
	}
	x, err := c.hwctx(a.Hwctx, "EXEC_CMD")
	if err != nil {
		return err
	}
	if x.cus == nil {
		return fail(syscall.EINVAL, "EXEC_CMD: context %d has no CUs (CONFIG_CU first)", a.Hwctx)
	}
	if a.CmdHandles > 0xFFFFFFFF {
		return fail(syscall.EINVAL, "EXEC_CMD: cmd_handles %#x: with cmd_count 1 it is the handle itself, not a pointer", a.CmdHandles)
	}
	head, err := c.bo(uint32(a.CmdHandles), "EXEC_CMD cmd_handles")
	if err != nil {
		return err
	}
	cmd := &command{head: head}
	var handles []uint32
	if a.ArgCount > 0 {
		handles = unsafe.Slice((*uint32)(ptr(a.Args)), a.ArgCount)
	}
	for i, h := range handles {
		b, err := c.bo(h, fmt.Sprintf("EXEC_CMD arg %d", i))
		if err != nil {
			return err
		}
		if b.typ == amdxdna.BOCmd || b.typ == amdxdna.BODevHeap {
			return fail(syscall.EINVAL, "EXEC_CMD arg %d: BO %d is type %d, not a buffer of the kernel", i, h, b.typ)
		}
		if slices.Contains(cmd.args, b) {
			return fail(syscall.EINVAL, "EXEC_CMD arg %d: BO %d listed twice", i, h)
		}
		cmd.args = append(cmd.args, b)
	}
	if err := k.checkPacket(c, x, head, &cmd.subs); err != nil {
		return err
	}
	busy := 0
	for _, p := range x.pending {
		if !p.done {
			busy++
		}
	}
	if busy >= amdxdna.MaxInFlight {
		return fail(syscall.EBUSY, "EXEC_CMD: %d commands in flight on context %d (HWCTX_MAX_CMDS %d; the driver would block)", busy, x.handle, amdxdna.MaxInFlight)
	}
	for _, s := range cmd.subs {
		if s != head {
			setState(s, npu.StateSubmitted)
		}
	}
	setState(head, npu.StateSubmitted)
	k.stats.Submissions++
	if len(cmd.subs) > 1 || cmd.subs[0] != head {
		k.stats.Chains++
	}
	cmd.n = k.stats.Submissions
	cmd.fault = k.faults[cmd.n]
	x.seq++
	cmd.seq = x.seq
	for _, b := range append([]*bo{head}, append(cmd.subs, cmd.args...)...) {
		b.refs++
	}
	x.pending = append(x.pending, cmd)
	a.Seq = cmd.seq
	return nil
}

func setState(b *bo, s npu.State) {
	w := binary.LittleEndian.Uint32(b.bytes())
	binary.LittleEndian.PutUint32(b.bytes(), w&^0xF|uint32(s))
}

// checkPacket checks what the driver checks of a command BO: a NEW packet
// of a supported opcode whose count fits, CU masks naming configured CUs,
// chains of START_CU packets that fit the 4 KiB chain buffer.
func (k *Kernel) checkPacket(c *client, x *hwctx, b *bo, subs *[]*bo) error {
	if b.typ != amdxdna.BOCmd {
		return fail(syscall.EINVAL, "EXEC_CMD: BO %d is type %d, commands live in CMD BOs (type %d)", b.handle, b.typ, amdxdna.BOCmd)
	}
	if slices.Contains(*subs, b) {
		return fail(syscall.EINVAL, "ERT_CMD_CHAIN: command BO %d twice", b.handle)
	}
	mem := b.bytes()
	h := amdxdna.ParseHeader(binary.LittleEndian.Uint32(mem))
	switch {
	case h.State != npu.StateNew:
		return fail(syscall.EINVAL, "ERT packet in BO %d: state %v, the host writes NEW (1)", b.handle, h.State)
	case 4*(1+h.Count) > len(mem):
		return fail(syscall.EINVAL, "ERT packet in BO %d: count %d words past the BO's %d bytes", b.handle, h.Count, len(mem))
	}
	switch h.Opcode {
	case amdxdna.OpStartCU:
		p, err := amdxdna.ParseStartCU(mem)
		if err != nil {
			return fail(syscall.EINVAL, "BO %d: %v", b.handle, err)
		}
		if p.CUMask == 0 {
			return fail(syscall.EINVAL, "ERT_START_CU in BO %d: cu_mask 0", b.handle)
		}
		if cu := lowBit(p.CUMask); cu >= len(x.cus) {
			return fail(syscall.EINVAL, "ERT_START_CU in BO %d: cu_mask %#x names CU %d, context %d has %d", b.handle, p.CUMask, cu, x.handle, len(x.cus))
		}
		if len(p.Data) > amdxdna.MaxDataBOs {
			return fail(syscall.EINVAL, "ERT_START_CU in BO %d: register map of %d words, the firmware message holds 19", b.handle, p.RegMapWords())
		}
		*subs = append(*subs, b)
		return nil
	case amdxdna.OpCmdChain:
		if len(*subs) > 0 {
			return fail(syscall.EINVAL, "ERT_CMD_CHAIN in BO %d inside a chain", b.handle)
		}
		ch, err := amdxdna.ParseChain(mem)
		if err != nil {
			return fail(syscall.EINVAL, "BO %d: %v", b.handle, err)
		}
		if ch.SubmitIndex != 0 || ch.ErrorIndex != 0 {
			return fail(syscall.EINVAL, "ERT_CMD_CHAIN in BO %d: submit_index %d error_index %d, the driver's to write", b.handle, ch.SubmitIndex, ch.ErrorIndex)
		}
		var words []int
		for i, sh := range ch.Handles {
			s, err := c.bo(sh, fmt.Sprintf("ERT_CMD_CHAIN command %d", i))
			if err != nil {
				return err
			}
			if err := k.checkPacket(c, x, s, subs); err != nil {
				return err
			}
			p, _ := amdxdna.ParseStartCU(s.bytes())
			words = append(words, p.RegMapWords())
		}
		if n := amdxdna.ChainBytes(words...); n > amdxdna.ChainBufSize {
			return fail(syscall.EINVAL, "ERT_CMD_CHAIN: %d commands take %d bytes of the %d-byte chain buffer", len(ch.Handles), n, amdxdna.ChainBufSize)
		}
		return nil
	case amdxdna.OpStartNPU:
		return fail(syscall.EINVAL, "ERT_START_NPU (20) in BO %d: the driver routes it to the ELF path and the firmware silently runs nothing; MLIR_AIE TXN runs are ERT_START_CU (0)", b.handle)
	}
	return fail(syscall.EINVAL, "ERT packet in BO %d: opcode %d not supported", b.handle, h.Opcode)
}

func lowBit(m uint32) int {
	for i := range 32 {
		if m&(1<<i) != 0 {
			return i
		}
	}
	return 32
}

// run executes the context's pending commands up to seq, in order. A hung
// command stops the queue.
func (k *Kernel) run(c *client, x *hwctx, seq uint64) (hung bool) {
	for _, cmd := range x.pending {
		if cmd.seq > seq {
			return false
		}
		if cmd.done {
			continue
		}
		if cmd.fault == FaultHang {
			return true
		}
		if cmd.fault == FaultError {
			k.finish(c, cmd, npu.StateError, -1, fmt.Sprintf("injected fault at submission %d", cmd.n))
			continue
		}
		state, at, why := npu.StateCompleted, -1, ""
		for i, s := range cmd.subs {
			k.stats.Commands++
			st, msg := k.execute(c, x, cmd, s)
			setState(s, st)
			if st != npu.StateCompleted {
				state, at, why = st, i, msg
				break
			}
		}
		k.finish(c, cmd, state, at, why)
	}
	return false
}

// finish writes the final state and drops the command's references.
func (k *Kernel) finish(c *client, cmd *command, s npu.State, at int, why string) {
	if cmd.done {
		return
	}
	cmd.done = true
	setState(cmd.head, s)
	if len(cmd.subs) > 1 && at >= 0 {
		binary.LittleEndian.PutUint32(cmd.head.bytes()[12:], uint32(at)) // error_index
	}
	if s == npu.StateCompleted {
		k.stats.Completed++
	} else {
		k.stats.Failed++
		if why != "" {
			k.errs = append(k.errs, fmt.Sprintf("submission %d: %v: %s", cmd.n, s, why))
		}
	}
	for _, b := range append([]*bo{cmd.head}, append(cmd.subs, cmd.args...)...) {
		b.refs--
		k.maybeFree(c, b)
	}
}

// execute is the firmware: resolve the register map's addresses the way
// the hardware does, then run the stream.
func (k *Kernel) execute(c *client, x *hwctx, cmd *command, s *bo) (npu.State, string) {
	p, err := amdxdna.ParseStartCU(s.bytes())
	if err != nil {
		return npu.StateError, err.Error()
	}
	if p.Opcode != npu.OpcodeTxn {
		return npu.StateError, fmt.Sprintf("register map opcode %d: the MLIR_AIE kernel runs TXN streams with opcode 3 (2 is the deprecated legacy flow)", p.Opcode)
	}
	// The instruction address is a device address in the heap; a user VA
	// makes the firmware abort (npu-contract.md 4.4).
	ib := c.devBO(p.Instr)
	if ib == nil {
		return npu.StateAbort, fmt.Sprintf("instruction address %#x is not in a DEV BO of the heap (a user VA aborts the firmware)", p.Instr)
	}
	if !slices.Contains(cmd.args, ib) {
		return npu.StateError, fmt.Sprintf("instruction BO %d is not listed in EXEC_CMD args", ib.handle)
	}
	off := int(p.Instr - ib.xdna)
	instr := ib.bytes()[off:]
	if p.Words == 0 || int(p.Words) > len(instr)/4 {
		return npu.StateError, fmt.Sprintf("ninstr %d words past the instruction BO's %d bytes (ninstr counts words, not bytes)", p.Words, len(instr))
	}
	args := make([][]byte, len(p.Data))
	for i, va := range p.Data {
		b, why := c.dataBO(va)
		if b == nil {
			return npu.StateError, fmt.Sprintf("bo%d at %#x: %s", i, va, why)
		}
		if !slices.Contains(cmd.args, b) {
			return npu.StateError, fmt.Sprintf("bo%d (BO %d) is not listed in EXEC_CMD args, so the driver did not pin it", i, b.handle)
		}
		args[i] = b.bytes()[uintptr(va)-uintptr(b.mem):]
	}
	cu := lowBit(p.CUMask)
	if x.arrays[cu] == nil {
		return npu.StateError, fmt.Sprintf("CU %d: %v", cu, x.arrayErrs[cu])
	}
	if err := Executor(instr, int(p.Words), args, Target{DevGen: k.cfg.DevGen, Columns: x.columns, Array: x.arrays[cu]}); err != nil {
		return npu.StateError, err.Error()
	}
	return npu.StateCompleted, ""
}

// devBO finds the live DEV BO holding device address a.
func (c *client) devBO(a uint64) *bo {
	for _, b := range c.bos {
		if b.typ == amdxdna.BODev && b.mem != nil && a >= b.xdna && a < b.xdna+uint64(b.size) {
			return b
		}
	}
	return nil
}

// dataBO finds the SHMEM BO whose live mapping holds user VA a.
func (c *client) dataBO(a uint64) (*bo, string) {
	if a >= heapXDNA && a < heapXDNA+amdxdna.HeapSize {
		return nil, "a heap device address: the firmware reads data at the process VA of a SHMEM BO (with this address the hardware COMPLETES and moves no data)"
	}
	for _, b := range c.bos {
		if b.mem == nil || a < uint64(uintptr(b.mem)) || a >= uint64(uintptr(b.mem))+uint64(b.size) {
			continue
		}
		switch {
		case b.typ != amdxdna.BOShmem:
			return nil, fmt.Sprintf("inside BO %d of type %d; data lives in SHMEM BOs", b.handle, b.typ)
		case b.maps == 0:
			return nil, fmt.Sprintf("BO %d was unmapped before its command ran (keep SHMEM mappings until the run completes)", b.handle)
		}
		return b, ""
	}
	if c.heapVA != 0 && a >= uint64(c.heapVA) && a < uint64(c.heapVA)+amdxdna.HeapSize {
		return nil, "inside the heap's mapping; data lives in SHMEM BOs"
	}
	return nil, "no mapped SHMEM BO holds it"
}

func (k *Kernel) waitCmd(c *client, a *amdxdna.WaitCmd) error {
	x, err := c.hwctx(a.Hwctx, "WAIT_CMD")
	if err != nil {
		return err
	}
	k.stats.Waits++
	return k.wait(c, x, a.Seq, "WAIT_CMD")
}

func (k *Kernel) wait(c *client, x *hwctx, seq uint64, what string) error {
	if seq == 0 || seq > x.seq {
		return fail(syscall.EINVAL, "%s: seq %d on context %d, which has issued 1..%d", what, seq, x.handle, x.seq)
	}
	if k.run(c, x, seq) {
		return fail(syscall.ETIME, "%s: command %d did not finish", what, seq)
	}
	// Retire finished commands from the queue.
	x.pending = slices.DeleteFunc(x.pending, func(p *command) bool { return p.done })
	return nil
}

func (k *Kernel) syncobjWait(c *client, a *amdxdna.SyncobjTimelineWait) error {
	switch {
	case a.CountHandles != 1:
		return fail(syscall.EINVAL, "SYNCOBJ_TIMELINE_WAIT: count_handles %d (the fake waits on one)", a.CountHandles)
	case a.Flags&^(amdxdna.SyncobjWaitAll|amdxdna.SyncobjWaitForSubmit|4) != 0:
		return fail(syscall.EINVAL, "SYNCOBJ_TIMELINE_WAIT: flags %#x", a.Flags)
	case a.Pad != 0:
		return fail(syscall.EINVAL, "SYNCOBJ_TIMELINE_WAIT: pad %#x, MBZ", a.Pad)
	case a.Handles == 0 || a.Points == 0:
		return fail(syscall.EFAULT, "SYNCOBJ_TIMELINE_WAIT: handles or points NULL")
	}
	k.stats.SyncobjWait++
	h := *(*uint32)(ptr(a.Handles))
	x := c.syncobjs[h]
	if x == nil {
		return fail(syscall.ENOENT, "SYNCOBJ_TIMELINE_WAIT: syncobj %d does not exist", h)
	}
	return k.wait(c, x, *(*uint64)(ptr(a.Points)), "SYNCOBJ_TIMELINE_WAIT")
}
