//===- FusedParams.cpp - fused projections split into their pieces --------===//
//
// Phase 0 of the planner, after rematerialisation (FusedParams.h says why).
//
// A *fused value* is one whose every use takes a disjoint-or-overlapping
// block of it along one dimension, the blocks together covering that
// dimension: the pieces of a fused projection's product (q | k | v of any
// widths, gate | up), or of a stack of experts. What reads a block is
// recognised by its meaning, not by its spelling: a `tensor.extract_slice`
// (same rank, or rank-reducing: `unbind`, `select`) that cuts one
// dimension, or a gather whose indices evaluate (IndexEvaluator, over its
// whole iteration space) to the loops of its own output plus constants
// (`x[..., [-2], :]`), which reads a block too.
//
// 0. Every use of a fused value becomes one form: a same-rank slice of
//    one dimension (a *cut*), followed by a `tensor.collapse_shape` where
//    the use dropped unit dimensions.
// 1. Cuts move up. Rounds over the body, consumers first: a fused value
//    whose producer can compute a cut of its result on its own (sliceOf)
//    is replaced, cut by cut, by copies of the producer on cut operands;
//    the cuts this creates on the operands are the next round's
//    candidates. Producers that can:
//    - a linalg op whose loop for the cut dimension is parallel; each
//      operand indexed by that loop is cut; a body that reads the loop's
//      index only to index a captured table (a gather of per-token expert
//      weights) reads a cut of the table instead;
//    - `tensor.expand_shape` / `collapse_shape` when the block is
//      contiguous in the other shape (every dimension before the cut one in
//      its reassociation group has extent 1; for a collapse, the cut is a
//      whole number of rows of the first non-unit dimension);
//    - `tensor.empty`; constants (the piece of the value, as a constant);
//    - `tensor.concat`: across its axis, the concat of the inputs' cuts;
//      along it, the inputs the block overlaps (one input, whole, when the
//      block is that input: gate | up of a `cat`).
//    A stack of weights spelt `concat` + `expand_shape` ([E * rows, cols]
//    to [E, rows, cols]: `torch.stack` of per-expert tensors) is first
//    rewritten into a concat of the reshaped inputs (stackConcats), so
//    that the rows' dimensions are not a minor factor of an opaque one.
//    Through GPT-2's Conv1D this walks expand_shape -> bias add -> (matmul,
//    broadcast of the bias) -> the weight and the bias; through a Linear it
//    walks the transpose of the [out, in] weight; through Falcon's
//    [tokens, heads + 2, head_dim] view the expand_shape; through a
//    batched expert matmul the gather of expert weights. Every copy
//    computes exactly the elements the cut kept, so the program's meaning
//    is unchanged.
// 2. Weights split. A `tp.param` argument that is a fused value becomes one
//    argument per distinct cut, carrying `tp.source` (the block of the
//    stored tensor it is) and the original's name; before the signature
//    changes, every argument gets its name written down (nameArguments), so
//    that `argN` keeps naming the N-th argument of the user's function.
// Steps 1 and 2 repeat until nothing changes: a piece may be cut again (an
// expert of a stack, then its gate | up), its offsets adding up.
// Rows of a *stack* (one-index cuts, as many as the dimension has: tp-gen's
// [hidden, 3, hidden] q/k/v, a loop over experts) move only through a
// reshape that merges them into larger blocks, and split an argument only
// where a row is cut again: the planner splits a stack's other dimensions
// for every row at once, and cutting it apart would only multiply ops.
// Rematerialisation runs first, so that the shared `outs` of torch-mlir IR
// are per op and cannot block a cut.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/FusedParams.h"

#include "tp/Dialect/TP/IR/TPDialect.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tp;

namespace {
/// A block of a value along one dimension.
struct Cut {
  int64_t dim, offset, size;
  bool operator<(const Cut &o) const {
    return std::tie(offset, size) < std::tie(o.offset, o.size);
  }
  bool operator==(const Cut &o) const {
    return dim == o.dim && offset == o.offset && size == o.size;
  }
};

/// One use of a fused value: the op that reads the block, and the block.
struct CutUse {
  Operation *op;
  Cut cut;
};
} // namespace

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

