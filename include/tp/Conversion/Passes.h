//===- Passes.h - tp lowerings ----------------------------------*- C++ -*-===//

#ifndef TP_CONVERSION_PASSES_H
#define TP_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::tp {

#define GEN_PASS_DECL
#include "tp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tp/Conversion/Passes.h.inc"

/// The options of `tp-lower-cpu` (docs/passes/lower-cpu.md).
struct LowerCPUOptions : public PassPipelineOptions<LowerCPUOptions> {
  PassOptions::Option<bool> gemm{
      *this, "gemm",
      llvm::cl::desc("Contractions as calls of the runtime's GEMM "
                     "(tp-gemm-to-runtime: BLAS); false: as loops, a "
                     "reference for tests"),
      llvm::cl::init(true)};
};

/// `tp-lower-cpu`: a partitioned program down to the LLVM dialect for CPU
/// ranks: contractions to the runtime's GEMM, collectives to runtime calls,
/// elementwise fusion, one-shot bufferization (function boundaries,
/// identity layouts), results to out-parameters, temporaries in one arena
/// per function, vectorized loops, and the standard conversions to LLVM
/// (math through libm).
void buildLowerCPUPipeline(OpPassManager &pm,
                           const LowerCPUOptions &options = LowerCPUOptions());

/// The bufferization stage of tp-lower-cpu and tp-lower-gpu: one-shot
/// bufferization (function boundaries, identity layouts), results to
/// out-parameters (public functions too; with `hoistStaticAllocs`, a result
/// computed into a fresh static buffer is computed into the caller's), then
/// canonicalization.
void addBufferizationPasses(OpPassManager &pm, bool hoistStaticAllocs);

/// Registers `tp-lower-cpu` with the global pipeline registry.
void registerLowerCPUPipeline();

/// The options of `tp-lower-gpu` (docs/passes/lower-gpu.md).
struct LowerGPUOptions : public PassPipelineOptions<LowerGPUOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target GPU: sm_<NN>[a|f], e.g. sm_90"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features for the NVVM target, e.g. +ptx80 "
                     "(default: LLVM's for the chip)"),
      llvm::cl::init("")};
  PassOptions::Option<unsigned> optLevel{
      *this, "O", llvm::cl::desc("Optimization level of the device code"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Embedded kernels: isa (PTX), bin (cubin) or fatbin "
                     "(cubin + PTX); default fatbin when ptxas is found, "
                     "else isa"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit folder (ptxas, libdevice); default "
                     "$CUDA_HOME, else /usr/local/cuda"),
      llvm::cl::init("")};
  PassOptions::Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Replace attention by one fused online-softmax kernel "
                     "(tp-fuse-attention); false keeps the two GEMMs around "
                     "the materialised scores"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> attention{
      *this, "attention",
      llvm::cl::desc("The fused attention's kernel (tp-fuse-attention's "
                     "kernel=): auto (tensor cores where eligible, else "
                     "CUDA cores; fused only where the cost model says it "
                     "is faster than the unfused path), tensor-core or "
                     "cuda-core (that kernel, always fused)"),
      llvm::cl::init("auto")};
  PassOptions::Option<bool> gemmEpilogues{
      *this, "gemm-epilogues",
      llvm::cl::desc("Fuse a bias, a residual add and a relu/tanh-GELU "
                     "after a GEMM into the GEMM call (tp-gemm-epilogues: "
                     "cuBLASLt epilogues); false keeps them a kernel"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> stopAfter{
      *this, "stop-after",
      llvm::cl::desc("Stop early, for inspection: 'gemm' (GEMM calls on "
                     "tensors), 'kernels' (gpu.launch ops on buffers, "
                     "outlined), or empty for the whole pipeline"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> device{
      *this, "device",
      llvm::cl::desc("Device profile of the cost model that decides "
                     "fused-or-not and of the cost report's seconds: "
                     "h100-nvlink, h200-nvlink, a100-nvlink, h100-pcie"),
      llvm::cl::init("h100-nvlink")};
  PassOptions::Option<std::string> costReport{
      *this, "cost-report",
      llvm::cl::desc("Write a JSON cost report (kernel launches, GEMM "
                     "flops, bytes read and written per launch, the "
                     "minimum) to this file after outlining, and print a "
                     "summary on stderr (tp-gpu-cost-report)"),
      llvm::cl::init("")};
};

/// Checks `options` (chip spelling, format, stop-after); on failure `error`
/// says what is wrong.
LogicalResult checkLowerGPUOptions(const LowerGPUOptions &options,
                                   std::string &error);

/// `tp-lower-gpu`: a partitioned (or unpartitioned) program on tensors down
/// to the LLVM dialect with its kernels in a `gpu.binary`: collectives and
/// matmul-family ops to tprt calls, elementwise fusion, bufferization, the
/// remaining linalg ops to `gpu.launch` kernels, NVVM, PTX/cubin. Invalid
/// options make the pipeline fail on its first pass with the message of
/// `checkLowerGPUOptions`.
void buildLowerGPUPipeline(OpPassManager &pm, const LowerGPUOptions &options);

/// Registers `tp-lower-gpu` with the global pipeline registry.
void registerLowerGPUPipeline();

/// Everything a tool needs, besides the upstream dialects, to run
/// `tp-lower-gpu` and translate its output to LLVM IR: the NVVM target
/// attribute model and the builtin, GPU (offloading), LLVM and NVVM
/// translations to LLVM IR.
void registerGPUTranslations(DialectRegistry &registry);

} // namespace mlir::tp

#endif // TP_CONVERSION_PASSES_H
