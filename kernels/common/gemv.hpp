// xdna GEMV kernels: the code shared by XDNA1 (AIE2) and XDNA2 (AIE2P), templated on
// the lane count V (output rows per vector: 32 on AIE2, 64 on AIE2P) and the K-tile T.
//
// One core, one call of a tile kernel (gemv_<fmt>_tile): the V-row groups of one weight
// object (a piece of at most kernels/l1.tsv's rows of the core's share of one (row
// chunk, K-tile) object) times the activation records of every token of that tile, into
// the core's f32 accumulators y[token*ystride + row] (first tile stores, later tiles
// add: CONTRACT.md "Output stream"). Arithmetic, per row, token and block, is exactly
// runtime/npu/emu/kernel.go's (integer dot products exact in acc32, one f32 rescale per
// block, blocks summed in order from 0 into the tile's partial, the partial added to y),
// so the output equals the Go model bit for bit wherever IEEE binary32 multiply is what
// the device computes (ref #25: AIE-ML/AIE2P emulate it with bf16 products).
//
// Lanes are output rows. The core's L1 copy of its share of the object ("core layout",
// produced by the memtile DMA from the contract's stream, see kernels/README.md):
//   rows_pad = the core's rows rounded up to V (zero rows appended);
//   planes in format order, each starting on 64 bytes, plane p of P bytes per row:
//     P % 4 == 0: word-interleaved: 4-byte word j of row r at byte 4*(j*rows_pad + r),
//                 so one aligned load gives word j of 16 consecutive rows;
//     P == 2    : row-major (row r at byte 2r), already one f16 per lane.
// Activation records (CONTRACT.md): one per token, ActLayoutOf(type, T), back to back.
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

