//===- DecomposeAggregates.cpp - the tp-decompose-aggregates pass ---------===//
//
// Before bufferization, both lowerings want linalg structured ops only: an
// aggregate op (linalg.softmax) is replaced by the ops of its
// AggregatedOpInterface decomposition, and an elementwise arith/math op on
// tensors becomes a linalg.generic (upstream's elementwise-to-linalg
// patterns). The planner and partitioner keep the aggregate form (it has a
// sharding rule of its own); only the lowerings expand it.
//
// tensor.gather and tensor.scatter, which upstream MLIR does not bufferize,
// become structured code here too. A gather is a linalg.generic over its
// result whose body reads the coordinates from the indices and the element
// from the source (tensor.extract): result[b, s] = source[c(b) + s], where b
// runs over the batch (the indices' leading dimensions), s over the slice
// and c(b) puts indices[b, k] at gather_dims[k] and 0 elsewhere. A scatter
// is an scf.for over the batch whose iteration inserts the source's slice b
// at c(b) into the destination it carries (tensor.insert_slice; `unique`
// makes the order irrelevant). Slices given rank-reduced (the gathered or
// scattered dimensions dropped) are read and written as such. An
// affine.for carrying tensors, which does not bufferize either, becomes
// the scf.for it means.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tp {
#define GEN_PASS_DEF_DECOMPOSEAGGREGATESPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {

/// An index value from an element of the indices (index or integer).
Value toIndex(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isIndex())
    return v;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

/// The position in a slice of `rank` dimensions (the source's or the
/// destination's) of each slice dimension of a gathered or scattered value:
/// all of them, or, rank-reduced, those not in `dims`.
SmallVector<int64_t> sliceDims(int64_t rank, ArrayRef<int64_t> dims,
                               bool rankReduced) {
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d)
    if (!rankReduced || !llvm::is_contained(dims, d))
      kept.push_back(d);
  return kept;
}

/// result[b, s] = source[c(b) + s] as a linalg.generic (see the top).
LogicalResult lowerGather(IRRewriter &rewriter, tensor::GatherOp op) {
  Location loc = op.getLoc();
  RankedTensorType resultType = op.getResultType();
  RankedTensorType sourceType = op.getSourceType();
  if (!resultType.hasStaticShape())
    return op.emitOpError() << "with a dynamic shape cannot be lowered";
  int64_t batchRank = op.getIndicesType().getRank() - 1;
  ArrayRef<int64_t> dims = op.getGatherDims();
  bool rankReduced =
      resultType.getRank() - batchRank < sourceType.getRank();
  SmallVector<int64_t> kept =
      sliceDims(sourceType.getRank(), dims, rankReduced);
  rewriter.setInsertionPoint(op);
  Value init = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(),
                                       resultType.getElementType());
  SmallVector<AffineMap> maps = {
      rewriter.getMultiDimIdentityMap(resultType.getRank())};
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  Value source = op.getSource(), indices = op.getIndices();
  auto generic = linalg::GenericOp::create(
      rewriter, loc, resultType, ValueRange{}, ValueRange{init}, maps,
      iterators, [&](OpBuilder &b, Location l, ValueRange) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < resultType.getRank(); ++d)
          at.push_back(linalg::IndexOp::create(b, l, d));
        SmallVector<Value> coords(sourceType.getRank());
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        for (int64_t d = 0; d < sourceType.getRank(); ++d)
          coords[d] = zero;
        for (auto [i, d] : llvm::enumerate(kept))
          coords[d] = at[batchRank + i];
        SmallVector<Value> where(at.begin(), at.begin() + batchRank);
        for (auto [k, d] : llvm::enumerate(dims)) {
          where.push_back(arith::ConstantIndexOp::create(b, l, k));
          Value c = toIndex(
              b, l, tensor::ExtractOp::create(b, l, indices, where));
          where.pop_back();
          // A kept gathered dimension has size 1: its loop index is 0.
          coords[d] = c;
        }
        Value element = tensor::ExtractOp::create(b, l, source, coords);
        linalg::YieldOp::create(b, l, element);
      });
  rewriter.replaceOp(op, generic.getResults());
  return success();
}

