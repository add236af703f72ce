//===- AttentionMatch.cpp - attention recognised by its semantics -*- C++ -*-//
//
// tp-fuse-attention's matcher: a contraction with one reduction dimension
// (the candidate P.V) is attention when, walking back through views,
//
//   O  = contract_j(P, V)        P a view of N (or of N cast to another
//                                float type by a generic of its own: bf16
//                                exports), V a view of some tensor
//   N  = E / S                   elementwise; S a row statistic of E
//   S  = sum_j E                 row reduction over the last dimension
//   E  = exp(X - M)              one generic, or a sub then an exp
//   M  = max_j X                 row reduction (extra outputs unused: argmax)
//   X  = f_k(...f_1(C, side...)) elementwise generics on the scores: scale,
//                                masks (tensors or linalg.index compares);
//                                past a view of another shape only ops of
//                                the scores' values alone (casts: bf16's
//                                truncated [b*h, s, s] product)
//   C  = contract_d(Q, K)        a view of C feeds f_1
//
// "Views" are collapse_shape, expand_shape, static unit-stride
// extract_slice, linalg.transpose, linalg.broadcast and copy/broadcast
// generics (GQA's expanded K and V, a row statistic broadcast back to the
// scores' shape). Every operand is followed through them as an Access
// (source and affine indices over the kernel dims), and the roles are
// checked on the composed indices, not on the spelling: a row statistic is
// a value whose access is the reduction's output map over the score space,
// however it was broadcast (torch-mlir's keepdim [b, h, s, 1], tp-gen's
// [b, h, s], JAX/IREE's copy generics to [b, h, s, t]). Row reductions may
// be generics or linalg.reduce (generalised first).
//
// Side inputs of the chain computed from indices and constants alone (a
// causal mask of iota compares, broadcast; JAX's select on an i1 tensor)
// are inlined: the kernel evaluates their producers instead of reading a
// [s, s] tensor.
//
// The key range: a select in the chain that sets scores to -inf (or to the
// lowest float, when every row provably keeps a key and no other input of
// the chain is data that could mask the rest) where a compare of indices
// holds, with only -inf-preserving ops after it, bounds the keys
// each row sees: c j + R(o) <pred> 0 with c = +-1 gives lo <= j or j < hi
// (a conjunction gives both: a sliding window). The kernels skip the rest.
//
// Grouped-query heads: a row dimension K and V read only in blocks of g
// values (h floordiv g after repeat_kv) is split into the block and the
// position in it (kvGroups, rowParts), so that the g query heads of a KV
// head share the kernels' K and V tiles.
//
// Once the product is known to contract a softmax over its keys (P = E / S
// with S the row sum of E), every failure says which step did not match
// (the remark "attention not fused: ..."); before, silence: training
// graphs contract softmax-derived values in many other ways.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExprVisitor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tp::attention;

namespace {

MLIRContext *ctx(Value v) { return v.getContext(); }

Exprs substitute(AffineMap map, ArrayRef<AffineExpr> dims) {
  Exprs out;
  for (AffineExpr e : map.getResults())
    out.push_back(simplifyAffineExpr(e.replaceDims(dims), 64, 0));
  return out;
}

bool usesDim(ArrayRef<AffineExpr> idx, unsigned dim) {
  return llvm::any_of(idx, [&](AffineExpr e) { return e.isFunctionOfDim(dim); });
}

/// The yielded value of a one-block body with casts (extf/truncf) peeled.
Value peelCasts(Value v) {
  while (Operation *op = v.getDefiningOp())
    if (isa<arith::ExtFOp, arith::TruncFOp>(op))
      v = op->getOperand(0);
    else
      break;
  return v;
}

Value yielded(linalg::LinalgOp op, unsigned i = 0) {
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  return yield.getOperand(i);
}

/// The input number a block argument of `op` stands for, or -1.
int inputOf(linalg::LinalgOp op, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != op.getBlock() ||
      arg.getArgNumber() >= unsigned(op.getNumDpsInputs()))
    return -1;
  return arg.getArgNumber();
}

bool isIdentity(linalg::LinalgOp op, OpOperand *operand) {
  return op.getMatchingIndexingMap(operand).isIdentity();
}

bool allParallel(linalg::LinalgOp op) {
  return op.getNumLoops() == op.getNumParallelLoops();
}

/// An elementwise generic over `rank` loops with one result written through
/// the identity.
bool isElementwise(linalg::GenericOp g, unsigned rank) {
  return g && g.hasPureTensorSemantics() && allParallel(g) &&
         g->getNumResults() == 1 && g.getNumLoops() == rank &&
         g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity();
}

/// The identity indices d0..d(rank-1).
Exprs dimsOf(MLIRContext *context, unsigned rank) {
  Exprs dims;
  for (unsigned i = 0; i < rank; ++i)
    dims.push_back(getAffineDimExpr(i, context));
  return dims;
}

