//===- VerifyPartitioned.cpp - the partitioned-program contract -*- C++ -*-===//
//
// The stage contract after --tp-partition, as a pass: nothing of the global
// program is left, and every function boundary says how the local pieces
// relate to the global values (the runtime depends on it).
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/Passes.h"

#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tp {
#define GEN_PASS_DEF_VERIFYPARTITIONEDPASS
#include "tp/Dialect/TP/Transforms/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

/// Checks one argument or result: a layout, a global shape, a local type.
static LogicalResult checkBoundary(func::FuncOp func, Type type,
                                   DictionaryAttr attrs, StringRef what,
                                   unsigned index) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return success();
  auto layout = attrs ? attrs.getAs<LayoutAttr>(TPDialect::getLayoutAttrName())
                      : LayoutAttr();
  auto global =
      attrs ? attrs.getAs<DenseI64ArrayAttr>(TPDialect::getGlobalShapeAttrName())
            : DenseI64ArrayAttr();
  if (!layout || !global)
    return func.emitError() << "tp-verify-partitioned: " << what << " #"
                            << index << " of '" << func.getSymName()
                            << "' lacks 'tp.layout' or 'tp.global_shape'";
  MeshOp mesh = lookupMesh(func, layout.getMesh());
  if (!mesh)
    return func.emitError() << "tp-verify-partitioned: " << what << " #"
                            << index << " names no mesh";
  SmallVector<int64_t> local =
      getLocalShape(global.asArrayRef(), layout, mesh);
  if (ArrayRef<int64_t>(local) != tensor.getShape())
    return func.emitError()
           << "tp-verify-partitioned: " << what << " #" << index << " has type "
           << type << " but its global shape " << global << " under "
           << layout << " is local shape "
           << RankedTensorType::get(local, tensor.getElementType());
  return success();
}

namespace {
struct VerifyPartitionedPass
    : public tp::impl::VerifyPartitionedPassBase<VerifyPartitionedPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult result = module.walk([&](Operation *op) -> WalkResult {
      if (isa<AnnotateOp>(op))
        return op->emitError()
               << "tp-verify-partitioned: tp.annotate left in a partitioned "
                  "program";
      for (StringRef name : {TPDialect::getOperandLayoutsAttrName(),
                             TPDialect::getResultLayoutsAttrName(),
                             TPDialect::getCapturedLayoutsAttrName()})
        if (op->hasAttr(name))
          return op->emitError() << "tp-verify-partitioned: planner attribute '"
                                 << name << "' left in a partitioned program";
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (failed(checkBoundary(func, func.getArgumentTypes()[i],
                                 func.getArgAttrDict(i), "argument", i)))
          return signalPassFailure();
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        if (failed(checkBoundary(func, func.getResultTypes()[i],
                                 func.getResultAttrDict(i), "result", i)))
          return signalPassFailure();
    }
  }
};
} // namespace
