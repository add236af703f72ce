//===- AttentionTensorCore.cpp - flash attention on tensor cores --*- C++ -*-//
//
// FlashAttention-2's forward pass on mma.sync (the shape the H100/H200 run
// well without wgmma, and what the project's PTX emulator verifies):
//
//   block: 4 warps, 64 query rows of one (batch, kv head), 16 per warp
//   Q:     each warp's 16 x D rows as A fragments in registers, loaded once
//   loop over tiles of Bc = 64 keys that the block's key range touches:
//     stage K and V tiles [Bc, D] in workgroup memory (16-byte vector
//     copies when the source rows are contiguous, element copies else;
//     rows padded by 16 bytes so that ldmatrix's eight row addresses fall
//     in different banks)
//     S = Q K^T:   mma.sync.m16n8k16.row.col (bf16 or f16 in, f32 out),
//                  K's B fragments by ldmatrix.x4 (rows = keys)
//     X = f(S):    the cloned score chain on each accumulator element at
//                  its (row, key); keys past the end -> -inf
//     online softmax per row in registers: the tile max over the 4 lanes
//                  of a quad (2 shuffles), rescale of l and of O, p =
//                  exp2((x - max) log2(e)) with max guarded (-inf -> 0);
//                  l stays a per-lane partial
//     O += P V:    P's accumulators repacked as A fragments (the C layout of
//                  two n-tiles is the A layout of one k-step), V's B
//                  fragments by ldmatrix.x4.trans (rows = keys)
//   O = O / l (l summed over the quad), rounded once, stored by the lanes
//   that own each element
//
// Fragment layouts (PTX ISA, mma.m16n8k16): g = lane / 4, t = lane % 4;
// A regs (row g | g+8, cols 2t..2t+1 | +8); B regs (k 2t..2t+1 | +8, col g);
// C (row g: c0 c1 at cols 2t, 2t+1; row g+8: c2 c3). ldmatrix.x4: lanes
// 8i..8i+7 address the rows of matrix i, register i receives it; lane l
// holds row l/4, elements 2(l%4), 2(l%4)+1 (transposed with .trans).
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tp::attention;
namespace gpukernels = mlir::tp::gpukernels;

namespace {

constexpr int64_t kWarps = 4;
constexpr int64_t kRowsPerWarp = 16;
constexpr int64_t kBlockRows = kWarps * kRowsPerWarp;
constexpr int64_t kTileKeys = 64;
/// Workgroup rows are padded by 8 16-bit elements (16 bytes).
constexpr int64_t kPad = 8;
/// Elements of one 16-byte copy.
constexpr int64_t kVector = 8;

/// Whether `e` is a multiple of `n` for every value of its dims.
bool isMultipleOf(AffineExpr e, int64_t n) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue() % n == 0;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return false;
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return isMultipleOf(bin.getLHS(), n) && isMultipleOf(bin.getRHS(), n);
  case AffineExprKind::Mul:
    return isMultipleOf(bin.getLHS(), n) || isMultipleOf(bin.getRHS(), n);
  default:
    return false;
  }
}

/// Whether `a` reads `width` consecutive, 16-byte aligned elements of its
/// source when `dim` steps by one from a multiple of `width`: the row-major
/// offset of its indices is dim + (a multiple of width, free of dim), and
/// the innermost extent is a multiple of width (the run stays in one
/// innermost row). The offset, not the last index alone: a head dimension
/// split over trailing dimensions whose strides make it contiguous (RoPE's
/// [.., 2, 64] read as d floordiv 64, d mod 64) is the same run as [.., 128].
bool isContiguous(const Access &a, unsigned dim, int64_t width,
                  unsigned numDims) {
  if (a.producer || a.idx.empty())
    return false;
  auto type = cast<RankedTensorType>(a.source.getType());
  if (!type.hasStaticShape() || type.getShape().back() % width != 0)
    return false;
  MLIRContext *context = a.source.getContext();
  AffineExpr offset = getAffineConstantExpr(0, context);
  int64_t stride = 1;
  for (int64_t i = type.getRank() - 1; i >= 0; --i) {
    offset = offset + a.idx[i] * stride;
    stride *= type.getDimSize(i);
  }
  AffineExpr rest =
      simplifyAffineExpr(offset - getAffineDimExpr(dim, context), numDims, 0);
  return !rest.isFunctionOfDim(dim) && isMultipleOf(rest, width);
}

Type mmaElement(const Match &m) {
  return cast<RankedTensorType>(m.q.source.getType()).getElementType();
}

