//===- OpsInteger.cpp - Moves, integer arithmetic, bits, compares ---------===//
//
// The integer half of PTX's arithmetic (add, sub, mul, mad in their .lo,
// .hi, .wide and carry forms, div, rem, min, max, abs, neg), the bitwise
// operations (and, or, xor, not, cnot, lop3, shl, shr, shf, bfe, bfi,
// prmt, popc, clz, brev, bfind), mov (with vector packing), selp, and
// setp on integers and bits. Arithmetic wraps like the hardware's (it is
// done on unsigned types); the cases C++ leaves undefined get the result
// PTX defines (shifts past the width) or a fixed one (division by zero:
// all ones, like the hardware's unsigned division), never host UB.
//
//===----------------------------------------------------------------------===//

#include "Decode.h"
#include "Exec.h"

#include <climits>
#include <limits>
#include <type_traits>

using namespace tprt::emu;

namespace {

template <class T> using U = std::make_unsigned_t<T>;
template <class T> constexpr int bits() { return int(sizeof(T) * 8); }

//===----------------------------------------------------------------------===//
// Handler shapes
//===----------------------------------------------------------------------===//

template <class T, class Op> void unary(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  forLanes(m, [&](int l) { d[l] = put<T>(Op::template f<T>(get<T>(a[l]))); });
}

template <class T, class Op> void binary(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  forLanes(m, [&](int l) {
    d[l] = put<T>(Op::template f<T>(get<T>(a[l]), get<T>(b[l])));
  });
}

template <class T, class Op> void ternary(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  forLanes(m, [&](int l) {
    d[l] = put<T>(
        Op::template f<T>(get<T>(a[l]), get<T>(b[l]), get<T>(c[l])));
  });
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

struct Add { template <class T> static T f(T a, T b) { return T(U<T>(a) + U<T>(b)); } };
struct Sub { template <class T> static T f(T a, T b) { return T(U<T>(a) - U<T>(b)); } };
struct MulLo { template <class T> static T f(T a, T b) { return T(U<T>(a) * U<T>(b)); } };
struct MulHi {
  template <class T> static T f(T a, T b) {
    if constexpr (sizeof(T) == 8) {
      using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
      return T(uint64_t((W(a) * W(b)) >> 64));
    } else {
      using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      return T((W(a) * W(b)) >> bits<T>());
    }
  }
};
struct Div {
  template <class T> static T f(T a, T b) {
    if (b == 0)
      return T(~U<T>(0));
    if constexpr (std::is_signed_v<T>)
      if (a == std::numeric_limits<T>::min() && b == T(-1))
        return a;
    return T(a / b);
  }
};
struct Rem {
  template <class T> static T f(T a, T b) {
    if (b == 0)
      return a;
    if constexpr (std::is_signed_v<T>)
      if (a == std::numeric_limits<T>::min() && b == T(-1))
        return 0;
    return T(a % b);
  }
};
struct Min { template <class T> static T f(T a, T b) { return a < b ? a : b; } };
struct Max { template <class T> static T f(T a, T b) { return a > b ? a : b; } };
struct Abs {
  template <class T> static T f(T a) { return a < 0 ? T(U<T>(0) - U<T>(a)) : a; }
};
struct Neg { template <class T> static T f(T a) { return T(U<T>(0) - U<T>(a)); } };
struct And { template <class T> static T f(T a, T b) { return T(a & b); } };
struct Or { template <class T> static T f(T a, T b) { return T(a | b); } };
struct Xor { template <class T> static T f(T a, T b) { return T(a ^ b); } };
struct Not { template <class T> static T f(T a) { return T(~a); } };
struct Cnot { template <class T> static T f(T a) { return T(a == 0 ? 1 : 0); } };
struct MadLo { template <class T> static T f(T a, T b, T c) { return Add::f<T>(MulLo::f<T>(a, b), c); } };
struct MadHi { template <class T> static T f(T a, T b, T c) { return Add::f<T>(MulHi::f<T>(a, b), c); } };
struct Popc { template <class T> static T f(T a) { return T(__builtin_popcountll(uint64_t(U<T>(a)))); } };
struct Clz {
  template <class T> static T f(T a) {
    uint64_t v = uint64_t(U<T>(a));
    return v == 0 ? T(bits<T>()) : T(__builtin_clzll(v) - (64 - bits<T>()));
  }
};
struct Brev {
  template <class T> static T f(T a) {
    U<T> v = U<T>(a), r = 0;
    for (int i = 0; i < bits<T>(); ++i)
      if (v & (U<T>(1) << i))
        r |= U<T>(1) << (bits<T>() - 1 - i);
    return T(r);
  }
};

// Shifts take a u32 amount; PTX clamps amounts past the width.
template <class T> void shl(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  forLanes(m, [&](int l) {
    uint32_t n = uint32_t(b[l]);
    d[l] = put<T>(n >= uint32_t(bits<T>()) ? T(0) : T(U<T>(get<T>(a[l])) << n));
  });
}
template <class T> void shr(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  forLanes(m, [&](int l) {
    uint32_t n = uint32_t(b[l]);
    T v = get<T>(a[l]);
    if (n >= uint32_t(bits<T>()))
      d[l] = put<T>(std::is_signed_v<T> && v < 0 ? T(-1) : T(0));
    else
      d[l] = put<T>(T(v >> n));
  });
}

template <bool Left, bool Clamp> void shf(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  forLanes(m, [&](int l) {
    uint32_t n = uint32_t(c[l]);
    n = Clamp ? (n > 32 ? 32 : n) : (n & 31);
    uint64_t both = (uint64_t(uint32_t(b[l])) << 32) | uint32_t(a[l]);
    uint32_t r = Left ? uint32_t((both << n) >> 32) : uint32_t(both >> n);
    d[l] = r;
  });
}

template <class T> void bfe(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  constexpr int msb = bits<T>() - 1;
  forLanes(m, [&](int l) {
    int pos = int(b[l] & 0xff), len = int(c[l] & 0xff);
    U<T> v = U<T>(get<T>(a[l]));
    U<T> r = 0;
    bool sbit = false;
    if constexpr (std::is_signed_v<T>) {
      int top = pos + len - 1 > msb ? msb : pos + len - 1;
      sbit = len > 0 && top >= 0 && ((v >> top) & 1);
    }
    for (int i = 0; i <= msb; ++i) {
      bool bit = (i < len && pos + i <= msb) ? ((v >> (pos + i)) & 1) : sbit;
      if (bit)
        r |= U<T>(1) << i;
    }
    d[l] = put<T>(T(r));
  });
}

template <class T> void bfi(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *f = w.reg(in.s[0]), *b = w.reg(in.s[1]),
                 *c = w.reg(in.s[2]), *e = w.reg(in.s[3]);
  constexpr int msb = bits<T>() - 1;
  forLanes(m, [&](int l) {
    int pos = int(c[l] & 0xff), len = int(e[l] & 0xff);
    U<T> r = U<T>(get<T>(b[l])), src = U<T>(get<T>(f[l]));
    for (int i = 0; i < len && pos + i <= msb; ++i) {
      U<T> bit = U<T>(1) << (pos + i);
      r = (src >> i) & 1 ? (r | bit) : (r & ~bit);
    }
    d[l] = put<T>(T(r));
  });
}

template <class T> void bfind(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  bool shiftAmount = in.mode != 0;
  forLanes(m, [&](int l) {
    T v = get<T>(a[l]);
    U<T> u = U<T>(v);
    if (std::is_signed_v<T> && v < 0)
      u = ~u;
    uint32_t r = 0xffffffffu;
    if (u) {
      r = uint32_t(63 - __builtin_clzll(uint64_t(u)));
      if (shiftAmount)
        r = uint32_t(bits<T>() - 1) - r;
    }
    d[l] = r;
  });
}

void prmt(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  forLanes(m, [&](int l) {
    uint64_t both = (uint64_t(uint32_t(b[l])) << 32) | uint32_t(a[l]);
    uint32_t sel = uint32_t(c[l]), r = 0;
    for (int i = 0; i < 4; ++i) {
      uint32_t s = (sel >> (4 * i)) & 0xf;
      uint32_t byte = uint32_t(both >> (8 * (s & 7))) & 0xff;
      if (s & 8)
        byte = (byte & 0x80) ? 0xff : 0;
      r |= byte << (8 * i);
    }
    d[l] = r;
  });
}

void lop3(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]),
                 *c = w.reg(in.s[2]), *lut = w.reg(in.s[3]);
  forLanes(m, [&](int l) {
    uint32_t x = uint32_t(a[l]), y = uint32_t(b[l]), z = uint32_t(c[l]);
    uint32_t table = uint32_t(lut[l]) & 0xff, r = 0;
    for (int k = 0; k < 8; ++k)
      if (table & (1u << k))
        r |= ((k & 4) ? x : ~x) & ((k & 2) ? y : ~y) & ((k & 1) ? z : ~z);
    d[l] = r;
  });
}

