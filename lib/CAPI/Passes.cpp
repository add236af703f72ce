//===- Passes.cpp - C API: the tp- passes and tp-shard ----------*- C++ -*-===//

#include "tp-c/Passes.h"

#include "tp/Dialect/TP/Transforms/Passes.h"
#include "tp/InitTP.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;

void tpRegisterPasses(void) { tp::registerTPPasses(); }

MlirLogicalResult tpRunShardPipeline(MlirModule module, MlirStringRef options,
                                     MlirStringCallback reportCallback,
                                     void *userData) {
  ModuleOp op = unwrap(module);
  tp::ShardPipelineOptions pipelineOptions;
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (failed(pipelineOptions.parseFromString(unwrap(options), errorStream))) {
    StringRef message = StringRef(error).trim();
    message.consume_front("<Pass-Options-Parser>: ");
    emitError(op.getLoc()) << "tp-shard: bad options '" << unwrap(options)
                           << "': " << message;
    return wrap(failure());
  }
  if (reportCallback)
    pipelineOptions.reportCallback = [&](const llvm::json::Value &report) {
      // The same text as report=FILE.
      std::string text = llvm::formatv("{0:2}\n", report).str();
      reportCallback(wrap(StringRef(text)), userData);
    };
  PassManager pm(op.getContext());
  tp::buildShardPipeline(pm, pipelineOptions);
  return wrap(pm.run(op));
}
