// aie_api host shim: the subset of AMD's aie_api (Xilinx/aie_api@dc3ab77c, MIT) that
// the xdna GEMV kernels use, re-implemented for x86 so the kernel sources run on the
// host (runtime/npu/sim). It models the documented semantics, not the hardware's
// timing. Facts and sources: ../shared/reference/npu-contract.md section 6 (cited
// below as "ref #n").
//
// What is modelled:
//   - aie::vector<T, N>: value type. int4/uint4 elements (ref #3) are stored one per
//     byte here; cast_to/vector_cast reinterpret bits with element 0 in the low nibble.
//   - aie::accum<Tag, N>: acc32 lanes wrap at 32 bits, acc64 at 64 (ref #2); accfloat
//     lanes are IEEE binary32.
//
// Strict where the real library is (the differences that would hide kernel bugs):
//   - a default-constructed vector or accumulator holds poison (0xDEADBEEF bytes, or a
//     NaN in float lanes), as the real one is an undefined register: zero with zeros;
//   - undocumented conversions do not compile (accum<accfloat>(vector<int32>) and the
//     like: use cast_to or to_float);
//   - this header includes only what the real aie.hpp includes, so a kernel that
//     uses memcpy without <cstring> fails to compile here too;
//   - rounding and saturation start at the power-up modes (floor, none) and stay
//     what the kernel set, per core when the simulation swaps them (aie_shim::modes).
//
//   - load_v/store_v alignment (ref #4): AIE2 (XDNA1) 16 B for 128-bit vectors, else
//     32 B; AIE2P (XDNA2) 16/32/64 B for 128/256/>=512-bit. A violation is recorded
//     (aie_shim::error()) and the kernel's result must be discarded, as on the device
//     the load would read the wrong bytes.
//   - unpack keeps signedness: int4 -> int8 sign-extends, uint4 -> uint8 zero-extends,
//     int8 -> int16, uint8 -> uint16 (ref #7).
//   - accum(vector, shift) / from_vector: integer lanes shifted up (ref #10).
//   - to_vector<T>(shift): shift down, round by the current rounding mode, saturate by
//     the current saturation mode (ref #11); floats ignore the shift, bfloat16 rounds
//     by the rounding mode (floor truncates toward -inf, conv_even is RNE; ref #23).
//   - mul/mac with a vector or a scalar operand (ref #13-15); integer products exact
//     in the accumulator's width; float products are IEEE binary32 with RNE (on the
//     device f32 multiply is emulated with bf16 products: exact-or-close, ref #25).
//   - add/sub of integer vectors saturate by the saturation mode (ref #17).
//   - to_float(v, shift) = v * 2^-shift (ref #20; above 2^24 rounded by the rounding
//     mode), reduce_add (integers only: exact), filter_even/filter_odd, bit_and,
//     bit_or, bit_not, downshift (arithmetic for signed types), upshift, zeros,
//     broadcast, extract, concat.
// Every primitive is tested by kernels/aie_api_shim/shim_test.cc.
#pragma once

// Only the standard headers the real aie.hpp includes (aie.hpp@3054b6ca: <algorithm>,
// <array>, <cmath>, <cstdlib>, <tuple>, <type_traits>, <utility>; <cstdint> through its
// types), so that a kernel which forgets one of its own (<cstring> for memcpy, ...)
// fails here as it would under Peano.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <tuple>
#include <type_traits>
#include <utility>


// Element types of aie_api outside the aie namespace (as on the device).
struct int4 { int8_t v; };    // two's complement -8..7
struct uint4 { uint8_t v; };  // 0..15
struct bfloat16 {
  uint16_t bits;
  bfloat16() : bits(0) {}
  explicit bfloat16(float f);  // rounds by the current rounding mode
  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  }
};

