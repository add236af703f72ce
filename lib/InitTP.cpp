//===- InitTP.cpp - register everything tp-opt provides ---------*- C++ -*-===//

#include "tp/InitTP.h"

#include "tp/Analysis/ShardingRules.h"
#include "tp/Conversion/Passes.h"
#include "tp/Dialect/TP/IR/TPDialect.h"
#include "tp/Dialect/TP/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::tp::registerTPDialects(DialectRegistry &registry) {
  registry.insert<TPDialect>();
  // Upstream shard, so that hosts parse what tp-import-shard reads.
  registry.insert<shard::ShardDialect>();
  registerShardingRuleExternalModels(registry);
}

void mlir::tp::registerTPPasses() {
  registerTPTransformsPasses();
  registerShardPipeline();
  registerTPConversionPasses();
  registerLowerCPUPipeline();
  registerLowerGPUPipeline();
}
