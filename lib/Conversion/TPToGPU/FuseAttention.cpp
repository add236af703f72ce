//===- FuseAttention.cpp - tp-fuse-attention --------------------*- C++ -*-===//
//
// Attention, recognised on tensors and replaced by one fused kernel that
// never materialises the [batch, heads, seq, seq] scores
// (docs/passes/lower-gpu.md, "Fused attention").
//
// Matching starts at every contraction with one reduction dimension (the
// candidate P·V) and walks back:
//
//   O  = contract_j(P, V)        P a view of N, V a view of some tensor
//   N  = E / S                   elementwise, S a row statistic
//   S  = sum_j E                 row reduction over the last dimension
//   E  = exp(X - M)              one generic, or a sub then an exp
//   M  = max_j X                 row reduction (extra outputs unused: argmax)
//   X  = f_k(...f_1(C, side...)) elementwise generics on the scores: scale,
//                                masks (tensors or linalg.index compares)
//   C  = contract_d(Q, K)        a view of C feeds f_1
//
// "Views" are collapse_shape, expand_shape, static unit-stride extract_slice,
// linalg.transpose, linalg.broadcast
// and copy/broadcast generics (GQA's expanded K and V). Every tensor the kernel
// reads is described by an Access: its source (the value where the views
// stop) and its indices as affine expressions over the kernel dimensions
// (o_0..o_{n-1}: the indices of O; j: the key; d: the head dimension of Q·K).
// Composing the views this way handles tp-gen's [b, s, h, d] operands and
// torch-mlir's [b*h, s, d] batch matmuls alike, and GQA (h floordiv g).
//
// The replacement is a call of a generated private function on buffers
// (bufferization.to_buffer of the sources, a fresh output buffer). Its body
// is, for each row of O (all indices but the value column e):
//
//   m = -inf, l = 0, acc[e] = 0
//   for j:  s = f(sum_d Q[d] K[j, d])           (f: the cloned score chain)
//           m' = max(m, s); a = exp(m - m'); p = exp(s - m')
//           l = l a + p; acc[e] = acc[e] a + p V[j, e]; m = m'
//   O[e] = acc[e] / l
//
// in f32 whatever the element types. target=gpu: one warp per row (8 rows per
// block of 256 threads, neighbouring queries of one head); lane t holds Q[d] and acc[e] for d, e = t + 32 k, and
// the dot product is summed with a gpu.shuffle xor butterfly. target=loops:
// the same recurrence in scf loops on the host (for the CPU numerics check).
// m' = -inf (a fully masked prefix) subtracts 0 instead, so exp never sees
// -inf - -inf.
//
// A candidate whose P operand comes from a softmax-like op (a division by a
// row sum) but that does not match gets a remark "attention not fused: ...";
// the unfused ops stay.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir::tp {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;

namespace {

using Exprs = SmallVector<AffineExpr>;

/// A tensor the kernel reads: `source` at indices `idx` (affine expressions
/// over the kernel dimensions).
struct Access {
  Value source;
  Exprs idx;
};

/// One elementwise op of the score chain: `scoreInput` is the operand that
/// carries the scores, the others are read through `sides`.
struct ChainOp {
  linalg::GenericOp op;
  unsigned scoreInput;
  SmallVector<std::pair<unsigned, Access>> sides; // input number, access
};

struct Match {
  linalg::LinalgOp pv;
  unsigned numO;    // rank of O
  unsigned eDim;    // the value column among O's dimensions
  int64_t keys;     // extent of j
  int64_t headDim;  // extent of d
  Access q, k, v;
  Exprs scoreIdx;   // the score space's indices over the kernel dims
  Type scoreType;   // element type of C (the chain's first input)
  SmallVector<ChainOp> chain;
  SetVector<Operation *> fused; // ops that die with the replacement
};

static MLIRContext *ctx(Value v) { return v.getContext(); }

static Exprs substitute(AffineMap map, ArrayRef<AffineExpr> dims) {
  Exprs out;
  for (AffineExpr e : map.getResults())
    out.push_back(e.replaceDims(dims));
  return out;
}

static bool usesDim(ArrayRef<AffineExpr> idx, unsigned dim) {
  return llvm::any_of(idx, [&](AffineExpr e) { return e.isFunctionOfDim(dim); });
}

/// The yielded value of a one-block body with casts (extf/truncf) peeled.
static Value peelCasts(Value v) {
  while (Operation *op = v.getDefiningOp())
    if (isa<arith::ExtFOp, arith::TruncFOp>(op))
      v = op->getOperand(0);
    else
      break;
  return v;
}

static Value yielded(linalg::LinalgOp op, unsigned i = 0) {
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  return yield.getOperand(i);
}

/// The input number a block argument of `op` stands for, or -1.
static int inputOf(linalg::LinalgOp op, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != op.getBlock() ||
      arg.getArgNumber() >= unsigned(op.getNumDpsInputs()))
    return -1;
  return arg.getArgNumber();
}