/// The block of its source that `slice` reads, when it cuts one dimension
/// (static, unit strides, every other dimension whole); the slice may drop
/// unit dimensions (rank-reducing).
static std::optional<Cut> cutOfSlice(tensor::ExtractSliceOp slice) {
  RankedTensorType source = slice.getSourceType();
  if (!source.hasStaticShape())
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

//===----------------------------------------------------------------------===//
// Index arithmetic, evaluated: which block a gather reads
//===----------------------------------------------------------------------===//

namespace {
/// Evaluates the integer values a linalg body computes from its loop
/// indices and from tensors that hold no data of the program (constants,
/// iotas, fills and their reshapes): enough to tell what a gather whose
/// indices the front end computed (`x[..., [-2], :]` is an index list, a
/// broadcast iota per dimension and a wrap-around of negative indices)
/// reads. Anything else (a token id) fails.
class IndexEvaluator {
public:
  /// The value of `v`, a scalar of `op`'s body, at loop point `point`.
  std::optional<int64_t> scalar(Value v, linalg::LinalgOp op,
                                ArrayRef<int64_t> point, int depth = 0);
  /// The element of `tensor` at `position`.
  std::optional<int64_t> element(Value tensor, ArrayRef<int64_t> position,
                                 int depth);

private:
  static constexpr int kMaxDepth = 16;
};
} // namespace

std::optional<int64_t> IndexEvaluator::scalar(Value v, linalg::LinalgOp op,
                                              ArrayRef<int64_t> point,
                                              int depth) {
  if (depth > kMaxDepth)
    return std::nullopt;
  APInt constant;
  if (matchPattern(v, m_ConstantInt(&constant)))
    return constant.getSExtValue();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != op.getBlock() ||
        arg.getArgNumber() >= op.getNumDpsInputs())
      return std::nullopt;
    OpOperand *input = op.getDpsInputOperand(arg.getArgNumber());
    AffineMap map = op.getMatchingIndexingMap(input);
    SmallVector<int64_t> position;
    for (AffineExpr expr : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(expr))
        position.push_back(point[d.getPosition()]);
      else if (auto c = dyn_cast<AffineConstantExpr>(expr))
        position.push_back(c.getValue());
      else
        return std::nullopt;
    }
    if (!isa<RankedTensorType>(input->get().getType()))
      return scalar(input->get(), op, point, depth + 1);
    return element(input->get(), position, depth + 1);
  }
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != op.getBlock())
    return std::nullopt;
  if (auto index = dyn_cast<linalg::IndexOp>(def))
    return point[index.getDim()];
  auto operand = [&](unsigned i) {
    return scalar(def->getOperand(i), op, point, depth + 1);
  };
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
          arith::ExtUIOp, arith::TruncIOp>(def))
    return operand(0);
  if (auto select = dyn_cast<arith::SelectOp>(def)) {
    std::optional<int64_t> c = operand(0);
    if (!c)
      return std::nullopt;
    return *c ? operand(1) : operand(2);
  }
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::CmpIOp>(def))
    return std::nullopt;
  std::optional<int64_t> a = operand(0), b = operand(1);
  if (!a || !b)
    return std::nullopt;
  if (isa<arith::AddIOp>(def))
    return *a + *b;
  if (isa<arith::SubIOp>(def))
    return *a - *b;
  if (isa<arith::MulIOp>(def))
    return *a * *b;
  switch (cast<arith::CmpIOp>(def).getPredicate()) {
  case arith::CmpIPredicate::eq: return *a == *b;
  case arith::CmpIPredicate::ne: return *a != *b;
  case arith::CmpIPredicate::slt: return *a < *b;
  case arith::CmpIPredicate::sle: return *a <= *b;
  case arith::CmpIPredicate::sgt: return *a > *b;
  case arith::CmpIPredicate::sge: return *a >= *b;
  default: return std::nullopt; // unsigned orders: not needed so far
  }
}

