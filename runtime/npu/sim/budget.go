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
	MaxTokens   = 16       // tokens per dispatch (CONTRACT.md header word 4)
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

// L1 returns the budget of target's (typ, kTile) kernel with rowsPad rows per core.
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

// MaxRows returns the largest rows per core (a multiple of the target's lanes) whose
// budget fits, the cap the designs are built with; 0 if none fits.
func MaxRows(target string, typ planar.Type, kTile int) int {
	v := Lanes(target)
	if v == 0 {
		return 0
	}
	best := 0
	for r := v; r <= 1<<14; r += v {
		b, err := L1(target, typ, kTile, r)
		if err != nil || !b.Fits() {
			break
		}
		best = r
	}
	return best
}

// RowChunk returns the rows per row chunk (RC, CONTRACT.md header word 5) that fit
// both the accumulators and the weight buffers of target's (typ, kTile) kernel for
// tokens tokens: 4 cores x min(the largest multiple of the lanes with rows x tokens x 4
// <= 8 KiB, MaxRows). CONTRACT.md v1's 4 * ((2048/tokens) &^ 15) bounds only the
// accumulators and overflows the weight buffers (kernels/README.md, "L1 budget").
func RowChunk(target string, typ planar.Type, kTile, tokens int) int {
	v := Lanes(target)
	if v == 0 || tokens < 1 || tokens > MaxTokens {
		return 0
	}
	acc := AccBytes / 4 / tokens / v * v
	return 4 * min(acc, MaxRows(target, typ, kTile))
}