class FlashKernel {
public:
  FlashKernel(Emitter &em, KernelFrame &k, OpBuilder &b, Location loc)
      : em(em), k(k), m(em.match()), b(b), loc(loc), context(b.getContext()),
        element(mmaElement(m)), dk(m.headDim), dv(valueDim(m)),
        numDims(m.numO + 2) {}

  void build();

private:
  Value index(int64_t v) { return indexConstant(b, loc, v); }
  Value f32(double v) { return f32Constant(b, loc, v); }

  /// Two f32 values as one mma operand register: bf16x2 as an i32, f16x2
  /// as a vector<2xf16>.
  Value pack(Value lo, Value hi) {
    auto pair = VectorType::get({2}, element);
    Value v = vector::FromElementsOp::create(
        b, loc, pair,
        ValueRange{castFloat(b, loc, lo, element),
                   castFloat(b, loc, hi, element)});
    return asOperand(v);
  }
  /// A vector<2 x element> as the mma's operand type.
  Value asOperand(Value pair) {
    if (element.isF16())
      return pair;
    Value word = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), pair);
    return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
  }
  /// The four registers of an ldmatrix.x4 from `tile` at (row, col).
  SmallVector<Value> ldmatrix(Value tile, Value row, Value col,
                              bool transpose) {
    auto type = VectorType::get({4, 2}, element);
    Value frags = nvgpu::LdMatrixOp::create(b, loc, type, tile,
                                            ValueRange{row, col}, transpose,
                                            /*numTiles=*/4);
    SmallVector<Value> regs;
    for (int64_t i = 0; i < 4; ++i)
      regs.push_back(asOperand(
          vector::ExtractOp::create(b, loc, frags, ArrayRef<int64_t>{i})));
    return regs;
  }
  /// c += a b on one m16n8k16 tile; `c` holds four f32.
  SmallVector<Value> mma(ArrayRef<Value> a, ArrayRef<Value> bFrag,
                         ArrayRef<Value> c) {
    Type f = b.getF32Type();
    auto result = LLVM::LLVMStructType::getLiteral(context, {f, f, f, f});
    NVVM::MMATypes type =
        element.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    Value d = NVVM::MmaOp::create(
        b, loc, result, a, bFrag, c, ArrayRef<int64_t>{16, 8, 16},
        std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{type, type},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, d, i));
    return out;
  }
  /// A shuffle-xor reduction over the 4 lanes of a quad.
  Value quad(Value v, bool isMax) {
    return gpukernels::xorShuffleReduce(b, loc, v, {1, 2}, isMax);
  }
  /// Copies rows [j0, j0 + kTileKeys) of `a` (keys clamped to the last)
  /// and `width` columns along `column` into `tile`.
  void stage(const Access &a, Value tile, int64_t width, unsigned column,
             Value j0, ArrayRef<Value> dims, Value tid);

  Emitter &em;
  KernelFrame &k;
  const Match &m;
  OpBuilder &b;
  Location loc;
  MLIRContext *context;
  Type element;
  int64_t dk, dv;
  unsigned numDims;
};

void FlashKernel::stage(const Access &a, Value tile, int64_t width,
                    unsigned column, Value j0, ArrayRef<Value> dims,
                    Value tid) {
  bool vector = isContiguous(a, column, kVector, numDims) &&
                cast<RankedTensorType>(a.source.getType()).getElementType() ==
                    element;
  int64_t chunks = kTileKeys * width / kVector;
  int64_t threads = kWarps * 32;
  auto loop = scf::ForOp::create(b, loc, tid, index(chunks), index(threads));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  Emitter::TileSlot slot = em.tileSlot(b, loc, dims, loop.getInductionVar(),
                                       j0, width / kVector, kVector);
  Value r = slot.row, c = slot.col;
  SmallVector<Value> &at = slot.at;
  if (vector) {
    at[column] = c;
    auto type = VectorType::get({kVector}, element);
    Value v = gpukernels::loadAligned16(b, loc, type, em.buffer(a),
                                        em.indices(b, loc, a, at));
    gpukernels::storeAligned16(b, loc, v, tile, ValueRange{r, c});
    return;
  }
  for (int64_t i = 0; i < kVector; ++i) {
    Value ci = arith::AddIOp::create(b, loc, c, index(i));
    at[column] = ci;
    Value x = castFloat(b, loc, em.load(b, loc, a, at), element);
    memref::StoreOp::create(b, loc, x, tile, ValueRange{r, ci});
  }
}

