//go:build cgo && sim

// The xdna2 kernel slots of the catalog (kernelsel/default.toml), compiled for this
// machine against the aie_api host shim (kernels/aie_api_shim): kernels/xdna2/gemv.cc
// once per slot, each with its own XDNA_FMT and K_TILE as the device build compiles
// one object file per slot, its functions named xdna2_<slot>_xdna_gemv_*.
// The go command does not see edits to these included files; this line changes with
// them (hash_test.go), so that it recompiles:
// kernel sources sha256 ba80a48439247490445acb8d4b87d597125c1a50dca14cffe2e5062618f35249
#define XDNA_SIM 1
#include "sim.h"

#define XDNA_FMT 2
#define K_TILE 128
#define XDNA_SIM_PREFIX xdna2_q4_0_k128_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_FMT 2
#define K_TILE 256
#define XDNA_SIM_PREFIX xdna2_q4_0_k256_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_FMT 6
#define K_TILE 128
#define XDNA_SIM_PREFIX xdna2_q5_0_k128_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_FMT 6
#define K_TILE 256
#define XDNA_SIM_PREFIX xdna2_q5_0_k256_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_FMT 8
#define K_TILE 128
#define XDNA_SIM_PREFIX xdna2_q8_0_k128_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_FMT 8
#define K_TILE 256
#define XDNA_SIM_PREFIX xdna2_q8_0_k256_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_FMT 12
#define K_TILE 256
#define XDNA_SIM_PREFIX xdna2_q4_k_k256_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_FMT 13
#define K_TILE 256
#define XDNA_SIM_PREFIX xdna2_q5_k_k256_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_FMT 14
#define K_TILE 256
#define XDNA_SIM_PREFIX xdna2_q6_k_k256_
#include "xdna2/gemv.cc"
#undef XDNA_FMT
#undef K_TILE
#undef XDNA_SIM_PREFIX

#define XDNA_SIM_SLOT(p, f, k) {f, k, XDNA_LANES, p##xdna_gemv_init, p##xdna_gemv_acc, p##xdna_gemv_out, p##xdna_gemv_layout}
extern "C" const xdna_sim_slot xdna2_slots[] = {
    XDNA_SIM_SLOT(xdna2_q4_0_k128_, 2, 128),
    XDNA_SIM_SLOT(xdna2_q4_0_k256_, 2, 256),
    XDNA_SIM_SLOT(xdna2_q5_0_k128_, 6, 128),
    XDNA_SIM_SLOT(xdna2_q5_0_k256_, 6, 256),
    XDNA_SIM_SLOT(xdna2_q8_0_k128_, 8, 128),
    XDNA_SIM_SLOT(xdna2_q8_0_k256_, 8, 256),
    XDNA_SIM_SLOT(xdna2_q4_k_k256_, 12, 256),
    XDNA_SIM_SLOT(xdna2_q5_k_k256_, 13, 256),
    XDNA_SIM_SLOT(xdna2_q6_k_k256_, 14, 256),
};
extern "C" const int xdna2_nslots = sizeof xdna2_slots / sizeof xdna2_slots[0];
