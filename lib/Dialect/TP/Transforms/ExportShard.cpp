//===- ExportShard.cpp - a tp plan as upstream shard IR ---------*- C++ -*-===//
//
// `--tp-export-shard`: writes the plan of `--tp-propagate` in upstream
// MLIR's `shard` dialect, fully annotated (the form upstream
// `sharding-propagation` produces), so that upstream `shard-partition` can
// partition it: every `tp.mesh` becomes a `shard.grid`, every argument layout
// a `shard.shard` of the argument, every result layout a `shard.shard` of the
// result and every operand layout a `shard.shard ... annotate_for_users`.
// docs/passes/export-shard.md.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/Passes.h"

#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tp {
#define GEN_PASS_DEF_EXPORTSHARDPASS
#include "tp/Dialect/TP/Transforms/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {
struct ExportShardPass
    : public tp::impl::ExportShardPassBase<ExportShardPass> {
  void runOnOperation() override;

private:
  /// The split axes of `layout` as grid axis indices (partial axes dropped:
  /// upstream shardings have none). Fails with a diagnostic at `at`.
  FailureOr<shard::GridAxesArrayAttr> splitAxes(LayoutAttr layout,
                                                Operation *at);
  /// Creates `shard.sharding` + `shard.shard` of `value` before `builder`'s
  /// insertion point.
  FailureOr<Value> annotate(OpBuilder &builder, Location loc, Value value,
                            LayoutAttr layout, bool forUsers, Operation *at);
  /// Rewrites one function; fails with a diagnostic.
  LogicalResult exportFunc(func::FuncOp func);

  /// Symbol tables of one run (set by runOnOperation).
  SymbolTableCollection *symbols = nullptr;
};
} // namespace

FailureOr<shard::GridAxesArrayAttr>
ExportShardPass::splitAxes(LayoutAttr layout, Operation *at) {
  MeshOp mesh = lookupMesh(at, layout.getMesh(), symbols);
  if (!mesh)
    return at->emitOpError() << "has the layout " << layout
                             << ", whose mesh does not exist";
  SmallVector<shard::GridAxesAttr> dims;
  for (int64_t d = 0, e = layout.getRank(); d < e; ++d) {
    SmallVector<shard::GridAxis> axes;
    for (StringAttr axis : layout.getDimAxes(d)) {
      std::optional<int64_t> index = mesh.getAxisIndex(axis.getValue());
      if (!index)
        return at->emitOpError() << "has the layout " << layout
                                 << ", whose axis \"" << axis.getValue()
                                 << "\" is not in the mesh";
      axes.push_back(static_cast<shard::GridAxis>(*index));
    }
    dims.push_back(DenseI16ArrayAttr::get(at->getContext(), axes));
  }
  // Upstream's form: no trailing unsplit dimensions, but at least one entry.
  while (!dims.empty() && dims.back().empty())
    dims.pop_back();
  if (dims.empty())
    dims.push_back(DenseI16ArrayAttr::get(at->getContext(), {}));
  return shard::GridAxesArrayAttr::get(at->getContext(), dims);
}

FailureOr<Value> ExportShardPass::annotate(OpBuilder &builder, Location loc,
                                           Value value, LayoutAttr layout,
                                           bool forUsers, Operation *at) {
  FailureOr<shard::GridAxesArrayAttr> axes = splitAxes(layout, at);
  if (failed(axes))
    return failure();
  // Upstream's shard-partition splits every dimension evenly (and rejects
  // the uneven ones); a padded split has no upstream spelling.
  auto type = cast<RankedTensorType>(value.getType());
  MeshOp mesh = lookupMesh(at, layout.getMesh(), symbols);
  for (int64_t d = 0, e = layout.getRank(); d < e; ++d) {
    int64_t devices = *mesh.getGroupSize(layout.getDimAxes(d));
    int64_t size = type.getDimSize(d);
    if (devices > 1 && !ShapedType::isDynamic(size) && size % devices != 0)
      return at->emitError()
             << "tp-export-shard: the plan splits dimension " << d
             << " of size " << size << " of a " << type << " over " << devices
             << " devices unevenly (padded), which upstream shard cannot "
                "express; plan with allow-padding=false to export";
  }
  auto sharding = shard::ShardingOp::create(
      builder, loc, shard::ShardingType::get(builder.getContext()),
      layout.getMesh(), *axes, builder.getDenseI64ArrayAttr({}), ValueRange(),
      builder.getDenseI64ArrayAttr({}), ValueRange());
  auto annotation = shard::ShardOp::create(builder, loc, value,
                                           sharding.getResult(), forUsers);
  return annotation.getResult();
}

/// The layouts an op attribute holds (null entries for `unit`).
static SmallVector<LayoutAttr> layoutsOf(Operation *op, StringRef name) {
  SmallVector<LayoutAttr> layouts;
  if (auto array = op->getAttrOfType<ArrayAttr>(name))
    for (Attribute attr : array)
      layouts.push_back(dyn_cast<LayoutAttr>(attr));
  return layouts;
}

