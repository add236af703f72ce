//===- CostReport.cpp - the tp-gpu-cost-report pass ----------------*- C++ -*-//
//
// What one step of a GPU program launches and moves through device memory,
// read off the host code after kernel outlining (tp-lower-gpu's
// `cost-report=FILE`, docs/passes/lower-gpu.md). Nothing is rewritten.
//
// Per host function (func.func with a body), in program order:
//  * every gpu.launch_func is a kernel launch. It reads the buffers its
//    kernel loads from and writes those it stores to: each kernel argument
//    is traced from the kernel's memref.load / memref.store (through view
//    ops) to the gpu.func argument, and counted once per launch with the
//    byte size of the memref passed (its shape times the element size), so
//    a kernel that reads a buffer twice, or a strided view of it, counts the
//    view's elements once: the figures assume each kernel touches each
//    element of its operands once.
//  * every call of a runtime function (`tprt_mlir_*`) with memref operands
//    is a runtime call. The GEMMs (`tprt_mlir_gemm_<t>`,
//    `tprt_mlir_batched_gemm_<t>`: trans_a, trans_b, A, B, C) read A and B,
//    write C, and do 2 * |C| * K flops (K is A's last dimension, or its
//    next-to-last one when trans_a). A shared-A call
//    (`tprt_mlir_gemm_shared_a<N>_<t>`: trans_a, trans_b, A, B_0..B_N-1,
//    C_0..C_N-1) is one GEMM entry with batch N: it reads A once and every
//    B_i, writes every C_i, and does the N products' flops. A GEMM with an
//    epilogue (`tprt_mlir_gemm_epilogue_<t>`: trans_a, trans_b, activation,
//    A, B, addend, bias, C) is one GEMM that also reads the addend and the
//    bias (none: a memref<0xT>, 0 bytes). A grouped GEMM
//    (`tprt_mlir_gemm_grouped_<t>`: trans_b, A [R, K], B [G, ., .], rows
//    [G], C [R, N]: a mixture of experts' routed product) reads A, every
//    expert's weight once and the counts, writes C and does 2 * R * N * K
//    flops; its time is G products of R / G rows each (the tokens spread
//    evenly over the experts: every expert's weight read). Beside it, the
//    time of one product of all R rows with one expert's weight (every
//    token routed to one expert: `one_group_seconds`) and the larger of
//    the two (`worst_case_seconds`): which is slower depends on the shape
//    (wave quantisation against the weights' bytes). Any other call (collectives, and any
//    entry point added later, e.g. a fused attention) follows the runtime
//    ABI's "outputs last": its last memref operand is written and the others
//    are read. Unranked operands are traced through memref.cast to the
//    ranked buffer.
//  * every gpu.memcpy reads its source and writes its target.
//    A tprt_mlir_slice_<t> call reads only the block it copies (as many
//    bytes as it writes).
// The minimum is what the function cannot avoid moving (issue 20's
// definition: weights read once, activations written once, no score
// tensor):
//  * each of its memref arguments once (inputs and weights read once,
//    results written once; after buffer-results-to-out-params results are
//    arguments): `argument_bytes`, a bound no implementation with separate
//    GEMM and collective libraries can approach;
//  * plus, once each, every activation that must exist in device memory
//    because a library reads or writes it there: the operands and result
//    of a GEMM with an operand that is a function argument (a projection:
//    a weight or an input times something; the score and probability
//    products of an unfused attention multiply two activations and are not
//    counted: no score tensor), and of a collective or other runtime call
//    and a call to a module function (the fused attention). Each buffer
//    counts once, whatever reads it; views count as their buffer, a device
//    copy's target as its source, and arguments are counted already.
// Everything else a kernel writes (a norm's or an activation function's
// output that no library reads, a reduction's statistic) is not in the
// minimum: a fused kernel need not write it. The largest
// temporary (gpu.alloc) is reported too: a [batch x heads, seq, seq] score
// tensor shows there. All figures are per device (a partitioned program's
// local shapes).
//
// Output: a JSON file, and a summary per function on stderr.
//
//===----------------------------------------------------------------------===//

#include "GPUCostModel.h"
#include "tp/Conversion/Passes.h"
#include "tp/Conversion/RuntimeSymbols.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tp {
#define GEN_PASS_DEF_GPUCOSTREPORTPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-gpu-cost-report"

using namespace mlir;
using namespace mlir::tp;
using gpucost::kAttentionFlops;
using gpucost::kMeshSizes;

