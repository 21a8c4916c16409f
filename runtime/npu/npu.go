// Package npu is the host side of the NPU path: the Device interface that
// the emulator (package emu) and the real devices (package xrt, build tag
// xrt) implement, the per-dispatch parameter header and activation streams
// the GEMV kernel reads (params.go, act.go; the TXN instruction streams are
// package txn's), the staging ring that streams weights from the mapped
// .xdna file, the dispatch planner, the Backend that sends each matmul where
// the pack-time plan says (falling back to the CPU on a device fault), and
// the cost model that predicts a plan's time per token.
//
// Everything here runs and is tested without an NPU: package emu executes
// the TXN streams (descriptors, patches, pushes, syncs) and the kernel's
// arithmetic over the bytes staged into its buffer objects.
//
// The GEMV kernel's argument convention (one xclbin per weight format and
// K-tile, kernel "MLIR_AIE"): opcode OpcodeTxn; the instruction buffer
// holds the dispatch's TXN stream (txn.GEMV: a shim BD per column for its
// weight run, the broadcast activation BDs, an output BD per column, the
// address patches, queue pushes and syncs); bo0 is the weight runs of the
// columns, staged from the planar blob in the kernel's order (a
// staging-ring buffer); bo1 the parameter header and the activation
// records, quantised on the host (params.go, act.go); bo2 the outputs,
// f32 per column.
//
// The call sequence a Device models is XRT's for an mlir-aie "MLIR_AIE"
// kernel (npu-stack.md sections 1.6 and 3.1; seeds-and-peers.md 1a):
//
//	k   := dev.LoadKernel(xclbin, "MLIR_AIE")     // register_xclbin, hw_context, xrt::kernel
//	ins := dev.Alloc(BOInstr, n)                  // cacheable, kernel.group_id(1)
//	bo  := dev.Alloc(BOData, n)                   // host-only, kernel.group_id(3..)
//	copy(dev.Map(bo), ...); dev.Sync(bo, ToDevice, 0, n)
//	r   := dev.Run(k, OpcodeTxn, ins, words, bo0, bo1, bo2)
//	dev.Wait(r, timeout); dev.Sync(bo2, FromDevice, 0, n)
package npu

