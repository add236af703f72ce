//===- AttentionCudaCore.cpp - fused attention on CUDA cores ------*- C++ -*-//
//
// The generators every element type and head dimension can take, and what
// all generators share (Emitter: accesses, the cloned score chain, the key
// range, the online softmax update, the GPU kernels' query rows and tile
// slots; the thread-level pieces come from KernelBuilder.h). For each row
// of O (every index but the value column e), in f32 whatever the element
// types:
//
//   m = -inf, l = 0, acc[e] = 0
//   for j in [lo(row), hi(row)):              the key range (causal bound)
//     s  = f(sum_d Q[d] K[j, d])              f: the cloned score chain
//     m' = max(m, s);  base = (m' == -inf) ? 0 : m'
//     a  = exp(m - base);  p = exp(s - base)
//     l  = l a + p;  acc[e] = acc[e] a + p V[j, e];  m = m'
//   O[e] = acc[e] / l                          rounded once to O's type
//
// target=loops: that recurrence in host loops (the CPU numerics check).
//
// target=gpu, one warp per query row: blocks of 8 warps hold 8 neighbouring
// queries of one (batch, kv head); the grid is (query blocks, heads). The
// block stages tiles of 32 keys of K and V (16 past head dimension 128) in
// workgroup memory as f32 (rows padded by one word: no bank conflicts),
// each query row in workgroup memory too. Per tile, lane t takes key t:
// its dot product with the warp's query is a chain of FMAs over d (Q read
// as a broadcast); the tile's max is one butterfly, each lane keeps its
// own partial sum l, and each lane accumulates acc[e] for e = t + 32 k
// over the tile's keys with p broadcast by shuffles. The key loop covers
// the tiles the rows' key ranges touch; keys outside a row's range are
// masked by the cloned chain itself.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "KernelBuilder.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

using namespace mlir;
using namespace mlir::tp::attention;
using mlir::tp::gpukernels::emitIf;
using mlir::tp::gpukernels::kWarpButterfly;
using mlir::tp::gpukernels::uniformAllReduceIndex;
using mlir::tp::gpukernels::workgroupType;
using mlir::tp::gpukernels::xorShuffleReduce;

Value mlir::tp::attention::indexConstant(OpBuilder &b, Location loc,
                                         int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value mlir::tp::attention::f32Constant(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
}

Value mlir::tp::attention::castFloat(OpBuilder &b, Location loc, Value v,
                                     Type to) {
  unsigned from = v.getType().getIntOrFloatBitWidth();
  unsigned bits = to.getIntOrFloatBitWidth();
  if (v.getType() == to)
    return v;
  if (from < bits)
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

//===----------------------------------------------------------------------===//
// Emitter
//===----------------------------------------------------------------------===//

Emitter::Emitter(const Match &m, ArrayRef<Value> sources,
                 ArrayRef<Value> buffers, Value out)
    : m(m), out(out) {
  for (auto [s, buf] : llvm::zip(sources, buffers))
    bufferOf[s] = buf;
}

/// Whether `e` is non-negative wherever the kernel dimensions are (they
/// are indices: every dimension is).
static bool isNonNegative(AffineExpr e) {
  if (isa<AffineDimExpr>(e))
    return true;
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue() >= 0;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin || !isNonNegative(bin.getLHS()))
    return false;
  if (e.getKind() == AffineExprKind::Add || e.getKind() == AffineExprKind::Mul)
    return isNonNegative(bin.getRHS());
  auto divisor = dyn_cast<AffineConstantExpr>(bin.getRHS());
  return divisor && divisor.getValue() > 0;
}

/// `e` at `dims`, as affine::expandAffineExpr builds it, but with a
/// division or remainder of a non-negative value by a positive constant
/// as one unsigned op (a shift or a mask for powers of two) instead of
/// the signed floor's compare-and-select sequence: the index arithmetic of
/// a head dimension split over [.., 2, 64] stays two ops per access.
static Value expandIndex(OpBuilder &b, Location loc, AffineExpr e,
                         ArrayRef<Value> dims) {
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return affine::expandAffineExpr(b, loc, e, dims, {});
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return arith::AddIOp::create(b, loc,
                                 expandIndex(b, loc, bin.getLHS(), dims),
                                 expandIndex(b, loc, bin.getRHS(), dims));
  case AffineExprKind::Mul:
    return arith::MulIOp::create(b, loc,
                                 expandIndex(b, loc, bin.getLHS(), dims),
                                 expandIndex(b, loc, bin.getRHS(), dims));
  default:
    break;
  }
  if (!isNonNegative(e))
    return affine::expandAffineExpr(b, loc, e, dims, {});
  Value lhs = expandIndex(b, loc, bin.getLHS(), dims);
  Value rhs = expandIndex(b, loc, bin.getRHS(), dims);
  switch (e.getKind()) {
  case AffineExprKind::FloorDiv:
    return arith::DivUIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mod:
    return arith::RemUIOp::create(b, loc, lhs, rhs);
  default:
    return arith::CeilDivUIOp::create(b, loc, lhs, rhs);
  }
}

