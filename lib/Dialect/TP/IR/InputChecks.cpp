//===- InputChecks.cpp - what tp-opt's passes accept as input -------------===//
//
// InputChecks.h says which contracts these checks enforce and why.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/IR/InputChecks.h"

#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;
using namespace mlir::tp;

LogicalResult mlir::tp::checkGlobalProgram(func::FuncOp func,
                                           StringRef pass) {
  StringRef globalShape = TPDialect::getGlobalShapeAttrName();
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, globalShape))
      return emitError(func.getLoc())
             << pass << ": '" << func.getSymName()
             << "' is already partitioned (argument #" << i << " has "
             << globalShape << "); it takes a program on global shapes";
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, globalShape))
      return emitError(func.getLoc())
             << pass << ": '" << func.getSymName()
             << "' is already partitioned (result #" << i << " has "
             << globalShape << "); it takes a program on global shapes";
  // Collectives and axis indices describe one device's part: in a program
  // on global shapes they have no meaning (an all-reduce of a whole value
  // would sum N copies of it).
  WalkResult walk = func.walk([&](Operation *op) {
    if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, SliceOp,
             AxisIndexOp>(op))
      return WalkResult::advance();
    op->emitError() << pass << ": '" << op->getName()
                    << "' is an op of a partitioned program (each device "
                       "runs it on its part); '"
                    << func.getSymName()
                    << "' is on global shapes, where a layout is pinned with "
                       "tp.annotate or tp.layout instead";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// Bytes one element of `type` takes in a dense_resource blob.
static std::optional<int64_t> elementBytes(Type type) {
  if (auto complex = dyn_cast<ComplexType>(type)) {
    std::optional<int64_t> part = elementBytes(complex.getElementType());
    return part ? std::optional<int64_t>(2 * *part) : std::nullopt;
  }
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return (type.getIntOrFloatBitWidth() + 7) / 8;
  return std::nullopt;
}

LogicalResult mlir::tp::checkResourceBlobs(Operation *root, StringRef pass) {
  WalkResult walk = root->walk([&](Operation *op) {
    WalkResult inner = op->getAttrDictionary().walk(
        [&](DenseResourceElementsAttr attr) {
          DenseResourceElementsHandle handle = attr.getRawHandle();
          ShapedType type = attr.getType();
          const AsmResourceBlob *blob = handle.getBlob();
          if (!blob) {
            op->emitError() << pass << ": dense_resource<" << handle.getKey()
                            << "> of type " << type
                            << " has no data (the file's dialect_resources "
                               "section lacks it)";
            return WalkResult::interrupt();
          }
          std::optional<int64_t> bytes = elementBytes(type.getElementType());
          if (!bytes || !type.hasStaticShape())
            return WalkResult::advance();
          int64_t held = blob->getData().size();
          int64_t needed = type.getNumElements() * *bytes;
          if (held == needed)
            return WalkResult::advance();
          op->emitError() << pass << ": dense_resource<" << handle.getKey()
                          << "> holds " << held << " bytes of data, but "
                          << type << " takes " << needed << " ("
                          << type.getNumElements() << " elements of " << *bytes
                          << " bytes)";
          return WalkResult::interrupt();
        });
    return inner.wasInterrupted() ? WalkResult::interrupt()
                                  : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}
