//===- Partition.cpp - the tp-partition pass --------------------*- C++ -*-===//
//
// Turns a planned function (global shapes, `tp.layout` on arguments and
// results, `tp.operand_layouts` / `tp.result_layouts` / `tp.captured_layouts`
// on ops) into the program every device runs (local shapes, tp collectives).
//
// One walk over the body in order, with a map from each original value to
// its local value and that value's layout:
//  1. Arguments take their local type; `tp.global_shape` keeps the global
//     one for the runtime.
//  2. Every op first *resolves* its operands and captured tensors: the local
//     value of the operand, resharded (emitReshard, the planner's own
//     sequence of collectives) when its layout differs from the one the op
//     consumes. Reshards of the same value to the same layout are shared.
//  3. The op is cloned onto the resolved operands and its results retyped to
//     the local shapes of their layouts; ops carrying static sizes
//     (expand_shape, extract_slice, insert_slice) get local sizes.
//  4. Rank-dependent bodies are fixed: `linalg.index` of a split loop is
//     offset by `tp.axis_index x local size`; a tensor captured by the body
//     and split is read at local coordinates, and where the row comes from
//     data (a token id) the lookup is masked (rows this device does not hold
//     read 0, so the partial sums add up to the lookup); a reduction over a
//     padded split loop skips the padding (the accumulator is yielded
//     unchanged there), so padding never reaches a sum or a max. A
//     contraction instead keeps its form (named ops stay named, so they
//     still become GEMMs): its inputs are copied with zeros in the padding.
//  5. `tp.annotate` becomes its (resolved) operand; `func.return` resolves
//     its operands to the result layouts, and the function type follows.
// The planner's attributes are dropped; `--tp-verify-partitioned` checks
// that nothing of the global program is left.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/Passes.h"

#include "tp/Dialect/TP/IR/InputChecks.h"
#include "tp/Dialect/TP/IR/TPOps.h"
#include "tp/Dialect/TP/Transforms/ReshardUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "tp-partition"

namespace mlir::tp {
#define GEN_PASS_DEF_PARTITIONPASS
#include "tp/Dialect/TP/Transforms/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {

/// How one loop of a linalg op is split on this device.
struct LoopSplit {
  SmallVector<StringAttr> axes;
  int64_t globalSize = 0;
  int64_t localSize = 0;
  bool padded() const { return localSize * groupSize != globalSize; }
  int64_t groupSize = 1;
};

class FunctionPartitioner {
public:
  FunctionPartitioner(func::FuncOp func, MeshOp mesh)
      : func(func), mesh(mesh),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())) {}

  LogicalResult run();

private:
  FailureOr<Value> resolve(OpBuilder &builder, Location loc, Value original,
                           LayoutAttr want);
  LogicalResult partitionOp(Operation *op);
  LogicalResult fixLinalgBody(linalg::LinalgOp newOp, linalg::LinalgOp oldOp,
                              ArrayRef<LayoutAttr> operandLayouts,
                              ArrayRef<std::pair<Value, LayoutAttr>> captured,
                              bool maskPaddedReductions);
  SmallVector<LoopSplit> loopSplits(linalg::LinalgOp oldOp,
                                    ArrayRef<LayoutAttr> operandLayouts);
  void zeroPaddedOperands(linalg::LinalgOp newOp, linalg::LinalgOp oldOp,
                          ArrayRef<LoopSplit> loops);
  SmallVector<int64_t> globalLoopRanges(linalg::LinalgOp op);
  /// The type `value` has in the global program (arguments are retyped in
  /// place, so theirs is remembered).
  Type globalTypeOf(Value value) {
    Type type = globalTypes.lookup(value);
    return type ? type : value.getType();
  }
  Value axisOffset(OpBuilder &builder, Location loc,
                   ArrayRef<StringAttr> axes, int64_t localSize);
  RankedTensorType localType(Type globalType, LayoutAttr layout);

  func::FuncOp func;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  /// Original value -> its local value.
  IRMapping mapping;
  /// Local value -> its layout.
  DenseMap<Value, LayoutAttr> layoutOf;
  /// Global types of the arguments (retyped in place).
  DenseMap<Value, Type> globalTypes;
  /// (original value, layout) -> resharded local value.
  DenseMap<std::pair<Value, Attribute>, Value> reshards;
};

} // namespace

