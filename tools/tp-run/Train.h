//===- Train.h - tp-run --train ---------------------------------*- C++ -*-===//
//
// Training runs (docs/training.md): `tp-run --train --steps K` generates a
// training step with `tp-gen --train` (with --preset), runs K steps on N
// ranks (tp-runner feeds every updated result back into the argument it
// updates) and, with --check, runs the unsharded step K times too and
// compares the two loss curves step by step.
//
//===----------------------------------------------------------------------===//

#ifndef TP_TOOLS_TP_RUN_TRAIN_H
#define TP_TOOLS_TP_RUN_TRAIN_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace tprun {

/// The category of the options below, shown by tp-run --help.
llvm::cl::OptionCategory &trainCategory();

/// Whether --train was given.
bool trainRequested();

/// The tp-gen options --train adds to a --preset model.
void addTrainGenOptions(std::vector<std::string> &args);

/// The model.json field of an output: `"updates": <argument index>` when
/// the result carries `tp.updates` (docs/model-abi.md).
void addUpdatesField(llvm::json::Object &buffer, mlir::DictionaryAttr attrs);

/// Whether a model.json describes a training step (some output updates an
/// argument).
bool isTrainingStep(const llvm::json::Object &model);

/// Where the runner writes the loss curve of the model compiled in `dir`.
std::string lossFilePath(llvm::StringRef dir);

/// Compares the loss curves the sharded and the unsharded run wrote:
/// prints `loss curves match (max rel diff X)` and whether the loss
/// decreased, and returns 0, or prints the first step whose relative
/// difference exceeds `tolerance` (negative: 1e-4) and returns 1.
int compareLossCurves(llvm::StringRef sharded, llvm::StringRef unsharded,
                      int devices, double tolerance);

/// Prints the first and last loss of a run (without --check).
void summarizeLossCurve(llvm::StringRef path);

} // namespace tprun

#endif // TP_TOOLS_TP_RUN_TRAIN_H
