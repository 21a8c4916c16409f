//go:build cgo && !nosim

// The XDNA2 kernel sources, compiled for this machine against the aie_api host shim
// (kernels/aie_api_shim) with every format and K-tile behind xdna2_run.
#define XDNA_SIM 1
#include "xdna2/gemv.cc"
