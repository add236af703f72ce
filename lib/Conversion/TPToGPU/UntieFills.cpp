//===- UntieFills.cpp - the tp-untie-fills pass --------------------*- C++ -*-//
//
// One idea: a linalg.fill on tensors that several ops use as their init is
// cloned per use, so that bufferization gives each user its own freshly
// filled buffer instead of a copy of a shared one (the GPU path's fills are
// then absorbed by the kernels that reduce into them; see Passes.td).
//
// Algorithm: for every tensor linalg.fill with more than one use, every use
// but the first in program order (of the fill's block) gets a clone of the
// fill inserted right before the using op, and the clone of the fill's tensor.empty
// destination when it is one (so that the clones do not share a
// destination either). Uses in other blocks get their clones there, which
// the fill's operands (a constant and an empty tensor) dominate.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::tp {
#define GEN_PASS_DEF_UNTIEFILLSPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {

struct UntieFillsPass
    : public tp::impl::UntieFillsPassBase<UntieFillsPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> shared;
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() && fill->getNumResults() == 1 &&
          !fill->getResult(0).hasOneUse() && !fill->getResult(0).use_empty())
        shared.push_back(fill);
    });
    for (linalg::FillOp fill : shared) {
      Value result = fill->getResult(0);
      // The original stays with the first use of the fill's block in
      // program order (the use list is in no particular order).
      SmallVector<OpOperand *> uses;
      OpOperand *kept = nullptr;
      for (OpOperand &use : result.getUses()) {
        uses.push_back(&use);
        Operation *owner = use.getOwner();
        if (owner->getBlock() == fill->getBlock() &&
            (!kept || owner->isBeforeInBlock(kept->getOwner())))
          kept = &use;
      }
      if (!kept)
        kept = uses.front();
      auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
      for (OpOperand *use : uses) {
        if (use == kept)
          continue;
        OpBuilder builder(use->getOwner());
        IRMapping mapping;
        if (empty)
          mapping.map(empty.getResult(),
                      builder.clone(*empty)->getResult(0));
        use->set(builder.clone(*fill, mapping)->getResult(0));
      }
    }
  }
};

} // namespace