namespace {

/// Bytes of a statically shaped memref, traced through memref.cast when
/// unranked; nullopt when the shape is not known.
std::optional<int64_t> bufferBytes(Value v) {
  while (!isa<MemRefType>(v.getType()))
    if (auto cast = v.getDefiningOp<memref::CastOp>())
      v = cast.getSource();
    else
      return std::nullopt;
  auto type = cast<MemRefType>(v.getType());
  if (!type.hasStaticShape())
    return std::nullopt;
  Type element = type.getElementType();
  int64_t bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
  return type.getNumElements() * ((bits + 7) / 8);
}

/// The ranked memref type behind `v` (through memref.cast).
MemRefType rankedType(Value v) {
  while (!isa<MemRefType>(v.getType()))
    if (auto cast = v.getDefiningOp<memref::CastOp>())
      v = cast.getSource();
    else
      return nullptr;
  return cast<MemRefType>(v.getType());
}

std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// Which arguments of a kernel it loads from and stores to.
struct KernelAccess {
  SmallVector<bool> reads, writes;
};

KernelAccess analyzeKernel(gpu::GPUFuncOp kernel) {
  KernelAccess access;
  unsigned n = kernel.getNumArguments();
  access.reads.assign(n, false);
  access.writes.assign(n, false);
  auto argOf = [&](Value v) -> int {
    while (true) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        return arg.getOwner() == &kernel.getBody().front()
                   ? int(arg.getArgNumber())
                   : -1;
      auto view = v.getDefiningOp<ViewLikeOpInterface>();
      if (!view)
        return -1;
      v = view.getViewSource();
    }
  };
  kernel.walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (int a = argOf(load.getMemRef()); a >= 0)
        access.reads[a] = true;
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (int a = argOf(store.getMemRef()); a >= 0)
        access.writes[a] = true;
    } else if (auto load = dyn_cast<vector::LoadOp>(op)) {
      if (int a = argOf(load.getBase()); a >= 0)
        access.reads[a] = true;
    } else if (auto store = dyn_cast<vector::StoreOp>(op)) {
      if (int a = argOf(store.getBase()); a >= 0)
        access.writes[a] = true;
    } else if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op)) {
      if (int a = argOf(copy.getSrc()); a >= 0)
        access.reads[a] = true;
    } else if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op)) {
      if (int a = argOf(rmw.getMemref()); a >= 0)
        access.reads[a] = access.writes[a] = true;
    } else if (auto rmw = dyn_cast<memref::GenericAtomicRMWOp>(op)) {
      if (int a = argOf(rmw.getMemref()); a >= 0)
        access.reads[a] = access.writes[a] = true;
    }
  });
  return access;
}

/// One launch, GEMM, runtime call or copy.
struct Entry {
  std::string kind, name;
  int64_t read = 0, written = 0;
  int64_t flops = 0;
  SmallVector<int64_t> grid, block;
  SmallVector<int64_t> gemmShape; // batch, M, N, K
  gpucost::Time time;
  /// Grouped GEMMs: the time if every row went to one group.
  std::optional<double> oneGroupSeconds;
  /// Kernels: what the counter found (issue slots, tensor flops, ...).
  gpucost::KernelWork work;
  /// Runtime calls: a collective (its time is communication).
  bool communication = false;
};

struct Totals {
  int64_t count = 0, read = 0, written = 0, flops = 0;
  double seconds = 0;
  void add(const Entry &e) {
    ++count;
    read += e.read;
    written += e.written;
    flops += e.flops;
    seconds += e.time.seconds;
  }
  void add(const Totals &t) {
    count += t.count;
    read += t.read;
    written += t.written;
    flops += t.flops;
    seconds += t.seconds;
  }
};

struct FunctionReport {
  std::string name;
  std::vector<Entry> entries;
  Totals kernels, gemms, calls, copies;
  int64_t minimum = 0, arguments = 0;
  int64_t unknownBuffers = 0;
  std::string largestType;
  int64_t largestBytes = 0;
  llvm::StringMap<int64_t> callsByName;
  /// Seconds of collectives (the rest is compute).
  double communication = 0;
  /// The roofline's flops by the peak they are priced at: GEMMs and fused
  /// attentions (tp.attention_flops of the function itself and of the
  /// functions it calls) on 16-bit operands at flops16, wider ones at
  /// flops32 (the peaks gemmTime uses), each at its own peak, so a bf16
  /// layer with one f32 GEMM, or an f32 attention with no GEMM, is not
  /// priced all at one peak.
  double gemmFlops16 = 0, gemmFlops32 = 0;
  double attentionFlops16 = 0, attentionFlops32 = 0;
  double attentionFlops() const { return attentionFlops16 + attentionFlops32; }
  double seconds() const {
    return kernels.seconds + gemms.seconds + calls.seconds + copies.seconds;
  }
  int64_t moved() const {
    return kernels.read + kernels.written + gemms.read + gemms.written +
           calls.read + calls.written + copies.read + copies.written;
  }
};