namespace aie_shim {
// The first violation of a modelled rule (misaligned load, ...), "" if none. The
// simulation clears it before a kernel call and fails the call if it is set after.
// A fixed buffer, not std::string: <string> is not among aie.hpp's headers.
inline thread_local char err[256];
inline void fail(const char* a, unsigned n = 0, const char* b = "", unsigned m = 0, const char* c = "") {
  if (err[0]) return;
  unsigned k = 0;
  auto put = [&](const char* s) { while (*s && k + 1 < sizeof err) err[k++] = *s++; };
  auto num = [&](unsigned v) {
    char d[12];
    int i = 0;
    do d[i++] = char('0' + v % 10); while ((v /= 10) && i < 11);
    while (i && k + 1 < sizeof err) err[k++] = d[--i];
  };
  put(a);
  if (*b || n) num(n);
  put(b);
  if (*c || m) num(m);
  put(c);
  err[k] = 0;
}
inline const char* error() { return err; }
inline void clear_error() { err[0] = 0; }
// The generation whose rules apply: 1 = AIE2 (XDNA1), 2 = AIE2P (XDNA2). A runtime
// setting (not a macro) so that both generations' kernels link into one program.
inline thread_local int gen = 2;
// poison32 is what a default-constructed vector or accumulator holds: the real
// aie_api leaves its registers undefined (whatever the last kernel left there), so
// a kernel that reads one before writing it is wrong; here it reads 0xDEADBEEF
// (integer lanes: that pattern's bytes; float lanes: the quiet NaN 0x7FDEADBE).
constexpr uint32_t poison32 = 0xDEADBEEFu;
constexpr uint32_t poisonf = 0x7FDEADBEu;
}  // namespace aie_shim

namespace aie {

enum class rounding_mode {
  floor, ceil, positive_inf, negative_inf, symmetric_inf, symmetric_zero, conv_even, conv_odd,
  symmetric_floor, symmetric_ceil,
};
enum class saturation_mode { none = 0, saturate = 1, symmetric = 3 };

// The modes a core has at power-up, until its kernel sets them: rounding floor
// (the control register's reset value; cores that never call set_rounding truncate,
// npu-contract.md ref #23) and saturation none (reset value 0 = saturation_mode::none,
// ref #24; inferred, aie_api does not document it). The simulation keeps them per
// core (aie_shim::modes) so that one core's set_rounding never reaches another.
constexpr rounding_mode power_up_rounding = rounding_mode::floor;
constexpr saturation_mode power_up_saturation = saturation_mode::none;
namespace detail {
inline thread_local rounding_mode g_round = power_up_rounding;
inline thread_local saturation_mode g_sat = power_up_saturation;
}  // namespace detail

inline void set_rounding(rounding_mode m) { detail::g_round = m; }
inline rounding_mode get_rounding() { return detail::g_round; }
inline void set_saturation(saturation_mode m) { detail::g_sat = m; }
inline saturation_mode get_saturation() { return detail::g_sat; }
}  // namespace aie

namespace aie_shim {
// modes is one core's rounding and saturation state. The simulation runs many cores
// on one thread: it loads a core's modes before each kernel call and saves them
// after (swap), starting every core at power-up.
struct modes {
  aie::rounding_mode round = aie::power_up_rounding;
  aie::saturation_mode sat = aie::power_up_saturation;
};
// swap makes m the current modes and returns the ones it replaced.
inline modes swap(const modes& m) {
  modes old{aie::get_rounding(), aie::get_saturation()};
  aie::set_rounding(m.round);
  aie::set_saturation(m.sat);
  return old;
}
}  // namespace aie_shim