RankedTensorType FunctionPartitioner::localType(Type globalType,
                                                LayoutAttr layout) {
  auto type = cast<RankedTensorType>(globalType);
  return type.clone(getLocalShape(type.getShape(), layout, mesh));
}

FailureOr<Value> FunctionPartitioner::resolve(OpBuilder &builder, Location loc,
                                              Value original, LayoutAttr want) {
  Value local = mapping.lookupOrDefault(original);
  LayoutAttr have = layoutOf.lookup(local);
  if (!want || !have || have == want)
    return local;
  auto key = std::make_pair(original, Attribute(want));
  if (Value cached = reshards.lookup(key))
    return cached;
  // Arguments were retyped to their local shapes; their global types are
  // remembered.
  auto type = cast<RankedTensorType>(globalTypeOf(original));
  FailureOr<Value> resharded =
      emitReshard(builder, loc, local, have, want, type.getShape(), mesh);
  if (failed(resharded))
    return emitError(loc) << "cannot reshard a value from " << have << " to "
                          << want;
  layoutOf[*resharded] = want;
  reshards[key] = *resharded;
  return *resharded;
}

Value FunctionPartitioner::axisOffset(OpBuilder &builder, Location loc,
                                      ArrayRef<StringAttr> axes,
                                      int64_t localSize) {
  SmallVector<Attribute> names(axes.begin(), axes.end());
  Value index = AxisIndexOp::create(builder, loc, builder.getIndexType(),
                                    meshRef, builder.getArrayAttr(names));
  Value size = arith::ConstantIndexOp::create(builder, loc, localSize);
  return arith::MulIOp::create(builder, loc, index, size);
}

static ArrayAttr getLayouts(Operation *op, StringRef name) {
  return op->getAttrOfType<ArrayAttr>(name);
}

static LayoutAttr layoutAt(ArrayAttr layouts, unsigned i) {
  if (!layouts || i >= layouts.size())
    return nullptr;
  return dyn_cast<LayoutAttr>(layouts[i]);
}

/// The loop ranges of a linalg op of the global program, read off the global
/// types of its operands (arguments were already retyped).
SmallVector<int64_t>
FunctionPartitioner::globalLoopRanges(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges(op.getNumLoops(), ShapedType::kDynamic);
  for (OpOperand &operand : op->getOpOperands()) {
    auto tensor = dyn_cast<RankedTensorType>(globalTypeOf(operand.get()));
    if (!tensor)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [j, expr] : llvm::enumerate(map.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        if (ShapedType::isDynamic(ranges[dim.getPosition()]))
          ranges[dim.getPosition()] = tensor.getDimSize(j);
  }
  return ranges;
}

/// Which loops of `oldOp` are split, from the operand layouts and indexing
/// maps.
SmallVector<LoopSplit>
FunctionPartitioner::loopSplits(linalg::LinalgOp oldOp,
                                ArrayRef<LayoutAttr> operandLayouts) {
  SmallVector<int64_t> ranges = globalLoopRanges(oldOp);
  SmallVector<LoopSplit> loops(ranges.size());
  SmallVector<AffineMap> maps = oldOp.getIndexingMapsArray();
  for (OpOperand &operand : oldOp->getOpOperands()) {
    LayoutAttr layout = operandLayouts[operand.getOperandNumber()];
    if (!layout)
      continue;
    AffineMap map = maps[operand.getOperandNumber()];
    for (auto [j, expr] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim || !layout.isSplit(j))
        continue;
      LoopSplit &loop = loops[dim.getPosition()];
      if (!loop.axes.empty())
        continue;
      loop.axes = layout.getDimAxes(j);
      loop.globalSize = ranges[dim.getPosition()];
      loop.groupSize = *mesh.getGroupSize(loop.axes);
      loop.localSize = llvm::divideCeil(loop.globalSize, loop.groupSize);
    }
  }
  return loops;
}

