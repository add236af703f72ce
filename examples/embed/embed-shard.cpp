//===- embed-shard.cpp - a host compiler that embeds tp-opt -----*- C++ -*-===//
//
// Reads a .mlir file, shards it with the tp-shard pipeline built by
// mlir::tp::buildShardPipeline, prints one line per function of the plan
// report and then the program each device runs.
//
//   embed-shard INPUT.mlir ["tp=4 sequence-parallel=off"]
//
// The second argument is what --tp-shard= takes (docs/passes/shard.md).
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/Passes.h"
#include "tp/InitTP.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    llvm::errs() << "usage: embed-shard INPUT.mlir [OPTIONS]\n";
    return 2;
  }

  // The upstream dialects, and tp with the sharding rules it attaches to them.
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::tp::registerTPDialects(registry);
  mlir::MLIRContext context(registry);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;

  // The tp-shard pipeline, from the options --tp-shard= takes, with the plan
  // report delivered in memory.
  mlir::tp::ShardPipelineOptions options;
  if (argc == 3 && mlir::failed(options.parseFromString(argv[2])))
    return 1;
  options.reportCallback = [](const llvm::json::Value &report) {
    for (const llvm::json::Value &function :
         *report.getAsObject()->getArray("functions")) {
      const llvm::json::Object &plan = *function.getAsObject();
      llvm::outs() << "// @" << *plan.getString("function") << ": "
                   << *plan.getObject("totals")->getInteger("collectives")
                   << " collectives\n";
    }
  };
  mlir::PassManager pm(&context);
  mlir::tp::buildShardPipeline(pm, options);
  if (mlir::failed(pm.run(*module)))
    return 1;

  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
