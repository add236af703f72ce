//===- Passes.h - tp dialect passes -----------------------------*- C++ -*-===//

#ifndef TP_DIALECT_TP_TRANSFORMS_PASSES_H
#define TP_DIALECT_TP_TRANSFORMS_PASSES_H

#include "tp/Dialect/TP/IR/TPDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tp {

#define GEN_PASS_DECL
#include "tp/Dialect/TP/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tp/Dialect/TP/Transforms/Passes.h.inc"

} // namespace mlir::tp

#endif // TP_DIALECT_TP_TRANSFORMS_PASSES_H
