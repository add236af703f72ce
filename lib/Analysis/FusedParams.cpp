//===- FusedParams.cpp - fused projections split into their pieces --------===//
//
// Phase 0 of the planner, after rematerialisation (FusedParams.h says why).
//
// 1. Slices move up. Rounds over the body, consumers first: a value whose
//    every use is a one-dimension `tensor.extract_slice` (the pieces of a
//    fused projection's product) and whose producer can compute a slice of
//    its result on its own (sliceOf) is replaced, slice by slice, by copies
//    of the producer on sliced operands; the slices this creates on the
//    operands are the next round's candidates. Through GPT-2's Conv1D this
//    walks expand_shape -> bias add -> (matmul, broadcast of the bias) ->
//    the weight and the bias; through Phi-3's Linear it walks the transpose
//    of the [out, in] weight. Every copy computes exactly the elements the
//    slice kept, so the program's meaning is unchanged.
// 2. Weights split. A `tp.param` argument whose every use is such a slice
//    becomes one argument per distinct slice, carrying `tp.source` (the
//    block of the stored tensor it is) and the original's name.
// Rematerialisation runs first, so that the shared `outs` of torch-mlir IR
// are per op and cannot block a slice.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/FusedParams.h"

#include "tp/Dialect/TP/IR/TPDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::tp;

namespace {
struct Cut {
  int64_t dim, offset, size;
  bool operator<(const Cut &o) const {
    return std::tie(offset, size) < std::tie(o.offset, o.size);
  }
  bool operator==(const Cut &o) const {
    return dim == o.dim && offset == o.offset && size == o.size;
  }
};
} // namespace

/// The one dimension `slice` cuts (static, unit strides, same rank, every
/// other dimension whole), or nullopt.
static std::optional<Cut> cutOf(tensor::ExtractSliceOp slice) {
  RankedTensorType source = slice.getSourceType();
  if (!source.hasStaticShape() ||
      slice.getResultType().getRank() != source.getRank())
    return std::nullopt;
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  ArrayRef<int64_t> strides = slice.getStaticStrides();
  std::optional<Cut> cut;
  for (int64_t d = 0; d < source.getRank(); ++d) {
    if (ShapedType::isDynamic(offsets[d]) || ShapedType::isDynamic(sizes[d]) ||
        strides[d] != 1)
      return std::nullopt;
    if (offsets[d] == 0 && sizes[d] == source.getDimSize(d))
      continue;
    if (cut)
      return std::nullopt;
    cut = Cut{d, offsets[d], sizes[d]};
  }
  return cut;
}

/// The uses of `v` when every one is a cut of the same dimension and the
/// cuts cover it (the pieces of a fused value: q | k | v, gate | up). A
/// single cut that drops part of a value (the token shift of a loss) is no
/// fusion: moving it up would only give the ops above odd sizes.
static SmallVector<std::pair<tensor::ExtractSliceOp, Cut>> cutsOf(Value v) {
  SmallVector<std::pair<tensor::ExtractSliceOp, Cut>> cuts;
  for (OpOperand &use : v.getUses()) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(use.getOwner());
    std::optional<Cut> cut = slice ? cutOf(slice) : std::nullopt;
    if (!cut || (!cuts.empty() && cuts.front().second.dim != cut->dim))
      return {};
    cuts.push_back({slice, *cut});
  }
  if (cuts.size() < 2)
    return {};
  SmallVector<Cut> sorted;
  for (auto &entry : cuts)
    sorted.push_back(entry.second);
  llvm::sort(sorted);
  int64_t covered = 0;
  for (const Cut &cut : sorted) {
    if (cut.offset > covered)
      return {}; // a gap: part of the value is never used
    covered = std::max(covered, cut.offset + cut.size);
  }
  if (covered != cast<RankedTensorType>(v.getType()).getDimSize(
                     sorted.front().dim))
    return {};
  return cuts;
}