template <class Narrow, class Wide>
void mulWide(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  forLanes(m, [&](int l) {
    d[l] = put<Wide>(Wide(U<Wide>(Wide(get<Narrow>(a[l]))) *
                          U<Wide>(Wide(get<Narrow>(b[l])))));
  });
}

template <class Narrow, class Wide>
void madWide(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  forLanes(m, [&](int l) {
    U<Wide> p = U<Wide>(Wide(get<Narrow>(a[l]))) * U<Wide>(Wide(get<Narrow>(b[l])));
    d[l] = put<Wide>(Wide(p + U<Wide>(get<Wide>(c[l]))));
  });
}

// Carry chains: add.cc, addc, sub.cc, subc, mad.lo.cc, madc.{lo,hi}.
// Kind: 0 add, 1 sub, 2 mad.lo, 3 mad.hi. CarryIn: the c-form; CarryOut:
// .cc.
template <class T, int Kind, bool CarryIn, bool CarryOut>
void carry(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  const uint64_t *c = Kind >= 2 ? w.reg(in.s[2]) : nullptr;
  forLanes(m, [&](int l) {
    using UT = U<T>;
    unsigned __int128 x = UT(get<T>(a[l])), y = UT(get<T>(b[l]));
    unsigned __int128 cin = CarryIn ? ((w.carry >> l) & 1) : 0;
    unsigned __int128 r;
    bool out;
    constexpr unsigned __int128 limit = (unsigned __int128)1 << bits<T>();
    if constexpr (Kind == 1) {
      unsigned __int128 sub = y + cin;
      out = x < sub;
      r = (x - sub) & (limit - 1);
    } else {
      unsigned __int128 base;
      if constexpr (Kind == 0)
        base = x;
      else if constexpr (Kind == 2)
        base = (x * y) & (limit - 1);
      else
        base = (x * y) >> bits<T>();
      unsigned __int128 addend = Kind == 0 ? y : UT(get<T>(c[l]));
      unsigned __int128 sum = base + addend + cin;
      out = sum >= limit;
      r = sum & (limit - 1);
    }
    d[l] = put<T>(T(UT(r)));
    if (CarryOut)
      w.carry = out ? (w.carry | (1u << l)) : (w.carry & ~(1u << l));
  });
}

