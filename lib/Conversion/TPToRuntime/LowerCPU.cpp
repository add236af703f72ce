//===- LowerCPU.cpp - the tp-lower-cpu pipeline -----------------*- C++ -*-===//
//
// A partitioned program down to the LLVM dialect for CPU ranks
// (docs/passes/lower-cpu.md):
//
//   tp-decompose-aggregates, tp-route-experts,     experts' products → grouped
//   tp-gemm-to-runtime,                            GEMMs; contractions → GEMMs
//   convert-tp-to-runtime                          collectives → tprt calls
//   tp-fuse-elementwise, tp-untie-fills            each tensor read once
//   one-shot-bufferize, buffer-results-to-out-params (results in place)
//   tp-plan-buffers                                temporaries in one arena
//   tp-vectorize-cpu, convert-linalg-to-loops      loops over vectors
//   tp-outline-cpu-kernels, tp-dedup-kernels       each loop nest a function,
//                                                  each distinct one once
//   vector, math, arith, memref, scf, func → LLVM
//
// tp-gen's numerics test validates it against an independent Python
// implementation (test/tp-gen/numerics.test), the front-end fixtures
// against PyTorch (test/frontends/run-tiny.test).
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tp;

void mlir::tp::addBufferizationPasses(OpPassManager &pm,
                                      bool hoistStaticAllocs) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // scf.for / scf.while carrying tensors: an iteration may yield a new
  // buffer rather than write its argument's in place.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Results become out-parameters (the runner allocates every buffer).
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.modifyPublicFunctions = true;
  outParams.hoistStaticAllocs = hoistStaticAllocs;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass());
}

void mlir::tp::buildLowerCPUPipeline(OpPassManager &pm,
                                     const LowerCPUOptions &options) {
  // Tensors: every contraction to the runtime's GEMM (BLAS), collectives to
  // runtime calls, then elementwise chains fused into their consumers.
  pm.addPass(createDecomposeAggregatesPass());
  if (options.gemm) {
    // A mixture of experts' per-row weights: routed grouped GEMMs.
    pm.addPass(createRouteExpertsPass());
    pm.addPass(createGemmToRuntimePass());
  }
  pm.addPass(createConvertTPToRuntimePass());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  // A fill shared by several reductions would be one buffer copied for each.
  pm.addPass(createUntieFillsPass());

  // Buffers: results written in place into the caller's, temporaries in one
  // arena per function (allocated once per process).
  addBufferizationPasses(pm, /*hoistStaticAllocs=*/true);
  pm.addPass(createPlanBuffersPass());

  // Loops over vectors, then scalar loops for what did not vectorize.
  pm.addNestedPass<func::FuncOp>(createVectorizeCPUPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Each loop nest a function of its own, each distinct one once: clang
  // compiles small functions in linear time, and a model's equal layers
  // once.
  pm.addPass(createOutlineCPUKernelsPass());
  pm.addPass(createDedupKernelsPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  ConvertVectorToLLVMPassOptions vectorOptions;
  // Horizontal sums of a vector as a tree, not lane by lane.
  vectorOptions.reassociateFPReductions = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass()); // the vectors' poison
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::tp::registerLowerCPUPipeline() {
  PassPipelineRegistration<LowerCPUOptions>(
      "tp-lower-cpu",
      "Lower a partitioned program to the LLVM dialect for CPU ranks "
      "(GEMM and collectives to runtime calls, fused and vectorized loops, "
      "buffers in one arena per function, LLVM)",
      buildLowerCPUPipeline);
}