static bool isIdentity(linalg::LinalgOp op, OpOperand *operand) {
  return op.getMatchingIndexingMap(operand).isIdentity();
}

static bool allParallel(linalg::LinalgOp op) {
  return op.getNumLoops() == op.getNumParallelLoops();
}

/// Follows views back from `v` read at `idx`; records the view ops passed.
static Access traceBack(Value v, Exprs idx,
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
    idx = std::move(next);
  }
  return {v, idx};
}

/// Steps through reshapes that only add or drop unit dimensions (the
/// [rows, 1] statistics torch-mlir keeps).
static Value throughUnitViews(Value v, SmallVectorImpl<Operation *> &passed) {
  while (Operation *op = v.getDefiningOp()) {
    Value src;
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
      src = e.getSrc();
    else if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
      src = c.getSrc();
    else
      break;
    auto count = [](Value x) {
      auto t = cast<RankedTensorType>(x.getType());
      return llvm::count_if(t.getShape(), [](int64_t s) { return s != 1; });
    };
    if (count(src) != count(v) ||
        cast<RankedTensorType>(src.getType()).getNumElements() !=
            cast<RankedTensorType>(v.getType()).getNumElements())
      break;
    passed.push_back(op);
    v = src;
  }
  return v;
}

/// A map of the score space (rank r) to a row statistic: d0..d(r-2), then
/// optional constant zeros.
static bool isRowMap(AffineMap map, unsigned rank) {
  if (map.getNumDims() != rank || map.getNumResults() < rank - 1)
    return false;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    AffineExpr e = map.getResult(i);
    if (i < rank - 1 ? e != getAffineDimExpr(i, map.getContext())
                     : !isa<AffineConstantExpr>(e) ||
                           cast<AffineConstantExpr>(e).getValue() != 0)
      return false;
  }
  return true;
}

/// The constant a linalg.fill writes, when `init` is one.
static std::optional<double> fillValue(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  FloatAttr attr;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&attr)))
    return std::nullopt;
  return attr.getValueAsDouble();
}

/// A row reduction of `rank` dims over the last one into a row statistic,
/// whose first result combines with `combiner`; other results unused.
template <typename... Combiners>
static LogicalResult matchRowReduction(Operation *op, unsigned rank,
                                       Value &input) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!g || !g.hasPureTensorSemantics() || g.getNumDpsInputs() != 1 ||
      g.getNumLoops() != rank || g.getNumReductionLoops() != 1 ||
      !linalg::isReductionIterator(g.getIteratorTypesArray()[rank - 1]))
    return failure();
  for (unsigned i = 1; i < g->getNumResults(); ++i)
    if (!g->getResult(i).use_empty())
      return failure();
  if (!isIdentity(g, g.getDpsInputOperand(0)) ||
      !isRowMap(g.getMatchingIndexingMap(g.getDpsInitOperand(0)), rank))
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
  return success();
}

