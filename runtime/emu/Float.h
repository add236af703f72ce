//===- Float.h - Rounding helpers shared by float ops and conversions -----===//
//
// PTX names a rounding mode on most float operations (.rn, .rz, .rm, .rp)
// and on conversions (.rni, .rzi, .rmi, .rpi to integers). The host's
// arithmetic rounds to nearest; a directed mode is applied by switching the
// host's rounding mode around the one operation (these sources are
// compiled with -frounding-math, so the compiler neither folds nor moves
// the operation across the switch). Narrow formats (f16, bf16, and f32 from
// f64) are rounded by one routine that works on the exact double value.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_EMU_FLOAT_H
#define TPRT_EMU_FLOAT_H

#include "Exec.h"

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tprt::emu {

/// PTX rounding modes; Nearest is also the default.
enum class Round : uint8_t { Nearest, Zero, Down, Up };

inline int hostRounding(Round r) {
  switch (r) {
  case Round::Zero: return FE_TOWARDZERO;
  case Round::Down: return FE_DOWNWARD;
  case Round::Up: return FE_UPWARD;
  default: return FE_TONEAREST;
  }
}

/// Runs f() with the host rounding mode of `r`.
template <class F> inline auto withRounding(Round r, F f) {
  if (r == Round::Nearest)
    return f();
  int old = std::fegetround();
  std::fesetround(hostRounding(r));
  auto result = f();
  std::fesetround(old);
  return result;
}

/// Rounds `x` to a binary format with `mantissa` fraction bits and
/// `exponent` exponent bits (IEEE-style, with subnormals, infinities and a
/// quiet NaN 0x7fff...), in mode `r`; returns its bit pattern.
uint32_t roundToFormat(double x, int mantissa, int exponent, Round r);

inline uint16_t f32ToHalfBits(double x, Round r = Round::Nearest) {
  return uint16_t(roundToFormat(x, 10, 5, r));
}
inline uint16_t f32ToBFloatBits(double x, Round r = Round::Nearest) {
  return uint16_t(roundToFormat(x, 7, 8, r));
}
float halfBitsToFloat(uint16_t bits);
inline float bfloatBitsToFloat(uint16_t bits) {
  uint32_t w = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

/// Flushes a subnormal to a zero of the same sign (.ftz).
inline float flush(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
inline double flush(double x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0, x) : x;
}

/// .sat: clamps to [0, 1], NaN to 0.
template <class T> inline T saturate(T x) {
  if (std::isnan(x))
    return T(0);
  return x < T(0) ? T(0) : x > T(1) ? T(1) : x;
}

} // namespace tprt::emu

#endif // TPRT_EMU_FLOAT_H
