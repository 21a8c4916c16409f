//go:build cgo && sim

// The XDNA1 kernel sources, compiled for this machine against the aie_api host shim
// (kernels/aie_api_shim) with every format and K-tile behind xdna1_run.
// The go command does not see edits to these included files; this line changes with
// them (hash_test.go), so that it recompiles:
// kernel sources sha256 b25ce22a374e5d50e157ac6582696799946ef3fd25b680e7f6c5aeb8131c9051
#define XDNA_SIM 1
#include "xdna1/gemv.cc"