namespace aie {

// Accumulator tags (ref #2): acc32 and acc64 lanes; accfloat.
struct acc32 {};
struct acc64 {};
struct accfloat {};

namespace detail {

template <typename T> struct bits_of { static constexpr unsigned value = sizeof(T) * 8; };
template <> struct bits_of<int4> { static constexpr unsigned value = 4; };
template <> struct bits_of<uint4> { static constexpr unsigned value = 4; };

template <typename T> struct storage { using type = T; };
template <> struct storage<int4> { using type = int8_t; };
template <> struct storage<uint4> { using type = uint8_t; };

template <typename T> constexpr bool is_signed_int() {
  return std::is_same_v<T, int4> || std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> ||
         std::is_same_v<T, int32_t>;
}
template <typename T> constexpr bool is_int() {
  return is_signed_int<T>() || std::is_same_v<T, uint4> || std::is_same_v<T, uint8_t> ||
         std::is_same_v<T, uint16_t> || std::is_same_v<T, uint32_t>;
}
template <typename T> constexpr int64_t min_of() {
  if constexpr (std::is_same_v<T, int4>) return -8;
  else if constexpr (std::is_same_v<T, uint4>) return 0;
  else if constexpr (std::is_signed_v<T>) return -(int64_t(1) << (8 * sizeof(T) - 1));
  else return 0;
}
template <typename T> constexpr int64_t max_of() {
  if constexpr (std::is_same_v<T, int4>) return 7;
  else if constexpr (std::is_same_v<T, uint4>) return 15;
  else if constexpr (std::is_signed_v<T>) return (int64_t(1) << (8 * sizeof(T) - 1)) - 1;
  else return int64_t((uint64_t(1) << (8 * sizeof(T))) - 1);
}

// next_int is the type unpack widens to (ref #3, #7).
template <typename T> struct next_int;
template <> struct next_int<int4> { using type = int8_t; };
template <> struct next_int<uint4> { using type = uint8_t; };
template <> struct next_int<int8_t> { using type = int16_t; };
template <> struct next_int<uint8_t> { using type = uint16_t; };

// wrap reduces v to the bits of T (two's complement), as a register of that width.
template <typename T> int64_t wrap(int64_t v) {
  constexpr unsigned b = bits_of<T>::value;
  uint64_t m = b == 64 ? ~uint64_t(0) : ((uint64_t(1) << b) - 1);
  uint64_t u = uint64_t(v) & m;
  if (is_signed_int<T>() && b < 64 && (u >> (b - 1)) & 1) u |= ~m;
  return int64_t(u);
}

// round_shift returns v / 2^s rounded by mode m (s >= 0; s = 0 is exact).
inline int64_t round_shift(int64_t v, int s, rounding_mode m) {
  if (s <= 0) return v;
  if (s >= 63) s = 62;
  int64_t fl = v >> s;  // floor (arithmetic shift)
  int64_t rem = v - (fl << s);  // 0 <= rem < 2^s
  if (rem == 0) return fl;
  int64_t half = int64_t(1) << (s - 1);
  bool neg = v < 0;
  switch (m) {
    case rounding_mode::floor: return fl;
    case rounding_mode::ceil: return fl + 1;
    case rounding_mode::symmetric_floor: return neg ? fl + 1 : fl;  // toward zero
    case rounding_mode::symmetric_ceil: return neg ? fl : fl + 1;   // away from zero
    case rounding_mode::positive_inf: return rem >= half ? fl + 1 : fl;
    case rounding_mode::negative_inf: return rem > half ? fl + 1 : fl;
    case rounding_mode::symmetric_inf:
      if (rem != half) return rem > half ? fl + 1 : fl;
      return neg ? fl : fl + 1;
    case rounding_mode::symmetric_zero:
      if (rem != half) return rem > half ? fl + 1 : fl;
      return neg ? fl + 1 : fl;
    case rounding_mode::conv_even:
      if (rem != half) return rem > half ? fl + 1 : fl;
      return (fl & 1) ? fl + 1 : fl;
    case rounding_mode::conv_odd:
      if (rem != half) return rem > half ? fl + 1 : fl;
      return (fl & 1) ? fl : fl + 1;
  }
  return fl;
}

// saturate clamps v to T by mode m; none wraps to T's bits.
template <typename T> int64_t saturate(int64_t v, saturation_mode m) {
  constexpr int64_t lo = min_of<T>(), hi = max_of<T>();
  switch (m) {
    case saturation_mode::none: return wrap<T>(v);
    case saturation_mode::saturate: return v < lo ? lo : v > hi ? hi : v;
    case saturation_mode::symmetric: {
      int64_t l = is_signed_int<T>() ? -hi : lo;
      return v < l ? l : v > hi ? hi : v;
    }
  }
  return v;
}

inline uint32_t fbits(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }
inline float bitsf(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }

// to_bf16 rounds f to bfloat16 by mode m (floor/negative_inf toward -inf, ceil toward
// +inf, symmetric_floor toward zero, the others to nearest with their tie rule).
inline uint16_t to_bf16(float f, rounding_mode m) {
  uint32_t u = fbits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  uint32_t lo = u & 0xffff, hi = u >> 16;
  bool neg = u >> 31;
  if (lo == 0) return uint16_t(hi);
  // hi is the magnitude truncated toward zero; hi+1 one step away from zero.
  bool up;  // away from zero
  switch (m) {
    case rounding_mode::floor: case rounding_mode::negative_inf: up = neg; break;
    case rounding_mode::ceil: case rounding_mode::positive_inf: up = !neg; break;
    case rounding_mode::symmetric_floor: up = false; break;
    case rounding_mode::symmetric_ceil: up = true; break;
    default:
      if (lo != 0x8000) up = lo > 0x8000;
      else if (m == rounding_mode::conv_even) up = hi & 1;
      else if (m == rounding_mode::conv_odd) up = !(hi & 1);
      else if (m == rounding_mode::symmetric_inf) up = true;
      else up = false;  // symmetric_zero
  }
  // positive_inf/negative_inf in aie_api round to nearest with ties toward +/-inf for
  // integers; for the float conversions the kernels do not use them.
  return uint16_t(up ? hi + 1 : hi);
}

inline void check_align(const void* p, unsigned bytes, const char* what) {
  unsigned need = bytes <= 16 ? 16 : bytes <= 32 ? 32 : (aie_shim::gen == 1 ? 32u : 64u);
  if (bytes < 16) need = bytes;  // sub-128-bit vectors: natural alignment (not used by the kernels)
  if (reinterpret_cast<uintptr_t>(p) % need != 0)
    aie_shim::fail(what, bytes, "-byte vector at an address not ", need, "-byte aligned");
}

}  // namespace detail

// vector is aie::vector<T, N>.
template <typename T, unsigned N> class vector {
 public:
  using value_type = T;
  using elem = typename detail::storage<T>::type;
  static constexpr unsigned size() { return N; }
  static constexpr unsigned bits() { return N * detail::bits_of<T>::value; }

  // A default-constructed vector holds poison (aie_shim::poison32), as the real
  // one holds whatever its register held: zero it with aie::zeros.
  vector() {
    uint8_t b[sizeof(elem) * N];
    for (unsigned i = 0; i < sizeof b; i++) b[i] = uint8_t(aie_shim::poison32 >> (8 * (i % 4)));
    if constexpr (std::is_same_v<T, float>)
      for (unsigned i = 0; i < N; i++) __builtin_memcpy(b + 4 * i, &aie_shim::poisonf, 4);
    __builtin_memcpy(e_.data(), b, sizeof b);
  }

  elem get(unsigned i) const { return e_[i]; }
  elem operator[](unsigned i) const { return e_[i]; }
  void set(elem v, unsigned i) { e_[i] = v; }

  // to_bytes writes the vector's bits (bits()/8 bytes), element 0 first; 4-bit
  // elements two per byte, element 2i in the low nibble.
  void to_bytes(uint8_t* b) const {
    if constexpr (detail::bits_of<T>::value == 4) {
      for (unsigned i = 0; i < N / 2; i++)
        b[i] = uint8_t((uint8_t(e_[2 * i]) & 15) | (uint8_t(e_[2 * i + 1]) & 15) << 4);
    } else {
      __builtin_memcpy(b, e_.data(), sizeof(elem) * N);
    }
  }
  static vector from_bytes(const uint8_t* b) {
    vector v;
    if constexpr (detail::bits_of<T>::value == 4) {
      for (unsigned i = 0; i < N; i++) {
        uint8_t n = (b[i / 2] >> (4 * (i % 2))) & 15;
        v.e_[i] = elem(detail::wrap<T>(n));
      }
    } else {
      __builtin_memcpy(v.e_.data(), b, sizeof(elem) * N);
    }
    return v;
  }

  // cast_to reinterprets the bits as elements of T2 (ref #9).
  template <typename T2> vector<T2, bits() / detail::bits_of<T2>::value> cast_to() const {
    uint8_t buf[bits() / 8];
    to_bytes(buf);
    return vector<T2, bits() / detail::bits_of<T2>::value>::from_bytes(buf);
  }

  // extract returns elements [i*M, (i+1)*M) (ref #19).
  template <unsigned M> vector<T, M> extract(unsigned i) const {
    vector<T, M> r;
    for (unsigned j = 0; j < M; j++) r.set(e_[i * M + j], j);
    return r;
  }

 private:
  std::array<elem, N> e_;
};

// concat joins vectors of the same element type (ref #19).
template <typename T, unsigned N> vector<T, 2 * N> concat(const vector<T, N>& a, const vector<T, N>& b) {
  vector<T, 2 * N> r;
  for (unsigned i = 0; i < N; i++) { r.set(a[i], i); r.set(b[i], N + i); }
  return r;
}
template <typename T, unsigned N>
vector<T, 4 * N> concat(const vector<T, N>& a, const vector<T, N>& b, const vector<T, N>& c, const vector<T, N>& d) {
  return concat(concat(a, b), concat(c, d));
}

template <typename T2, typename T, unsigned N> auto vector_cast(const vector<T, N>& v) {
  return v.template cast_to<T2>();
}

// accum is aie::accum<Tag, N>.
template <typename Tag, unsigned N> class accum {
 public:
  using lane = std::conditional_t<std::is_same_v<Tag, accfloat>, float, int64_t>;
  static constexpr unsigned size() { return N; }

  // A default-constructed accumulator holds poison, as the real one leaves its
  // registers undefined: zero it with aie::zeros.
  accum() {
    if constexpr (std::is_same_v<Tag, accfloat>) l_.fill(detail::bitsf(aie_shim::poisonf));
    else l_.fill(wrapl(int64_t(uint64_t(aie_shim::poison32) << 32 | aie_shim::poison32)));
  }
  template <typename T> explicit accum(const vector<T, N>& v, int shift = 0) { from_vector(v, shift); }

  lane get(unsigned i) const { return l_[i]; }
  void set(lane v, unsigned i) { l_[i] = std::is_same_v<Tag, accfloat> ? v : wrapl(int64_t(v)); }

  // from_vector loads v shifted up by shift (integers); accfloat takes float or
  // bfloat16 lanes. An integer vector into accfloat (or a float one into an integer
  // accumulator) is not a documented conversion: the XNPU log saw it reinterpret the
  // bits (ref #10), which aie_api does not promise. It does not compile: use
  // vector::cast_to<float>() for a bit reinterpretation, aie::to_float for values.
  template <typename T> accum& from_vector(const vector<T, N>& v, int shift = 0) {
    static_assert(std::is_same_v<Tag, accfloat> == (std::is_same_v<T, float> || std::is_same_v<T, bfloat16>),
                  "accum::from_vector: integer vector to accfloat or float vector to an integer accumulator is "
                  "undocumented; use cast_to<float>() (bits) or to_float (values)");
    for (unsigned i = 0; i < N; i++) {
      if constexpr (std::is_same_v<Tag, accfloat>) {
        if constexpr (std::is_same_v<T, float>) l_[i] = v[i];
        else l_[i] = float(v[i]);  // bfloat16 widens exactly
      } else {
        l_[i] = wrapl(int64_t(v[i]) * (int64_t(1) << shift));
      }
    }
    return *this;
  }

  // to_vector shifts down, rounds and saturates (ref #11); for float targets the
  // shift is ignored and bfloat16 rounds by the rounding mode.
  template <typename T> vector<T, N> to_vector(int shift = 0) const {
    vector<T, N> r;
    for (unsigned i = 0; i < N; i++) {
      if constexpr (std::is_same_v<T, float>) {
        r.set(float(l_[i]), i);
      } else if constexpr (std::is_same_v<T, bfloat16>) {
        bfloat16 b;
        b.bits = detail::to_bf16(float(l_[i]), detail::g_round);
        r.set(b, i);
      } else {
        static_assert(!std::is_same_v<Tag, accfloat>, "float accumulator to integer vector: use to_fixed");
        int64_t v = detail::round_shift(int64_t(l_[i]), shift, detail::g_round);
        r.set(typename vector<T, N>::elem(detail::saturate<T>(v, detail::g_sat)), i);
      }
    }
    return r;
  }

 private:
  static int64_t wrapl(int64_t v) {
    if constexpr (std::is_same_v<Tag, acc32>) return detail::wrap<int32_t>(v);
    return v;
  }
  std::array<lane, N> l_;
};

template <typename T, unsigned N> vector<T, N> to_vector(const accum<acc32, N>& a, int shift = 0) {
  return a.template to_vector<T>(shift);
}

// Loads and stores (ref #4, #6).
template <unsigned N, typename T> vector<T, N> load_v(const T* p) {
  constexpr unsigned bytes = N * detail::bits_of<T>::value / 8;
  detail::check_align(p, bytes, "load_v");
  return vector<T, N>::from_bytes(reinterpret_cast<const uint8_t*>(p));
}
template <typename T, unsigned N> void store_v(T* p, const vector<T, N>& v) {
  detail::check_align(p, vector<T, N>::bits() / 8, "store_v");
  v.to_bytes(reinterpret_cast<uint8_t*>(p));
}

namespace detail {
template <typename T> constexpr bool is_tag() {
  return std::is_same_v<T, acc32> || std::is_same_v<T, acc64> || std::is_same_v<T, accfloat>;
}
}  // namespace detail

// zeros<T, N>() is a zero vector, or a zero accumulator when T is an accumulator tag.
template <typename T, unsigned N>
std::conditional_t<detail::is_tag<T>(), accum<T, N>, vector<T, N>> zeros() {
  std::conditional_t<detail::is_tag<T>(), accum<T, N>, vector<T, N>> r;
  for (unsigned i = 0; i < N; i++) {
    if constexpr (detail::is_tag<T>()) r.set(0, i);
    else r.set(typename vector<T, N>::elem(0), i);
  }
  return r;
}
template <typename T, unsigned N> vector<T, N> broadcast(T x) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) r.set(typename vector<T, N>::elem(x), i);
  return r;
}

