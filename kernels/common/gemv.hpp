// xdna GEMV kernels: the code shared by XDNA1 (AIE2) and XDNA2 (AIE2P), on the gemv
// contract (runtime/npu/gemv, docs/NPU.md section 2): one call multiplies one weight
// piece of V rows (V = the lanes: 32 on AIE2, 64 on AIE2P; lanes are rows) of one
// K-tile of T inputs by one token's activation record, and stores or adds the V
// partial sums.
//
// Compile-time slot: every function here is a template on the format F (the ggml type
// id), V and T; kernels/common/entry.inc instantiates exactly one (F, V, T) per object
// file (the device build) and never switches over formats at run time, so a core's
// program memory holds one format's code.
//
// The piece (gemv.Piece with Rows = V): the format's planes in order, each on 64
// bytes; a plane of P bytes a row keeps, when P % 4 == 0, 4-byte word j of row r at
// 4*(j*V + r) (one 512-bit load is word j of 16 consecutive rows), and otherwise (Q6_K's
// d at T = 256: P = 2) row r's P bytes at r*P. The record (gemv.Record): int8 codes
// [T] at 0; Q8_0 kind: f16 d per 32 at scales; Q8_K kind: f32 d per 256 at scales and
// int16 sums per 16 at sums; each plane on 64 bytes.
//
// Arithmetic, per row (lane), exactly gemv.Model's (which is package cpu's): integer
// dot products per block exact in acc32, one f32 rescale per block or super-block,
// blocks added in order from zero into the tile's partial, then y = part (first) or
// acc + part. Every f32 product and sum rounds on its own (no fused multiply-add).
#pragma once

#if defined(XDNA_SIM)
// Host simulation: no fused multiply-add, every f32 product and sum rounds on its own
// as the Go model's (cgo refuses -ffp-contract=off as a flag, so the pragmas say it).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#endif

#include <aie_api/aie.hpp>
#include <cstdint>
#include <cstring>  // std::memcpy: aie.hpp does not include it

// XDNA_ROLLED keeps the loop after it rolled on the device (Peano is clang): with
// every constant-count loop unrolled the K-quant kernels of 64 lanes would outgrow the
// 16 KiB program memory (runtime/npu/gemv/budget.go). XDNA_NOINLINE keeps one copy of
// the tile's arithmetic for both entry points that use it.
#if defined(__clang__)
#define XDNA_ROLLED _Pragma("clang loop unroll(disable)")
#else
#define XDNA_ROLLED
#endif
#define XDNA_NOINLINE __attribute__((noinline))
// XDNA_INLINE: the helpers fold into tile_part's frame (aie_api's own functions are
// always inline), so the frame bound of budget.go covers the whole call.
#define XDNA_INLINE __attribute__((always_inline)) inline

