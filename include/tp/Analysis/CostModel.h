//===- CostModel.h - time of collectives and compute ------------*- C++ -*-===//
//
// The planner's cost model in seconds; docs/cost-model.md gives every
// formula. It has two parts:
//  * `planReshard` turns a layout change into the sequence of collectives
//    that realises it (the partitioner emits the same sequence);
//  * `CostModel` prices collectives (ring algorithms with a latency and a
//    bandwidth term) and compute (roofline: flops vs. bytes).
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_COSTMODEL_H
#define TP_ANALYSIS_COSTMODEL_H

#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::tp {

/// Numbers that describe one device and its tensor-parallel interconnect.
struct DeviceProfile {
  std::string name;
  double linkBandwidth;   ///< bytes/s each device sends (and receives)
  double linkLatency;     ///< seconds per step of a ring collective
  double launchLatency;   ///< fixed seconds per collective call
  double flops16;         ///< dense f16/bf16 FLOP/s
  double flops32;         ///< f32 FLOP/s
  double memoryBandwidth; ///< bytes/s of device memory
  double memoryCapacity;  ///< bytes of device memory
  /// Devices in one fast-interconnect domain (one NVLink node, one PCIe
  /// host): tensor-parallel groups larger than this cross a slower network
  /// that the link numbers above do not describe (tp-run --preflight).
  int devicesPerNode = 8;

  /// How one GPU executes kernels and library calls: the numbers behind the
  /// GPU cost report's modelled seconds (docs/cost-model.md, "GPU kernels
  /// and library calls"). The planner does not read them. Defaults: H100
  /// SXM.
  struct GPUExecution {
    int sms = 132;         ///< streaming multiprocessors
    double clock = 1.98e9; ///< Hz, boost clock under load
    /// FP32 lanes per SM: 128 on Hopper, 64 on Ampere (flops32 is
    /// sms * fp32Lanes * 2 * clock).
    int fp32Lanes = 128;
    /// Special-function (MUFU: ex2, rsqrt, sin, ...) results per SM and
    /// cycle.
    int sfuLanes = 16;
    /// Warp instructions issued per SM and cycle (4 schedulers).
    int issuePerCycle = 4;
    double flops64 = 34e12; ///< FP64 FLOP/s on CUDA cores
    /// The fraction of memoryBandwidth a streaming kernel reaches (device
    /// copies measured at 4.3 TB/s of the H200's 4.8).
    double memoryEfficiency = 0.9;
    /// cuBLAS's fraction of flops16 on large 16-bit GEMMs (790 TFLOP/s
    /// measured through PyTorch on the H200), and of flops32 in f32.
    double gemmEfficiency = 0.8;
    /// A library's fused attention (cuDNN 9 / FlashAttention-3: about 600
    /// TFLOP/s forward at head dimension 128).
    double attentionEfficiency = 0.61;
    /// mma.sync's peak as a fraction of flops16 (Hopper reaches its full
    /// tensor rate with wgmma only; Ampere's peak is mma.sync's).
    double mmaSyncFraction = 0.67;
    /// Seconds one launch costs on a busy stream (kernel or library call).
    double launch = 2e-6;
    /// Output tile of a library GEMM (its wave quantisation).
    int gemmTile = 128;
  };
  GPUExecution gpu;

  /// The built-in profiles: h100-nvlink, h200-nvlink, a100-nvlink,
  /// h100-pcie.
  static std::optional<DeviceProfile> lookup(llvm::StringRef name);
  static llvm::SmallVector<llvm::StringRef> names();
};

/// `Slice` and `MakePartial` are local steps (no communication): a slice
/// keeps this device's block of a whole value; make-partial turns a whole
/// value into a pending reduction over an axis: for max and min the value
/// itself (they are idempotent: every device holding the whole value is a
/// valid set of terms), for sum the value on the axis' first device and
/// zeros on the others.
enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Slice,
  MakePartial
};
llvm::StringRef stringifyCollectiveKind(CollectiveKind kind);

/// One collective of a resharding, on local shapes.
struct CollectiveStep {
  CollectiveKind kind;
  StringAttr axis;
  int64_t groupSize = 1;
  /// all_gather / reduce_scatter / slice: the dimension; all_to_all: the
  /// dimension that becomes split.
  int64_t dim = -1;
  /// all_to_all: the dimension that stops being split.
  int64_t concatDim = -1;
  ReductionKind reduction = ReductionKind::Sum;
  SmallVector<int64_t> inputShape, outputShape;
};

/// The collectives that take a value of `globalShape` from layout `from` to
/// layout `to` on `mesh`, in order: partial axes first (reduce-scatter into a
/// split the target wants, else all-reduce), then splits the target does not
/// want (all-to-all into a dimension it does want, else all-gather, minor
/// axis first), then the remaining splits (slices, major axis first). A
/// partial axis the target wants and the value lacks is a make-partial step
/// (first, on a value that is not partial). Fails when no sequence exists
/// (one partial kind cannot become another).
FailureOr<SmallVector<CollectiveStep>>
planReshard(LayoutAttr from, LayoutAttr to, ArrayRef<int64_t> globalShape,
            MeshOp mesh);

class CostModel {
public:
  explicit CostModel(DeviceProfile profile) : profile(std::move(profile)) {}
  const DeviceProfile &getProfile() const { return profile; }

  /// Seconds for one collective moving `elementBytes`-sized elements.
  double collectiveTime(const CollectiveStep &step, int64_t elementBytes) const;
  /// Bytes each device sends for one collective (ring algorithms).
  double collectiveWireBytes(const CollectiveStep &step,
                             int64_t elementBytes) const;
  /// The message size of a collective: the local tensor it reduces or
  /// produces (what Megatron's formulas count).
  double collectiveMessageBytes(const CollectiveStep &step,
                                int64_t elementBytes) const;
  /// Roofline time of `flops` operations touching `bytes` of memory, with
  /// 16-bit or 32-bit arithmetic.
  double computeTime(double flops, double bytes, bool sixteenBit) const;

private:
  DeviceProfile profile;
};

/// Bytes of one element of `type` (a tensor's element type), rounding bits
/// up to bytes; index counts as 8.
int64_t getElementBytes(Type elementType);

} // namespace mlir::tp

#endif // TP_ANALYSIS_COSTMODEL_H