/// A contraction over a padded split loop keeps its form (and so its GEMM):
/// each input that reads the padded loop is replaced by a copy whose padding
/// is zero (an elementwise generic selecting 0 where the loop's global index
/// is past its extent), so the padded terms of the sum are 0 * 0. Both
/// inputs are masked: padding holds whatever its producer computed there,
/// and 0 * inf or 0 * nan would not be 0.
void FunctionPartitioner::zeroPaddedOperands(linalg::LinalgOp newOp,
                                             linalg::LinalgOp oldOp,
                                             ArrayRef<LoopSplit> loops) {
  SmallVector<utils::IteratorType> iterators = oldOp.getIteratorTypesArray();
  Location loc = newOp.getLoc();
  OpBuilder outside(newOp);
  DenseMap<int64_t, Value> offsets;
  for (OpOperand *operand : newOp.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand->get().getType());
    if (!type)
      continue;
    // (operand dimension, loop) pairs that are padded reductions.
    SmallVector<std::pair<int64_t, int64_t>> padded;
    AffineMap map = newOp.getMatchingIndexingMap(operand);
    for (auto [j, expr] : llvm::enumerate(map.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
        const LoopSplit &loop = loops[dim.getPosition()];
        if (!loop.axes.empty() && loop.padded() &&
            iterators[dim.getPosition()] == utils::IteratorType::reduction)
          padded.push_back({int64_t(j), int64_t(dim.getPosition())});
      }
    if (padded.empty())
      continue;
    for (auto [j, d] : padded)
      if (!offsets.count(d))
        offsets[d] =
            axisOffset(outside, loc, loops[d].axes, loops[d].localSize);
    Value empty = tensor::EmptyOp::create(outside, loc, type.getShape(),
                                          type.getElementType());
    AffineMap id = outside.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> parallel(type.getRank(),
                                              utils::IteratorType::parallel);
    auto mask = linalg::GenericOp::create(
        outside, loc, type, ValueRange{operand->get()}, ValueRange{empty},
        ArrayRef<AffineMap>{id, id}, parallel,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value keep;
          for (auto [j, d] : padded) {
            Value local = linalg::IndexOp::create(b, l, j);
            Value global = arith::AddIOp::create(b, l, local, offsets[d]);
            Value bound =
                arith::ConstantIndexOp::create(b, l, loops[d].globalSize);
            Value ok = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                             global, bound);
            keep = keep ? arith::AndIOp::create(b, l, keep, ok).getResult()
                        : ok;
          }
          Value zero = createIdentity(b, l, ReductionKind::Sum,
                                      type.getElementType());
          Value value = arith::SelectOp::create(b, l, keep, args[0], zero);
          linalg::YieldOp::create(b, l, value);
        });
    operand->set(mask.getResult(0));
  }
}

