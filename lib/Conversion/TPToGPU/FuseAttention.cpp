//===- FuseAttention.cpp - tp-fuse-attention --------------------*- C++ -*-===//
//
// Attention, recognised on tensors (AttentionMatch.cpp) and replaced by a
// call of a generated function whose kernel never materialises the
// [batch, heads, seq, seq] scores (docs/passes/lower-gpu.md, "Fused
// attention"). Per match, target=gpu:
//
//   1. the generator: flash attention on tensor cores
//      (AttentionTensorCore.cpp) where the match is eligible (bf16/f16,
//      head dimensions multiples of 16 up to 128), else one warp per query
//      row on CUDA cores (AttentionCudaCore.cpp); `kernel=` forces one;
//   2. the decision, with kernel=auto: the generated kernel's modelled time
//      (GPUCostModel: its body counted, its bytes) against a lower bound of
//      the unfused path's (the two batched GEMMs at the library's rate, and
//      one read and one write of the scores per elementwise and softmax
//      kernel at the achievable bandwidth). The fused kernel is kept only
//      when it is faster; otherwise the match stays as it is, with a remark
//      giving both times;
//   3. the replacement: the sources as read-only buffers
//      (bufferization.to_buffer), a fresh output buffer, the call, and the
//      fused ops erased. The function carries tp.attention_flops, the flops
//      over the keys its mask keeps (the cost report's roofline).
//
// target=loops builds the same recurrence as host loops for the CPU
// numerics check, always fused.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "GPUCostModel.h"
#include "tp/Conversion/FunctionEquivalence.h"
#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>