SmallVector<Value> Emitter::indices(OpBuilder &b, Location loc,
                                    const Access &a, ArrayRef<Value> dims) {
  SmallVector<Value> idx;
  for (AffineExpr e : a.idx)
    idx.push_back(expandIndex(b, loc, e, dims));
  return idx;
}

/// Reads `a` at `dims`: a load, or its producer's body evaluated there.
static Value read(Emitter &em, OpBuilder &b, Location loc, const Access &a,
                  ArrayRef<Value> dims) {
  if (!a.producer) {
    if (auto c = a.source.getDefiningOp<arith::ConstantOp>())
      if (auto dense = dyn_cast<SplatElementsAttr>(c.getValue()))
        return arith::ConstantOp::create(
            b, loc, cast<TypedAttr>(dense.getSplatValue<Attribute>()));
    return memref::LoadOp::create(b, loc, em.buffer(a),
                                  em.indices(b, loc, a, dims));
  }
  linalg::GenericOp g = a.producer;
  IRMapping map;
  Block *body = g.getBlock();
  for (auto [i, input] : llvm::enumerate(a.inputs)) {
    BlockArgument arg = body->getArgument(i);
    if (!arg.use_empty())
      map.map(arg, read(em, b, loc, input, dims));
  }
  SmallVector<Value> loops;
  for (AffineExpr e : a.loops)
    loops.push_back(expandIndex(b, loc, e, dims));
  for (Operation &op : body->without_terminator()) {
    if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
      map.map(idx.getResult(), loops[idx.getDim()]);
      continue;
    }
    for (Value operand : op.getOperands())
      if (!map.contains(operand) &&
          !g->isAncestor(operand.getParentRegion()->getParentOp()))
        map.map(operand, b.clone(*operand.getDefiningOp())->getResult(0));
    b.clone(op, map);
  }
  // A body that yields a captured constant (JAX's 0-d `yield %cst`) gets
  // its own copy: the kernel is isolated from above.
  Value yielded = body->getTerminator()->getOperand(0);
  if (!map.contains(yielded) &&
      !g->isAncestor(yielded.getParentRegion()->getParentOp()))
    return b.clone(*yielded.getDefiningOp())->getResult(0);
  return map.lookupOrDefault(yielded);
}

Value Emitter::load(OpBuilder &b, Location loc, const Access &a,
                    ArrayRef<Value> dims) {
  return read(*this, b, loc, a, dims);
}