class Reporter {
public:
  Reporter(ModuleOp module, const DeviceProfile &device)
      : module(module), device(device) {}
  LogicalResult run(func::FuncOp fn, FunctionReport &report);

private:
  /// A runtime call's time: a collective by the planner's ring formula
  /// (communication), a slice or any other call as a copy of its bytes.
  gpucost::Time callTime(func::CallOp call, ArrayRef<Value> buffers,
                         Entry &e);
  int64_t bytes(Value v, FunctionReport &report) {
    std::optional<int64_t> b = bufferBytes(v);
    if (!b) {
      ++report.unknownBuffers;
      return 0;
    }
    return *b;
  }
  const KernelAccess &access(gpu::GPUFuncOp kernel) {
    auto it = kernels.find(kernel);
    if (it == kernels.end())
      it = kernels.try_emplace(kernel, analyzeKernel(kernel)).first;
    return it->second;
  }
  ModuleOp module;
  const DeviceProfile &device;
  DenseMap<Operation *, KernelAccess> kernels;

public:
  /// Collectives whose group size neither the mesh nor the shapes gave.
  int64_t unknownGroups = 0;

private:
  /// Functions being counted (a call inside one adds its callee's figures).
  DenseSet<Operation *> active;
};

gpucost::Time Reporter::callTime(func::CallOp call, ArrayRef<Value> buffers,
                                 Entry &e) {
  StringRef name = call.getCallee();
  std::optional<CollectiveKind> kind;
  for (auto [text, k] :
       {std::pair<StringRef, CollectiveKind>{"all_reduce",
                                             CollectiveKind::AllReduce},
        {"all_gather", CollectiveKind::AllGather},
        {"reduce_scatter", CollectiveKind::ReduceScatter},
        {"all_to_all", CollectiveKind::AllToAll}})
    if (name.contains(text))
      kind = k;
  MemRefType in = rankedType(buffers.front()), out = rankedType(buffers.back());
  if (!kind || !in || !out || !in.hasStaticShape() || !out.hasStaticShape())
    return gpucost::copyTime(double(e.read + e.written), device);
  e.communication = true;
  CollectiveStep step;
  step.kind = *kind;
  step.inputShape = llvm::to_vector(in.getShape());
  step.outputShape = llvm::to_vector(out.getShape());
  // The group: the mesh axes of the call's mask (tp-lower-gpu records the
  // mesh's sizes before the mesh goes), else what the shapes say.
  std::optional<int64_t> mask;
  for (Value v : call.getOperands())
    if (v.getType().isInteger(64))
      if (std::optional<int64_t> c = getConstantIntValue(v))
        mask = c; // the last i64 scalar before the buffers: axes_mask
  auto sizes = module->getAttrOfType<DenseI64ArrayAttr>(kMeshSizes);
  int64_t group = 0;
  if (sizes && mask) {
    group = 1;
    for (auto [i, size] : llvm::enumerate(sizes.asArrayRef()))
      if (*mask & (int64_t(1) << i))
        group *= size;
  } else if (in.getNumElements() && out.getNumElements()) {
    if (*kind == CollectiveKind::AllGather)
      group = out.getNumElements() / in.getNumElements();
    else if (*kind == CollectiveKind::ReduceScatter)
      group = in.getNumElements() / out.getNumElements();
  }
  if (group <= 0) {
    ++unknownGroups;
    group = 2; // at least a pair: never free
  }
  step.groupSize = group;
  gpucost::Time t;
  t.seconds = CostModel(device).collectiveTime(
      step, getElementBytes(in.getElementType()));
  t.compute = t.seconds;
  t.bound = "link";
  return t;
}

/// The buffer behind `v`: through memref.cast and view ops.
Value bufferRoot(Value v) {
  while (true) {
    if (auto cast = v.getDefiningOp<memref::CastOp>())
      v = cast.getSource();
    else if (auto view = v.getDefiningOp<ViewLikeOpInterface>())
      v = view.getViewSource();
    else
      return v;
  }
}

