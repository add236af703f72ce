//===- Rematerialize.h - one copy of each cheap shared value per use -*- C++ -*-===//
//
// Front ends share values that cost nothing to recompute: torch-mlir CSEs
// one `tensor.empty` / zero `linalg.fill` into the `outs` of every op of the
// same shape, and one causal mask, position table or scalar constant feeds
// every layer. Shared, such a value joins distant layers in the planner's
// graph (one clique, an elimination width that explodes) and forces one
// layout on consumers that want different ones (a row-parallel matmul wants
// its zero init as a partial sum, a column-parallel one wants it split).
// Rematerialising it per consumer gives each consumer its own copy to lay
// out; the partitioner's CSE merges the copies that end up identical.
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_REMATERIALIZE_H
#define TP_ANALYSIS_REMATERIALIZE_H

#include "tp/Analysis/ConstantWeights.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace mlir::tp {

struct RematerializeStats {
  /// Ops cloned.
  int64_t clones = 0;
  /// Shared cheap values left shared because the clone limit was reached.
  int64_t leftShared = 0;
};

/// Gives every *cheap* value of `func`'s body one copy per consuming op.
/// Cheap: the result of a side-effect-free op on tensors whose inputs are
/// cheap values, scalars or non-parameter arguments, that reads no parameter
/// and no weight constant (isWeightConstant with `weights`), and
/// that reduces nothing unless it depends on no argument at all and reduces
/// over at most 2^16 points (a fill, an empty tensor, an iota, a mask from
/// compare/select, a broadcast of a small constant). `tp.annotate` results are never copied (a pin stays one
/// value). At most `maxClones` ops are cloned in all (a guard against
/// pathological graphs; what is left shared is counted).
RematerializeStats rematerializeSharedValues(func::FuncOp func,
                                             const ConstantWeightOptions &weights,
                                             int64_t maxClones);

} // namespace mlir::tp

#endif // TP_ANALYSIS_REMATERIALIZE_H
