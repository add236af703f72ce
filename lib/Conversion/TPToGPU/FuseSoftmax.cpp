//===- FuseSoftmax.cpp - the tp-fuse-softmax pass ------------------*- C++ -*-//
//
// On the GPU path a softmax spelled as linalg ops (tp-gen's spelling, and
// what tp-decompose-aggregates makes of linalg.softmax) is four ops and
// two fills, which tp-linalg-to-gpu would make three row kernels and more:
// a row max, an elementwise exp(x - max) written to a buffer the size of
// the input, a row sum of it, and the division. This pass puts such a chain
// back into one `linalg.softmax` over the last dimension, which
// tp-linalg-to-gpu maps to one kernel per row with an online max and sum
// (docs/passes/lower-gpu.md).
//
// Algorithm, from each candidate max reduction `m`:
//  1. `m = generic(ins x) outs(init)` reduces the last loop of x with
//     maximumf or maxnumf; every other loop is parallel, x is read with the
//     identity map and the output without the last loop. (The max's initial
//     value does not matter: softmax is invariant to the shift.)
//  2. `m`'s only user is `e = generic(ins x, m)`, all parallel, whose body
//     is exp(x - m) (the output's block argument unused).
//  3. `e` has exactly two users: `s = generic(ins e) outs(fill 0)`, a row
//     sum like (1), and `y = generic(ins e, s)` whose body is e / s,
//     optionally followed by one arith.truncf or arith.extf; `s` has no
//     other user.
//  4. The chain becomes `linalg.softmax dimension(rank - 1) ins(x)` into a
//     tensor of x's type and, where y's body casts, an elementwise generic
//     applying the cast into y's init; y is replaced by the result.
// Anything else is left alone. The CPU path does not run this pass.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tp {
#define GEN_PASS_DEF_FUSESOFTMAXPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-fuse-softmax"

using namespace mlir;
using namespace mlir::tp;

namespace {

/// The ops of `op`'s body before its yield.
SmallVector<Operation *> bodyOps(linalg::GenericOp op) {
  SmallVector<Operation *> ops;
  for (Operation &inner : op.getBody()->without_terminator())
    ops.push_back(&inner);
  return ops;
}

Value yielded(linalg::GenericOp op) {
  return cast<linalg::YieldOp>(op.getBody()->getTerminator()).getOperand(0);
}

bool allParallel(linalg::GenericOp op) {
  return op.getNumReductionLoops() == 0;
}

/// `op` reads operand `i` with the identity map.
bool isIdentity(linalg::GenericOp op, unsigned i) {
  return op.getIndexingMapsArray()[i].isIdentity();
}

/// The identity map without its last result: how a row statistic is read.
bool isRowMap(AffineMap map, unsigned rank) {
  if (map.getNumDims() != rank || map.getNumResults() != rank - 1)
    return false;
  for (unsigned d = 0; d + 1 < rank; ++d) {
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(d));
    if (!dim || dim.getPosition() != d)
      return false;
  }
  return true;
}

/// A row reduction of its one input over the last loop whose body is
/// `Combiner(in, out)` (either order).
template <typename... Combiners>
bool isRowReduction(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1)
    return false;
  unsigned rank = op.getNumLoops();
  if (rank < 1 || op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray()[rank - 1] != utils::IteratorType::reduction)
    return false;
  if (!isIdentity(op, 0) || !isRowMap(op.getIndexingMapsArray()[1], rank))
    return false;
  SmallVector<Operation *> ops = bodyOps(op);
  if (ops.size() != 1 || !isa<Combiners...>(ops[0]) ||
      ops[0]->getResult(0) != yielded(op))
    return false;
  Block *body = op.getBody();
  Value a = ops[0]->getOperand(0), b = ops[0]->getOperand(1);
  Value in = body->getArgument(0), out = body->getArgument(1);
  return (a == in && b == out) || (a == out && b == in);
}

/// An all-parallel generic of two inputs: `full` read with the identity map
/// and `row` with the row map; returns the block arguments of the two, or
/// failure. The output is written with the identity map and its block
/// argument is unused.
FailureOr<std::pair<Value, Value>> fullAndRow(linalg::GenericOp op,
                                              Value full, Value row) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1 || !allParallel(op))
    return failure();
  unsigned rank = op.getNumLoops();
  int fullAt = -1, rowAt = -1;
  for (unsigned i = 0; i < 2; ++i) {
    Value v = op.getDpsInputOperand(i)->get();
    if (v == full && fullAt < 0 && isIdentity(op, i))
      fullAt = i;
    else if (v == row && rowAt < 0 &&
             isRowMap(op.getIndexingMapsArray()[i], rank))
      rowAt = i;
  }
  if (fullAt < 0 || rowAt < 0 || !isIdentity(op, 2))
    return failure();
  Block *body = op.getBody();
  if (!body->getArgument(2).use_empty())
    return failure();
  return std::make_pair(Value(body->getArgument(fullAt)),
                        Value(body->getArgument(rowAt)));
}

bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && (matchPattern(fill.value(), m_AnyZeroFloat()));
}

