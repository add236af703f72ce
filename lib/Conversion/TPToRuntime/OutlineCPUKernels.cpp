//===- OutlineCPUKernels.cpp - tp-outline-cpu-kernels ----------*- C++ -*-===//
//
// Each top-level loop nest of a host function becomes a private function,
// a CPU kernel, called in its place (the pass's description in Passes.td
// has the before and after). Why: clang's backend is superlinear in the
// size of one function (a 32-layer 7B's single function took minutes in
// instruction selection, register allocation and scheduling); small
// functions are linear, and equal ones merge (tp-dedup-kernels).
//
// Per function that existed before the pass, per block, per op in order:
//
// 1. Candidates: ops with LoopLikeOpInterface and no results (a loop
//    whose results the function uses would need them returned; such
//    loops, and other ops with regions, stay).
// 2. Captures, in the order of their first use in a pre-order walk of the
//    loop (its own operands first): every operand defined outside the
//    loop. A capture defined by a ConstantLike op is cloned into the
//    kernel (it folds there, and equal loops of different layers get equal
//    kernels whatever constants the host shares); any other is an
//    argument, once however often it is used.
// 3. The kernel `<function>_kernel_<N>` (N counts per function; a taken
//    name is made unique) goes after the function, private, internal to
//    model.so (`llvm.linkage`) and `passthrough = ["noinline"]`: its body is the cloned constants, the
//    cloned loop and a return. The loop is replaced by a func.call with the
//    arguments; the host's constants that nothing uses any more go.
//
// Invariant: the program computes what it computed before, in the same
// order; the kernels' arguments may alias (nothing assumes otherwise).
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

namespace mlir::tp {
#define GEN_PASS_DEF_OUTLINECPUKERNELSPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-outline-cpu-kernels"

using namespace mlir;
using namespace mlir::tp;

namespace {

/// The values `loop` reads from outside it, in the order of their first
/// use (step 2).
SetVector<Value> capturesOf(Operation *loop) {
  SetVector<Value> captures;
  loop->walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (!loop->isAncestor(operand.getParentRegion()->getParentOp()))
        captures.insert(operand);
  });
  return captures;
}

bool isConstant(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>();
}

struct OutlineCPUKernelsPass
    : public tp::impl::OutlineCPUKernelsPassBase<OutlineCPUKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);
    auto noinline =
        ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")});
    // Not exported from model.so.
    auto internal = LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal);
    for (func::FuncOp fn :
         llvm::to_vector(module.getBody()->getOps<func::FuncOp>())) {
      if (fn.isExternal())
        continue;
      SmallVector<Operation *> loops;
      for (Block &block : fn.getBody())
        for (Operation &op : block)
          if (isa<LoopLikeOpInterface>(op) && op.getNumResults() == 0)
            loops.push_back(&op);
      // Kernels go after the function, in order.
      OpBuilder moduleBuilder(ctx);
      moduleBuilder.setInsertionPointAfter(fn);
      unsigned number = 0;
      SetVector<Value> constantsUsed;
      for (Operation *loop : loops) {
        SetVector<Value> captures = capturesOf(loop);
        SmallVector<Value> arguments;
        SmallVector<Value> constants;
        for (Value v : captures)
          (isConstant(v) ? constants : arguments).push_back(v);

        auto kernel = func::FuncOp::create(
            moduleBuilder, loop->getLoc(),
            (fn.getSymName() + "_kernel_" + Twine(number++)).str(),
            FunctionType::get(ctx, ValueRange(arguments).getTypes(), {}));
        symbols.insert(kernel); // unique
        kernel.setPrivate();
        kernel->setAttr("passthrough", noinline);
        kernel->setAttr("llvm.linkage", internal);
        moduleBuilder.setInsertionPointAfter(kernel);

        Block *entry = kernel.addEntryBlock();
        OpBuilder body = OpBuilder::atBlockBegin(entry);
        IRMapping mapping;
        for (auto [value, argument] :
             llvm::zip(arguments, entry->getArguments()))
          mapping.map(value, argument);
        for (Value c : constants)
          body.clone(*c.getDefiningOp(), mapping);
        constantsUsed.insert(constants.begin(), constants.end());
        body.clone(*loop, mapping);
        func::ReturnOp::create(body, loop->getLoc());

        OpBuilder host(loop);
        func::CallOp::create(host, loop->getLoc(), kernel, arguments);
        loop->erase();
      }
      // Constants only the loops used.
      for (Value c : constantsUsed)
        if (Operation *def = c.getDefiningOp(); def && def->use_empty())
          def->erase();
    }
  }
};

} // namespace
