package sim

import (
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// The L1 (core data memory) budget of the GEMV designs (kernels/README.md).
//
// Per core, for one (format, K-tile) kernel:
//
//	weights  2 x one core-layout weight object (double-buffered ObjectFifo from the memtile)
//	acts     2 x the activation records of one K-tile for MaxTokens tokens (double-buffered)
//	header   the 64-byte header object
//	acc      8 KiB of f32 accumulators (CONTRACT.md): rows_pad x tokens x 4 <= 8192
//	stack    1 KiB (Peano's default core stack, npu-contract.md section 6)
//
// must fit the 64 KiB data memory of an AIE2 or AIE2P compute tile.

// Memory sizes of a compute tile, the same on AIE2 (XDNA1) and AIE2P (XDNA2).
const (
	DataMemory  = 64 << 10 // bytes of data memory per core
	StackBytes  = 1 << 10  // default core stack
	AccBytes    = 8 << 10  // accumulator budget of CONTRACT.md
	HeaderBytes = 64       // the header object
	MaxTokens   = npu.MaxTokens
)

// Lanes returns the output rows per vector of target's kernels: 32 on XDNA1 (AIE2),
// 64 on XDNA2 (AIE2P); 0 for an unknown target.
func Lanes(target string) int {
	switch target {
	case "xdna1":
		return 32
	case "xdna2":
		return 64
	}
	return 0
}

// Budget is one core's L1 use for a kernel with RowsPad rows per weight object.
// The accumulators are always the contract's 8 KiB (CoreRows x MaxTokens x 4).
type Budget struct {
	Target  string
	Type    planar.Type
	KTile   int
	RowsPad int // rows of a core's weight object (a multiple of the lanes)
	Weights int // 2 objects
	Acts    int // 2 x MaxTokens records
	Header  int
	Acc     int
	Stack   int
}

// Total is the bytes the core uses.
func (b Budget) Total() int { return b.Weights + b.Acts + b.Header + b.Acc + b.Stack }

// Fits reports whether the budget fits the data memory.
func (b Budget) Fits() bool { return b.Total() <= DataMemory }

// L1 returns the budget of target's (typ, kTile) kernel with weight objects of
// rowsPad rows.
func L1(target string, typ planar.Type, kTile, rowsPad int) (Budget, error) {
	if Lanes(target) == 0 {
		return Budget{}, fmt.Errorf("sim: unknown target %q", target)
	}
	ob, err := ObjectBytes(typ, kTile, rowsPad)
	if err != nil {
		return Budget{}, err
	}
	return Budget{
		Target: target, Type: typ, KTile: kTile, RowsPad: rowsPad,
		Weights: 2 * ob,
		Acts:    2 * MaxTokens * npu.ActLayoutOf(typ, kTile).Stride,
		Header:  HeaderBytes, Acc: AccBytes, Stack: StackBytes,
	}, nil
}

// MaxRows returns the largest rows per weight object (a multiple of the target's
// lanes, at most CoreRows) whose budget fits: the object size the designs are built
// with (kernels/l1.tsv); 0 if none fits.
func MaxRows(target string, typ planar.Type, kTile int) int {
	v := Lanes(target)
	if v == 0 {
		return 0
	}
	best := 0
	for r := v; r <= CoreRows; r += v {
		b, err := L1(target, typ, kTile, r)
		if err != nil || !b.Fits() {
			break
		}
		best = r
	}
	return best
}

// CoreRows is the rows of a row chunk one core accumulates: npu.RowChunk (512) over
// the column's 4 cores, 128 rows x 16 tokens x 4 bytes = the 8 KiB of accumulators.
const CoreRows = npu.RowChunk / npu.CoresPerColumn

// Pieces returns how many weight objects of at most MaxRows rows carry a core's
// CoreRows rows of one (row chunk, K-tile) object: the memtile sends them one after
// the other, and the core runs the tile kernel once per piece.
func Pieces(target string, typ planar.Type, kTile int) int {
	m := MaxRows(target, typ, kTile)
	if m == 0 {
		return 0
	}
	return (CoreRows + m - 1) / m
}