LogicalResult FunctionPartitioner::fixLinalgBody(
    linalg::LinalgOp newOp, linalg::LinalgOp oldOp,
    ArrayRef<LayoutAttr> operandLayouts,
    ArrayRef<std::pair<Value, LayoutAttr>> captured,
    bool maskPaddedReductions) {
  SmallVector<LoopSplit> loops = loopSplits(oldOp, operandLayouts);
  Block *body = newOp.getBlock();
  Location loc = newOp.getLoc();
  OpBuilder outside(newOp);
  // Offsets are computed once, before the op.
  DenseMap<int64_t, Value> offsets;
  auto offsetOf = [&](int64_t d) {
    auto it = offsets.find(d);
    if (it != offsets.end())
      return it->second;
    Value offset =
        axisOffset(outside, loc, loops[d].axes, loops[d].localSize);
    offsets[d] = offset;
    return offset;
  };

  // 1. linalg.index of a split loop: global index = local + offset.
  SmallVector<linalg::IndexOp> indexOps;
  body->walk([&](linalg::IndexOp index) { indexOps.push_back(index); });
  // Loop indices as the body read them before (global loop coordinates).
  DenseSet<Value> loopIndices;
  for (linalg::IndexOp index : indexOps)
    loopIndices.insert(index);
  for (linalg::IndexOp index : indexOps) {
    int64_t d = index.getDim();
    if (d >= int64_t(loops.size()) || loops[d].axes.empty())
      continue;
    OpBuilder inside(index->getBlock(), std::next(index->getIterator()));
    Value global =
        arith::AddIOp::create(inside, index.getLoc(), index, offsetOf(d));
    index.getResult().replaceAllUsesExcept(global, global.getDefiningOp());
    loopIndices.insert(global);
  }

  // 2. Captured tensors: read at local coordinates; data-dependent rows of
  //    a split dimension are masked.
  SmallVector<tensor::ExtractOp> extracts;
  body->walk([&](tensor::ExtractOp extract) { extracts.push_back(extract); });
  for (tensor::ExtractOp extract : extracts) {
    const auto *entry = llvm::find_if(captured, [&](auto &c) {
      return c.first == extract.getTensor();
    });
    if (entry == captured.end() || !entry->second)
      continue;
    LayoutAttr layout = entry->second;
    OpBuilder inside(extract);
    Location eloc = extract.getLoc();
    Value inRange;
    SmallVector<Value> indices(extract.getIndices());
    for (auto [d, index] : llvm::enumerate(indices)) {
      if (!layout.isSplit(d))
        continue;
      SmallVector<StringAttr> axes = layout.getDimAxes(d);
      auto tableType = cast<RankedTensorType>(extract.getTensor().getType());
      int64_t localSize = tableType.getDimSize(d);
      Value offset = axisOffset(outside, loc, axes, localSize);
      Value localIndex = arith::SubIOp::create(inside, eloc, index, offset);
      // Rows indexed by a loop are in range by construction; rows from data
      // (token ids) may belong to another device.
      // (The sharding rule splits a loop-indexed dimension only where the
      // table and the loop have the same extent.)
      bool fromLoop = loopIndices.contains(index);
      if (!fromLoop) {
        Value size = arith::ConstantIndexOp::create(inside, eloc, localSize);
        Value ok = arith::CmpIOp::create(inside, eloc, arith::CmpIPredicate::ult,
                                         localIndex, size);
        Value zero = arith::ConstantIndexOp::create(inside, eloc, 0);
        localIndex = arith::SelectOp::create(inside, eloc, ok, localIndex, zero);
        inRange = inRange ? arith::AndIOp::create(inside, eloc, inRange, ok)
                                .getResult()
                          : ok;
      }
      indices[d] = localIndex;
    }
    extract.getIndicesMutable().assign(indices);
    if (inRange) {
      // The body is a pure map (isMaskableLookup in ShardingRules.cpp):
      // devices that do not hold the row yield 0, whatever the body
      // computes from the element, so the results are partial sums.
      auto yield = cast<linalg::YieldOp>(body->getTerminator());
      OpBuilder before(yield);
      Value yielded = yield.getOperand(0);
      Value zero = createIdentity(before, eloc, ReductionKind::Sum,
                                  yielded.getType());
      Value masked =
          arith::SelectOp::create(before, eloc, inRange, yielded, zero);
      yield->setOperand(0, masked);
    }
  }

  // 3. Reductions over a padded split loop skip the padding.
  SmallVector<utils::IteratorType> iterators = oldOp.getIteratorTypesArray();
  Value keep;
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  for (auto [d, loop] : llvm::enumerate(loops)) {
    if (!maskPaddedReductions || loop.axes.empty() || !loop.padded() ||
        iterators[d] != utils::IteratorType::reduction)
      continue;
    OpBuilder inside(yield);
    Value local = linalg::IndexOp::create(inside, loc, d);
    Value global = arith::AddIOp::create(inside, loc, local, offsetOf(d));
    Value bound = arith::ConstantIndexOp::create(inside, loc, loop.globalSize);
    Value ok = arith::CmpIOp::create(inside, loc, arith::CmpIPredicate::ult,
                                     global, bound);
    keep = keep ? arith::AndIOp::create(inside, loc, keep, ok).getResult() : ok;
  }
  if (keep) {
    OpBuilder inside(yield);
    SmallVector<Value> values;
    for (auto [value, out] :
         llvm::zip(yield.getOperands(), newOp.getRegionOutputArgs()))
      values.push_back(
          arith::SelectOp::create(inside, loc, keep, value, out));
    yield->setOperands(values);
  }
  return success();
}

