//===- Passes.h - tp lowerings ----------------------------------*- C++ -*-===//

#ifndef TP_CONVERSION_PASSES_H
#define TP_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::tp {

#define GEN_PASS_DECL
#include "tp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tp/Conversion/Passes.h.inc"

/// `tp-lower-cpu`: a partitioned program down to the LLVM dialect for CPU
/// ranks: convert-tp-to-runtime, one-shot bufferization (function
/// boundaries, identity layouts), results to out-parameters, linalg to
/// loops, and the standard conversions to LLVM (math through libm).
void buildLowerCPUPipeline(OpPassManager &pm);

/// Registers `tp-lower-cpu` with the global pipeline registry.
void registerLowerCPUPipeline();

} // namespace mlir::tp

#endif // TP_CONVERSION_PASSES_H
