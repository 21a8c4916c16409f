package amdxdna

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/xdna-go/xdna/runtime/npu"
)

// Chaining is an npu.Device over a Device that submits runs as
// ERT_CMD_CHAINs: Run only records the dispatch, and the recorded
// dispatches go to the driver as one chain (one EXEC_CMD, one job, one
// wait) when the caller waits for one of them, touches a buffer one of
// them uses, or runs another kernel. A caller that, like npu.Backend,
// never touches the buffers of an unfinished run gets the results of
// Run-per-dispatch with fewer submissions: all the dispatches of a matmul
// call (its ring chunks and token groups) go out as one.
type Chaining struct {
	mu      sync.Mutex
	d       *Device
	max     int // dispatches per chain
	pending []pendingRun
	runs    map[npu.Run]*chainRun // submitted, by member id
	next    npu.Run
}

type pendingRun struct {
	id npu.Run
	k  npu.Kernel
	ds Dispatch
}

type chainRun struct {
	dev     npu.Run // the Device's run of the chain
	members []npu.Run
	done    bool
	err     error // the chain's result
	failed  int   // index of the failed member, or -1
}

var _ npu.Device = (*Chaining)(nil)

// NewChaining wraps d; max bounds the dispatches of one chain (<= 0: as
// many as fit the driver's chain buffer, 42 of 3 data buffers).
func NewChaining(d *Device, max int) *Chaining {
	if max <= 0 {
		max = (ChainBufSize) / (ChainSlotHeader + 4*(5+2*3))
	}
	return &Chaining{d: d, max: max, runs: map[npu.Run]*chainRun{}}
}

// Device returns the wrapped device.
func (c *Chaining) Device() *Device { return c.d }

// Info describes the device; a chain is one job of the driver, so up to
// MaxInFlight chains of max dispatches each may be unfinished.
func (c *Chaining) Info() npu.Info {
	in := c.d.Info()
	in.MaxInFlight *= c.max
	in.Name += " (chains)"
	return in
}

// LoadKernel loads a kernel on the device.
func (c *Chaining) LoadKernel(x []byte, name string) (npu.Kernel, error) {
	return c.d.LoadKernel(x, name)
}

// Alloc allocates a buffer on the device.
func (c *Chaining) Alloc(kind npu.BOKind, size int) (npu.BO, error) { return c.d.Alloc(kind, size) }

// Map returns the buffer's host view.
func (c *Chaining) Map(bo npu.BO) ([]byte, error) { return c.d.Map(bo) }

// uses reports whether a recorded dispatch uses bo.
func (c *Chaining) uses(bo npu.BO) bool {
	for _, p := range c.pending {
		if p.ds.Instr == bo || slices.Contains(p.ds.Data, bo) {
			return true
		}
	}
	return false
}

// flushFor submits the recorded dispatches if one uses bo.
func (c *Chaining) flushFor(bo npu.BO) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uses(bo) {
		return c.flush()
	}
	return nil
}

// Sync submits the recorded dispatches first if one uses bo (the device
// then refuses the sync while they run, as it must).
func (c *Chaining) Sync(bo npu.BO, dir npu.Direction, offset, size int) error {
	if err := c.flushFor(bo); err != nil {
		return err
	}
	return c.d.Sync(bo, dir, offset, size)
}

// Free submits the recorded dispatches first if one uses bo.
func (c *Chaining) Free(bo npu.BO) error {
	if err := c.flushFor(bo); err != nil {
		return err
	}
	return c.d.Free(bo)
}

// Run records a dispatch; it reaches the driver with the chain it joins.
// A full chain, or a dispatch of another kernel, submits the chain
// recorded so far.
func (c *Chaining) Run(k npu.Kernel, opcode uint64, instr npu.BO, words int, data ...npu.BO) (npu.Run, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) > 0 && (c.pending[0].k != k || len(c.pending) >= c.max) {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	c.next++
	c.pending = append(c.pending, pendingRun{id: c.next, k: k, ds: Dispatch{Opcode: opcode, Instr: instr, Words: words, Data: slices.Clone(data)}})
	return c.next, nil
}

// flush submits the recorded dispatches: one ERT_START_CU alone, several
// as one ERT_CMD_CHAIN.
func (c *Chaining) flush() error {
	if len(c.pending) == 0 {
		return nil
	}
	ps := c.pending
	c.pending = nil
	ds := make([]Dispatch, len(ps))
	cr := &chainRun{failed: -1}
	for i, p := range ps {
		ds[i] = p.ds
		cr.members = append(cr.members, p.id)
	}
	var err error
	if len(ds) == 1 {
		cr.dev, err = c.d.Run(ps[0].k, ds[0].Opcode, ds[0].Instr, ds[0].Words, ds[0].Data...)
	} else {
		cr.dev, err = c.d.RunChain(ps[0].k, ds)
	}
	if err != nil {
		return err
	}
	for _, id := range cr.members {
		c.runs[id] = cr
	}
	return nil
}

// Wait submits the recorded dispatches if r is one of them, then waits for
// the chain holding r. Members before a failed one completed; the failed
// one and those after it report the chain's error.
func (c *Chaining) Wait(r npu.Run, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.ContainsFunc(c.pending, func(p pendingRun) bool { return p.id == r }) {
		if err := c.flush(); err != nil {
			return err
		}
	}
	cr := c.runs[r]
	if cr == nil {
		return fmt.Errorf("amdxdna: wait: run %d: %w", r, npu.ErrHandle)
	}
	if !cr.done {
		c.mu.Unlock() // a prefetch may Sync other buffers meanwhile
		err := c.d.Wait(cr.dev, timeout)
		c.mu.Lock()
		if errors.Is(err, npu.ErrTimeout) && !isRunError(err) {
			return err // still running: wait again later
		}
		cr.done, cr.err = true, err
		var ce *ChainError
		if errors.As(err, &ce) {
			cr.failed = ce.Index
		}
	}
	delete(c.runs, r)
	i := slices.Index(cr.members, r)
	if cr.err == nil || (cr.failed >= 0 && i < cr.failed) {
		return nil
	}
	return cr.err
}

func isRunError(err error) bool {
	var re *npu.RunError
	return errors.As(err, &re)
}

// Close closes the device; recorded dispatches are dropped.
func (c *Chaining) Close() error {
	c.mu.Lock()
	c.pending = nil
	clear(c.runs)
	c.mu.Unlock()
	return c.d.Close()
}
