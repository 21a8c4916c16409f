// The C interface between package sim and the kernel slots compiled for this machine
// (xdna1.cc, xdna2.cc, sim.cc; a -tags sim build).
#ifndef XDNA_SIM_H
#define XDNA_SIM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

// xdna_sim_slot is one compiled kernel slot: its format (ggml type id), K-tile and
// lanes, and its entry points (kernels/common/entry.inc).
typedef struct {
  int fmt, k_tile, lanes;
  void (*init)(void);
  void (*acc)(const uint8_t* w, const int32_t* rec, float* acc, int32_t t, int32_t first);
  void (*out)(const uint8_t* w, const int32_t* rec, const float* acc, float* out, int32_t t, int32_t first);
  unsigned (*layout)(unsigned* off);
} xdna_sim_slot;

extern const xdna_sim_slot xdna1_slots[];
extern const int xdna1_nslots;
extern const xdna_sim_slot xdna2_slots[];
extern const int xdna2_nslots;

// The functions of xdna_sim_call.
enum { XDNA_SIM_INIT = 0, XDNA_SIM_ACC = 1, XDNA_SIM_OUT = 2 };

// xdna_sim_call runs function fn of slot s for one core: with the aie_api rules of
// generation gen (1 or 2) and the core's rounding and saturation modes modes[0..1]
// (updated with what the kernel leaves). It returns 0, or -1 with the first broken
// aie_api rule (a misaligned load, ...) in err.
int xdna_sim_call(const xdna_sim_slot* s, int gen, int fn, const uint8_t* w, const int32_t* rec, float* acc,
                  float* out, int32_t t, int32_t first, int* modes, char* err, int errlen);

// xdna_sim_layout calls s->layout (plane offsets, piece bytes, record geometry).
unsigned xdna_sim_layout(const xdna_sim_slot* s, unsigned* off);

// xdna_sim_power_up writes the modes a core has at power-up into modes[0..1].
void xdna_sim_power_up(int* modes);

#ifdef __cplusplus
}
#endif
#endif
