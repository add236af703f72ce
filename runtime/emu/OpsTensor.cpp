//===- OpsTensor.cpp - Tensor-core fragments: mma.sync and ldmatrix -------===//
//
// The warp-level matrix instructions a flash-attention or GEMM kernel on
// Ampere/Hopper tensor cores uses:
//
//  - mma.sync.aligned.m16n8k16 and .m16n8k8, .row.col, with f16 or bf16
//    multiplicands and f32 or f16 accumulators: D = A B + C for the whole
//    warp, each lane holding the fragments the PTX ISA assigns it
//    (groupID = laneid / 4, threadID_in_group = laneid % 4; A rows groupID
//    and groupID + 8, columns 2 * threadID_in_group + {0, 1} and + 8; B
//    rows 2 * threadID_in_group + {0, 1} and + 8, column groupID; C and D
//    like A's first 8 columns).
//  - ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16: lanes
//    8j .. 8j + 7 give the addresses of the 8 rows of matrix j (16 bytes
//    each, 16-byte aligned, bounds-checked in shared memory); lane l
//    receives elements (l / 4, 2 (l % 4) + {0, 1}) of each matrix, or with
//    .trans (2 (l % 4) + {0, 1}, l / 4).
//
// Both are `.aligned`: every lane of the warp must execute the same
// instruction (Simt.cpp checks it, and that the warp is full). Products are
// exact in f32 (11- or 8-bit significands); the emulator sums each dot
// product in f64 and rounds once, where the hardware's accumulation order
// and intermediate rounding are unspecified: results agree to f32
// rounding, not bit for bit (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "Decode.h"
#include "Exec.h"
#include "Float.h"

#include <cstring>

using namespace tprt::emu;

namespace {

constexpr uint8_t kK8 = 1, kBf16 = 2, kF16Accumulator = 4;

double element16(uint32_t reg, int half, bool bf16) {
  uint16_t bits = uint16_t(reg >> (16 * half));
  return bf16 ? bfloatBitsToFloat(bits) : halfBitsToFloat(bits);
}

void mma(Warp &w, const Inst &in, uint32_t group) {
  if (group != 0xffffffffu)
    fail(w, in, __builtin_ctz(~group & 0xffffffffu) % 32,
         "mma.sync needs the whole warp (32 lanes), the warp has " +
             std::to_string(__builtin_popcount(group)));
  bool k8 = in.mode & kK8, bf16 = in.mode & kBf16;
  bool f16acc = in.mode & kF16Accumulator;
  int K = k8 ? 8 : 16;
  int aRegs = k8 ? 2 : 4, bRegs = k8 ? 1 : 2;
  double A[16][16] = {}, B[16][8] = {}, C[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 2 * aRegs; ++i) {
      uint32_t reg = uint32_t(w.reg(in.s[i / 2])[lane]);
      int row = g + (((i / 2) % 2) ? 8 : 0);
      int col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      A[row][col] = element16(reg, i & 1, bf16);
    }
    for (int i = 0; i < 2 * bRegs; ++i) {
      uint32_t reg = uint32_t(w.reg(in.s[4 + i / 2])[lane]);
      int row = t * 2 + (i & 1) + (i >= 2 ? 8 : 0);
      B[row][g] = element16(reg, i & 1, bf16);
    }
    for (int i = 0; i < 4; ++i) {
      int row = g + (i >= 2 ? 8 : 0), col = t * 2 + (i & 1);
      if (f16acc) {
        uint32_t reg = uint32_t(w.reg(in.s[6 + i / 2])[lane]);
        C[row][col] = halfBitsToFloat(uint16_t(reg >> (16 * (i & 1))));
      } else {
        C[row][col] = get<float>(w.reg(in.s[6 + i])[lane]);
      }
    }
  }
  float D[16][8];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      double sum = C[r][c];
      for (int k = 0; k < K; ++k)
        sum += A[r][k] * B[k][c];
      D[r][c] = float(sum);
    }
  for (int lane = 0; lane < 32; ++lane) {
    int g = lane >> 2, t = lane & 3;
    if (f16acc) {
      for (int reg = 0; reg < 2; ++reg) {
        int row = g + (reg ? 8 : 0);
        uint32_t lo = f32ToHalfBits(D[row][t * 2]);
        uint32_t hi = f32ToHalfBits(D[row][t * 2 + 1]);
        w.reg(in.d[reg])[lane] = lo | (hi << 16);
      }
    } else {
      for (int i = 0; i < 4; ++i)
        w.reg(in.d[i])[lane] =
            put<float>(D[g + (i >= 2 ? 8 : 0)][t * 2 + (i & 1)]);
    }
  }
}

