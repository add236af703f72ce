//===- OpsFloat.cpp - Floating-point arithmetic, compares and functions ---===//
//
// add, sub, mul, fma/mad, div, rcp, sqrt, rsqrt, abs, neg, min, max,
// copysign, the .approx functions (ex2, lg2, sin, cos, tanh), testp and
// setp on f64, f32, f16, bf16 and the packed f16x2/bf16x2, with PTX's
// modifiers: rounding (.rn default, .rz, .rm, .rp), .ftz (subnormal inputs
// and results flushed to zero of the same sign), .sat (clamped to [0, 1])
// and min/max's .NaN.
//
// What the emulator cannot match bit for bit, and says so in docs/gpu.md:
// the .approx functions and div.full/div.approx are computed correctly
// rounded here, where the hardware's are within a few ulp; 16-bit
// arithmetic is done in f32 or f64 and rounded once to the format (exact
// for add, sub and mul; fma differs only when the f32 intermediate itself
// rounds, which needs operands 2^24 apart).
//
//===----------------------------------------------------------------------===//

#include "Decode.h"
#include "Float.h"

#include <cmath>
#include <limits>

using namespace tprt::emu;

namespace {

/// Register access for each float format: f32/f64 natively, the 16-bit
/// formats through f32.
template <class T> struct Fmt;
template <> struct Fmt<float> {
  using Math = float;
  static float load(uint64_t b) { return get<float>(b); }
  static uint64_t store(float v, Round r) {
    (void)r;
    return put<float>(v);
  }
};
template <> struct Fmt<double> {
  using Math = double;
  static double load(uint64_t b) { return get<double>(b); }
  static uint64_t store(double v, Round) { return put<double>(v); }
};
template <> struct Fmt<Half> {
  using Math = double;
  static double load(uint64_t b) { return halfBitsToFloat(uint16_t(b)); }
  static uint64_t store(double v, Round r) { return f32ToHalfBits(v, r); }
};
template <> struct Fmt<BFloat> {
  using Math = double;
  static double load(uint64_t b) { return bfloatBitsToFloat(uint16_t(b)); }
  static uint64_t store(double v, Round r) { return f32ToBFloatBits(v, r); }
};

/// Flags carried in Inst::mode: bits 0-1 rounding, 2 ftz, 3 sat, 4 NaN
/// (min/max), 5 negated predicate operand (setp).
constexpr uint8_t kFtz = 4, kSat = 8, kNaN = 16, kNegC = 32;

template <class M> M prepare(M x, uint8_t mode) {
  if ((mode & kFtz) && std::is_same_v<M, float>)
    return flush(x);
  return x;
}

/// Rounds and finishes a result computed in Math precision.
template <class T>
uint64_t finish(typename Fmt<T>::Math v, uint8_t mode) {
  using M = typename Fmt<T>::Math;
  if (mode & kSat)
    v = saturate(v);
  if constexpr (std::is_same_v<T, float>) {
    if (mode & kFtz)
      v = flush(v);
  }
  (void)sizeof(M);
  return Fmt<T>::store(v, Round(mode & 3));
}

// For f32 and f64 the operation itself rounds, in the instruction's mode;
// for 16-bit formats it is exact in double (add, sub, mul of 11-bit
// significands) and Fmt::store rounds once.
template <class T, class F>
typename Fmt<T>::Math compute(uint8_t mode, F f) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    return withRounding(Round(mode & 3), f);
  else
    return f();
}

struct AddOp { template <class M> static M f(M a, M b) { volatile M x = a, y = b; return x + y; } };
struct SubOp { template <class M> static M f(M a, M b) { volatile M x = a, y = b; return x - y; } };
struct MulOp { template <class M> static M f(M a, M b) { volatile M x = a, y = b; return x * y; } };
struct DivOp { template <class M> static M f(M a, M b) { volatile M x = a, y = b; return x / y; } };

template <class T, class Op> void arith2(Warp &w, const Inst &in, uint32_t m) {
  using M = typename Fmt<T>::Math;
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  uint8_t mode = in.mode;
  forLanes(m, [&](int l) {
    M x = prepare(M(Fmt<T>::load(a[l])), mode);
    M y = prepare(M(Fmt<T>::load(b[l])), mode);
    d[l] = finish<T>(compute<T>(mode, [&] { return Op::template f<M>(x, y); }), mode);
  });
}

