//===- CostModel.cpp - time of collectives and compute ----------*- C++ -*-===//
//
// Reshard planning works axis by axis on a mutable copy of the source
// layout:
//   1. every partial axis the target does not keep is reduced: into a
//      reduce-scatter when the target splits some dimension with that axis
//      right after the axes the dimension already has, else an all-reduce;
//   2. every dimension whose axes are not a prefix of the target's drops
//      axes from its minor end: into an all-to-all when the target wants
//      that axis next on another dimension, else an all-gather;
//   3. every dimension extends its axes to the target's by slices.
// Each step works on the local shape left by the previous one.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/CostModel.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tp;

std::optional<DeviceProfile> DeviceProfile::lookup(StringRef name) {
  // Per-direction link bandwidth; per ring step and per call latencies of
  // NCCL on that interconnect; dense tensor-core throughput without
  // sparsity; HBM bandwidth; capacity (vendor data sheets); devices per
  // fast-interconnect domain (an HGX/DGX board of 8 SXM GPUs on NVSwitch;
  // h100-pcie: the 8 cards of one PCIe host, whose link numbers these are).
  // GPU execution (the GPU cost report): SMs and boost clock, FP32 lanes per
  // SM, FP64 rate (data sheets); the efficiencies are measured (H200: bf16
  // GEMM 790 TFLOP/s through PyTorch, device copies 4.3 TB/s) or published
  // (FlashAttention-2/3, cuDNN SDPA).
  DeviceProfile::GPUExecution hopper;
  DeviceProfile::GPUExecution hopperPcie = hopper;
  hopperPcie.sms = 114;
  hopperPcie.clock = 1.755e9;
  hopperPcie.flops64 = 25.6e12;
  DeviceProfile::GPUExecution ampere;
  ampere.sms = 108;
  ampere.clock = 1.41e9;
  ampere.fp32Lanes = 64;
  ampere.flops64 = 9.7e12;
  ampere.attentionEfficiency = 0.72;
  ampere.mmaSyncFraction = 1.0;
  auto with = [](DeviceProfile p, DeviceProfile::GPUExecution gpu) {
    p.gpu = gpu;
    return p;
  };
  if (name == "h100-nvlink")
    return with(DeviceProfile{"h100-nvlink", 450e9, 0.5e-6, 7e-6, 989e12,
                              67e12, 3.35e12, 80e9, /*devicesPerNode=*/8},
                hopper);
  if (name == "h200-nvlink")
    return with(DeviceProfile{"h200-nvlink", 450e9, 0.5e-6, 7e-6, 989e12,
                              67e12, 4.8e12, 141e9, /*devicesPerNode=*/8},
                hopper);
  if (name == "a100-nvlink")
    return with(DeviceProfile{"a100-nvlink", 300e9, 0.7e-6, 8e-6, 312e12,
                              19.5e12, 2.0e12, 80e9, /*devicesPerNode=*/8},
                ampere);
  if (name == "h100-pcie")
    return with(DeviceProfile{"h100-pcie", 64e9, 2e-6, 10e-6, 756e12, 51e12,
                              2.0e12, 80e9, /*devicesPerNode=*/8},
                hopperPcie);
  return std::nullopt;
}

SmallVector<StringRef> DeviceProfile::names() {
  return {"h100-nvlink", "h200-nvlink", "a100-nvlink", "h100-pcie"};
}

StringRef mlir::tp::stringifyCollectiveKind(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Slice:
    return "slice";
  case CollectiveKind::MakePartial:
    return "make_partial";
  }
  llvm_unreachable("unknown collective kind");
}

int64_t mlir::tp::getElementBytes(Type elementType) {
  if (elementType.isIndex())
    return 8;
  if (elementType.isIntOrFloat())
    return std::max<int64_t>(1, (elementType.getIntOrFloatBitWidth() + 7) / 8);
  if (auto complex = dyn_cast<ComplexType>(elementType))
    return 2 * getElementBytes(complex.getElementType());
  return 8;
}