// unpack widens each element to the next integer type keeping signedness (ref #7).
template <typename T, unsigned N> vector<typename detail::next_int<T>::type, N> unpack(const vector<T, N>& v) {
  using U = typename detail::next_int<T>::type;
  vector<U, N> r;
  for (unsigned i = 0; i < N; i++) r.set(U(v[i]), i);
  return r;
}

// Default accumulator tag of a product (ref #2): up to 16x16 bits acc32, else acc64,
// float accfloat.
namespace detail {
template <typename A, typename B> struct mul_tag {
  using type = std::conditional_t<(bits_of<A>::value + bits_of<B>::value <= 32), acc32, acc64>;
};
template <> struct mul_tag<float, float> { using type = accfloat; };
template <typename T> using scal = typename storage<T>::type;
}  // namespace detail

// mul: element-wise product into an accumulator (ref #13), vector x vector or
// vector x scalar.
template <typename Tag = void, typename A, typename B, unsigned N>
auto mul(const vector<A, N>& a, const vector<B, N>& b) {
  using T = std::conditional_t<std::is_void_v<Tag>, typename detail::mul_tag<A, B>::type, Tag>;
  accum<T, N> r;
  for (unsigned i = 0; i < N; i++) {
    if constexpr (std::is_same_v<T, accfloat>) r.set(float(a[i]) * float(b[i]), i);
    else r.set(int64_t(a[i]) * int64_t(b[i]), i);
  }
  return r;
}
template <typename Tag = void, typename A, unsigned N>
auto mul(const vector<A, N>& a, detail::scal<A> s) {
  return mul<Tag>(a, broadcast<A, N>(s));
}

