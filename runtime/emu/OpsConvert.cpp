//===- OpsConvert.cpp - cvt between every pair of PTX types ---------------===//
//
// cvt.{rounding}{.ftz}{.sat}.DTYPE.STYPE d, a (and the packing form
// cvt.rn.{f16x2,bf16x2}.f32 d, a, b). Each conversion reads the source
// as its exact value (a double or a 64-bit integer), then produces the
// destination as PTX defines it:
//  - integer to integer: truncation or extension by the source's
//    signedness; .sat clamps into the destination's range;
//  - float to integer (.rni/.rzi/.rmi/.rpi): rounded, then saturated like
//    the hardware (out of range clamps, NaN becomes 0), never host UB;
//  - to a float: rounded once, in the named mode, by roundToFormat (f16,
//    bf16, f32 from f64) or the host's arithmetic under the mode (from
//    64-bit integers); .rni/.rzi/.rmi/.rpi between floats round to an
//    integral value of the same type.
//
//===----------------------------------------------------------------------===//

#include "Decode.h"
#include "Float.h"

#include <climits>
#include <limits>

using namespace tprt::emu;

uint32_t tprt::emu::roundToFormat(double x, int mantissa, int exponent,
                                  Round r) {
  uint32_t signBit = 1u << (mantissa + exponent);
  uint32_t expMask = (1u << exponent) - 1;
  if (std::isnan(x))
    return (expMask << mantissa) | ((1u << mantissa) - 1); // canonical NaN
  bool negative = std::signbit(x);
  uint32_t sign = negative ? signBit : 0;
  double a = std::fabs(x);
  if (std::isinf(a))
    return sign | (expMask << mantissa);
  if (a == 0)
    return sign;
  int bias = int(expMask >> 1);
  int emin = 1 - bias, emax = bias;
  int e;
  std::frexp(a, &e);
  e -= 1; // a = f * 2^e, f in [1, 2)
  if (e < emin)
    e = emin;
  double m = std::ldexp(a, mantissa - e); // exact
  double rounded;
  switch (r) {
  case Round::Zero: rounded = std::trunc(m); break;
  case Round::Down: rounded = negative ? std::ceil(m) : std::floor(m); break;
  case Round::Up: rounded = negative ? std::floor(m) : std::ceil(m); break;
  default: rounded = std::nearbyint(m); break; // ties to even
  }
  double top = std::ldexp(1.0, mantissa + 1);
  if (rounded >= top) {
    rounded /= 2;
    ++e;
  }
  uint32_t maxFinite = ((expMask - 1) << mantissa) | ((1u << mantissa) - 1);
  if (e > emax) {
    bool toInfinity = r == Round::Nearest || (r == Round::Down && negative) ||
                      (r == Round::Up && !negative);
    return sign | (toInfinity ? expMask << mantissa : maxFinite);
  }
  uint64_t mant = uint64_t(rounded);
  if (mant < (uint64_t(1) << mantissa)) // subnormal (e == emin), or zero
    return sign | uint32_t(mant);
  return sign | (uint32_t(e + bias) << mantissa) |
         uint32_t(mant - (uint64_t(1) << mantissa));
}