//===----------------------------------------------------------------------===//
// Reshard planning
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<CollectiveStep>>
mlir::tp::planReshard(LayoutAttr from, LayoutAttr to,
                      ArrayRef<int64_t> globalShape, MeshOp mesh) {
  SmallVector<CollectiveStep> steps;
  if (from == to)
    return steps;
  int64_t rank = globalShape.size();
  SmallVector<SmallVector<StringAttr>> cur, want;
  for (int64_t d = 0; d < rank; ++d) {
    cur.push_back(from.getDimAxes(d));
    want.push_back(to.getDimAxes(d));
  }
  SmallVector<int64_t> local = getLocalShape(globalShape, from, mesh);
  auto sizeOf = [&](StringAttr axis) {
    return mesh.getAxisSize(axis.getValue()).value_or(1);
  };
  auto isPrefix = [](ArrayRef<StringAttr> a, ArrayRef<StringAttr> b) {
    return a.size() <= b.size() && llvm::equal(a, b.take_front(a.size()));
  };
  // The dimension where `axis` would be the next split the target wants.
  auto nextWanted = [&](StringAttr axis) -> int64_t {
    for (int64_t d = 0; d < rank; ++d)
      if (isPrefix(cur[d], want[d]) && want[d].size() > cur[d].size() &&
          want[d][cur[d].size()] == axis)
        return d;
    return -1;
  };
  // The exact local extent of dimension `d` under the current axes: the
  // global size divided by the group, rounded up (padded blocks).
  auto extent = [&](int64_t d) -> int64_t {
    if (ShapedType::isDynamic(globalShape[d]))
      return globalShape[d];
    int64_t group = 1;
    for (StringAttr axis : cur[d])
      group *= sizeOf(axis);
    return llvm::divideCeil(globalShape[d], group);
  };
  auto used = [&](StringAttr axis) {
    return llvm::any_of(cur, [&](ArrayRef<StringAttr> axes) {
      return llvm::is_contained(axes, axis);
    });
  };

  // 1. Partial axes.
  SmallVector<StringAttr> wantPartial = to.getPartialAxesList();
  if (to.isPartial()) {
    bool fromWhole = !from.isPartial();
    if (!fromWhole && from.getPartialKind() != to.getPartialKind())
      return failure(); // one partial kind cannot become another
    for (StringAttr axis : wantPartial) {
      if (llvm::is_contained(from.getPartialAxesList(), axis))
        continue;
      if (!fromWhole)
        return failure(); // a value partial over other axes only
      CollectiveStep step;
      step.kind = CollectiveKind::MakePartial;
      step.axis = axis;
      step.groupSize = sizeOf(axis);
      step.reduction = to.getPartialKind();
      step.inputShape = local;
      step.outputShape = local;
      steps.push_back(std::move(step));
    }
  }
  for (StringAttr axis : from.getPartialAxesList()) {
    if (llvm::is_contained(wantPartial, axis))
      continue;
    CollectiveStep step;
    step.axis = axis;
    step.groupSize = sizeOf(axis);
    step.reduction = from.getPartialKind();
    step.inputShape = local;
    int64_t d = nextWanted(axis);
    if (d >= 0 && !ShapedType::isDynamic(local[d]) && !used(axis)) {
      step.kind = CollectiveKind::ReduceScatter;
      step.dim = d;
      cur[d].push_back(axis);
      local[d] = extent(d);
    } else {
      step.kind = CollectiveKind::AllReduce;
    }
    step.outputShape = local;
    steps.push_back(std::move(step));
  }

  // 2. Splits the target does not want where they are.
  for (int64_t d = 0; d < rank; ++d) {
    while (!isPrefix(cur[d], want[d])) {
      StringAttr axis = cur[d].pop_back_val();
      CollectiveStep step;
      step.axis = axis;
      step.groupSize = sizeOf(axis);
      step.inputShape = local;
      int64_t target = nextWanted(axis);
      if (target >= 0 && target != d && !ShapedType::isDynamic(local[target])) {
        step.kind = CollectiveKind::AllToAll;
        step.dim = target;
        step.concatDim = d;
        cur[target].push_back(axis);
        local[target] = extent(target);
        local[d] = extent(d);
      } else {
        step.kind = CollectiveKind::AllGather;
        step.dim = d;
        local[d] = extent(d);
      }
      step.outputShape = local;
      steps.push_back(std::move(step));
    }
  }

  // 3. Splits the target wants and the value lacks.
  for (int64_t d = 0; d < rank; ++d) {
    for (size_t i = cur[d].size(); i < want[d].size(); ++i) {
      StringAttr axis = want[d][i];
      if (used(axis))
        return failure(); // cannot happen for verified layouts
      CollectiveStep step;
      step.kind = CollectiveKind::Slice;
      step.axis = axis;
      step.groupSize = sizeOf(axis);
      step.dim = d;
      step.inputShape = local;
      cur[d].push_back(axis);
      local[d] = extent(d);
      step.outputShape = local;
      steps.push_back(std::move(step));
    }
  }
  return steps;
}