LogicalResult Reporter::run(func::FuncOp fn, FunctionReport &report) {
  report.name = fn.getSymName().str();
  // A generated attention function: its flops, at the peak of Q's type.
  if (auto flops = fn->getAttrOfType<IntegerAttr>(kAttentionFlops)) {
    bool sixteenBit = true;
    for (Type t : fn.getArgumentTypes())
      if (auto m = dyn_cast<BaseMemRefType>(t)) {
        Type element = m.getElementType();
        sixteenBit =
            element.isIntOrFloat() && element.getIntOrFloatBitWidth() <= 16;
        break;
      }
    (sixteenBit ? report.attentionFlops16 : report.attentionFlops32) +=
        double(flops.getInt());
  }
  // Buffers in the minimum, by root: the arguments, then the activations
  // that library calls write.
  DenseSet<Value> inMinimum;
  for (BlockArgument arg : fn.getArguments())
    if (isa<BaseMemRefType>(arg.getType())) {
      report.arguments += bytes(arg, report);
      inMinimum.insert(arg);
    }
  report.minimum = report.arguments;
  // A device copy's target holds the same activation as its source: a
  // lowering that copies a buffer before a library reads it pays for the
  // copy in bytes moved, not with a larger minimum.
  DenseMap<Value, Value> copyOf;
  auto root = [&](Value v) {
    v = bufferRoot(v);
    for (auto it = copyOf.find(v); it != copyOf.end(); it = copyOf.find(v))
      v = it->second;
    return v;
  };
  auto activation = [&](Value v) {
    if (inMinimum.insert(root(v)).second)
      report.minimum += bytes(v, report);
  };
  auto isArgument = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(root(v));
    return arg && arg.getOwner()->getParentOp() == fn.getOperation();
  };
  std::string prefix = runtime::kSymbolPrefix.str();
  std::string gemm = prefix + runtime::kGemm.str() + "_";
  std::string batched = prefix + runtime::kBatchedGemm.str() + "_";
  WalkResult result = fn.walk([&](Operation *op) -> WalkResult {
    if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
      int64_t b = bytes(alloc.getMemref(), report);
      if (b > report.largestBytes) {
        report.largestBytes = b;
        report.largestType = typeString(alloc.getMemref().getType());
      }
      return WalkResult::advance();
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!kernel)
        return launch.emitOpError()
               << "launches a kernel that the cost report cannot find";
      const KernelAccess &a = access(kernel);
      Entry e;
      e.kind = "kernel";
      e.name = launch.getKernelName().str();
      for (auto [i, operand] : llvm::enumerate(launch.getKernelOperands())) {
        if (!isa<BaseMemRefType>(operand.getType()) || i >= a.reads.size())
          continue;
        int64_t b = bytes(operand, report);
        if (a.reads[i])
          e.read += b;
        if (a.writes[i])
          e.written += b;
      }
      gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
      gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
      for (Value v : {grid.x, grid.y, grid.z})
        e.grid.push_back(getConstantIntValue(v).value_or(-1));
      for (Value v : {block.x, block.y, block.z})
        e.block.push_back(getConstantIntValue(v).value_or(-1));
      auto known = [](ArrayRef<int64_t> sizes) {
        return llvm::to_vector(llvm::map_range(
            sizes, [](int64_t n) { return std::max<int64_t>(n, 1); }));
      };
      e.work = gpucost::countKernel(kernel.getBody(), known(e.grid),
                                    known(e.block));
      e.work.bytes = double(e.read + e.written);
      e.time = gpucost::kernelTime(e.work, device);
      report.kernels.add(e);
      report.entries.push_back(std::move(e));
      return WalkResult::advance();
    }
    if (auto copy = dyn_cast<gpu::MemcpyOp>(op)) {
      Entry e;
      e.kind = "copy";
      e.name = "gpu.memcpy";
      e.read = bytes(copy.getSrc(), report);
      e.written = bytes(copy.getDst(), report);
      e.time = gpucost::copyTime(double(e.read + e.written), device);
      Value target = bufferRoot(copy.getDst()), source = root(copy.getSrc());
      if (target != source && !isa<BlockArgument>(target))
        copyOf[target] = source;
      report.copies.add(e);
      report.entries.push_back(std::move(e));
      return WalkResult::advance();
    }
    auto call = dyn_cast<func::CallOp>(op);
    if (!call)
      return WalkResult::advance();
    if (!call.getCallee().starts_with(prefix)) {
      // A function of the module (a fused attention's kernel wrapper):
      // what it launches and moves counts in the caller, once per call.
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee || callee.isExternal())
        return WalkResult::advance();
      if (!active.insert(callee).second)
        return call.emitOpError() << "calls '" << callee.getSymName()
                                  << "' recursively; the cost report "
                                     "cannot count it";
      FunctionReport inner;
      LogicalResult ok = run(callee, inner);
      active.erase(callee);
      if (failed(ok))
        return WalkResult::interrupt();
      report.kernels.add(inner.kernels);
      report.gemms.add(inner.gemms);
      report.calls.add(inner.calls);
      report.copies.add(inner.copies);
      report.communication += inner.communication;
      report.gemmFlops16 += inner.gemmFlops16;
      report.gemmFlops32 += inner.gemmFlops32;
      report.attentionFlops16 += inner.attentionFlops16;
      report.attentionFlops32 += inner.attentionFlops32;
      report.unknownBuffers += inner.unknownBuffers;
      for (const auto &entry : inner.callsByName)
        report.callsByName[entry.getKey()] += entry.getValue();
      if (inner.largestBytes > report.largestBytes) {
        report.largestBytes = inner.largestBytes;
        report.largestType = inner.largestType;
      }
      for (Value v : call.getOperands())
        if (isa<BaseMemRefType>(v.getType()))
          activation(v);
      Entry e;
      e.kind = "function";
      e.name = callee.getSymName().str();
      for (const Totals *t :
           {&inner.kernels, &inner.gemms, &inner.calls, &inner.copies}) {
        e.read += t->read;
        e.written += t->written;
      }
      e.time.seconds = inner.seconds();
      report.entries.push_back(std::move(e));
      return WalkResult::advance();
    }
    SmallVector<Value> buffers;
    for (Value v : call.getOperands())
      if (isa<BaseMemRefType>(v.getType()))
        buffers.push_back(v);
    if (buffers.empty())
      return WalkResult::advance(); // tprt_mlir_axis_index
    Entry e;
    e.name = call.getCallee().str();
    // GEMMs: trans_a, trans_b, A, B, C; a shared-A call has N products,
    // A, B_0..B_N-1, C_0..C_N-1, which run together and read A once.
    bool sharedA =
        call.getCallee().starts_with(prefix + runtime::kGemmSharedA.str());
    bool epilogue = call.getCallee().starts_with(
        prefix + runtime::kGemmEpilogue.str() + "_");
    bool grouped = call.getCallee().starts_with(
        prefix + runtime::kGemmGrouped.str() + "_");
    bool isGemm = !grouped && (sharedA || call.getCallee().starts_with(gemm) ||
                               call.getCallee().starts_with(batched));
    if (grouped) {
      // trans_b, A [R, K], B [G, ., .], rows [G], C [R, N].
      if (buffers.size() != 4 || call.getNumOperands() != 5)
        return call.emitOpError()
               << "is not a grouped GEMM call of the runtime ABI (trans_b, "
                  "A, B, rows, C)";
      e.kind = "gemm";
      MemRefType a = rankedType(buffers[0]), b = rankedType(buffers[1]),
                 c = rankedType(buffers[3]);
      if (!a || !b || !c || !a.hasStaticShape() || !b.hasStaticShape() ||
          !c.hasStaticShape() || a.getRank() != 2 || b.getRank() != 3 ||
          c.getRank() != 2)
        return call.emitOpError()
               << "has GEMM operands whose shapes the cost report cannot "
                  "read";
      int64_t groups = b.getDimSize(0), rows = c.getDimSize(0),
              n = c.getDimSize(1), k = a.getDimSize(1);
      int64_t perGroup = groups > 0 ? (rows + groups - 1) / groups : rows;
      e.gemmShape = {groups, perGroup, n, k};
      for (Value v : ArrayRef<Value>(buffers).drop_back())
        e.read += bytes(v, report);
      e.written = bytes(buffers[3], report);
      e.flops = 2 * rows * n * k;
      if (isArgument(buffers[0]) || isArgument(buffers[1]))
        for (Value v : buffers)
          activation(v);
      bool sixteenBit = a.getElementType().getIntOrFloatBitWidth() <= 16;
      (sixteenBit ? report.gemmFlops16 : report.gemmFlops32) += double(e.flops);
      e.time = gpucost::gemmTime(groups, perGroup, n, k, sixteenBit,
                                 double(e.read + e.written), device);
      double oneWeight = groups > 0 ? double(bytes(buffers[1], report)) /
                                          double(groups)
                                    : 0.0;
      e.oneGroupSeconds =
          gpucost::gemmTime(1, rows, n, k, sixteenBit,
                            double(bytes(buffers[0], report) +
                                   bytes(buffers[3], report)) +
                                oneWeight,
                            device)
              .seconds;
      report.gemms.add(e);
    } else if (epilogue) {
      // trans_a, trans_b, activation, A, B, addend, bias, C: one GEMM
      // whose epilogue reads the addend and the bias (memref<0xT>: none).
      if (buffers.size() != 5 || call.getNumOperands() != 8)
        return call.emitOpError()
               << "is not a GEMM epilogue call of the runtime ABI (trans_a, "
                  "trans_b, activation, A, B, addend, bias, C)";
      e.kind = "gemm";
      MemRefType a = rankedType(buffers[0]), c = rankedType(buffers[4]);
      std::optional<int64_t> transA = getConstantIntValue(call.getOperand(0));
      if (!a || !c || !a.hasStaticShape() || !c.hasStaticShape() ||
          a.getRank() != 2 || c.getRank() != 2 || !transA)
        return call.emitOpError()
               << "has GEMM operands whose shapes the cost report cannot "
                  "read";
      int64_t k = a.getDimSize(*transA ? 0 : 1);
      int64_t m = c.getDimSize(0), n = c.getDimSize(1);
      e.gemmShape = {1, m, n, k};
      for (Value v : ArrayRef<Value>(buffers).drop_back())
        e.read += bytes(v, report);
      e.written = bytes(buffers[4], report);
      e.flops = 2 * m * n * k;
      if (isArgument(buffers[0]) || isArgument(buffers[1]))
        for (Value v : buffers)
          activation(v);
      bool sixteenBit = a.getElementType().getIntOrFloatBitWidth() <= 16;
      (sixteenBit ? report.gemmFlops16 : report.gemmFlops32) += double(e.flops);
      e.time = gpucost::gemmTime(1, m, n, k, sixteenBit,
                                 double(e.read + e.written), device);
      report.gemms.add(e);
    } else if (isGemm) {
      int64_t products = (int64_t(buffers.size()) - 1) / 2;
      if (products < 1 || buffers.size() != size_t(1 + 2 * products) ||
          call.getNumOperands() != 2 + buffers.size() ||
          (!sharedA && products != 1))
        return call.emitOpError()
               << (sharedA ? "is not a shared-A GEMM call of the runtime ABI "
                             "(trans_a, trans_b, A, B_0..B_N-1, C_0..C_N-1)"
                           : "is not a GEMM call of the runtime ABI (trans_a, "
                             "trans_b, A, B, C)");
      e.kind = "gemm";
      MemRefType a = rankedType(buffers[0]),
                 c = rankedType(buffers[1 + products]);
      std::optional<int64_t> transA = getConstantIntValue(call.getOperand(0));
      if (!a || !c || !a.hasStaticShape() || !c.hasStaticShape() ||
          a.getRank() < 2 || c.getRank() < 2 ||
          (sharedA && (a.getRank() != 2 || c.getRank() != 2)) || !transA)
        return call.emitOpError()
               << "has GEMM operands whose shapes the cost report cannot "
                  "read";
      int64_t k = a.getDimSize(a.getRank() - (*transA ? 2 : 1));
      int64_t m = c.getDimSize(c.getRank() - 2);
      int64_t n = c.getDimSize(c.getRank() - 1);
      int64_t batch = sharedA ? products : c.getNumElements() / (m * n);
      e.gemmShape = {batch, m, n, k};
      e.read = bytes(buffers[0], report);
      for (int64_t i = 0; i < products; ++i) {
        e.read += bytes(buffers[1 + i], report);
        e.written += bytes(buffers[1 + products + i], report);
        e.flops += 2 * c.getNumElements() * k;
      }
      if (llvm::any_of(ArrayRef<Value>(buffers).take_front(1 + products),
                       isArgument))
        for (Value v : buffers)
          activation(v);
      bool sixteenBit = a.getElementType().getIntOrFloatBitWidth() <= 16;
      (sixteenBit ? report.gemmFlops16 : report.gemmFlops32) += double(e.flops);
      e.time = gpucost::gemmTime(batch, m, n, k, sixteenBit,
                                 double(e.read + e.written), device);
      report.gemms.add(e);
    } else {
      e.kind = "call";
      e.written = bytes(buffers.back(), report);
      if (call.getCallee().starts_with(prefix + runtime::kSlice.str() + "_"))
        e.read = e.written; // the local block only
      else
        for (Value v : ArrayRef<Value>(buffers).drop_back())
          e.read += bytes(v, report);
      for (Value v : buffers)
        activation(v);
      e.time = callTime(call, buffers, e);
      if (e.communication)
        report.communication += e.time.seconds;
      report.calls.add(e);
      ++report.callsByName[e.name];
    }
    report.entries.push_back(std::move(e));
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

