//go:build cgo && sim

// The glue between package sim and the compiled kernel slots: one call of a slot's
// entry point with the core's modes swapped in and the shim's rule checks around it.
// The go command does not see edits to the included shim; this line changes with it
// (hash_test.go), so that it recompiles:
// kernel sources sha256 ba80a48439247490445acb8d4b87d597125c1a50dca14cffe2e5062618f35249
#include <aie_api/aie.hpp>

#include "sim.h"

extern "C" {

unsigned xdna_sim_layout(const xdna_sim_slot* s, unsigned* off) { return s->layout(off); }

void xdna_sim_power_up(int* modes) {
  aie_shim::modes m;
  modes[0] = int(m.round);
  modes[1] = int(m.sat);
}

int xdna_sim_call(const xdna_sim_slot* s, int gen, int fn, const uint8_t* w, const int32_t* rec, float* acc,
                  float* out, int32_t t, int32_t first, int* modes, char* err, int errlen) {
  aie_shim::gen = gen;
  aie_shim::clear_error();
  aie_shim::modes core{aie::rounding_mode(modes[0]), aie::saturation_mode(modes[1])};
  aie_shim::modes host = aie_shim::swap(core);
  switch (fn) {
    case XDNA_SIM_INIT: s->init(); break;
    case XDNA_SIM_ACC: s->acc(w, rec, acc, t, first); break;
    case XDNA_SIM_OUT: s->out(w, rec, acc, out, t, first); break;
  }
  core = aie_shim::swap(host);
  modes[0] = int(core.round);
  modes[1] = int(core.sat);
  const char* e = aie_shim::error();
  if (!e[0]) return 0;
  int i = 0;
  for (; e[i] && i + 1 < errlen; i++) err[i] = e[i];
  if (errlen > 0) err[i] = 0;
  return -1;
}

}  // extern "C"
