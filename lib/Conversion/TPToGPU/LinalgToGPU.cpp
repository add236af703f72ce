//===- LinalgToGPU.cpp - linalg ops on buffers to gpu.launch ------*- C++ -*-//
//
// After bufferization every remaining linalg op becomes one gpu.launch, and
// the host side moves to device memory. The pass drives the kernel
// families (KernelBuilder.h): softmaxes first (one may fold the cast after
// it), then every other linalg op in program order, each one launch;
// fills that a reduction absorbs and the ops a row reduction's launch
// computes too (its chain) are skipped.
//
// Host side: memref.alloc / memref.dealloc become gpu.alloc / gpu.dealloc;
// memref.copy becomes gpu.memcpy between contiguous buffers and a copy
// kernel otherwise; memref.get_global gets a device copy (gpu.alloc +
// gpu.memcpy, freed before each return); a memref.load left on the host (a
// top-level tensor.extract) becomes a one-thread kernel that copies the
// element into a one-element device buffer, a gpu.memcpy of it into a host
// alloca and a load from there, with a remark. Otherwise host code may only
// compute views of device buffers: a memref.store left outside a kernel is
// an error.
//
//===----------------------------------------------------------------------===//

#include "GPUCostModel.h"
#include "KernelBuilder.h"
#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::tp {
#define GEN_PASS_DEF_LINALGTOGPUPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-linalg-to-gpu"

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::gpukernels;

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// Buffers gpu.memcpy takes whole: identity layouts only (a contiguous view
/// with an offset is copied by a kernel, which honours the offset).
static bool isContiguous(MemRefType type) {
  return type.getLayout().isIdentity() && type.hasStaticShape();
}

static LogicalResult moveHostToDevice(func::FuncOp fn) {
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) {
    if (op->getParentOfType<gpu::LaunchOp>())
      return;
    if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp,
            memref::GetGlobalOp, memref::LoadOp, memref::StoreOp>(op))
      ops.push_back(op);
  });
  SmallVector<Value> globalsOnDevice;
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      auto gpuAlloc = gpu::AllocOp::create(
          b, loc, alloc.getType(), /*asyncToken=*/Type(), ValueRange(),
          alloc.getDynamicSizes(), alloc.getSymbolOperands(),
          /*hostShared=*/false);
      alloc.replaceAllUsesWith(gpuAlloc.getMemref());
      alloc.erase();
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange(),
                             dealloc.getMemref());
      dealloc.erase();
    } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      auto srcType = cast<MemRefType>(copy.getSource().getType());
      auto dstType = cast<MemRefType>(copy.getTarget().getType());
      if (isContiguous(srcType) && isContiguous(dstType)) {
        gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange(),
                              copy.getTarget(), copy.getSource());
        copy.erase();
        continue;
      }
      auto kernel =
          linalg::CopyOp::create(b, loc, copy.getSource(), copy.getTarget());
      copy.erase();
      if (failed(KernelBuilder(cast<linalg::LinalgOp>(kernel.getOperation()))
                     .build()))
        return failure();
    } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
      if (global->getBlock() != &fn.getBody().front())
        return global.emitOpError()
               << "reads a global inside control flow, which the GPU "
                  "lowering cannot copy to the device";
      b.setInsertionPointAfter(global);
      auto type = global.getType();
      if (!isContiguous(type))
        return global.emitOpError() << "reads a strided global";
      auto device = gpu::AllocOp::create(b, loc, type, Type(), ValueRange(),
                                         ValueRange(), ValueRange(), false);
      global.getResult().replaceAllUsesWith(device.getMemref());
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), device.getMemref(),
                            global.getResult());
      globalsOnDevice.push_back(device.getMemref());
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      // A host-side read of one element (a top-level tensor.extract): a
      // one-thread kernel copies it into a one-element device buffer, which
      // is copied into host memory and read there. The runtime's mgpuMemcpy
      // into host memory completes before it returns (docs/runtime.md).
      load->emitRemark()
          << "reads one element of a device buffer on the host: a one-thread "
             "kernel and a device-to-host copy, which waits for the stream";
      auto one = MemRefType::get({1}, load.getType());
      Value zero = index(b, loc, 0);
      auto staging = gpu::AllocOp::create(b, loc, one, Type(), ValueRange(),
                                          ValueRange(), ValueRange(), false);
      {
        OpBuilder::InsertionGuard g(b);
        createLaunch(b, loc, 1, 1);
        Value v = memref::LoadOp::create(b, loc, load.getMemRef(),
                                         load.getIndices());
        memref::StoreOp::create(b, loc, v, staging.getMemref(), zero);
      }
      auto host = memref::AllocaOp::create(b, loc, one);
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), host,
                            staging.getMemref());
      Value v = memref::LoadOp::create(b, loc, host, zero);
      gpu::DeallocOp::create(b, loc, Type(), ValueRange(),
                             staging.getMemref());
      load.replaceAllUsesWith(v);
      load.erase();
    } else {
      return op->emitOpError()
             << "accesses memory on the host, where every buffer is a device "
                "buffer";
    }
  }
  if (!globalsOnDevice.empty())
    fn.walk([&](func::ReturnOp ret) {
      OpBuilder b(ret);
      for (Value v : globalsOnDevice)
        gpu::DeallocOp::create(b, ret.getLoc(), Type(), ValueRange(), v);
    });
  return success();
}

