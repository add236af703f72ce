//===- OptimizeCollectives.cpp - the tp-optimize-collectives pass -*- C++ -*-===//
//
// Local rewrites of collective chains (one pattern each, applied greedily),
// then a merge of independent small all-reduces (a walk over each block,
// since it moves code). All rewrites keep the values exactly, except that a
// merged or scattered reduction may add in another order.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/Passes.h"

#include "tp/Analysis/CostModel.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "tp-optimize-collectives"

namespace mlir::tp {
#define GEN_PASS_DEF_OPTIMIZECOLLECTIVESPASS
#include "tp/Dialect/TP/Transforms/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {

template <typename A, typename B> static bool sameGroup(A a, B b) {
  return a.getMeshAttr() == b.getMeshAttr() && a.getAxes() == b.getAxes();
}

/// slice(all_reduce(x)) -> reduce_scatter(x), when the slice is the only use.
struct SliceOfAllReduce : public OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto reduce = slice.getInput().getDefiningOp<AllReduceOp>();
    if (!reduce || !sameGroup(slice, reduce) || !reduce->hasOneUse())
      return failure();
    rewriter.replaceOpWithNewOp<ReduceScatterOp>(
        slice, slice.getType(), reduce.getInput(), reduce.getKindAttr(),
        slice.getMeshAttr(), slice.getAxes(), slice.getDimAttr());
    return success();
  }
};

/// slice(all_gather(x, d), d) -> x.
struct SliceOfAllGather : public OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto gather = slice.getInput().getDefiningOp<AllGatherOp>();
    if (!gather || !sameGroup(slice, gather) ||
        gather.getDim() != slice.getDim() ||
        gather.getInput().getType() != slice.getType())
      return failure();
    rewriter.replaceOp(slice, gather.getInput());
    return success();
  }
};

/// all_gather(slice(x, d), d) -> x.
struct AllGatherOfSlice : public OpRewritePattern<AllGatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllGatherOp gather,
                                PatternRewriter &rewriter) const override {
    auto slice = gather.getInput().getDefiningOp<SliceOp>();
    if (!slice || !sameGroup(slice, gather) ||
        gather.getDim() != slice.getDim() ||
        slice.getInput().getType() != gather.getType())
      return failure();
    rewriter.replaceOp(gather, slice.getInput());
    return success();
  }
};

/// all_to_all(all_to_all(x, s, c), c, s) -> x.
struct AllToAllRoundTrip : public OpRewritePattern<AllToAllOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllToAllOp outer,
                                PatternRewriter &rewriter) const override {
    auto inner = outer.getInput().getDefiningOp<AllToAllOp>();
    if (!inner || !sameGroup(inner, outer) ||
        inner.getSplitDim() != outer.getConcatDim() ||
        inner.getConcatDim() != outer.getSplitDim() ||
        inner.getInput().getType() != outer.getType())
      return failure();
    rewriter.replaceOp(outer, inner.getInput());
    return success();
  }
};

/// Bytes of a ranked tensor type.
static int64_t bytesOf(RankedTensorType type) {
  return type.getNumElements() * getElementBytes(type.getElementType());
}

/// Whether `value` depends on `op` within their block.
static bool dependsOn(Value value, Operation *op) {
  SmallVector<Value> work{value};
  DenseSet<Operation *> seen;
  Block *block = op->getBlock();
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    def = block->findAncestorOpInBlock(*def);
    if (!def || !seen.insert(def).second || def->isBeforeInBlock(op))
      continue;
    if (def == op)
      return true;
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        work.push_back(operand);
    });
  }
  return false;
}