std::optional<int64_t> IndexEvaluator::element(Value tensor,
                                               ArrayRef<int64_t> position,
                                               int depth) {
  if (depth > kMaxDepth)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(tensor.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrIndex())
    return std::nullopt;
  DenseIntElementsAttr elements;
  if (matchPattern(tensor, m_Constant(&elements))) {
    if (elements.isSplat())
      return elements.getSplatValue<APInt>().getSExtValue();
    int64_t flat = 0;
    for (auto [d, p] : llvm::enumerate(position))
      flat = flat * type.getDimSize(d) + p;
    return (*(elements.value_begin<APInt>() + flat)).getSExtValue();
  }
  Operation *def = tensor.getDefiningOp();
  if (!def)
    return std::nullopt;
  // Reshapes: the same element at the other shape's position.
  auto reshaped = [&](Value source) -> std::optional<int64_t> {
    auto sourceType = cast<RankedTensorType>(source.getType());
    int64_t flat = 0;
    for (auto [d, p] : llvm::enumerate(position))
      flat = flat * type.getDimSize(d) + p;
    SmallVector<int64_t> sourcePosition(sourceType.getRank());
    for (int64_t d = sourceType.getRank() - 1; d >= 0; --d) {
      sourcePosition[d] = flat % sourceType.getDimSize(d);
      flat /= sourceType.getDimSize(d);
    }
    return element(source, sourcePosition, depth + 1);
  };
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
    return reshaped(expand.getSrc());
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
    return reshaped(collapse.getSrc());
  auto linalgOp = dyn_cast<linalg::LinalgOp>(def);
  if (!linalgOp || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getNumReductionLoops() != 0)
    return std::nullopt;
  if (auto fill = dyn_cast<linalg::FillOp>(def)) {
    APInt value;
    if (!matchPattern(fill.value(), m_ConstantInt(&value)))
      return std::nullopt;
    return value.getSExtValue();
  }
  // The loop point of `position`: the result map must be a permutation.
  AffineMap map = linalgOp.getIndexingMapMatchingResult(def->getResult(0));
  if (!map.isPermutation())
    return std::nullopt;
  SmallVector<int64_t> point(map.getNumDims());
  for (auto [d, expr] : llvm::enumerate(map.getResults()))
    point[cast<AffineDimExpr>(expr).getPosition()] = position[d];
  Block *body = linalgOp.getBlock();
  if (!body || linalgOp.payloadUsesValueFromOperand(linalgOp.getDpsInitOperand(0)))
    return std::nullopt;
  Value yielded = body->getTerminator()->getOperand(0);
  return scalar(yielded, linalgOp, point, depth + 1);
}

/// A gather that reads a block of `table`: a linalg op with one result
/// of the table's rank and no reduction, whose body yields `tensor.extract
/// %table[...]` without reading its output, where each index evaluates
/// (IndexEvaluator, at every point of the iteration space) to the loop of
/// the result dimension at the same position plus a constant: the whole
/// dimension, or at one position a block (`x[..., [-2], :]` reads a block
/// of one row, keeping the dimension). Iteration spaces over 2^16 points
/// are not evaluated.
static std::optional<Cut> cutOfGather(linalg::LinalgOp op, Value table) {
  auto type = dyn_cast<RankedTensorType>(table.getType());
  if (!type || !type.hasStaticShape() || op->getNumResults() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !op.getBlock() || llvm::is_contained(op->getOperands(), table))
    return std::nullopt;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (resultType.getRank() != type.getRank() ||
      resultType.getElementType() != type.getElementType())
    return std::nullopt;
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto extract = yield.getNumOperands() == 1
                     ? yield.getOperand(0).getDefiningOp<tensor::ExtractOp>()
                     : nullptr;
  if (!extract || extract->getBlock() != body || extract.getTensor() != table)
    return std::nullopt;
  for (BlockArgument out : op.getRegionOutputArgs())
    if (!out.use_empty())
      return std::nullopt;
  // Each index position p: the loop of result dimension p.
  AffineMap resultMap = op.getIndexingMapMatchingResult(op->getResult(0));
  SmallVector<unsigned> loopOf;
  for (AffineExpr expr : resultMap.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(expr);
    if (!d)
      return std::nullopt;
    loopOf.push_back(d.getPosition());
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t points = 1;
  for (int64_t r : ranges) {
    if (ShapedType::isDynamic(r))
      return std::nullopt;
    points *= r;
  }
  if (points > (int64_t(1) << 16) || points == 0)
    return std::nullopt;
  // index_p - loop_p, constant over the whole space.
  SmallVector<std::optional<int64_t>> shift(type.getRank());
  IndexEvaluator eval;
  SmallVector<int64_t> point(ranges.size(), 0);
  for (int64_t n = 0; n < points; ++n) {
    for (auto [p, index] : llvm::enumerate(extract.getIndices())) {
      std::optional<int64_t> value = eval.scalar(index, op, point);
      if (!value)
        return std::nullopt;
      int64_t s = *value - point[loopOf[p]];
      if (shift[p] && *shift[p] != s)
        return std::nullopt;
      shift[p] = s;
    }
    for (int64_t d = ranges.size() - 1; d >= 0; --d) {
      if (++point[d] < ranges[d])
        break;
      point[d] = 0;
    }
  }
  std::optional<Cut> cut;
  for (int64_t p = 0; p < type.getRank(); ++p) {
    int64_t size = resultType.getDimSize(p);
    if (*shift[p] == 0 && size == type.getDimSize(p))
      continue;
    if (cut || *shift[p] < 0 || *shift[p] + size > type.getDimSize(p))
      return std::nullopt;
    cut = Cut{p, *shift[p], size};
  }
  return cut;
}

/// The block of `v` that `user` reads, if it reads one (a slice, or a
/// constant-index gather of a captured `v`).
static std::optional<Cut> cutOfUse(Operation *user, Value v) {
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user))
    return slice.getSource() == v ? cutOfSlice(slice) : std::nullopt;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user))
    return cutOfGather(linalgOp, v);
  return std::nullopt;
}

