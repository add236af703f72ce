//===- LowerGPU.cpp - the tp-lower-gpu pipeline -----------------*- C++ -*-===//
//
// A program on tensors (partitioned or not) down to the LLVM dialect for GPU
// ranks, kernels embedded as a gpu.binary (docs/passes/lower-gpu.md):
//
//   tp-decompose-aggregates, tp-fuse-attention     attention: one kernel
//   tp-route-experts                               experts: grouped GEMMs
//   tp-gemm-to-runtime, convert-tp-to-runtime      GEMMs, collectives → tprt
//   tp-fuse-softmax                                softmax: one row kernel
//   linalg-fuse-elementwise-ops                    fewer, larger kernels
//   tp-gemm-epilogues                              bias/residual/activation
//                                                  into the GEMM (cuBLASLt)
//   one-shot-bufferize, buffer-results-to-out-params,
//   buffer-deallocation-pipeline                   buffers, freed after use
//   tp-linalg-to-gpu, gpu-launch-sink-index-computations,
//   gpu-kernel-outlining, tp-merge-gpu-modules     kernels in one module,
//                                                  device buffers
//   tp-dedup-kernels                               each distinct kernel once
//   gpu-async-region, nvvm-attach-target,
//   convert-gpu-to-nvvm (gpu.module), gpu-to-llvm,
//   host conversions to LLVM, gpu-module-to-binary  PTX / cubin / fatbin
//
//===----------------------------------------------------------------------===//

#include "GPUCostModel.h"
#include "tp/Conversion/Passes.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::tp;

static constexpr llvm::StringLiteral kTriple = "nvptx64-nvidia-cuda";

/// The CUDA toolkit folder: the option, else $CUDA_HOME / $CUDA_PATH /
/// $CUDA_ROOT, else /usr/local/cuda when it exists; empty when none.
static std::string findToolkit(const LowerGPUOptions &options) {
  if (!options.toolkit.empty())
    return options.toolkit;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *value = std::getenv(var); value && *value)
      return value;
  if (llvm::sys::fs::is_directory("/usr/local/cuda"))
    return "/usr/local/cuda";
  return "";
}

static bool hasPtxas(StringRef toolkit) {
  if (toolkit.empty())
    return false;
  llvm::SmallString<128> path(toolkit);
  llvm::sys::path::append(path, "bin", "ptxas");
  return llvm::sys::fs::can_execute(path);
}

/// The embedded format: the option, else fatbin when ptxas is found and isa
/// (PTX, JIT-compiled by the driver) otherwise.
static std::string resolveFormat(const LowerGPUOptions &options) {
  if (!options.format.empty())
    return options.format;
  return hasPtxas(findToolkit(options)) ? "fatbin" : "isa";
}

LogicalResult mlir::tp::checkLowerGPUOptions(const LowerGPUOptions &options,
                                             std::string &error) {
  llvm::raw_string_ostream os(error);
  StringRef chip = options.chip;
  if (!llvm::Regex("^sm_[0-9]+[af]?$").match(chip)) {
    os << "tp-lower-gpu: chip '" << chip
       << "' is not an NVIDIA GPU architecture of the form sm_<NN>[a|f] "
          "(e.g. sm_90)";
    return failure();
  }
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  std::string lookupError;
  llvm::Triple triple(kTriple);
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    os << "tp-lower-gpu: this LLVM has no NVPTX target: " << lookupError;
    return failure();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!subtarget || !subtarget->isCPUStringValid(chip)) {
    os << "tp-lower-gpu: chip '" << chip
       << "' is not known to LLVM's NVPTX backend";
    return failure();
  }
  StringRef format = options.format;
  if (!format.empty() && format != "isa" && format != "bin" &&
      format != "fatbin") {
    os << "tp-lower-gpu: format '" << format
       << "' is not one of isa (PTX), bin (cubin), fatbin";
    return failure();
  }
  if ((format == "bin" || format == "fatbin") &&
      !hasPtxas(findToolkit(options))) {
    os << "tp-lower-gpu: format '" << format
       << "' needs ptxas, which is not in the CUDA toolkit folder '"
       << findToolkit(options)
       << "' (set toolkit= or CUDA_HOME, or use format=isa)";
    return failure();
  }
  if (std::string unknown;
      failed(gpucost::lookupDevice(options.device, unknown))) {
    os << "tp-lower-gpu: " << unknown;
    return failure();
  }
  if (options.optLevel > 3) {
    os << "tp-lower-gpu: O=" << options.optLevel << " is not in 0..3";
    return failure();
  }
  StringRef attention = options.attention;
  if (attention != "auto" && attention != "tensor-core" &&
      attention != "cuda-core") {
    os << "tp-lower-gpu: attention '" << attention
       << "' is not one of auto, tensor-core, cuda-core";
    return failure();
  }
  StringRef stop = options.stopAfter;
  if (!stop.empty() && stop != "gemm" && stop != "kernels") {
    os << "tp-lower-gpu: stop-after '" << stop
       << "' is not one of gemm, kernels";
    return failure();
  }
  return success();
}