/// Rewrites the chain starting at `maxOp` if it is a softmax; returns
/// whether it did.
bool fuse(linalg::GenericOp maxOp, IRRewriter &rewriter) {
  if (!isRowReduction<arith::MaximumFOp, arith::MaxNumFOp>(maxOp))
    return false;
  Value x = maxOp.getDpsInputOperand(0)->get();
  auto xType = dyn_cast<RankedTensorType>(x.getType());
  if (!xType || !xType.hasStaticShape() ||
      !isa<FloatType>(xType.getElementType()))
    return false;
  Value m = maxOp->getResult(0);
  if (!m.hasOneUse())
    return false;

  // 2. e = exp(x - m).
  auto expOp = dyn_cast<linalg::GenericOp>(*m.getUsers().begin());
  if (!expOp)
    return false;
  FailureOr<std::pair<Value, Value>> expArgs = fullAndRow(expOp, x, m);
  if (failed(expArgs))
    return false;
  SmallVector<Operation *> expBody = bodyOps(expOp);
  if (expBody.size() != 2)
    return false;
  auto sub = dyn_cast<arith::SubFOp>(expBody[0]);
  auto exp = dyn_cast<math::ExpOp>(expBody[1]);
  if (!sub || !exp || sub.getLhs() != expArgs->first ||
      sub.getRhs() != expArgs->second || exp.getOperand() != sub ||
      yielded(expOp) != exp.getResult())
    return false;
  Value e = expOp->getResult(0);
  if (cast<RankedTensorType>(e.getType()) != xType)
    return false;

  // 3. s = sum(e), y = e / s (then at most one cast).
  linalg::GenericOp sumOp, divOp;
  unsigned users = 0;
  for (Operation *user : e.getUsers()) {
    ++users;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic)
      return false;
    if (!sumOp && isRowReduction<arith::AddFOp>(generic))
      sumOp = generic;
    else
      divOp = generic;
  }
  if (users != 2 || !sumOp || !divOp || sumOp == divOp)
    return false;
  if (!isZeroFill(sumOp.getDpsInitOperand(0)->get()))
    return false;
  Value s = sumOp->getResult(0);
  if (!s.hasOneUse() || *s.getUsers().begin() != divOp.getOperation())
    return false;
  FailureOr<std::pair<Value, Value>> divArgs = fullAndRow(divOp, e, s);
  if (failed(divArgs))
    return false;
  SmallVector<Operation *> divBody = bodyOps(divOp);
  if (divBody.empty() || divBody.size() > 2)
    return false;
  auto div = dyn_cast<arith::DivFOp>(divBody[0]);
  if (!div || div.getLhs() != divArgs->first ||
      div.getRhs() != divArgs->second)
    return false;
  Operation *castOp = divBody.size() == 2 ? divBody[1] : nullptr;
  if (castOp && (!isa<arith::TruncFOp, arith::ExtFOp>(castOp) ||
                 castOp->getOperand(0) != div.getResult()))
    return false;
  if (yielded(divOp) != (castOp ? castOp->getResult(0) : div.getResult()))
    return false;

  // 4. One linalg.softmax (and the cast).
  rewriter.setInsertionPoint(divOp);
  Location loc = divOp.getLoc();
  Value init = divOp.getDpsInitOperand(0)->get();
  Value softmaxInit =
      castOp ? tensor::EmptyOp::create(rewriter, loc, xType.getShape(),
                                       xType.getElementType())
                   .getResult()
             : init;
  Value y = linalg::SoftmaxOp::create(rewriter, loc, TypeRange{xType}, x,
                                      softmaxInit, xType.getRank() - 1)
                .getResult()[0];
  if (castOp) {
    auto initType = cast<RankedTensorType>(init.getType());
    AffineMap id = rewriter.getMultiDimIdentityMap(xType.getRank());
    SmallVector<utils::IteratorType> parallel(xType.getRank(),
                                              utils::IteratorType::parallel);
    OperationName castName = castOp->getName();
    y = linalg::GenericOp::create(
            rewriter, loc, initType, ValueRange{y}, ValueRange{init},
            ArrayRef<AffineMap>{id, id}, parallel,
            [&](OpBuilder &b, Location l, ValueRange args) {
              OperationState state(l, castName);
              state.addOperands(args[0]);
              state.addTypes(initType.getElementType());
              Value r = b.create(state)->getResult(0);
              linalg::YieldOp::create(b, l, r);
            })
            .getResult(0);
  }
  rewriter.replaceOp(divOp, y);
  rewriter.eraseOp(sumOp);
  rewriter.eraseOp(expOp);
  rewriter.eraseOp(maxOp);
  return true;
}

struct FuseSoftmaxPass
    : public tp::impl::FuseSoftmaxPassBase<FuseSoftmaxPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics())
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    DenseSet<Operation *> erased;
    for (linalg::GenericOp op : candidates) {
      if (erased.contains(op))
        continue;
      // The chain's other ops are erased with it; none of them is a max
      // reduction candidate of its own (they are parallel or sums), but
      // remember them so that the walk's list stays valid.
      SmallVector<Operation *> chain;
      Value m = op->getNumResults() == 1 ? op->getResult(0) : Value();
      if (m && m.hasOneUse()) {
        Operation *expOp = *m.getUsers().begin();
        chain.push_back(expOp);
        for (Value r : expOp->getResults())
          for (Operation *user : r.getUsers())
            chain.push_back(user);
      }
      if (fuse(op, rewriter))
        erased.insert(chain.begin(), chain.end());
    }
  }
};

} // namespace
