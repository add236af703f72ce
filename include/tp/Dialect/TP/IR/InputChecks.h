//===- InputChecks.h - what tp-opt's passes accept as input -----*- C++ -*-===//
//
// Checks of the stage contracts (docs/RationaleTP.md) that passes run on
// their input before they trust it, and one that the tools run on the text
// before MLIR parses it:
//  - a *global* program (what tp-propagate and tp-partition take) has no
//    per-device code: no tp collectives, no tp.axis_index and no function
//    boundary with tp.global_shape (the marks of a partitioned program);
//  - every dense_resource blob holds exactly the bytes its type needs (MLIR
//    accepts any blob, and the lowering would read past a short one or
//    shift a long one);
//  - the text holds nothing MLIR 22 itself crashes on (docs/fuzzing.md):
//    an integer list after `dimensions =` / `permutation =` that is
//    malformed or holds an integer beyond 64 bits (the linalg.broadcast,
//    transpose and reduce parsers store a null attribute), or an empty
//    reassociation group of tensor.expand_shape / collapse_shape (the
//    verifier reads past it).
//
//===----------------------------------------------------------------------===//

#ifndef TP_DIALECT_TP_IR_INPUTCHECKS_H
#define TP_DIALECT_TP_IR_INPUTCHECKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace mlir::tp {

/// Fails with an error naming `pass` when `func` is already partitioned or
/// contains per-device ops.
LogicalResult checkGlobalProgram(func::FuncOp func, StringRef pass);

/// Fails with an error at the op that holds a dense_resource attribute
/// whose blob is missing or does not hold exactly the bytes of its type.
LogicalResult checkResourceBlobs(Operation *root, StringRef pass);

/// The offset in `text` of the first thing MLIR 22 crashes on (above): a
/// `dimensions =` / `permutation =` whose integer list is not a list of
/// 64-bit integers, or an empty reassociation group, if any. tp-opt and
/// tp-run report it as an error at that place instead of parsing.
struct UpstreamCrash {
  size_t offset;
  StringRef message;
};
std::optional<UpstreamCrash> findUpstreamParserCrash(StringRef text);

} // namespace mlir::tp

#endif // TP_DIALECT_TP_IR_INPUTCHECKS_H