/// Values captured by `op`'s body must be constants (cloned into the kernel).
static bool capturesOnlyConstants(Operation *op) {
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

/// Whether `x` (read at `idx`) comes from a contraction with one reduction
/// through views and identity-mapped elementwise generics.
static bool reachesContraction(Value x, const Exprs &idx, int depth = 0) {
  if (depth > 16)
    return false;
  Access t = traceBack(x, idx);
  auto op = t.source.getDefiningOp<linalg::LinalgOp>();
  if (op && op.getNumReductionLoops() == 1 && op.getNumDpsInputs() == 2 &&
      linalg::isaContractionOpInterface(op))
    return true;
  auto prod = x.getDefiningOp<linalg::GenericOp>();
  if (!prod || !allParallel(prod) || prod->getNumResults() != 1)
    return false;
  for (OpOperand *in : prod.getDpsInputOperands())
    if (isIdentity(prod, in) && reachesContraction(in->get(), idx, depth + 1))
      return true;
  return false;
}

class Matcher {
public:
  explicit Matcher(linalg::LinalgOp pv) : pv(pv) {}

  /// Success: a match. Failure with an empty `why`: not attention (no
  /// division of a row sum over the product's keys). Failure with a reason:
  /// attention that cannot be fused.
  FailureOr<Match> run(std::string &why);

private:
  LogicalResult fail(std::string &why, const Twine &reason) {
    why = reason.str();
    return failure();
  }
  FailureOr<Match> matchFrom(unsigned pIndex, std::string &why);

  linalg::LinalgOp pv;
};

/// Whether `v` (traced) comes from a division by a row reduction: the
/// softmax's normalisation, what makes a contraction a candidate.
static bool looksLikeSoftmax(Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g)
    return false;
  bool divides = false;
  g.getBody()->walk([&](arith::DivFOp) { divides = true; });
  if (!divides)
    return false;
  for (Value in : g.getDpsInputs()) {
    SmallVector<Operation *> passed;
    Value s = throughUnitViews(in, passed);
    auto r = s.getDefiningOp<linalg::GenericOp>();
    if (r && r.getNumReductionLoops() == 1)
      return true;
  }
  return false;
}

