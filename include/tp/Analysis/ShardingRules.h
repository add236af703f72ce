//===- ShardingRules.h - how ops split over a mesh --------------*- C++ -*-===//
//
// Sharding rules are derived from the IR, never listed per model: a rule
// names the *factors* of an op (its loop dimensions) and says which factors
// make up each dimension of each operand and result. See
// docs/passes/propagate.md for how the planner turns rules into strategies.
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_SHARDINGRULES_H
#define TP_ANALYSIS_SHARDINGRULES_H

#include "tp/Dialect/TP/IR/TPAttrs.h"

#include "mlir/IR/OpDefinition.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::tp {

/// How a factor may be split.
enum class FactorKind {
  /// Splitting it splits the tensors indexed by it; no communication.
  Parallel,
  /// Splitting it leaves the results partial with the factor's combiner.
  Reduction,
  /// It cannot be split (a sliced or concatenated dimension, a reduction
  /// whose combiner is not sum/max/min, a window, ...).
  Opaque,
};

/// One loop dimension of an op.
struct Factor {
  int64_t size;
  FactorKind kind = FactorKind::Parallel;
  ReductionKind combiner = ReductionKind::Sum; // for Reduction factors
};

/// The factors of each dimension of one tensor, major first. An empty list
/// means the dimension is not tied to any factor and is never split.
using TensorFactors = SmallVector<SmallVector<int64_t, 1>>;

/// The rule of one op.
struct ShardingRule {
  SmallVector<Factor> factors;
  /// Per operand: its factors, or nullopt for operands that are not ranked
  /// tensors (scalars, indices), which the planner ignores.
  SmallVector<std::optional<TensorFactors>> operands;
  /// Per result, likewise.
  SmallVector<std::optional<TensorFactors>> results;
  /// Tensors the op's regions read without taking them as operands (a
  /// `tensor.extract` gather from a captured table), with their factors. A
  /// dimension indexed by a loop (`linalg.index`) carries that loop's factor;
  /// a dimension indexed by data (a token id) gets a factor of its own, of
  /// kind Reduction/sum when the body yields the gathered element unchanged
  /// (a row-split table then gives a masked lookup whose result is a partial
  /// sum), or none (read whole) otherwise.
  SmallVector<std::pair<Value, TensorFactors>> captured;
  /// Per operand: the result it initialises (destination-passing style), or
  /// -1. An init takes the partial state of its result: when a reduction
  /// factor is split, each device accumulates into its own init, so the init
  /// must hold the combiner's identity or itself be partial.
  SmallVector<int64_t> initOf;
  /// The results may take any layout at no cost, partial included (the op
  /// materialises no data, e.g. `tensor.empty`).
  bool anyLayout = false;
  /// The results hold the identity of this combiner everywhere (a fill with
  /// 0 or -inf), so they may also be produced as partial values of it.
  std::optional<ReductionKind> identityOf;
  /// Arithmetic operations per point of the iteration space.
  int64_t opsPerPoint = 1;
  /// The op moves no data (a reshape of a contiguous tensor).
  bool viewLike = false;
};

} // namespace mlir::tp

#include "tp/Analysis/ShardingRuleInterface.h.inc"

namespace mlir::tp {

/// Attaches sharding rules to upstream ops: every linalg structured op and
/// linalg.softmax; tensor.empty, expand_shape, collapse_shape,
/// extract_slice, insert_slice, concat, extract; every elementwise arith and
/// math op on tensors.
void registerShardingRuleExternalModels(DialectRegistry &registry);

/// The rule of `op`, or failure when it has none (no interface, or the
/// interface declines). `reason` then says why, for the planner's remark.
FailureOr<ShardingRule> getShardingRule(Operation *op, std::string *reason);

/// Recognises the combiner of a reduction body operation (`arith.addf` and
/// `arith.addi` are sums, `arith.maximumf`/`maxnumf`/`maxsi`/`maxui` maxima,
/// and the `min` counterparts minima).
std::optional<ReductionKind> getCombinerKind(Operation *combiner);

} // namespace mlir::tp

#endif // TP_ANALYSIS_SHARDINGRULES_H