template <class T> void fma3(Warp &w, const Inst &in, uint32_t m) {
  using M = typename Fmt<T>::Math;
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  uint8_t mode = in.mode;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (mode == 0) { // .rn, no .ftz or .sat: the host's fma, rounded once
      forLanes(m, [&](int l) {
        d[l] = put<T>(std::fma(get<T>(a[l]), get<T>(b[l]), get<T>(c[l])));
      });
      return;
    }
  }
  forLanes(m, [&](int l) {
    M x = prepare(M(Fmt<T>::load(a[l])), mode);
    M y = prepare(M(Fmt<T>::load(b[l])), mode);
    M z = prepare(M(Fmt<T>::load(c[l])), mode);
    d[l] = finish<T>(compute<T>(mode, [&] {
                       volatile M p = x, q = y, s = z;
                       return std::fma(M(p), M(q), M(s));
                     }),
                     mode);
  });
}

/// Packed pairs: the same operation on each 16-bit half.
template <class T, class Op> void arith2x2(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  uint8_t mode = in.mode;
  forLanes(m, [&](int l) {
    uint64_t r = 0;
    for (int h = 0; h < 2; ++h) {
      double x = Fmt<T>::load(a[l] >> (16 * h)), y = Fmt<T>::load(b[l] >> (16 * h));
      r |= (finish<T>(Op::template f<double>(x, y), mode) & 0xffff) << (16 * h);
    }
    d[l] = r;
  });
}
/// neg and abs on packed pairs: PTX ISA "neg" and "abs" on .f16x2 and
/// .bf16x2 flip and clear each half's sign bit (NaN payloads kept).
template <bool Negate> void sign2x2(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  forLanes(m, [&](int l) {
    uint32_t x = uint32_t(a[l]);
    d[l] = Negate ? (x ^ 0x80008000u) : (x & 0x7fff7fffu);
  });
}
template <class T> void fma3x2(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  uint8_t mode = in.mode;
  forLanes(m, [&](int l) {
    uint64_t r = 0;
    for (int h = 0; h < 2; ++h) {
      double x = Fmt<T>::load(a[l] >> (16 * h)), y = Fmt<T>::load(b[l] >> (16 * h)),
             z = Fmt<T>::load(c[l] >> (16 * h));
      r |= (finish<T>(std::fma(x, y, z), mode) & 0xffff) << (16 * h);
    }
    d[l] = r;
  });
}

/// min/max: a NaN operand yields the other operand (both NaN: a canonical
/// NaN), unless .NaN; -0 is below +0.
template <bool IsMax, class M> M minMax(M x, M y, bool propagateNaN) {
  bool nx = std::isnan(x), ny = std::isnan(y);
  if (nx || ny) {
    if (propagateNaN || (nx && ny))
      return std::numeric_limits<M>::quiet_NaN();
    return nx ? y : x;
  }
  if (x == y && x == 0) {
    bool negX = std::signbit(x);
    if (IsMax)
      return negX ? y : x;
    return negX ? x : y;
  }
  return IsMax ? (x > y ? x : y) : (x < y ? x : y);
}

template <class T, bool IsMax> void minmax(Warp &w, const Inst &in, uint32_t m) {
  using M = typename Fmt<T>::Math;
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  uint8_t mode = in.mode;
  forLanes(m, [&](int l) {
    M x = prepare(M(Fmt<T>::load(a[l])), mode), y = prepare(M(Fmt<T>::load(b[l])), mode);
    d[l] = finish<T>(minMax<IsMax>(x, y, mode & kNaN), mode);
  });
}

enum Func { Abs, Neg, Rcp, Sqrt, Rsqrt, Ex2, Lg2, Sin, Cos, Tanh };

