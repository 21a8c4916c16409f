package emu

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/target"
)

// Array is one hardware context's AIE array running a physical design: the
// memory, locks and DMA channels of every tile the design uses, its stream
// routes and its cores' programs, executed tile by tile as the hardware
// would run what the toolchain compiles from the same description. It lives
// as long as the context: between runs the cores wait where their programs
// stopped and the memory-tile and core channels keep their place in their
// chains, as on the device.
//
// What it enforces, beyond the description's own checks (design.Validate):
// a DMA moves bytes only while it holds its BD's lock and only within its
// BD; a stream moves a word only when every destination takes it (a
// broadcast stalls for its slowest receiver; streams have no buffering
// here, which is stricter than the hardware's few words); a lock never
// goes past its maximum; a core passes a kernel only buffers it holds, never
// one a DMA is filling or draining; at the end of each run every core is
// back at the start of its dispatch loop, no BD is half done, and every
// shim task has moved all its bytes. A run on which nothing can move is a
// *DeadlockError naming every waiting core, channel and lock.
type Array struct {
	d      *design.Design
	kernel gemv.Kernel
	tiles  []*tileState
	byPos  map[[2]int]*tileState
	chans  []*chanState
	flows  []*flowState
	cores  []*coreState
	shims  map[design.Port]*chanState // the shim channels of the shim map
	args   [][]byte                   // the run's buffer arguments (DDR)
	st     ArrayStats
}

// ArrayStats is what the array did: per tile kind, the bytes its DMAs
// wrote and read and its lock operations; the kernel calls; and the
// largest BD and lock use of any tile of each kind against the limits.
type ArrayStats struct {
	Written, Read map[target.TileKind]int64 // bytes into / out of the tiles' memory (shims: DDR)
	LockOps       map[target.TileKind]int64 // acquires and releases, by DMAs and cores
	Calls         int64                     // kernel function calls
	Dispatches    int64
}

func newArrayStats() ArrayStats {
	return ArrayStats{Written: map[target.TileKind]int64{}, Read: map[target.TileKind]int64{}, LockOps: map[target.TileKind]int64{}}
}

// Add adds o into s.
func (s *ArrayStats) Add(o ArrayStats) {
	if s.Written == nil {
		*s = newArrayStats()
	}
	for k, v := range o.Written {
		s.Written[k] += v
	}
	for k, v := range o.Read {
		s.Read[k] += v
	}
	for k, v := range o.LockOps {
		s.LockOps[k] += v
	}
	s.Calls += o.Calls
	s.Dispatches += o.Dispatches
}

type tileState struct {
	t     *design.Tile
	mem   []byte
	locks []int // by lock id
	name  string
}

// ErrDeadlock is matched by every *DeadlockError.
var ErrDeadlock = errors.New("deadlock")

// DeadlockError is a run on which nothing can move before what the
// instruction stream waits for has happened: every waiting core, channel
// and lock, one a line.
type DeadlockError struct {
	Waiting string // what the stream waits for
	Parties []string
}

func (e *DeadlockError) Error() string {
	return fmt.Sprintf("deadlock while waiting for %s; nothing can move:\n  %s", e.Waiting, strings.Join(e.Parties, "\n  "))
}

// Is makes a DeadlockError match ErrDeadlock and ErrDevice.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock || target == ErrDevice }

// NewArray loads design d (validated again here: a design the hardware
// cannot hold is refused, naming the tile and what it lacks) with the
// kernel its cores call, and runs every core until it first waits: the
// state a freshly loaded context has before its first run.
func NewArray(d *design.Design, k gemv.Kernel) (*Array, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	a := &Array{st: newArrayStats()}
	if err := a.load(d, k); err != nil {
		return nil, err
	}
	return a, nil
}

