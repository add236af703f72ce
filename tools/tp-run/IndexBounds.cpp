//===- IndexBounds.cpp - integer inputs that index tensors ----------------===//
//
// See IndexBounds.h. Two walks: tensors that hold the argument's values
// (through ops that only move elements), then the scalars taken from them
// (through casts that keep the value) up to the tensor.extract they index.
//
//===----------------------------------------------------------------------===//

#include "IndexBounds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;

namespace {

/// The smallest static extent that a scalar derived from `scalar` indexes.
void boundScalar(Value scalar, std::optional<int64_t> &bound) {
  SmallVector<Value> work = {scalar};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
              arith::ExtUIOp>(user)) {
        work.push_back(user->getResult(0));
        continue;
      }
      auto extract = dyn_cast<tensor::ExtractOp>(user);
      if (!extract || use.get() == extract.getTensor())
        continue;
      unsigned d = use.getOperandNumber() - 1; // after the tensor
      auto type = cast<RankedTensorType>(extract.getTensor().getType());
      if (type.isDynamicDim(d))
        continue;
      int64_t extent = type.getDimSize(d);
      bound = bound ? std::min(*bound, extent) : extent;
    }
  }
}

} // namespace

unsigned tprun::annotateIndexBounds(func::FuncOp fn) {
  unsigned bounded = 0;
  for (BlockArgument arg : fn.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !isa<IntegerType>(type.getElementType()))
      continue;
    std::optional<int64_t> bound;
    llvm::SetVector<Value> tensors;
    tensors.insert(arg);
    for (size_t i = 0; i < tensors.size(); ++i) {
      for (OpOperand &use : tensors[i].getUses()) {
        Operation *user = use.getOwner();
        if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp,
                tensor::ExtractSliceOp>(user) &&
            use.getOperandNumber() == 0) {
          tensors.insert(user->getResult(0));
        } else if (auto moved = dyn_cast<linalg::TransposeOp>(user)) {
          if (&use == moved.getDpsInputOperand(0))
            tensors.insert(moved->getResult(0));
        } else if (auto moved = dyn_cast<linalg::BroadcastOp>(user)) {
          if (&use == moved.getDpsInputOperand(0))
            tensors.insert(moved->getResult(0));
        } else if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
          if (use.get() == extract.getTensor())
            boundScalar(extract.getResult(), bound);
        } else if (auto generic = dyn_cast<linalg::GenericOp>(user)) {
          if (generic.isDpsInput(&use))
            boundScalar(generic.getMatchingBlockArgument(&use), bound);
        }
      }
    }
    if (!bound || *bound < 1)
      continue;
    fn.setArgAttr(arg.getArgNumber(), kIndexBoundAttr,
                  IntegerAttr::get(IntegerType::get(fn.getContext(), 64),
                                   *bound));
    ++bounded;
  }
  return bounded;
}