// mac: acc[i] + a[i]*b[i] (ref #14), or acc[i] + a[i]*s with a scalar (ref #15).
template <typename Tag, unsigned N, typename A, typename B>
accum<Tag, N> mac(const accum<Tag, N>& acc, const vector<A, N>& a, const vector<B, N>& b) {
  accum<Tag, N> r;
  for (unsigned i = 0; i < N; i++) {
    if constexpr (std::is_same_v<Tag, accfloat>) r.set(acc.get(i) + float(a[i]) * float(b[i]), i);
    else r.set(acc.get(i) + int64_t(a[i]) * int64_t(b[i]), i);
  }
  return r;
}
template <typename Tag, unsigned N, typename A>
accum<Tag, N> mac(const accum<Tag, N>& acc, const vector<A, N>& a, detail::scal<A> s) {
  return mac(acc, a, broadcast<A, N>(s));
}

// add/sub of vectors (ref #17): integers saturate by the saturation mode, floats IEEE.
template <typename T, unsigned N> vector<T, N> add(const vector<T, N>& a, const vector<T, N>& b) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) {
    if constexpr (detail::is_int<T>()) r.set(typename vector<T, N>::elem(detail::saturate<T>(int64_t(a[i]) + int64_t(b[i]), detail::g_sat)), i);
    else r.set(a[i] + b[i], i);
  }
  return r;
}
template <typename T, unsigned N> vector<T, N> sub(const vector<T, N>& a, const vector<T, N>& b) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) {
    if constexpr (detail::is_int<T>()) r.set(typename vector<T, N>::elem(detail::saturate<T>(int64_t(a[i]) - int64_t(b[i]), detail::g_sat)), i);
    else r.set(a[i] - b[i], i);
  }
  return r;
}
template <typename T, unsigned N> vector<T, N> add(const vector<T, N>& a, detail::scal<T> s) { return add(a, broadcast<T, N>(s)); }
template <typename T, unsigned N> vector<T, N> sub(const vector<T, N>& a, detail::scal<T> s) { return sub(a, broadcast<T, N>(s)); }