FailureOr<Match> Matcher::run(std::string &why) {
  if (!pv.hasPureTensorSemantics() || pv.getNumDpsInputs() != 2 ||
      pv.getNumDpsInits() != 1 || pv.getNumReductionLoops() != 1 ||
      !linalg::isaContractionOpInterface(pv))
    return failure();
  MLIRContext *context = pv->getContext();
  for (unsigned p = 0; p < 2; ++p) {
    Exprs dims;
    for (unsigned i = 0; i < pv.getNumLoops(); ++i)
      dims.push_back(getAffineDimExpr(i, context));
    Access a = traceBack(pv.getDpsInputs()[p],
                         substitute(pv.getIndexingMapsArray()[p], dims));
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
  m.scoreIdx = p.idx;
  unsigned rank = p.idx.size();
  if (rank < 2 || p.idx.back() != dim(jDim) ||
      usesDim(ArrayRef<AffineExpr>(p.idx).drop_back(), jDim))
    return failure(); // the softmax is not over the keys of the product with V
  m.v = traceBack(pv.getDpsInputs()[1 - pIndex], substitute(vMap, pvLoops));

  // N = E / S.
  auto n = p.source.getDefiningOp<linalg::GenericOp>();
  if (!n || !allParallel(n) || n.getNumDpsInputs() != 2 ||
      n->getNumResults() != 1 || n.getNumLoops() != rank ||
      !n.getMatchingIndexingMap(n.getDpsInitOperand(0)).isIdentity())
    return failure(); // the probabilities are not an elementwise division
  auto div = peelCasts(yielded(n)).getDefiningOp<arith::DivFOp>();
  int eIn = div ? inputOf(n, peelCasts(div.getLhs())) : -1;
  int sIn = div ? inputOf(n, peelCasts(div.getRhs())) : -1;
  if (eIn < 0 || sIn < 0 || eIn == sIn ||
      !isIdentity(n, n.getDpsInputOperand(eIn)) ||
      !isRowMap(n.getMatchingIndexingMap(n.getDpsInputOperand(sIn)), rank))
    return failure(); // the probabilities are not exp(x - max) / sum
  m.fused.insert(n);
  Value eVal = n.getDpsInputs()[eIn];

  // S = sum_j E.
  Value sVal = throughUnitViews(n.getDpsInputs()[sIn], passed);
  Value sInput;
  if (failed(matchRowReduction<arith::AddFOp>(sVal.getDefiningOp(), rank,
                                              sInput)) ||
      sInput != eVal ||
      fillValue(cast<linalg::LinalgOp>(sVal.getDefiningOp()).getDpsInits()[0]) !=
          0.0)
    return failure(); // no row sum of the numerator from zero
  m.fused.insert(sVal.getDefiningOp());
  // From here on the product is a softmax over its keys times V: attention,
  // and a failure says why it is not fused. (Before, silence: training
  // graphs contract softmax-derived values in many other ways.)
  if (fillValue(pv.getDpsInits()[0]) != 0.0)
    return fail(why, "the product with V does not start from zero");

  // E = exp(X - M): one generic, or a subtraction then an exp.
  auto expOp = eVal.getDefiningOp<linalg::GenericOp>();
  if (!expOp || !allParallel(expOp) || expOp->getNumResults() != 1 ||
      expOp.getNumLoops() != rank ||
      !expOp.getMatchingIndexingMap(expOp.getDpsInitOperand(0)).isIdentity())
    return fail(why, "the softmax's numerator is not an elementwise exp");
  auto exp = peelCasts(yielded(expOp)).getDefiningOp<math::ExpOp>();
  if (!exp)
    return fail(why, "the softmax's numerator is not an elementwise exp");
  m.fused.insert(expOp);
  linalg::GenericOp subOp = expOp;
  Value diff = peelCasts(exp.getOperand());
  if (!diff.getDefiningOp<arith::SubFOp>()) {
    int in = inputOf(expOp, diff);
    if (in < 0 || !isIdentity(expOp, expOp.getDpsInputOperand(in)))
      return fail(why, "the softmax's numerator is not exp(x - max)");
    subOp = expOp.getDpsInputs()[in].getDefiningOp<linalg::GenericOp>();
    if (!subOp || !allParallel(subOp) || subOp->getNumResults() != 1 ||
        subOp.getNumLoops() != rank ||
        !subOp.getMatchingIndexingMap(subOp.getDpsInitOperand(0)).isIdentity())
      return fail(why, "the softmax's numerator is not exp(x - max)");
    diff = peelCasts(yielded(subOp));
    m.fused.insert(subOp);
  }
  auto sub = diff.getDefiningOp<arith::SubFOp>();
  int xIn = sub ? inputOf(subOp, peelCasts(sub.getLhs())) : -1;
  int mIn = sub ? inputOf(subOp, peelCasts(sub.getRhs())) : -1;
  if (xIn < 0 || mIn < 0 || xIn == mIn ||
      !isIdentity(subOp, subOp.getDpsInputOperand(xIn)) ||
      !isRowMap(subOp.getMatchingIndexingMap(subOp.getDpsInputOperand(mIn)),
                rank))
    return fail(why, "the softmax's numerator is not exp(x - max)");
  Value xVal = subOp.getDpsInputs()[xIn];

  // M = max_j X, from -inf (or the lowest float).
  Value mVal = throughUnitViews(subOp.getDpsInputs()[mIn], passed);
  Value mInput;
  if (failed(matchRowReduction<arith::MaximumFOp, arith::MaxNumFOp>(
          mVal.getDefiningOp(), rank, mInput)) ||
      mInput != xVal)
    return fail(why, "the softmax does not subtract the row maximum of its "
                     "input");
  std::optional<double> mInit =
      fillValue(cast<linalg::LinalgOp>(mVal.getDefiningOp()).getDpsInits()[0]);
  if (!mInit || *mInit > -1e30)
    return fail(why, "the row maximum does not start from -inf");
  m.fused.insert(mVal.getDefiningOp());

  // X = f_k(...f_1(view of C)): elementwise ops on the scores, last first.
  Value cur = xVal;
  while (true) {
    Access c = traceBack(cur, m.scoreIdx);
    auto cOp = c.source.getDefiningOp<linalg::LinalgOp>();
    if (cOp && cOp.getNumReductionLoops() == 1 && cOp.getNumDpsInputs() == 2 &&
        linalg::isaContractionOpInterface(cOp)) {
      traceBack(cur, m.scoreIdx, &passed);
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
    if (!g || !g.hasPureTensorSemantics() || !allParallel(g) ||
        g->getNumResults() != 1 || g.getNumLoops() != rank ||
        !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity())
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
      link.sides.push_back(
          {in->getOperandNumber(),
           traceBack(in->get(),
                     substitute(g.getMatchingIndexingMap(in), m.scoreIdx))});
    }
    m.chain.push_back(link);
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
  return m;
}

//===----------------------------------------------------------------------===//
// Emission
//===----------------------------------------------------------------------===//

static Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

static Value f32(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
}

static Value castFloat(OpBuilder &b, Location loc, Value v, Type to) {
  unsigned from = v.getType().getIntOrFloatBitWidth();
  unsigned bits = to.getIntOrFloatBitWidth();
  if (v.getType() == to)
    return v;
  if (from < bits)
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

/// Builds the body of the fused function from a match.
class Emitter {
public:
  Emitter(const Match &m, ArrayRef<Value> sources, ArrayRef<Value> buffers,
          Value out)
      : m(m), out(out) {
    for (auto [s, buf] : llvm::zip(sources, buffers))
      bufferOf[s] = buf;
  }

  /// `dims`: o_0..o_{n-1}, j, d (null where not defined).
  Value load(OpBuilder &b, Location loc, const Access &a, ArrayRef<Value> dims) {
    SmallVector<Value> idx;
    for (AffineExpr e : a.idx)
      idx.push_back(affine::expandAffineExpr(b, loc, e, dims, {}));
    return memref::LoadOp::create(b, loc, bufferOf.lookup(a.source), idx);
  }

  /// The score at (o, j) from the f32 dot product: C's type, the cloned
  /// chain, then f32.
  Value score(OpBuilder &b, Location loc, Value dot, ArrayRef<Value> dims) {
    Value cur = castFloat(b, loc, dot, m.scoreType);
    // A chain that starts by widening 16-bit scores to f32 gets the f32 dot
    // product itself (no rounding of the scores, as SDPA keeps them).
    std::optional<Value> widened;
    if (!m.chain.empty() && m.scoreType != dot.getType()) {
      auto &first = const_cast<linalg::GenericOp &>(m.chain.front().op);
      Value arg = first.getBlock()->getArgument(m.chain.front().scoreInput);
      if (!arg.use_empty() && llvm::all_of(arg.getUsers(), [&](Operation *u) {
            return isa<arith::ExtFOp>(u) &&
                   u->getResult(0).getType() == dot.getType();
          }))
        widened = dot;
    }
    SmallVector<Value> sIdx;
    for (AffineExpr e : m.scoreIdx)
      sIdx.push_back(affine::expandAffineExpr(b, loc, e, dims, {}));
    for (const ChainOp &link : m.chain) {
      IRMapping map;
      Block *body = const_cast<linalg::GenericOp &>(link.op).getBlock();
      map.map(body->getArgument(link.scoreInput), cur);
      for (auto &[input, access] : link.sides)
        map.map(body->getArgument(input), load(b, loc, access, dims));
      for (Operation &op : body->without_terminator()) {
        if (widened && &link == &m.chain.front() && isa<arith::ExtFOp>(op) &&
            op.getOperand(0) == body->getArgument(link.scoreInput)) {
          map.map(op.getResult(0), *widened);
          continue;
        }
        for (Value operand : op.getOperands())
          if (!map.contains(operand) &&
              !link.op->isAncestor(operand.getParentRegion()->getParentOp()))
            map.map(operand, b.clone(*operand.getDefiningOp())->getResult(0));
        if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
          map.map(idx.getResult(), sIdx[idx.getDim()]);
          continue;
        }
        b.clone(op, map);
      }
      cur = map.lookupOrDefault(
          yielded(const_cast<linalg::GenericOp &>(link.op)));
    }
    return castFloat(b, loc, cur, b.getF32Type());
  }

  void emitLoops(OpBuilder &b, Location loc);
  void emitGPU(OpBuilder &b, Location loc);

private:
  /// Row `row` of O to its indices (the value column left null). The
  /// indices K depends on (batch, heads) vary slowest and the others (the
  /// query) fastest, so that the warps of a block read the same keys.
  SmallVector<Value> rowDims(OpBuilder &b, Location loc, Value row) {
    auto shape = cast<MemRefType>(out.getType()).getShape();
    SmallVector<unsigned> inner, outer;
    for (unsigned i = 0; i < m.numO; ++i)
      if (i != m.eDim)
        (usesDim(m.k.idx, i) ? outer : inner).push_back(i);
    SmallVector<unsigned> order = outer; // slowest first
    order.append(inner);
    SmallVector<Value> dims(m.numO + 2);
    for (unsigned i : llvm::reverse(order)) {
      Value size = index(b, loc, shape[i]);
      dims[i] = arith::RemUIOp::create(b, loc, row, size);
      row = arith::DivUIOp::create(b, loc, row, size);
    }
    return dims;
  }
  int64_t rows() {
    auto shape = cast<MemRefType>(out.getType()).getShape();
    int64_t n = 1;
    for (unsigned i = 0; i < m.numO; ++i)
      if (i != m.eDim)
        n *= shape[i];
    return n;
  }
  int64_t valueDim() {
    return cast<MemRefType>(out.getType()).getShape()[m.eDim];
  }
  /// The online update of (max, sum) with score `s`: returns (max', sum',
  /// rescale, p).
  std::array<Value, 4> online(OpBuilder &b, Location loc, Value mx, Value l,
                              Value s) {
    Value next = arith::MaximumFOp::create(b, loc, mx, s);
    Value ninf = f32(b, loc, -std::numeric_limits<double>::infinity());
    Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        next, ninf);
    Value base = arith::SelectOp::create(b, loc, isInf, f32(b, loc, 0), next);
    Value alpha = math::ExpOp::create(
        b, loc, arith::SubFOp::create(b, loc, mx, base));
    Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, base));
    Value l2 = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, l, alpha), p);
    return {next, l2, alpha, p};
  }

  const Match &m;
  Value out;
  DenseMap<Value, Value> bufferOf;
};

