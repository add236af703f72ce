//===- DecomposeAggregates.cpp - the tp-decompose-aggregates pass ---------===//
//
// Before bufferization, both lowerings want linalg structured ops only: an
// aggregate op (linalg.softmax) is replaced by the ops of its
// AggregatedOpInterface decomposition, and an elementwise arith/math op on
// tensors becomes a linalg.generic (upstream's elementwise-to-linalg
// patterns). The planner and partitioner keep the aggregate form (it has a
// sharding rule of its own); only the lowerings expand it.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tp {
#define GEN_PASS_DEF_DECOMPOSEAGGREGATESPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {
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
    RewritePatternSet patterns(module.getContext());
    linalg::populateElementwiseToLinalgConversionPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
