//===- Decode.cpp - Control flow, and the dispatch to each family ---------===//
//
// See Decode.h. Control flow is decoded here (branches, returns, barriers,
// traps, asserts, fences); everything else goes to the decoder of its
// family (OpsInteger.cpp, OpsFloat.cpp, OpsConvert.cpp, OpsMemory.cpp,
// OpsWarp.cpp, OpsTensor.cpp). An opcode nobody knows is an error naming
// it: the module does not load.
//
//===----------------------------------------------------------------------===//

#include "Decode.h"
#include "Exec.h"

#include <cstring>

using namespace tprt::emu;

Type tprt::emu::typeOf(const std::string &s) {
  static const struct {
    const char *name;
    Type type;
  } kTypes[] = {
      {"b8", Type::B8},       {"b16", Type::B16},   {"b32", Type::B32},
      {"b64", Type::B64},     {"b128", Type::B128}, {"u8", Type::U8},
      {"u16", Type::U16},     {"u32", Type::U32},   {"u64", Type::U64},
      {"s8", Type::S8},       {"s16", Type::S16},   {"s32", Type::S32},
      {"s64", Type::S64},     {"f16", Type::F16},   {"f16x2", Type::F16x2},
      {"bf16", Type::BF16},   {"bf16x2", Type::BF16x2},
      {"f32", Type::F32},     {"f64", Type::F64},   {"pred", Type::Pred},
      {"tf32", Type::TF32},   {"e4m3", Type::E4M3}, {"e5m2", Type::E5M2},
  };
  for (const auto &t : kTypes)
    if (s == t.name)
      return t.type;
  return Type::None;
}

unsigned tprt::emu::typeBytes(Type type) {
  switch (type) {
  case Type::B8: case Type::U8: case Type::S8: case Type::E4M3:
  case Type::E5M2: case Type::Pred:
    return 1;
  case Type::B16: case Type::U16: case Type::S16: case Type::F16:
  case Type::BF16:
    return 2;
  case Type::B32: case Type::U32: case Type::S32: case Type::F32:
  case Type::F16x2: case Type::BF16x2: case Type::TF32:
    return 4;
  case Type::B64: case Type::U64: case Type::S64: case Type::F64:
    return 8;
  case Type::B128:
    return 16;
  case Type::None:
    return 0;
  }
  return 0;
}

bool tprt::emu::isFloatType(Type type) {
  return type == Type::F16 || type == Type::F16x2 || type == Type::BF16 ||
         type == Type::BF16x2 || type == Type::F32 || type == Type::F64 ||
         type == Type::TF32;
}

bool tprt::emu::isSignedType(Type type) {
  return type == Type::S8 || type == Type::S16 || type == Type::S32 ||
         type == Type::S64;
}

const char *tprt::emu::typeName(Type type) {
  static const char *kNames[] = {
      "none", "b8",  "b16",   "b32",  "b64",    "b128", "u8",   "u16",
      "u32",  "u64", "s8",    "s16",  "s32",    "s64",  "f16",  "f16x2",
      "bf16", "bf16x2", "f32", "f64", "pred",   "tf32", "e4m3", "e5m2"};
  return kNames[int(type)];
}

bool tprt::emu::hasModifier(const Statement &st, const char *modifier) {
  for (size_t i = 1; i < st.opcode.size(); ++i)
    if (st.opcode[i] == modifier)
      return true;
  return false;
}

bool tprt::emu::secondDestination(const Statement &st, Inst &inst,
                                  DecodeContext &ctx, std::string &error) {
  if (st.operands.empty() || st.operands[0].second.empty())
    return true;
  Operand q;
  q.kind = Operand::Kind::Register;
  q.name = st.operands[0].second;
  inst.d[1] = ctx.registerOf(q, Type::Pred, error);
  return inst.d[1] >= 0;
}

std::vector<Type> tprt::emu::typesOf(const Statement &st) {
  std::vector<Type> types;
  for (size_t i = 1; i < st.opcode.size(); ++i)
    if (Type t = typeOf(st.opcode[i]); t != Type::None)
      types.push_back(t);
  return types;
}

std::string tprt::emu::opcodeText(const Statement &st) {
  std::string text;
  for (size_t i = 0; i < st.opcode.size(); ++i)
    text += (i ? "." : "") + st.opcode[i];
  return text;
}