/// An scf.for over the batch inserting each slice (see the top).
LogicalResult lowerScatter(IRRewriter &rewriter, tensor::ScatterOp op) {
  Location loc = op.getLoc();
  RankedTensorType destType = op.getDestType();
  RankedTensorType sourceType = op.getSourceType();
  if (!destType.hasStaticShape() || !sourceType.hasStaticShape())
    return op.emitOpError() << "with a dynamic shape cannot be lowered";
  ArrayRef<int64_t> batchShape =
      op.getIndicesType().getShape().drop_back();
  int64_t batchRank = batchShape.size();
  ArrayRef<int64_t> dims = op.getScatterDims();
  int64_t batch = 1;
  for (int64_t size : batchShape)
    batch *= size;
  // The source's slice, as given (rank-reduced or not).
  SmallVector<int64_t> sliceShape(sourceType.getShape().drop_front(batchRank));
  auto sliceType = RankedTensorType::get(sliceShape, sourceType.getElementType());
  rewriter.setInsertionPoint(op);
  Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value upper = arith::ConstantIndexOp::create(rewriter, loc, batch);
  Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value source = op.getSource(), indices = op.getIndices();
  auto loop = scf::ForOp::create(
      rewriter, loc, lower, upper, step, ValueRange{op.getDest()},
      [&](OpBuilder &b, Location l, Value iv, ValueRange carried) {
        // The batch position of iteration iv, row-major.
        SmallVector<Value> at(batchRank);
        Value rest = iv;
        for (int64_t d = batchRank - 1; d >= 0; --d) {
          Value size = arith::ConstantIndexOp::create(b, l, batchShape[d]);
          at[d] = arith::RemUIOp::create(b, l, rest, size);
          rest = arith::DivUIOp::create(b, l, rest, size);
        }
        SmallVector<OpFoldResult> srcOffsets(at.begin(), at.end());
        SmallVector<OpFoldResult> srcSizes(batchRank, b.getIndexAttr(1));
        for (int64_t size : sliceShape) {
          srcOffsets.push_back(b.getIndexAttr(0));
          srcSizes.push_back(b.getIndexAttr(size));
        }
        SmallVector<OpFoldResult> ones(sourceType.getRank(),
                                       b.getIndexAttr(1));
        Value slice = tensor::ExtractSliceOp::create(
            b, l, sliceType, source, srcOffsets, srcSizes, ones);
        SmallVector<OpFoldResult> offsets, sizes;
        for (int64_t d = 0; d < destType.getRank(); ++d) {
          offsets.push_back(b.getIndexAttr(0));
          sizes.push_back(b.getIndexAttr(destType.getDimSize(d)));
        }
        SmallVector<Value> where(at);
        for (auto [k, d] : llvm::enumerate(dims)) {
          where.push_back(arith::ConstantIndexOp::create(b, l, k));
          offsets[d] = toIndex(
              b, l, tensor::ExtractOp::create(b, l, indices, where));
          where.pop_back();
          sizes[d] = b.getIndexAttr(1);
        }
        SmallVector<OpFoldResult> strides(destType.getRank(),
                                          b.getIndexAttr(1));
        Value next = tensor::InsertSliceOp::create(
            b, l, slice, carried[0], offsets, sizes, strides);
        scf::YieldOp::create(b, l, next);
      });
  rewriter.replaceOp(op, loop.getResults());
  return success();
}

struct DecomposeAggregatesPass
    : public tp::impl::DecomposeAggregatesPassBase<DecomposeAggregatesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::AggregatedOpInterface> aggregates;
    module.walk(
        [&](linalg::AggregatedOpInterface op) { aggregates.push_back(op); });
    IRRewriter rewriter(module.getContext());
    for (linalg::AggregatedOpInterface op : aggregates) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> values = op.decomposeOperation(rewriter);
      if (failed(values)) {
        op->emitOpError() << "cannot be decomposed into linalg ops";
        return signalPassFailure();
      }
      rewriter.replaceOp(op, *values);
    }
    SmallVector<Operation *> indexed;
    module.walk([&](Operation *op) {
      if (isa<tensor::GatherOp, tensor::ScatterOp>(op))
        indexed.push_back(op);
    });
    for (Operation *op : indexed) {
      LogicalResult lowered =
          isa<tensor::GatherOp>(op)
              ? lowerGather(rewriter, cast<tensor::GatherOp>(op))
              : lowerScatter(rewriter, cast<tensor::ScatterOp>(op));
      if (failed(lowered))
        return signalPassFailure();
    }
    // affine.for carrying tensors does not bufferize; as the scf.for it
    // means, it does (its affine.yield with it; other affine ops stay).
    SmallVector<Operation *> tensorLoops;
    module.walk([&](affine::AffineForOp loop) {
      if (llvm::any_of(loop.getResultTypes(), llvm::IsaPred<TensorType>)) {
        tensorLoops.push_back(loop);
        tensorLoops.push_back(loop.getBody()->getTerminator());
      }
    });
    if (!tensorLoops.empty()) {
      RewritePatternSet affine(module.getContext());
      populateAffineToStdConversionPatterns(affine);
      GreedyRewriteConfig config;
      config.setStrictness(GreedyRewriteStrictness::ExistingOps);
      (void)applyOpPatternsGreedily(tensorLoops, std::move(affine), config);
    }
    RewritePatternSet patterns(module.getContext());
    linalg::populateElementwiseToLinalgConversionPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
