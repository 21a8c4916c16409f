// Package target is the one table of facts about the NPU generations xdna
// runs on: the array (columns, rows, tile kinds), what each tile kind has
// (DMA channels per direction, buffer descriptors, locks, memory), the
// kernels' vector width, the TXN generation the firmware takes, and the
// driver's context limits. Every package that needs such a fact (txn,
// amdxdna, xrt, emu, sim, probe, kernelsel, the physical designs) reads it
// here instead of keeping a copy.
//
// Sources, all in shared/reference: npu-stack.md section 4 (array, memory,
// clocks, contexts), npu-contract.md sections 2.1-2.4 (shim and memtile
// BDs, channels, locks) and 6 (core memory, stack). Where a fact is an
// inference it says so.
package target

import (
	"fmt"
	"sort"
	"strings"
)

// TileKind is what a tile of the array is.
type TileKind uint8

// The tile kinds, by row: shim (interface) tiles on row 0, memory tiles
// on row 1, compute tiles (cores) above.
const (
	Shim TileKind = iota
	Mem
	Core
)

func (k TileKind) String() string {
	switch k {
	case Shim:
		return "shim"
	case Mem:
		return "memtile"
	case Core:
		return "core"
	}
	return fmt.Sprintf("TileKind(%d)", uint8(k))
}

// Tile is what one kind of tile has.
type Tile struct {
	S2MM, MM2S int // DMA channels per direction
	BDs        int // buffer descriptors, shared by its channels
	Locks      int // semaphore locks
	LockMax    int // the largest value a lock holds (6-bit unsigned on AIE-ML)
	Memory     int // data memory in bytes (0: none; a shim reaches DDR)
	Program    int // program memory in bytes (cores only)
	// SplitBDs: even channels chain BDs [0, BDs/2), odd ones [BDs/2, BDs)
	// (AIE-ML memory tiles; mlir-aie's BD id assignment, EVEN_BD_ID_START 0
	// and ODD_BD_ID_START 24).
	SplitBDs bool
	// TaskQueue is the depth of each channel's task queue (shim tiles:
	// aie-rt XAIE_DMA_MAX_QUEUE_SIZE 4; a push onto a full queue is lost).
	TaskQueue int
}

// Target is one NPU generation as a design sees it: the columns a hardware
// context may use, each a shim tile, a memory tile and CoreRows cores.
type Target struct {
	Name     string // package target name: "xdna1", "xdna2"
	Gen      uint8  // TXN header devGen (aie-rt XAIE_DEV_GEN_AIE2IPU 3, _AIE2P 4)
	Arch     string // core architecture: "AIE2" (AIE-ML), "AIE2P"
	Triple   string // Peano's compile target for the cores
	Device   string // mlir-aie's aie.device name for the whole partition
	Columns  int    // columns a context may use
	CoreRows int    // compute rows per column
	Lanes    int    // output rows per vector of the GEMV kernels (int8 datapath width)
	MaxBurst uint8  // largest shim BD burst-length code
	// StackBytes is the default core stack of Peano (npu-contract.md 6).
	StackBytes int
	// ClockMHz is the highest AIE clock of the driver's DPM table
	// (npu-stack.md 4), for turning the kernels' cycle estimates into time.
	ClockMHz int
	// StreamBytes is what one DMA channel moves per cycle (32-bit
	// streams; npu-stack.md 4: 4 B/cycle per shim channel).
	StreamBytes int
	MaxContexts int // hardware contexts per process (driver npu1_regs.c / npu4_regs.c)
	MaxInFlight int // commands in flight per context (aie2_pci.h)
	// HostColumns is what the driver's topology query reports: XDNA1 has
	// a fifth column without a shim tile that contexts never get.
	HostColumns int

	ShimTile, MemTile, CoreTile Tile
}

// The rows of the array: shim, memory tile, then the cores.
const (
	ShimRow     = 0
	MemRow      = 1
	FirstCore   = 2
	rowsPerCol  = 6
	maxColumns  = 8
	aieMLLock   = 63
	coreMemory  = 64 << 10
	coreProgram = 16 << 10
	memMemory   = 512 << 10
)

// Rows is the array's rows per column: shim, memtile and 4 cores.
const Rows = rowsPerCol

// MaxColumns is the widest generation's columns.
const MaxColumns = maxColumns

var (
	shim = Tile{S2MM: 2, MM2S: 2, BDs: 16, Locks: 16, LockMax: aieMLLock, TaskQueue: 4}
	mem  = Tile{S2MM: 6, MM2S: 6, BDs: 48, Locks: 64, LockMax: aieMLLock, Memory: memMemory, SplitBDs: true, TaskQueue: 4}
	core = Tile{S2MM: 2, MM2S: 2, BDs: 16, Locks: 16, LockMax: aieMLLock, Memory: coreMemory, Program: coreProgram, TaskQueue: 4}
)

// XDNA1 is Phoenix / Hawk Point (NPU1, AIE-ML): 4 usable columns.
var XDNA1 = &Target{
	Name: "xdna1", Gen: 3, Arch: "AIE2", Triple: "aie2-none-unknown-elf", Device: "npu1",
	Columns: 4, CoreRows: 4, Lanes: 32, MaxBurst: 2, StackBytes: 1024,
	ClockMHz: 1600, StreamBytes: 4, MaxContexts: 6, MaxInFlight: 4, HostColumns: 5,
	ShimTile: shim, MemTile: mem, CoreTile: core,
}

// XDNA2 is Strix / Strix Halo / Krackan (NPU4..6, AIE2P): 8 columns.
var XDNA2 = &Target{
	Name: "xdna2", Gen: 4, Arch: "AIE2P", Triple: "aie2p-none-unknown-elf", Device: "npu2",
	Columns: 8, CoreRows: 4, Lanes: 64, MaxBurst: 3, StackBytes: 1024,
	ClockMHz: 1800, StreamBytes: 4, MaxContexts: 16, MaxInFlight: 4, HostColumns: 8,
	ShimTile: shim, MemTile: mem, CoreTile: core,
}

// All lists the targets, by name.
var All = []*Target{XDNA1, XDNA2}

// ByName returns the target called name ("xdna1" or "xdna2"; "npu1" and
// "npu2" are taken too).
func ByName(name string) (*Target, error) {
	for _, t := range All {
		if name == t.Name || name == fmt.Sprintf("npu%d", t.Gen-2) {
			return t, nil
		}
	}
	return nil, fmt.Errorf("unknown target %q (want %s)", name, strings.Join(Names(), " or "))
}

// ByGen returns the target whose TXN devGen is gen.
func ByGen(gen uint8) (*Target, error) {
	for _, t := range All {
		if t.Gen == gen {
			return t, nil
		}
	}
	return nil, fmt.Errorf("no target has TXN devGen %d", gen)
}

// Names returns the target names, sorted.
func Names() []string {
	var n []string
	for _, t := range All {
		n = append(n, t.Name)
	}
	sort.Strings(n)
	return n
}

// Kind returns the kind of the tiles on row.
func Kind(row int) TileKind {
	switch {
	case row == ShimRow:
		return Shim
	case row == MemRow:
		return Mem
	}
	return Core
}

// Tile returns what tiles of kind k have.
func (t *Target) Tile(k TileKind) Tile {
	switch k {
	case Shim:
		return t.ShimTile
	case Mem:
		return t.MemTile
	}
	return t.CoreTile
}

// Cores is the compute tiles of the partition.
func (t *Target) Cores() int { return t.Columns * t.CoreRows }

func (t *Target) String() string { return t.Name }
