//===- ImportShard.cpp - upstream shard annotations as tp pins --*- C++ -*-===//
//
// `--tp-import-shard`: IR annotated with upstream MLIR's `shard` dialect
// (`shard.grid`, `shard.sharding`, `shard.shard`) becomes the planner's
// input vocabulary: a `tp.mesh` per grid, a `tp.layout` argument or result
// attribute for an annotated function argument or returned value, and a
// `tp.annotate` pin for any other annotated value. docs/passes/import-shard.md.
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
#define GEN_PASS_DEF_IMPORTSHARDPASS
#include "tp/Dialect/TP/Transforms/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

/// The name tp-import-shard gives axis `index` of an imported grid.
static std::string axisName(int64_t index) {
  return "axis" + std::to_string(index);
}

/// Rejects what has no `tp` counterpart, before anything is rewritten.
static LogicalResult checkSupported(Operation *op) {
  if (auto grid = dyn_cast<shard::GridOp>(op)) {
    if (llvm::any_of(grid.getShape(), ShapedType::isDynamic))
      return grid.emitOpError()
             << "has a dynamic axis size; tp-import-shard imports static "
                "grids only";
    return success();
  }
  if (auto sharding = dyn_cast<shard::ShardingOp>(op)) {
    if (!sharding.getStaticHaloSizes().empty() ||
        !sharding.getDynamicHaloSizes().empty())
      return sharding.emitOpError()
             << "has halo sizes, which tp-import-shard does not support";
    if (!sharding.getStaticShardedDimsOffsets().empty() ||
        !sharding.getDynamicShardedDimsOffsets().empty())
      return sharding.emitOpError()
             << "has sharded dims offsets, which tp-import-shard does not "
                "support (tp layouts split into equal blocks)";
    for (Operation *user : sharding->getUsers())
      if (!isa<shard::ShardOp>(user))
        return user->emitOpError()
               << "uses a shard.sharding; tp-import-shard imports shardings "
                  "used by shard.shard only";
    return success();
  }
  if (auto annotation = dyn_cast<shard::ShardOp>(op)) {
    if (!annotation.getSharding().getDefiningOp<shard::ShardingOp>())
      return annotation.emitOpError()
             << "takes a sharding that no shard.sharding op defines; "
                "tp-import-shard imports only static shard.sharding ops";
    return success();
  }
  return op->emitOpError()
         << "is not supported by tp-import-shard (it imports shard.grid, "
            "shard.sharding and shard.shard only)";
}

/// The layout that `sharding` gives a value of type `type`.
static FailureOr<LayoutAttr> toLayout(shard::ShardOp annotation,
                                      shard::ShardingOp sharding,
                                      RankedTensorType type) {
  MLIRContext *ctx = annotation.getContext();
  shard::GridAxesArrayAttr splitAxes = sharding.getSplitAxes();
  if (static_cast<int64_t>(splitAxes.size()) > type.getRank())
    return annotation.emitOpError()
           << "splits " << splitAxes.size() << " dimensions of a rank-"
           << type.getRank() << " tensor";
  SmallVector<SmallVector<StringAttr>> dims(type.getRank());
  for (auto [dim, axes] : llvm::enumerate(splitAxes.getAxes()))
    for (shard::GridAxis axis : axes.asArrayRef())
      dims[dim].push_back(StringAttr::get(ctx, axisName(axis)));
  auto layout = LayoutAttr::get(ctx, sharding.getGridAttr(), dims);
  if (failed(verifyLayoutForType(layout, type, annotation, [&] {
        return annotation.emitOpError() << "imports as " << layout << ": ";
      })))
    return failure();
  return layout;
}

/// Sets `tp.layout` at `index` of `func`'s arguments or results; a different
/// layout already there is an error.
static LogicalResult pinBoundary(shard::ShardOp annotation, func::FuncOp func,
                                 bool result, unsigned index,
                                 LayoutAttr layout) {
  StringRef name = TPDialect::getLayoutAttrName();
  Attribute old = result ? func.getResultAttr(index, name)
                         : func.getArgAttr(index, name);
  if (old && old != layout)
    return annotation.emitOpError()
           << "gives " << (result ? "result" : "argument") << " #" << index
           << " of '" << func.getSymName() << "' the layout " << layout
           << ", but it already has " << old;
  if (result)
    func.setResultAttr(index, name, layout);
  else
    func.setArgAttr(index, name, layout);
  return success();
}

