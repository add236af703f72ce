//===- TabulateIndexMath.cpp - tp-tabulate-index-math -----------*- C++ -*-===//
//
// Transcendental functions of loop indices, computed once per distinct
// index instead of once per element. Rotary embeddings written as one
// elementwise op compute, at every element [b, s, h, 2, D/2],
//
//   angle = s * theta^(-2 j / D);  x1 cos(angle) - x2 sin(angle), ...
//
// so a powf, a sin and a cos per element (compute-bound at several times
// the time of the op's bytes on a GPU), where the values depend on (s, j)
// only. For each parallel linalg.generic on tensors:
//
//   1. the body's index-only values are those computed by side-effect-free
//      ops from linalg.index and constants alone; the frontier is the
//      index-only values some other op (or the yield) uses;
//   2. a frontier value whose computation contains a transcendental op
//      (math.powf, sin, cos, exp, log, tanh, ...) and whose indices span
//      at most half of the op's iteration space is tabulated: one new
//      generic over just the loops it depends on computes it (the values
//      depending on the same loops share that generic, one result each),
//      and the op reads it as a new input through the map of those loops;
//   3. what is left unused in the body goes; a table equal to one made
//      before in the same block (the rotations of Q and of K) is that one.
//
// The table computes the same ops on the same types: the values are
// bitwise those of the original. (PyTorch's rotary embedding keeps a cos /
// sin cache of [seq, D] for the same reason.)
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace mlir::tp {
#define GEN_PASS_DEF_TABULATEINDEXMATHPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;

namespace {

/// Transcendental ops: worth a table.
bool isTranscendental(Operation *op) {
  return isa<math::PowFOp, math::SinOp, math::CosOp, math::TanOp, math::ExpOp,
             math::Exp2Op, math::ExpM1Op, math::LogOp, math::Log2Op,
             math::Log10Op, math::Log1pOp, math::TanhOp, math::ErfOp,
             math::AtanOp, math::Atan2Op, math::SqrtOp, math::RsqrtOp,
             math::FPowIOp, math::CbrtOp>(op);
}

struct IndexMath {
  /// Whether each body value is computed from indices and constants only.
  DenseMap<Value, bool> indexOnly;
  /// The loop dimensions an index-only value depends on.
  DenseMap<Value, llvm::SmallBitVector> dims;
  /// Whether its computation contains a transcendental op.
  DenseMap<Value, bool> expensive;
};

IndexMath analyze(linalg::GenericOp g) {
  IndexMath info;
  unsigned n = g.getNumLoops();
  Block *body = g.getBlock();
  for (BlockArgument arg : body->getArguments())
    info.indexOnly[arg] = false;
  for (Operation &op : body->without_terminator()) {
    bool ok = op.getNumRegions() == 0 && isMemoryEffectFree(&op) &&
              op.getNumResults() == 1;
    llvm::SmallBitVector used(n);
    bool costly = isTranscendental(&op);
    if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
      used.set(idx.getDim());
    } else if (ok) {
      for (Value operand : op.getOperands()) {
        if (matchPattern(operand, m_Constant()) &&
            !info.indexOnly.count(operand))
          continue; // a constant captured from outside the body
        auto it = info.indexOnly.find(operand);
        if (it == info.indexOnly.end() || !it->second) {
          ok = false;
          break;
        }
        used |= info.dims[operand];
        costly |= info.expensive[operand];
      }
    }
    // Constants inside the body are index-only too (with no dims).
    for (Value r : op.getResults()) {
      info.indexOnly[r] = ok;
      info.dims[r] = used;
      info.expensive[r] = costly;
    }
  }
  return info;
}

/// Whether two table generics compute the same values (their inits are
/// tensor.empty of the same types). The values of the two bodies are
/// matched as the comparison walks them: a body operand is equivalent to
/// the other's when the ops (or block arguments) defining them were found
/// equivalent.
bool sameTable(linalg::GenericOp a, linalg::GenericOp b) {
  DenseMap<Value, Value> same;
  auto equivalent = [&](Value x, Value y) {
    if (x == y || same.lookup(x) == y)
      return success();
    auto ex = x.getDefiningOp<tensor::EmptyOp>();
    auto ey = y.getDefiningOp<tensor::EmptyOp>();
    return success(ex && ey && ex.getType() == ey.getType());
  };
  auto mark = [&](Value x, Value y) { same[x] = y; };
  return OperationEquivalence::isEquivalentTo(
      a, b, equivalent, mark, OperationEquivalence::IgnoreLocations);
}

/// Tabulates what `g` computes from indices alone (see the header); returns
/// the replacement op, or null when nothing is worth a table. A table equal
/// to one made earlier in the same block (RoPE of Q and of K) is that one.
linalg::GenericOp tabulate(linalg::GenericOp g, OpBuilder &builder,
                           SmallVectorImpl<linalg::GenericOp> &made) {
  if (!g.hasPureTensorSemantics() || g.getNumLoops() == 0 ||
      g.getNumLoops() != g.getNumParallelLoops())
    return nullptr;
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return nullptr;
  int64_t points = 1;
  for (int64_t r : ranges)
    points *= r;
  IndexMath info = analyze(g);
  Block *body = g.getBlock();

  // The frontier values worth a table, grouped by the loops they use.
  std::map<SmallVector<unsigned>, SetVector<Value>> groups;
  for (Operation &op : body->getOperations()) {
    if (op.getNumResults() == 1 && info.indexOnly.lookup(op.getResult(0)))
      continue; // inside the cone, not its frontier
    for (Value v : op.getOperands()) {
      if (!info.indexOnly.lookup(v) || !info.expensive.lookup(v) ||
          !v.getType().isIntOrFloat())
        continue;
      SmallVector<unsigned> loops;
      int64_t tablePoints = 1;
      for (unsigned d : info.dims[v].set_bits()) {
        loops.push_back(d);
        tablePoints *= ranges[d];
      }
      if (2 * tablePoints > points)
        continue;
      groups[loops].insert(v);
    }
  }
  if (groups.empty())
    return nullptr;

  Location loc = g.getLoc();
  MLIRContext *context = g.getContext();
  builder.setInsertionPoint(g);
  SmallVector<Value> tables;
  SmallVector<AffineMap> tableMaps;
  SmallVector<Value> replaced;
  for (auto &[loops, values] : groups) {
    SmallVector<int64_t> shape;
    SmallVector<AffineExpr> exprs;
    for (unsigned d : loops) {
      shape.push_back(ranges[d]);
      exprs.push_back(getAffineDimExpr(d, context));
    }
    SmallVector<Value> inits;
    SmallVector<Type> types;
    for (Value v : values) {
      inits.push_back(
          tensor::EmptyOp::create(builder, loc, shape, v.getType()));
      types.push_back(RankedTensorType::get(shape, v.getType()));
    }
    unsigned rank = loops.size();
    SmallVector<AffineMap> maps(values.size(),
                                AffineMap::getMultiDimIdentityMap(rank, context));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto table = linalg::GenericOp::create(
        builder, loc, types, ValueRange(), inits, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange) {
          IRMapping map;
          // Clone the cones in body order; linalg.index d becomes the
          // table's index of d.
          llvm::SmallBitVector inTable(g.getNumLoops());
          for (unsigned d : loops)
            inTable.set(d);
          for (Operation &op : body->without_terminator()) {
            if (op.getNumResults() != 1 || !info.indexOnly[op.getResult(0)])
              continue;
            llvm::SmallBitVector outside = info.dims[op.getResult(0)];
            outside.reset(inTable);
            if (outside.any())
              continue; // depends on a loop the table does not have
            if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
              unsigned at =
                  llvm::find(loops, unsigned(idx.getDim())) - loops.begin();
              map.map(idx.getResult(),
                      linalg::IndexOp::create(b, l, at).getResult());
              continue;
            }
            for (Value operand : op.getOperands())
              if (!map.contains(operand) && !info.indexOnly.count(operand))
                map.map(operand,
                        b.clone(*operand.getDefiningOp())->getResult(0));
            b.clone(op, map);
          }
          SmallVector<Value> results;
          for (Value v : values)
            results.push_back(map.lookup(v));
          linalg::YieldOp::create(b, l, results);
        });
    for (linalg::GenericOp earlier : made)
      if (earlier->getBlock() == table->getBlock() && sameTable(table, earlier)) {
        SmallVector<Operation *> inits;
        for (Value init : table.getDpsInits())
          inits.push_back(init.getDefiningOp());
        table->erase();
        for (Operation *init : inits)
          if (init->use_empty())
            init->erase();
        table = earlier;
        break;
      }
    if (!llvm::is_contained(made, table))
      made.push_back(table);
    for (auto [i, v] : llvm::enumerate(values)) {
      tables.push_back(table.getResult(i));
      tableMaps.push_back(AffineMap::get(g.getNumLoops(), 0, exprs, context));
      replaced.push_back(v);
    }
  }

  // The op again, reading the tables as extra inputs.
  SmallVector<Value> inputs(g.getDpsInputs());
  inputs.append(tables);
  SmallVector<AffineMap> maps;
  for (OpOperand *in : g.getDpsInputOperands())
    maps.push_back(g.getMatchingIndexingMap(in));
  maps.append(tableMaps);
  for (OpOperand &out : g.getDpsInitsMutable())
    maps.push_back(g.getMatchingIndexingMap(&out));
  auto next = linalg::GenericOp::create(
      builder, loc, g->getResultTypes(), inputs, g.getDpsInits(), maps,
      g.getIteratorTypesArray());
  next->setDiscardableAttrs(g->getDiscardableAttrDictionary());
  Region &region = next.getRegion();
  region.takeBody(g.getRegion());
  Block *moved = &region.front();
  unsigned at = g.getNumDpsInputs();
  for (auto [i, v] : llvm::enumerate(replaced)) {
    BlockArgument arg = moved->insertArgument(at + i, v.getType(), loc);
    v.replaceAllUsesWith(arg);
  }
  // What only the tabulated values used goes (in reverse order).
  SmallVector<Operation *> ops;
  for (Operation &op : moved->without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isMemoryEffectFree(op))
      op->erase();
  g->replaceAllUsesWith(next->getResults());
  g->erase();
  return next;
}

struct TabulateIndexMathPass
    : public tp::impl::TabulateIndexMathPassBase<TabulateIndexMathPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp g) { ops.push_back(g); });
    OpBuilder builder(&getContext());
    SmallVector<linalg::GenericOp> made;
    for (linalg::GenericOp g : ops)
      tabulate(g, builder, made);
  }
};

} // namespace
