//go:build cgo && !nosim

// The XDNA2 kernel sources, compiled for this machine against the aie_api host shim
// (kernels/aie_api_shim) with every format and K-tile behind xdna2_run.
// No fused multiply-add: every f32 product and sum rounds on its own, as the Go model
// (cgo refuses -ffp-contract=off as a flag, so the pragmas say it).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#define XDNA_SIM 1
#include "xdna2/gemv.cc"