template <class T, int F> void func1(Warp &w, const Inst &in, uint32_t m) {
  using M = typename Fmt<T>::Math;
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  uint8_t mode = in.mode;
  forLanes(m, [&](int l) {
    if constexpr (F == Abs || F == Neg) {
      // Sign bit only: exact for NaN too (PTX: abs/neg of NaN keeps it).
      uint64_t bits = a[l];
      unsigned top = sizeof(T) * 8 - 1;
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat>)
        top = 15;
      uint64_t sign = uint64_t(1) << top;
      uint64_t r = F == Abs ? (bits & ~sign) : (bits ^ sign);
      if ((mode & kFtz) && std::is_same_v<T, float>)
        r = put<float>(flush(get<float>(r)));
      d[l] = r;
      return;
    }
    M x = prepare(M(Fmt<T>::load(a[l])), mode);
    M r;
    switch (F) {
    case Rcp: r = compute<T>(mode, [&] { volatile M v = x; return M(1) / v; }); break;
    case Sqrt: r = compute<T>(mode, [&] { volatile M v = x; return std::sqrt(M(v)); }); break;
    case Rsqrt: r = M(1) / std::sqrt(x); break;
    case Ex2: r = std::exp2(x); break;
    case Lg2: r = std::log2(x); break;
    case Sin: r = std::sin(x); break;
    case Cos: r = std::cos(x); break;
    default: r = std::tanh(x); break;
    }
    d[l] = finish<T>(r, mode);
  });
}

template <bool IsDouble> void copysignOp(Warp &w, const Inst &in, uint32_t m) {
  // copysign d, a, b: b's magnitude with a's sign.
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  uint64_t sign = IsDouble ? (uint64_t(1) << 63) : (uint64_t(1) << 31);
  uint64_t width = IsDouble ? ~0ull : 0xffffffffull;
  forLanes(m, [&](int l) { d[l] = ((b[l] & ~sign) | (a[l] & sign)) & width; });
}

enum TestKind { Finite, Infinite, Number, NotANumber, Normal, Subnormal };

template <class M, int K> void testp(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  forLanes(m, [&](int l) {
    M x = get<M>(a[l]);
    bool r;
    switch (K) {
    case Finite: r = std::isfinite(x); break;
    case Infinite: r = std::isinf(x); break;
    case Number: r = !std::isnan(x); break;
    case NotANumber: r = std::isnan(x); break;
    case Normal: r = std::isnormal(x); break;
    default: r = std::fpclassify(x) == FP_SUBNORMAL; break;
    }
    d[l] = r;
  });
}

enum FCmp { Eq, Ne, Lt, Le, Gt, Ge, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };

template <class M, int C> bool fcompare(M a, M b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (C) {
  case Eq: return !unordered && a == b;
  case Ne: return !unordered && a != b;
  case Lt: return !unordered && a < b;
  case Le: return !unordered && a <= b;
  case Gt: return !unordered && a > b;
  case Ge: return !unordered && a >= b;
  case Equ: return unordered || a == b;
  case Neu: return unordered || a != b;
  case Ltu: return unordered || a < b;
  case Leu: return unordered || a <= b;
  case Gtu: return unordered || a > b;
  case Geu: return unordered || a >= b;
  case Num: return !unordered;
  default: return unordered;
  }
}

template <class T, int C, int BoolOp>
void fsetp(Warp &w, const Inst &in, uint32_t m) {
  using M = typename Fmt<T>::Math;
  uint64_t *p = w.reg(in.d[0]);
  uint64_t *q = in.d[1] >= 0 ? w.reg(in.d[1]) : nullptr;
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  const uint64_t *c = BoolOp ? w.reg(in.s[2]) : nullptr;
  uint8_t mode = in.mode;
  bool negate = mode & kNegC;
  forLanes(m, [&](int l) {
    M x = prepare(M(Fmt<T>::load(a[l])), mode), y = prepare(M(Fmt<T>::load(b[l])), mode);
    bool t = fcompare<M, C>(x, y);
    bool cv = BoolOp ? (bool(c[l]) != negate) : true;
    p[l] = combinePredicate<BoolOp>(t, cv);
    if (q)
      q[l] = combinePredicate<BoolOp>(!t, cv);
  });
}

//===----------------------------------------------------------------------===//
// Type dispatch
//===----------------------------------------------------------------------===//

template <template <class> class H> Handler byFloat(Type t) {
  switch (t) {
  case Type::F32: return H<float>::get();
  case Type::F64: return H<double>::get();
  case Type::F16: return H<Half>::get();
  case Type::BF16: return H<BFloat>::get();
  default: return nullptr;
  }
}

