//go:build cgo && !nosim

// The XDNA1 kernel sources, compiled for this machine against the aie_api host shim
// (kernels/aie_api_shim) with every format and K-tile behind xdna1_run.
#define XDNA_SIM 1
#include "xdna1/gemv.cc"