//===----------------------------------------------------------------------===//
// mov, selp, setp
//===----------------------------------------------------------------------===//

template <class T> void mov(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  forLanes(m, [&](int l) { d[l] = put<T>(get<T>(a[l])); });
}

/// mov.bN {e0, e1, ...}, a: little-endian pieces; `count` of them.
void unpack(Warp &w, const Inst &in, uint32_t m) {
  const uint64_t *a = w.reg(in.s[0]);
  unsigned width = in.bytes * 8;
  uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
  for (int e = 0; e < in.count; ++e) {
    if (in.d[e] < 0)
      continue;
    uint64_t *d = w.reg(in.d[e]);
    forLanes(m, [&](int l) { d[l] = (a[l] >> (width * e)) & mask; });
  }
}
void pack(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  unsigned width = in.bytes * 8;
  uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
  forLanes(m, [&](int l) {
    uint64_t v = 0;
    for (int e = 0; e < in.count; ++e)
      v |= (w.reg(in.s[e])[l] & mask) << (width * e);
    d[l] = v;
  });
}

template <class T> void selp(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  forLanes(m, [&](int l) { d[l] = put<T>(get<T>(c[l] ? a[l] : b[l])); });
}

enum Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <class T, int C> bool compare(T a, T b) {
  switch (C) {
  case Eq: return a == b;
  case Ne: return a != b;
  case Lt: return a < b;
  case Le: return a <= b;
  case Gt: return a > b;
  default: return a >= b;
  }
}

