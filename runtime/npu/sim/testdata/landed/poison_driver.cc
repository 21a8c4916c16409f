// Runs the landed xdna1_run (rows = piece = 32: one 32-row object, the same bytes as a
// gemv.Piece of 32 rows) for every format on fixed pseudo-random data and prints the
// outputs (TestLandedKernelDefects; the landed kernels are those of commit ebb5cac).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cmath>
extern "C" int xdna1_run(int fmt, unsigned T, const uint8_t* w, unsigned rows, unsigned piece, unsigned tiles,
                         const uint8_t* acts, unsigned rec_stride, unsigned tokens, float* y, char* err, int errlen);
extern "C" unsigned xdna1_obj_bytes(int fmt, unsigned T, unsigned rp);
static uint32_t s = 12345;
static uint32_t rnd() { s = s * 1664525u + 1013904223u; return s >> 8; }
static uint16_t f16(float f) { // small normal f16: exponent 10..14, any mantissa
  (void)f; return uint16_t(((rnd() % 5 + 10) << 10) | (rnd() & 1023) | ((rnd() & 1) << 15)); }
int main() {
  int fmts[] = {2, 6, 8, 12, 13, 14};
  for (int fmt : fmts) {
    unsigned T = 256, ob = xdna1_obj_bytes(fmt, T, 32);
    alignas(64) static uint8_t w[65536], a[4096];
    alignas(64) static float y[64];
    for (unsigned i = 0; i < ob; i++) w[i] = uint8_t(rnd());
    // every 2-byte pair of the last planes as a sane f16 (scales, d/dmin)
    unsigned tail = fmt == 2 ? 4096 : fmt == 6 ? 4096 + 1024 : fmt == 8 ? 8192 : fmt == 12 ? 4096 + 512 : fmt == 13 ? 4096 + 1024 + 512 : 8192 + 512;
    for (unsigned i = tail; i + 1 < ob; i += 2) { uint16_t h = f16(0); w[i] = uint8_t(h); w[i + 1] = uint8_t(h >> 8); }
    bool k = fmt >= 12;
    unsigned stride = k ? 256 + 64 + 64 : 256 + 64;
    for (unsigned i = 0; i < 256; i++) a[i] = uint8_t(rnd());
    if (k) { float d = 0.01f; std::memcpy(a + 256, &d, 4); for (unsigned i = 0; i < 16; i++) { int16_t b = int16_t(rnd() % 4096) - 2048; std::memcpy(a + 320 + 2 * i, &b, 2); } }
    else for (unsigned i = 0; i < 8; i++) { uint16_t h = f16(0); std::memcpy(a + 256 + 2 * i, &h, 2); }
    char err[256] = "";
    int rc = xdna1_run(fmt, T, w, 32, 32, 1, a, stride, 1, y, err, sizeof err);
    std::printf("fmt %d rc %d nan", fmt, rc);
    int nan = 0;
    for (int r = 0; r < 32; r++) nan += std::isnan(y[r]);
    std::printf(" %d y", nan);
    for (int r = 0; r < 32; r++) std::printf(" %a", y[r]);
    std::printf(" %s\n", err);
  }
}