void FlashKernel::build() {
  Type f = b.getF32Type();
  auto [heads, queries] = headsAndQueries(m);
  int64_t queryBlocks = (queries + kBlockRows - 1) / kBlockRows;
  Value one = index(1);
  k.grid = {queryBlocks, heads, 1};
  k.block = {kWarps * 32, 1, 1};
  Value kTile = k.workgroup(b, loc, element, {kTileKeys, dk + kPad});
  Value vTile = k.workgroup(b, loc, element, {kTileKeys, dv + kPad});

  gpukernels::WarpCoordinates thread = gpukernels::warpCoordinates(b, loc);
  Value tid = thread.tid, warp = thread.warp, lane = thread.lane;
  Value c4 = index(4), c8 = index(8);
  Value g = arith::DivUIOp::create(b, loc, lane, c4);
  Value t = arith::RemUIOp::create(b, loc, lane, c4);
  WarpQueries queriesOfWarp =
      warpQueries(b, loc, warp, kBlockRows, kRowsPerWarp);
  Value head = queriesOfWarp.head, q0 = queriesOfWarp.first;
  // The thread's two rows: g and g + 8 of its warp's 16 (past the end: the
  // last row, computed and not stored).
  Value lastQuery = index(queries - 1);
  SmallVector<Value, 2> valid;
  SmallVector<SmallVector<Value>, 2> rows;
  for (int64_t half = 0; half < 2; ++half) {
    Value q = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, q0, g), index(8 * half));
    Emitter::QueryRow row = em.queryRow(b, loc, head, q, lastQuery);
    valid.push_back(row.valid);
    rows.push_back(row.dims);
  }

  // The block's key tiles: the union of its rows' key ranges.
  auto [loA, hiA] = em.keyBounds(b, loc, rows[0]);
  auto [loB, hiB] = em.keyBounds(b, loc, rows[1]);
  Value blockLo = gpukernels::uniformAllReduceIndex(
      b, loc, arith::MinSIOp::create(b, loc, loA, loB),
      gpu::AllReduceOperation::MINSI);
  Value blockHi = gpukernels::uniformAllReduceIndex(
      b, loc, arith::MaxSIOp::create(b, loc, hiA, hiB),
      gpu::AllReduceOperation::MAXSI);
  Value cTile = index(kTileKeys);
  Value firstTile = arith::DivUIOp::create(b, loc, blockLo, cTile);
  Value endTile = arith::CeilDivUIOp::create(b, loc, blockHi, cTile);

  // Q's A fragments, once: per k-step of 16, rows g and g + 8, columns
  // 2t, 2t + 1 and 8 more.
  Value t2 = arith::MulIOp::create(b, loc, t, index(2));
  SmallVector<SmallVector<Value>> qFrag;
  auto qAt = [&](int64_t half, Value col) {
    SmallVector<Value> dims = rows[half];
    dims[m.numO + 1] = col;
    return castFloat(b, loc, em.load(b, loc, m.q, dims), f);
  };
  for (int64_t ks = 0; ks < dk / 16; ++ks) {
    SmallVector<Value> regs;
    for (int64_t hiK = 0; hiK < 2; ++hiK)
      for (int64_t half = 0; half < 2; ++half) {
        Value col = arith::AddIOp::create(b, loc, t2, index(16 * ks + 8 * hiK));
        Value next = arith::AddIOp::create(b, loc, col, one);
        regs.push_back(pack(qAt(half, col), qAt(half, next)));
      }
    qFrag.push_back(regs); // a0 (g, k), a1 (g + 8, k), a2 (g, k + 8), a3
  }

  Value zero = f32(0);
  Value ninf = f32(-std::numeric_limits<double>::infinity());
  int64_t nv = dv / 8; // O's n-tiles
  SmallVector<Value> init = {ninf, ninf, zero, zero};
  init.append(nv * 4, zero);
  auto tiles = scf::ForOp::create(b, loc, firstTile, endTile, one, init);
  {
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(tiles.getBody());
    ValueRange st = tiles.getRegionIterArgs();
    Value j0 = arith::MulIOp::create(b, loc, tiles.getInductionVar(), cTile);
    gpu::BarrierOp::create(b, loc);
    stage(m.k, kTile, dk, m.numO + 1, j0, rows[0], tid);
    stage(m.v, vTile, dv, m.eDim, j0, rows[0], tid);
    gpu::BarrierOp::create(b, loc);

    // S = Q K^T over the tile: Bc / 8 n-tiles of 4 accumulators.
    int64_t ns = kTileKeys / 8;
    SmallVector<SmallVector<Value>> s(ns, SmallVector<Value>(4, zero));
    Value lane8 = arith::RemUIOp::create(b, loc, lane, c8);
    Value matrix = arith::DivUIOp::create(b, loc, lane, c8);
    Value mLow = arith::RemUIOp::create(b, loc, matrix, index(2));
    Value mHigh = arith::DivUIOp::create(b, loc, matrix, index(2));
    // K: matrix i of lane group i is (n-tile +i/2, k-half i%2).
    Value kRow0 = arith::AddIOp::create(
        b, loc, lane8, arith::MulIOp::create(b, loc, mHigh, c8));
    Value kCol0 = arith::MulIOp::create(b, loc, mLow, c8);
    for (int64_t np = 0; np < ns / 2; ++np)
      for (int64_t ks = 0; ks < dk / 16; ++ks) {
        Value row = arith::AddIOp::create(b, loc, kRow0, index(16 * np));
        Value col = arith::AddIOp::create(b, loc, kCol0, index(16 * ks));
        SmallVector<Value> frag = ldmatrix(kTile, row, col, false);
        s[2 * np] = mma(qFrag[ks], {frag[0], frag[1]}, s[2 * np]);
        s[2 * np + 1] = mma(qFrag[ks], {frag[2], frag[3]}, s[2 * np + 1]);
      }

    // The chain on every element, the rows' maxima.
    SmallVector<Value, 2> rowMax = {ninf, ninf};
    for (int64_t nt = 0; nt < ns; ++nt)
      for (int64_t e = 0; e < 4; ++e) {
        int64_t half = e / 2;
        Value j = arith::AddIOp::create(
            b, loc, arith::AddIOp::create(b, loc, j0, t2),
            index(8 * nt + e % 2));
        SmallVector<Value> dims = rows[half];
        dims[m.numO] = arith::MinUIOp::create(b, loc, j, index(m.keys - 1));
        Value x = em.score(b, loc, s[nt][e], dims);
        Value live = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           j, index(m.keys));
        x = arith::SelectOp::create(b, loc, live, x, ninf);
        s[nt][e] = x;
        rowMax[half] = arith::MaximumFOp::create(b, loc, rowMax[half], x);
      }
    // exp(x - base) as exp2((x - base) log2(e)): the difference first, then
    // the scale. Not FlashAttention-2's single FMA x log2(e) - base log2(e):
    // a mask filled with the lowest finite float (Hugging Face's and JAX's
    // finfo.min) makes a fully masked tile's base -3.4e38, whose product
    // with log2(e) overflows to -inf and the FMA then gives +inf, and
    // exp2(+inf) * 0 is NaN. x - base is exact where it matters (0 for the
    // masked scores of a fully masked row, which then weigh 1 each, as in
    // the unfused softmax) and -inf or finite elsewhere. The running max is
    // guarded as FlashAttention guards it: a row that has seen only -inf
    // takes base 0, so that -inf - base is -inf, never NaN.
    SmallVector<Value> next(st.begin(), st.end());
    SmallVector<Value, 2> base, alpha;
    Value log2e = f32(M_LOG2E);
    auto expDiff = [&](Value x, Value from) {
      return math::Exp2Op::create(
          b, loc,
          arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, x, from),
                                log2e));
    };
    for (int64_t half = 0; half < 2; ++half) {
      Value mx = arith::MaximumFOp::create(b, loc, st[half],
                                           quad(rowMax[half], true));
      Value isInf =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mx, ninf);
      base.push_back(arith::SelectOp::create(b, loc, isInf, zero, mx));
      alpha.push_back(expDiff(st[half], base[half]));
      next[half] = mx;
    }
    SmallVector<Value, 2> sum = {zero, zero};
    for (int64_t nt = 0; nt < ns; ++nt)
      for (int64_t e = 0; e < 4; ++e) {
        int64_t half = e / 2;
        s[nt][e] = expDiff(s[nt][e], base[half]);
        sum[half] = arith::AddFOp::create(b, loc, sum[half], s[nt][e]);
      }
    for (int64_t half = 0; half < 2; ++half)
      next[2 + half] =
          math::FmaOp::create(b, loc, st[2 + half], alpha[half], sum[half]);
    SmallVector<SmallVector<Value>> o(nv);
    for (int64_t nt = 0; nt < nv; ++nt)
      for (int64_t e = 0; e < 4; ++e)
        o[nt].push_back(
            arith::MulFOp::create(b, loc, st[4 + 4 * nt + e], alpha[e / 2]));

    // O += P V: P's n-tiles 2kk, 2kk + 1 are the A fragment of k-step kk.
    // V (trans): matrix i is (k-half i%2, n-tile +i/2).
    Value vRow0 = arith::AddIOp::create(
        b, loc, lane8, arith::MulIOp::create(b, loc, mLow, c8));
    Value vCol0 = arith::MulIOp::create(b, loc, mHigh, c8);
    for (int64_t kk = 0; kk < kTileKeys / 16; ++kk) {
      SmallVector<Value> a = {pack(s[2 * kk][0], s[2 * kk][1]),
                              pack(s[2 * kk][2], s[2 * kk][3]),
                              pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      for (int64_t np = 0; np < nv / 2; ++np) {
        Value row = arith::AddIOp::create(b, loc, vRow0, index(16 * kk));
        Value col = arith::AddIOp::create(b, loc, vCol0, index(16 * np));
        SmallVector<Value> frag = ldmatrix(vTile, row, col, true);
        o[2 * np] = mma(a, {frag[0], frag[1]}, o[2 * np]);
        o[2 * np + 1] = mma(a, {frag[2], frag[3]}, o[2 * np + 1]);
      }
    }
    for (int64_t nt = 0; nt < nv; ++nt)
      for (int64_t e = 0; e < 4; ++e)
        next[4 + 4 * nt + e] = o[nt][e];
    scf::YieldOp::create(b, loc, next);
  }

  // O / l, rounded once, stored by the lane that owns each element.
  SmallVector<Value, 2> l = {quad(tiles.getResult(2), false),
                             quad(tiles.getResult(3), false)};
  Type outElement = cast<MemRefType>(em.output().getType()).getElementType();
  for (int64_t half = 0; half < 2; ++half)
    gpukernels::emitIf(b, loc, valid[half], [&] {
      for (int64_t nt = 0; nt < nv; ++nt)
        for (int64_t e = 0; e < 2; ++e) {
          Value col = arith::AddIOp::create(b, loc, t2, index(8 * nt + e));
          Value value = arith::DivFOp::create(
              b, loc, tiles.getResult(4 + 4 * nt + 2 * half + e), l[half]);
          SmallVector<Value> idx(rows[half].begin(),
                                 rows[half].begin() + m.numO);
          idx[m.eDim] = col;
          memref::StoreOp::create(b, loc,
                                  castFloat(b, loc, value, outElement),
                                  em.output(), idx);
        }
    });
  gpu::ReturnOp::create(b, loc);
}

} // namespace