void Emitter::emitLoops(OpBuilder &b, Location loc) {
  Type f = b.getF32Type();
  int64_t dv = valueDim();
  Value acc = memref::AllocaOp::create(b, loc, MemRefType::get({dv}, f));
  Value c0 = index(b, loc, 0), c1 = index(b, loc, 1);
  auto forLoop = [&](int64_t n, ValueRange init,
                     function_ref<SmallVector<Value>(OpBuilder &, Value,
                                                     ValueRange)> body) {
    return scf::ForOp::create(
        b, loc, c0, index(b, loc, n), c1, init,
        [&](OpBuilder &nb, Location, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(nb.getInsertionBlock());
          scf::YieldOp::create(b, loc, body(b, iv, args));
        });
  };
  forLoop(rows(), {}, [&](OpBuilder &, Value row, ValueRange) {
    SmallVector<Value> dims = rowDims(b, loc, row);
    forLoop(dv, {}, [&](OpBuilder &, Value e, ValueRange) {
      memref::StoreOp::create(b, loc, f32(b, loc, 0), acc, e);
      return SmallVector<Value>{};
    });
    Value ninf = f32(b, loc, -std::numeric_limits<double>::infinity());
    auto keys = forLoop(m.keys, {ninf, f32(b, loc, 0)},
                        [&](OpBuilder &, Value j, ValueRange st) {
      dims[m.numO] = j;
      auto dot = forLoop(m.headDim, {f32(b, loc, 0)},
                         [&](OpBuilder &, Value d, ValueRange sum) {
        dims[m.numO + 1] = d;
        Value q = castFloat(b, loc, load(b, loc, m.q, dims), f);
        Value k = castFloat(b, loc, load(b, loc, m.k, dims), f);
        return SmallVector<Value>{arith::AddFOp::create(
            b, loc, sum[0], arith::MulFOp::create(b, loc, q, k))};
      });
      dims[m.numO + 1] = nullptr;
      Value s = score(b, loc, dot.getResult(0), dims);
      std::array<Value, 4> up = online(b, loc, st[0], st[1], s);
      Value mx = up[0], l = up[1], alpha = up[2], p = up[3];
      forLoop(dv, {}, [&](OpBuilder &, Value e, ValueRange) {
        dims[m.eDim] = e;
        Value v = castFloat(b, loc, load(b, loc, m.v, dims), f);
        Value a = memref::LoadOp::create(b, loc, acc, e);
        a = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, a, alpha),
                                  arith::MulFOp::create(b, loc, p, v));
        memref::StoreOp::create(b, loc, a, acc, e);
        dims[m.eDim] = nullptr;
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{mx, l};
    });
    dims[m.numO] = nullptr;
    Value l = keys.getResult(1);
    forLoop(dv, {}, [&](OpBuilder &, Value e, ValueRange) {
      dims[m.eDim] = e;
      Value a = memref::LoadOp::create(b, loc, acc, e);
      Value o = arith::DivFOp::create(b, loc, a, l);
      SmallVector<Value> idx(dims.begin(), dims.begin() + m.numO);
      memref::StoreOp::create(
          b, loc,
          castFloat(b, loc, o,
                    cast<MemRefType>(out.getType()).getElementType()),
          out, idx);
      dims[m.eDim] = nullptr;
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

/// Warps (query rows) per block: they read the same keys, which L1 serves.
static constexpr int64_t kRowsPerBlock = 8;

void Emitter::emitGPU(OpBuilder &b, Location loc) {
  Type f = b.getF32Type();
  int64_t dv = valueDim(), dk = m.headDim, n = rows();
  int64_t tk = (dk + 31) / 32, te = (dv + 31) / 32;
  Value one = index(b, loc, 1);
  int64_t blocks = (n + kRowsPerBlock - 1) / kRowsPerBlock;
  auto launch = gpu::LaunchOp::create(b, loc, index(b, loc, blocks), one, one,
                                      index(b, loc, 32 * kRowsPerBlock), one,
                                      one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value tid = launch.getThreadIds().x;
  Value c32 = index(b, loc, 32);
  Value lane = arith::RemUIOp::create(b, loc, tid, c32);
  Value warp = arith::DivUIOp::create(b, loc, tid, c32);
  Value row = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                            index(b, loc, kRowsPerBlock)),
      warp);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                        index(b, loc, n));
  auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  SmallVector<Value> dims = rowDims(b, loc, row);
  // Lane's share of d and e: t*32 + lane, clamped (and zeroed) past the end.
  auto share = [&](int64_t t, int64_t extent, Value &valid) {
    Value i = arith::AddIOp::create(b, loc, lane, index(b, loc, 32 * t));
    valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i,
                                  index(b, loc, extent));
    return arith::MinUIOp::create(b, loc, i, index(b, loc, extent - 1))
        .getResult();
  };
  Value zero = f32(b, loc, 0);
  auto guarded = [&](Value v, Value valid, int64_t extent, int64_t t) {
    return (32 * (t + 1) <= extent)
               ? v
               : arith::SelectOp::create(b, loc, valid, v, zero).getResult();
  };
  SmallVector<Value> qs, dIdx, dValid, eIdx, eValid;
  for (int64_t t = 0; t < tk; ++t) {
    Value valid;
    dIdx.push_back(share(t, dk, valid));
    dValid.push_back(valid);
    dims[m.numO + 1] = dIdx.back();
    qs.push_back(guarded(castFloat(b, loc, load(b, loc, m.q, dims), f), valid,
                         dk, t));
  }
  dims[m.numO + 1] = nullptr;
  for (int64_t t = 0; t < te; ++t) {
    Value valid;
    eIdx.push_back(share(t, dv, valid));
    eValid.push_back(valid);
  }
  SmallVector<Value> init = {f32(b, loc, -std::numeric_limits<double>::infinity()),
                             zero};
  init.append(te, zero);
  auto keys = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, m.keys), one, init,
      [&](OpBuilder &nb, Location, Value j, ValueRange st) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(nb.getInsertionBlock());
        dims[m.numO] = j;
        Value part = zero;
        for (int64_t t = 0; t < tk; ++t) {
          dims[m.numO + 1] = dIdx[t];
          Value k = castFloat(b, loc, load(b, loc, m.k, dims), f);
          part = arith::AddFOp::create(b, loc, part,
                                       arith::MulFOp::create(b, loc, qs[t], k));
        }
        dims[m.numO + 1] = nullptr;
        for (int32_t offset = 16; offset >= 1; offset /= 2) {
          auto shfl = gpu::ShuffleOp::create(b, loc, part, offset, 32,
                                             gpu::ShuffleMode::XOR);
          part = arith::AddFOp::create(b, loc, part, shfl.getShuffleResult());
        }
        Value s = score(b, loc, part, dims);
        auto [mx, l, alpha, p] = online(b, loc, st[0], st[1], s);
        SmallVector<Value> next = {mx, l};
        for (int64_t t = 0; t < te; ++t) {
          dims[m.eDim] = eIdx[t];
          Value v = castFloat(b, loc, load(b, loc, m.v, dims), f);
          next.push_back(arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, st[2 + t], alpha),
              arith::MulFOp::create(b, loc, p, v)));
        }
        dims[m.eDim] = nullptr;
        scf::YieldOp::create(b, loc, next);
      });
  dims[m.numO] = nullptr;
  Type outElement = cast<MemRefType>(out.getType()).getElementType();
  for (int64_t t = 0; t < te; ++t) {
    OpBuilder::InsertionGuard g(b);
    if (32 * (t + 1) > dv) {
      auto store = scf::IfOp::create(b, loc, eValid[t], false);
      b.setInsertionPointToStart(&store.getThenRegion().front());
    }
    Value o = arith::DivFOp::create(b, loc, keys.getResult(2 + t),
                                    keys.getResult(1));
    SmallVector<Value> idx(dims.begin(), dims.begin() + m.numO);
    idx[m.eDim] = eIdx[t];
    memref::StoreOp::create(b, loc, castFloat(b, loc, o, outElement), out, idx);
  }
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
}

