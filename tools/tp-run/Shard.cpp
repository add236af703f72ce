//===- Shard.cpp - tp-run's --tp-shard ------------------------------------===//

#include "Shard.h"

#include "Process.h"

#include "tp/Dialect/TP/Transforms/Passes.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

void tprun::addShardPipeline(mlir::OpPassManager &pm, llvm::StringRef options,
                             llvm::StringRef report) {
  std::unique_ptr<mlir::tp::ShardPipelineOptions> parsed =
      mlir::tp::ShardPipelineOptions::createFromString(options);
  if (!parsed)
    die("invalid --tp-shard options '" + options.trim() + "'");
  // Written here (writeFile names the file when the disk is full).
  parsed->report = "";
  parsed->reportCallback = [path = report.str()](const llvm::json::Value &v) {
    writeFile(path, llvm::formatv("{0:2}\n", v).str());
  };
  mlir::tp::buildShardPipeline(pm, *parsed);
}
