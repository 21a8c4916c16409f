// The landed device entry (gemv_tile, as kernels/build.sh compiled it for xdna1 Q5_K:
// PIECE_ROWS 96, CORE_ROWS 128) called as design.py's core body did: piece 1 of 2 of
// the core's 128 rows, 2 tokens, y [tokens][CORE_ROWS] f32 with a guard band after.
#include <cstdint>
#include <cstdio>
#include <cstring>
extern "C" void gemv_tile(const uint8_t* w, const uint8_t* acts, float* y, int32_t piece, int32_t tokens, int32_t tile);
int main() {
  alignas(64) static uint8_t w[65536], a[4096];
  alignas(64) static float buf[2 * 128 + 128];
  for (float& f : buf) f = -7.0f;  // sentinel
  gemv_tile(w, a, buf, 1, 2, 0);    // zero weights: every row it writes becomes 0
  int own = 0, next = 0, past = 0;
  for (int i = 0; i < 2 * 128 + 128; i++) {
    if (buf[i] == -7.0f) continue;
    int tok = i / 128, row = i % 128;
    if (i >= 256) past++;
    else if ((tok == 0 && row >= 96) || (tok == 1 && row >= 96)) own++;
    else next++;
  }
  std::printf("piece 1 wrote %d floats in its rows (96..127 of each token), %d in rows 0..95 (token 1's rows 0..63 from token 0), %d past y [2][128]\n", own, next, past);
  return next || past;
}