/// The uses of `v` when every one reads a block along the same dimension
/// and the blocks cover it (the pieces of a fused value: q | k | v, gate |
/// up, expert 0 | expert 1 | ...). A single block that drops part of a
/// value (the token shift of a loss) is no fusion: moving it up would only
/// give the ops above odd sizes.
static SmallVector<CutUse> cutsOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return {};
  // Group the uses by the op of v's block that holds them: a gather
  // reads v inside its body.
  SmallVector<CutUse> cuts;
  DenseSet<Operation *> seen;
  Block *block = v.getParentBlock();
  for (OpOperand &use : v.getUses()) {
    Operation *top = block->findAncestorOpInBlock(*use.getOwner());
    if (!top)
      return {};
    if (!seen.insert(top).second)
      continue;
    std::optional<Cut> cut = cutOfUse(top, v);
    if (!cut || (!cuts.empty() && cuts.front().cut.dim != cut->dim))
      return {};
    cuts.push_back({top, *cut});
  }
  if (cuts.size() < 2)
    return {};
  SmallVector<Cut> sorted;
  for (CutUse &entry : cuts)
    sorted.push_back(entry.cut);
  llvm::sort(sorted);
  int64_t covered = 0;
  for (const Cut &cut : sorted) {
    if (cut.offset > covered)
      return {}; // a gap: part of the value is never used
    covered = std::max(covered, cut.offset + cut.size);
  }
  if (covered != type.getDimSize(sorted.front().dim))
    return {};
  return cuts;
}

/// Step 0: rewrites `use` into a same-rank slice of `v` followed, when the
/// use's result has another shape (a rank-reducing slice), by a
/// collapse_shape; returns the slice.
static tensor::ExtractSliceOp normalizeUse(Value v, CutUse &use) {
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(use.op))
    if (slice.getResultType() == cutType(v.getType(), use.cut))
      return slice;
  OpBuilder b(use.op);
  Location loc = use.op->getLoc();
  auto slice = cast<tensor::ExtractSliceOp>(
      makeSlice(b, loc, v, use.cut).getDefiningOp());
  auto resultType = cast<RankedTensorType>(use.op->getResult(0).getType());
  Value replacement = slice;
  if (resultType != slice.getResultType()) {
    std::optional<SmallVector<ReassociationIndices>> groups =
        getReassociationIndicesForCollapse(slice.getResultType().getShape(),
                                           resultType.getShape());
    assert(groups && "a rank-reducing slice drops unit dimensions");
    replacement =
        tensor::CollapseShapeOp::create(b, loc, resultType, slice, *groups);
  }
  use.op->getResult(0).replaceAllUsesWith(replacement);
  use.op->erase();
  use.op = slice;
  return slice;
}

/// The reassociation group of `groups` holding `dim`, and `dim`'s position
/// in it.
static std::pair<int64_t, int64_t>
groupOf(ArrayRef<ReassociationIndices> groups, int64_t dim) {
  for (auto [g, group] : llvm::enumerate(groups))
    for (auto [j, d] : llvm::enumerate(group))
      if (d == dim)
        return {int64_t(g), int64_t(j)};
  llvm_unreachable("every dimension is in a group");
}