llvm::json::Object totalsJson(const Totals &t, bool withFlops) {
  llvm::json::Object o{{"count", t.count},
                       {"bytes_read", t.read},
                       {"bytes_written", t.written},
                       {"seconds", t.seconds}};
  if (withFlops)
    o["flops"] = t.flops;
  return o;
}

/// The roofline of a function: its GEMM flops at the library's GEMM rate,
/// its attention flops at a library attention's rate, each at the peak of
/// its operands' type (16-bit: flops16; wider: flops32), and its minimum
/// bytes at the achievable bandwidth.
double rooflineSeconds(const FunctionReport &r, const DeviceProfile &d) {
  const DeviceProfile::GPUExecution &g = d.gpu;
  return r.gemmFlops16 / (d.flops16 * g.gemmEfficiency) +
         r.gemmFlops32 / (d.flops32 * g.gemmEfficiency) +
         r.attentionFlops16 / (d.flops16 * g.attentionEfficiency) +
         r.attentionFlops32 / (d.flops32 * g.attentionEfficiency) +
         double(r.minimum) / (d.memoryBandwidth * g.memoryEfficiency);
}

/// Entries by modelled time, slowest first (kernels, GEMMs, calls, copies
/// and module functions alike).
SmallVector<const Entry *> slowest(const FunctionReport &r, size_t n) {
  SmallVector<const Entry *> order;
  for (const Entry &e : r.entries)
    order.push_back(&e);
  llvm::stable_sort(order, [](const Entry *a, const Entry *b) {
    return a->time.seconds > b->time.seconds;
  });
  if (order.size() > n)
    order.resize(n);
  return order;
}