/// Follows views back from `v` read at `idx`; records the view ops passed.
Access traceBack(Value v, Exprs idx,
                 SmallVectorImpl<Operation *> *passed = nullptr) {
  while (Operation *op = v.getDefiningOp()) {
    Exprs next;
    Value src;
    if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
      auto srcType = c.getSrcType();
      if (!srcType.hasStaticShape())
        break;
      next.resize(srcType.getRank());
      for (auto [r, group] : llvm::enumerate(c.getReassociationIndices())) {
        int64_t stride = 1;
        for (int64_t i = group.size() - 1; i >= 0; --i) {
          int64_t size = srcType.getDimSize(group[i]);
          AffineExpr e = idx[r].floorDiv(stride);
          next[group[i]] = i == 0 ? e : e % size;
          stride *= size;
        }
      }
      src = c.getSrc();
    } else if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
      auto resType = e.getResultType();
      if (!resType.hasStaticShape())
        break;
      for (auto group : e.getReassociationIndices()) {
        AffineExpr sum = getAffineConstantExpr(0, ctx(v));
        for (int64_t i : group)
          sum = sum * resType.getDimSize(i) + idx[i];
        next.push_back(sum);
      }
      src = e.getSrc();
    } else if (auto x = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // A static, unit-stride slice (GPT-2's fused QKV split apart); dims a
      // rank-reducing slice drops read at their offset.
      if (!x.hasUnitStride() || !x.getSourceType().hasStaticShape() ||
          llvm::any_of(x.getStaticOffsets(), ShapedType::isDynamic))
        break;
      llvm::SmallBitVector dropped = x.getDroppedDims();
      unsigned r = 0;
      for (auto [i, offset] : llvm::enumerate(x.getStaticOffsets())) {
        AffineExpr at = getAffineConstantExpr(offset, ctx(v));
        next.push_back(dropped.test(i) ? at : idx[r++] + at);
      }
      src = x.getSource();
    } else if (auto t = dyn_cast<linalg::TransposeOp>(op)) {
      if (!t.hasPureTensorSemantics())
        break;
      next.resize(idx.size());
      for (auto [i, p] : llvm::enumerate(t.getPermutation()))
        next[p] = idx[i];
      src = t.getInput();
    } else if (auto b = dyn_cast<linalg::BroadcastOp>(op)) {
      if (!b.hasPureTensorSemantics())
        break;
      for (unsigned i = 0; i < idx.size(); ++i)
        if (!llvm::is_contained(b.getDimensions(), int64_t(i)))
          next.push_back(idx[i]);
      src = b.getInput();
    } else if (auto g = dyn_cast<linalg::GenericOp>(op)) {
      // A copy or broadcast: one input, yielded unchanged.
      if (!g.hasPureTensorSemantics() || g.getNumDpsInputs() != 1 ||
          g.getNumDpsInits() != 1 || !allParallel(g) ||
          inputOf(g, yielded(g)) != 0)
        break;
      AffineMap out = g.getIndexingMapsArray()[1];
      if (!out.isPermutation())
        break;
      Exprs loops = substitute(inversePermutation(out), idx);
      next = substitute(g.getIndexingMapsArray()[0], loops);
      src = g.getDpsInputs()[0];
    } else {
      break;
    }
    if (passed)
      passed->push_back(op);
    v = src;
    for (AffineExpr &e : next)
      e = simplifyAffineExpr(e, 64, 0);
    idx = std::move(next);
  }
  return {v, idx, {}, {}, {}};
}

/// Values captured by `op`'s body must be constants (cloned into the kernel).
bool capturesOnlyConstants(Operation *op) {
  bool ok = true;
  op->walk([&](Operation *inner) {
    if (inner == op)
      return;
    for (Value operand : inner->getOperands())
      if (!op->isAncestor(operand.getParentRegion()->getParentOp()) &&
          !matchPattern(operand, m_Constant()))
        ok = false;
  });
  return ok;
}

/// Resolves `a` (a side input of the chain, or an input of an inlined
/// producer): when its source is an all-parallel generic computed from
/// indices and constants alone, through views, the access evaluates that
/// generic (depth-limited). Otherwise `a` is left a read.
void inlineIndexOnly(Access &a, int depth = 0) {
  auto g = a.source.getDefiningOp<linalg::GenericOp>();
  if (!g || depth > 8 || !g.hasPureTensorSemantics() || !allParallel(g) ||
      g->getNumResults() != 1 || !capturesOnlyConstants(g) ||
      !g.getBlock()->getArgument(g.getNumDpsInputs()).use_empty())
    return;
  AffineMap out = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
  if (!out.isPermutation())
    return;
  Exprs loops = substitute(inversePermutation(out), a.idx);
  std::vector<Access> inputs;
  for (OpOperand *in : g.getDpsInputOperands()) {
    Access input =
        traceBack(in->get(), substitute(g.getMatchingIndexingMap(in), loops));
    // Only constants or further index-only producers.
    if (!matchPattern(input.source, m_Constant())) {
      inlineIndexOnly(input, depth + 1);
      if (!input.producer)
        return;
    }
    inputs.push_back(std::move(input));
  }
  a.producer = g;
  a.loops = std::move(loops);
  a.inputs = std::move(inputs);
}

/// The constant a linalg.fill writes, when `init` is one.
std::optional<double> fillValue(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  FloatAttr attr;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&attr)))
    return std::nullopt;
  return attr.getValueAsDouble();
}

/// A row reduction of `rank` dims over the last one, whose first result
/// combines with `combiner`; other results unused. `input` is what it
/// reduces and `outIdx` its output map over the score space.
template <typename... Combiners>
LogicalResult matchRowReduction(Operation *op, unsigned rank, Value &input,
                                Exprs &outIdx) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!g || !g.hasPureTensorSemantics() || g.getNumDpsInputs() != 1 ||
      g.getNumLoops() != rank || g.getNumReductionLoops() != 1 ||
      !linalg::isReductionIterator(g.getIteratorTypesArray()[rank - 1]))
    return failure();
  for (unsigned i = 1; i < g->getNumResults(); ++i)
    if (!g->getResult(i).use_empty())
      return failure();
  if (!isIdentity(g, g.getDpsInputOperand(0)))
    return failure();
  AffineMap outMap = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
  if (outMap.isFunctionOfDim(rank - 1))
    return failure();
  Operation *combine = yielded(g).getDefiningOp();
  if (!combine || !isa<Combiners...>(combine))
    return failure();
  Value a = combine->getOperand(0), b = combine->getOperand(1);
  Value out = g.getBlock()->getArgument(g.getNumDpsInputs());
  Value in = g.getBlock()->getArgument(0);
  if (!((a == in && b == out) || (a == out && b == in)))
    return failure();
  input = g.getDpsInputs()[0];
  outIdx = substitute(outMap, dimsOf(op->getContext(), rank));
  return success();
}

/// Whether the statistic read by `user` through `operand` is the result of
/// a row reduction read at its own output indices (the row's value,
/// broadcast along the row, however it was broadcast). Returns the
/// reduction op and records the views passed.
Operation *rowStatistic(linalg::GenericOp user, OpOperand *operand,
                        unsigned rank, SmallVectorImpl<Operation *> &passed,
                        Exprs &idx) {
  Exprs dims = dimsOf(user->getContext(), rank);
  Access s = traceBack(operand->get(),
                       substitute(user.getMatchingIndexingMap(operand), dims),
                       &passed);
  idx = s.idx;
  return s.source.getDefiningOp();
}

