// The landed device entry for xdna1 Q4_K (one 32-row piece, one token, first tile) on a
// row whose sumi is 124354575 (not a float32): the device path never sets the rounding
// mode, so the core converts it under its power-up floor mode.
#include <cstdint>
#include <cstdio>
#include <cstring>
extern "C" void gemv_tile(const uint8_t* w, const uint8_t* acts, float* y, int32_t piece, int32_t tokens, int32_t tile);
int main() {
  const unsigned V = 32;
  alignas(64) static uint8_t w[65536], a[4096];
  alignas(64) static float y[32];
  // codes plane: 128 bytes a row word-interleaved; all 0xFF (every code 15)
  std::memset(w, 0xFF, 128 * V);
  uint8_t* sm = w + 128 * V;       // scalemins: 16 bytes a row, words
  for (unsigned r = 0; r < V; r++)
    for (unsigned b = 0; b < 16; b++) sm[4 * ((b / 4) * V + r) + b % 4] = b < 8 ? 255 : 0;
  uint8_t* dm = sm + 16 * V;       // dmin: d = 1.0 (0x3c00), dmin = 0
  for (unsigned r = 0; r < V; r++) { dm[4 * r] = 0x00; dm[4 * r + 1] = 0x3c; dm[4 * r + 2] = 0; dm[4 * r + 3] = 0; }
  std::memset(a, 127, 256);
  a[0] = 126;
  float one = 1.0f;
  std::memcpy(a + 256, &one, 4);
  gemv_tile(w, a, y, 0, 1, 0);
  std::printf("y[0] = %.1f (float32(124354575) = %.1f)\n", y[0], float(124354575));
  return y[0] != float(124354575);
}