bool mlir::tp::attention::tensorCoreEligible(const Match &m, std::string &why) {
  Type element = mmaElement(m);
  for (Value src : {m.k.source, m.v.source})
    if (cast<RankedTensorType>(src.getType()).getElementType() != element) {
      why = "Q, K and V have different element types";
      return false;
    }
  if (!element.isBF16() && !element.isF16()) {
    why = "Q, K and V are not bf16 or f16";
    return false;
  }
  int64_t dv = valueDim(m);
  if (m.headDim % 16 || dv % 16) {
    why = "the head dimensions are not multiples of 16";
    return false;
  }
  if (m.headDim > 128 || dv > 128) {
    why = "a head dimension is over 128";
    return false;
  }
  // K and V tiles are shared by the block's queries: V must not depend on
  // them (K does not, by construction; nor does either on the position in
  // a block of grouped-query heads, kvGroups).
  for (unsigned i = 0; i < m.numO; ++i) {
    if (i == m.eDim)
      continue;
    bool kUses = llvm::any_of(
        m.k.idx, [&](AffineExpr e) { return e.isFunctionOfDim(i); });
    bool vUses = llvm::any_of(
        m.v.idx, [&](AffineExpr e) { return e.isFunctionOfDim(i); });
    if (vUses && !kUses) {
      why = "V depends on a query dimension";
      return false;
    }
  }
  int64_t heads = headsAndQueries(m).first;
  if (heads > 65535 || (rowCount(m) / heads + kBlockRows - 1) / kBlockRows >
                           2147483647) {
    why = "too many heads for the grid";
    return false;
  }
  return true;
}

void mlir::tp::attention::emitTensorCore(Emitter &em, KernelFrame &k,
                                         OpBuilder &b, Location loc) {
  FlashKernel(em, k, b, loc).build();
}