/// setp.CMP[.BOOL].T p[|q], a, b[, {!}c]. BoolOp: 0 none, 1 and, 2 or,
/// 3 xor. in.mode bit 0: c is negated.
template <class T, int C, int BoolOp> void setp(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *p = w.reg(in.d[0]);
  uint64_t *q = in.d[1] >= 0 ? w.reg(in.d[1]) : nullptr;
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  const uint64_t *c = BoolOp ? w.reg(in.s[2]) : nullptr;
  bool negate = in.mode & 1;
  forLanes(m, [&](int l) {
    bool t = compare<T, C>(get<T>(a[l]), get<T>(b[l]));
    bool cv = BoolOp ? (bool(c[l]) != negate) : true;
    p[l] = combinePredicate<BoolOp>(t, cv);
    if (q)
      q[l] = combinePredicate<BoolOp>(!t, cv);
  });
}

//===----------------------------------------------------------------------===//
// Type dispatch
//===----------------------------------------------------------------------===//

/// Calls F::template get<T>() with the C++ integer type of `type`.
template <class F> Handler byInt(Type type, bool forceSigned = false) {
  switch (type) {
  case Type::S8: return F::template get<int8_t>();
  case Type::S16: return F::template get<int16_t>();
  case Type::S32: return F::template get<int32_t>();
  case Type::S64: return F::template get<int64_t>();
  case Type::U8: case Type::B8: case Type::Pred:
    return forceSigned ? F::template get<int8_t>() : F::template get<uint8_t>();
  case Type::U16: case Type::B16: case Type::F16: case Type::BF16:
    return forceSigned ? F::template get<int16_t>() : F::template get<uint16_t>();
  case Type::U32: case Type::B32: case Type::F32: case Type::F16x2:
  case Type::BF16x2:
    return forceSigned ? F::template get<int32_t>() : F::template get<uint32_t>();
  case Type::U64: case Type::B64: case Type::F64:
    return forceSigned ? F::template get<int64_t>() : F::template get<uint64_t>();
  default:
    return nullptr;
  }
}

template <class Op> struct Unary { template <class T> static Handler get() { return unary<T, Op>; } };
template <class Op> struct Binary { template <class T> static Handler get() { return binary<T, Op>; } };
template <class Op> struct Ternary { template <class T> static Handler get() { return ternary<T, Op>; } };
struct Shl { template <class T> static Handler get() { return shl<T>; } };
struct Shr { template <class T> static Handler get() { return shr<T>; } };
struct Bfe { template <class T> static Handler get() { return bfe<T>; } };
struct Bfi { template <class T> static Handler get() { return bfi<T>; } };
struct Bfind { template <class T> static Handler get() { return bfind<T>; } };
struct Mov { template <class T> static Handler get() { return mov<T>; } };
struct Selp { template <class T> static Handler get() { return selp<T>; } };
template <int C, int B> struct Setp { template <class T> static Handler get() { return setp<T, C, B>; } };
template <int K, bool I, bool O> struct Carry { template <class T> static Handler get() { return carry<T, K, I, O>; } };

