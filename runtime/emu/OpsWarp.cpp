//===- OpsWarp.cpp - Warp-synchronous exchanges: shfl, vote, redux, match --===//
//
// These instructions are rendezvous of the lanes named in their membermask
// (Simt.cpp blocks each lane at the instruction until every named lane has
// arrived, and reports lanes that exit or wait elsewhere). Their
// `exchange` handler then runs once for the group, with every lane's
// operands available: it first checks that the lanes agree on what the
// instruction requires to be uniform (the membermask, shfl's clamp/segment
// operand, which encodes the width), then computes each lane's result as
// the PTX ISA defines it. A lane that reads another lane outside the group
// (an inactive source lane) is an error, not an unpredictable value.
//
//===----------------------------------------------------------------------===//

#include "Decode.h"
#include "Exec.h"

#include <cstdio>

using namespace tprt::emu;

namespace {

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", v);
  return text;
}

enum ShflMode { Up, Down, Bfly, Idx };

/// Checks that every lane of `group` passes the same value in register
/// `reg` (an operand the ISA requires to be uniform).
void uniform(Warp &w, const Inst &in, uint32_t group, int32_t reg,
             const char *what) {
  if (reg < 0)
    return;
  const uint64_t *v = w.reg(reg);
  int first = __builtin_ctz(group);
  uint32_t value = uint32_t(v[first]);
  forLanes(group, [&](int l) {
    if (uint32_t(v[l]) != value)
      fail(w, in, l,
           std::string("lanes of one warp-synchronous instruction disagree on "
                       "its ") +
               what + ": lane " + std::to_string(first) + " passes " +
               hex32(value) + ", lane " + std::to_string(l) + " passes " +
               hex32(uint32_t(v[l])));
  });
}

void shfl(Warp &w, const Inst &in, uint32_t group) {
  uniform(w, in, group, in.s[2], "clamp and segment mask (the width)");
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]), *c = w.reg(in.s[2]);
  uint64_t *d = w.reg(in.d[0]);
  uint64_t *p = in.d[1] >= 0 ? w.reg(in.d[1]) : nullptr;
  uint32_t source[32];
  for (int l = 0; l < 32; ++l)
    source[l] = uint32_t(a[l]);
  uint32_t result[32], valid[32];
  forLanes(group, [&](int lane) {
    int bval = int(b[lane] & 0x1f);
    int cval = int(c[lane] & 0x1f);
    int segmask = int((c[lane] >> 8) & 0x1f);
    int maxLane = (lane & segmask) | (cval & ~segmask);
    int minLane = lane & segmask;
    int j = lane;
    bool pval = false;
    switch (in.mode) {
    case Up: j = lane - bval; pval = j >= maxLane; break;
    case Down: j = lane + bval; pval = j <= maxLane; break;
    case Bfly: j = lane ^ bval; pval = j <= maxLane; break;
    default: j = minLane | (bval & ~segmask); pval = j <= maxLane; break;
    }
    if (!pval)
      j = lane;
    if (!(group & (1u << j)))
      fail(w, in, lane,
           "shfl.sync reads lane " + std::to_string(j) +
               ", which is not in the membermask " + hex32(group) +
               " (its value is undefined)");
    result[lane] = source[j];
    valid[lane] = pval;
  });
  forLanes(group, [&](int lane) {
    d[lane] = result[lane];
    if (p)
      p[lane] = valid[lane];
  });
}

enum VoteMode { All, Any, Uni, Ballot };

void vote(Warp &w, const Inst &in, uint32_t group) {
  const uint64_t *a = w.reg(in.s[0]);
  uint64_t *d = w.reg(in.d[0]);
  bool negate = in.imm != 0;
  uint32_t ballot = 0;
  forLanes(group, [&](int l) {
    if (bool(a[l]) != negate)
      ballot |= 1u << l;
  });
  uint64_t r;
  switch (in.mode) {
  case All: r = ballot == group; break;
  case Any: r = ballot != 0; break;
  case Uni: r = ballot == 0 || ballot == group; break;
  default: r = ballot; break;
  }
  forLanes(group, [&](int l) { d[l] = r; });
}

enum ReduxOp { RAdd, RMin, RMax, RAnd, ROr, RXor };

