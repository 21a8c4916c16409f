// XDNA1 (Phoenix / Hawk Point, AIE2 compute tiles) GEMV kernel: one slot (XDNA_FMT,
// K_TILE) per object file, kernels/common/entry.inc.
//
// Lanes: 32 output rows per vector (AIE2's int8 x int8 vector MAC with a scalar
// operand fills 32 acc32 lanes, one 1024-bit accumulator). A piece is 32 rows of one
// K-tile (gemv.PieceOf(type, K_TILE, 32)). The kernels are kernels/common/gemv.hpp;
// their stack and program-memory budget is runtime/npu/gemv/budget.go (nothing here
// has run on an AIE2).
#define XDNA_LANES 32
#include "../common/gemv.hpp"
#include "../common/entry.inc"