/// Whether `g` only converts the type of its one input: elementwise with
/// identity maps, yielding extf/truncf of the input (torch-mlir's bf16
/// exports compute the softmax in f32 and round the probabilities to bf16
/// in a generic of their own, `softmax(dim=-1, dtype=float32).to(bf16)`).
bool isCastOnly(linalg::GenericOp g) {
  if (!g || !g.hasPureTensorSemantics() || !allParallel(g) ||
      g.getNumDpsInputs() != 1 || g->getNumResults() != 1)
    return false;
  if (!llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Value y = yielded(g);
  return y != g.getBlock()->getArgument(0) &&
         peelCasts(y) == g.getBlock()->getArgument(0);
}

/// Whether `g` is a function of its one input's value alone: elementwise
/// with identity maps, no linalg.index, nothing captured but constants, its
/// output operand unread. Such an op on the scores (a cast, a scale by a
/// constant) may be reached through a view of another rank (torch-mlir's
/// bf16 exports: the [b*h, s, s] product truncated to bf16, then expanded
/// to [b, h, s, s]): cloned at a score, it needs no indices.
bool isPureOfScores(linalg::GenericOp g) {
  if (!g || !g.hasPureTensorSemantics() || !allParallel(g) ||
      g.getNumDpsInputs() != 1 || g->getNumResults() != 1 ||
      !capturesOnlyConstants(g) ||
      !g.getBlock()->getArgument(1).use_empty())
    return false;
  if (!llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  bool indexed = false;
  g.getBody()->walk([&](linalg::IndexOp) { indexed = true; });
  return !indexed;
}

/// Whether `x` (read at `idx`) comes from a contraction with one reduction
/// through views and identity-mapped elementwise generics.
bool reachesContraction(Value x, const Exprs &idx, int depth = 0) {
  if (depth > 16)
    return false;
  Access t = traceBack(x, idx);
  auto op = t.source.getDefiningOp<linalg::LinalgOp>();
  if (op && op.getNumReductionLoops() == 1 && op.getNumDpsInputs() == 2 &&
      linalg::isaContractionOpInterface(op))
    return true;
  auto prod = x.getDefiningOp<linalg::GenericOp>();
  if (!prod) {
    // Through a view, only an op of the scores' values alone.
    prod = t.source.getDefiningOp<linalg::GenericOp>();
    return isPureOfScores(prod) &&
           reachesContraction(prod.getDpsInputs()[0], t.idx, depth + 1);
  }
  if (!allParallel(prod) || prod->getNumResults() != 1)
    return false;
  for (OpOperand *in : prod.getDpsInputOperands())
    if (isIdentity(prod, in) && reachesContraction(in->get(), idx, depth + 1))
      return true;
  return false;
}

/// Whether `v` (traced) comes from a division by a row reduction: the
/// softmax's normalisation, what makes a contraction a candidate. A cast of
/// that division (isCastOnly) counts as the division.
bool looksLikeSoftmax(Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (isCastOnly(g))
    return looksLikeSoftmax(
        traceBack(g.getDpsInputs()[0],
                  dimsOf(g->getContext(), g.getNumLoops()))
            .source);
  if (!g)
    return false;
  bool divides = false;
  g.getBody()->walk([&](arith::DivFOp) { divides = true; });
  if (!divides)
    return false;
  for (OpOperand *in : g.getDpsInputOperands()) {
    Access s = traceBack(
        in->get(), substitute(g.getMatchingIndexingMap(in),
                              dimsOf(g->getContext(), g.getNumLoops())));
    auto r = s.source.getDefiningOp<linalg::GenericOp>();
    if (r && r.getNumReductionLoops() == 1)
      return true;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// The key range
//===----------------------------------------------------------------------===//

/// Where an integer value of a body comes from: the loops of the body's op
/// over the kernel dims, and how its block arguments are read.
struct Frame {
  mutable linalg::GenericOp op;
  const Exprs *loops;
  /// Per input: the access it is read through (null: the scores).
  SmallVector<const Access *> inputs;
};

/// `v` as an affine expression over the kernel dims, when it is computed
/// from linalg.index, integer constants, casts, additions, subtractions
/// and multiplications by constants (through inlined producers).
std::optional<AffineExpr> affineOf(Value v, const Frame &f, int depth = 0) {
  if (depth > 32)
    return std::nullopt;
  MLIRContext *context = v.getContext();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != f.op.getBlock() ||
        arg.getArgNumber() >= f.inputs.size() || !f.inputs[arg.getArgNumber()])
      return std::nullopt;
    const Access &a = *f.inputs[arg.getArgNumber()];
    if (!a.producer)
      return std::nullopt;
    Frame inner{a.producer, &a.loops, {}};
    for (const Access &in : a.inputs)
      inner.inputs.push_back(&in);
    return affineOf(yielded(a.producer), inner, depth + 1);
  }
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return getAffineConstantExpr(c.getSExtValue(), context);
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto idx = dyn_cast<linalg::IndexOp>(op))
    return idx.getDim() < f.loops->size()
               ? std::optional<AffineExpr>((*f.loops)[idx.getDim()])
               : std::nullopt;
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
          arith::ExtUIOp>(op))
    return affineOf(op->getOperand(0), f, depth + 1);
  auto lhs = [&] { return affineOf(op->getOperand(0), f, depth + 1); };
  auto rhs = [&] { return affineOf(op->getOperand(1), f, depth + 1); };
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
    std::optional<AffineExpr> a = lhs(), b = rhs();
    if (!a || !b)
      return std::nullopt;
    if (isa<arith::AddIOp>(op))
      return *a + *b;
    if (isa<arith::SubIOp>(op))
      return *a - *b;
    if (!isa<AffineConstantExpr>(*a) && !isa<AffineConstantExpr>(*b))
      return std::nullopt;
    return *a * *b;
  }
  return std::nullopt;
}

/// e = c j + r with c a constant and r free of j, or nullopt.
std::optional<std::pair<int64_t, AffineExpr>> linearInKey(AffineExpr e,
                                                         unsigned jDim,
                                                         unsigned numDims) {
  MLIRContext *context = e.getContext();
  auto at = [&](int64_t value) {
    return simplifyAffineExpr(
        e.replace(getAffineDimExpr(jDim, context),
                  getAffineConstantExpr(value, context)),
        numDims, 0);
  };
  AffineExpr r = at(0);
  auto c1 = dyn_cast<AffineConstantExpr>(simplifyAffineExpr(at(1) - r, numDims, 0));
  auto c2 = dyn_cast<AffineConstantExpr>(simplifyAffineExpr(at(2) - r, numDims, 0));
  if (!c1 || !c2 || c2.getValue() != 2 * c1.getValue())
    return std::nullopt;
  AffineExpr rebuilt = simplifyAffineExpr(
      getAffineDimExpr(jDim, context) * c1.getValue() + r, numDims, 0);
  if (rebuilt != simplifyAffineExpr(e, numDims, 0))
    return std::nullopt;
  return std::make_pair(c1.getValue(), r);
}

/// Whether every index summed in `e` is non-negative (dims and
/// non-negative constants, added or multiplied): an unsigned compare of it
/// is a signed one.
bool nonNegative(AffineExpr e) {
  if (isa<AffineDimExpr>(e))
    return true;
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue() >= 0;
  if (auto bin = dyn_cast<AffineBinaryOpExpr>(e))
    return (e.getKind() == AffineExprKind::Add ||
            e.getKind() == AffineExprKind::Mul) &&
           nonNegative(bin.getLHS()) && nonNegative(bin.getRHS());
  return false;
}

