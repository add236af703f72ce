//===- MergeGPUModules.cpp - one gpu.module for every kernel ------*- C++ -*-//
//
// Outlining gives each kernel its own gpu.module, hence its own gpu.binary
// and its own load (and, for PTX, JIT compilation) when a compiled model is
// opened. This pass moves every kernel into one module, @tp_kernels (made
// unique if taken). Each kernel is renamed after its old module, whose name
// outlining made unique, and every gpu.launch_func is pointed at the new
// symbol. A module that holds anything but gpu.func ops, or that carries
// attributes (such as targets), stays as it is.
//
// Every kernel's workgroup buffers are aligned to 16 bytes (llvm.align):
// 16-byte vector copies and ldmatrix's row addresses need it, and
// outlining does not carry an alignment from the gpu.launch.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tp {
#define GEN_PASS_DEF_MERGEGPUMODULESPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-merge-gpu-modules"

using namespace mlir;
using namespace mlir::tp;

namespace {
struct MergeGPUModulesPass
    : public tp::impl::MergeGPUModulesPassBase<MergeGPUModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    module.walk([&](gpu::GPUFuncOp fn) {
      StringAttr align =
          StringAttr::get(&getContext(), LLVM::LLVMDialect::getAlignAttrName());
      for (unsigned i = 0; i < fn.getNumWorkgroupAttributions(); ++i)
        if (!fn.getWorkgroupAttributionAttr(i, align))
          fn.setWorkgroupAttributionAttr(
              i, align, IntegerAttr::get(IntegerType::get(&getContext(), 64), 16));
    });
    SmallVector<gpu::GPUModuleOp> mergeable;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      bool onlyKernels = llvm::all_of(
          gpuModule.getBody()->getOperations(),
          [](Operation &op) { return isa<gpu::GPUFuncOp>(op); });
      bool plain = !gpuModule.getTargetsAttr() &&
                   !gpuModule.getOffloadingHandlerAttr();
      if (onlyKernels && plain)
        mergeable.push_back(gpuModule);
    }
    if (mergeable.size() < 2)
      return;

    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);
    OpBuilder builder(mergeable.front());
    auto merged =
        gpu::GPUModuleOp::create(builder, module.getLoc(), "tp_kernels");
    symbols.insert(merged); // renames it if the name is taken
    StringAttr mergedName = merged.getSymNameAttr();
    SymbolTable mergedSymbols(merged);

    // Old (module, kernel) -> new kernel name.
    DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp old : mergeable) {
      for (auto fn : llvm::make_early_inc_range(old.getOps<gpu::GPUFuncOp>())) {
        StringAttr oldName = fn.getNameAttr();
        std::string base = old.getSymName().str();
        if (oldName.getValue() != old.getSymName() &&
            llvm::range_size(old.getOps<gpu::GPUFuncOp>()) > 1)
          base += "_" + oldName.getValue().str();
        fn->moveBefore(merged.getBody(), merged.getBody()->end());
        fn.setName(base);
        mergedSymbols.insert(fn); // unique within the merged module
        renamed[{old.getSymNameAttr(), oldName}] = fn.getNameAttr();
      }
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = renamed.find(
          {launch.getKernelModuleName(), launch.getKernelName()});
      if (it == renamed.end())
        return;
      launch.setKernelAttr(SymbolRefAttr::get(
          mergedName, {FlatSymbolRefAttr::get(ctx, it->second)}));
    });
    for (gpu::GPUModuleOp old : mergeable)
      old.erase();
  }
};
} // namespace