template <int C> Handler setpBool(int boolOp, Type type) {
  switch (boolOp) {
  case 1: return byInt<Setp<C, 1>>(type);
  case 2: return byInt<Setp<C, 2>>(type);
  case 3: return byInt<Setp<C, 3>>(type);
  default: return byInt<Setp<C, 0>>(type);
  }
}

bool sources(const Statement &st, Inst &inst, DecodeContext &ctx, size_t first,
             size_t count, Type type, std::string &error) {
  if (st.operands.size() != first + count) {
    error = opcodeText(st) + " takes " + std::to_string(first + count) +
            " operands";
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    inst.s[i] = ctx.registerOf(st.operands[first + i], type, error);
    if (inst.s[i] < 0)
      return false;
  }
  return true;
}

bool dest(const Statement &st, Inst &inst, DecodeContext &ctx,
          std::string &error) {
  if (st.operands.empty() || st.operands[0].kind != Operand::Kind::Register) {
    error = opcodeText(st) + " needs a destination register";
    return false;
  }
  inst.d[0] = ctx.registerOf(st.operands[0], Type::B64, error);
  return inst.d[0] >= 0;
}

/// The operation's type: its last type suffix.
Type lastType(const Statement &st) {
  std::vector<Type> types = typesOf(st);
  return types.empty() ? Type::None : types.back();
}

} // namespace