template <class Op> struct Arith2 {
  template <class T> struct H { static Handler get() { return arith2<T, Op>; } };
};
template <class T> struct Fma3 { static Handler get() { return fma3<T>; } };
template <class T> struct MinH { static Handler get() { return minmax<T, false>; } };
template <class T> struct MaxH { static Handler get() { return minmax<T, true>; } };
template <int F> struct Func1 {
  template <class T> struct H { static Handler get() { return func1<T, F>; } };
};
template <int C, int B> struct FSetp {
  template <class T> struct H { static Handler get() { return fsetp<T, C, B>; } };
};

template <int C> Handler fsetpBool(int boolOp, Type t) {
  switch (boolOp) {
  case 1: return byFloat<FSetp<C, 1>::template H>(t);
  case 2: return byFloat<FSetp<C, 2>::template H>(t);
  case 3: return byFloat<FSetp<C, 3>::template H>(t);
  default: return byFloat<FSetp<C, 0>::template H>(t);
  }
}

} // namespace

bool tprt::emu::decodeFloat(const Statement &st, Inst &inst, DecodeContext &ctx,
                            std::string &error, bool &known) {
  const std::string &op = st.opcode[0];
  std::vector<Type> types = typesOf(st);
  Type type = types.empty() ? Type::None : types.back();
  known = true;
  if (op == "testp") {
    static const char *kKinds[] = {"finite", "infinite", "number",
                                   "notanumber", "normal", "subnormal"};
    int kind = -1;
    for (int i = 0; i < 6; ++i)
      if (hasModifier(st, kKinds[i]))
        kind = i;
    bool dbl = type == Type::F64;
    if (kind < 0 || (type != Type::F32 && !dbl) || st.operands.size() != 2) {
      error = "testp: unsupported form";
      return false;
    }
    static const Handler kF[] = {testp<float, Finite>, testp<float, Infinite>,
                                 testp<float, Number>, testp<float, NotANumber>,
                                 testp<float, Normal>, testp<float, Subnormal>};
    static const Handler kD[] = {testp<double, Finite>, testp<double, Infinite>,
                                 testp<double, Number>, testp<double, NotANumber>,
                                 testp<double, Normal>, testp<double, Subnormal>};
    inst.run = dbl ? kD[kind] : kF[kind];
    inst.d[0] = ctx.registerOf(st.operands[0], Type::Pred, error);
    inst.s[0] = ctx.registerOf(st.operands[1], type, error);
    return inst.d[0] >= 0 && inst.s[0] >= 0;
  }
  if (!isFloatType(type)) {
    known = false;
    return false;
  }

  uint8_t mode = 0;
  for (size_t i = 1; i < st.opcode.size(); ++i) {
    const std::string &m = st.opcode[i];
    if (m == "rz") mode = (mode & ~3) | uint8_t(Round::Zero);
    else if (m == "rm") mode = (mode & ~3) | uint8_t(Round::Down);
    else if (m == "rp") mode = (mode & ~3) | uint8_t(Round::Up);
    else if (m == "ftz") mode |= kFtz;
    else if (m == "sat") mode |= kSat;
    else if (m == "NaN") mode |= kNaN;
    else if (m == "relu" || m == "xorsign" || m == "oob") {
      error = opcodeText(st) + ": ." + m + " is not supported by the emulator";
      return false;
    }
  }
  inst.mode = mode;
  bool packed = type == Type::F16x2 || type == Type::BF16x2;

  auto operands = [&](size_t n) {
    if (st.operands.size() != n + 1) {
      error = opcodeText(st) + " takes " + std::to_string(n + 1) + " operands";
      return false;
    }
    inst.d[0] = ctx.registerOf(st.operands[0], type, error);
    if (inst.d[0] < 0)
      return false;
    for (size_t i = 0; i < n; ++i)
      if ((inst.s[i] = ctx.registerOf(st.operands[1 + i], type, error)) < 0)
        return false;
    return true;
  };
  auto done = [&](Handler h, size_t n) {
    inst.run = h;
    if (!h) {
      error = opcodeText(st) + " is not supported by the emulator";
      return false;
    }
    return operands(n);
  };

  if (packed) {
    bool bf = type == Type::BF16x2;
    if (op == "add") return done(bf ? arith2x2<BFloat, AddOp> : arith2x2<Half, AddOp>, 2);
    if (op == "sub") return done(bf ? arith2x2<BFloat, SubOp> : arith2x2<Half, SubOp>, 2);
    if (op == "mul") return done(bf ? arith2x2<BFloat, MulOp> : arith2x2<Half, MulOp>, 2);
    if (op == "fma") return done(bf ? fma3x2<BFloat> : fma3x2<Half>, 3);
    if (op == "neg") return done(sign2x2<true>, 1);
    if (op == "abs") return done(sign2x2<false>, 1);
    error = opcodeText(st) + " is not supported by the emulator";
    return false;
  }

  if (op == "add") return done(byFloat<Arith2<AddOp>::H>(type), 2);
  if (op == "sub") return done(byFloat<Arith2<SubOp>::H>(type), 2);
  if (op == "mul") return done(byFloat<Arith2<MulOp>::H>(type), 2);
  if (op == "div") return done(byFloat<Arith2<DivOp>::H>(type), 2);
  if (op == "fma" || op == "mad") return done(byFloat<Fma3>(type), 3);
  if (op == "min") return done(byFloat<MinH>(type), 2);
  if (op == "max") return done(byFloat<MaxH>(type), 2);
  if (op == "abs") return done(byFloat<Func1<Abs>::H>(type), 1);
  if (op == "neg") return done(byFloat<Func1<Neg>::H>(type), 1);
  if (op == "rcp") return done(byFloat<Func1<Rcp>::H>(type), 1);
  if (op == "sqrt") return done(byFloat<Func1<Sqrt>::H>(type), 1);
  if (op == "rsqrt") return done(byFloat<Func1<Rsqrt>::H>(type), 1);
  if (op == "ex2") return done(byFloat<Func1<Ex2>::H>(type), 1);
  if (op == "lg2") return done(byFloat<Func1<Lg2>::H>(type), 1);
  if (op == "sin") return done(byFloat<Func1<Sin>::H>(type), 1);
  if (op == "cos") return done(byFloat<Func1<Cos>::H>(type), 1);
  if (op == "tanh") return done(byFloat<Func1<Tanh>::H>(type), 1);
  if (op == "copysign") {
    if (type != Type::F32 && type != Type::F64) {
      error = "copysign of " + std::string(typeName(type));
      return false;
    }
    return done(type == Type::F64 ? copysignOp<true> : copysignOp<false>, 2);
  }
  if (op == "setp") {
    static const char *kCmp[] = {"eq", "ne", "lt", "le", "gt", "ge", "equ",
                                 "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
    int cmp = -1;
    for (int i = 0; i < 14; ++i)
      if (st.opcode.size() > 1 && st.opcode[1] == kCmp[i])
        cmp = i;
    if (cmp < 0) {
      error = "setp: unknown comparison " + (st.opcode.size() > 1 ? st.opcode[1] : "");
      return false;
    }
    int boolOp = hasModifier(st, "and") ? 1 : hasModifier(st, "or") ? 2
                 : hasModifier(st, "xor") ? 3 : 0;
    Handler h = nullptr;
    switch (cmp) {
#define C(N) case N: h = fsetpBool<N>(boolOp, type); break;
      C(Eq) C(Ne) C(Lt) C(Le) C(Gt) C(Ge) C(Equ) C(Neu) C(Ltu) C(Leu) C(Gtu)
      C(Geu) C(Num) C(Nan)
#undef C
    }
    inst.run = h;
    if (!h) {
      error = opcodeText(st) + " is not supported by the emulator";
      return false;
    }
    size_t n = boolOp ? 3 : 2;
    if (st.operands.size() != n + 1) {
      error = "setp takes " + std::to_string(n + 1) + " operands";
      return false;
    }
    inst.d[0] = ctx.registerOf(st.operands[0], Type::Pred, error);
    if (inst.d[0] < 0)
      return false;
    if (!secondDestination(st, inst, ctx, error))
      return false;
    for (size_t i = 0; i < n; ++i)
      if ((inst.s[i] = ctx.registerOf(st.operands[1 + i],
                                      i == 2 ? Type::Pred : type, error)) < 0)
        return false;
    if (boolOp && st.operands[3].negated)
      inst.mode |= kNegC;
    return true;
  }
  known = false;
  return false;
}