float tprt::emu::halfBitsToFloat(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  float value;
  if (exp == 0)
    value = std::ldexp(float(mant), -24);
  else if (exp == 31)
    value = mant ? std::numeric_limits<float>::quiet_NaN()
                 : std::numeric_limits<float>::infinity();
  else
    value = std::ldexp(float(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -value : value;
}

float tprt::emu::toFloat(Half h) { return halfBitsToFloat(h.bits); }
float tprt::emu::toFloat(BFloat b) { return bfloatBitsToFloat(b.bits); }
Half tprt::emu::toHalf(float f) { return {f32ToHalfBits(f)}; }
BFloat tprt::emu::toBFloat(float f) { return {f32ToBFloatBits(f)}; }
Half tprt::emu::toHalf(double d) { return {f32ToHalfBits(d)}; }
BFloat tprt::emu::toBFloat(double d) { return {f32ToBFloatBits(d)}; }

namespace {

enum class Kind : uint8_t { Unsigned, Signed, F16, BF16, F32, F64 };

struct Format {
  Kind kind;
  unsigned bytes;
};

bool formatOf(Type t, Format &f) {
  switch (t) {
  case Type::U8: case Type::B8: f = {Kind::Unsigned, 1}; return true;
  case Type::U16: case Type::B16: f = {Kind::Unsigned, 2}; return true;
  case Type::U32: case Type::B32: f = {Kind::Unsigned, 4}; return true;
  case Type::U64: case Type::B64: f = {Kind::Unsigned, 8}; return true;
  case Type::S8: f = {Kind::Signed, 1}; return true;
  case Type::S16: f = {Kind::Signed, 2}; return true;
  case Type::S32: f = {Kind::Signed, 4}; return true;
  case Type::S64: f = {Kind::Signed, 8}; return true;
  case Type::F16: f = {Kind::F16, 2}; return true;
  case Type::BF16: f = {Kind::BF16, 2}; return true;
  case Type::F32: f = {Kind::F32, 4}; return true;
  case Type::F64: f = {Kind::F64, 8}; return true;
  default: return false;
  }
}

bool isFloatKind(Kind k) { return k >= Kind::F16; }


/// A source value, exactly.
struct Value {
  bool isFloat;
  bool isSigned;
  double f;
  int64_t s;
  uint64_t u;
};

Value read(Kind k, unsigned bytes, uint64_t bits, bool ftz) {
  Value v{};
  switch (k) {
  case Kind::Unsigned:
    v.u = bytes == 8 ? bits : bits & ((uint64_t(1) << (8 * bytes)) - 1);
    v.s = int64_t(v.u);
    break;
  case Kind::Signed: {
    unsigned shift = 64 - 8 * bytes;
    v.s = int64_t(bits << shift) >> shift;
    v.u = uint64_t(v.s);
    v.isSigned = true;
    break;
  }
  case Kind::F16: v.isFloat = true; v.f = halfBitsToFloat(uint16_t(bits)); break;
  case Kind::BF16: v.isFloat = true; v.f = bfloatBitsToFloat(uint16_t(bits)); break;
  case Kind::F32: {
    float f = get<float>(bits);
    v.isFloat = true;
    v.f = ftz ? flush(f) : f;
    break;
  }
  case Kind::F64: {
    double d = get<double>(bits);
    v.isFloat = true;
    v.f = ftz ? flush(d) : d;
    break;
  }
  }
  return v;
}

template <class T> uint64_t clampInt(double x) {
  if (std::isnan(x))
    return put<T>(T(0));
  if (x <= double(std::numeric_limits<T>::min()))
    return put<T>(std::numeric_limits<T>::min());
  if (x >= double(std::numeric_limits<T>::max()))
    return put<T>(std::numeric_limits<T>::max());
  return put<T>(T(x));
}

uint64_t toInteger(const Value &v, const Format &d, Round r, bool integerRounding,
                   bool sat, Kind srcKind) {
  if (v.isFloat) {
    double x = v.f;
    if (integerRounding) {
      switch (r) {
      case Round::Zero: x = std::trunc(x); break;
      case Round::Down: x = std::floor(x); break;
      case Round::Up: x = std::ceil(x); break;
      default: x = std::nearbyint(x); break;
      }
    } else {
      x = std::trunc(x);
    }
    // Float to integer saturates on the hardware whatever the modifiers.
    if (d.kind == Kind::Signed) {
      switch (d.bytes) {
      case 1: return clampInt<int8_t>(x);
      case 2: return clampInt<int16_t>(x);
      case 4: return clampInt<int32_t>(x);
      default: return clampInt<int64_t>(x);
      }
    }
    switch (d.bytes) {
    case 1: return clampInt<uint8_t>(x);
    case 2: return clampInt<uint16_t>(x);
    case 4: return clampInt<uint32_t>(x);
    default: return clampInt<uint64_t>(x);
    }
  }
  // Integer to integer.
  unsigned bits = 8 * d.bytes;
  uint64_t mask = bits == 64 ? ~0ull : (uint64_t(1) << bits) - 1;
  if (!sat)
    return v.u & mask;
  bool signedSource = srcKind == Kind::Signed;
  (void)r;
  if (d.kind == Kind::Signed) {
    int64_t lo = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
    int64_t hi = bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
    if (signedSource) {
      int64_t s = v.s < lo ? lo : v.s > hi ? hi : v.s;
      return uint64_t(s) & mask;
    }
    uint64_t u = v.u > uint64_t(hi) ? uint64_t(hi) : v.u;
    return u & mask;
  }
  if (signedSource && v.s < 0)
    return 0;
  uint64_t u = v.u > mask ? mask : v.u;
  return u;
}

uint64_t toFloatBits(const Value &v, const Format &d, Round r, bool sat,
                     bool ftz, bool integerRounding) {
  if (v.isFloat) {
    double x = v.f;
    if (integerRounding) {
      switch (r) {
      case Round::Zero: x = std::trunc(x); break;
      case Round::Down: x = std::floor(x); break;
      case Round::Up: x = std::ceil(x); break;
      default: x = std::nearbyint(x); break;
      }
      r = Round::Nearest; // now exact in the destination
    }
    if (sat)
      x = saturate(x);
    switch (d.kind) {
    case Kind::F16: return f32ToHalfBits(x, r);
    case Kind::BF16: return f32ToBFloatBits(x, r);
    case Kind::F32: {
      float f = get<float>(roundToFormat(x, 23, 8, r));
      if (ftz)
        f = flush(f);
      return put<float>(f);
    }
    default:
      return put<double>(ftz ? flush(x) : x);
    }
  }
  // From an integer: the host converts under the rounding mode (16-bit
  // destinations: integers up to 2^53 are exact in a double, and the
  // rest round once more at most to an already representable value).
  switch (d.kind) {
  case Kind::F32: {
    float f = withRounding(r, [&] {
      volatile int64_t s = v.s;
      volatile uint64_t u = v.u;
      return v.isSigned ? float(s) : float(u);
    });
    return put<float>(sat ? saturate(f) : f);
  }
  case Kind::F64: {
    double f = withRounding(r, [&] {
      volatile int64_t s = v.s;
      volatile uint64_t u = v.u;
      return v.isSigned ? double(s) : double(u);
    });
    return put<double>(sat ? saturate(f) : f);
  }
  default: {
    double x = withRounding(r, [&] {
      volatile int64_t s = v.s;
      volatile uint64_t u = v.u;
      return v.isSigned ? double(s) : double(u);
    });
    if (sat)
      x = saturate(x);
    return d.kind == Kind::F16 ? f32ToHalfBits(x, r) : f32ToBFloatBits(x, r);
  }
  }
}

/// in.mode: bits 0-1 rounding, bit 2 integer rounding, bit 3 .sat, bit 4
/// .ftz. in.bytes/count carry the formats (see decode).
template <Kind DK, unsigned DB, Kind SK, unsigned SB>
void cvt(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  Round r = Round(in.mode & 3);
  bool integerRounding = in.mode & 4, sat = in.mode & 8, ftz = in.mode & 16;
  Format dst{DK, DB};
  forLanes(m, [&](int l) {
    Value v = read(SK, SB, a[l], ftz);
    d[l] = isFloatKind(DK) ? toFloatBits(v, dst, r, sat, ftz, integerRounding)
                           : toInteger(v, dst, r, integerRounding, sat, SK);
  });
}

template <bool BFloat16> void cvtPack(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  Round r = Round(in.mode & 3);
  bool relu = in.mode & 32;
  forLanes(m, [&](int l) {
    double x = get<float>(a[l]), y = get<float>(b[l]);
    if (relu) {
      x = std::isnan(x) ? x : (x < 0 ? 0 : x);
      y = std::isnan(y) ? y : (y < 0 ? 0 : y);
    }
    uint32_t hi = BFloat16 ? f32ToBFloatBits(x, r) : f32ToHalfBits(x, r);
    uint32_t lo = BFloat16 ? f32ToBFloatBits(y, r) : f32ToHalfBits(y, r);
    d[l] = (hi << 16) | lo;
  });
}

#define KINDS(X) X(Kind::Unsigned, 1) X(Kind::Unsigned, 2) X(Kind::Unsigned, 4) \
  X(Kind::Unsigned, 8) X(Kind::Signed, 1) X(Kind::Signed, 2) X(Kind::Signed, 4) \
  X(Kind::Signed, 8) X(Kind::F16, 2) X(Kind::BF16, 2) X(Kind::F32, 4) X(Kind::F64, 8)

template <Kind DK, unsigned DB> Handler bySource(Format s) {
#define CASE(K, B) if (s.kind == K && s.bytes == B) return cvt<DK, DB, K, B>;
  KINDS(CASE)
#undef CASE
  return nullptr;
}

Handler cvtHandler(Format d, Format s) {
#define CASE(K, B) if (d.kind == K && d.bytes == B) return bySource<K, B>(s);
  KINDS(CASE)
#undef CASE
  return nullptr;
}

} // namespace

bool tprt::emu::decodeConvert(const Statement &st, Inst &inst,
                              DecodeContext &ctx, std::string &error,
                              bool &known) {
  if (st.opcode[0] != "cvt") {
    known = false;
    return false;
  }
  known = true;
  Round r = Round::Nearest;
  bool integerRounding = false;
  for (size_t i = 1; i < st.opcode.size(); ++i) {
    const std::string &m = st.opcode[i];
    if (m == "rn" || m == "rni") r = Round::Nearest;
    else if (m == "rz" || m == "rzi") r = Round::Zero;
    else if (m == "rm" || m == "rmi") r = Round::Down;
    else if (m == "rp" || m == "rpi") r = Round::Up;
    if (m == "rni" || m == "rzi" || m == "rmi" || m == "rpi")
      integerRounding = true;
    if (m == "rna" || m == "rs" || m == "satfinite") {
      error = "cvt." + m + " is not supported by the emulator";
      return false;
    }
  }
  inst.mode = uint8_t(int(r) | (integerRounding ? 4 : 0) |
                      (hasModifier(st, "sat") ? 8 : 0) |
                      (hasModifier(st, "ftz") ? 16 : 0) |
                      (hasModifier(st, "relu") ? 32 : 0));
  std::vector<Type> types = typesOf(st);
  if (types.size() != 2) {
    error = "cvt needs a destination and a source type";
    return false;
  }
  if (types[0] == Type::F16x2 || types[0] == Type::BF16x2) {
    if (types[1] != Type::F32 || st.operands.size() != 3) {
      error = "cvt to a packed pair takes two f32 sources";
      return false;
    }
    inst.run = types[0] == Type::BF16x2 ? cvtPack<true> : cvtPack<false>;
    inst.d[0] = ctx.registerOf(st.operands[0], Type::B32, error);
    inst.s[0] = ctx.registerOf(st.operands[1], Type::F32, error);
    inst.s[1] = ctx.registerOf(st.operands[2], Type::F32, error);
    return inst.d[0] >= 0 && inst.s[0] >= 0 && inst.s[1] >= 0;
  }
  Format d, s;
  if (!formatOf(types[0], d) || !formatOf(types[1], s)) {
    error = std::string("cvt.") + typeName(types[0]) + "." +
            typeName(types[1]) + " is not supported by the emulator";
    return false;
  }
  inst.run = cvtHandler(d, s);
  if (!inst.run || st.operands.size() != 2) {
    error = "cvt takes two operands";
    return false;
  }
  inst.d[0] = ctx.registerOf(st.operands[0], types[0], error);
  if (inst.d[0] < 0)
    return false;
  inst.s[0] = ctx.registerOf(st.operands[1], types[1], error);
  return inst.s[0] >= 0;
}