namespace {
/// Records the mesh's axis sizes on the module (kMeshSizes) before
/// convert-tp-to-runtime removes the mesh: the cost report's collectives
/// name their group by an axis mask.
struct RecordMeshSizesPass
    : public PassWrapper<RecordMeshSizesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RecordMeshSizesPass)
  StringRef getArgument() const override { return "tp-record-mesh-sizes"; }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto meshes = llvm::to_vector(module.getOps<MeshOp>());
    if (meshes.size() == 1)
      module->setAttr(gpucost::kMeshSizes,
                      DenseI64ArrayAttr::get(module.getContext(),
                                             meshes.front().getShape()));
  }
};

/// Fails with the options' message: how buildLowerGPUPipeline reports bad
/// options to callers that build the pipeline in C++.
struct OptionsErrorPass
    : public PassWrapper<OptionsErrorPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OptionsErrorPass)
  explicit OptionsErrorPass(std::string message) : message(std::move(message)) {}
  StringRef getArgument() const override { return "tp-lower-gpu-options"; }
  void runOnOperation() override {
    getOperation().emitError(message);
    signalPassFailure();
  }
  std::string message;
};
} // namespace

void mlir::tp::buildLowerGPUPipeline(OpPassManager &pm,
                                     const LowerGPUOptions &options) {
  std::string error;
  if (failed(checkLowerGPUOptions(options, error))) {
    pm.addPass(std::make_unique<OptionsErrorPass>(error));
    return;
  }

  // Tensors: runtime calls, then fusion. GEMMs first, so that every matmul
  // gets tp-gemm-to-runtime's copy-free operands; no CSE before
  // bufferization, which would make equal fills one buffer and then copy it
  // for each in-place use. Softmax and elementwise ops on tensors become
  // linalg first, so that they fuse.
  pm.addPass(createDecomposeAggregatesPass());
  // Attention first, before its two products become GEMM calls.
  if (options.fuseAttention) {
    FuseAttentionPassOptions attention;
    attention.device = options.device;
    attention.kernel = options.attention;
    pm.addPass(createFuseAttentionPass(attention));
  }
  // A mixture of experts' per-row weights: routed grouped GEMMs.
  pm.addPass(createRouteExpertsPass());
  pm.addPass(createGemmToRuntimePass());
  // Products of one operand (Q, K, V; gate, up): one batched call.
  pm.addPass(createGroupGemmsPass());
  pm.addPass(createFuseSoftmaxPass());
  if (!options.costReport.empty())
    pm.addPass(std::make_unique<RecordMeshSizesPass>());
  pm.addPass(createConvertTPToRuntimePass());
  pm.addPass(createCanonicalizerPass());
  // Upstream's elementwise fusion, which also recomputes cheap unary
  // producers (casts) in each consumer.
  pm.addNestedPass<func::FuncOp>(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  // A bias, residual and activation after a GEMM: its cuBLASLt epilogue.
  if (options.gemmEpilogues)
    pm.addPass(createGemmEpiloguesPass());
  // Transcendentals of indices (rotary angles) once per distinct index.
  pm.addPass(createTabulateIndexMathPass());
  // A fill shared by several reductions would be one buffer copied for each
  // of them: one fill per user, which its kernel then absorbs.
  pm.addPass(createUntieFillsPass());
  if (options.stopAfter == "gemm")
    return;

  // Buffers, as the CPU pipeline does, then freed after their last use. A
  // result computed into a fresh buffer is computed into the caller's instead
  // (no device copy at the end of each step).
  addBufferizationPasses(pm, /*hoistStaticAllocs=*/true);
  bufferization::buildBufferDeallocationPipeline(pm);

  // Kernels.
  pm.addPass(createLinalgToGPUPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Constants (loop bounds, delinearization divisors) back into the kernels
  // that canonicalization hoisted them out of: folded there, not parameters.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  // What a kernel's loops compute once goes before them (the generated
  // kernels' fragment addresses, a row's indices).
  pm.addPass(createLoopInvariantCodeMotionPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createMergeGPUModulesPass());
  if (!options.costReport.empty()) {
    GPUCostReportPassOptions report;
    report.file = options.costReport;
    report.device = options.device;
    pm.addPass(createGPUCostReportPass(report));
  }
  if (options.stopAfter == "kernels")
    return;
  // Each distinct kernel once: the layers of a model launch the same ones.
  pm.addPass(createDedupKernelsPass());

  // Device code to NVVM, host code to LLVM with the upstream GPU host ABI.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  GpuNVVMAttachTargetOptions target;
  target.triple = kTriple.str();
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  // Integer powers as libdevice takes them (tp-legalize-fpowi).
  device.addPass(createLegalizeFPowIPass());
  // Tensor-core kernels (ldmatrix, cp.async) first, then the rest.
  device.addPass(createConvertNVGPUToNVVMPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = resolveFormat(options);
  binary.toolkitPath = findToolkit(options);
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::tp::registerLowerGPUPipeline() {
  registerPassPipeline(
      "tp-lower-gpu",
      "Lower a program on tensors to the LLVM dialect for GPU ranks "
      "(GEMMs and collectives to tprt calls, fused kernels through NVVM, "
      "PTX/cubin embedded)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        LowerGPUOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string error;
        if (failed(checkLowerGPUOptions(options, error)))
          return errorHandler(error);
        buildLowerGPUPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> handler) {
        handler(LowerGPUOptions());
      });
}

void mlir::tp::registerGPUTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
}