// Bit operations on integer vectors.
template <typename T, unsigned N> vector<T, N> bit_and(const vector<T, N>& a, detail::scal<T> s) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) r.set(typename vector<T, N>::elem(a[i] & s), i);
  return r;
}
template <typename T, unsigned N> vector<T, N> bit_and(const vector<T, N>& a, const vector<T, N>& b) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) r.set(typename vector<T, N>::elem(a[i] & b[i]), i);
  return r;
}
template <typename T, unsigned N> vector<T, N> bit_not(const vector<T, N>& a) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) r.set(typename vector<T, N>::elem(~a[i]), i);
  return r;
}
template <typename T, unsigned N> vector<T, N> bit_or(const vector<T, N>& a, const vector<T, N>& b) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) r.set(typename vector<T, N>::elem(a[i] | b[i]), i);
  return r;
}
// downshift shifts right, arithmetic for signed types; upshift shifts left (wrapping).
template <typename T, unsigned N> vector<T, N> downshift(const vector<T, N>& a, unsigned s) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) r.set(typename vector<T, N>::elem(a[i] >> s), i);
  return r;
}
// A lane that overflows T (a bit shifted into or past the sign) is recorded as an
// error: aie_api does not say whether it wraps or saturates, so a kernel must not
// depend on it. The result wraps.
template <typename T, unsigned N> vector<T, N> upshift(const vector<T, N>& a, unsigned s) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) {
    int64_t full = int64_t(a[i]) * (int64_t(1) << s);
    if (full < detail::min_of<T>() || full > detail::max_of<T>())
      aie_shim::fail("upshift: a lane overflows its type (wrap or saturation is undocumented), shift ", s);
    r.set(typename vector<T, N>::elem(detail::wrap<T>(full)), i);
  }
  return r;
}
template <typename T, unsigned N> vector<T, N> max(const vector<T, N>& a, detail::scal<T> s) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) r.set(a[i] > s ? a[i] : s, i);
  return r;
}
template <typename T, unsigned N> vector<T, N> min(const vector<T, N>& a, detail::scal<T> s) {
  vector<T, N> r;
  for (unsigned i = 0; i < N; i++) r.set(a[i] < s ? a[i] : s, i);
  return r;
}

