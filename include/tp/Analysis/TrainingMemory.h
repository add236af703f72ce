//===- TrainingMemory.h - memory classes of a training step -----*- C++ -*-===//
//
// Classifies the values of a planned training step (a function whose
// results carry `tp.updates`, docs/training.md) into weights, gradients,
// optimizer states and activations, and sums each class's bytes per device
// under the plan's layouts. The `training` section of the --tp-propagate
// report.
//
// The rules (docs/training.md, "Memory per device"):
//  * weights: arguments with `tp.param` and without `tp.state`;
//  * optimizer states: arguments with `tp.state` (Adam's m and v, the step
//    counter);
//  * gradients: for each weight, its *update region* is the set of ops that
//    are elementwise (linalg, every loop parallel) with results of the
//    weight's shape, reachable forward from the weight and the state
//    arguments and backward from the result that updates the weight, both
//    through such ops only (the weight's states are those whose next value
//    the region computes). A gradient is a value of the
//    weight's shape that a region op reads and that no region op, argument,
//    constant or init produces: what the optimizer consumes, counted in the
//    layout the optimizer reads it in;
//  * activations: the values the backward pass reads from the forward pass.
//    The forward pass is every op the loss (result 0) depends on; an
//    activation is a result of a forward op that an op outside the forward
//    pass reads (views count as the value they view; arguments never).
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_TRAININGMEMORY_H
#define TP_ANALYSIS_TRAININGMEMORY_H

#include "tp/Analysis/Planner.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace mlir::tp {

struct TrainingParam {
  std::string name;
  unsigned argument = 0;
  LayoutAttr layout;
  /// Layouts of the result updating it, its gradients and its states.
  SmallVector<LayoutAttr> updateLayouts, gradientLayouts, stateLayouts;
};

struct TrainingMemory {
  double weightBytes = 0, gradientBytes = 0, stateBytes = 0,
         activationBytes = 0;
  int64_t numWeights = 0, numGradients = 0, numStates = 0,
          numActivations = 0;
  /// Elements of all weights (global): the parameter count.
  int64_t weightElements = 0;
  SmallVector<TrainingParam> params;
};

/// The memory classes of a planned training step; nullopt when the
/// function has no result with `tp.updates`.
std::optional<TrainingMemory> analyzeTrainingMemory(const Plan &plan);

/// The report's `training` section.
llvm::json::Object getTrainingReport(const TrainingMemory &memory);

} // namespace mlir::tp

#endif // TP_ANALYSIS_TRAININGMEMORY_H