/// ldmatrix: in.count matrices, in.mode 1: .trans.
void ldmatrix(Warp &w, const Inst &in, uint32_t group) {
  if (group != 0xffffffffu)
    fail(w, in, 0, "ldmatrix needs the whole warp (32 lanes)");
  int count = in.count;
  const uint64_t *address = w.reg(in.s[0]);
  uint16_t M[4][8][8];
  for (int j = 0; j < count; ++j)
    for (int r = 0; r < 8; ++r) {
      int lane = 8 * j + r;
      uint8_t *p = access(w, in, lane, in.space, address[lane] + uint64_t(in.imm),
                          16, 16, false);
      std::memcpy(M[j][r], p, 16);
    }
  bool trans = in.mode & 1;
  for (int lane = 0; lane < 32; ++lane) {
    int row = lane / 4, col = (lane % 4) * 2;
    for (int j = 0; j < count; ++j) {
      uint16_t lo = trans ? M[j][col][row] : M[j][row][col];
      uint16_t hi = trans ? M[j][col + 1][row] : M[j][row][col + 1];
      w.reg(in.d[j])[lane] = uint32_t(lo) | (uint32_t(hi) << 16);
    }
  }
}

bool vector(const Operand &op, size_t n, int32_t *out, DecodeContext &ctx,
            std::string &error, const char *what) {
  if (op.kind != Operand::Kind::Vector || op.elements.size() != n) {
    error = std::string(what) + " must be a vector of " + std::to_string(n) +
            " registers";
    return false;
  }
  for (size_t i = 0; i < n; ++i)
    if ((out[i] = ctx.registerOf(op.elements[i], Type::B32, error)) < 0)
      return false;
  return true;
}

} // namespace

bool tprt::emu::decodeTensor(const Statement &st, Inst &inst,
                             DecodeContext &ctx, std::string &error,
                             bool &known) {
  const std::string &op = st.opcode[0];
  known = true;
  if (op == "mma") {
    std::string text = opcodeText(st);
    bool k16 = hasModifier(st, "m16n8k16"), k8 = hasModifier(st, "m16n8k8");
    std::vector<Type> types = typesOf(st);
    // dtype, atype, btype, ctype.
    if (!hasModifier(st, "sync") || !hasModifier(st, "aligned") ||
        !(k16 || k8) || !hasModifier(st, "row") || !hasModifier(st, "col") ||
        types.size() != 4 || types[1] != types[2] ||
        (types[1] != Type::BF16 && types[1] != Type::F16) ||
        types[0] != types[3] ||
        (types[0] != Type::F32 && types[0] != Type::F16) ||
        (types[1] == Type::BF16 && types[0] != Type::F32)) {
      error = text + " is not supported by the emulator (it runs "
                     "mma.sync.aligned.m16n8k{8,16}.row.col with f16/bf16 "
                     "multiplicands and f32 or f16 accumulators)";
      return false;
    }
    bool f16acc = types[0] == Type::F16;
    inst.mode = uint8_t((k8 ? kK8 : 0) | (types[1] == Type::BF16 ? kBf16 : 0) |
                        (f16acc ? kF16Accumulator : 0));
    inst.flow = Flow::WarpSync;
    inst.aligned = true;
    inst.exchange = mma;
    if (st.operands.size() != 4) {
      error = text + " takes d, a, b, c";
      return false;
    }
    size_t accRegs = f16acc ? 2 : 4;
    return vector(st.operands[0], accRegs, inst.d, ctx, error, "d") &&
           vector(st.operands[1], k8 ? 2 : 4, inst.s, ctx, error, "a") &&
           vector(st.operands[2], k8 ? 1 : 2, inst.s + 4, ctx, error, "b") &&
           vector(st.operands[3], accRegs, inst.s + 6, ctx, error, "c");
  }
  if (op == "ldmatrix") {
    std::string text = opcodeText(st);
    int count = hasModifier(st, "x1") ? 1 : hasModifier(st, "x2") ? 2
                : hasModifier(st, "x4") ? 4 : 0;
    if (!hasModifier(st, "sync") || !hasModifier(st, "aligned") ||
        !hasModifier(st, "m8n8") || !count || !hasModifier(st, "b16") ||
        !(hasModifier(st, "shared") || hasModifier(st, "shared::cta"))) {
      error = text + " is not supported by the emulator (it runs "
                     "ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16)";
      return false;
    }
    inst.flow = Flow::WarpSync;
    inst.aligned = true;
    inst.exchange = ldmatrix;
    inst.count = uint8_t(count);
    inst.mode = hasModifier(st, "trans") ? 1 : 0;
    inst.space = Space::Shared;
    if (st.operands.size() != 2) {
      error = text + " takes d, [address]";
      return false;
    }
    const Operand &d = st.operands[0];
    if (count == 1 && d.kind == Operand::Kind::Register) {
      if ((inst.d[0] = ctx.registerOf(d, Type::B32, error)) < 0)
        return false;
    } else if (!vector(d, size_t(count), inst.d, ctx, error, "d")) {
      return false;
    }
    const Operand &a = st.operands[1];
    if (a.kind != Operand::Kind::Address) {
      error = text + ": expected an address";
      return false;
    }
    Operand base;
    base.kind = a.name.empty() || a.name[0] != '%' ? Operand::Kind::Symbol
                                                    : Operand::Kind::Register;
    base.name = a.name;
    if (a.name.empty()) {
      base.kind = Operand::Kind::Immediate;
      base.bits = 0;
    }
    inst.s[0] = ctx.registerOf(base, Type::U64, error);
    inst.imm = a.offset;
    return inst.s[0] >= 0;
  }
  known = false;
  return false;
}
