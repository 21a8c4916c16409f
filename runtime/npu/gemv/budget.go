package gemv

import (
	"fmt"

	"github.com/xdna-go/xdna/planar"
)

// Budget is what one kernel slot needs of a core beyond its buffers: the
// stack its entry points use and the program memory its code takes. Both
// are bounds and estimates from kernels/common/gemv.hpp, not measurements:
// nothing here has been compiled by Peano. The design reads them (no cgo):
// its core stack must hold Frame, and Program must fit the core's 16 KiB.
type Budget struct {
	// Frame bounds the stack of the deepest call, xdna_gemv_acc or
	// xdna_gemv_out (with gemv_acc/gemv_out inlined) calling tile_part
	// (XDNA_NOINLINE; every helper and aie_api function inlined into it):
	//
	//	entry frame     64 + 12V   saved registers and return address (64),
	//	                           the partial, the loaded accumulators and
	//	                           their sum (V f32 each)
	//	tile_part frame 64 + the values live at its deepest point, each in
	//	                its full register size and all spilled at once, plus
	//	                every temporary of the helper being evaluated there
	//
	// The deepest point is the rescale at the end of a block or super-block:
	//
	//	Q4_0, Q5_0, Q8_0, Q6_K  part, isum, d_w, d_w*d_x, float(isum), the
	//	                        product (6 x 4V) + half()'s temporaries
	//	                        (4V joined + 768: 12 int32 vectors of 16
	//	                        lanes in f16bits)                   = 28V + 768
	//	Q4_K, Q5_K              part, sumi, summ (3 x 4V); d*dx, dmin*dx,
	//	                        the two products (4 x 4V); half()   = 32V + 768
	//
	// The inner loops hold less (Q5_K: part, two accumulators, sc, mn, q,
	// q*sc, field()'s 304 bytes of 16-row temporaries and the widened codes:
	// 27V + 304). So Frame = 40V + 896 (44V + 896 for Q4_K, Q5_K): 2176 to
	// 3712 bytes, against the 1 KiB Peano default the landed kernels ran in
	// (four 64-lane acc32 chains and sc[8]/mn[8]/sc[16] arrays alone are 4 to
	// 6 KiB). kernels/build.sh prints each object's prologue (paddxm) to
	// check the real frame against this bound.
	Frame int
	// Ops counts the vector operations of one copy of tile_part with every
	// loop rolled (XDNA_ROLLED), per 16-row part P = V/16: field() 6P-1
	// (load, shift, mask, two filters a part, the concat), half() 20P-1
	// (load, shift, mask and f16bits' 16 a part), rescale 6P, a mac,
	// subtract, widen or multiply 1, and about 30 scalar operations for the
	// activation's scale and the loops.
	Ops int
	// Program estimates the program memory: 3 KiB fixed (the core program's
	// loop over objects with its lock operations, the entry points, and the
	// compiler-rt soft-float routines the scalar f16/f32 arithmetic calls)
	// plus 24 bytes an operation (one VLIW bundle of at most 16 bytes, half
	// again for the latency nops of rolled loops). With the innermost loops
	// unrolled the 64-lane Q5_K kernel would need about 20 KiB: hence
	// XDNA_ROLLED.
	Program int
}

// BudgetOf returns the Budget of the kernel for weights of type typ on a
// core of lanes lanes (32 or 64).
func BudgetOf(typ planar.Type, lanes int) (Budget, error) {
	if lanes != 32 && lanes != 64 {
		return Budget{}, fmt.Errorf("gemv: no kernel of %d lanes", lanes)
	}
	V, P := lanes, lanes/16
	var frame, ops int
	switch typ {
	case planar.Q4_0:
		frame, ops = 40*V+896, 32*P+32 // 32 x (field + subtract + mac) rolled: 6P+1; half, rescale, scalars
	case planar.Q8_0:
		frame, ops = 40*V+896, 32*P+31 // field (no mask) + mac: 6P
	case planar.Q5_0:
		frame, ops = 40*V+896, 38*P+33 // + the high bit's field, shift and or: 6P+1
	case planar.Q4_K:
		frame, ops = 44*V+896, 70*P+27 // inner 6P+3; sc, mn and the sums 12P+6; two halves, four products 52P-2
	case planar.Q5_K:
		frame, ops = 44*V+896, 76*P+28 // + the high bit: 6P+1
	case planar.Q6_K:
		frame, ops = 40*V+896, 38*P+22 // inner 6P+3; the group scale 6P; half, rescale 26P-1
	default:
		return Budget{}, fmt.Errorf("gemv: no kernel for %s", typ)
	}
	return Budget{Frame: frame, Ops: ops, Program: 3072 + 24*ops}, nil
}
