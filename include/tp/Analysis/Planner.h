//===- Planner.h - choose a layout for every value --------------*- C++ -*-===//
//
// The planner behind `--tp-propagate`. Given a function on global shapes and
// a mesh, it enumerates the strategies of every op from its sharding rule,
// prices them and every layout change between them with the cost model, and
// picks the assignment of least modelled time under the memory constraint
// with the exact solver. The algorithm is described at the top of
// Planner.cpp and in docs/passes/propagate.md.
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_PLANNER_H
#define TP_ANALYSIS_PLANNER_H

#include "tp/Analysis/ConstantWeights.h"
#include "tp/Analysis/CostModel.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace mlir::tp {

enum class SequenceParallelMode { Auto, On, Off };

struct PlannerOptions {
  /// Device numbers (a built-in profile, possibly with overrides).
  DeviceProfile device = *DeviceProfile::lookup("h100-nvlink");
  /// Memory constraint: by default the parameter bytes per device may not
  /// exceed `paramShareFactor` x (total parameter bytes / devices that
  /// parameters can be split over). `absoluteBudget` replaces it with a
  /// budget over parameters and activations; `unconstrained` removes it.
  double paramShareFactor = 1.1;
  std::optional<double> absoluteBudget;
  bool unconstrained = false;
  SequenceParallelMode sequenceParallel = SequenceParallelMode::Auto;
  /// Allow splits of dimensions that the axis size does not divide (the
  /// partitioner pads and masks them).
  bool allowPadding = true;
  /// Allow collectives on parameters (gathering weights is FSDP/ZeRO-3, not
  /// tensor parallelism; by default a parameter is consumed in the layout
  /// it is stored in).
  bool reshardParams = false;
  /// Constants that are weights (ConstantWeights.h: any of at least
  /// `largeBytes`, or used as a weight and of at least `weightBytes`) are
  /// treated like parameters.
  ConstantWeightOptions constantWeights;
  /// Copy cheap shared values per consumer first (Rematerialize.h).
  bool rematerialize = true;
  /// Split fused weights into their pieces first (FusedParams.h).
  bool splitFusedParams = true;
  /// On a mesh with both data axes (axes that pin a non-parameter
  /// argument) and other axes: an op with a factor of the pinned data
  /// dimensions (the batch) puts a data axis on such a factor only. Ops
  /// without one (weights, their gradients' updates, optimizer states)
  /// keep every choice, so sharded optimizer states remain possible.
  bool dataAxesOnBatch = true;
  /// The search splits factors over at most this many independent axes: on
  /// a mesh with more (of size > 1), the axes that pin no input are grouped
  /// into contiguous groups that split the same factor together, and the
  /// plan is optimal over that space (a remark says so). 0: no grouping.
  int64_t maxSearchAxes = 2;
};

/// One layout change on a use, with the collectives that realise it.
struct PlannedReshard {
  Operation *consumer = nullptr;
  unsigned operandNumber = 0;
  Value value;
  LayoutAttr from, to;
  SmallVector<CollectiveStep> steps;
  double time = 0;
  double wireBytes = 0;
  double messageBytes = 0;
};

/// The decision for one op.
struct PlannedOp {
  Operation *op;
  /// Per operand: the layout the op consumes it in (null for operands that
  /// are not ranked tensors).
  SmallVector<LayoutAttr> operandLayouts;
  /// Per captured tensor (getCapturedTensors): the layout the body reads.
  SmallVector<LayoutAttr> capturedLayouts;
  /// Per result: the layout the op produces (null for non-tensors).
  SmallVector<LayoutAttr> resultLayouts;
  std::string strategy;
  double computeTime = 0;
  bool padded = false;
};

struct PlanTotals {
  double stepTime = 0;
  double computeTime = 0;
  double communicationTime = 0;
  double wireBytes = 0;
  double messageBytes = 0;
  double paramBytesPerDevice = 0;
  double paramBytesTotal = 0;
  double activationBytesPerDevice = 0;
  /// Every op result's bytes per device (views excluded): what a training
  /// step would keep for the backward pass if it kept everything.
  double activationBytesAllPerDevice = 0;
  double memoryBudget = 0; // 0: none
  int64_t numCollectives = 0;
};

struct Plan {
  MeshOp mesh;
  func::FuncOp func;
  SmallVector<LayoutAttr> argLayouts;    // per argument (null: not a tensor)
  SmallVector<LayoutAttr> resultLayouts; // per result (null: not a tensor)
  SmallVector<PlannedOp> ops;
  SmallVector<PlannedReshard> reshards;
  SmallVector<std::string> remarks;
  PlanTotals totals;
  bool exact = true;
  /// The solver's proven lower bound on the modelled step time, and the
  /// relative gap to the plan's (0 when exact); hub nodes the fallback
  /// conditioned on and eliminations run (Solver.h).
  double lowerBound = 0;
  double gap = 0;
  int relaxedNodes = 0;
  int solves = 0;
  /// Values whose fan-out was relaxed (too many pairs), and the mesh axes
  /// the search split together (axes of more than PlannerOptions::
  /// maxSearchAxes; empty: each axis on its own).
  int relaxedFanOuts = 0;
  SmallVector<SmallVector<std::string>> axisGroups;
  /// Strategies the solver removed as dominated before the elimination.
  int prunedStrategies = 0;
  /// What the memory budget bounds: "none", "parameters" (the default
  /// share) or "liveness" (an absolute budget over parameters and the
  /// activations' liveness peak: program points constrained, solver
  /// rounds, and whether it fell back to counting every activation).
  std::string memoryConstraint = "none";
  int livenessPoints = 0;
  int livenessRounds = 0;
  bool livenessConservative = false;
  /// Ops cloned in phase 0 (Rematerialize.h), and fused weights split into
  /// pieces (FusedParams.h).
  int64_t rematerialized = 0;
  int64_t fusedParamsSplit = 0;
  int64_t numNodes = 0;
  int64_t numStrategies = 0;
  int solverWidth = 0;
  int largestFront = 0;
  double planSeconds = 0;
};

/// Plans `func` over `mesh`. Emits diagnostics (and returns failure) on
/// contradicting pins or when no plan satisfies the constraints; emits
/// remarks for ops kept replicated for lack of a rule.
FailureOr<Plan> planFunction(func::FuncOp func, MeshOp mesh,
                             const PlannerOptions &options);

/// Writes the plan into the IR: `tp.layout` on every tensor argument and
/// result, `tp.operand_layouts` and `tp.result_layouts` on every planned op.
void annotateFunction(const Plan &plan);

/// The JSON plan report (docs/passes/propagate.md describes its fields).
llvm::json::Object getPlanReport(const Plan &plan, const CostModel &costModel);

} // namespace mlir::tp

#endif // TP_ANALYSIS_PLANNER_H