Value Emitter::score(OpBuilder &b, Location loc, Value dot,
                     ArrayRef<Value> dims) {
  Value cur = castFloat(b, loc, dot, m.scoreType);
  // A chain that starts by widening 16-bit scores to f32 gets the f32 dot
  // product itself (no rounding of the scores, as SDPA keeps them).
  std::optional<Value> widened;
  if (!m.chain.empty() && m.scoreType != dot.getType()) {
    linalg::GenericOp first = m.chain.front().op;
    Value arg = first.getBlock()->getArgument(m.chain.front().scoreInput);
    if (!arg.use_empty() && llvm::all_of(arg.getUsers(), [&](Operation *u) {
          return isa<arith::ExtFOp>(u) &&
                 u->getResult(0).getType() == dot.getType();
        }))
      widened = dot;
  }
  SmallVector<Value> sIdx;
  for (AffineExpr e : m.scoreIdx)
    sIdx.push_back(expandIndex(b, loc, e, dims));
  for (const ChainOp &link : m.chain) {
    IRMapping map;
    Block *body = link.op.getBlock();
    map.map(body->getArgument(link.scoreInput), cur);
    for (auto &[input, access] : link.sides)
      if (!body->getArgument(input).use_empty())
        map.map(body->getArgument(input), load(b, loc, access, dims));
    for (Operation &op : body->without_terminator()) {
      if (widened && &link == &m.chain.front() && isa<arith::ExtFOp>(op) &&
          op.getOperand(0) == body->getArgument(link.scoreInput)) {
        map.map(op.getResult(0), *widened);
        continue;
      }
      for (Value operand : op.getOperands())
        if (!map.contains(operand) &&
            !link.op->isAncestor(operand.getParentRegion()->getParentOp()))
          map.map(operand, b.clone(*operand.getDefiningOp())->getResult(0));
      if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
        map.map(idx.getResult(), sIdx[idx.getDim()]);
        continue;
      }
      b.clone(op, map);
    }
    cur = map.lookupOrDefault(body->getTerminator()->getOperand(0));
  }
  return castFloat(b, loc, cur, b.getF32Type());
}

std::pair<Value, Value> Emitter::keyBounds(OpBuilder &b, Location loc,
                                           ArrayRef<Value> dims) {
  Value lo = indexConstant(b, loc, 0), hi = indexConstant(b, loc, m.keys);
  // The bounds are affine in the row's indices; j and d are not used.
  SmallVector<Value> rowDims(dims.begin(), dims.begin() + m.numO);
  for (Value &v : rowDims)
    if (!v)
      v = indexConstant(b, loc, 0);
  rowDims.append({indexConstant(b, loc, 0), indexConstant(b, loc, 0)});
  auto signedIndex = [&](AffineExpr e) {
    return affine::expandAffineExpr(b, loc, e, rowDims, {});
  };
  if (m.range.lo)
    lo = arith::MaxSIOp::create(b, loc, lo, signedIndex(*m.range.lo));
  if (m.range.hi)
    hi = arith::MinSIOp::create(b, loc, hi, signedIndex(*m.range.hi));
  // An empty range (hi < lo) runs no key.
  hi = arith::MaxSIOp::create(b, loc, hi, lo);
  return {lo, hi};
}

SmallVector<Value> Emitter::rowDims(OpBuilder &b, Location loc, Value row) {
  SmallVector<Value> dims(m.numO + 2);
  SmallVector<RowPart> parts = rowParts(m);
  for (const RowPart &part : llvm::reverse(parts)) {
    Value size = indexConstant(b, loc, part.extent);
    Value value = arith::RemUIOp::create(b, loc, row, size);
    row = arith::DivUIOp::create(b, loc, row, size);
    if (part.stride != 1)
      value = arith::MulIOp::create(b, loc, value,
                                    indexConstant(b, loc, part.stride));
    dims[part.dim] = dims[part.dim]
                         ? arith::AddIOp::create(b, loc, dims[part.dim], value)
                               .getResult()
                         : value;
  }
  return dims;
}