LogicalResult ExportShardPass::exportFunc(func::FuncOp func) {
  if (func.isExternal())
    return success();
  Block &entry = func.getBody().front();
  OpBuilder builder(func.getContext());

  // Arguments: the stored layout is the argument's own sharding.
  builder.setInsertionPointToStart(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    auto layout = func.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(),
                                                    TPDialect::getLayoutAttrName());
    if (!layout || !isa<RankedTensorType>(arg.getType()))
      continue;
    FailureOr<Value> annotated =
        annotate(builder, arg.getLoc(), arg, layout, /*forUsers=*/false, func);
    if (failed(annotated))
      return failure();
    arg.replaceAllUsesExcept(*annotated, annotated->getDefiningOp());
  }

  for (Operation &op : llvm::make_early_inc_range(entry)) {
    // The planner's own pins: their layouts are on their neighbours too.
    if (auto pin = dyn_cast<AnnotateOp>(op)) {
      pin.getResult().replaceAllUsesWith(pin.getInput());
      pin.erase();
      continue;
    }
    // Operands: the layout the op consumes (a partial one as its sum).
    builder.setInsertionPoint(&op);
    SmallVector<LayoutAttr> operandLayouts =
        layoutsOf(&op, TPDialect::getOperandLayoutsAttrName());
    for (auto [i, layout] : llvm::enumerate(operandLayouts)) {
      if (!layout || i >= op.getNumOperands() ||
          !isa<RankedTensorType>(op.getOperand(i).getType()))
        continue;
      FailureOr<Value> annotated = annotate(builder, op.getLoc(),
                                            op.getOperand(i), layout,
                                            /*forUsers=*/true, &op);
      if (failed(annotated))
        return failure();
      op.setOperand(i, *annotated);
    }
    // Results: the layout the op produces.
    builder.setInsertionPointAfter(&op);
    SmallVector<LayoutAttr> resultLayouts =
        layoutsOf(&op, TPDialect::getResultLayoutsAttrName());
    for (auto [i, layout] : llvm::enumerate(resultLayouts)) {
      if (!layout || i >= op.getNumResults() ||
          !isa<RankedTensorType>(op.getResult(i).getType()))
        continue;
      Value result = op.getResult(i);
      FailureOr<Value> annotated = annotate(builder, op.getLoc(), result,
                                            layout, /*forUsers=*/false, &op);
      if (failed(annotated))
        return failure();
      result.replaceAllUsesExcept(*annotated, annotated->getDefiningOp());
    }
  }
  return success();
}

/// Removes every `tp.` attribute of `op` (and, on a function, of its
/// arguments and results).
static void stripTPAttrs(Operation *op) {
  SmallVector<StringAttr> names;
  for (NamedAttribute attr : op->getDiscardableAttrs())
    if (attr.getName().getValue().starts_with("tp."))
      names.push_back(attr.getName());
  for (StringAttr name : names)
    op->removeDiscardableAttr(name);
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    return;
  auto strip = [](DictionaryAttr attrs) {
    NamedAttrList kept;
    if (attrs)
      for (NamedAttribute attr : attrs)
        if (!attr.getName().getValue().starts_with("tp."))
          kept.push_back(attr);
    return kept.getDictionary(attrs ? attrs.getContext() : nullptr);
  };
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (DictionaryAttr attrs = func.getArgAttrDict(i))
      func.setArgAttrs(i, strip(attrs));
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (DictionaryAttr attrs = func.getResultAttrDict(i))
      func.setResultAttrs(i, strip(attrs));
}

void ExportShardPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTableCollection symbolTables;
  symbols = &symbolTables;

  // A planned, unpartitioned program: meshes and pins, no collectives.
  SmallVector<MeshOp> meshes;
  WalkResult walk = module.walk([&](Operation *op) {
    if (auto mesh = dyn_cast<MeshOp>(op)) {
      meshes.push_back(mesh);
      return WalkResult::advance();
    }
    if (isa<AnnotateOp>(op) || !isa_and_nonnull<TPDialect>(op->getDialect()))
      return WalkResult::advance();
    op->emitOpError() << "cannot be exported: tp-export-shard expects a "
                         "planned, unpartitioned program (run it after "
                         "--tp-propagate, before --tp-partition)";
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
  if (meshes.empty()) {
    module.emitError() << "tp-export-shard: the module has no tp.mesh; run "
                          "--tp-propagate first";
    return signalPassFailure();
  }

  for (auto func : module.getOps<func::FuncOp>())
    if (failed(exportFunc(func)))
      return signalPassFailure();

  module.walk([](Operation *op) { stripTPAttrs(op); });

  // Meshes last: the layouts above looked their axes up.
  for (MeshOp mesh : meshes) {
    OpBuilder builder(mesh);
    shard::GridOp::create(builder, mesh.getLoc(), mesh.getSymNameAttr(),
                          mesh.getShapeAttr());
    mesh.erase();
  }
}