import (
	"errors"
	"fmt"
	"time"

	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// BO is a buffer object handle; 0 is never a valid handle.
type BO uint32

// Kernel is a loaded kernel: one hardware context, created once by
// LoadKernel and reused; 0 is never a valid handle.
type Kernel uint32

// Run is a submitted command; 0 is never a valid handle.
type Run uint64

// BOKind is what a buffer object holds, which decides its XRT flags and
// memory group.
type BOKind uint8

// The buffer kinds.
const (
	// BOData is host-only data (XRT_BO_FLAGS_HOST_ONLY, kernel.group_id(3+i);
	// the driver's SHARE BO): weights, activations, outputs.
	BOData BOKind = iota + 1
	// BOInstr is an instruction stream (XCL_BO_FLAGS_CACHEABLE,
	// kernel.group_id(1); the driver's DEV BO in the device heap).
	BOInstr
)

func (k BOKind) String() string {
	switch k {
	case BOData:
		return "data"
	case BOInstr:
		return "instr"
	}
	return fmt.Sprintf("BOKind(%d)", uint8(k))
}

// Direction is the direction of a cache sync.
type Direction uint8

// The sync directions (amdxdna SYNC_DIRECT_TO_DEVICE 0, FROM_DEVICE 1).
const (
	ToDevice   Direction = 0
	FromDevice Direction = 1
)

// OpcodeTxn is the MLIR_AIE kernel's opcode argument for a transaction
// (instruction-stream) run: AIE2_EXEC_BUFFER_KERNEL_OP_TXN (npu-stack.md 1.7).
const OpcodeTxn = 3

// State is an ERT command state (XRT ert.h, npu-stack.md 1.7).
type State uint8

// The ERT command states.
const (
	StateNew        State = 1
	StateQueued     State = 2
	StateRunning    State = 3
	StateCompleted  State = 4
	StateError      State = 5
	StateAbort      State = 6
	StateSubmitted  State = 7
	StateTimeout    State = 8
	StateNoResponse State = 9
)

var stateNames = [...]string{1: "NEW", 2: "QUEUED", 3: "RUNNING", 4: "COMPLETED", 5: "ERROR",
	6: "ABORT", 7: "SUBMITTED", 8: "TIMEOUT", 9: "NORESPONSE"}

func (s State) String() string {
	if int(s) < len(stateNames) && stateNames[s] != "" {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Info describes a device.
type Info struct {
	Name        string  // "emu", "xrt:0", ...
	Gen         txn.Gen // the TXN generation its firmware executes (npu1, npu2)
	Columns     int     // AIE columns a hardware context may use
	MaxContexts int     // hardware contexts per process (6 on XDNA1, 16 on XDNA2)
	MaxInFlight int     // commands in flight per context (HWCTX_MAX_CMDS, 4)
}

// Device is one NPU (or its emulation). Implementations are constructed by
// their packages (emu.New, xrt.Open) and are safe for use by one goroutine
// at a time; the Backend serialises its calls.
type Device interface {
	// Info describes the device.
	Info() Info

	// LoadKernel registers the xclbin and creates one hardware context for
	// the named kernel in it. Loading the same xclbin (by UUID) and kernel
	// again returns the same handle without a new context. Contexts are
	// scarce: when Info().MaxContexts are in use the error matches
	// ErrContextLimit.
	LoadKernel(xclbin []byte, name string) (Kernel, error)

	// Alloc allocates a buffer object of size bytes. Its memory is pinned
	// until Free.
	Alloc(kind BOKind, size int) (BO, error)

	// Map returns the host view of bo (its whole size). Writes become
	// visible to the device only after Sync(ToDevice); device writes become
	// visible in it only after Sync(FromDevice).
	Map(bo BO) ([]byte, error)

	// Sync flushes or invalidates bytes [offset, offset+size) of bo.
	// Syncing a buffer to the device while a submitted run that reads it
	// has not finished is an error.
	Sync(bo BO, dir Direction, offset, size int) error

	// Run submits the kernel with the MLIR_AIE arguments: opcode, the
	// instruction buffer and its length in 32-bit words, then the data
	// buffers (bo0, bo1, ...). Runs of a device execute in submission
	// order. At most Info().MaxInFlight runs of a context may be unfinished.
	Run(k Kernel, opcode uint64, instr BO, words int, data ...BO) (Run, error)

	// Wait waits up to timeout for r to finish and releases the handle. It
	// returns nil when the command completed, an error matching ErrTimeout
	// when it did not finish in time, and a *RunError for any other final
	// state.
	Wait(r Run, timeout time.Duration) error

	// Free releases a buffer object.
	Free(bo BO) error

	// Close destroys the contexts and frees every buffer.
	Close() error
}

// Errors shared by the Device implementations.
var (
	ErrContextLimit = errors.New("hardware context limit reached")
	ErrTimeout      = errors.New("command timed out")
	ErrClosed       = errors.New("device closed")
	// ErrPinLimit: the device (its driver) cannot pin more memory; raise
	// the memlock limit (ulimit -l) or pin less (a smaller resident budget).
	ErrPinLimit = errors.New("pinned-memory limit reached")
	ErrHandle   = errors.New("invalid handle")
	ErrInFlight = errors.New("too many commands in flight")
	ErrBusy     = errors.New("buffer in use by a running command")
)

// Lookup returns the buffer of handle h in a Device's table bos, or the
// error every Device gives: ErrClosed after Close, ErrHandle (naming the
// device, prefix) for a handle it does not hold.
func Lookup[T any](bos map[BO]*T, prefix string, h BO, closed bool) (*T, error) {
	if closed {
		return nil, ErrClosed
	}
	b := bos[h]
	if b == nil {
		return nil, fmt.Errorf("%s: buffer %d: %w", prefix, h, ErrHandle)
	}
	return b, nil
}

// CheckSync is the check every Device's Sync makes of its arguments: bytes
// [offset, offset+size) inside buffer h of n bytes, which no unfinished run
// uses (users), in a known direction. Errors name the device (prefix).
func CheckSync(prefix string, h BO, n, users int, dir Direction, offset, size int) error {
	switch {
	case offset < 0 || size < 0 || offset > n || size > n-offset:
		return fmt.Errorf("%s: sync buffer %d: [%d, +%d) outside %d bytes", prefix, h, offset, size, n)
	case users > 0:
		return fmt.Errorf("%s: sync buffer %d: %w", prefix, h, ErrBusy)
	case dir != ToDevice && dir != FromDevice:
		return fmt.Errorf("%s: sync buffer %d: direction %d", prefix, h, dir)
	}
	return nil
}

// RunError reports a command that finished in a state other than
// COMPLETED.
type RunError struct {
	Run   Run
	State State
	Msg   string // what the device said, if anything
}

func (e *RunError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("command %d finished %s", e.Run, e.State)
	}
	return fmt.Sprintf("command %d finished %s: %s", e.Run, e.State, e.Msg)
}

// Is makes a RunError in state TIMEOUT match ErrTimeout.
func (e *RunError) Is(target error) bool { return target == ErrTimeout && e.State == StateTimeout }
