//===- FuseElementwise.cpp - the tp-fuse-elementwise pass ----------*- C++ -*-//
//
// One idea: on the GPU path an elementwise op that only converts or scales
// one input (torch-mlir's `extf` of a norm's input to f64, read by the mean
// and by the variance) is recomputed inside every consumer instead of
// being written to device memory once and read by each: its consumers read
// its input, which is no larger than its result, and its kernel and buffer
// go.
//
// Algorithm: upstream's elementwise fusion (linalg-fuse-elementwise-ops:
// the fusion, reshape-by-expansion and constant-folding patterns and the
// same canonicalizations), with a control function that fuses a producer
// into a consumer when the producer has one use (upstream's rule) or when
// it is cheap and unary (isCheapUnary): all-parallel, one tensor input read
// through a projected permutation, its output's block argument unused, and
// at most kMaxCheapOps ops in its body, each an `arith` op other than an
// integer division or remainder, with constant or block-argument operands
// and results used in the body. Once every consumer has its copy, the
// producer has no use and goes.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tp {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {

constexpr unsigned kMaxCheapOps = 4;

/// A producer worth recomputing in each consumer (see the header).
bool isCheapUnary(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumReductionLoops() != 0 || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      !isa<RankedTensorType>(generic.getDpsInputOperand(0)->get().getType()) ||
      !generic.getMatchingIndexingMap(generic.getDpsInputOperand(0))
           .isProjectedPermutation())
    return false;
  Block *body = generic.getBody();
  if (!generic.getMatchingBlockArgument(generic.getDpsInitOperand(0))
           .use_empty())
    return false;
  unsigned count = 0;
  for (Operation &inner : body->without_terminator()) {
    if (++count > kMaxCheapOps || inner.getDialect()->getNamespace() != "arith" ||
        isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
            arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(
            inner))
      return false;
    for (Value operand : inner.getOperands())
      if (operand.getParentBlock() != body &&
          !matchPattern(operand, m_Constant()))
        return false; // a value from outside the body (not a constant)
  }
  return true;
}

struct FuseElementwisePass
    : public tp::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      return producer && (producer->hasOneUse() || isCheapUnary(producer));
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::ControlFusionFn oneUse = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      return producer && producer->hasOneUse();
    };
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, oneUse);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, oneUse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