/// For a cut of dimension `j` of a group of `shape`'s dimensions `group`:
/// the cut of the merged dimension, when the block is contiguous in it
/// (every dimension before `j` in the group has extent 1).
static std::optional<Cut> mergedCut(ArrayRef<int64_t> shape,
                                    const ReassociationIndices &group,
                                    int64_t j, int64_t mergedDim,
                                    const Cut &cut) {
  int64_t inner = 1;
  for (auto [k, d] : llvm::enumerate(group)) {
    if (int64_t(k) < j && shape[d] != 1)
      return std::nullopt;
    if (int64_t(k) > j)
      inner *= shape[d];
  }
  return Cut{mergedDim, cut.offset * inner, cut.size * inner};
}

/// For a cut of a merged dimension made of `shape`'s dimensions `group`:
/// the cut of the first non-unit dimension of the group, when the block is
/// a whole number of its rows.
static std::optional<Cut> splitCut(ArrayRef<int64_t> shape,
                                   const ReassociationIndices &group,
                                   const Cut &cut) {
  const auto *first = llvm::find_if(group, [&](int64_t d) {
    return shape[d] != 1;
  });
  if (first == group.end())
    return std::nullopt;
  int64_t inner = 1;
  for (const auto *it = first + 1; it != group.end(); ++it)
    inner *= shape[*it];
  if (cut.offset % inner || cut.size % inner)
    return std::nullopt;
  return Cut{*first, cut.offset / inner, cut.size / inner};
}

/// The bytes of the block `cut` of a row-major tensor of `shape` whose
/// elements take `elementBytes`.
static std::vector<char> cutBytes(ArrayRef<char> data, ArrayRef<int64_t> shape,
                                  int64_t elementBytes, const Cut &cut) {
  int64_t outer = 1, inner = elementBytes;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (d < cut.dim)
      outer *= shape[d];
    else if (d > cut.dim)
      inner *= shape[d];
  }
  std::vector<char> out;
  out.reserve(outer * cut.size * inner);
  for (int64_t o = 0; o < outer; ++o) {
    const char *row = data.data() + (o * shape[cut.dim] + cut.offset) * inner;
    out.insert(out.end(), row, row + cut.size * inner);
  }
  return out;
}

/// The block `cut` of a constant's value, or null when it cannot be read
/// (an elided resource, packed booleans). With `probe`, only whether it
/// can (a non-null attribute that is not the piece: the value itself).
static Attribute cutConstant(Attribute value, const Cut &cut,
                             bool probe = false) {
  auto type = dyn_cast<RankedTensorType>(cast<TypedAttr>(value).getType());
  if (!type || !type.hasStaticShape() ||
      !type.getElementType().isIntOrFloat() ||
      type.getElementType().getIntOrFloatBitWidth() % 8)
    return nullptr;
  RankedTensorType pieceType = cutType(type, cut);
  int64_t elementBytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (probe)
      return value;
    if (dense.isSplat())
      return dense.resizeSplat(pieceType);
    std::vector<char> bytes =
        cutBytes(dense.getRawData(), type.getShape(), elementBytes, cut);
    return DenseElementsAttr::getFromRawBuffer(pieceType, bytes);
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || int64_t(blob->getData().size()) !=
                     type.getNumElements() * elementBytes)
      return nullptr;
    if (probe)
      return value;
    std::vector<char> bytes =
        cutBytes(blob->getData(), type.getShape(), elementBytes, cut);
    std::string name = (resource.getRawHandle().getKey() + "_" +
                        Twine(cut.dim) + "_" + Twine(cut.offset))
                           .str();
    return DenseResourceElementsAttr::get(
        pieceType, name,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes,
                                                      blob->getDataAlignment()));
  }
  return nullptr;
}