template <bool Signed> void redux(Warp &w, const Inst &in, uint32_t group) {
  const uint64_t *a = w.reg(in.s[0]);
  uint64_t *d = w.reg(in.d[0]);
  int first = __builtin_ctz(group);
  int64_t acc = Signed ? int64_t(int32_t(a[first])) : int64_t(uint32_t(a[first]));
  forLanes(group & ~(1u << first), [&](int l) {
    int64_t v = Signed ? int64_t(int32_t(a[l])) : int64_t(uint32_t(a[l]));
    switch (in.mode) {
    case RAdd: acc += v; break;
    case RMin: acc = v < acc ? v : acc; break;
    case RMax: acc = v > acc ? v : acc; break;
    case RAnd: acc &= v; break;
    case ROr: acc |= v; break;
    default: acc ^= v; break;
    }
  });
  forLanes(group, [&](int l) { d[l] = uint32_t(acc); });
}

template <bool All> void match(Warp &w, const Inst &in, uint32_t group) {
  const uint64_t *a = w.reg(in.s[0]);
  uint64_t *d = w.reg(in.d[0]);
  uint64_t *p = in.d[1] >= 0 ? w.reg(in.d[1]) : nullptr;
  uint64_t width = in.bytes == 8 ? ~0ull : 0xffffffffull;
  forLanes(group, [&](int l) {
    uint32_t same = 0;
    forLanes(group, [&](int k) {
      if ((a[k] & width) == (a[l] & width))
        same |= 1u << k;
    });
    if (All) {
      bool all = same == group;
      d[l] = all ? group : 0;
      if (p)
        p[l] = all;
    } else {
      d[l] = same;
    }
  });
}

void activemask(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  forLanes(m, [&](int l) { d[l] = w.group; });
}

bool operands(const Statement &st, Inst &inst, DecodeContext &ctx, size_t n,
              std::string &error) {
  if (st.operands.size() != n) {
    error = opcodeText(st) + " takes " + std::to_string(n) + " operands";
    return false;
  }
  inst.d[0] = ctx.registerOf(st.operands[0], Type::B32, error);
  if (inst.d[0] < 0)
    return false;
  if (!secondDestination(st, inst, ctx, error))
    return false;
  for (size_t i = 1; i < n; ++i)
    if ((inst.s[i - 1] = ctx.registerOf(st.operands[i], Type::B32, error)) < 0)
      return false;
  inst.membermaskOperand = int8_t(n - 2);
  return true;
}

} // namespace

bool tprt::emu::decodeWarp(const Statement &st, Inst &inst, DecodeContext &ctx,
                           std::string &error, bool &known) {
  const std::string &op = st.opcode[0];
  known = true;
  if (op == "activemask") {
    inst.run = activemask;
    if (st.operands.size() != 1) {
      error = "activemask takes one operand";
      return false;
    }
    inst.d[0] = ctx.registerOf(st.operands[0], Type::B32, error);
    return inst.d[0] >= 0;
  }
  bool sync = hasModifier(st, "sync");
  if ((op == "shfl" || op == "vote" || op == "redux" || op == "match") && !sync) {
    error = opcodeText(st) + ": only the .sync forms are supported (the "
                             "others are not valid on sm_70 and later)";
    return false;
  }
  if (op == "shfl") {
    inst.flow = Flow::WarpSync;
    inst.exchange = shfl;
    inst.mode = hasModifier(st, "up") ? Up : hasModifier(st, "down") ? Down
                : hasModifier(st, "bfly") ? Bfly : Idx;
    if (!hasModifier(st, "b32")) {
      error = "shfl.sync of a type other than b32";
      return false;
    }
    return operands(st, inst, ctx, 5, error);
  }
  if (op == "vote") {
    inst.flow = Flow::WarpSync;
    inst.exchange = vote;
    inst.mode = hasModifier(st, "all") ? All : hasModifier(st, "any") ? Any
                : hasModifier(st, "uni") ? Uni : Ballot;
    if (!operands(st, inst, ctx, 3, error))
      return false;
    inst.imm = st.operands[1].negated ? 1 : 0;
    return true;
  }
  if (op == "redux") {
    static const char *kOps[] = {"add", "min", "max", "and", "or", "xor"};
    int which = -1;
    for (int i = 0; i < 6; ++i)
      if (hasModifier(st, kOps[i]))
        which = i;
    if (which < 0 || hasModifier(st, "f32")) {
      error = opcodeText(st) + " is not supported by the emulator";
      return false;
    }
    inst.flow = Flow::WarpSync;
    inst.mode = uint8_t(which);
    inst.exchange = hasModifier(st, "s32") ? redux<true> : redux<false>;
    return operands(st, inst, ctx, 3, error);
  }
  if (op == "match") {
    bool all = hasModifier(st, "all");
    inst.flow = Flow::WarpSync;
    inst.exchange = all ? match<true> : match<false>;
    inst.bytes = hasModifier(st, "b64") ? 8 : 4;
    return operands(st, inst, ctx, 3, error);
  }
  known = false;
  return false;
}
