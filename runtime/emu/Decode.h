//===- Decode.h - From a parsed PTX statement to an executable Inst -*- C++ -*-===//
//
// The parser (PtxParser.cpp) splits a statement into its opcode's parts
// (`ld`, `global`, `nc`, `b32`), its guard and its operands; the decoders
// of each family of operations (Ops*.cpp) turn that into an Inst: a
// handler specialised for the types and modifiers, and operands as
// register indices, which the context below hands out (declared
// registers, and new registers for constants, special registers and
// symbol addresses).
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_EMU_DECODE_H
#define TPRT_EMU_DECODE_H

#include "Ptx.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tprt::emu {

struct Operand {
  enum class Kind {
    Register, // %r1 (also a special register, %tid.x)
    Immediate,
    Address, // [base + offset]
    Vector,  // {%r1, %r2, _}
    Symbol,  // a label, a variable or a function name
    Sink,    // _
    List,    // (param0, param1) of a call
  };
  Kind kind = Kind::Immediate;
  std::string name;      // register or symbol (an address's base)
  std::string second;    // the predicate of `%r1|%p1`
  bool negated = false;  // !%p1
  bool isFloat = false;  // 0f.../0d... or a decimal with a point
  bool isDouble = false; // 0d...
  uint64_t bits = 0;     // an immediate's bits (0f: f32 bits)
  double decimal = 0;    // a decimal float immediate
  int64_t offset = 0;    // an address's displacement
  std::vector<Operand> elements;
};

/// What the parser knows about a statement.
struct Statement {
  std::vector<std::string> opcode; // "ld", "global", "nc", "b32"
  std::string guard;               // "%p1" or empty
  bool guardNegated = false;
  std::vector<Operand> operands;
  uint32_t line = 0;
};

/// PTX's fundamental types, as named by an opcode's suffix.
enum class Type : uint8_t {
  None, B8, B16, B32, B64, B128, U8, U16, U32, U64, S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64, Pred, TF32, E4M3, E5M2,
};

Type typeOf(const std::string &suffix);
unsigned typeBytes(Type type);
bool isFloatType(Type type);
bool isSignedType(Type type);
const char *typeName(Type type);

/// Hands out register indices for operands while a kernel is decoded.
class DecodeContext {
public:
  virtual ~DecodeContext() = default;
  /// The register of a register operand, an immediate of type `type`
  /// (a constant register), or a symbol's address; -1 with `error` set.
  virtual int32_t registerOf(const Operand &operand, Type type,
                             std::string &error) = 0;
  /// The instruction index of a label (resolved after the body is read).
  virtual int64_t labelIndex(const std::string &label, std::string &error) = 0;
  /// The state space of a symbol used as an address base (`[name]`), or
  /// Generic for a register base.
  virtual Space spaceOfSymbol(const std::string &name) = 0;
  /// The register standing for a call's `.param` slot, or -1.
  virtual int32_t callSlot(const std::string &name) = 0;
  virtual const std::string &kernelName() = 0;
};

/// Decodes `statement` into `inst`; false with `error` set when the
/// operation, its types or its operands are not supported.
bool decode(const Statement &statement, Inst &inst, DecodeContext &context,
            std::string &error);

// The decoders of each family: true when they know the opcode (then
// `error` says whether it failed).
bool decodeInteger(const Statement &st, Inst &inst, DecodeContext &ctx,
                   std::string &error, bool &known);
bool decodeFloat(const Statement &st, Inst &inst, DecodeContext &ctx,
                 std::string &error, bool &known);
bool decodeConvert(const Statement &st, Inst &inst, DecodeContext &ctx,
                   std::string &error, bool &known);
bool decodeMemory(const Statement &st, Inst &inst, DecodeContext &ctx,
                  std::string &error, bool &known);
bool decodeWarp(const Statement &st, Inst &inst, DecodeContext &ctx,
                std::string &error, bool &known);
bool decodeTensor(const Statement &st, Inst &inst, DecodeContext &ctx,
                  std::string &error, bool &known);

/// Helpers for the decoders.
bool hasModifier(const Statement &st, const char *modifier);
/// The predicate of a destination written `%r|%p` (setp, shfl), into
/// inst.d[1]; true when there is none.
bool secondDestination(const Statement &st, Inst &inst, DecodeContext &ctx,
                       std::string &error);
/// The types among the opcode's suffixes, in order.
std::vector<Type> typesOf(const Statement &st);
std::string opcodeText(const Statement &st);

} // namespace tprt::emu

#endif // TPRT_EMU_DECODE_H
