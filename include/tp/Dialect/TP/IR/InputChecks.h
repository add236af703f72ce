//===- InputChecks.h - what tp-opt's passes accept as input -----*- C++ -*-===//
//
// Two checks of the stage contracts (docs/RationaleTP.md) that passes run on
// their input before they trust it:
//  - a *global* program (what tp-propagate and tp-partition take) has no
//    per-device code: no tp collectives, no tp.axis_index and no function
//    boundary with tp.global_shape (the marks of a partitioned program);
//  - every dense_resource blob holds exactly the bytes its type needs (MLIR
//    accepts any blob, and the lowering would read past a short one or
//    shift a long one).
//
//===----------------------------------------------------------------------===//

#ifndef TP_DIALECT_TP_IR_INPUTCHECKS_H
#define TP_DIALECT_TP_IR_INPUTCHECKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::tp {

/// Fails with an error naming `pass` when `func` is already partitioned or
/// contains per-device ops.
LogicalResult checkGlobalProgram(func::FuncOp func, StringRef pass);

/// Fails with an error at the op that holds a dense_resource attribute
/// whose blob is missing or does not hold exactly the bytes of its type.
LogicalResult checkResourceBlobs(Operation *root, StringRef pass);

} // namespace mlir::tp

#endif // TP_DIALECT_TP_IR_INPUTCHECKS_H
