//===- ConstantWeights.cpp - weights that a front end baked in ------------===//
//
// A constant is a weight when it is large, or when the program uses it as
// one: some chain of uses that only moves its elements (reshapes, slices,
// transposes and broadcasts, which are linalg ops with one input and no
// reduction whose body passes the element on, possibly cast) reaches a
// contraction that reads it along a reduction loop of more than one point,
// or a body that gathers from it at a data-dependent index. The walk is
// bounded (kMaxDepth ops deep).
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/ConstantWeights.h"

#include "tp/Analysis/CostModel.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tp;

namespace {
constexpr int kMaxDepth = 8;
} // namespace

int64_t mlir::tp::getStoredBytes(arith::ConstantOp constant) {
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (dense && dense.isSplat())
    return 0;
  return type.getNumElements() * getElementBytes(type.getElementType());
}

/// Whether `linalgOp` only moves the elements of its one input (a copy, a
/// transpose, a broadcast), casting them at most.
static bool movesElements(linalg::LinalgOp linalgOp) {
  if (linalgOp.getNumDpsInputs() != 1 || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getNumReductionLoops() != 0 || !linalgOp.getBlock())
    return false;
  Block *body = linalgOp.getBlock();
  Value v = cast<linalg::YieldOp>(body->getTerminator()).getOperand(0);
  while (Operation *def = v.getDefiningOp()) {
    if (def->getBlock() != body ||
        !isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return v == body->getArgument(0);
}

/// Whether an index of `extract` depends on data (not only on loop
/// indices and constants).
static bool indexedByData(tensor::ExtractOp extract) {
  for (Value index : extract.getIndices()) {
    SmallVector<Value> work = {index};
    DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      if (isa<BlockArgument>(v))
        return true; // a body argument: an element of an input
      Operation *def = v.getDefiningOp();
      if (isa<linalg::IndexOp>(def) || matchPattern(v, m_Constant()))
        continue;
      if (isa<tensor::ExtractOp>(def))
        return true;
      for (Value operand : def->getOperands())
        work.push_back(operand);
    }
  }
  return false;
}

static bool usedAsWeight(Value v, int depth) {
  if (depth > kMaxDepth)
    return false;
  Block *block = v.getParentBlock();
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (user->getBlock() != block) {
      auto extract = dyn_cast<tensor::ExtractOp>(user);
      if (extract && extract.getTensor() == v && indexedByData(extract))
        return true;
      continue;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
            tensor::ExtractSliceOp, tensor::CastOp>(user)) {
      if (usedAsWeight(user->getResult(0), depth + 1))
        return true;
      continue;
    }
    auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
    if (!linalgOp || linalgOp.isDpsInit(&use))
      continue;
    SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iterators =
        linalgOp.getIteratorTypesArray();
    for (AffineExpr expr : linalgOp.getMatchingIndexingMap(&use).getResults())
      if (auto d = dyn_cast<AffineDimExpr>(expr))
        if (iterators[d.getPosition()] == utils::IteratorType::reduction &&
            (ShapedType::isDynamic(ranges[d.getPosition()]) ||
             ranges[d.getPosition()] > 1))
          return true;
    if (movesElements(linalgOp) &&
        usedAsWeight(user->getResult(0), depth + 1))
      return true;
  }
  return false;
}

bool mlir::tp::isWeightConstant(arith::ConstantOp constant,
                                const ConstantWeightOptions &options) {
  int64_t bytes = getStoredBytes(constant);
  if (bytes == 0)
    return false;
  if (bytes >= options.largeBytes)
    return true;
  return bytes >= options.weightBytes && usedAsWeight(constant, 0);
}
