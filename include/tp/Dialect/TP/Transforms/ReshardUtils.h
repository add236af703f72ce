//===- ReshardUtils.h - emit the collectives of a layout change -*- C++ -*-===//

#ifndef TP_DIALECT_TP_TRANSFORMS_RESHARDUTILS_H
#define TP_DIALECT_TP_TRANSFORMS_RESHARDUTILS_H

#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::tp {

/// Emits, at the builder's insertion point, the tp collectives that take
/// `local` (this device's piece of a value of `globalShape` in layout `from`)
/// to layout `to`: the steps of `planReshard` (the same sequence the planner
/// priced), with `tensor.pad` before a split of a dimension the group does
/// not divide and `tensor.extract_slice` after a gather that produced
/// padding. Fails (emitting nothing) when no sequence exists.
FailureOr<Value> emitReshard(OpBuilder &builder, Location loc, Value local,
                             LayoutAttr from, LayoutAttr to,
                             ArrayRef<int64_t> globalShape, MeshOp mesh);

/// The identity of `kind` for `elementType` as a scalar constant (0 for sum,
/// the lowest value for max, the highest for min).
Value createIdentity(OpBuilder &builder, Location loc, ReductionKind kind,
                     Type elementType);

} // namespace mlir::tp

#endif // TP_DIALECT_TP_TRANSFORMS_RESHARDUTILS_H
