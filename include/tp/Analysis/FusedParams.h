//===- FusedParams.h - fused projections split into their pieces -*- C++ -*-===//
//
// Hugging Face GPT-2 (`c_attn`, [hidden, 3*hidden]), Phi-3 (`qkv_proj`,
// `gate_up_proj`), Falcon (a multi-query `query_key_value` of unequal q, k
// and v) and mixture-of-experts stacks (an expert's `gate_up_proj`) fuse
// several projections into one weight and cut the product apart.
// Megatron's plan splits each piece by heads, which is a strided block of
// the fused dimension that no contiguous split of it can express. Pushing
// the slices up through the ops that produce the fused
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

/// Splits `func`'s fused parameters into their pieces (FusedParams.cpp
/// opens with the algorithm): every use that reads a block of a value
/// along one dimension (a same-rank or rank-reducing `tensor.extract_slice`,
/// a gather at constant indices) is a cut; cuts move up through the ops
/// that compute the value (linalg ops parallel in the cut loop, gathers
/// from a table at that loop, reshapes where the block is contiguous,
/// empties, constants) until they reach a `tp.param` argument, which
/// becomes one argument per distinct cut with the original's attributes
/// and `tp.source = {offsets = array<i64: ...>, shape = array<i64: ...>}`.
/// Before that, every argument gets its name written into `tp.name`
/// (nameArguments: `tp.name`, NameLoc, else `arg<N>`). Functions with
/// `tp.updates` results (training steps, whose results name argument
/// numbers) and pinned arguments are left alone.
FusedParamStats splitFusedParameters(func::FuncOp func);

} // namespace mlir::tp

#endif // TP_ANALYSIS_FUSEDPARAMS_H
