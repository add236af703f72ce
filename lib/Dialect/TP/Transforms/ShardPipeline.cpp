//===- ShardPipeline.cpp - the tp-shard pipeline ----------------*- C++ -*-===//
//
// `--tp-shard="tp=N ..."`: the whole compiler front half in one flag, for
// users and for compilers that embed tp-opt (buildShardPipeline).
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tp;

void mlir::tp::buildShardPipeline(OpPassManager &pm,
                                  const ShardPipelineOptions &options) {
  PropagatePassOptions propagate;
  propagate.tp = options.tp;
  propagate.meshName = options.mesh;
  propagate.meshAxes = options.meshAxes;
  propagate.batchAxis = options.batchAxis;
  propagate.device = options.device;
  propagate.linkBandwidth = options.linkBandwidth;
  propagate.linkLatency = options.linkLatency;
  propagate.peakFlops = options.peakFlops;
  propagate.memoryBandwidth = options.memoryBandwidth;
  propagate.memoryBudget = options.memoryBudget;
  propagate.deviceMemory = options.deviceMemory;
  propagate.paramShare = options.paramShare;
  propagate.sequenceParallel = options.sequenceParallel;
  propagate.allowPadding = options.allowPadding;
  propagate.reshardParams = options.reshardParams;
  propagate.largeConstantBytes = options.largeConstantBytes;
  propagate.weightConstantBytes = options.weightConstantBytes;
  propagate.splitFusedParams = options.splitFusedParams;
  propagate.rematerialize = options.rematerialize;
  propagate.dataAxesOnBatch = options.dataAxesOnBatch;
  propagate.searchAxes = options.searchAxes;
  propagate.report = options.report;
  if (!options.hoistConstants.empty()) {
    HoistConstantsPassOptions hoist;
    hoist.file = options.hoistConstants;
    hoist.largeConstantBytes = options.largeConstantBytes;
    hoist.weightConstantBytes = options.weightConstantBytes;
    pm.addPass(createHoistConstantsPass(hoist));
  }
  // Upstream shard annotations become pins; no-op without shard ops.
  pm.addPass(createImportShardPass());
  if (options.reportCallback)
    pm.addPass(createPropagatePass(propagate, options.reportCallback));
  else
    pm.addPass(createPropagatePass(propagate));
  pm.addPass(createPartitionPass());
  OptimizeCollectivesPassOptions optimize;
  optimize.mergeBytes = options.mergeBytes;
  pm.addPass(createOptimizeCollectivesPass(optimize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createVerifyPartitionedPass());
}

void mlir::tp::registerShardPipeline() {
  PassPipelineRegistration<ShardPipelineOptions>(
      "tp-shard",
      "Plan, partition and optimise a tensor program for tensor parallelism "
      "(tp-import-shard + tp-propagate + tp-partition + "
      "tp-optimize-collectives + canonicalize + cse + tp-verify-partitioned); "
      "takes every tp-propagate option",
      buildShardPipeline);
}