static RankedTensorType cutType(Type type, const Cut &cut) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[cut.dim] = cut.size;
  return tensor.clone(shape);
}

static Value makeSlice(OpBuilder &b, Location loc, Value v, const Cut &cut) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t s : type.getShape())
    sizes.push_back(b.getIndexAttr(s));
  offsets[cut.dim] = b.getIndexAttr(cut.offset);
  sizes[cut.dim] = b.getIndexAttr(cut.size);
  return tensor::ExtractSliceOp::create(b, loc, cutType(type, cut), v, offsets,
                                        sizes, strides);
}

/// The single reassociation group of `groups` holding `dim`, when it holds
/// nothing else.
static std::optional<int64_t>
aloneIn(ArrayRef<ReassociationIndices> groups, int64_t dim) {
  for (auto [g, group] : llvm::enumerate(groups))
    if (llvm::is_contained(group, dim))
      return group.size() == 1 ? std::optional<int64_t>(g) : std::nullopt;
  return std::nullopt;
}

/// Whether `op` can compute a cut of its (only) result on its own, and if
/// so (`build`), that computation.
static Value sliceOf(OpBuilder *b, Operation *op, const Cut &cut) {
  if (op->getNumResults() != 1)
    return nullptr;
  Location loc = op->getLoc();
  Type resultType = op->getResult(0).getType();
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    if (!empty.getType().hasStaticShape())
      return nullptr;
    if (!b)
      return empty;
    RankedTensorType type = cutType(resultType, cut);
    return tensor::EmptyOp::create(*b, loc, type.getShape(),
                                   type.getElementType());
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    SmallVector<ReassociationIndices> groups =
        expand.getReassociationIndices();
    std::optional<int64_t> g = aloneIn(groups, cut.dim);
    if (!g || !expand.getResultType().hasStaticShape())
      return nullptr;
    if (!b)
      return expand;
    Value src = makeSlice(*b, loc, expand.getSrc(), {*g, cut.offset, cut.size});
    return tensor::ExpandShapeOp::create(*b, loc, cutType(resultType, cut), src,
                                         groups);
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    if (groups[cut.dim].size() != 1)
      return nullptr;
    if (!b)
      return collapse;
    Value src = makeSlice(*b, loc, collapse.getSrc(),
                          {groups[cut.dim].front(), cut.offset, cut.size});
    return tensor::CollapseShapeOp::create(*b, loc, cutType(resultType, cut),
                                           src, groups);
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      linalgOp.getNumDpsInits() != 1)
    return nullptr;
  AffineMap resultMap =
      linalgOp.getIndexingMapMatchingResult(op->getResult(0));
  auto loop = dyn_cast<AffineDimExpr>(resultMap.getResult(cut.dim));
  if (!loop || linalgOp.getIteratorTypesArray()[loop.getPosition()] !=
                   utils::IteratorType::parallel)
    return nullptr;
  unsigned f = loop.getPosition();
  // The body must not read the loop's index (it would need an offset).
  if (Block *body = linalgOp.getBlock()) {
    bool readsIndex = false;
    body->walk([&](linalg::IndexOp index) {
      readsIndex |= index.getDim() == f;
    });
    if (readsIndex)
      return nullptr;
  }
  SmallVector<SmallVector<int64_t>> cutDims(op->getNumOperands());
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<RankedTensorType>(operand.get().getType()))
      continue;
    AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
    for (auto [j, expr] : llvm::enumerate(map.getResults())) {
      if (auto d = dyn_cast<AffineDimExpr>(expr); d && d.getPosition() == f)
        cutDims[operand.getOperandNumber()].push_back(j);
      else if (expr.isFunctionOfDim(f))
        return nullptr; // a window over the loop
    }
  }
  if (!b)
    return op->getResult(0);
  SmallVector<Value> operands;
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    for (int64_t j : cutDims[operand.getOperandNumber()])
      v = makeSlice(*b, loc, v, {j, cut.offset, cut.size});
    operands.push_back(v);
  }
  Operation *copy =
      mlir::clone(*b, op, TypeRange{cutType(resultType, cut)}, operands);
  return copy->getResult(0);
}

