//===- Rematerialize.cpp - one copy of each cheap shared value per use ----===//
//
// Phase 0 of the planner (Rematerialize.h says why). Two walks over the body:
//  1. Forward: which ops are cheap (their inputs are cheap, scalars or
//     non-parameter arguments; no parameter, no weight-sized constant, no
//     reduction over argument-dependent data) and which depend on no
//     argument at all.
//  2. Backward: a cheap op whose results feed several top-level ops is
//     cloned right before each consumer but the first, and that consumer's
//     uses move to the clone. Walking backwards, the clones' own inputs are
//     visited later and see every clone as a consumer, so a whole cheap cone
//     (iota -> compare -> select -> broadcast) becomes one tree per consumer.
// The copies compute the same values, so the program's meaning is unchanged;
// the planner may lay each out differently, and CSE after partitioning merges
// the copies that end up with the same local type.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/Rematerialize.h"

#include "tp/Analysis/CostModel.h"

#include "tp/Dialect/TP/IR/TPDialect.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::tp;

/// Reductions over at most this many points are cheap enough to copy.
constexpr double kSmallReduction = 1 << 16;

/// Bytes of a constant's value, or 0 for a splat (one element stored).
RematerializeStats
mlir::tp::rematerializeSharedValues(func::FuncOp func,
                                    const ConstantWeightOptions &weights,
                                    int64_t maxClones) {
  RematerializeStats stats;
  if (!func.getBody().hasOneBlock())
    return stats;
  Block &block = func.getBody().front();
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };

  // 1. Cheap ops, and ops that depend on no argument.
  DenseSet<Operation *> cheap, argFree;
  auto classify = [&](Value v, bool &ok, bool &free) {
    if (!isTensor(v.getType()))
      return; // scalars and indices defined above: any
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      free = false;
      if (arg.getOwner() != &block ||
          func.getArgAttr(arg.getArgNumber(), TPDialect::getParamAttrName()))
        ok = false;
      return;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &block) {
      return; // defined inside the op's own region: checked with the op
    }
    if (!cheap.contains(def))
      ok = false;
    if (!argFree.contains(def))
      free = false;
  };
  for (Operation &op : block) {
    if (isa<AnnotateOp, func::ReturnOp>(op) || op.getNumResults() == 0 ||
        !llvm::all_of(op.getResultTypes(), isTensor) ||
        !isMemoryEffectFree(&op))
      continue;
    if (auto constant = dyn_cast<arith::ConstantOp>(op))
      if (isWeightConstant(constant, weights))
        continue; // a weight baked in: one copy, laid out like a parameter
    bool ok = true, free = true;
    for (Value v : op.getOperands())
      classify(v, ok, free);
    // Tensors the op's regions read from above (a table gathered from).
    op.walk([&](Operation *inner) {
      if (inner == &op)
        return;
      for (Value v : inner->getOperands())
        if (!op.isAncestor(v.getParentRegion()->getParentOp()))
          classify(v, ok, free);
    });
    // Real work is computed once: a reduction over argument-dependent data,
    // or one over more than kSmallReduction points (transformers' cumsum of
    // positions, spelled as a [seq, seq] product).
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      if (linalgOp.getNumReductionLoops() != 0) {
        double points = 1;
        for (int64_t range : linalgOp.getStaticLoopRanges())
          points *= ShapedType::isDynamic(range) ? 1e9 : double(range);
        if (!free || points > kSmallReduction)
          ok = false;
      }
    if (ok)
      cheap.insert(&op);
    if (ok && free)
      argFree.insert(&op);
  }

  // 2. One copy per consuming top-level op, walking backwards.
  SmallVector<Operation *> order;
  for (Operation &op : block)
    if (cheap.contains(&op))
      order.push_back(&op);
  for (Operation *op : llvm::reverse(order)) {
    llvm::MapVector<Operation *, SmallVector<OpOperand *>> byConsumer;
    for (Value result : op->getResults())
      for (OpOperand &use : result.getUses())
        if (Operation *top = block.findAncestorOpInBlock(*use.getOwner()))
          byConsumer[top].push_back(&use);
    if (byConsumer.size() <= 1)
      continue;
    // The first consumer in program order keeps the original.
    SmallVector<Operation *> consumers;
    for (auto &entry : byConsumer)
      consumers.push_back(entry.first);
    llvm::sort(consumers, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *consumer : llvm::drop_begin(consumers)) {
      if (stats.clones >= maxClones) {
        ++stats.leftShared;
        break;
      }
      OpBuilder builder(consumer);
      Operation *copy = builder.clone(*op);
      ++stats.clones;
      for (OpOperand *use : byConsumer[consumer])
        use->set(copy->getResult(cast<OpResult>(use->get()).getResultNumber()));
    }
  }
  return stats;
}