/// Narrows `range` by the keys `cond` (true: kept) allows: a compare of
/// affine indices linear in j with coefficient +-1, or a conjunction.
void narrow(Value cond, bool kept, const Frame &f, unsigned jDim,
            unsigned numDims, KeyRange &range, int depth = 0) {
  if (depth > 16)
    return;
  if (auto arg = dyn_cast<BlockArgument>(cond)) {
    if (arg.getOwner() != f.op.getBlock() ||
        arg.getArgNumber() >= f.inputs.size() || !f.inputs[arg.getArgNumber()])
      return;
    const Access &a = *f.inputs[arg.getArgNumber()];
    if (!a.producer)
      return;
    Frame inner{a.producer, &a.loops, {}};
    for (const Access &in : a.inputs)
      inner.inputs.push_back(&in);
    return narrow(yielded(a.producer), kept, inner, jDim, numDims, range,
                  depth + 1);
  }
  Operation *op = cond.getDefiningOp();
  if (!op)
    return;
  if (auto both = dyn_cast<arith::AndIOp>(op)) {
    if (!kept)
      return; // masked where both hold: no bound on the kept keys
    narrow(both.getLhs(), true, f, jDim, numDims, range, depth + 1);
    narrow(both.getRhs(), true, f, jDim, numDims, range, depth + 1);
    return;
  }
  if (auto either = dyn_cast<arith::OrIOp>(op)) {
    if (kept)
      return; // kept where either holds: no bound
    narrow(either.getLhs(), false, f, jDim, numDims, range, depth + 1);
    narrow(either.getRhs(), false, f, jDim, numDims, range, depth + 1);
    return;
  }
  if (auto x = dyn_cast<arith::XOrIOp>(op)) {
    APInt one;
    if (matchPattern(x.getRhs(), m_ConstantInt(&one)) && one.isAllOnes())
      return narrow(x.getLhs(), !kept, f, jDim, numDims, range, depth + 1);
    return;
  }
  auto cmp = dyn_cast<arith::CmpIOp>(op);
  if (!cmp)
    return;
  std::optional<AffineExpr> a = affineOf(cmp.getLhs(), f),
                            b = affineOf(cmp.getRhs(), f);
  if (!a || !b)
    return;
  using P = arith::CmpIPredicate;
  P pred = cmp.getPredicate();
  bool isUnsigned = pred == P::ult || pred == P::ule || pred == P::ugt ||
                    pred == P::uge;
  if (isUnsigned && (!nonNegative(*a) || !nonNegative(*b)))
    return;
  // The kept condition as `lhs pred 0`.
  if (!kept)
    pred = arith::invertPredicate(pred);
  std::optional<std::pair<int64_t, AffineExpr>> lin =
      linearInKey(*a - *b, jDim, numDims);
  if (!lin || (lin->first != 1 && lin->first != -1))
    return;
  // c j + r pred 0.
  int64_t c = lin->first;
  AffineExpr r = lin->second;
  enum { Lt, Le, Gt, Ge, Other } kind = Other;
  switch (pred) {
  case P::slt:
  case P::ult:
    kind = Lt;
    break;
  case P::sle:
  case P::ule:
    kind = Le;
    break;
  case P::sgt:
  case P::ugt:
    kind = Gt;
    break;
  case P::sge:
  case P::uge:
    kind = Ge;
    break;
  default:
    return;
  }
  // j + r < 0: j < -r;  -j + r < 0: j > r.
  AffineExpr bound = c == 1 ? -r : r;
  bool upper = (c == 1) == (kind == Lt || kind == Le);
  bool strict = kind == Lt || kind == Gt;
  AffineExpr one = getAffineConstantExpr(1, cond.getContext());
  if (upper) // j < bound (strict) or j <= bound
    range.hi = simplifyAffineExpr(strict ? bound : bound + one, numDims, 0);
  else // j > bound (strict) or j >= bound
    range.lo = simplifyAffineExpr(strict ? bound + one : bound, numDims, 0);
}