namespace xdna {

constexpr unsigned a64(unsigned n) { return (n + 63u) & ~63u; }

// Activation record geometry (runtime/npu/act.go ActLayoutOf) for a K-tile of T.
template <unsigned T> struct q80_rec {  // Q8_0 kind: codes [T]i8 @0, d [T/32]f16 @scales
  static constexpr unsigned scales = a64(T);
  static constexpr unsigned stride = scales + a64(2 * (T / 32));
};
template <unsigned T> struct q8k_rec {  // Q8_K kind: codes @0, d [T/256]f32, bsums [T/16]i16
  static constexpr unsigned scales = a64(T);
  static constexpr unsigned sums = scales + a64(4 * (T / 256));
  static constexpr unsigned stride = sums + a64(2 * (T / 16));
};

inline int16_t ld16(const uint8_t* p) { return int16_t(uint16_t(p[0] | p[1] << 8)); }
inline uint32_t ld32(const uint8_t* p) { return uint32_t(p[0] | p[1] << 8 | p[2] << 16) | uint32_t(p[3]) << 24; }

// f16s converts one f16 (scalar unit) exactly, Inf and NaN included.
inline float f16s(uint16_t h) {
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
inline float f32s(const uint8_t* p) {
  uint32_t u = ld32(p);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f16v converts f16 lanes (bits in int16) to f32 exactly for finite values:
// value = (m + 1024*[e>0]) * 2^(max(e,1)-25), sign copied. Inf/NaN scales (e = 31)
// come out finite; no GGUF quantiser writes them (the Go model would give Inf/NaN).
template <unsigned V> aie::vector<float, V> f16v(const aie::vector<int16_t, V>& h16) {
  using namespace aie;
  vector<int32_t, V> h = accum<acc32, V>(h16).template to_vector<int32_t>(0);
  h = bit_and(h, 0xffff);
  vector<int32_t, V> e = bit_and(downshift(h, 10), 31);
  vector<int32_t, V> sig = add(bit_and(h, 1023), upshift(min(e, 1), 10));
  vector<int32_t, V> pw = upshift(add(max(e, 1), 102), 23);  // 2^(max(e,1)-25) as f32 bits
  vector<float, V> p = accum<accfloat, V>(pw).template to_vector<float>();  // bit reinterpretation (ref #10)
  vector<float, V> mag = mul(to_float<float>(sig, 0), p).template to_vector<float>();  // exact
  vector<int32_t, V> sign = upshift(bit_and(h, 0x8000), 16);
  return bit_or(mag.template cast_to<int32_t>(), sign).template cast_to<float>();
}

// Core-layout plane access. wd(p, rows_pad, j, r0) is word j of rows r0..r0+15.
inline const int32_t* wd(const uint8_t* plane, unsigned rows_pad, unsigned j, unsigned r0) {
  return reinterpret_cast<const int32_t*>(plane + 4u * (j * rows_pad + r0));
}

// join16 concatenates V/16 vectors of 16 lanes into one of V lanes.
template <unsigned V, typename T> aie::vector<T, V> join16(const aie::vector<T, 16>* p) {
  if constexpr (V == 16) return p[0];
  else if constexpr (V == 32) return aie::concat(p[0], p[1]);
  else return aie::concat(p[0], p[1], p[2], p[3]);
}

// u4w: word j of rows [r0, r0+V) of a 4-bit plane as 8 int8 lane vectors, q[e] the
// code of element 8j+e (values 0..15). Per 16 rows: one 512-bit load, unpack, three
// levels of filter_even/filter_odd (de-interleave 8 elements per row), then concat.
template <unsigned V> void u4w(const uint8_t* plane, unsigned rows_pad, unsigned j, unsigned r0,
                               aie::vector<int8_t, V> q[8]) {
  using namespace aie;
  vector<int8_t, 16> part[8][V / 16];
  for (unsigned s = 0; s < V / 16; s++) {
    vector<int32_t, 16> w = load_v<16>(wd(plane, rows_pad, j, r0 + 16 * s));
    vector<int8_t, 128> b = unpack(w.template cast_to<uint4>()).template cast_to<int8_t>();  // [row][8]
    vector<int8_t, 64> ev = filter_even(b, 1), od = filter_odd(b, 1);
    vector<int8_t, 32> e0 = filter_even(ev, 1), e1 = filter_odd(ev, 1), o0 = filter_even(od, 1), o1 = filter_odd(od, 1);
    part[0][s] = filter_even(e0, 1), part[4][s] = filter_odd(e0, 1);
    part[2][s] = filter_even(e1, 1), part[6][s] = filter_odd(e1, 1);
    part[1][s] = filter_even(o0, 1), part[5][s] = filter_odd(o0, 1);
    part[3][s] = filter_even(o1, 1), part[7][s] = filter_odd(o1, 1);
  }
  for (unsigned e = 0; e < 8; e++) q[e] = join16<V>(part[e]);
}

// b8w: word j of rows [r0, r0+V) of a byte plane as 4 lane vectors of T8 (int8 or
// uint8), q[e] = byte e of the word.
template <unsigned V, typename T8> void b8w(const uint8_t* plane, unsigned rows_pad, unsigned j, unsigned r0,
                                            aie::vector<T8, V> q[4]) {
  using namespace aie;
  vector<T8, 16> part[4][V / 16];
  for (unsigned s = 0; s < V / 16; s++) {
    vector<T8, 64> b = load_v<16>(wd(plane, rows_pad, j, r0 + 16 * s)).template cast_to<T8>();
    vector<T8, 32> ev = filter_even(b, 1), od = filter_odd(b, 1);
    part[0][s] = filter_even(ev, 1), part[2][s] = filter_odd(ev, 1);
    part[1][s] = filter_even(od, 1), part[3][s] = filter_odd(od, 1);
  }
  for (unsigned e = 0; e < 4; e++) q[e] = join16<V>(part[e]);
}

// h16: f16 number idx of rows [r0, r0+V) of a plane of P bytes per row, as f32 lanes.
template <unsigned V> aie::vector<float, V> h16(const uint8_t* plane, unsigned P, unsigned rows_pad, unsigned idx,
                                                unsigned r0) {
  using namespace aie;
  if (P == 2) return f16v<V>(load_v<V>(reinterpret_cast<const int16_t*>(plane) + r0));
  vector<int16_t, 16> part[V / 16];
  for (unsigned s = 0; s < V / 16; s++) {
    vector<int16_t, 32> b = load_v<16>(wd(plane, rows_pad, idx / 2, r0 + 16 * s)).template cast_to<int16_t>();
    part[s] = (idx & 1) ? filter_odd(b, 1) : filter_even(b, 1);
  }
  return f16v<V>(join16<V>(part));
}

// bitsw: bit e (0..31) of word j of rows [r0, r0+V) as int16 lanes (0 or 1).
template <unsigned V> aie::vector<int16_t, V> bitsw(const uint8_t* plane, unsigned rows_pad, unsigned j, unsigned e,
                                                    unsigned r0) {
  using namespace aie;
  vector<int16_t, 16> part[V / 16];
  for (unsigned s = 0; s < V / 16; s++) {
    vector<int32_t, 16> w = bit_and(downshift(load_v<16>(wd(plane, rows_pad, j, r0 + 16 * s)), e), 1);
    part[s] = accum<acc32, 16>(w).template to_vector<int16_t>(0);
  }
  return join16<V>(part);
}

template <unsigned V> aie::vector<int16_t, V> widen(const aie::vector<int8_t, V>& v) { return aie::unpack(v); }
template <unsigned V> aie::vector<int16_t, V> widen(const aie::vector<uint8_t, V>& v) {
  return aie::unpack(v).template cast_to<int16_t>();
}

// sum4 adds four acc32 chains exactly (int32 lanes).
template <unsigned V> aie::vector<int32_t, V> sum4(const aie::accum<aie::acc32, V> a[4]) {
  using namespace aie;
  return add(add(a[0].template to_vector<int32_t>(0), a[1].template to_vector<int32_t>(0)),
             add(a[2].template to_vector<int32_t>(0), a[3].template to_vector<int32_t>(0)));
}

// store_y writes the tile's partial: y = part on the first tile, else y + part.
template <unsigned V> void store_y(float* y, const aie::vector<float, V>& part, bool first) {
  aie::store_v(y, first ? part : aie::add(aie::load_v<V>(y), part));
}

// each_group runs part(rec, x, r0) for every token's record (Stride bytes apart; x its
// int8 codes) and every group of V rows r0.., and stores the tile partial it returns
// into y[token*ystride + r0..] (the first tile) or adds it.
template <unsigned V, unsigned Stride, typename F>
void each_group(unsigned rows_pad, const uint8_t* acts, unsigned tokens, float* y, unsigned ystride, bool first,
                F part) {
  for (unsigned t = 0; t < tokens; t++) {
    const uint8_t* rec = acts + t * Stride;
    for (unsigned r0 = 0; r0 < rows_pad; r0 += V)
      store_y<V>(y + t * ystride + r0, part(rec, reinterpret_cast<const int8_t*>(rec), r0), first);
  }
}

// Block sum of 32 activation codes (exact in int16: |sum| <= 4064).
inline int32_t xsum32(const int8_t* x) { return aie::reduce_add(aie::unpack(aie::load_v<32>(x))); }

// ---------------------------------------------------------------------------------
// Planes per format in the core layout (bytes per row for a K-tile of T), the
// planar formats of docs/FORMAT.md section 4.
template <unsigned V, unsigned T> struct q4_0 {
  static constexpr unsigned P0 = T / 2, P1 = T / 16;  // codes, scales
  static unsigned bytes(unsigned rp) { return a64(rp * P0) + a64(rp * P1); }
};
template <unsigned V, unsigned T> struct q5_0 {
  static constexpr unsigned P0 = T / 2, P1 = T / 8, P2 = T / 16;  // codes, high, scales
  static unsigned bytes(unsigned rp) { return a64(rp * P0) + a64(rp * P1) + a64(rp * P2); }
};
template <unsigned V, unsigned T> struct q8_0 {
  static constexpr unsigned P0 = T, P1 = T / 16;
  static unsigned bytes(unsigned rp) { return a64(rp * P0) + a64(rp * P1); }
};
template <unsigned V, unsigned T> struct q4_k {
  static constexpr unsigned P0 = T / 2, P1 = T / 16, P2 = T / 64;  // codes, scalemins, dmin
  static unsigned bytes(unsigned rp) { return a64(rp * P0) + a64(rp * P1) + a64(rp * P2); }
};
template <unsigned V, unsigned T> struct q5_k {
  static constexpr unsigned P0 = T / 2, P1 = T / 8, P2 = T / 16, P3 = T / 64;
  static unsigned bytes(unsigned rp) { return a64(rp * P0) + a64(rp * P1) + a64(rp * P2) + a64(rp * P3); }
};
template <unsigned V, unsigned T> struct q6_k {
  static constexpr unsigned P0 = T, P1 = T / 16, P2 = T / 128;  // codes, scales, d
  static unsigned bytes(unsigned rp) { return a64(rp * P0) + a64(rp * P1) + a64(rp * P2); }
};

// ---------------------------------------------------------------------------------
// Q4_0 and Q5_0. Per V rows, token and block of 32: 4 code words -> 32 lane vectors
// (u4w), 32 mac(acc32, codes, x scalar) over 4 independent chains (element e -> chain
// e%4), isum = sum - 8*sum(x) (Q5_0: + 16*sum(x where bit) - 16*sum(x)), then one f32
// rescale: part += float(isum) * (d_w*d_x).
// Expected per core, AIE2 (V = 32), one block of 32 rows: 8 loads, 8 unpacks, 56
// shuffles (filter), 32 macs, ~12 rescale ops: ~60 cycles with the load/shuffle/mac
// slots overlapped (estimate, not measured) for 576 bytes = ~9.6 B/cycle against the
// ~2 B/cycle a core's share of the column stream delivers (32 GB/s / 16 cores at 1 GHz).
// Q5_0 adds 32 bit extractions and 32 macs per block (~2x the ops).
template <unsigned V, unsigned T, bool Q5>
void gemv_q40_tile(const uint8_t* w, unsigned rows_pad, const uint8_t* acts, unsigned tokens, float* y, unsigned ystride, bool first) {
  using namespace aie;
  using L = std::conditional_t<Q5, q5_0<V, T>, q4_0<V, T>>;
  using R = q80_rec<T>;
  const uint8_t* codes = w;
  const uint8_t* high = w + a64(rows_pad * L::P0);
  const uint8_t* scales = Q5 ? high + a64(rows_pad * (T / 8)) : high;
  constexpr unsigned PS = T / 16;
  each_group<V, R::stride>(rows_pad, acts, tokens, y, ystride, first, [&](const uint8_t* rec, const int8_t* x, unsigned r0) {
    vector<float, V> part = zeros<float, V>();
    for (unsigned b = 0; b < T / 32; b++) {
      const int8_t* xb = x + 32 * b;
      accum<acc32, V> acc[4] = {};
      vector<int8_t, V> q[8];
      for (unsigned k = 0; k < 4; k++) {
        u4w<V>(codes, rows_pad, 4 * b + k, r0, q);
        for (unsigned e = 0; e < 8; e++) acc[e % 4] = mac(acc[e % 4], q[e], xb[8 * k + e]);
      }
      int32_t sx = xsum32(xb);
      vector<int32_t, V> isum = sum4<V>(acc);
      if constexpr (Q5) {
        accum<acc32, V> hacc[4] = {};
        for (unsigned e = 0; e < 32; e++)
          hacc[e % 4] = mac(hacc[e % 4], bitsw<V>(high, rows_pad, b, e, r0), int16_t(xb[e]));
        isum = add(isum, upshift(sum4<V>(hacc), 4));
        isum = sub(isum, 16 * sx);
      } else {
        isum = sub(isum, 8 * sx);
      }
      float dx = f16s(uint16_t(ld16(rec + R::scales + 2 * b)));
      vector<float, V> s = mul(h16<V>(scales, PS, rows_pad, b, r0), dx).template to_vector<float>();
      part = add(part, mul(to_float<float>(isum, 0), s).template to_vector<float>());
    }
    return part;
  });
}

// Q8_0. Per V rows, token and block: 8 code words -> 32 int8 lane vectors (b8w), 32
// macs over 4 chains, one f32 rescale. Expected per core, AIE2 (V = 32), one block of 32
// rows: 8 loads, 48 shuffles, 32 macs, ~12 rescale ops: ~55 cycles for 1088 bytes
// (~20 B/cycle, estimate).
template <unsigned V, unsigned T>
void gemv_q80_tile(const uint8_t* w, unsigned rows_pad, const uint8_t* acts, unsigned tokens, float* y, unsigned ystride, bool first) {
  using namespace aie;
  using L = q8_0<V, T>;
  using R = q80_rec<T>;
  const uint8_t* codes = w;
  const uint8_t* scales = w + a64(rows_pad * L::P0);
  each_group<V, R::stride>(rows_pad, acts, tokens, y, ystride, first, [&](const uint8_t* rec, const int8_t* x, unsigned r0) {
    vector<float, V> part = zeros<float, V>();
    for (unsigned b = 0; b < T / 32; b++) {
      const int8_t* xb = x + 32 * b;
      accum<acc32, V> acc[4] = {};
      vector<int8_t, V> q[4];
      for (unsigned k = 0; k < 8; k++) {
        b8w<V, int8_t>(codes, rows_pad, 8 * b + k, r0, q);
        for (unsigned e = 0; e < 4; e++) acc[e] = mac(acc[e], q[e], xb[4 * k + e]);
      }
      float dx = f16s(uint16_t(ld16(rec + R::scales + 2 * b)));
      vector<float, V> s = mul(h16<V>(scales, L::P1, rows_pad, b, r0), dx).template to_vector<float>();
      part = add(part, mul(to_float<float>(sum4<V>(acc), 0), s).template to_vector<float>());
    }
    return part;
  });
}

// Q4_K and Q5_K. Per V rows, token and super-block of 256: the 8 sub-block scales and
// mins (4 words, b8w), d and dmin (1 word, two f16); per sub-block j, codes (Q5_K: +16
// x the high bit) widened to int16 and pre-multiplied by sc_j (q*sc <= 1953 fits int16,
// exact), then mac(acc32, q*sc, x) over 4 chains: sumi = sum_j sc_j * sum(q*x), exact
// (|sumi| < 2^31); summ = sum_j m_j * (bsum_2j + bsum_2j+1) by 8 macs with the Q8_K
// block sums. One f32 rescale: part += (d*dx)*float(sumi) - (dmin*dx)*float(summ).
// Expected per core, AIE2 (V = 32), one super-block of 32 rows: 32 loads, ~230
// shuffles, 256 muls + 256 macs (16-bit), ~20 rescale ops: ~300 cycles for 4736 bytes
// (~15 B/cycle, estimate); Q5_K adds 256 bit extractions.
template <unsigned V, unsigned T, bool Q5>
void gemv_qk_tile(const uint8_t* w, unsigned rows_pad, const uint8_t* acts, unsigned tokens, float* y, unsigned ystride, bool first) {
  using namespace aie;
  using R = q8k_rec<T>;
  const uint8_t* codes = w;
  const uint8_t* high = w + a64(rows_pad * (T / 2));
  const uint8_t* sm = Q5 ? high + a64(rows_pad * (T / 8)) : high;
  const uint8_t* dm = sm + a64(rows_pad * (T / 16));
  each_group<V, R::stride>(rows_pad, acts, tokens, y, ystride, first, [&](const uint8_t* rec, const int8_t* x, unsigned r0) {
    vector<float, V> part = zeros<float, V>();
    for (unsigned s = 0; s < T / 256; s++) {
      vector<uint8_t, V> scm[8];  // sc0..7 then m0..7 after the loop
      vector<int16_t, V> sc[8], mn[8];
      for (unsigned k = 0; k < 4; k++) {
        b8w<V, uint8_t>(sm, rows_pad, 4 * s + k, r0, scm);
        for (unsigned e = 0; e < 4; e++) (k < 2 ? sc[4 * k + e] : mn[4 * (k - 2) + e]) = widen<V>(scm[e]);
      }
      accum<acc32, V> acc[4] = {};
      accum<acc32, V> macc = zeros<acc32, V>();
      const uint8_t* bs = rec + R::sums + 2 * 16 * s;
      for (unsigned j = 0; j < 8; j++) {
        const int8_t* xj = x + 256 * s + 32 * j;
        vector<int8_t, V> q[8];
        for (unsigned k = 0; k < 4; k++) {
          u4w<V>(codes, rows_pad, 32 * s + 4 * j + k, r0, q);
          for (unsigned e = 0; e < 8; e++) {
            vector<int16_t, V> q16 = widen<V>(q[e]);
            if constexpr (Q5) q16 = add(q16, upshift(bitsw<V>(high, rows_pad, 8 * s + j, 8 * k + e, r0), 4));
            vector<int16_t, V> qs = mul(q16, sc[j]).template to_vector<int16_t>(0);
            acc[e % 4] = mac(acc[e % 4], qs, int16_t(xj[8 * k + e]));
          }
        }
        macc = mac(macc, mn[j], int16_t(ld16(bs + 4 * j) + ld16(bs + 4 * j + 2)));
      }
      float dx = f32s(rec + R::scales + 4 * s);
      vector<float, V> dd = mul(h16<V>(dm, T / 64, rows_pad, 2 * s, r0), dx).template to_vector<float>();
      vector<float, V> dmin = mul(h16<V>(dm, T / 64, rows_pad, 2 * s + 1, r0), dx).template to_vector<float>();
      vector<float, V> a = mul(dd, to_float<float>(sum4<V>(acc), 0)).template to_vector<float>();
      vector<float, V> c = mul(dmin, to_float<float>(macc.template to_vector<int32_t>(0), 0)).template to_vector<float>();
      part = add(part, sub(a, c));
    }
    return part;
  });
}

// Q6_K. Per V rows, token and super-block: 16 group scales (4 words, b8w, int8); per
// group g of 16, 4 code words (b8w, int8 q-32), widened and pre-multiplied by sc_g
// (|q*sc| <= 4096), 16 macs over 4 chains: sumi exact; one f32 rescale per super-block:
// part += float(sumi) * (d*dx). Expected per core, AIE2 (V = 32), one super-block of 32
// rows: 68 loads, ~400 shuffles, 256 muls + 256 macs: ~400 cycles for 8768 bytes
// (~20 B/cycle, estimate).
template <unsigned V, unsigned T>
void gemv_q6k_tile(const uint8_t* w, unsigned rows_pad, const uint8_t* acts, unsigned tokens, float* y, unsigned ystride, bool first) {
  using namespace aie;
  using R = q8k_rec<T>;
  const uint8_t* codes = w;
  const uint8_t* scales = w + a64(rows_pad * T);
  const uint8_t* dp = scales + a64(rows_pad * (T / 16));
  each_group<V, R::stride>(rows_pad, acts, tokens, y, ystride, first, [&](const uint8_t* rec, const int8_t* x, unsigned r0) {
    vector<float, V> part = zeros<float, V>();
    for (unsigned s = 0; s < T / 256; s++) {
      vector<int16_t, V> sc[16];
      for (unsigned k = 0; k < 4; k++) {
        vector<int8_t, V> b[4];
        b8w<V, int8_t>(scales, rows_pad, 4 * s + k, r0, b);
        for (unsigned e = 0; e < 4; e++) sc[4 * k + e] = widen<V>(b[e]);
      }
      accum<acc32, V> acc[4] = {};
      for (unsigned g = 0; g < 16; g++) {
        const int8_t* xg = x + 256 * s + 16 * g;
        for (unsigned k = 0; k < 4; k++) {
          vector<int8_t, V> q[4];
          b8w<V, int8_t>(codes, rows_pad, 64 * s + 4 * g + k, r0, q);
          for (unsigned e = 0; e < 4; e++) {
            vector<int16_t, V> qs = mul(widen<V>(q[e]), sc[g]).template to_vector<int16_t>(0);
            acc[e] = mac(acc[e], qs, int16_t(xg[4 * k + e]));
          }
        }
      }
      float dx = f32s(rec + R::scales + 4 * s);
      vector<float, V> d = mul(h16<V>(dp, T / 128, rows_pad, s, r0), dx).template to_vector<float>();
      part = add(part, mul(to_float<float>(sum4<V>(acc), 0), d).template to_vector<float>());
    }
    return part;
  });
}

}  // namespace xdna