// filter_even/filter_odd keep the groups of step elements at even/odd group positions
// (aie_api filter_even/filter_odd); the result has N/2 elements.
template <typename T, unsigned N> vector<T, N / 2> filter_even(const vector<T, N>& v, unsigned step = 1) {
  vector<T, N / 2> r;
  unsigned k = 0;
  for (unsigned i = 0; i < N; i++)
    if ((i / step) % 2 == 0) r.set(v[i], k++);
  return r;
}
template <typename T, unsigned N> vector<T, N / 2> filter_odd(const vector<T, N>& v, unsigned step = 1) {
  vector<T, N / 2> r;
  unsigned k = 0;
  for (unsigned i = 0; i < N; i++)
    if ((i / step) % 2 == 1) r.set(v[i], k++);
  return r;
}

// reduce_add sums the lanes of an integer vector in T (ref #18; exact while the sum
// fits T; float reductions are not modelled: their order is unspecified).
template <typename T, unsigned N> T reduce_add(const vector<T, N>& v) {
  static_assert(detail::is_int<T>(), "reduce_add: only integer vectors are modelled");
  int64_t s = 0;
  for (unsigned i = 0; i < N; i++) s += v[i];
  return T(detail::wrap<T>(s));
}

// to_float converts integer lanes to float, v * 2^-shift (ref #20): exact while |v|
// < 2^24. Above, aie_api does not say how the (emulated) conversion rounds; the shim
// takes the strict reading that it rounds by the current rounding mode, so a kernel
// that needs round-to-nearest-even (the Go model's float32(int32)) must set conv_even.
template <typename F, typename T, unsigned N> vector<F, N> to_float(const vector<T, N>& v, int shift = 0) {
  static_assert(std::is_same_v<F, float>, "to_float: float only");
  vector<F, N> r;
  for (unsigned i = 0; i < N; i++) {
    int64_t x = int64_t(v[i]);
    uint64_t a = x < 0 ? uint64_t(-x) : uint64_t(x);
    int drop = 0;
    while ((a >> drop) >= (uint64_t(1) << 24)) drop++;
    int64_t m = detail::round_shift(x, drop, detail::g_round);  // 24 significant bits (25 after a carry: exact)
    r.set(std::ldexp(float(m), drop - shift), i);
  }
  return r;
}

}  // namespace aie

inline bfloat16::bfloat16(float f) : bits(aie::detail::to_bf16(f, aie::detail::g_round)) {}