namespace {
struct ImportShardPass
    : public tp::impl::ImportShardPassBase<ImportShardPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<shard::GridOp> grids;
    SmallVector<shard::ShardOp> annotations;
    SmallVector<shard::ShardingOp> shardings;
    bool ok = true;
    module.walk([&](Operation *op) {
      if (!isa_and_nonnull<shard::ShardDialect>(op->getDialect()))
        return;
      if (failed(checkSupported(op))) {
        ok = false;
        return;
      }
      if (auto grid = dyn_cast<shard::GridOp>(op))
        grids.push_back(grid);
      else if (auto annotation = dyn_cast<shard::ShardOp>(op))
        annotations.push_back(annotation);
      else
        shardings.push_back(cast<shard::ShardingOp>(op));
    });
    if (!ok)
      return signalPassFailure();

    // Grids: the same symbol and sizes, axes named axis0, axis1, ...
    for (shard::GridOp grid : grids) {
      OpBuilder builder(grid);
      SmallVector<Attribute> names;
      for (int64_t i = 0, e = grid.getRank(); i < e; ++i)
        names.push_back(builder.getStringAttr(axisName(i)));
      MeshOp::create(builder, grid.getLoc(), grid.getSymNameAttr(),
                     builder.getArrayAttr(names), grid.getShapeAttr());
      grid.erase();
    }

    // Annotations, in program order (a chain of them sees its source pinned).
    // `own`: the layout a non-for-users annotation gave a value (and the pin
    // or argument that now stands for it).
    DenseMap<Value, LayoutAttr> own;
    for (shard::ShardOp annotation : annotations) {
      Value source = annotation.getSrc();
      auto type = cast<RankedTensorType>(source.getType());
      auto sharding = annotation.getSharding().getDefiningOp<shard::ShardingOp>();
      FailureOr<LayoutAttr> layout = toLayout(annotation, sharding, type);
      if (failed(layout))
        return signalPassFailure();

      // A tp pin fixes the value itself: a consumer-side sharding that
      // differs from the value's own one (an explicit resharding) has none.
      if (annotation.getAnnotateForUsers()) {
        LayoutAttr producer = own.lookup(source);
        if (producer && producer != *layout) {
          annotation.emitOpError()
              << "asks for " << *layout << " for the users of a value sharded "
              << producer << "; tp-import-shard does not import resharding "
                 "annotations (the planner chooses where to reshard)";
          return signalPassFailure();
        }
      }

      // An argument's own sharding: the argument's stored layout.
      auto arg = dyn_cast<BlockArgument>(source);
      auto argFunc =
          arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
      if (!annotation.getAnnotateForUsers() && argFunc &&
          arg.getOwner()->isEntryBlock()) {
        if (failed(pinBoundary(annotation, argFunc, /*result=*/false,
                               arg.getArgNumber(), *layout)))
          return signalPassFailure();
        own[source] = *layout;
        annotation.getResult().replaceAllUsesWith(source);
        annotation.erase();
        continue;
      }

      // A returned value: the function's result layout.
      bool otherUses = false;
      for (OpOperand &use :
           llvm::make_early_inc_range(annotation.getResult().getUses())) {
        auto ret = dyn_cast<func::ReturnOp>(use.getOwner());
        auto retFunc = ret ? dyn_cast<func::FuncOp>(ret->getParentOp())
                           : nullptr;
        if (!retFunc) {
          otherUses = true;
          continue;
        }
        if (failed(pinBoundary(annotation, retFunc, /*result=*/true,
                               use.getOperandNumber(), *layout)))
          return signalPassFailure();
        use.set(source);
      }

      // Any other use: a pin on the value.
      if (otherUses) {
        OpBuilder builder(annotation);
        auto pin =
            AnnotateOp::create(builder, annotation.getLoc(), type, source, *layout);
        annotation.getResult().replaceAllUsesWith(pin.getResult());
        if (!annotation.getAnnotateForUsers())
          own[pin.getResult()] = *layout;
      }
      annotation.erase();
    }

    for (shard::ShardingOp sharding : shardings)
      sharding.erase(); // checkSupported: only shard.shard ops used it

  }
};
} // namespace
