// XDNA1 (Phoenix / Hawk Point, AIE2 compute tiles) GEMV kernel entry points.
//
// Lanes: 32 output rows per vector (AIE2's int8 x int8 vector MAC with a scalar
// operand fills 32 acc32 lanes, 1024-bit accumulators). The kernels themselves are
// kernels/common/gemv.hpp; per (row chunk, K-tile) object one core computes its rows
// (rows_pad <= the L1 cap of kernels/README.md) for every token. Expected cycles per
// block are in gemv.hpp (estimates; nothing here has run on an AIE2).
#include <algorithm>
#include <cstdio>
#include "../common/gemv.hpp"

#define XDNA_LANES 32
#define XDNA_GEN 1
#define XDNA_PREFIX xdna1
#include "../common/entry.inc"