FusedParamStats mlir::tp::splitFusedParameters(func::FuncOp func) {
  FusedParamStats stats;
  if (!func.getBody().hasOneBlock())
    return stats;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (func.getResultAttr(r, TPDialect::getUpdatesAttrName()))
      return stats;
  Block &block = func.getBody().front();

  // 1. Slices move up, consumers first, until nothing moves.
  for (bool changed = true; changed;) {
    changed = false;
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      if (op->getNumResults() != 1)
        continue;
      auto cuts = cutsOf(op->getResult(0));
      if (cuts.empty() || !sliceOf(nullptr, op, cuts.front().second))
        continue;
      OpBuilder builder(op);
      for (auto &[slice, cut] : cuts) {
        Value piece = sliceOf(&builder, op, cut);
        slice.getResult().replaceAllUsesWith(piece);
        slice->erase();
      }
      op->erase();
      ++stats.opsSplit;
      changed = true;
    }
  }

  // 2. Weights whose every use is a cut become one argument per cut.
  for (int64_t i = int64_t(func.getNumArguments()) - 1; i >= 0; --i) {
    BlockArgument arg = func.getArgument(i);
    if (!func.getArgAttr(i, TPDialect::getParamAttrName()) ||
        func.getArgAttr(i, TPDialect::getLayoutAttrName()))
      continue;
    auto cuts = cutsOf(arg);
    if (cuts.empty())
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    NamedAttrList attrs(func.getArgAttrDict(i));
    if (!attrs.get(TPDialect::getNameAttrName())) {
      std::string name = ("arg" + Twine(i)).str();
      if (auto loc = dyn_cast<NameLoc>(arg.getLoc()))
        name = loc.getName().str();
      attrs.set(TPDialect::getNameAttrName(),
                StringAttr::get(func.getContext(), name));
    }
    SmallVector<Cut> pieces;
    for (auto &entry : cuts)
      if (!llvm::is_contained(pieces, entry.second))
        pieces.push_back(entry.second);
    llvm::sort(pieces);
    Builder b(func.getContext());
    for (auto [k, piece] : llvm::enumerate(pieces)) {
      // Offsets into the stored tensor: a piece of a piece adds up.
      SmallVector<int64_t> offsets(type.getRank(), 0);
      SmallVector<int64_t> stored(type.getShape());
      if (auto source = dyn_cast_or_null<DictionaryAttr>(
              attrs.get(TPDialect::getSourceAttrName()))) {
        offsets = SmallVector<int64_t>(
            source.getAs<DenseI64ArrayAttr>("offsets").asArrayRef());
        stored = SmallVector<int64_t>(
            source.getAs<DenseI64ArrayAttr>("shape").asArrayRef());
      }
      offsets[piece.dim] += piece.offset;
      NamedAttrList pieceAttrs = attrs;
      pieceAttrs.set(
          TPDialect::getSourceAttrName(),
          b.getDictionaryAttr(
              {b.getNamedAttr("offsets", b.getDenseI64ArrayAttr(offsets)),
               b.getNamedAttr("shape", b.getDenseI64ArrayAttr(stored))}));
      unsigned index = i + 1 + k;
      (void)func.insertArgument(index, cutType(type, piece),
                                pieceAttrs.getDictionary(func.getContext()),
                                arg.getLoc());
      BlockArgument pieceArg = func.getArgument(index);
      for (auto &[slice, cut] : cuts)
        if (cut == piece)
          slice.getResult().replaceAllUsesWith(pieceArg);
    }
    for (auto &entry : cuts)
      entry.first->erase();
    (void)func.eraseArgument(i);
    ++stats.paramsSplit;
    stats.pieces += pieces.size();
  }
  return stats;
}