LogicalResult FunctionPartitioner::partitionOp(Operation *op) {
  OpBuilder builder(op);
  Location loc = op->getLoc();

  if (auto annotate = dyn_cast<AnnotateOp>(op)) {
    FailureOr<Value> value =
        resolve(builder, loc, annotate.getInput(), annotate.getLayout());
    if (failed(value))
      return failure();
    mapping.map(annotate.getResult(), *value);
    return success();
  }

  ArrayAttr operandLayouts =
      getLayouts(op, TPDialect::getOperandLayoutsAttrName());
  ArrayAttr resultLayouts =
      getLayouts(op, TPDialect::getResultLayoutsAttrName());
  ArrayAttr capturedLayouts =
      getLayouts(op, TPDialect::getCapturedLayoutsAttrName());

  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    SmallVector<Value> operands;
    for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
      FailureOr<Value> value =
          resolve(builder, loc, operand, layoutAt(operandLayouts, i));
      if (failed(value))
        return failure();
      operands.push_back(*value);
    }
    func::ReturnOp::create(builder, loc, operands);
    return success();
  }

  // A tensor constant: a splat is rebuilt at the local shape; any other
  // value (a weight baked in, dense or dense_resource) stays whole in the
  // program and each device slices its block at run time, since one SPMD
  // program serves every device.
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    LayoutAttr layout = layoutAt(resultLayouts, 0);
    if (type && layout) {
      Value local;
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      LayoutAttr whole = LayoutAttr::getReplicated(meshRef, type.getRank());
      // (A splat is its own partial max or min; a partial sum only if 0.)
      bool resizable =
          dense && dense.isSplat() &&
          (!layout.isPartial() ||
           layout.getPartialKind() != ReductionKind::Sum ||
           matchPattern(constant.getResult(), m_AnyZeroFloat()) ||
           matchPattern(constant.getResult(), m_Zero()));
      if (resizable) {
        local = arith::ConstantOp::create(
            builder, loc, dense.resizeSplat(localType(type, layout)));
      } else {
        Value global = arith::ConstantOp::create(builder, loc,
                                                 constant.getValue());
        FailureOr<Value> sliced = emitReshard(builder, loc, global, whole,
                                              layout.withoutPartial(),
                                              type.getShape(), mesh);
        if (failed(sliced))
          return op->emitOpError() << "cannot slice a constant to " << layout;
        local = *sliced;
        if (layout.isPartial()) {
          FailureOr<Value> partial =
              emitReshard(builder, loc, local, layout.withoutPartial(),
                          layout, type.getShape(), mesh);
          if (failed(partial))
            return op->emitOpError()
                   << "cannot make a constant partial as " << layout;
          local = *partial;
        }
      }
      mapping.map(constant.getResult(), local);
      layoutOf[local] = layout;
      return success();
    }
  }

  // Resolve operands and captured tensors.
  IRMapping opMapping;
  SmallVector<LayoutAttr> consumed(op->getNumOperands());
  for (OpOperand &operand : op->getOpOperands()) {
    LayoutAttr want = layoutAt(operandLayouts, operand.getOperandNumber());
    consumed[operand.getOperandNumber()] = want;
    if (!isa<RankedTensorType>(operand.get().getType())) {
      opMapping.map(operand.get(), mapping.lookupOrDefault(operand.get()));
      continue;
    }
    if (!want && operandLayouts)
      return op->emitOpError() << "has no layout for operand #"
                               << operand.getOperandNumber();
    FailureOr<Value> value = resolve(builder, loc, operand.get(), want);
    if (failed(value))
      return failure();
    opMapping.map(operand.get(), *value);
  }
  SmallVector<std::pair<Value, LayoutAttr>> captured;
  for (auto [k, value] : llvm::enumerate(getCapturedTensors(op))) {
    LayoutAttr want = layoutAt(capturedLayouts, k);
    FailureOr<Value> local = resolve(builder, loc, value, want);
    if (failed(local))
      return failure();
    opMapping.map(value, *local);
    captured.push_back({*local, want});
  }
  // Scalars defined before the op and used in its regions.
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (!opMapping.contains(v) && mapping.contains(v))
        opMapping.map(v, mapping.lookup(v));
  });

  Operation *clone = builder.clone(*op, opMapping);
  clone->removeAttr(TPDialect::getOperandLayoutsAttrName());
  clone->removeAttr(TPDialect::getResultLayoutsAttrName());
  clone->removeAttr(TPDialect::getCapturedLayoutsAttrName());

  // Results take their local types (ops without a plan keep theirs).
  for (auto [r, result] : llvm::enumerate(clone->getResults())) {
    LayoutAttr layout = layoutAt(resultLayouts, r);
    if (!layout || !isa<RankedTensorType>(result.getType()))
      continue;
    result.setType(localType(globalTypeOf(op->getResult(r)), layout));
  }

  // Static sizes carried by attributes.
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(clone)) {
    expand.setStaticOutputShape(expand.getResultType().getShape());
  } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(clone)) {
    // Split dimensions are whole ones: their size is the local size.
    auto source = cast<RankedTensorType>(slice.getSource().getType());
    SmallVector<int64_t> sizes(slice.getStaticSizes());
    for (int64_t d = 0; d < source.getRank(); ++d)
      if (!ShapedType::isDynamic(sizes[d]) &&
          sizes[d] == cast<RankedTensorType>(globalTypeOf(op->getOperand(0)))
                          .getDimSize(d))
        sizes[d] = source.getDimSize(d);
    slice.setStaticSizes(sizes);
  } else if (auto insert = dyn_cast<tensor::InsertSliceOp>(clone)) {
    auto dest = cast<RankedTensorType>(insert.getDest().getType());
    SmallVector<int64_t> sizes(insert.getStaticSizes());
    for (int64_t d = 0; d < dest.getRank(); ++d)
      if (!ShapedType::isDynamic(sizes[d]) &&
          sizes[d] == cast<RankedTensorType>(globalTypeOf(op->getOperand(1)))
                          .getDimSize(d))
        sizes[d] = dest.getDimSize(d);
    insert.setStaticSizes(sizes);
  } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(clone)) {
    // A reduction split with padding must not see the padding. Contractions
    // (named or generic) get inputs whose padding is zero and keep their
    // form, so they still become GEMMs; other named ops become generics
    // whose body skips the padding.
    auto oldLinalg = cast<linalg::LinalgOp>(op);
    SmallVector<LayoutAttr> layouts(consumed);
    SmallVector<LoopSplit> loops = loopSplits(oldLinalg, layouts);
    SmallVector<utils::IteratorType> iters = oldLinalg.getIteratorTypesArray();
    bool paddedReduction = false;
    for (auto [d, loop] : llvm::enumerate(loops))
      if (!loop.axes.empty() && loop.padded() &&
          iters[d] == utils::IteratorType::reduction)
        paddedReduction = true;
    bool zeroPadding =
        paddedReduction && linalg::isaContractionOpInterface(oldLinalg);
    if (zeroPadding) {
      zeroPaddedOperands(linalgOp, oldLinalg, loops);
    } else if (paddedReduction && !isa<linalg::GenericOp>(clone)) {
      IRRewriter rewriter(clone->getContext());
      rewriter.setInsertionPoint(clone);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, linalgOp);
      if (failed(generic))
        return op->emitOpError()
               << "splits a reduction unevenly and cannot be generalised to "
                  "mask its padding";
      clone = *generic;
      linalgOp = cast<linalg::LinalgOp>(clone);
    }
    if (linalgOp.getBlock() &&
        failed(fixLinalgBody(linalgOp, oldLinalg, layouts, captured,
                             /*maskPaddedReductions=*/!zeroPadding)))
      return failure();
  }

  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    Value local = clone->getResult(r);
    mapping.map(result, local);
    if (LayoutAttr layout = layoutAt(resultLayouts, r))
      layoutOf[local] = layout;
    else if (auto type = dyn_cast<RankedTensorType>(local.getType()))
      layoutOf[local] = LayoutAttr::getReplicated(meshRef, type.getRank());
  }
  return success();
}

