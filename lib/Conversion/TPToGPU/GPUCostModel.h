//===- GPUCostModel.h - modelled seconds of GPU kernels and calls -*- C++ -*-//
//
// The time model of the GPU cost report and of tp-lower-gpu's fused-or-not
// decisions (docs/cost-model.md, "GPU kernels and library calls"). A kernel
// is priced from what its body does, counted on the IR before NVVM (a
// gpu.launch or an outlined gpu.func with its launch geometry):
//
//   work per thread   issue slots (weights per op: 1 for an add, ~6 for
//                     an accurate exp, ~50 for powf, ...), special-function
//                     results (ex2, rsqrt, sin, ...), f32/f64 flops and
//                     tensor-core flops (mma.sync: 2 m n k per warp),
//                     each multiplied by the trip counts of the loops
//                     around it (bounds evaluated for thread 0 of the first
//                     and of the last block, averaged: a causal key loop
//                     whose bound grows with the block counts half)
//   compute           tensor flops / (flops16 * mmaSyncFraction)
//                     + max(issue slots / (32 * SMs * issuePerCycle * clock),
//                           f32 flops / flops32, f64 flops / flops64)
//                     + special-function results / (SMs * sfuLanes * clock)
//                     (summed: a warp issues its MMAs, its arithmetic and
//                     its exponentials in one stream; FlashAttention-2's
//                     ~350 TFLOP/s on an H100 is what this predicts for it)
//   memory            bytes read + written / (memoryBandwidth *
//                     memoryEfficiency), each element once
//   seconds           launch + max(memory, compute)
//
// A library GEMM is max(flops / (peak * gemmEfficiency) stretched by its
// wave quantisation (128 x 128 output tiles over the SMs), its bytes time)
// plus a launch; a library attention the same at attentionEfficiency; a
// collective the planner's ring formula (CostModel::collectiveTime).
//
//===----------------------------------------------------------------------===//

#ifndef TP_CONVERSION_TPTOGPU_GPUCOSTMODEL_H
#define TP_CONVERSION_TPTOGPU_GPUCOSTMODEL_H

#include "tp/Analysis/CostModel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::tp::gpucost {

/// On a generated attention function: the flops its kernel must do
/// (4 x rows x keys x head dim, over the keys its mask keeps), the
/// attention term of the report's roofline.
inline constexpr llvm::StringLiteral kAttentionFlops = "tpgpu.attention_flops";
/// On the module: the mesh's axis sizes, recorded by tp-lower-gpu before
/// convert-tp-to-runtime removes the mesh (the report's collective groups).
inline constexpr llvm::StringLiteral kMeshSizes = "tpgpu.mesh_sizes";
/// On a generated attention function without a body: the gpu.func it
/// launches (tp-linalg-to-gpu adds the launch).
inline constexpr llvm::StringLiteral kKernelAttr = "tpgpu.kernel";

/// What one launch does, summed over its threads (except `threads`).
struct KernelWork {
  double threads = 0;
  double issue = 0;       ///< issue slots (thread instructions)
  double sfu = 0;         ///< special-function results
  double flops32 = 0;     ///< f32 (and 16-bit scalar) flops on CUDA cores
  double flops64 = 0;     ///< f64 flops
  double tensorFlops = 0; ///< tensor-core flops (mma.sync)
  double bytes = 0;       ///< device memory read + written
  /// Loops whose trip count could not be evaluated (counted once).
  int unknownLoops = 0;
};

/// A modelled time and its parts, in seconds.
struct Time {
  double seconds = 0; ///< launch + max(memory, compute)
  double memory = 0;  ///< bytes at the achievable bandwidth
  double compute = 0; ///< tensor + max(issue, fp32, fp64) + sfu
  double tensor = 0, issue = 0, sfu = 0, fp = 0;
  /// What bounds it: "memory", "tensor", "issue", "sfu", "fp32" or "fp64".
  llvm::StringRef bound = "memory";
};

/// The work of the kernel `body` (a gpu.launch's region or a gpu.func's
/// body) launched as `grid` x `block` (x, y, z each). `bytes` is set by
/// the caller (the report traces the buffers; a decision counts tensors).
KernelWork countKernel(Region &body, ArrayRef<int64_t> grid,
                       ArrayRef<int64_t> block);
/// The same for a gpu.launch with constant sizes (its body's ids are block
/// arguments).
KernelWork countLaunch(gpu::LaunchOp launch);

/// The modelled time of a generated kernel.
Time kernelTime(const KernelWork &work, const DeviceProfile &device);

/// A library GEMM: `batch` products of m x n x k, 16-bit or wider
/// elements, moving `bytes`.
Time gemmTime(int64_t batch, int64_t m, int64_t n, int64_t k, bool sixteenBit,
              double bytes, const DeviceProfile &device);

/// A library fused attention doing `flops` (tensor cores) and moving
/// `bytes`.
Time libraryAttentionTime(double flops, double bytes,
                          const DeviceProfile &device);

/// A device copy of `bytes` (read + written).
Time copyTime(double bytes, const DeviceProfile &device);

/// The device profile named `name` (DeviceProfile::lookup), or an error
/// message listing the known ones.
FailureOr<DeviceProfile> lookupDevice(llvm::StringRef name,
                                      std::string &error);

} // namespace mlir::tp::gpucost

#endif // TP_CONVERSION_TPTOGPU_GPUCOSTMODEL_H