namespace mlir::tp {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::attention;

namespace {

int64_t tensorBytes(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() *
         ((type.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

/// The sources the kernel reads (Q, K, V, then the chain's side inputs that
/// are read rather than computed), once each, in a fixed order.
SetVector<Value> sourcesOf(const Match &m) {
  SetVector<Value> sources;
  sources.insert(m.q.source);
  sources.insert(m.k.source);
  sources.insert(m.v.source);
  std::function<void(const Access &)> add = [&](const Access &a) {
    if (!a.producer) {
      if (!isa_and_nonnull<arith::ConstantOp>(a.source.getDefiningOp()) ||
          !isa<SplatElementsAttr>(
              a.source.getDefiningOp<arith::ConstantOp>().getValue()))
        sources.insert(a.source);
      return;
    }
    for (const Access &in : a.inputs)
      add(in);
  };
  for (const ChainOp &link : m.chain)
    for (auto &side : link.sides)
      add(side.second);
  return sources;
}

/// A lower bound of the unfused path's time: the score and value products
/// as batched library GEMMs, and one read and one write of the scores per
/// kernel between them (the chain's, if any, and the softmax's).
double unfusedSeconds(const Match &m, const DeviceProfile &device) {
  auto qType = cast<RankedTensorType>(m.q.source.getType());
  bool sixteenBit = qType.getElementType().getIntOrFloatBitWidth() <= 16;
  auto [heads, queries] = headsAndQueries(m);
  int64_t dv = valueDim(m);
  double scores = double(rowCount(m)) * double(m.keys);
  auto bytesOf = [](Type t) { return double(t.getIntOrFloatBitWidth()) / 8; };
  double s = scores * bytesOf(m.scoreType);
  Type xType = m.chain.empty()
                   ? m.scoreType
                   : cast<RankedTensorType>(m.chain.back().op->getResult(0)
                                                .getType())
                         .getElementType();
  double x = scores * bytesOf(xType);
  Type pType =
      cast<RankedTensorType>(m.pv.getDpsInputs()[0].getType()).getElementType();
  double p = scores * bytesOf(pType);
  double seconds =
      gpucost::gemmTime(heads, queries, m.keys, m.headDim, sixteenBit,
                        double(tensorBytes(m.q.source) +
                               tensorBytes(m.k.source)) +
                            s,
                        device)
          .seconds +
      gpucost::gemmTime(heads, queries, dv, m.keys, sixteenBit,
                        p + double(tensorBytes(m.v.source) +
                                   tensorBytes(m.pv->getResult(0))),
                        device)
          .seconds;
  if (!m.chain.empty())
    seconds += gpucost::copyTime(s + x, device).seconds;
  seconds += gpucost::copyTime(x + p, device).seconds;
  return seconds;
}

enum class Generator { Loops, CudaCore, TensorCore };

/// A gpu.module of its own for the kernel of `name`, as outlining makes
/// one per kernel (tp-merge-gpu-modules merges them): `<name>_kernel`.
gpu::GPUModuleOp kernelModule(ModuleOp module, StringRef name) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto kernels =
      gpu::GPUModuleOp::create(b, module.getLoc(), (name + "_kernel").str());
  SymbolTable(module).insert(kernels); // unique
  return kernels;
}

/// The private function `name` computing `m` with `generator`. For the
/// host loops, a body; for a GPU kernel, a declaration that names the
/// kernel (gpucost::kKernelAttr), a gpu.func `<name>_kernel` in a module
/// of that name: tp-linalg-to-gpu gives the declaration the body that
/// launches it, after bufferization and deallocation (which know no
/// barriers).
func::FuncOp buildFunction(const Match &m, ModuleOp module, StringRef name,
                           ArrayRef<Value> sources, Generator generator,
                           Location loc) {
  SmallVector<Type> argTypes;
  for (Value s : sources) {
    auto type = cast<RankedTensorType>(s.getType());
    argTypes.push_back(MemRefType::get(type.getShape(), type.getElementType()));
  }
  auto outType = cast<RankedTensorType>(m.pv->getResult(0).getType());
  argTypes.push_back(MemRefType::get(outType.getShape(), outType.getElementType()));
  OpBuilder mb(module.getBodyRegion());
  mb.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(mb, loc, name, mb.getFunctionType(argTypes, {}));
  fn.setPrivate();
  fn->setAttr(gpucost::kAttentionFlops,
              mb.getI64IntegerAttr(int64_t(attentionFlops(m))));
  if (generator == Generator::Loops) {
    Block *entry = fn.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockBegin(entry);
    SmallVector<Value> buffers(entry->getArguments().drop_back());
    Emitter emitter(m, sources, buffers, entry->getArguments().back());
    emitLoops(emitter, fb, loc);
    func::ReturnOp::create(fb, loc);
    return fn;
  }
  gpu::GPUModuleOp kernels = kernelModule(module, name);
  OpBuilder kb(kernels.getBodyRegion());
  kb.setInsertionPointToEnd(kernels.getBody());
  auto kernel = gpu::GPUFuncOp::create(kb, loc, kernels.getSymName(),
                                       kb.getFunctionType(argTypes, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  Block &entry = kernel.getBody().front();
  OpBuilder fb = OpBuilder::atBlockBegin(&entry);
  SmallVector<Value> buffers(entry.getArguments().take_front(sources.size()));
  Emitter emitter(m, sources, buffers, entry.getArgument(sources.size()));
  KernelFrame frame{kernel};
  if (generator == Generator::TensorCore)
    emitTensorCore(emitter, frame, fb, loc);
  else
    emitWarpPerRow(emitter, frame, fb, loc);
  auto sizes = [&](ArrayRef<int64_t> v) {
    return kb.getDenseI32ArrayAttr({int32_t(v[0]), int32_t(v[1]), int32_t(v[2])});
  };
  kernel.setKnownGridSizeAttr(sizes(frame.grid));
  kernel.setKnownBlockSizeAttr(sizes(frame.block));
  fn->setAttr(gpucost::kKernelAttr,
              SymbolRefAttr::get(kernels.getSymNameAttr(),
                                 {FlatSymbolRefAttr::get(kernel.getNameAttr())}));
  return fn;
}

/// The gpu.func a declaration names (kKernelAttr), or null.
gpu::GPUFuncOp kernelOf(func::FuncOp fn) {
  auto ref = fn->getAttrOfType<SymbolRefAttr>(gpucost::kKernelAttr);
  if (!ref)
    return nullptr;
  return SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(fn, ref);
}

/// The modelled time of the kernel (its body counted, its bytes), after
/// the clean-up the pipeline gives it (canonicalization, CSE, hoisting of
/// loop-invariant code): counted as it will be compiled.
double fusedSeconds(func::FuncOp fn, const Match &m, ArrayRef<Value> sources,
                    const DeviceProfile &device,
                    function_ref<LogicalResult(OpPassManager &, Operation *)>
                        runPipeline) {
  gpu::GPUFuncOp kernel = kernelOf(fn);
  OpPassManager cleanup(gpu::GPUModuleOp::getOperationName());
  cleanup.addPass(createCanonicalizerPass());
  cleanup.addPass(createCSEPass());
  cleanup.addPass(createLoopInvariantCodeMotionPass());
  (void)runPipeline(cleanup, kernel->getParentOp());
  kernel = kernelOf(fn);
  auto sizes = [](DenseI32ArrayAttr a) {
    SmallVector<int64_t> v;
    for (int32_t x : a.asArrayRef())
      v.push_back(x);
    return v;
  };
  gpucost::KernelWork work =
      gpucost::countKernel(kernel.getBody(), sizes(kernel.getKnownGridSizeAttr()),
                           sizes(kernel.getKnownBlockSizeAttr()));
  for (Value s : sources)
    work.bytes += double(tensorBytes(s));
  work.bytes += double(tensorBytes(m.pv->getResult(0)));
  return gpucost::kernelTime(work, device).seconds;
}

/// Erases `fn` and its kernel.
void eraseFunction(func::FuncOp fn) {
  if (gpu::GPUFuncOp kernel = kernelOf(fn)) {
    kernel->getParentOfType<gpu::GPUModuleOp>().erase();
  }
  fn.erase();
}

/// Replaces the match by a call of `fn`; erases the fused ops.
void replace(Match &m, func::FuncOp fn, ArrayRef<Value> sources) {
  linalg::LinalgOp pv = m.pv;
  Location loc = pv.getLoc();
  OpBuilder b(pv);
  SmallVector<Value> args;
  for (auto [s, type] : llvm::zip(sources, fn.getArgumentTypes()))
    args.push_back(bufferization::ToBufferOp::create(
        b, loc, cast<MemRefType>(type), s, /*readOnly=*/true));
  auto outMemref = cast<MemRefType>(fn.getArgumentTypes().back());
  Value outBuf = memref::AllocOp::create(b, loc, outMemref);
  args.push_back(outBuf);
  func::CallOp::create(b, loc, fn.getSymName(), TypeRange(), args);
  auto outType = cast<RankedTensorType>(pv->getResult(0).getType());
  Value result = bufferization::ToTensorOp::create(b, loc, outType, outBuf,
                                                   /*restrict=*/true,
                                                   /*writable=*/true);
  pv->getResult(0).replaceAllUsesWith(result);
  m.fused.insert(pv);
  // Erase in use order: repeat until nothing dead is left.
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation *op : SmallVector<Operation *>(m.fused.begin(), m.fused.end()))
      if (op->use_empty()) {
        m.fused.remove(op);
        op->erase();
        erased = true;
      }
  }
}

/// A kernel tp-fuse-attention built and timed (kernel=auto): a copy of it
/// as built, before its clean-up; the flops of its match; its modelled
/// seconds; and the function that launches it, or null when that match
/// stayed unfused (its function erased).
struct Built {
  OwningOpRef<gpu::GPUFuncOp> raw;
  int64_t flops;
  double seconds;
  func::FuncOp fn;
};

std::string micros(double seconds) {
  return llvm::formatv("{0:f1} us", seconds * 1e6).str();
}

struct FuseAttentionPass
    : public tp::impl::FuseAttentionPassBase<FuseAttentionPass> {
  using FuseAttentionPassBase::FuseAttentionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target != "gpu" && target != "loops") {
      module.emitError() << "tp-fuse-attention: target '" << target
                         << "' is not one of gpu, loops";
      return signalPassFailure();
    }
    if (kernel != "auto" && kernel != "tensor-core" && kernel != "cuda-core") {
      module.emitError() << "tp-fuse-attention: kernel '" << kernel
                         << "' is not one of auto, tensor-core, cuda-core";
      return signalPassFailure();
    }
    std::string error;
    FailureOr<DeviceProfile> profile = gpucost::lookupDevice(device, error);
    if (failed(profile)) {
      module.emitError() << "tp-fuse-attention: " << error;
      return signalPassFailure();
    }
    // Row reductions written as linalg.reduce match as generics.
    SmallVector<linalg::ReduceOp> reduces;
    module.walk([&](linalg::ReduceOp op) { reduces.push_back(op); });
    IRRewriter rewriter(module.getContext());
    for (linalg::ReduceOp op : reduces) {
      rewriter.setInsertionPoint(op);
      (void)linalg::generalizeNamedOp(rewriter, op);
    }

    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (isCandidate(op))
        candidates.push_back(op);
    });
    DenseSet<Operation *> erased;
    // The kernels built so far (kernel=auto), by structural hash.
    DenseMap<llvm::hash_code, SmallVector<Built, 1>> built;
    unsigned number = 0;
    // The next name no symbol (an earlier run's) has.
    auto freeName = [&] {
      while (module.lookupSymbol("tp_fused_attention_" +
                                 std::to_string(number)))
        ++number;
      return "tp_fused_attention_" + std::to_string(number);
    };
    for (linalg::LinalgOp pv : candidates) {
      if (erased.contains(pv.getOperation()))
        continue; // fused into an earlier match
      std::string why;
      FailureOr<Match> m = matchAttention(pv, why);
      if (failed(m)) {
        if (!why.empty())
          pv->emitRemark() << "attention not fused: " << why;
        continue;
      }
      SetVector<Value> sources = sourcesOf(*m);
      Generator generator = Generator::Loops;
      if (target == "gpu") {
        std::string notTensor;
        bool tensor = tensorCoreEligible(*m, notTensor);
        if (kernel == "tensor-core" && !tensor) {
          pv->emitRemark() << "attention on CUDA cores: " << notTensor;
        }
        generator = tensor && kernel != "cuda-core" ? Generator::TensorCore
                                                    : Generator::CudaCore;
        if (generator == Generator::CudaCore &&
            (m->headDim > 256 || valueDim(*m) > 256)) {
          pv->emitRemark() << "attention not fused: head dimension "
                           << std::max(m->headDim, valueDim(*m))
                           << " is over 256";
          continue;
        }
      }
      func::FuncOp fn = buildFunction(*m, module, freeName(),
                                      sources.getArrayRef(), generator,
                                      pv.getLoc());
      if (target == "gpu" && kernel == "auto") {
        double unfused = unfusedSeconds(*m, *profile);
        // A kernel equal to one built for an earlier match (the same
        // attention in another layer): its clean-up and count again would
        // give the same time, and its function serves this match too.
        gpu::GPUFuncOp raw = kernelOf(fn);
        int64_t flops = attentionFlops(*m);
        SmallVector<Built, 1> &bucket = built[structuralHash(raw)];
        Built *same = nullptr;
        for (Built &b : bucket)
          if (b.flops == flops && areIdenticalFunctions(*b.raw, raw))
            same = &b;
        double fused;
        bool reused = same && (same->fn || same->seconds >= unfused);
        if (reused) {
          eraseFunction(fn);
          fn = same->fn;
          fused = same->seconds;
        } else {
          OwningOpRef<gpu::GPUFuncOp> copy(raw.clone());
          fused = fusedSeconds(fn, *m, sources.getArrayRef(), *profile,
                               [&](OpPassManager &pm, Operation *op) {
                                 return runPipeline(pm, op);
                               });
          if (!same) {
            bucket.push_back({std::move(copy), flops, fused, fn});
            same = &bucket.back();
          }
          same->fn = fn;
        }
        if (fused >= unfused) {
          pv->emitRemark()
              << "attention not fused: the unfused path is faster by the "
                 "cost model on "
              << profile->name << " (fused on "
              << (generator == Generator::TensorCore ? "tensor" : "CUDA")
              << " cores " << micros(fused) << ", unfused at least "
              << micros(unfused) << ")";
          if (!reused) {
            eraseFunction(fn);
            same->fn = nullptr;
          }
          continue;
        }
      }
      for (Operation *op : m->fused)
        erased.insert(op);
      erased.insert(pv.getOperation());
      replace(*m, fn, sources.getArrayRef());
    }
  }
};

} // namespace
