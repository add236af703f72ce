//===- TPPassPlugin.cpp - the tp- passes for a stock mlir-opt ---*- C++ -*-===//
//
// `mlir-opt --load-pass-plugin=TPPassPlugin.so`: registers every tp- pass
// and pipeline (registerTPPasses). Load TPDialectPlugin.so with it: the
// planner needs the sharding rules that the dialect plugin attaches.
//
// The flags. mlir-opt builds its list of pass flags (`--canonicalize`, ...)
// before it parses the command line, and plugins load while it parses, so a
// pass registered by a plugin is reachable through `--pass-pipeline=` but has
// no flag of its own. This plugin therefore adds one option per tp- pass and
// pipeline (`--tp-shard[=OPTIONS]`, ...) that appends `name{OPTIONS}` to a
// module pipeline and hands the whole of it to mlir-opt's `--pass-pipeline`
// option; mlir-opt then runs exactly what
// `--pass-pipeline="builtin.module(tp-shard{OPTIONS})"` runs. The flags can
// be repeated and combined with each other (in order), not with upstream pass
// flags or an explicit `--pass-pipeline` (put everything in the pipeline
// instead). A driver without a `--pass-pipeline` option, or one that already
// has a flag of that name, gets no flags.
//
//===----------------------------------------------------------------------===//

#include "tp/InitTP.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

namespace {
/// The passes and pipelines of registerTPPasses() that get a flag
/// (test/embed/plugin-flags.test checks that this is all of them).
constexpr llvm::StringLiteral kFlagNames[] = {"tp-shard",
                                              "tp-propagate",
                                              "tp-partition",
                                              "tp-optimize-collectives",
                                              "tp-verify-partitioned",
                                              "tp-lower-cpu",
                                              "tp-plan-buffers",
                                              "tp-vectorize-cpu",
                                              "tp-outline-cpu-kernels",
                                              "tp-lower-gpu",
                                              "tp-fuse-attention",
                                              "tp-route-experts",
                                              "tp-gemm-to-runtime",
                                              "tp-linalg-to-gpu",
                                              "tp-merge-gpu-modules",
                                              "tp-dedup-kernels",
                                              "tp-fuse-softmax",
                                              "tp-group-gemms",
                                              "tp-gemm-epilogues",
                                              "tp-fuse-elementwise",
                                              "tp-untie-fills",
                                              "tp-legalize-fpowi",
                                              "tp-tabulate-index-math",
                                              "tp-gpu-cost-report",
                                              "tp-decompose-aggregates",
                                              "convert-tp-to-runtime",
                                              "tp-import-shard",
                                              "tp-export-shard",
                                              "tp-hoist-constants"};

/// The pipeline spelled by the flags seen so far, and how many times this
/// plugin has set `--pass-pipeline` (to notice one given by the user).
struct FlagState {
  std::string pipeline;
  int pipelineOccurrences = 0;
};

FlagState &getFlagState() {
  static FlagState state;
  return state;
}

void addPassFlags() {
  auto &options = llvm::cl::getRegisteredOptions();
  auto found = options.find("pass-pipeline");
  if (found == options.end())
    return;
  llvm::cl::Option *passPipeline = found->second;
  for (llvm::StringRef name : kFlagNames) {
    if (options.count(name))
      continue;
    const mlir::PassRegistryEntry *entry = mlir::PassInfo::lookup(name);
    if (!entry)
      entry = mlir::PassPipelineInfo::lookup(name);
    if (!entry)
      continue;
    // Options live as long as the process, as mlir-opt's own do.
    auto *flag = new llvm::cl::opt<std::string>(
        name, llvm::cl::desc(entry->getPassDescription()),
        llvm::cl::value_desc("options"), llvm::cl::ValueOptional);
    flag->setCallback([name, passPipeline, flag](const std::string &value) {
      FlagState &state = getFlagState();
      if (passPipeline->getNumOccurrences() != state.pipelineOccurrences) {
        llvm::errs() << "mlir-opt: --" << name
                     << " cannot be combined with --pass-pipeline; write "
                        "the whole pipeline there, e.g. "
                        "--pass-pipeline=\"builtin.module("
                     << name << "{...})\"\n";
        std::exit(1);
      }
      if (!state.pipeline.empty())
        state.pipeline += ",";
      state.pipeline += name.str();
      if (!value.empty())
        state.pipeline += "{" + value + "}";
      ++state.pipelineOccurrences;
      if (passPipeline->addOccurrence(flag->getPosition(), "pass-pipeline",
                                      "builtin.module(" + state.pipeline + ")"))
        std::exit(1);
    });
  }
}
} // namespace

extern "C" LLVM_ATTRIBUTE_VISIBILITY_DEFAULT ::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TPPasses", LLVM_VERSION_STRING, []() {
            mlir::tp::registerTPPasses();
            addPassFlags();
          }};
}
