//===- LowerCPU.cpp - the tp-lower-cpu pipeline -----------------*- C++ -*-===//
//
// A partitioned program down to the LLVM dialect for CPU ranks. The upstream
// part is the pipeline tp-gen's numerics test validates against a Python
// reference (test/tp-gen/numerics.test).
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

void mlir::tp::buildLowerCPUPipeline(OpPassManager &pm) {
  pm.addPass(createDecomposeAggregatesPass());
  pm.addPass(createConvertTPToRuntimePass());
  addBufferizationPasses(pm, /*hoistStaticAllocs=*/false);
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::tp::registerLowerCPUPipeline() {
  PassPipelineRegistration<>(
      "tp-lower-cpu",
      "Lower a partitioned program to the LLVM dialect for CPU ranks "
      "(convert-tp-to-runtime, bufferization, loops, LLVM)",
      buildLowerCPUPipeline);
}
