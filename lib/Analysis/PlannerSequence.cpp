//===- PlannerSequence.cpp - token factors and the residual stream --------===//
//
// Sequence parallelism on and off need to know which tensor dimensions are
// tokens (dimensions of a non-parameter input that never index a parameter,
// found by a union-find over the dimensions every sharding rule ties
// together) and which values are the residual stream (the inputs, gathered
// embeddings, and the parameter-free elementwise results computed from them).
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::detail;

//===----------------------------------------------------------------------===//
// Token factors (sequence parallelism on/off)
//===----------------------------------------------------------------------===//

void PlanBuilder::computeTokenClasses() {
  Block &block = func.getBody().front();
  auto key = [](Value v, int64_t d) {
    return DimKey{v.getAsOpaquePointer(), d};
  };
  auto ensure = [&](Value v) {
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      for (int64_t d = 0; d < t.getRank(); ++d)
        dimClasses.insert(key(v, d));
  };
  for (BlockArgument arg : block.getArguments())
    ensure(arg);
  for (Operation &op : block) {
    for (Value r : op.getResults())
      ensure(r);
    for (Value o : op.getOperands())
      ensure(o);
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      auto t = cast<RankedTensorType>(annotate.getType());
      for (int64_t d = 0; d < t.getRank(); ++d)
        dimClasses.unionSets(key(annotate.getInput(), d),
                             key(annotate.getResult(), d));
      continue;
    }
    FailureOr<ShardingRule> rule = getShardingRule(&op, nullptr);
    if (failed(rule))
      continue;
    // Tensor dimensions whose major factor is the same are one class.
    DenseMap<int64_t, DimKey> first;
    auto visit = [&](Value v, const TensorFactors &dims) {
      for (auto [d, fs] : llvm::enumerate(dims)) {
        for (int64_t f : fs) {
          if (rule->factors[f].size <= 1)
            continue;
          auto [it, inserted] = first.try_emplace(f, key(v, d));
          if (!inserted)
            dimClasses.unionSets(it->second, key(v, d));
          break; // the major factor only
        }
      }
    };
    for (auto [i, m] : llvm::enumerate(rule->operands))
      if (m)
        visit(op.getOperand(i), *m);
    for (auto [i, m] : llvm::enumerate(rule->results))
      if (m)
        visit(op.getResult(i), *m);
  }
  DenseSet<DimKey> inputLeaders, paramLeaders;
  for (BlockArgument arg : block.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t)
      continue;
    bool isParam = func.getArgAttr(arg.getArgNumber(),
                                   TPDialect::getParamAttrName()) != nullptr;
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (t.getDimSize(d) == 1)
        continue;
      DimKey leader = dimClasses.getLeaderValue(key(arg, d));
      (isParam ? paramLeaders : inputLeaders).insert(leader);
    }
  }
  for (DimKey leader : inputLeaders)
    if (!paramLeaders.contains(leader))
      tokenLeaders.insert(leader);

  // Data axes and the classes they pin (PlannerOptions::dataAxesOnBatch).
  if (!options.dataAxesOnBatch)
    return;
  DenseMap<StringAttr, DenseSet<DimKey>> pinned;
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (func.getArgAttr(i, TPDialect::getParamAttrName()))
      continue;
    auto layout = func.getArgAttrOfType<LayoutAttr>(
        i, TPDialect::getLayoutAttrName());
    if (!layout)
      continue;
    for (int64_t d = 0; d < layout.getRank(); ++d)
      for (StringAttr a : layout.getDimAxes(d))
        pinned[a].insert(dimClasses.getLeaderValue(key(arg, d)));
  }
  if (pinned.size() < axes.size())
    dataLeaders = std::move(pinned);
}

/// The residual stream: the non-parameter inputs and gathered embeddings,
/// and every elementwise, parameter-free result of the same shape computed
/// from a stream value (residual additions). Sequence parallelism is about
/// the layout of exactly these values.
void PlanBuilder::computeResidualStream() {
  Block &block = func.getBody().front();
  auto isParam = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &block &&
           func.getArgAttr(arg.getArgNumber(), TPDialect::getParamAttrName());
  };
  for (BlockArgument arg : block.getArguments())
    if (isa<RankedTensorType>(arg.getType()) && !isParam(arg))
      residualStream.insert(arg);
  for (Operation &op : block) {
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      if (residualStream.contains(annotate.getInput()))
        residualStream.insert(annotate.getResult());
      continue;
    }
    bool gathers = false;
    for (Region &region : op.getRegions())
      region.walk([&](tensor::ExtractOp extract) {
        gathers |= !op.isAncestor(
            extract.getTensor().getParentRegion()->getParentOp());
      });
    if (gathers) {
      for (Value r : op.getResults())
        residualStream.insert(r);
      continue;
    }
    bool elementwise = op.hasTrait<OpTrait::Elementwise>();
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      elementwise = linalgOp.getNumReductionLoops() == 0 &&
                    !isa<linalg::FillOp>(op);
    if (!elementwise || llvm::any_of(op.getOperands(), isParam))
      continue;
    for (Value r : op.getResults())
      if (llvm::any_of(op.getOperands(), [&](Value o) {
            return residualStream.contains(o) && o.getType() == r.getType();
          }))
        residualStream.insert(r);
  }
}

bool PlanBuilder::allowedOnStream(Value value, LayoutAttr layout) {
  if (options.sequenceParallel == SequenceParallelMode::Auto ||
      !residualStream.contains(value))
    return true;
  if (options.sequenceParallel == SequenceParallelMode::Off)
    return layout.isReplicated();
  // On: every axis that can split one of the value's token dimensions does.
  auto type = cast<RankedTensorType>(value.getType());
  for (const Axis &axis : axes) {
    bool canSplit = false;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      DimKey key{value.getAsOpaquePointer(), d};
      if (dimClasses.contains(key) &&
          tokenLeaders.contains(dimClasses.getLeaderValue(key)) &&
          !type.isDynamicDim(d) && type.getDimSize(d) % axis.size == 0)
        canSplit = true;
    }
    if (!canSplit)
      continue;
    int64_t d = layout.getDimOfAxis(axis.name.getValue());
    if (d < 0)
      return false;
    DimKey key{value.getAsOpaquePointer(), d};
    if (!dimClasses.contains(key) ||
        !tokenLeaders.contains(dimClasses.getLeaderValue(key)))
      return false;
  }
  return true;
}