/// Whether `op` can compute a cut of its (only) result on its own, and if
/// so (`b`), that computation.
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
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    if (!cutConstant(constant.getValue(), cut, /*probe=*/true))
      return nullptr;
    if (!b)
      return constant;
    return arith::ConstantOp::create(
        *b, loc, cast<TypedAttr>(cutConstant(constant.getValue(), cut)));
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    SmallVector<ReassociationIndices> groups =
        expand.getReassociationIndices();
    if (!expand.getResultType().hasStaticShape())
      return nullptr;
    auto [g, j] = groupOf(groups, cut.dim);
    std::optional<Cut> source = mergedCut(expand.getResultType().getShape(),
                                          groups[g], j, g, cut);
    if (!source)
      return nullptr;
    if (!b)
      return expand;
    Value src = makeSlice(*b, loc, expand.getSrc(), *source);
    return tensor::ExpandShapeOp::create(*b, loc, cutType(resultType, cut), src,
                                         groups);
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    if (!collapse.getSrcType().hasStaticShape())
      return nullptr;
    std::optional<Cut> source =
        splitCut(collapse.getSrcType().getShape(), groups[cut.dim], cut);
    if (!source)
      return nullptr;
    if (!b)
      return collapse;
    Value src = makeSlice(*b, loc, collapse.getSrc(), *source);
    return tensor::CollapseShapeOp::create(*b, loc, cutType(resultType, cut),
                                           src, groups);
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    // Across the axis: the concat of each input's cut; along it: the
    // blocks of the inputs the cut overlaps (an input itself when the cut
    // is that input: gate | up of a cat).
    if (!concat.getResultType().hasStaticShape())
      return nullptr;
    if (!b)
      return concat;
    int64_t axis = concat.getDim();
    SmallVector<Value> inputs;
    int64_t start = 0;
    for (Value in : concat.getInputs()) {
      int64_t size = cast<RankedTensorType>(in.getType()).getDimSize(axis);
      int64_t lo = std::max(start, cut.offset);
      int64_t hi = std::min(start + size, cut.offset + cut.size);
      start += size;
      if (cut.dim != axis)
        inputs.push_back(makeSlice(*b, loc, in, cut));
      else if (lo == start - size && hi == start)
        inputs.push_back(in);
      else if (lo < hi)
        inputs.push_back(makeSlice(*b, loc, in, {axis, lo - (start - size),
                                                  hi - lo}));
    }
    if (inputs.size() == 1)
      return inputs.front();
    return tensor::ConcatOp::create(*b, loc, axis, inputs);
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
  // The body may read the loop's index only to index a table it captures
  // (a gather): the copy then reads the same block of the table.
  SmallVector<std::pair<tensor::ExtractOp, unsigned>> tableReads;
  if (Block *body = linalgOp.getBlock()) {
    bool other = false;
    body->walk([&](linalg::IndexOp index) {
      if (index.getDim() != f)
        return;
      for (OpOperand &use : index->getUses()) {
        auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
        if (!extract || use.getOperandNumber() == 0 ||
            op->isAncestor(extract.getTensor().getParentRegion()->getParentOp()) ||
            !extract.getTensor().getType().hasStaticShape()) {
          other = true;
          continue;
        }
        // One position per read (not `table[i, i]`).
        other |= llvm::any_of(tableReads,
                              [&](auto &r) { return r.first == extract; });
        tableReads.push_back({extract, use.getOperandNumber() - 1});
      }
    });
    if (other)
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
  // The tables, cut where the loop indexes them.
  DenseMap<std::pair<Value, unsigned>, Value> cutTables;
  for (auto [extract, dim] : tableReads) {
    Value &table = cutTables[{extract.getTensor(), dim}];
    if (!table)
      table = makeSlice(*b, loc, extract.getTensor(),
                        {int64_t(dim), cut.offset, cut.size});
  }
  Operation *copy =
      mlir::clone(*b, op, TypeRange{cutType(resultType, cut)}, operands);
  if (!tableReads.empty()) {
    // Map the original body's reads to the copy's by walk order.
    SmallVector<tensor::ExtractOp> originals, copies;
    op->walk([&](tensor::ExtractOp e) { originals.push_back(e); });
    copy->walk([&](tensor::ExtractOp e) { copies.push_back(e); });
    for (auto [extract, dim] : tableReads) {
      auto *it = llvm::find(originals, extract);
      tensor::ExtractOp target = copies[it - originals.begin()];
      target.getTensorMutable().assign(cutTables[{extract.getTensor(), dim}]);
    }
  }
  return copy->getResult(0);
}

/// Rewrites every use of `v` (a fused value) to its block `pieces`, a value
/// per distinct cut.
static void replaceCuts(Value v, SmallVector<CutUse> &cuts,
                        llvm::function_ref<Value(const Cut &)> pieceOf) {
  for (CutUse &use : cuts) {
    tensor::ExtractSliceOp slice = normalizeUse(v, use);
    Value piece = pieceOf(use.cut);
    slice.getResult().replaceAllUsesWith(piece);
    slice->erase();
  }
}

