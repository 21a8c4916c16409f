// XDNA2 (Strix / Strix Halo / Krackan, AIE2P compute tiles) GEMV kernel: one slot
// (XDNA_FMT, K_TILE) per object file, kernels/common/entry.inc.
//
// Lanes: 64 output rows per vector (AIE2P's int8 datapath is 64 lanes wide: a MAC with
// a scalar operand fills 64 acc32 lanes, two 1024-bit accumulators). A piece is 64 rows
// of one K-tile (gemv.PieceOf(type, K_TILE, 64)). The kernels are
// kernels/common/gemv.hpp; their stack and program-memory budget is
// runtime/npu/gemv/budget.go (nothing here has run on an AIE2P).
#define XDNA_LANES 64
#include "../common/gemv.hpp"
#include "../common/entry.inc"