WarpQueries mlir::tp::attention::warpQueries(OpBuilder &b, Location loc,
                                             Value warp,
                                             int64_t queriesPerBlock,
                                             int64_t queriesPerWarp) {
  WarpQueries q;
  q.head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value blockFirst =
      arith::MulIOp::create(b, loc,
                            gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                            indexConstant(b, loc, queriesPerBlock));
  Value warpOffset =
      queriesPerWarp == 1
          ? warp
          : arith::MulIOp::create(b, loc, warp,
                                  indexConstant(b, loc, queriesPerWarp))
                .getResult();
  q.first = arith::AddIOp::create(b, loc, blockFirst, warpOffset);
  return q;
}

Emitter::QueryRow Emitter::queryRow(OpBuilder &b, Location loc, Value head,
                                    Value query, Value lastQuery) {
  int64_t queries = headsAndQueries(m).second;
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, query,
                                      lastQuery);
  Value row = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, head, indexConstant(b, loc, queries)),
      arith::MinUIOp::create(b, loc, query, lastQuery));
  return {valid, rowDims(b, loc, row)};
}

Emitter::TileSlot Emitter::tileSlot(OpBuilder &b, Location loc,
                                    ArrayRef<Value> dims, Value flat, Value j0,
                                    int64_t perRow, int64_t width) {
  TileSlot slot;
  Value slots = indexConstant(b, loc, perRow);
  slot.row = arith::DivUIOp::create(b, loc, flat, slots);
  slot.col = arith::RemUIOp::create(b, loc, flat, slots);
  if (width != 1)
    slot.col = arith::MulIOp::create(b, loc, slot.col,
                                     indexConstant(b, loc, width));
  Value key = arith::MinUIOp::create(b, loc,
                                     arith::AddIOp::create(b, loc, j0, slot.row),
                                     indexConstant(b, loc, m.keys - 1));
  slot.at.assign(dims.begin(), dims.end());
  slot.at[m.numO] = key;
  return slot;
}

std::array<Value, 4> Emitter::online(OpBuilder &b, Location loc, Value mx,
                                     Value l, Value s) {
  Value next = arith::MaximumFOp::create(b, loc, mx, s);
  Value ninf = f32Constant(b, loc, -std::numeric_limits<double>::infinity());
  Value isInf =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, next, ninf);
  Value base = arith::SelectOp::create(b, loc, isInf, f32Constant(b, loc, 0),
                                       next);
  Value alpha =
      math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, mx, base));
  Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, base));
  Value l2 = math::FmaOp::create(b, loc, l, alpha, p);
  return {next, l2, alpha, p};
}

//===----------------------------------------------------------------------===//
// target=loops
//===----------------------------------------------------------------------===//