/// Whether `cuts` of `v` take it row by row along a dimension of its own
/// (each block one index, as many blocks as indices: tp-gen's [tokens, 3,
/// hidden] q/k/v, a loop over experts): the planner splits the other
/// dimensions of such a stack for every row at once, so cutting it apart
/// only pays where the rows come from a merged dimension (through a
/// reshape) or are cut again (an expert's gate | up).
static bool isStack(ArrayRef<CutUse> cuts, Value v) {
  SmallVector<int64_t> rows;
  for (const CutUse &use : cuts) {
    if (use.cut.size != 1)
      return false;
    if (!llvm::is_contained(rows, use.cut.offset))
      rows.push_back(use.cut.offset);
  }
  return int64_t(rows.size()) ==
         cast<RankedTensorType>(v.getType()).getDimSize(cuts.front().cut.dim);
}

/// Whether a row of a stack is cut again: the value the use makes (seen
/// through the collapse_shape that drops the row's unit dimension) is a
/// fused value itself.
static bool isCutAgain(const CutUse &use) {
  Value row = use.op->getResult(0);
  if (row.hasOneUse())
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(*row.user_begin()))
      row = collapse.getResult();
  return !cutsOf(row).empty();
}

/// Step 0': a stack of weights written as a concat and a reshape
/// (`torch.stack` of per-expert tensors: [E * rows, cols] expanded to
/// [E, rows, cols]) becomes a concat of reshaped inputs along the outer
/// dimension, when every input is a whole number of its rows: the same
/// elements, but the rows' own dimensions are no longer a minor factor of
/// the concatenated (opaque) one, so the planner can split them for every
/// expert at once and a cut of them can move up to the inputs.
static void stackConcats(Block &block) {
  SmallVector<tensor::ExpandShapeOp> expands;
  for (Operation &op : block)
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
      expands.push_back(expand);
  for (tensor::ExpandShapeOp expand : expands) {
    auto concat = expand.getSrc().getDefiningOp<tensor::ConcatOp>();
    RankedTensorType type = expand.getResultType();
    if (!concat || !concat->hasOneUse() || !type.hasStaticShape())
      continue;
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    const ReassociationIndices &group = groups[concat.getDim()];
    int64_t inner = 1;
    for (int64_t d : ArrayRef<int64_t>(group).drop_front())
      inner *= type.getDimSize(d);
    if (group.size() < 2 ||
        llvm::any_of(concat.getInputs(), [&](Value in) {
          auto t = cast<RankedTensorType>(in.getType());
          return !t.hasStaticShape() || t.getDimSize(concat.getDim()) % inner;
        }))
      continue;
    OpBuilder b(expand);
    SmallVector<Value> inputs;
    for (Value in : concat.getInputs()) {
      SmallVector<int64_t> shape(type.getShape());
      shape[group.front()] =
          cast<RankedTensorType>(in.getType()).getDimSize(concat.getDim()) /
          inner;
      inputs.push_back(tensor::ExpandShapeOp::create(
          b, expand.getLoc(), type.clone(shape), in, groups));
    }
    Value stacked =
        tensor::ConcatOp::create(b, concat.getLoc(), group.front(), inputs);
    expand.getResult().replaceAllUsesWith(stacked);
    expand->erase();
    concat->erase();
  }
}

/// Step 1: moves every cut it can one producer up; true when any moved.
static bool moveCutsUp(Block &block, FusedParamStats &stats) {
  bool moved = false;
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() != 1)
      continue;
    Value value = op->getResult(0);
    SmallVector<CutUse> cuts = cutsOf(value);
    if (cuts.empty() || !sliceOf(nullptr, op, cuts.front().cut))
      continue;
    // Rows of a stack move only through a reshape that merges them with
    // other dimensions (they become blocks of several indices above).
    if (isStack(cuts, value)) {
      auto expand = dyn_cast<tensor::ExpandShapeOp>(op);
      if (!expand)
        continue;
      auto [g, j] = groupOf(expand.getReassociationIndices(),
                            cuts.front().cut.dim);
      std::optional<Cut> source =
          mergedCut(expand.getResultType().getShape(),
                    expand.getReassociationIndices()[g], j, g,
                    cuts.front().cut);
      if (!source || source->size == 1)
        continue;
    }
    OpBuilder builder(op);
    SmallVector<std::pair<Cut, Value>> pieces;
    replaceCuts(value, cuts, [&](const Cut &cut) {
      for (auto &[c, v] : pieces)
        if (c == cut)
          return v;
      Value piece = sliceOf(&builder, op, cut);
      pieces.push_back({cut, piece});
      return piece;
    });
    op->erase();
    ++stats.opsSplit;
    moved = true;
  }
  return moved;
}