/// Whether `v` is the constant -inf, or a value below -1e30 (the lowest
/// finite float of its type: `finite` is then set), as a constant of the
/// body or (with `frame`) a splat constant input of the frame's op.
bool isMaskValue(Value v, bool &finite, const Frame *frame = nullptr) {
  FloatAttr attr;
  if (!matchPattern(v, m_Constant(&attr))) {
    // A block argument read from a splat constant: torch-mlir's masked_fill
    // passes its fill as a 0-d tensor input (`dense<-3.40282347E+38> :
    // tensor<f32>`), not as a constant of the body.
    auto arg = dyn_cast<BlockArgument>(v);
    if (!frame || !arg || arg.getOwner() != frame->op.getBlock() ||
        arg.getArgNumber() >= frame->inputs.size() ||
        !frame->inputs[arg.getArgNumber()] ||
        frame->inputs[arg.getArgNumber()]->producer)
      return false;
    DenseElementsAttr dense;
    if (!matchPattern(frame->inputs[arg.getArgNumber()]->source,
                      m_Constant(&dense)) ||
        !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
      return false;
    attr = dense.getSplatValue<FloatAttr>();
  }
  APFloat x = attr.getValue();
  if (x.isInfinity() && x.isNegative()) {
    finite = false;
    return true;
  }
  if (x.convertToDouble() <= -1e30) {
    finite = true;
    return true;
  }
  return false;
}

/// Whether the ops from `cur` on (each value with one use, up to the
/// body's yield) map a masked score (-inf, or a value below -1e30) to one:
/// casts, additions of another value, subtractions of one, and
/// multiplications or divisions by positive constants.
bool preservesMask(Value cur) {
  while (cur.hasOneUse()) {
    Operation *op = *cur.getUsers().begin();
    if (op->hasTrait<OpTrait::IsTerminator>())
      return true;
    bool ok = llvm::TypeSwitch<Operation *, bool>(op)
                  .Case<arith::ExtFOp, arith::TruncFOp>([](auto) { return true; })
                  .Case<arith::AddFOp>([&](arith::AddFOp add) {
                    return add.getLhs() != add.getRhs();
                  })
                  .Case<arith::SubFOp>([&](arith::SubFOp sub) {
                    return sub.getLhs() == cur && sub.getRhs() != cur;
                  })
                  .Case<arith::MulFOp, arith::DivFOp>([&](Operation *o) {
                    if (isa<arith::DivFOp>(o) && o->getOperand(0) != cur)
                      return false;
                    Value other = o->getOperand(0) == cur ? o->getOperand(1)
                                                          : o->getOperand(0);
                    FloatAttr c;
                    return matchPattern(other, m_Constant(&c)) &&
                           c.getValueAsDouble() > 0;
                  })
                  .Case<arith::SelectOp>([&](arith::SelectOp s) {
                    bool finite;
                    Value other = s.getTrueValue() == cur ? s.getFalseValue()
                                                          : s.getTrueValue();
                    return s.getCondition() != cur && isMaskValue(other, finite);
                  })
                  .Default([](Operation *) { return false; });
    if (!ok)
      return false;
    cur = op->getResult(0);
  }
  return false;
}

/// Calls `fn(lo, hi, rows)` for each class of rows of `m` that share the
/// clamped key range [lo, hi) of `range` (the bounds' values over the O
/// dimensions they depend on; the others multiply `rows`).
void forEachRange(const Match &m, const KeyRange &range,
                  function_ref<void(int64_t, int64_t, int64_t)> fn) {
  auto shape = cast<RankedTensorType>(m.pv->getResult(0).getType()).getShape();
  SmallVector<unsigned> used;
  int64_t rest = 1;
  for (unsigned d = 0; d < m.numO; ++d) {
    if (d == m.eDim)
      continue;
    if ((range.lo && range.lo->isFunctionOfDim(d)) ||
        (range.hi && range.hi->isFunctionOfDim(d)))
      used.push_back(d);
    else
      rest *= shape[d];
  }
  MLIRContext *context = m.pv->getContext();
  SmallVector<AffineExpr> values(m.numO + 2, getAffineConstantExpr(0, context));
  auto evaluate = [&](std::optional<AffineExpr> e, int64_t fallback) {
    if (!e)
      return fallback;
    auto c = dyn_cast<AffineConstantExpr>(
        simplifyAffineExpr(e->replaceDims(values), 0, 0));
    return c ? c.getValue() : fallback;
  };
  int64_t classes = 1;
  for (unsigned d : used)
    classes *= shape[d];
  for (int64_t i = 0; i < classes; ++i) {
    int64_t left = i;
    for (unsigned d : llvm::reverse(used)) {
      values[d] = getAffineConstantExpr(left % shape[d], context);
      left /= shape[d];
    }
    int64_t lo = std::max<int64_t>(0, evaluate(range.lo, 0));
    int64_t hi = std::min<int64_t>(m.keys, evaluate(range.hi, m.keys));
    fn(lo, hi, rest);
  }
}

/// Whether `a` reads a value that is not known at compile time: a tensor
/// other than a splat constant, directly or through an inlined producer's
/// inputs (an attention_mask argument, a padding mask baked in as a dense
/// constant).
bool readsData(const Access &a) {
  if (!a.producer) {
    DenseElementsAttr dense;
    return !(matchPattern(a.source, m_Constant(&dense)) && dense.isSplat());
  }
  return llvm::any_of(a.inputs, readsData);
}

/// The key range of `m`'s chain (see the header): every masking select
/// whose masked value stays masked through the rest of its op and through
/// the later ops of the chain narrows it.
KeyRange keyRange(const Match &m) {
  KeyRange range;
  unsigned jDim = m.numO, numDims = m.numO + 2;
  bool finiteMask = false;
  for (auto [i, link] : llvm::enumerate(m.chain)) {
    Frame f{link.op, &m.scoreIdx, {}};
    f.inputs.assign(link.op.getNumDpsInputs(), nullptr);
    for (auto &[input, access] : link.sides)
      f.inputs[input] = &access;
    for (Operation &op : link.op.getBlock()->without_terminator()) {
      auto select = dyn_cast<arith::SelectOp>(op);
      bool finite = false;
      if (!select || !isa<FloatType>(select.getType()))
        continue;
      bool maskTrue = isMaskValue(select.getTrueValue(), finite, &f);
      bool maskFalse =
          !maskTrue && isMaskValue(select.getFalseValue(), finite, &f);
      if ((!maskTrue && !maskFalse) || !preservesMask(select.getResult()) ||
          !llvm::all_of(ArrayRef<ChainOp>(m.chain).drop_front(i + 1),
                        [](const ChainOp &later) {
                          return preservesMask(later.op.getBlock()->getArgument(
                              later.scoreInput));
                        }))
        continue;
      KeyRange found;
      narrow(select.getCondition(), /*kept=*/maskFalse, f, jDim, numDims,
             found);
      if (found.lo)
        range.lo = found.lo;
      if (found.hi)
        range.hi = found.hi;
      finiteMask |= finite && (found.lo || found.hi);
    }
  }
  if (finiteMask) {
    // With a finite mask value a row whose keys were all skipped would not
    // be the uniform average the unfused softmax gives it: the range holds
    // only when every row keeps a key, and only when nothing else in the
    // chain can mask the keys it keeps. A padding mask read from data (left
    // padding: a query of the padding sees only padded keys) fills a row's
    // whole range with the same lowest float; the unfused softmax then
    // weighs every key of the row alike, the skipped ones included.
    for (const ChainOp &link : m.chain)
      for (auto &[input, access] : link.sides)
        if (readsData(access))
          return {};
    bool empty = false;
    forEachRange(m, range, [&](int64_t lo, int64_t hi, int64_t) {
      empty |= hi <= lo;
    });
    if (empty)
      return {};
  }
  return range;
}

/// Per O dimension i (not the value column) that K uses: the largest g > 1
/// dividing its extent such that every index of K and V that uses d_i uses
/// no other dimension and is constant on each block of g consecutive values
/// of d_i (evaluated over the whole extent), else 1. torch-mlir's repeat_kv
/// gives K the indices (bh floordiv H, (bh mod H) floordiv g, ...) over the
/// [b * h, s, d] product's first dimension: blocks of g.
SmallVector<int64_t> kvGroups(const Match &m) {
  auto shape = cast<RankedTensorType>(m.pv->getResult(0).getType()).getShape();
  SmallVector<int64_t> groups(m.numO, 1);
  MLIRContext *context = m.pv->getContext();
  unsigned numDims = m.numO + 2;
  for (unsigned i = 0; i < m.numO; ++i) {
    if (i == m.eDim || !usesDim(m.k.idx, i))
      continue;
    SmallVector<AffineExpr> uses;
    bool alone = true;
    for (const Access *a : {&m.k, &m.v})
      for (AffineExpr e : a->idx) {
        if (!e.isFunctionOfDim(i))
          continue;
        for (unsigned d = 0; d < numDims; ++d)
          if (d != i && e.isFunctionOfDim(d))
            alone = false;
        uses.push_back(e);
      }
    int64_t n = shape[i];
    if (!alone || n > (int64_t(1) << 16))
      continue;
    // The values of each use over d_i.
    SmallVector<SmallVector<int64_t>> values;
    for (AffineExpr e : uses) {
      SmallVector<int64_t> v;
      for (int64_t x = 0; x < n; ++x) {
        SmallVector<AffineExpr> at(numDims, getAffineConstantExpr(0, context));
        at[i] = getAffineConstantExpr(x, context);
        auto c = dyn_cast<AffineConstantExpr>(
            simplifyAffineExpr(e.replaceDims(at), 0, 0));
        if (!c)
          break;
        v.push_back(c.getValue());
      }
      if (int64_t(v.size()) != n)
        break;
      values.push_back(std::move(v));
    }
    if (values.size() != uses.size())
      continue;
    for (int64_t g = n; g > 1; --g) {
      if (n % g)
        continue;
      bool blocks = llvm::all_of(values, [&](ArrayRef<int64_t> v) {
        for (int64_t x = 0; x < n; ++x)
          if (v[x] != v[x - x % g])
            return false;
        return true;
      });
      if (blocks) {
        groups[i] = g;
        break;
      }
    }
  }
  return groups;
}

//===----------------------------------------------------------------------===//
// The matcher
//===----------------------------------------------------------------------===//

class Matcher {
public:
  explicit Matcher(linalg::LinalgOp pv) : pv(pv) {}
  FailureOr<Match> run(std::string &why);

private:
  LogicalResult fail(std::string &why, const Twine &reason) {
    why = reason.str();
    return failure();
  }
  FailureOr<Match> matchFrom(unsigned pIndex, std::string &why);

  linalg::LinalgOp pv;
};

FailureOr<Match> Matcher::run(std::string &why) {
  if (!isCandidate(pv) || !pv.hasPureTensorSemantics() ||
      pv.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(pv))
    return failure();
  MLIRContext *context = pv->getContext();
  for (unsigned p = 0; p < 2; ++p) {
    Access a = traceBack(pv.getDpsInputs()[p],
                         substitute(pv.getIndexingMapsArray()[p],
                                    dimsOf(context, pv.getNumLoops())));
    if (!looksLikeSoftmax(a.source))
      continue;
    FailureOr<Match> m = matchFrom(p, why);
    if (succeeded(m) || !why.empty())
      return m;
  }
  return failure();
}

FailureOr<Match> Matcher::matchFrom(unsigned pIndex, std::string &why) {
  MLIRContext *context = pv->getContext();
  Match m;
  m.pv = pv;
  SmallVector<Operation *> passed;
  if (!pv.hasPureTensorSemantics() || pv->getNumResults() != 1)
    return failure(); // the product with V is not on tensors
  auto outType = cast<RankedTensorType>(pv->getResult(0).getType());
  if (!outType.hasStaticShape())
    return failure(); // dynamic shapes
  SmallVector<AffineMap> pvMaps = pv.getIndexingMapsArray();
  AffineMap oMap = pvMaps[2];
  if (!oMap.isProjectedPermutation() ||
      oMap.getNumResults() != pv.getNumParallelLoops())
    return failure(); // the product with V is not a plain contraction
  m.numO = oMap.getNumResults();
  unsigned jDim = m.numO, dDim = m.numO + 1;
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, context); };

  // The product's loops over the kernel dims.
  Exprs pvLoops(pv.getNumLoops());
  SmallVector<int64_t> ranges = pv.getStaticLoopRanges();
  for (unsigned l = 0; l < pv.getNumLoops(); ++l) {
    if (linalg::isReductionIterator(pv.getIteratorTypesArray()[l])) {
      pvLoops[l] = dim(jDim);
      m.keys = ranges[l];
      continue;
    }
    std::optional<unsigned> at = oMap.getResultPosition(dim(l));
    if (!at)
      return failure(); // the product with V is not a plain contraction
    pvLoops[l] = dim(*at);
  }
  AffineMap pMap = pvMaps[pIndex], vMap = pvMaps[1 - pIndex];
  // The value column: the parallel loop P does not use.
  std::optional<unsigned> e;
  for (unsigned l = 0; l < pv.getNumLoops(); ++l)
    if (!linalg::isReductionIterator(pv.getIteratorTypesArray()[l]) &&
        !pMap.isFunctionOfDim(l)) {
      if (e)
        return failure(); // P broadcast over two output dimensions
      e = *oMap.getResultPosition(dim(l));
    }
  if (!e)
    return failure(); // the output has no value column
  m.eDim = *e;

  Access p = traceBack(pv.getDpsInputs()[pIndex], substitute(pMap, pvLoops),
                       &passed);
  // Probabilities rounded to the product's operand type by a generic of
  // their own (torch-mlir's bf16 exports) are P: the kernels round P to the
  // operand type themselves (the tensor-core kernel packs it as bf16 for
  // mma.sync), so the cast dies with the match.
  if (auto cast = p.source.getDefiningOp<linalg::GenericOp>();
      isCastOnly(cast)) {
    m.fused.insert(cast);
    p = traceBack(cast.getDpsInputs()[0], p.idx, &passed);
  }
  m.scoreIdx = p.idx;
  unsigned rank = p.idx.size();
  if (rank < 2 || p.idx.back() != dim(jDim) ||
      usesDim(ArrayRef<AffineExpr>(p.idx).drop_back(), jDim))
    return failure(); // the softmax is not over the keys of the product with V
  m.v = traceBack(pv.getDpsInputs()[1 - pIndex], substitute(vMap, pvLoops));
  // Silent until P is known to be E / sum_j E (a softmax over the keys):
  // training graphs contract softmax-derived values in many other ways.

  // N = E / S.
  auto n = p.source.getDefiningOp<linalg::GenericOp>();
  if (!n || !allParallel(n) || n.getNumDpsInputs() != 2 ||
      n->getNumResults() != 1 || n.getNumLoops() != rank ||
      !n.getMatchingIndexingMap(n.getDpsInitOperand(0)).isIdentity())
    return failure(); // not an elementwise division of two inputs
  auto div = peelCasts(yielded(n)).getDefiningOp<arith::DivFOp>();
  int eIn = div ? inputOf(n, peelCasts(div.getLhs())) : -1;
  int sIn = div ? inputOf(n, peelCasts(div.getRhs())) : -1;
  if (eIn < 0 || sIn < 0 || eIn == sIn)
    return failure(); // not a division of one input by the other
  Access eAccess = traceBack(
      n.getDpsInputs()[eIn],
      substitute(n.getMatchingIndexingMap(n.getDpsInputOperand(eIn)),
                 dimsOf(context, rank)),
      &passed);
  if (eAccess.idx != dimsOf(context, rank))
    return failure(); // a numerator read elsewhere than at the scores
  m.fused.insert(n);
  Value eVal = eAccess.source;

  // S = sum_j E, read at its own output indices.
  Exprs sIdx, sOut;
  Operation *sOp = rowStatistic(n, n.getDpsInputOperand(sIn), rank, passed,
                                sIdx);
  Value sInput;
  if (failed(matchRowReduction<arith::AddFOp>(sOp, rank, sInput, sOut)))
    return failure(); // the softmax's denominator is not a row sum
  if (sIdx != sOut)
    return failure(); // a denominator read at other rows than it sums
  if (traceBack(sInput, dimsOf(context, rank)).source != eVal)
    return failure(); // a denominator that does not sum the numerator
  // From here on the product contracts a softmax over its keys: every
  // failure says which step did not match.
  if (fillValue(cast<linalg::LinalgOp>(sOp).getDpsInits()[0]) != 0.0)
    return fail(why, "the softmax's row sum does not start from zero");
  m.fused.insert(sOp);
  if (fillValue(pv.getDpsInits()[0]) != 0.0)
    return fail(why, "the product with V does not start from zero");

  // E = exp(X - M): one generic, or a subtraction then an exp.
  auto expOp = eVal.getDefiningOp<linalg::GenericOp>();
  if (!isElementwise(expOp, rank))
    return fail(why, "the softmax's numerator is not an elementwise exp");
  auto exp = peelCasts(yielded(expOp)).getDefiningOp<math::ExpOp>();
  if (!exp)
    return fail(why, "the softmax's numerator is not an elementwise exp");
  m.fused.insert(expOp);
  linalg::GenericOp subOp = expOp;
  Value diff = peelCasts(exp.getOperand());
  if (!diff.getDefiningOp<arith::SubFOp>()) {
    int in = inputOf(expOp, diff);
    if (in < 0)
      return fail(why, "the softmax's numerator is not exp(x - max)");
    Access d = traceBack(
        expOp.getDpsInputs()[in],
        substitute(expOp.getMatchingIndexingMap(expOp.getDpsInputOperand(in)),
                   dimsOf(context, rank)),
        &passed);
    subOp = d.source.getDefiningOp<linalg::GenericOp>();
    if (d.idx != dimsOf(context, rank) || !isElementwise(subOp, rank))
      return fail(why, "the softmax's numerator is not exp(x - max)");
    diff = peelCasts(yielded(subOp));
    m.fused.insert(subOp);
  }
  auto sub = diff.getDefiningOp<arith::SubFOp>();
  int xIn = sub ? inputOf(subOp, peelCasts(sub.getLhs())) : -1;
  int mIn = sub ? inputOf(subOp, peelCasts(sub.getRhs())) : -1;
  if (xIn < 0 || mIn < 0 || xIn == mIn)
    return fail(why, "the softmax's numerator is not exp(x - max)");
  Access xAccess = traceBack(
      subOp.getDpsInputs()[xIn],
      substitute(subOp.getMatchingIndexingMap(subOp.getDpsInputOperand(xIn)),
                 dimsOf(context, rank)),
      &passed);
  if (xAccess.idx != dimsOf(context, rank))
    return fail(why, "the softmax's input is not read at the scores' "
                     "positions");
  Value xVal = xAccess.source;

  // M = max_j X, from -inf (or the lowest float), read at its own indices.
  Exprs mIdx, mOut;
  Operation *mOp = rowStatistic(subOp, subOp.getDpsInputOperand(mIn), rank,
                                passed, mIdx);
  Value mInput;
  if (failed(matchRowReduction<arith::MaximumFOp, arith::MaxNumFOp>(
          mOp, rank, mInput, mOut)) ||
      mIdx != mOut ||
      traceBack(mInput, dimsOf(context, rank)).source != xVal)
    return fail(why, "the softmax does not subtract the row maximum of its "
                     "input");
  std::optional<double> mInit =
      fillValue(cast<linalg::LinalgOp>(mOp).getDpsInits()[0]);
  if (!mInit || *mInit > -1e30)
    return fail(why, "the row maximum does not start from -inf");
  m.fused.insert(mOp);

  // X = f_k(...f_1(view of C)): elementwise ops on the scores, last first.
  // `curIdx`: the indices of `cur` over the kernel dims (the score indices,
  // until a view of another shape: past it only ops of the scores' values
  // alone, which need no indices, may follow).
  Value cur = xVal;
  Exprs curIdx = m.scoreIdx;
  bool pastView = false;
  while (true) {
    Access c = traceBack(cur, curIdx);
    auto cOp = c.source.getDefiningOp<linalg::LinalgOp>();
    if (cOp && cOp.getNumReductionLoops() == 1 && cOp.getNumDpsInputs() == 2 &&
        linalg::isaContractionOpInterface(cOp)) {
      traceBack(cur, curIdx, &passed);
      // C = contract_d(Q, K).
      if (!cOp.hasPureTensorSemantics() || cOp->getNumResults() != 1)
        return fail(why, "the scores are not on tensors");
      if (fillValue(cOp.getDpsInits()[0]) != 0.0)
        return fail(why, "the scores contraction does not start from zero");
      SmallVector<AffineMap> cMaps = cOp.getIndexingMapsArray();
      AffineMap out = cMaps[2];
      if (!out.isProjectedPermutation() ||
          out.getNumResults() != cOp.getNumParallelLoops())
        return fail(why, "the scores contraction is not a plain contraction");
      Exprs loops(cOp.getNumLoops());
      for (unsigned l = 0; l < cOp.getNumLoops(); ++l) {
        if (linalg::isReductionIterator(cOp.getIteratorTypesArray()[l])) {
          loops[l] = dim(dDim);
          m.headDim = cOp.getStaticLoopRanges()[l];
        } else {
          std::optional<unsigned> at = out.getResultPosition(dim(l));
          if (!at)
            return fail(why, "the scores contraction is not a plain "
                             "contraction");
          loops[l] = c.idx[*at];
        }
      }
      Access a = traceBack(cOp.getDpsInputs()[0], substitute(cMaps[0], loops));
      Access b = traceBack(cOp.getDpsInputs()[1], substitute(cMaps[1], loops));
      if (usesDim(a.idx, jDim))
        std::swap(a, b);
      if (usesDim(a.idx, jDim))
        return fail(why, "neither operand of the scores is independent of the "
                         "keys");
      m.q = a;
      m.k = b;
      m.scoreType = cast<RankedTensorType>(cOp->getResult(0).getType())
                        .getElementType();
      m.fused.insert(cOp);
      break;
    }
    auto g = cur.getDefiningOp<linalg::GenericOp>();
    if (!g || pastView) {
      // A view (collapse, expand, ...) of an op of the scores' values alone.
      auto viewed = c.source.getDefiningOp<linalg::GenericOp>();
      if (isPureOfScores(viewed)) {
        if (m.chain.size() >= 16)
          return fail(why,
                      "more than 16 ops between the scores and the softmax");
        traceBack(cur, curIdx, &passed);
        m.chain.push_back(ChainOp{viewed, 0, {}});
        m.fused.insert(viewed);
        cur = viewed.getDpsInputs()[0];
        curIdx = c.idx;
        pastView = true;
        continue;
      }
    }
    if (!isElementwise(g, rank) || pastView)
      return fail(why, "the scores reach the softmax through an op that is "
                       "not elementwise");
    if (m.chain.size() >= 16)
      return fail(why, "more than 16 ops between the scores and the softmax");
    if (!g.getBlock()->getArgument(g.getNumDpsInputs()).use_empty())
      return fail(why, "an op on the scores reads its output operand");
    if (!capturesOnlyConstants(g))
      return fail(why, "an op on the scores captures a value that is not a "
                       "constant");
    // The scores operand: identity-mapped, reaching a contraction through
    // identity-mapped elementwise ops.
    std::optional<unsigned> scoreIn;
    for (OpOperand *in : g.getDpsInputOperands()) {
      if (!isIdentity(g, in))
        continue;
      if (!reachesContraction(in->get(), m.scoreIdx))
        continue;
      if (scoreIn)
        return fail(why, "an op on the scores combines two score tensors");
      scoreIn = in->getOperandNumber();
    }
    if (!scoreIn)
      return fail(why, "the softmax's input does not come from a contraction "
                       "over the head dimension");
    ChainOp link{g, *scoreIn, {}};
    for (OpOperand *in : g.getDpsInputOperands()) {
      if (in->getOperandNumber() == *scoreIn)
        continue;
      auto type = dyn_cast<RankedTensorType>(in->get().getType());
      if (!type || !type.hasStaticShape())
        return fail(why, "an op on the scores reads an operand that is not a "
                         "static tensor");
      Access side = traceBack(
          in->get(), substitute(g.getMatchingIndexingMap(in), m.scoreIdx));
      inlineIndexOnly(side);
      link.sides.push_back({in->getOperandNumber(), std::move(side)});
    }
    m.chain.push_back(std::move(link));
    m.fused.insert(g);
    cur = g.getDpsInputs()[*scoreIn];
  }
  std::reverse(m.chain.begin(), m.chain.end());

  // Views between the ops die with them; nothing else may use the fused ops.
  for (Operation *op : passed)
    m.fused.insert(op);
  for (Operation *op : m.fused)
    for (Operation *user : op->getUsers())
      if (!m.fused.contains(user) && user != pv.getOperation())
        return fail(why, "an intermediate (scores, softmax statistics or "
                         "probabilities) has another use");
  for (const ChainOp &link : m.chain)
    for (auto &side : link.sides)
      if (Operation *def = side.second.source.getDefiningOp())
        if (m.fused.contains(def))
          return fail(why, "a mask is computed from the scores");
  for (Value src : {m.q.source, m.k.source, m.v.source})
    if (!isa<RankedTensorType>(src.getType()) ||
        !cast<RankedTensorType>(src.getType()).hasStaticShape() ||
        !isa<FloatType>(cast<RankedTensorType>(src.getType()).getElementType()))
      return fail(why, "Q, K and V are not static float tensors");
  if (!isa<FloatType>(outType.getElementType()) ||
      !isa<FloatType>(m.scoreType))
    return fail(why, "the scores or the output are not floats");
  if (usesDim(m.v.idx, dDim) || usesDim(m.q.idx, jDim))
    return fail(why, "the operands do not separate keys and head dimension");
  m.range = keyRange(m);
  m.kvGroup = kvGroups(m);
  return m;
}

} // namespace