//===----------------------------------------------------------------------===//
// Prices
//===----------------------------------------------------------------------===//

static double numElements(ArrayRef<int64_t> shape) {
  double n = 1;
  for (int64_t s : shape)
    n *= ShapedType::isDynamic(s) ? 1 : s;
  return n;
}

double CostModel::collectiveMessageBytes(const CollectiveStep &step,
                                         int64_t elementBytes) const {
  // What the emitted collective moves: a split dimension the group does
  // not divide travels padded to a multiple of the group (ReshardUtils pads
  // before a reduce-scatter or all-to-all and truncates after a gather).
  double p = step.groupSize;
  auto padded = [&](ArrayRef<int64_t> shape, int64_t dim) {
    if (dim < 0 || ShapedType::isDynamic(shape[dim]) || shape[dim] == 0)
      return numElements(shape);
    return numElements(shape) / shape[dim] *
           (llvm::divideCeil(shape[dim], step.groupSize) * step.groupSize);
  };
  switch (step.kind) {
  case CollectiveKind::AllReduce:
    return numElements(step.inputShape) * elementBytes;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return padded(step.inputShape, step.dim) * elementBytes;
  case CollectiveKind::AllGather:
    // Every device contributes its (padded) block.
    return numElements(step.inputShape) * p * elementBytes;
  case CollectiveKind::Slice:
  case CollectiveKind::MakePartial:
    return 0;
  }
  llvm_unreachable("unknown collective kind");
}

double CostModel::collectiveWireBytes(const CollectiveStep &step,
                                      int64_t elementBytes) const {
  double p = step.groupSize;
  double m = collectiveMessageBytes(step, elementBytes);
  if (p <= 1)
    return 0;
  if (step.kind == CollectiveKind::AllReduce)
    return 2 * (p - 1) / p * m;
  return (p - 1) / p * m;
}

double CostModel::collectiveTime(const CollectiveStep &step,
                                 int64_t elementBytes) const {
  double p = step.groupSize;
  if (p <= 1)
    return 0;
  // A slice moves no data between devices but copies this device's block.
  if (step.kind == CollectiveKind::Slice)
    return numElements(step.outputShape) * elementBytes /
           profile.memoryBandwidth;
  // Making a value partial: nothing for max/min, a masking pass for sum.
  if (step.kind == CollectiveKind::MakePartial)
    return step.reduction == ReductionKind::Sum
               ? numElements(step.outputShape) * elementBytes /
                     profile.memoryBandwidth
               : 0;
  double steps = step.kind == CollectiveKind::AllReduce ? 2 * (p - 1) : p - 1;
  return profile.launchLatency + steps * profile.linkLatency +
         collectiveWireBytes(step, elementBytes) / profile.linkBandwidth;
}

double CostModel::computeTime(double flops, double bytes,
                              bool sixteenBit) const {
  double peak = sixteenBit ? profile.flops16 : profile.flops32;
  return std::max(flops / peak, bytes / profile.memoryBandwidth);
}