namespace {

void noop(Warp &, const Inst &, uint32_t) {}

bool decodeControl(const Statement &st, Inst &inst, DecodeContext &ctx,
                   std::string &error, bool &known) {
  const std::string &op = st.opcode[0];
  known = true;
  if (op == "bra") {
    inst.flow = Flow::Branch;
    if (st.operands.size() != 1) {
      error = "bra takes one label";
      return false;
    }
    return true;
  }
  if (op == "ret" || op == "exit") {
    inst.flow = Flow::Exit;
    return true;
  }
  if ((op == "bar" || op == "barrier") &&
      (hasModifier(st, "sync") || st.opcode.size() == 1 ||
       (op == "bar" && st.opcode.size() == 2 && st.opcode[1] == "cta"))) {
    if (op == "bar" && hasModifier(st, "warp")) {
      // bar.warp.sync membermask: a rendezvous of the named lanes.
      inst.flow = Flow::WarpSync;
      inst.exchange = noop;
      if (st.operands.size() != 1) {
        error = "bar.warp.sync takes a membermask";
        return false;
      }
      inst.s[0] = ctx.registerOf(st.operands[0], Type::B32, error);
      inst.membermaskOperand = 0;
      return inst.s[0] >= 0;
    }
    if (hasModifier(st, "red") || hasModifier(st, "arrive")) {
      known = false;
      return false;
    }
    inst.flow = Flow::Barrier;
    if (st.operands.empty() || st.operands.size() > 2) {
      error = "a barrier takes a barrier id and an optional thread count";
      return false;
    }
    inst.s[0] = ctx.registerOf(st.operands[0], Type::U32, error);
    if (inst.s[0] < 0)
      return false;
    if (st.operands.size() == 2) {
      inst.s[1] = ctx.registerOf(st.operands[1], Type::U32, error);
      if (inst.s[1] < 0)
        return false;
    }
    return true;
  }
  if (op == "trap" || op == "brkpt") {
    inst.flow = Flow::Trap;
    return true;
  }
  if (op == "call") {
    // call{.uni} (ret), fn, (args); only __assertfail(message, file, line,
    // function, charSize) is known.
    const Operand *callee = nullptr;
    const Operand *args = nullptr;
    for (const Operand &o : st.operands) {
      if (o.kind == Operand::Kind::Symbol && !callee)
        callee = &o;
      else if (o.kind == Operand::Kind::List && callee)
        args = &o;
    }
    if (!callee) {
      error = "an indirect call, which the emulator does not support";
      return false;
    }
    if (callee->name != "__assertfail") {
      error = "a call of " + callee->name +
              " (device functions other than __assertfail are not supported "
              "by the emulator; they are inlined in what tp-opt generates)";
      return false;
    }
    inst.flow = Flow::Trap;
    inst.mode = 1;
    if (args)
      for (size_t i = 0; i < args->elements.size() && i < 4; ++i) {
        int32_t slot = ctx.callSlot(args->elements[i].name);
        if (slot < 0) {
          error = "argument " + args->elements[i].name +
                  " of __assertfail is not a call parameter";
          return false;
        }
        inst.s[i] = slot;
      }
    return true;
  }
  if (op == "membar" || op == "fence" || op == "nanosleep" ||
      op == "pmevent" || op == "prefetch" || op == "prefetchu" ||
      op == "griddepcontrol") {
    inst.run = noop;
    return true;
  }
  known = false;
  return false;
}

} // namespace

bool tprt::emu::decode(const Statement &st, Inst &inst, DecodeContext &ctx,
                       std::string &error) {
  if (!st.guard.empty()) {
    Operand guard;
    guard.kind = Operand::Kind::Register;
    guard.name = st.guard;
    inst.guard = ctx.registerOf(guard, Type::Pred, error);
    if (inst.guard < 0)
      return false;
    inst.guardNegated = st.guardNegated;
  }
  using Decoder = bool (*)(const Statement &, Inst &, DecodeContext &,
                           std::string &, bool &);
  static const Decoder kDecoders[] = {decodeControl, decodeMemory,
                                      decodeInteger, decodeFloat,
                                      decodeConvert, decodeWarp,
                                      decodeTensor};
  for (Decoder decoder : kDecoders) {
    bool known = false;
    bool ok = decoder(st, inst, ctx, error, known);
    if (known) {
      if (ok && inst.flow == Flow::Next && !inst.run) {
        error = "internal error: no handler for " + opcodeText(st);
        return false;
      }
      if (!ok && error.empty())
        error = "cannot decode " + opcodeText(st);
      return ok;
    }
    error.clear();
  }
  error = "the emulator does not support the instruction " + opcodeText(st);
  return false;
}