/// Replaces the match by a call of a new private function; erases the fused
/// ops.
static void replace(Match &m, ModuleOp module, bool gpu, unsigned number) {
  linalg::LinalgOp pv = m.pv;
  Location loc = pv.getLoc();
  OpBuilder b(pv);
  // The sources, once each, in a fixed order.
  SetVector<Value> sources;
  sources.insert(m.q.source);
  sources.insert(m.k.source);
  sources.insert(m.v.source);
  for (const ChainOp &link : m.chain)
    for (auto &side : link.sides)
      sources.insert(side.second.source);
  SmallVector<Value> args;
  SmallVector<Type> argTypes;
  for (Value s : sources) {
    auto type = cast<RankedTensorType>(s.getType());
    auto memref = MemRefType::get(type.getShape(), type.getElementType());
    args.push_back(
        bufferization::ToBufferOp::create(b, loc, memref, s, /*readOnly=*/true));
    argTypes.push_back(memref);
  }
  auto outType = cast<RankedTensorType>(pv->getResult(0).getType());
  auto outMemref = MemRefType::get(outType.getShape(), outType.getElementType());
  Value outBuf = memref::AllocOp::create(b, loc, outMemref);
  args.push_back(outBuf);
  argTypes.push_back(outMemref);

  std::string name = "tp_fused_attention_" + std::to_string(number);
  {
    OpBuilder mb(module.getBodyRegion());
    mb.setInsertionPointToEnd(module.getBody());
    auto fn = func::FuncOp::create(mb, loc, name,
                                   mb.getFunctionType(argTypes, {}));
    fn.setPrivate();
    Block *entry = fn.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockBegin(entry);
    SmallVector<Value> buffers(entry->getArguments().drop_back());
    Emitter emitter(m, sources.getArrayRef(), buffers, entry->getArguments().back());
    if (gpu)
      emitter.emitGPU(fb, loc);
    else
      emitter.emitLoops(fb, loc);
    func::ReturnOp::create(fb, loc);
  }
  func::CallOp::create(b, loc, name, TypeRange(), args);
  Value result = bufferization::ToTensorOp::create(b, loc, outType, outBuf,
                                                   /*restrict=*/true,
                                                   /*writable=*/true);
  pv->getResult(0).replaceAllUsesWith(result);
  m.fused.insert(pv);
  // Erase in use order: repeat until nothing dead is left.
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation *op : SmallVector<Operation *>(m.fused.begin(), m.fused.end()))
      if (op->use_empty()) {
        m.fused.remove(op);
        op->erase();
        erased = true;
      }
  }
}