namespace xdna {

constexpr unsigned a64(unsigned n) { return (n + 63u) & ~63u; }

// The ggml type ids of the formats (planar.Type).
enum : int { Q4_0 = 2, Q5_0 = 6, Q8_0 = 8, Q4_K = 12, Q5_K = 13, Q6_K = 14 };

// plane_bytes is the bytes one row has in plane i of format F for a K-tile of T (the
// planar formats of docs/FORMAT.md section 4; planar.formats), 0 past the last plane.
template <int F> constexpr unsigned plane_bytes(unsigned i, unsigned T) {
  if constexpr (F == Q4_0) return i == 0 ? T / 2 : i == 1 ? T / 16 : 0;                             // codes, scales
  else if constexpr (F == Q5_0) return i == 0 ? T / 2 : i == 1 ? T / 8 : i == 2 ? T / 16 : 0;      // codes, high, scales
  else if constexpr (F == Q8_0) return i == 0 ? T : i == 1 ? T / 16 : 0;                           // codes, scales
  else if constexpr (F == Q4_K) return i == 0 ? T / 2 : i == 1 ? T / 16 : i == 2 ? T / 64 : 0;     // codes, scalemins, dmin
  else if constexpr (F == Q5_K)
    return i == 0 ? T / 2 : i == 1 ? T / 8 : i == 2 ? T / 16 : i == 3 ? T / 64 : 0;                  // codes, high, scalemins, dmin
  else if constexpr (F == Q6_K) return i == 0 ? T : i == 1 ? T / 16 : i == 2 ? T / 128 : 0;        // codes, scales, d
  else static_assert(F == Q4_0, "xdna: no GEMV kernel for this format");
}

// piece is the layout of one weight piece of V rows: the offset of every plane and
// the size, computed from the format alone (gemv.PieceOf).
template <int F, unsigned V, unsigned T> struct piece {
  static constexpr unsigned planes = plane_bytes<F>(3, T) ? 4 : plane_bytes<F>(2, T) ? 3 : 2;
  static constexpr unsigned off(unsigned i) { return i == 0 ? 0 : off(i - 1) + a64(V * plane_bytes<F>(i - 1, T)); }
  static constexpr unsigned bytes = off(planes);
};

// record is the layout of one token's activation record of a K-tile of T
// (gemv.RecordOf): Q8_0 kind for the 32-blocks, Q8_K kind for the K-quants.
template <int F, unsigned T> struct record {
  static constexpr bool k_kind = F == Q4_K || F == Q5_K || F == Q6_K;
  static constexpr unsigned scales = a64(T);
  static constexpr unsigned sums = k_kind ? scales + a64(4 * (T / 256)) : 0;
  static constexpr unsigned stride = k_kind ? sums + a64(2 * (T / 16)) : scales + a64(2 * (T / 32));
};

// Scalar reads of the record (the scalar unit; any alignment).
XDNA_INLINE int16_t ld16(const uint8_t* p) { return int16_t(uint16_t(p[0] | p[1] << 8)); }
XDNA_INLINE uint32_t ld32(const uint8_t* p) { return uint32_t(p[0] | p[1] << 8 | p[2] << 16) | uint32_t(p[3]) << 24; }

// f16s converts one f16 exactly (scalar), Inf and NaN included.
XDNA_INLINE float f16s(uint16_t h) {
  uint32_t s = uint32_t(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023, u;
  if (e == 31) {
    u = s | 0x7f800000u | m << 13;
  } else if (e == 0) {
    float v = float(m) * (1.0f / 16777216.0f);  // m * 2^-24, exact
    return s ? -v : v;
  } else {
    u = s | (e + 112) << 23 | m << 13;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
XDNA_INLINE float f32s(const uint8_t* p) {
  uint32_t u = ld32(p);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// words16 is word j of rows [16s, 16s+16) of a word-interleaved plane of V rows.
template <unsigned V> XDNA_INLINE aie::vector<int32_t, 16> words16(const uint8_t* plane, unsigned j, unsigned s) {
  return aie::load_v<16>(reinterpret_cast<const int32_t*>(plane) + j * V + 16 * s);
}

// lanes joins part(s), s < V/16 (16 rows each), into one vector of V lanes.
template <unsigned V, typename P> XDNA_INLINE auto lanes(P part) {
  static_assert(V == 32 || V == 64, "xdna: 32 or 64 lanes");
  if constexpr (V == 32) return aie::concat(part(0u), part(1u));
  else return aie::concat(part(0u), part(1u), part(2u), part(3u));
}

// low8 is the low byte of every int32 lane, as int8 lanes: cast_to (a documented bit
// reinterpretation, little-endian) then keep byte 0 of every 4.
XDNA_INLINE aie::vector<int8_t, 16> low8(const aie::vector<int32_t, 16>& w) {
  aie::vector<int8_t, 64> b = w.cast_to<int8_t>();
  return aie::filter_even(aie::filter_even(b, 1), 1);
}

// field is (word j >> shift) & mask of the V rows, as int8 lanes (mask < 128, or -1
// for a whole signed byte at shift 8k).
template <unsigned V> XDNA_INLINE aie::vector<int8_t, V> field(const uint8_t* plane, unsigned j, unsigned shift, int32_t mask) {
  return lanes<V>([&](unsigned s) __attribute__((always_inline)) {
    aie::vector<int32_t, 16> w = aie::downshift(words16<V>(plane, j, s), shift);
    return low8(mask == -1 ? w : aie::bit_and(w, mask));
  });
}

// f16bits converts f16 bit patterns (int32 lanes, 0..0xffff) to f32 exactly, Inf and
// NaN included, with integer lane operations and one fixed-point to_float for the
// subnormals: normal e in 1..30: sign | (e+112)<<23 | m<<13; e = 31: sign |
// 0xff<<23 | m<<13; e = 0: sign | bits(m * 2^-24).
XDNA_INLINE aie::vector<float, 16> f16bits(const aie::vector<int32_t, 16>& h) {
  using namespace aie;
  vector<int32_t, 16> e = bit_and(downshift(h, 10), 31);
  vector<int32_t, 16> m = bit_and(h, 1023);
  vector<int32_t, 16> inf = downshift(add(e, 1), 5);                         // 1 where e = 31
  vector<int32_t, 16> ex = add(add(e, 112), sub(upshift(inf, 7), upshift(inf, 4)));  // e + 112 (+112 at e = 31)
  vector<int32_t, 16> norm = bit_or(upshift(ex, 23), upshift(m, 13));
  vector<int32_t, 16> subn = to_float<float>(m, 24).cast_to<int32_t>();      // exact: m < 2^10
  vector<int32_t, 16> isn = sub(zeros<int32_t, 16>(), min(e, 1));           // all ones where e > 0
  vector<int32_t, 16> mag = bit_or(bit_and(norm, isn), bit_and(subn, bit_not(isn)));
  // The sign bit without a shift into bit 31 (which a saturating upshift would clip):
  // 0 - (h >> 15) is all ones for a negative f16, masked to 0x80000000.
  vector<int32_t, 16> sign = bit_and(sub(zeros<int32_t, 16>(), downshift(h, 15)), int32_t(0x80000000u));
  return bit_or(mag, sign).cast_to<float>();
}

// half is f16 number idx of every row of a plane of P bytes a row, as f32 lanes.
template <unsigned V, unsigned P> XDNA_INLINE aie::vector<float, V> half(const uint8_t* plane, unsigned idx) {
  if constexpr (P % 4 == 0) {
    return lanes<V>([&](unsigned s) __attribute__((always_inline)) {
      aie::vector<int32_t, 16> w = aie::downshift(words16<V>(plane, idx / 2, s), 16 * (idx & 1));
      return f16bits(aie::bit_and(w, 0xffff));
    });
  } else {
    static_assert(P == 2, "xdna: a row-major f16 plane has one f16 a row");
    (void)idx;  // the only f16 of the row
    return lanes<V>([&](unsigned s) __attribute__((always_inline)) {
      aie::vector<int16_t, 16> h = aie::load_v<16>(reinterpret_cast<const int16_t*>(plane) + 16 * s);
      aie::vector<int32_t, 16> w = aie::accum<aie::acc32, 16>(h).to_vector<int32_t>(0);  // sign-extends, exact
      return f16bits(aie::bit_and(w, 0xffff));
    });
  }
}

// rescale returns part + float(isum) * (d_w * d_x), each step rounded (the Model's
// acc += float32(isum) * (d_w*d_x)).
template <unsigned V>
XDNA_INLINE aie::vector<float, V> rescale(const aie::vector<float, V>& part, const aie::vector<int32_t, V>& isum,
                              const aie::vector<float, V>& dw, float dx) {
  using namespace aie;
  vector<float, V> s = mul(dw, dx).template to_vector<float>();
  return add(part, mul(to_float<float>(isum, 0), s).template to_vector<float>());
}

// ---------------------------------------------------------------------------------
// Q4_0, Q5_0 and Q8_0: per block b of 32, one acc32 chain of 32 int8 x int8 macs with
// the activation code as the scalar operand (Q4_0: q-8; Q5_0: (lo | hi<<4) - 16; Q8_0:
// q; all exact in int8), then one rescale.
template <int F, unsigned V, unsigned T> XDNA_INLINE aie::vector<float, V> part_q0(const uint8_t* w, const uint8_t* rec) {
  using namespace aie;
  using L = piece<F, V, T>;
  using R = record<F, T>;
  constexpr unsigned SP = F == Q5_0 ? 2 : 1;  // the scales plane
  const uint8_t* codes = w;
  const int8_t* x = reinterpret_cast<const int8_t*>(rec);
  vector<float, V> part = zeros<float, V>();
  XDNA_ROLLED
  for (unsigned b = 0; b < T / 32; b++) {
    accum<acc32, V> acc = zeros<acc32, V>();
    const int8_t* xb = x + 32 * b;
    if constexpr (F == Q8_0) {
      XDNA_ROLLED
      for (unsigned i = 0; i < 32; i++) acc = mac(acc, field<V>(codes, 8 * b + i / 4, 8 * (i % 4), -1), xb[i]);
    } else {
      XDNA_ROLLED
      for (unsigned i = 0; i < 32; i++) {  // element i: nibble i%8 of code word i/8
        vector<int8_t, V> q = field<V>(codes, 4 * b + i / 8, 4 * (i % 8), 15);
        if constexpr (F == Q5_0) {
          q = bit_or(q, upshift(field<V>(w + L::off(1), b, i, 1), 4));  // bit i of high word b
          q = sub(q, int8_t(16));
        } else {
          q = sub(q, int8_t(8));
        }
        acc = mac(acc, q, xb[i]);
      }
    }
    float dx = f16s(uint16_t(ld16(rec + R::scales + 2 * b)));
    part = rescale<V>(part, acc.template to_vector<int32_t>(0), half<V, plane_bytes<F>(SP, T)>(w + L::off(SP), b), dx);
  }
  return part;
}

// Q4_K and Q5_K: per super-block s of 256: sumi = sum_j sc_j * sum_32(q*x) as one
// acc32 chain of int16 macs of (q*sc_j) (q <= 31, sc <= 255: <= 7905, exact in int16)
// with x; summ = sum_j m_j * (bsum_2j + bsum_2j+1) as a second chain (m_j x the int16
// sums, one mac each); then part += (d*dx)*float(sumi) - (dmin*dx)*float(summ), each step rounded.
// float(sumi) rounds above 2^24: xdna_gemv_init sets conv_even, the Model's rounding.
template <int F, unsigned V, unsigned T> XDNA_INLINE aie::vector<float, V> part_qk(const uint8_t* w, const uint8_t* rec) {
  using namespace aie;
  using L = piece<F, V, T>;
  using R = record<F, T>;
  constexpr bool Q5 = F == Q5_K;
  constexpr unsigned SM = Q5 ? 2 : 1, DM = SM + 1;  // scalemins, dmin planes
  const uint8_t* codes = w;
  const uint8_t* sm = w + L::off(SM);
  const int8_t* x = reinterpret_cast<const int8_t*>(rec);
  vector<float, V> part = zeros<float, V>();
  XDNA_ROLLED
  for (unsigned s = 0; s < T / 256; s++) {
    accum<acc32, V> acc = zeros<acc32, V>();
    accum<acc32, V> macc = zeros<acc32, V>();
    XDNA_ROLLED
    for (unsigned j = 0; j < 8; j++) {
      // sc_j and m_j are bytes (u6 in a valid file; any byte is computed exactly).
      vector<int16_t, V> sc = unpack(field<V>(sm, 4 * s + j / 4, 8 * (j % 4), -1).template cast_to<uint8_t>()).template cast_to<int16_t>();
      vector<int16_t, V> mn = unpack(field<V>(sm, 4 * s + 2 + j / 4, 8 * (j % 4), -1).template cast_to<uint8_t>()).template cast_to<int16_t>();
      const int8_t* xj = x + 256 * s + 32 * j;
      XDNA_ROLLED
      for (unsigned i = 0; i < 32; i++) {
        vector<int8_t, V> q = field<V>(codes, 32 * s + 4 * j + i / 8, 4 * (i % 8), 15);
        if constexpr (Q5) q = bit_or(q, upshift(field<V>(w + L::off(1), 8 * s + j, i, 1), 4));
        vector<int16_t, V> qs = mul(unpack(q), sc).template to_vector<int16_t>(0);
        acc = mac(acc, qs, int16_t(xj[i]));
      }
      const uint8_t* bs = rec + R::sums + 2 * (16 * s + 2 * j);
      macc = mac(macc, mn, ld16(bs));
      macc = mac(macc, mn, ld16(bs + 2));
    }
    float dx = f32s(rec + R::scales + 4 * s);
    constexpr unsigned PD = plane_bytes<F>(DM, T);
    aie::vector<float, V> dd = mul(half<V, PD>(w + L::off(DM), 2 * s), dx).template to_vector<float>();
    aie::vector<float, V> dmin = mul(half<V, PD>(w + L::off(DM), 2 * s + 1), dx).template to_vector<float>();
    vector<float, V> a = mul(dd, to_float<float>(acc.template to_vector<int32_t>(0), 0)).template to_vector<float>();
    vector<float, V> c = mul(dmin, to_float<float>(macc.template to_vector<int32_t>(0), 0)).template to_vector<float>();
    part = add(part, sub(a, c));
  }
  return part;
}

// Q6_K: per super-block s: sumi = sum_g sc_g * sum_16(q*x) as one acc32 chain of int16
// macs of (q*sc_g) (int8 codes and scales: |q*sc| <= 16384, exact in int16) with x, then part += float(sumi) *
// (d*dx).
template <int F, unsigned V, unsigned T> XDNA_INLINE aie::vector<float, V> part_q6k(const uint8_t* w, const uint8_t* rec) {
  using namespace aie;
  using L = piece<F, V, T>;
  using R = record<F, T>;
  const uint8_t* codes = w;
  const uint8_t* scales = w + L::off(1);
  const int8_t* x = reinterpret_cast<const int8_t*>(rec);
  vector<float, V> part = zeros<float, V>();
  XDNA_ROLLED
  for (unsigned s = 0; s < T / 256; s++) {
    accum<acc32, V> acc = zeros<acc32, V>();
    XDNA_ROLLED
    for (unsigned g = 0; g < 16; g++) {
      vector<int16_t, V> sc = unpack(field<V>(scales, 4 * s + g / 4, 8 * (g % 4), -1));
      const int8_t* xg = x + 256 * s + 16 * g;
      XDNA_ROLLED
      for (unsigned i = 0; i < 16; i++) {
        vector<int16_t, V> qs = mul(unpack(field<V>(codes, 64 * s + 4 * g + i / 4, 8 * (i % 4), -1)), sc).template to_vector<int16_t>(0);
        acc = mac(acc, qs, int16_t(xg[i]));
      }
    }
    float dx = f32s(rec + R::scales + 4 * s);
    part = rescale<V>(part, acc.template to_vector<int32_t>(0), half<V, plane_bytes<F>(2, T)>(w + L::off(2), s), dx);
  }
  return part;
}

// part is the tile partial of V rows: piece w against record rec.
template <int F, unsigned V, unsigned T> XDNA_NOINLINE aie::vector<float, V> tile_part(const uint8_t* w, const uint8_t* rec) {
  if constexpr (F == Q4_0 || F == Q5_0 || F == Q8_0) return part_q0<F, V, T>(w, rec);
  else if constexpr (F == Q4_K || F == Q5_K) return part_qk<F, V, T>(w, rec);
  else return part_q6k<F, V, T>(w, rec);
}

// The three functions of the contract (gemv.FnInit, FnAcc, FnOut).

// init sets the modes the kernels rely on: rounding conv_even (float(sumi) of the
// K-quants above 2^24 rounds to nearest even, as the Model's float32(int32)) and
// saturation saturate (no integer step here can overflow; if one did, saturating is
// the visible failure). A core's modes are floor and none until it runs this.
XDNA_INLINE void gemv_init() {
  aie::set_rounding(aie::rounding_mode::conv_even);
  aie::set_saturation(aie::saturation_mode::saturate);
}

// acc: acc[t*V + r] = part(r) on the first K-tile, else acc[t*V + r] + part(r).
template <int F, unsigned V, unsigned T>
XDNA_INLINE void gemv_acc(const uint8_t* w, const int32_t* rec, float* acc, int32_t t, int32_t first) {
  aie::vector<float, V> p = tile_part<F, V, T>(w, reinterpret_cast<const uint8_t*>(rec));
  float* y = acc + unsigned(t) * V;
  aie::store_v(y, first ? p : aie::add(aie::load_v<V>(y), p));
}

// out: out[r] = part(r) on the first K-tile, else acc[t*V + r] + part(r).
template <int F, unsigned V, unsigned T>
XDNA_INLINE void gemv_out(const uint8_t* w, const int32_t* rec, const float* acc, float* out, int32_t t, int32_t first) {
  aie::vector<float, V> p = tile_part<F, V, T>(w, reinterpret_cast<const uint8_t*>(rec));
  aie::store_v(out, first ? p : aie::add(aie::load_v<V>(acc + unsigned(t) * V), p));
}

}  // namespace xdna
