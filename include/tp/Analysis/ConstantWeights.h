//===- ConstantWeights.h - weights that a front end baked in ----*- C++ -*-===//
//
// Front ends that do not take the weights as arguments (torch-mlir's ONNX
// importer, a torch.export without a functional wrapper, TF imports) bake
// them into the program as `dense` or `dense_resource` constants. Such a
// constant is a weight like any `tp.param` argument: the planner lays it
// out like one (PlannerNodes.cpp), rematerialisation leaves it one value,
// and `--tp-hoist-constants` turns it into an argument with its values in
// a checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_CONSTANTWEIGHTS_H
#define TP_ANALYSIS_CONSTANTWEIGHTS_H

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cstdint>

namespace mlir::tp {

/// Which constants are weights.
struct ConstantWeightOptions {
  /// Any non-splat constant of at least this many bytes.
  int64_t largeBytes = 1 << 20;
  /// A non-splat constant of at least this many bytes that is used as a
  /// weight: an operand of a contraction (a linalg op reading it along a
  /// reduction loop of more than one point) or the table of a gather by
  /// data (an embedding), reached through ops that only move its elements
  /// (reshapes, slices, transposes, broadcasts, casts). Smaller ones (a
  /// RoPE frequency vector, a tiny table) stay replicated constants.
  int64_t weightBytes = 4096;
};

/// The bytes `constant` stores: 0 for splats and non-tensors.
int64_t getStoredBytes(arith::ConstantOp constant);

/// Whether `constant` is a weight (ConstantWeightOptions).
bool isWeightConstant(arith::ConstantOp constant,
                      const ConstantWeightOptions &options);

} // namespace mlir::tp

#endif // TP_ANALYSIS_CONSTANTWEIGHTS_H