/// Kernels whose modelled time is far above the time of their bytes: bound
/// by instruction issue, special functions or CUDA-core flops, at least
/// twice their bytes' time and at least 1% of the function's. Kernels on
/// tensor cores are left out (their flops are the point).
bool isFlagged(const Entry &e, double total, const DeviceProfile &d) {
  if (e.kind != "kernel" || e.time.bound == "memory" ||
      e.time.bound == "tensor" || e.work.tensorFlops > 0)
    return false;
  return e.time.seconds > 2 * (e.time.memory + d.gpu.launch) &&
         e.time.seconds >= 0.01 * total;
}

llvm::json::Value reportJson(const FunctionReport &r, const DeviceProfile &d) {
  llvm::json::Array entries;
  for (const Entry &e : r.entries) {
    llvm::json::Object o{{"kind", e.kind},
                         {"name", e.name},
                         {"bytes_read", e.read},
                         {"bytes_written", e.written},
                         {"seconds", e.time.seconds}};
    if (e.kind == "kernel") {
      o["grid"] = llvm::json::Array(e.grid);
      o["block"] = llvm::json::Array(e.block);
      o["bound"] = e.time.bound;
      o["memory_seconds"] = e.time.memory;
      o["compute_seconds"] = e.time.compute;
      o["work"] = llvm::json::Object{{"threads", e.work.threads},
                                     {"issue_slots", e.work.issue},
                                     {"sfu", e.work.sfu},
                                     {"flops32", e.work.flops32},
                                     {"flops64", e.work.flops64},
                                     {"tensor_flops", e.work.tensorFlops}};
      if (e.work.unknownLoops)
        o["unknown_loops"] = e.work.unknownLoops;
    }
    if (e.kind == "gemm") {
      o["flops"] = e.flops;
      o["batch"] = e.gemmShape[0];
      o["m"] = e.gemmShape[1];
      o["n"] = e.gemmShape[2];
      o["k"] = e.gemmShape[3];
      o["bound"] = e.time.bound;
      if (e.oneGroupSeconds) {
        o["one_group_seconds"] = *e.oneGroupSeconds;
        o["worst_case_seconds"] = std::max(*e.oneGroupSeconds, e.time.seconds);
      }
    }
    if (e.kind == "call" && e.communication)
      o["communication"] = true;
    entries.push_back(std::move(o));
  }
  llvm::json::Object byName;
  for (const auto &kv : r.callsByName)
    byName[kv.getKey()] = kv.getValue();
  double total = r.seconds();
  double compute = total - r.communication;
  double roofline = rooflineSeconds(r, d);
  llvm::json::Array slow;
  for (const Entry *e : slowest(r, 5))
    slow.push_back(llvm::json::Object{
        {"name", e->name},
        {"kind", e->kind},
        {"seconds", e->time.seconds},
        {"share", total > 0 ? e->time.seconds / total : 0.0}});
  llvm::json::Array flags;
  for (const Entry &e : r.entries)
    if (isFlagged(e, r.seconds(), d))
      flags.push_back(llvm::json::Object{
          {"name", e.name},
          {"seconds", e.time.seconds},
          {"bytes_seconds", e.time.memory},
          {"ratio", e.time.memory > 0 ? e.time.seconds / e.time.memory : 0.0},
          {"bound", e.time.bound}});
  int64_t moved = r.moved();
  llvm::json::Object o{
      {"name", r.name},
      {"kernel_launches", r.kernels.count},
      {"gemm_launches", r.gemms.count},
      {"gemm_flops", r.gemms.flops},
      {"runtime_calls", r.calls.count},
      {"kernels", totalsJson(r.kernels, false)},
      {"gemms", totalsJson(r.gemms, true)},
      {"calls", totalsJson(r.calls, false)},
      {"calls_by_name", std::move(byName)},
      {"copies", totalsJson(r.copies, false)},
      {"bytes_moved", moved},
      {"minimum_bytes", r.minimum},
      {"ratio_to_minimum",
       r.minimum ? double(moved) / double(r.minimum) : 0.0},
      {"argument_bytes", r.arguments},
      {"ratio_to_arguments",
       r.arguments ? double(moved) / double(r.arguments) : 0.0},
      {"largest_temporary",
       llvm::json::Object{{"type", r.largestType},
                          {"bytes", r.largestBytes}}},
      {"unknown_buffers", r.unknownBuffers},
      {"seconds",
       llvm::json::Object{{"total", total},
                          {"compute", compute},
                          {"communication", r.communication},
                          {"kernels", r.kernels.seconds},
                          {"gemms", r.gemms.seconds},
                          {"calls", r.calls.seconds},
                          {"copies", r.copies.seconds}}},
      {"roofline",
       llvm::json::Object{{"gemm_flops", r.gemms.flops},
                          {"attention_flops", r.attentionFlops()},
                          {"minimum_bytes", r.minimum},
                          {"seconds", roofline}}},
      {"ratio_to_roofline", roofline > 0 ? compute / roofline : 0.0},
      {"slowest", std::move(slow)},
      {"flags", std::move(flags)},
      {"launches", std::move(entries)}};
  return o;
}