LogicalResult FunctionPartitioner::run() {
  Block &block = func.getBody().front();
  MLIRContext *ctx = func.getContext();

  // 1. Arguments.
  for (BlockArgument arg : block.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    unsigned i = arg.getArgNumber();
    auto layout =
        func.getArgAttrOfType<LayoutAttr>(i, TPDialect::getLayoutAttrName());
    if (!layout) {
      layout = LayoutAttr::getReplicated(meshRef, type.getRank());
      func.setArgAttr(i, TPDialect::getLayoutAttrName(), layout);
    }
    func.setArgAttr(i, TPDialect::getGlobalShapeAttrName(),
                    DenseI64ArrayAttr::get(ctx, type.getShape()));
    globalTypes[arg] = type;
    arg.setType(localType(type, layout));
    layoutOf[arg] = layout;
  }

  // 2-5. Ops, in order.
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(partitionOp(op)))
      return failure();
  for (Operation *op : llvm::reverse(ops)) {
    op->dropAllUses();
    op->erase();
  }

  // The function type and the results' global meaning.
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  SmallVector<Type> argTypes(block.getArgumentTypes());
  SmallVector<Type> resultTypes(ret.getOperandTypes());
  SmallVector<Type> globalResults(func.getResultTypes());
  func.setType(FunctionType::get(ctx, argTypes, resultTypes));
  for (auto [i, type] : llvm::enumerate(globalResults)) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      continue;
    if (!func.getResultAttr(i, TPDialect::getLayoutAttrName()))
      func.setResultAttr(i, TPDialect::getLayoutAttrName(),
                         layoutOf.lookup(ret.getOperand(i)));
    func.setResultAttr(i, TPDialect::getGlobalShapeAttrName(),
                       DenseI64ArrayAttr::get(ctx, tensor.getShape()));
  }
  return success();
}

