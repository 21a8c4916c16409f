// XDNA2 (Strix / Strix Halo / Krackan, AIE2P compute tiles) GEMV kernel entry points.
//
// Lanes: 64 output rows per vector (AIE2P's int8 datapath is 64 lanes wide: a MAC with a scalar
// operand fills 64 acc32 lanes, two 1024-bit accumulators). The kernels themselves are
// kernels/common/gemv.hpp; per (row chunk, K-tile) object one core computes its rows
// (rows_pad <= the L1 cap of kernels/README.md) for every token. Expected cycles per
// block are in gemv.hpp (estimates; nothing here has run on an AIE2P; its cycle counts are the AIE2 ones halved per row).
#include <algorithm>
#include <cstdio>
#include "../common/gemv.hpp"

#define XDNA_LANES 64
#define XDNA_GEN 2
#define XDNA_PREFIX xdna2
#include "../common/entry.inc"