bool mlir::tp::attention::isCandidate(linalg::LinalgOp op) {
  return op.getNumReductionLoops() == 1 && op.getNumDpsInputs() == 2;
}

FailureOr<Match> mlir::tp::attention::matchAttention(linalg::LinalgOp pv,
                                                     std::string &why) {
  return Matcher(pv).run(why);
}

int64_t mlir::tp::attention::valueDim(const Match &m) {
  return cast<RankedTensorType>(m.pv->getResult(0).getType())
      .getDimSize(m.eDim);
}

int64_t mlir::tp::attention::rowCount(const Match &m) {
  auto shape = cast<RankedTensorType>(m.pv->getResult(0).getType()).getShape();
  int64_t n = 1;
  for (unsigned i = 0; i < m.numO; ++i)
    if (i != m.eDim)
      n *= shape[i];
  return n;
}

SmallVector<RowPart> mlir::tp::attention::rowParts(const Match &m) {
  auto shape = cast<RankedTensorType>(m.pv->getResult(0).getType()).getShape();
  SmallVector<RowPart> outer, split, inner;
  for (unsigned i = 0; i < m.numO; ++i) {
    if (i == m.eDim)
      continue;
    int64_t g = i < m.kvGroup.size() ? m.kvGroup[i] : 1;
    if (g > 1) {
      outer.push_back({i, shape[i] / g, g, true});
      split.push_back({i, g, 1, false});
    } else if (usesDim(m.k.idx, i)) {
      outer.push_back({i, shape[i], 1, true});
    } else {
      inner.push_back({i, shape[i], 1, false});
    }
  }
  outer.append(split);
  outer.append(inner);
  return outer;
}

std::pair<int64_t, int64_t>
mlir::tp::attention::headsAndQueries(const Match &m) {
  int64_t heads = 1, queries = 1;
  for (const RowPart &part : rowParts(m))
    (part.outer ? heads : queries) *= part.extent;
  return {heads, queries};
}

double mlir::tp::attention::attentionFlops(const Match &m) {
  double pairs = 0;
  forEachRange(m, m.range, [&](int64_t lo, int64_t hi, int64_t rows) {
    pairs += double(std::max<int64_t>(0, hi - lo)) * double(rows);
  });
  return 2.0 * double(m.headDim + valueDim(m)) * pairs;
}