bool tprt::emu::decodeInteger(const Statement &st, Inst &inst,
                              DecodeContext &ctx, std::string &error,
                              bool &known) {
  const std::string &op = st.opcode[0];
  Type type = lastType(st);
  known = true;
  bool isFloat = isFloatType(type) && type != Type::F16x2 &&
                 type != Type::BF16x2;

  if (op == "mov") {
    if (st.operands.size() != 2) {
      error = "mov takes two operands";
      return false;
    }
    const Operand &d = st.operands[0], &a = st.operands[1];
    unsigned width = typeBytes(type);
    if (d.kind == Operand::Kind::Vector || a.kind == Operand::Kind::Vector) {
      const Operand &vec = d.kind == Operand::Kind::Vector ? d : a;
      size_t n = vec.elements.size();
      if ((n != 2 && n != 4) || width % n) {
        error = "mov: a vector of " + std::to_string(n) + " pieces of a " +
                typeName(type);
        return false;
      }
      inst.bytes = uint8_t(width / n);
      inst.count = uint8_t(n);
      if (d.kind == Operand::Kind::Vector) {
        inst.run = unpack;
        for (size_t i = 0; i < n; ++i)
          if (vec.elements[i].kind != Operand::Kind::Sink &&
              (inst.d[i] = ctx.registerOf(vec.elements[i], type, error)) < 0)
            return false;
        inst.s[0] = ctx.registerOf(a, type, error);
        return inst.s[0] >= 0;
      }
      inst.run = pack;
      for (size_t i = 0; i < n; ++i)
        if ((inst.s[i] = ctx.registerOf(vec.elements[i], type, error)) < 0)
          return false;
      return dest(st, inst, ctx, error);
    }
    inst.run = byInt<Mov>(type);
    if (!inst.run) {
      error = std::string("mov of type ") + typeName(type);
      return false;
    }
    return dest(st, inst, ctx, error) && sources(st, inst, ctx, 1, 1, type, error);
  }
  if (op == "selp") {
    inst.run = byInt<Selp>(type);
    if (!inst.run)
      return false;
    if (!dest(st, inst, ctx, error) || !sources(st, inst, ctx, 1, 3, type, error))
      return false;
    if (st.operands[3].negated) {
      error = "selp with a negated predicate";
      return false;
    }
    return true;
  }
  if (op == "setp") {
    if (isFloatType(type)) { // packed f16x2/bf16x2 compares too
      known = false;
      return false;
    }
    static const char *kCmp[] = {"eq", "ne", "lt", "le", "gt", "ge",
                                 "lo", "ls", "hi", "hs"};
    int cmp = -1;
    for (int i = 0; i < 10; ++i)
      if (st.opcode.size() > 1 && st.opcode[1] == kCmp[i])
        cmp = i;
    if (cmp < 0) {
      error = "setp: unknown comparison";
      return false;
    }
    bool unsignedCmp = cmp >= 6;
    if (unsignedCmp)
      cmp = cmp == 6 ? Lt : cmp == 7 ? Le : cmp == 8 ? Gt : Ge;
    if (isSignedType(type) && unsignedCmp)
      type = type == Type::S8 ? Type::U8 : type == Type::S16 ? Type::U16
             : type == Type::S32 ? Type::U32 : Type::U64;
    int boolOp = hasModifier(st, "and") ? 1 : hasModifier(st, "or") ? 2
                 : hasModifier(st, "xor") ? 3 : 0;
    switch (cmp) {
    case Eq: inst.run = setpBool<Eq>(boolOp, type); break;
    case Ne: inst.run = setpBool<Ne>(boolOp, type); break;
    case Lt: inst.run = setpBool<Lt>(boolOp, type); break;
    case Le: inst.run = setpBool<Le>(boolOp, type); break;
    case Gt: inst.run = setpBool<Gt>(boolOp, type); break;
    default: inst.run = setpBool<Ge>(boolOp, type); break;
    }
    if (!inst.run)
      return false;
    if (!dest(st, inst, ctx, error))
      return false;
    if (!secondDestination(st, inst, ctx, error))
      return false;
    if (!sources(st, inst, ctx, 1, boolOp ? 3 : 2, type, error))
      return false;
    if (boolOp && st.operands[3].negated)
      inst.mode |= 1;
    return true;
  }

  // Float arithmetic, packed pairs included (mul.rn.bf16x2 is not an
  // integer multiply of the 32-bit register), belongs to decodeFloat.
  if (isFloatType(type) && op != "and" && op != "or" && op != "xor" &&
      op != "not") {
    known = false;
    return false;
  }

  auto simple = [&](Handler h, size_t n) {
    inst.run = h;
    if (!h) {
      error = opcodeText(st) + ": unsupported type";
      return false;
    }
    return dest(st, inst, ctx, error) && sources(st, inst, ctx, 1, n, type, error);
  };

  bool cc = hasModifier(st, "cc");
  if (op == "add" || op == "sub") {
    if (cc)
      return simple(op == "add" ? byInt<Carry<0, false, true>>(type)
                                : byInt<Carry<1, false, true>>(type), 2);
    if (hasModifier(st, "sat")) {
      error = "add.sat is not supported by the emulator";
      return false;
    }
    return simple(op == "add" ? byInt<Binary<Add>>(type) : byInt<Binary<Sub>>(type), 2);
  }
  if (op == "addc" || op == "subc")
    return simple(op == "addc"
                      ? (cc ? byInt<Carry<0, true, true>>(type) : byInt<Carry<0, true, false>>(type))
                      : (cc ? byInt<Carry<1, true, true>>(type) : byInt<Carry<1, true, false>>(type)),
                  2);
  if (op == "mul" || op == "mad") {
    bool mad = op == "mad";
    if (hasModifier(st, "wide")) {
      Handler h = nullptr;
      switch (type) {
      case Type::U16: h = mad ? madWide<uint16_t, uint32_t> : mulWide<uint16_t, uint32_t>; break;
      case Type::S16: h = mad ? madWide<int16_t, int32_t> : mulWide<int16_t, int32_t>; break;
      case Type::U32: h = mad ? madWide<uint32_t, uint64_t> : mulWide<uint32_t, uint64_t>; break;
      case Type::S32: h = mad ? madWide<int32_t, int64_t> : mulWide<int32_t, int64_t>; break;
      default: break;
      }
      return simple(h, mad ? 3 : 2);
    }
    bool hi = hasModifier(st, "hi");
    if (mad && cc)
      return simple(hi ? byInt<Carry<3, false, true>>(type) : byInt<Carry<2, false, true>>(type), 3);
    if (mad)
      return simple(hi ? byInt<Ternary<MadHi>>(type) : byInt<Ternary<MadLo>>(type), 3);
    return simple(hi ? byInt<Binary<MulHi>>(type) : byInt<Binary<MulLo>>(type), 2);
  }
  if (op == "madc") {
    bool hi = hasModifier(st, "hi");
    Handler h = hi ? (cc ? byInt<Carry<3, true, true>>(type) : byInt<Carry<3, true, false>>(type))
                   : (cc ? byInt<Carry<2, true, true>>(type) : byInt<Carry<2, true, false>>(type));
    return simple(h, 3);
  }
  if (op == "div")
    return simple(byInt<Binary<Div>>(type), 2);
  if (op == "rem")
    return simple(byInt<Binary<Rem>>(type), 2);
  if (op == "min")
    return simple(byInt<Binary<Min>>(type), 2);
  if (op == "max")
    return simple(byInt<Binary<Max>>(type), 2);
  if (op == "abs")
    return simple(byInt<Unary<Abs>>(type, true), 1);
  if (op == "neg")
    return simple(byInt<Unary<Neg>>(type), 1);
  if (op == "and")
    return simple(byInt<Binary<And>>(type), 2);
  if (op == "or")
    return simple(byInt<Binary<Or>>(type), 2);
  if (op == "xor")
    return simple(byInt<Binary<Xor>>(type), 2);
  if (op == "not")
    return simple(type == Type::Pred ? byInt<Unary<Cnot>>(type)
                                     : byInt<Unary<Not>>(type), 1);
  if (op == "cnot")
    return simple(byInt<Unary<Cnot>>(type), 1);
  if (op == "shl")
    return simple(byInt<Shl>(type), 2);
  if (op == "shr")
    return simple(byInt<Shr>(type), 2);
  if (op == "popc" || op == "clz" || op == "brev") {
    Handler h = op == "popc" ? byInt<Unary<Popc>>(type)
                : op == "clz" ? byInt<Unary<Clz>>(type)
                              : byInt<Unary<Brev>>(type);
    if (op != "brev" && (type == Type::B64 || type == Type::U64)) {
      // The result is a u32.
      h = op == "popc" ? unary<uint64_t, Popc> : unary<uint64_t, Clz>;
    }
    return simple(h, 1);
  }
  if (op == "bfe")
    return simple(byInt<Bfe>(type), 3);
  if (op == "bfi")
    return simple(byInt<Bfi>(type), 4);
  if (op == "bfind") {
    inst.mode = hasModifier(st, "shiftamt") ? 1 : 0;
    return simple(byInt<Bfind>(type), 1);
  }
  if (op == "shf") {
    bool left = hasModifier(st, "l"), clamp = hasModifier(st, "clamp");
    Handler h = left ? (clamp ? shf<true, true> : shf<true, false>)
                     : (clamp ? shf<false, true> : shf<false, false>);
    return simple(h, 3);
  }
  if (op == "prmt") {
    if (st.opcode.size() > 2) {
      error = "prmt with a mode (" + st.opcode[1] +
              ") is not supported by the emulator";
      return false;
    }
    return simple(prmt, 3);
  }
  if (op == "lop3")
    return simple(lop3, 4);
  known = false;
  return false;
}