/// Merges `second` into `first`'s... rather: replaces two independent
/// all-reduces by one on the concatenation of their flattened inputs,
/// placed where the later one was.
static void mergePair(AllReduceOp first, AllReduceOp second) {
  OpBuilder builder(second);
  Location loc = second.getLoc();
  SmallVector<Value> flat;
  SmallVector<int64_t> sizes;
  for (AllReduceOp ar : {first, second}) {
    auto type = cast<RankedTensorType>(ar.getType());
    int64_t n = type.getNumElements();
    sizes.push_back(n);
    Value input = ar.getInput();
    RankedTensorType flatType = RankedTensorType::get({n}, type.getElementType());
    if (type.getRank() == 0)
      input = tensor::ExpandShapeOp::create(builder, loc, flatType, input,
                                            ArrayRef<ReassociationIndices>{});
    else if (type.getRank() > 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.push_back(d);
      input = tensor::CollapseShapeOp::create(builder, loc, input,
                                              ArrayRef<ReassociationIndices>{all});
    }
    flat.push_back(input);
  }
  Value joined = tensor::ConcatOp::create(builder, loc, /*dim=*/0, flat);
  Value reduced = AllReduceOp::create(builder, loc, joined.getType(), joined,
                                      second.getKindAttr(), second.getMeshAttr(),
                                      second.getAxes());
  int64_t offset = 0;
  for (auto [ar, n] : llvm::zip(SmallVector<AllReduceOp>{first, second}, sizes)) {
    auto type = cast<RankedTensorType>(ar.getType());
    RankedTensorType flatType = RankedTensorType::get({n}, type.getElementType());
    Value part = tensor::ExtractSliceOp::create(
        builder, loc, flatType, reduced,
        ArrayRef<OpFoldResult>{builder.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{builder.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
    offset += n;
    if (type.getRank() == 0)
      part = tensor::CollapseShapeOp::create(builder, loc, type, part,
                                             ArrayRef<ReassociationIndices>{});
    else if (type.getRank() > 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.push_back(d);
      part = tensor::ExpandShapeOp::create(builder, loc, type, part,
                                           ArrayRef<ReassociationIndices>{all});
    }
    ar.getResult().replaceAllUsesWith(part);
  }
  second.erase();
  first.erase();
}

/// Merges independent small all-reduces of the same kind, group and element
/// type, in each block, pairwise until none can be merged.
static void mergeAllReduces(Operation *root, int64_t mergeBytes) {
  if (mergeBytes <= 0)
    return;
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Block *> blocks;
    root->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      SmallVector<AllReduceOp> reduces(block->getOps<AllReduceOp>());
      for (size_t i = 0; i < reduces.size() && !changed; ++i) {
        AllReduceOp first = reduces[i];
        auto firstType = cast<RankedTensorType>(first.getType());
        if (!firstType.hasStaticShape() || bytesOf(firstType) > mergeBytes)
          continue;
        for (size_t j = i + 1; j < reduces.size(); ++j) {
          AllReduceOp second = reduces[j];
          auto secondType = cast<RankedTensorType>(second.getType());
          if (!secondType.hasStaticShape() ||
              bytesOf(secondType) > mergeBytes ||
              first.getKind() != second.getKind() ||
              !sameGroup(first, second) ||
              firstType.getElementType() != secondType.getElementType())
            continue;
          // Independent, and the first's results are not needed before
          // the second.
          if (dependsOn(second.getInput(), first))
            continue;
          bool usedEarly = llvm::any_of(first->getUsers(), [&](Operation *u) {
            Operation *top = block->findAncestorOpInBlock(*u);
            return !top || top->isBeforeInBlock(second);
          });
          if (usedEarly)
            continue;
          mergePair(first, second);
          changed = true;
          break;
        }
      }
    }
  }
}

struct OptimizeCollectivesPass
    : public tp::impl::OptimizeCollectivesPassBase<OptimizeCollectivesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (mergeBytes < 0) {
      emitError(getOperation()->getLoc())
          << "tp-optimize-collectives: merge-bytes=" << int64_t(mergeBytes)
          << " must not be negative (0: never merge)";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<SliceOfAllReduce, SliceOfAllGather, AllGatherOfSlice,
                 AllToAllRoundTrip>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    mergeAllReduces(getOperation(), mergeBytes);
  }
};

} // namespace