double mib(int64_t bytes) { return double(bytes) / (1024.0 * 1024.0); }

/// Seconds in the unit that suits them: "2.91 ms", "12.3 us".
std::string duration(double seconds) {
  if (seconds >= 1e-3)
    return llvm::formatv("{0:f3} ms", seconds * 1e3).str();
  return llvm::formatv("{0:f1} us", seconds * 1e6).str();
}

struct GPUCostReportPass
    : public tp::impl::GPUCostReportPassBase<GPUCostReportPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      module.emitError() << "tp-gpu-cost-report: no file= given";
      return signalPassFailure();
    }
    std::string error;
    FailureOr<DeviceProfile> device = gpucost::lookupDevice(this->device, error);
    if (failed(device)) {
      module.emitError() << "tp-gpu-cost-report: " << error;
      return signalPassFailure();
    }
    Reporter reporter(module, *device);
    std::vector<FunctionReport> reports;
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      FunctionReport report;
      if (failed(reporter.run(fn, report)))
        return signalPassFailure();
      reports.push_back(std::move(report));
    }
    std::error_code ec;
    llvm::raw_fd_ostream out(file, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      module.emitError() << "tp-lower-gpu: cannot write the cost report to '"
                         << file << "': " << ec.message();
      return signalPassFailure();
    }
    llvm::json::Array functions;
    for (const FunctionReport &r : reports)
      functions.push_back(reportJson(r, *device));
    out << llvm::formatv(
        "{0:2}\n",
        llvm::json::Value(llvm::json::Object{{"version", 2},
                                             {"device", device->name},
                                             {"functions",
                                              std::move(functions)}}));
    out.close();
    if (out.has_error()) { // a full disk: named, not "LLVM ERROR: IO failure"
      module.emitError() << "tp-lower-gpu: cannot write the cost report to '"
                         << file << "': " << out.error().message();
      out.clear_error();
      return signalPassFailure();
    }

    llvm::raw_ostream &os = llvm::errs();
    for (const FunctionReport &r : reports) {
      int64_t moved = r.moved();
      os << "cost @" << r.name << ": " << r.kernels.count
         << " kernel launches, " << r.gemms.count << " GEMMs (";
      if (r.gemms.flops < 1000000000)
        os << r.gemms.flops << " flops";
      else
        os << llvm::format("%.1f", double(r.gemms.flops) * 1e-9) << " GFLOP";
      os << "), " << r.calls.count << " other runtime calls, "
         << r.copies.count << " copies; bytes moved " << moved << " ("
         << llvm::format("%.1f", mib(moved)) << " MiB), minimum "
         << r.minimum << " (" << llvm::format("%.1f", mib(r.minimum))
         << " MiB), " << llvm::format("%.2f", r.minimum ? double(moved) /
                                                   double(r.minimum)
                                                      : 0.0)
         << "x; arguments " << r.arguments << " ("
         << llvm::format("%.1f", mib(r.arguments)) << " MiB), "
         << llvm::format("%.2f", r.arguments ? double(moved) /
                                                   double(r.arguments)
                                                : 0.0)
         << "x; largest temporary "
         << (r.largestType.empty() ? std::string("none") : r.largestType)
         << " (" << r.largestBytes << " bytes)\n";
      double total = r.seconds(), roofline = rooflineSeconds(r, *device);
      os << "time @" << r.name << " on " << device->name << ": "
         << duration(total) << " modelled (compute "
         << duration(total - r.communication) << ", communication "
         << duration(r.communication) << "), roofline " << duration(roofline)
         << ", " << llvm::format("%.2f", roofline > 0 ? (total - r.communication) / roofline : 0.0)
         << "x; slowest:";
      for (const Entry *e : slowest(r, 3))
        os << " " << e->name << " " << duration(e->time.seconds);
      for (const Entry &e : r.entries)
        if (isFlagged(e, total, *device))
          os << "\nflag @" << r.name << ": " << e.name << " is "
             << e.time.bound << "-bound: " << duration(e.time.seconds)
             << " modelled, " << llvm::format("%.1f", e.time.seconds /
                                                         std::max(e.time.memory, 1e-12))
             << "x the time of its bytes";
      os << "\n";
    }
    if (reporter.unknownGroups)
      os << "cost: " << reporter.unknownGroups
         << " collectives without a known group size were priced as pairs\n";
  }
};

} // namespace