/// Gives each generated kernel's declaration (tp-fuse-attention: a
/// private function naming a gpu.func, gpucost::kKernelAttr) its body: the
/// launch of the kernel over all of its arguments, with the grid and block
/// the kernel was built for. It has no body until now because buffer
/// deallocation rejects what it cannot see through (barriers, launches).
static LogicalResult launchGeneratedKernels(ModuleOp module) {
  for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
    auto ref = fn->getAttrOfType<SymbolRefAttr>(gpucost::kKernelAttr);
    if (!ref)
      continue;
    auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(fn, ref);
    DenseI32ArrayAttr grid = kernel ? kernel.getKnownGridSizeAttr() : nullptr;
    DenseI32ArrayAttr block =
        kernel ? kernel.getKnownBlockSizeAttr() : nullptr;
    if (!fn.isExternal() || !grid || !block)
      return fn.emitOpError()
             << "names a generated kernel " << ref
             << " that is missing or has no known launch size";
    Location loc = fn.getLoc();
    Block *entry = fn.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    auto dim3 = [&](DenseI32ArrayAttr sizes) {
      ArrayRef<int32_t> v = sizes.asArrayRef();
      return gpu::KernelDim3{index(b, loc, v[0]), index(b, loc, v[1]),
                             index(b, loc, v[2])};
    };
    gpu::LaunchFuncOp::create(b, loc, kernel, dim3(grid), dim3(block),
                              Value(), entry->getArguments());
    func::ReturnOp::create(b, loc);
    fn->removeAttr(gpucost::kKernelAttr);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(module.getContext()));
  }
  return success();
}

namespace {
struct LinalgToGPUPass
    : public tp::impl::LinalgToGPUPassBase<LinalgToGPUPass> {
  // The later stages of tp-lower-gpu (nvvm-attach-target, serialization,
  // translation) need the NVVM target and the LLVM IR translations; a tool
  // that runs this pass gets them without registering them itself. (The
  // vector dialect of the vectorized elementwise kernels is a dependent
  // dialect in Passes.td.)
  void getDependentDialects(DialectRegistry &registry) const override {
    LinalgToGPUPassBase::getDependentDialects(registry);
    registerGPUTranslations(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(launchGeneratedKernels(module)))
      return signalPassFailure();
    // Softmaxes first: one may fold the cast after it (a linalg op).
    SmallVector<linalg::SoftmaxOp> softmaxes;
    module.walk([&](linalg::SoftmaxOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>())
        softmaxes.push_back(op);
    });
    for (linalg::SoftmaxOp op : softmaxes)
      if (failed(buildSoftmax(op)))
        return signalPassFailure();
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>() &&
          !op->getParentOfType<gpu::GPUModuleOp>())
        ops.push_back(op);
    });
    // Fills that a reduction's kernel absorbs (it starts from the value)
    // are erased by that kernel's builder, not lowered on their own.
    DenseSet<Operation *> absorbed;
    for (linalg::LinalgOp op : ops) {
      KernelBuilder probe(op);
      probe.findFilledInits();
      for (linalg::FillOp fill : probe.absorbedFills())
        absorbed.insert(fill);
    }
    // The ops a row reduction's kernel computed too (its chain: further
    // reductions of the same rows and the epilogue) are gone with it.
    DenseSet<Operation *> consumed;
    for (linalg::LinalgOp op : ops) {
      if (absorbed.contains(op) || consumed.contains(op))
        continue;
      KernelBuilder builder(op);
      if (failed(builder.build()))
        return signalPassFailure();
      for (Operation *gone : builder.consumed())
        consumed.insert(gone);
    }
    for (func::FuncOp fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(moveHostToDevice(fn)))
        return signalPassFailure();
  }
};
} // namespace