struct FuseAttentionPass
    : public tp::impl::FuseAttentionPassBase<FuseAttentionPass> {
  using FuseAttentionPassBase::FuseAttentionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target != "gpu" && target != "loops") {
      module.emitError() << "tp-fuse-attention: target '" << target
                         << "' is not one of gpu, loops";
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (op.getNumReductionLoops() == 1 && op.getNumDpsInputs() == 2)
        candidates.push_back(op);
    });
    DenseSet<Operation *> erased;
    unsigned number = 0;
    // The next name no symbol (an earlier run's) has.
    auto freeName = [&] {
      while (module.lookupSymbol("tp_fused_attention_" +
                                 std::to_string(number)))
        ++number;
      return number;
    };
    for (linalg::LinalgOp pv : candidates) {
      if (erased.contains(pv.getOperation()))
        continue; // fused into an earlier match
      std::string why;
      FailureOr<Match> m = Matcher(pv).run(why);
      if (failed(m)) {
        if (!why.empty())
          pv->emitRemark() << "attention not fused: " << why;
        continue;
      }
      if (target == "gpu" && (m->headDim > 256 ||
                              cast<RankedTensorType>(pv->getResult(0).getType())
                                      .getDimSize(m->eDim) > 256)) {
        pv->emitRemark() << "attention not fused: head dimension "
                         << m->headDim << " is over 256";
        continue;
      }
      for (Operation *op : m->fused)
        erased.insert(op);
      erased.insert(pv.getOperation());
      replace(*m, module, target == "gpu", freeName());
    }
  }
};

} // namespace
