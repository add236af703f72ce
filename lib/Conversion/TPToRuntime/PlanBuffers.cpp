//===- PlanBuffers.cpp - the tp-plan-buffers pass --------------*- C++ -*-===//
//
// One idea: a bufferized function's temporary buffers live in one arena that
// exists once per process, so that a call allocates nothing. The arena is a
// private, uninitialized module global (zero-filled pages of the loaded
// library: the kernel maps them at the first touch and they stay mapped);
// each planned memref.alloc becomes a memref.view of it at the offset
// BufferPlan chose by liveness, and its deallocs go.
//
// First, results in place: a buffer whose last use is a memref.copy of it
// whole, through reshapes and casts, into an out-parameter nothing else
// uses (buffer-results-to-out-params hoists only a result that is an alloc
// itself, not a reshape of one: a GEMM's [m, n] product returned as
// [1, m, n]) becomes the matching reshape of that parameter, and the copy
// goes: the product is written where the caller wants it.
//
// Consequence: a function with an arena is not reentrant (two threads may
// not run it at once, nor may it call itself). A compiled model's entry is
// called by one thread at a time (docs/model-abi.md).
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/BufferPlan.h"
#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tp {
#define GEN_PASS_DEF_PLANBUFFERSPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {

/// The alloc `copy`'s source views whole through casts and reshapes, with
/// those views from the alloc outwards; null when there is none.
memref::AllocOp rootAlloc(Value source, SmallVector<Operation *> &views) {
  while (Operation *def = source.getDefiningOp()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(def)) {
      std::reverse(views.begin(), views.end());
      return alloc;
    }
    if (!isa<memref::CastOp, memref::ExpandShapeOp, memref::CollapseShapeOp>(
            def))
      return nullptr;
    views.push_back(def);
    source = def->getOperand(0);
  }
  return nullptr;
}

/// Results in place (see the header): each copy into an out-parameter of
/// a buffer that dies there makes the buffer a view of the parameter.
void writeResultsInPlace(func::FuncOp fn) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return;
  Block &block = fn.getBody().front();
  DenseMap<Operation *, unsigned> position;
  unsigned next = 0;
  for (Operation &op : block)
    position[&op] = next++;
  BufferViewFlowAnalysis views(fn);
  for (auto copy : llvm::make_early_inc_range(block.getOps<memref::CopyOp>())) {
    auto target = dyn_cast<BlockArgument>(copy.getTarget());
    if (!target || target.getOwner() != &block || !target.hasOneUse())
      continue;
    auto targetType = cast<MemRefType>(target.getType());
    if (!targetType.getLayout().isIdentity() || !targetType.hasStaticShape())
      continue;
    SmallVector<Operation *> chain;
    memref::AllocOp alloc = rootAlloc(copy.getSource(), chain);
    if (!alloc || alloc->getBlock() != &block ||
        !alloc.getType().hasStaticShape())
      continue;
    // Nothing may touch the buffer after the copy: from then on its bytes
    // are the caller's.
    unsigned at = position[copy];
    bool usedLater = false;
    for (Value view : views.resolve(alloc.getResult()))
      for (Operation *user : view.getUsers())
        if (Operation *ancestor = block.findAncestorOpInBlock(*user))
          usedLater |= position[ancestor] > at;
    if (usedLater)
      continue;
    // The parameter seen as the alloc: each view of the chain undone, from
    // the copy's source back to the alloc.
    OpBuilder builder(alloc);
    Value value = target;
    bool ok = true;
    for (Operation *view : llvm::reverse(chain)) {
      Type sourceType = view->getOperand(0).getType();
      Location loc = view->getLoc();
      if (auto expand = dyn_cast<memref::ExpandShapeOp>(view))
        value = memref::CollapseShapeOp::create(
            builder, loc, value, expand.getReassociationIndices());
      else if (auto collapse = dyn_cast<memref::CollapseShapeOp>(view))
        value = memref::ExpandShapeOp::create(
            builder, loc, cast<MemRefType>(sourceType).getShape(), value,
            collapse.getReassociationIndices());
      else
        value = memref::CastOp::create(builder, loc, sourceType, value);
      ok &= value.getType() == sourceType;
      if (!ok)
        break;
    }
    if (!ok) {
      // A layout the undone view does not reproduce: leave the copy.
      for (Operation *made = value.getDefiningOp(); made;) {
        Operation *previous = made->getNumOperands()
                                  ? made->getOperand(0).getDefiningOp()
                                  : nullptr;
        made->erase();
        made = previous;
      }
      continue;
    }
    alloc.replaceAllUsesWith(value);
    alloc.erase();
    copy.erase();
  }
}

struct PlanBuffersPass : public tp::impl::PlanBuffersPassBase<PlanBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment < 1 || (alignment & (alignment - 1)) != 0) {
      module.emitError() << "tp-plan-buffers: alignment " << int64_t(alignment)
                         << " is not a power of two";
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp fn : functions) {
      writeResultsInPlace(fn);
      BufferPlan plan(fn, alignment);
      if (plan.buffers().empty())
        continue;
      int64_t arenaAlignment = alignment;
      for (const BufferPlan::Buffer &buffer : plan.buffers())
        arenaAlignment = std::max(arenaAlignment, buffer.alignment);

      OpBuilder builder(module.getContext());
      builder.setInsertionPoint(fn);
      auto arenaType =
          MemRefType::get({plan.arenaBytes()}, builder.getI8Type());
      auto global = memref::GlobalOp::create(
          builder, fn.getLoc(), ("tp_arena_" + fn.getSymName()).str(),
          builder.getStringAttr("private"), arenaType, builder.getUnitAttr(),
          /*constant=*/false, builder.getI64IntegerAttr(arenaAlignment));
      symbols.insert(global); // renamed on a clash
      global->setAttr("planned_buffers",
                      builder.getI64IntegerAttr(plan.buffers().size()));
      global->setAttr("separate_bytes",
                      builder.getI64IntegerAttr(plan.totalBytes()));
      global->setAttr("peak_live_bytes",
                      builder.getI64IntegerAttr(plan.peakLiveBytes()));

      Block &block = fn.getBody().front();
      builder.setInsertionPointToStart(&block);
      Value arena = memref::GetGlobalOp::create(builder, fn.getLoc(), arenaType,
                                                global.getSymName());
      for (const BufferPlan::Buffer &buffer : plan.buffers()) {
        memref::AllocOp alloc = buffer.alloc;
        builder.setInsertionPoint(alloc);
        Value shift = arith::ConstantIndexOp::create(builder, alloc.getLoc(),
                                                     buffer.offset);
        Value view =
            memref::ViewOp::create(builder, alloc.getLoc(), alloc.getType(),
                                   arena, shift, ValueRange());
        for (Operation *dealloc : buffer.deallocs)
          dealloc->erase();
        alloc.replaceAllUsesWith(view);
        alloc.erase();
      }
    }
  }
};

} // namespace