/// Step 2: splits every parameter that is a fused value; true when any was.
static bool splitArguments(func::FuncOp func, FusedParamStats &stats) {
  SmallVector<std::pair<BlockArgument, SmallVector<CutUse>>> fused;
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (!func.getArgAttr(i, TPDialect::getParamAttrName()) ||
        func.getArgAttr(i, TPDialect::getLayoutAttrName()))
      continue;
    SmallVector<CutUse> cuts = cutsOf(arg);
    if (cuts.empty() ||
        (isStack(cuts, arg) && llvm::none_of(cuts, isCutAgain)))
      continue;
    fused.push_back({arg, std::move(cuts)});
  }
  if (fused.empty())
    return false;
  // Names first: the arguments after a split one move.
  nameArguments(cast<FunctionOpInterface>(func.getOperation()));
  for (auto &[arg, cuts] : llvm::reverse(fused)) {
    unsigned i = arg.getArgNumber();
    auto type = cast<RankedTensorType>(arg.getType());
    NamedAttrList attrs(func.getArgAttrDict(i));
    SmallVector<Cut> pieces;
    for (CutUse &entry : cuts)
      if (!llvm::is_contained(pieces, entry.cut))
        pieces.push_back(entry.cut);
    llvm::sort(pieces);
    // Offsets into the stored tensor: a piece of a piece adds up.
    SmallVector<int64_t> offsets(type.getRank(), 0);
    SmallVector<int64_t> stored(type.getShape());
    auto source = dyn_cast_or_null<DictionaryAttr>(
        attrs.get(TPDialect::getSourceAttrName()));
    if (source) {
      offsets = SmallVector<int64_t>(
          source.getAs<DenseI64ArrayAttr>("offsets").asArrayRef());
      stored = SmallVector<int64_t>(
          source.getAs<DenseI64ArrayAttr>("shape").asArrayRef());
    }
    Builder b(func.getContext());
    SmallVector<Value> pieceArgs;
    for (auto [k, piece] : llvm::enumerate(pieces)) {
      SmallVector<int64_t> pieceOffsets(offsets);
      pieceOffsets[piece.dim] += piece.offset;
      NamedAttrList pieceAttrs = attrs;
      pieceAttrs.set(
          TPDialect::getSourceAttrName(),
          b.getDictionaryAttr(
              {b.getNamedAttr("offsets", b.getDenseI64ArrayAttr(pieceOffsets)),
               b.getNamedAttr("shape", b.getDenseI64ArrayAttr(stored))}));
      unsigned index = i + 1 + k;
      (void)func.insertArgument(index, cutType(type, piece),
                                pieceAttrs.getDictionary(func.getContext()),
                                arg.getLoc());
      pieceArgs.push_back(func.getArgument(index));
    }
    replaceCuts(arg, cuts, [&](const Cut &cut) {
      return pieceArgs[llvm::find(pieces, cut) - pieces.begin()];
    });
    (void)func.eraseArgument(i);
    // A piece split again replaces one piece by several.
    stats.paramsSplit += source ? 0 : 1;
    stats.pieces += pieces.size() - (source ? 1 : 0);
  }
  return true;
}

FusedParamStats mlir::tp::splitFusedParameters(func::FuncOp func) {
  FusedParamStats stats;
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return stats;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (func.getResultAttr(r, TPDialect::getUpdatesAttrName()))
      return stats;
  // Pieces of a split weight may be cut again (an expert of a stack, then
  // its gate | up): both steps until nothing changes.
  Block &block = func.getBody().front();
  stackConcats(block);
  for (bool changed = true; changed;) {
    while (moveCutsUp(block, stats)) {
    }
    changed = splitArguments(func, stats);
  }
  return stats;
}