// load (re)loads d on the array: every tile's memory, locks and channels as
// the PDI sets them, the cores run until they first wait. The counters are
// kept.
func (a *Array) load(d *design.Design, k gemv.Kernel) error {
	st := a.st
	*a = Array{d: d, kernel: k, byPos: map[[2]int]*tileState{}, shims: map[design.Port]*chanState{}, st: st}
	for _, t := range d.Tiles {
		ts := &tileState{t: t, mem: make([]byte, t.Facts.Memory), locks: make([]int, t.Facts.Locks), name: t.String()}
		for _, l := range t.Locks {
			ts.locks[l.ID] = l.Init
		}
		a.tiles = append(a.tiles, ts)
		a.byPos[[2]int{t.Col, t.Row}] = ts
		for _, ch := range t.Channels {
			cs := &chanState{a: a, tile: ts, port: design.Port{Col: t.Col, Row: t.Row, Dir: ch.Dir, Ch: ch.Index}, ch: ch}
			cs.start()
			a.chans = append(a.chans, cs)
		}
		if t.Program != nil {
			a.cores = append(a.cores, newCore(a, ts))
		}
	}
	s := d.Shim
	for c := 0; c < d.Columns; c++ {
		ts := a.byPos[[2]int{c, target.ShimRow}]
		for _, p := range []design.Port{{Col: c, Row: target.ShimRow, Dir: design.MM2S, Ch: s.WeightCh}, {Col: c, Row: target.ShimRow, Dir: design.S2MM, Ch: s.OutCh}} {
			cs := &chanState{a: a, tile: ts, port: p, shim: true}
			a.chans = append(a.chans, cs)
			a.shims[p] = cs
		}
	}
	p := design.Port{Col: s.ActCol, Row: target.ShimRow, Dir: design.MM2S, Ch: s.ActCh}
	cs := &chanState{a: a, tile: a.byPos[[2]int{s.ActCol, target.ShimRow}], port: p, shim: true}
	a.chans = append(a.chans, cs)
	a.shims[p] = cs
	byPort := map[design.Port]*chanState{}
	for _, c := range a.chans {
		byPort[c.port] = c
	}
	for i := range d.Flows {
		f := &d.Flows[i]
		fs := &flowState{f: f, src: byPort[f.Src]}
		fs.src.flow = fs
		for _, p := range f.Dsts {
			dc := byPort[p]
			dc.flow = fs
			fs.dsts = append(fs.dsts, dc)
		}
		a.flows = append(a.flows, fs)
	}
	// Power-up: the cores run until they first wait (the kernel's init,
	// then the acquire of the first header).
	if _, err := a.run(func() bool { return false }); err != nil && !errors.Is(err, errStuck) {
		return err
	}
	for _, c := range a.cores {
		if err := c.markHome(); err != nil {
			return err
		}
	}
	return nil
}

// Design is the design the array runs.
func (a *Array) Design() *design.Design { return a.d }

// Stats returns what the array has done since it was loaded.
func (a *Array) Stats() ArrayStats {
	var s ArrayStats
	s.Add(a.st)
	return s
}

// errStuck ends run when nothing can move and done is false.
var errStuck = errors.New("stuck")

// run moves the array until done returns true (nil error) or nothing can
// move (errStuck), or something breaks a rule (the error).
func (a *Array) run(done func() bool) (bool, error) {
	for {
		if done() {
			return true, nil
		}
		moved := false
		for _, c := range a.cores {
			m, err := c.step()
			if err != nil {
				return false, err
			}
			moved = moved || m
		}
		for _, f := range a.flows {
			m, err := f.move()
			if err != nil {
				return false, err
			}
			moved = moved || m
		}
		if !moved {
			return false, errStuck
		}
	}
}

// deadlock describes everything that waits.
func (a *Array) deadlock(waiting string) error {
	var parties []string
	for _, c := range a.cores {
		if s := c.waiting(); s != "" {
			parties = append(parties, s)
		}
	}
	for _, c := range a.chans {
		if s := c.waiting(); s != "" {
			parties = append(parties, s)
		}
	}
	// What is stuck mid-way first (cores inside a dispatch, transfers half
	// done), then what waits as it would between dispatches.
	notable := func(p string) bool {
		return !strings.Contains(p, "between dispatches") && (strings.Contains(p, ": at the ") || strings.Contains(p, "bytes moved"))
	}
	sort.SliceStable(parties, func(i, j int) bool {
		if ni, nj := notable(parties[i]), notable(parties[j]); ni != nj {
			return ni
		}
		return parties[i] < parties[j]
	})
	return &DeadlockError{Waiting: waiting, Parties: parties}
}

// quiesce moves the array until nothing can, then checks that the run left
// it where a run must: every shim task done, no BD half done, every core
// back at its dispatch loop's start.
func (a *Array) quiesce() error {
	if _, err := a.run(func() bool { return false }); err != nil && !errors.Is(err, errStuck) {
		return err
	}
	var bad []string
	for _, c := range a.chans {
		if s := c.leftover(); s != "" {
			bad = append(bad, s)
		}
	}
	for _, c := range a.cores {
		if s := c.awayFromHome(); s != "" {
			bad = append(bad, s)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%w: the run ended with the array not at rest:\n  %s", ErrDevice, strings.Join(bad, "\n  "))
	}
	return nil
}

// lockName names lock id of a tile.
func (ts *tileState) lockName(id int) string {
	for _, l := range ts.t.Locks {
		if l.ID == id {
			return fmt.Sprintf("lock %d (%s)", id, l.Name)
		}
	}
	return fmt.Sprintf("lock %d", id)
}

// acquire takes n of lock l if it holds at least n.
func (a *Array) acquire(ts *tileState, l *design.Lock, n int) bool {
	if ts.locks[l.ID] < n {
		return false
	}
	ts.locks[l.ID] -= n
	a.st.LockOps[ts.t.Kind]++
	return true
}

// release adds n to lock l, refusing to go past the lock's maximum (the
// hardware would saturate or wrap: either way a protocol error).
func (a *Array) release(ts *tileState, l *design.Lock, n int, who string) error {
	if ts.locks[l.ID]+n > ts.t.Facts.LockMax {
		return fmt.Errorf("%w: %s releases %s to %d, past its maximum %d", ErrDevice, who, ts.lockName(l.ID), ts.locks[l.ID]+n, ts.t.Facts.LockMax)
	}
	ts.locks[l.ID] += n
	a.st.LockOps[ts.t.Kind]++
	return nil
}