namespace {
struct PartitionPass : public tp::impl::PartitionPassBase<PartitionPass> {
  using Base::Base;

  /// Local shapes are computed from static global ones: dynamic and unranked
  /// tensors are rejected up front, naming the first value that has one (the
  /// planner keeps dynamic dimensions whole, but the partitioner cannot yet
  /// record their global extents).
  LogicalResult checkStaticShapes(ModuleOp module) {
    auto isStatic = [](Type type) {
      if (isa<UnrankedTensorType>(type))
        return false;
      auto ranked = dyn_cast<RankedTensorType>(type);
      return !ranked || ranked.hasStaticShape();
    };
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      for (BlockArgument arg : func.getArguments())
        if (!isStatic(arg.getType()))
          return emitError(func.getLoc())
                 << "tp-partition: argument #" << arg.getArgNumber() << " of '"
                 << func.getSymName() << "' has the dynamic shape "
                 << arg.getType()
                 << "; tp-opt plans static shapes only (specialise the "
                    "function to the shapes it runs with)";
      WalkResult result = func.walk([&](Operation *op) {
        for (OpResult value : op->getResults())
          if (!isStatic(value.getType())) {
            op->emitError() << "tp-partition: result #"
                            << value.getResultNumber() << " has the dynamic shape "
                            << value.getType()
                            << "; tp-opt plans static shapes only";
            return WalkResult::interrupt();
          }
        return WalkResult::advance();
      });
      if (result.wasInterrupted())
        return failure();
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkStaticShapes(module)))
      return signalPassFailure();
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (!func.getBody().hasOneBlock()) {
        func.emitError() << "tp-partition supports functions with a single "
                            "block";
        return signalPassFailure();
      }
      if (failed(checkGlobalProgram(func, getArgument())))
        return signalPassFailure();
      // The mesh: the one the plan's layouts name.
      MeshOp mesh;
      auto visit = [&](Attribute attr) {
        if (auto layout = dyn_cast_or_null<LayoutAttr>(attr))
          if (!mesh)
            mesh = lookupMesh(func, layout.getMesh());
      };
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        visit(func.getArgAttr(i, TPDialect::getLayoutAttrName()));
      func.walk([&](Operation *op) {
        if (auto layouts = op->getAttrOfType<ArrayAttr>(
                TPDialect::getResultLayoutsAttrName()))
          for (Attribute a : layouts)
            visit(a);
      });
      if (!mesh) {
        // A function without tensors (`func.func @g() { return }`) has
        // nothing to plan and nothing to partition.
        auto isTensor = [](Type t) { return isa<TensorType>(t); };
        bool tensors = llvm::any_of(func.getArgumentTypes(), isTensor) ||
                       llvm::any_of(func.getResultTypes(), isTensor);
        func.walk([&](Operation *op) {
          tensors |= llvm::any_of(op->getResultTypes(), isTensor);
        });
        if (!tensors)
          continue;
        func.emitError() << "tp-partition: function '" << func.getSymName()
                         << "' has no plan (run --tp-propagate first)";
        return signalPassFailure();
      }
      if (failed(FunctionPartitioner(func, mesh).run()))
        return signalPassFailure();
    }
  }
};
} // namespace
