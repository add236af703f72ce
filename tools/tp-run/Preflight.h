//===- Preflight.h - tp-run --preflight and --tp auto ------------*- C++ -*-===//
//
// The pre-launch checklist of a tensor-parallel run (docs/preflight.md):
//  * `--preflight`: divisibility of hidden, heads, kv-heads, FFN and
//    vocabulary by tp; the TP group inside one fast-interconnect domain; a
//    2-layer smoke run printing every rank's shard shapes; tp=1 vs tp=N on
//    fixed seeds; the modelled communication share of a step; the peak
//    memory per device. One table, exit code 1 on any failure.
//  * `--tp auto`: the smallest degree whose parameters, training state and
//    activations fit device memory, with the planner's modelled step time of
//    every candidate.
//
//===----------------------------------------------------------------------===//

#ifndef TP_TOOLS_TP_RUN_PREFLIGHT_H
#define TP_TOOLS_TP_RUN_PREFLIGHT_H

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace tprun {

/// The category of the options below, shown by tp-run --help.
llvm::cl::OptionCategory &preflightCategory();

/// Whether --preflight was given.
bool preflightRequested();

/// The first option of preflightCategory() given on the command line other
/// than --preflight ("" if none): they mean nothing without --preflight or
/// --tp auto.
std::string preflightOptionGiven();

/// What tp-run already has when preflight starts.
struct PreflightInputs {
  std::string self;         ///< the tp-run executable (the smoke run)
  std::string binDir;       ///< where tp-gen lives
  std::string source;       ///< the model's text
  std::string inputFile;    ///< its file
  std::string work;         ///< the work folder
  std::string shardOptions; ///< --shard-options
  int timeoutSeconds = 300; ///< --timeout, passed to the smoke run
};

/// --tp auto (tp == 0) and/or --preflight at degree tp; returns the exit
/// code of tp-run.
int runPreflight(mlir::MLIRContext &context, const PreflightInputs &inputs,
                 int tp);

} // namespace tprun

#endif // TP_TOOLS_TP_RUN_PREFLIGHT_H
