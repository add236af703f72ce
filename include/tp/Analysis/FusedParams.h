//===- FusedParams.h - fused projections split into their pieces -*- C++ -*-===//
//
// Hugging Face GPT-2 (`c_attn`, [hidden, 3*hidden]) and Phi-3 (`qkv_proj`,
// `gate_up_proj`) fuse several projections into one weight and slice the
// product apart. Megatron's plan splits each piece by heads, which is a
// strided block of the fused dimension that no contiguous split of it can
// express. Pushing the slices up through the ops that produce the fused
// value (the matmul, the bias add, reshapes) until they reach the weight,
// and giving each slice of the weight an argument of its own, makes every
// piece a weight the planner splits like any other; `tp.source` on the new
// arguments tells the runtime which block of the stored tensor (named by
// `tp.name`) each one is, so checkpoints load unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_FUSEDPARAMS_H
#define TP_ANALYSIS_FUSEDPARAMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace mlir::tp {

struct FusedParamStats {
  /// Ops replaced by one copy per slice of their result.
  int64_t opsSplit = 0;
  /// Parameters replaced by their pieces, and the pieces made.
  int64_t paramsSplit = 0;
  int64_t pieces = 0;
};

/// Splits `func`'s fused parameters into their pieces (see above). A value
/// whose every use is a `tensor.extract_slice` along one dimension (static,
/// unit strides, the other dimensions whole), at least two of them that
/// together cover the dimension, is computed slice by slice
/// when its producer allows it: a linalg op whose loop for that dimension is
/// parallel and unread by the body, an expand/collapse_shape leaving that
/// dimension alone, a `tensor.empty`. A `tp.param` argument whose every use
/// is such a slice becomes one argument per slice, with the original's
/// attributes (its `tp.name`, or `argN` when it had none) and `tp.source =
/// {offsets = array<i64: ...>, shape = array<i64: ...>}`. Functions with
/// `tp.updates` results (training steps, whose results name argument
/// numbers) and pinned arguments are left alone.
FusedParamStats splitFusedParameters(func::FuncOp func);

} // namespace mlir::tp

#endif // TP_ANALYSIS_FUSEDPARAMS_H