void mlir::tp::attention::emitLoops(Emitter &em, OpBuilder &b, Location loc) {
  const Match &m = em.match();
  Type f = b.getF32Type();
  int64_t dv = valueDim(m);
  Value acc = memref::AllocaOp::create(b, loc, MemRefType::get({dv}, f));
  Value c0 = indexConstant(b, loc, 0), c1 = indexConstant(b, loc, 1);
  auto forLoop = [&](Value lo, Value hi, ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return scf::ForOp::create(
        b, loc, lo, hi, c1, init,
        [&](OpBuilder &nb, Location, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(nb.getInsertionBlock());
          scf::YieldOp::create(b, loc, body(iv, args));
        });
  };
  auto upTo = [&](int64_t n, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return forLoop(c0, indexConstant(b, loc, n), init, body);
  };
  Value out = em.output();
  upTo(rowCount(m), {}, [&](Value row, ValueRange) {
    SmallVector<Value> dims = em.rowDims(b, loc, row);
    upTo(dv, {}, [&](Value e, ValueRange) {
      memref::StoreOp::create(b, loc, f32Constant(b, loc, 0), acc, e);
      return SmallVector<Value>{};
    });
    auto [lo, hi] = em.keyBounds(b, loc, dims);
    Value ninf = f32Constant(b, loc, -std::numeric_limits<double>::infinity());
    auto keys = forLoop(lo, hi, {ninf, f32Constant(b, loc, 0)},
                        [&](Value j, ValueRange st) {
      dims[m.numO] = j;
      auto dot = upTo(m.headDim, {f32Constant(b, loc, 0)},
                      [&](Value d, ValueRange sum) {
        dims[m.numO + 1] = d;
        Value q = castFloat(b, loc, em.load(b, loc, m.q, dims), f);
        Value k = castFloat(b, loc, em.load(b, loc, m.k, dims), f);
        return SmallVector<Value>{math::FmaOp::create(b, loc, q, k, sum[0])};
      });
      dims[m.numO + 1] = nullptr;
      Value s = em.score(b, loc, dot.getResult(0), dims);
      auto [mx, l, alpha, p] = em.online(b, loc, st[0], st[1], s);
      upTo(dv, {}, [&](Value e, ValueRange) {
        dims[m.eDim] = e;
        Value v = castFloat(b, loc, em.load(b, loc, m.v, dims), f);
        Value a = memref::LoadOp::create(b, loc, acc, e);
        a = math::FmaOp::create(b, loc, p, v,
                                arith::MulFOp::create(b, loc, a, alpha));
        memref::StoreOp::create(b, loc, a, acc, e);
        dims[m.eDim] = nullptr;
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{mx, l};
    });
    dims[m.numO] = nullptr;
    Value l = keys.getResult(1);
    upTo(dv, {}, [&](Value e, ValueRange) {
      dims[m.eDim] = e;
      Value a = memref::LoadOp::create(b, loc, acc, e);
      Value o = arith::DivFOp::create(b, loc, a, l);
      SmallVector<Value> idx(dims.begin(), dims.begin() + m.numO);
      memref::StoreOp::create(
          b, loc,
          castFloat(b, loc, o, cast<MemRefType>(out.getType()).getElementType()),
          out, idx);
      dims[m.eDim] = nullptr;
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

//===----------------------------------------------------------------------===//
// target=gpu on CUDA cores: one warp per query row, one lane per key
//===----------------------------------------------------------------------===//

/// Warps (query rows) per block: they share the block's K and V tiles.
static constexpr int64_t kRowsPerBlock = 8;

void mlir::tp::attention::emitWarpPerRow(Emitter &em, KernelFrame &k,
                                         OpBuilder &b, Location loc) {
  const Match &m = em.match();
  Type f = b.getF32Type();
  int64_t dv = valueDim(m), dk = m.headDim;
  // Keys per tile: one per lane; 16 past head dimension 128, so that the
  // f32 tiles stay within 48 KiB of workgroup memory.
  int64_t tile = std::max(dk, dv) > 128 ? 16 : 32;
  int64_t te = (dv + 31) / 32;
  auto [heads, queries] = headsAndQueries(m);
  int64_t queryBlocks = (queries + kRowsPerBlock - 1) / kRowsPerBlock;
  Value one = indexConstant(b, loc, 1);
  k.grid = {queryBlocks, heads, 1};
  k.block = {32 * kRowsPerBlock, 1, 1};
  // Rows padded by one word: lane t reads row t at the same column, and
  // consecutive rows then start in consecutive banks.
  Value kTile = k.workgroup(b, loc, f, {tile, dk + 1});
  Value vTile = k.workgroup(b, loc, f, {tile, dv + 1});
  Value qRows = k.workgroup(b, loc, f, {kRowsPerBlock, dk});

  // The lane before the warp (warpCoordinates makes the warp first): kept
  // so that this kernel's code, and its PTX, stay as they were.
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value c32 = indexConstant(b, loc, 32);
  Value lane = arith::RemUIOp::create(b, loc, tid, c32);
  Value warp = arith::DivUIOp::create(b, loc, tid, c32);
  WarpQueries rows = warpQueries(b, loc, warp, kRowsPerBlock, 1);
  // Rows past the end compute the last row's values and store nothing.
  Emitter::QueryRow self = em.queryRow(b, loc, rows.head, rows.first,
                                       indexConstant(b, loc, queries - 1));
  Value valid = self.valid;
  SmallVector<Value> &dims = self.dims;

  // The block's key range: the union of its rows' (they are neighbouring
  // queries of one head). Every thread computes its warp's, and the block
  // takes the extremes.
  auto [lo, hi] = em.keyBounds(b, loc, dims);
  Value blockLo =
      uniformAllReduceIndex(b, loc, lo, gpu::AllReduceOperation::MINSI);
  Value blockHi =
      uniformAllReduceIndex(b, loc, hi, gpu::AllReduceOperation::MAXSI);
  Value cTile = indexConstant(b, loc, tile);
  Value firstTile = arith::DivUIOp::create(b, loc, blockLo, cTile);
  Value endTile = arith::CeilDivUIOp::create(b, loc, blockHi, cTile);

  // The warp's query row into workgroup memory, as f32.
  {
    auto loop = scf::ForOp::create(b, loc, lane, indexConstant(b, loc, dk), c32);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    dims[m.numO + 1] = loop.getInductionVar();
    Value q = castFloat(b, loc, em.load(b, loc, m.q, dims), f);
    memref::StoreOp::create(b, loc, q, qRows,
                            ValueRange{warp, loop.getInductionVar()});
    dims[m.numO + 1] = nullptr;
  }

  Value zero = f32Constant(b, loc, 0);
  Value ninf = f32Constant(b, loc, -std::numeric_limits<double>::infinity());
  SmallVector<Value> init = {ninf, zero};
  init.append(te, zero);
  Value threads = indexConstant(b, loc, 32 * kRowsPerBlock);
  auto tiles = scf::ForOp::create(b, loc, firstTile, endTile, one, init);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value j0 = arith::MulIOp::create(b, loc, tiles.getInductionVar(), cTile);
    ValueRange st = tiles.getRegionIterArgs();
    // The tile of K and V (keys past the end read the last key; they are
    // masked below).
    gpu::BarrierOp::create(b, loc);
    auto stage = [&](const Access &a, Value into, int64_t width,
                     unsigned column) {
      auto loop = scf::ForOp::create(b, loc, tid,
                                     indexConstant(b, loc, tile * width),
                                     threads);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(loop.getBody());
      Emitter::TileSlot slot =
          em.tileSlot(b, loc, dims, loop.getInductionVar(), j0, width, 1);
      slot.at[column] = slot.col;
      Value x = castFloat(b, loc, em.load(b, loc, a, slot.at), f);
      memref::StoreOp::create(b, loc, x, into, ValueRange{slot.row, slot.col});
    };
    stage(m.k, kTile, dk, m.numO + 1);
    stage(m.v, vTile, dv, m.eDim);
    gpu::BarrierOp::create(b, loc);

    // Lane t: key j0 + t (lanes past the tile hold -inf).
    Value key = arith::AddIOp::create(b, loc, j0, lane);
    Value laneInTile = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                             lane, cTile);
    Value laneRow = arith::MinUIOp::create(b, loc, lane,
                                           indexConstant(b, loc, tile - 1));
    auto dot = scf::ForOp::create(b, loc, indexConstant(b, loc, 0),
                                  indexConstant(b, loc, dk), one,
                                  ValueRange{zero});
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(dot.getBody());
      Value d = dot.getInductionVar();
      Value q = memref::LoadOp::create(b, loc, qRows, ValueRange{warp, d});
      Value k = memref::LoadOp::create(b, loc, kTile, ValueRange{laneRow, d});
      scf::YieldOp::create(
          b, loc,
          ValueRange{math::FmaOp::create(b, loc, q, k, dot.getRegionIterArgs()[0])});
    }
    dims[m.numO] = arith::MinUIOp::create(b, loc, key,
                                          indexConstant(b, loc, m.keys - 1));
    Value s = em.score(b, loc, dot.getResult(0), dims);
    dims[m.numO] = nullptr;
    Value live = arith::AndIOp::create(
        b, loc, laneInTile,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, key,
                              indexConstant(b, loc, m.keys)));
    s = arith::SelectOp::create(b, loc, live, s, ninf);
    // The tile's max (a butterfly), the rescale, this lane's p and sum.
    Value tileMax = xorShuffleReduce(b, loc, s, kWarpButterfly, /*max=*/true);
    Value next = arith::MaximumFOp::create(b, loc, st[0], tileMax);
    Value isInf =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, next, ninf);
    Value base = arith::SelectOp::create(b, loc, isInf, zero, next);
    Value alpha =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, st[0], base));
    Value p =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, base));
    Value l = math::FmaOp::create(b, loc, st[1], alpha, p);
    SmallVector<Value> acc;
    for (int64_t t = 0; t < te; ++t)
      acc.push_back(arith::MulFOp::create(b, loc, st[2 + t], alpha));
    // acc[e] += p_key V[key, e] over the tile's keys, p broadcast.
    SmallVector<Value> eCols;
    for (int64_t t = 0; t < te; ++t)
      eCols.push_back(arith::MinUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, lane, indexConstant(b, loc, 32 * t)),
          indexConstant(b, loc, dv - 1)));
    auto pv = scf::ForOp::create(b, loc, indexConstant(b, loc, 0), cTile, one,
                                 acc);
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(pv.getBody());
      Value kk = pv.getInductionVar();
      Value src = arith::IndexCastOp::create(b, loc, b.getI32Type(), kk);
      Value pk = gpu::ShuffleOp::create(b, loc, p, src,
                                        arith::ConstantIntOp::create(
                                            b, loc, b.getI32Type(), 32),
                                        gpu::ShuffleMode::IDX)
                     .getShuffleResult();
      SmallVector<Value> nextAcc;
      for (int64_t t = 0; t < te; ++t) {
        Value v = memref::LoadOp::create(b, loc, vTile, ValueRange{kk, eCols[t]});
        nextAcc.push_back(
            math::FmaOp::create(b, loc, pk, v, pv.getRegionIterArgs()[t]));
      }
      scf::YieldOp::create(b, loc, nextAcc);
    }
    SmallVector<Value> yields = {next, l};
    yields.append(pv.getResults().begin(), pv.getResults().end());
    scf::YieldOp::create(b, loc, yields);
  }

  // The row's sum over the lanes, then O = acc / l (valid rows and columns).
  Value l = xorShuffleReduce(b, loc, tiles.getResult(1), kWarpButterfly,
                             /*max=*/false);
  Type outElement = cast<MemRefType>(em.output().getType()).getElementType();
  for (int64_t t = 0; t < te; ++t) {
    Value e = arith::AddIOp::create(b, loc, lane, indexConstant(b, loc, 32 * t));
    Value store = valid;
    if (32 * (t + 1) > dv)
      store = arith::AndIOp::create(
          b, loc, store,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, e,
                                indexConstant(b, loc, dv)));
    emitIf(b, loc, store, [&] {
      Value o = arith::DivFOp::create(b, loc, tiles.getResult(2 + t), l);
      SmallVector<Value> idx(dims.begin(), dims.begin() + m.numO);
      idx[m.eDim] = e;
      memref::StoreOp::create(b, loc, castFloat(b, loc, o, outElement),
                              em.output(), idx);
    });
  }
  gpu::ReturnOp::create(b, loc);
}

Value KernelFrame::workgroup(OpBuilder &b, Location loc, Type element,
                             ArrayRef<int64_t> shape) {
  return fn.addWorkgroupAttribution(
      workgroupType(b.getContext(), shape, element), loc);
}
