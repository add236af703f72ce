//===- RouteExperts.cpp - per-row expert weights to a grouped GEMM -*- C++ -*-//
//
// A contraction whose weight operand is gathered per (token, choice) row
// from a stack of experts (tp/Analysis/RoutedContraction.h: Hugging Face's
// `batched_mm` experts) becomes a routed GEMM: the rows bucketed by expert,
// one product per expert over its rows in one grouped call, the results
// put back in row order. The gathered [rows, O, K] copy of the weights is
// never formed; each expert's weight is read once.
//
// Algorithm, per routed contraction y[p, t, o] = sum_k x[p, t, k] *
// stack[e(p), o, k] (p < P rows, t < T tokens per row, E experts), on
// tensors, every step a linalg op (a loop nest on CPUs, a kernel on GPUs):
//  1. ids[p]: the gather's expert index, recomputed from its inputs (the
//     ops of its body it depends on, cloned), as i64, clamped to
//     [0, E - 1] (an id outside it made the gather read out of bounds).
//  2. counts[e] = #{p : ids[p] = e}; offsets[e] = sum of counts[f < e]
//     (a counting sort's exclusive scan, E x E).
//  3. rank[p] = #{q < p : ids[q] = ids[p]} (P x P); dest[p] = offsets
//     [ids[p]] + rank[p]: row p's place in expert order, stable.
//  4. src[r] = the p with dest[p] = r (P x P), and the sorted rows xs[r, t,
//     k] = x[src[r], t, k], as [P * T, K].
//  5. ys = tprt_mlir_gemm_grouped_<t>(trans_b, xs, stack, counts * T): one
//     grouped GEMM (cuBLAS's grouped batched GEMM on GPUs, BLAS per expert
//     on CPUs), [P * T, O].
//  6. y[p, t, o] = ys[dest[p] * T + t, o] (+ the init when it is not a
//     zero fill).
// Steps 1-4 are shared by every contraction routed by the same ids (the
// expert MLP's gate, up and down products): an ids computation equal to an
// earlier one in the same block (OperationEquivalence) reuses its routing.
// The gather is erased once nothing reads it.
//
// Contractions that read a gathered operand but do not fit (a mask of
// experts held elsewhere, several row loops, mixed element types, ...)
// stay as they are with a remark naming why.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/RoutedContraction.h"
#include "tp/Conversion/Passes.h"
#include "tp/Conversion/RuntimeSymbols.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/Statistic.h"

namespace mlir::tp {
#define GEN_PASS_DEF_ROUTEEXPERTSPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-route-experts"

STATISTIC(numRouted, "Contractions routed to grouped GEMMs");

using namespace mlir;
using namespace mlir::tp;

namespace {

using utils::IteratorType;

/// What steps 1-4 computed for one set of ids.
struct Routing {
  linalg::GenericOp ids;
  Value counts, dest, src;
  int64_t rows = 0, experts = 0;
};

Value i64Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
}

Value toI64(OpBuilder &b, Location loc, Value v) {
  Type i64 = b.getI64Type();
  if (v.getType().isIndex())
    return arith::IndexCastOp::create(b, loc, i64, v);
  auto type = cast<IntegerType>(v.getType());
  if (type.getWidth() < 64)
    return arith::ExtSIOp::create(b, loc, i64, v);
  if (type.getWidth() > 64)
    return arith::TruncIOp::create(b, loc, i64, v);
  return v;
}

Value loopIndex(OpBuilder &b, Location loc, unsigned dim) {
  return linalg::IndexOp::create(b, loc, dim);
}

Value zeros(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type type) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, type);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
      ->getResult(0);
}

/// A linalg.generic of one result over `iterators`.
Value generic(OpBuilder &b, Location loc, ValueRange inputs, Value init,
              ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
              function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  return linalg::GenericOp::create(b, loc, TypeRange{init.getType()}, inputs,
                                   ValueRange{init}, maps, iterators, body)
      .getResult(0);
}

/// Whether `init` is a linalg.fill of zero.
bool isZeroFill(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Value value = fill.getInputs().front();
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

class Router {
public:
  explicit Router(ModuleOp module) : module(module) {}
  void route(const RoutedContraction &r);

private:
  Routing &routingFor(OpBuilder &b, const RoutedContraction &r);
  ModuleOp module;
  SmallVector<Routing> routings;
};

Routing &Router::routingFor(OpBuilder &b, const RoutedContraction &r) {
  Location loc = r.contraction->getLoc();
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  int64_t p = r.rows, e = r.experts;
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
  auto map1 = [&](ArrayRef<AffineExpr> results) {
    return AffineMap::get(1, 0, results, ctx);
  };
  auto map2 = [&](ArrayRef<AffineExpr> results) {
    return AffineMap::get(2, 0, results, ctx);
  };

  // 1. ids[p], from the gather's inputs read at the row.
  linalg::GenericOp gather = r.gather;
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : gather.getDpsInputOperands()) {
    inputs.push_back(input->get());
    AffineMap map = gather.getMatchingIndexingMap(input);
    maps.push_back(map1(SmallVector<AffineExpr>(map.getNumResults(), d0)));
  }
  maps.push_back(map1({d0}));
  Value idsInit = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{p}, i64);
  Value ids = generic(
      b, loc, inputs, idsInit, maps, {IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        IRMapping mapping;
        for (unsigned i = 0; i < gather.getNumDpsInputs(); ++i)
          mapping.map(gather.getBlock()->getArgument(i), args[i]);
        for (Operation *op : r.expertSlice)
          nb.clone(*op, mapping);
        Value id = toI64(nb, l, mapping.lookupOrDefault(r.expertIndex));
        id = arith::MaxSIOp::create(nb, l, id, i64Constant(nb, l, 0));
        id = arith::MinSIOp::create(nb, l, id, i64Constant(nb, l, e - 1));
        linalg::YieldOp::create(nb, l, id);
      });
  auto idsOp = ids.getDefiningOp<linalg::GenericOp>();
  // Equal ids: the same inputs and body; the inits are empty tensors of
  // one type (each computation has its own).
  auto sameIds = [](linalg::GenericOp a, linalg::GenericOp b) {
    DenseMap<Value, Value> equivalent;
    auto check = [&](Value x, Value y) -> LogicalResult {
      if (x == y || equivalent.lookup(x) == y)
        return success();
      return success(x.getDefiningOp<tensor::EmptyOp>() &&
                     y.getDefiningOp<tensor::EmptyOp>() &&
                     x.getType() == y.getType());
    };
    auto mark = [&](Value x, Value y) { equivalent[x] = y; };
    return OperationEquivalence::isEquivalentTo(
        a, b, check, mark, OperationEquivalence::IgnoreLocations);
  };
  for (Routing &earlier : routings)
    if (earlier.rows == p && earlier.experts == e &&
        earlier.ids->getBlock() == idsOp->getBlock() &&
        sameIds(earlier.ids, idsOp)) {
      idsOp->erase();
      idsInit.getDefiningOp()->erase();
      return earlier;
    }

  IteratorType par = IteratorType::parallel, red = IteratorType::reduction;
  // 2. counts[e] and the exclusive scan offsets[e].
  Value counts = generic(
      b, loc, ids, zeros(b, loc, {e}, i64), {map2({d1}), map2({d0})},
      {par, red}, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value expert = toI64(nb, l, loopIndex(nb, l, 0));
        Value same = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                           args[0], expert);
        Value one = arith::ExtUIOp::create(nb, l, nb.getI64Type(), same);
        linalg::YieldOp::create(nb, l,
                                arith::AddIOp::create(nb, l, args[1], one)
                                    .getResult());
      });
  Value offsets = generic(
      b, loc, counts, zeros(b, loc, {e}, i64), {map2({d1}), map2({d0})},
      {par, red}, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value before = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::ult, loopIndex(nb, l, 1),
            loopIndex(nb, l, 0));
        Value add = arith::SelectOp::create(nb, l, before, args[0],
                                            i64Constant(nb, l, 0));
        linalg::YieldOp::create(nb, l,
                                arith::AddIOp::create(nb, l, args[1], add)
                                    .getResult());
      });
  // 3. rank[p] among the earlier rows of its expert, and dest[p].
  Value rank = generic(
      b, loc, ValueRange{ids, ids}, zeros(b, loc, {p}, i64),
      {map2({d0}), map2({d1}), map2({d0})}, {par, red},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value earlier = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::ult, loopIndex(nb, l, 1),
            loopIndex(nb, l, 0));
        Value same = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                           args[0], args[1]);
        Value both = arith::AndIOp::create(nb, l, earlier, same);
        Value one = arith::ExtUIOp::create(nb, l, nb.getI64Type(), both);
        linalg::YieldOp::create(nb, l,
                                arith::AddIOp::create(nb, l, args[2], one)
                                    .getResult());
      });
  Value dest = generic(
      b, loc, ValueRange{ids, rank},
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{p}, i64),
      {map1({d0}), map1({d0}), map1({d0})}, {par},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value at = arith::IndexCastOp::create(nb, l, nb.getIndexType(), args[0]);
        Value offset = tensor::ExtractOp::create(nb, l, offsets, ValueRange{at});
        linalg::YieldOp::create(
            nb, l, arith::AddIOp::create(nb, l, offset, args[1]).getResult());
      });
  // 4. src[r]: the row that goes to place r.
  Value src = generic(
      b, loc, dest, zeros(b, loc, {p}, i64), {map2({d1}), map2({d0})},
      {par, red}, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value place = toI64(nb, l, loopIndex(nb, l, 0));
        Value row = toI64(nb, l, loopIndex(nb, l, 1));
        Value here = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                           args[0], place);
        Value add =
            arith::SelectOp::create(nb, l, here, row, i64Constant(nb, l, 0));
        linalg::YieldOp::create(nb, l,
                                arith::AddIOp::create(nb, l, args[1], add)
                                    .getResult());
      });
  routings.push_back({idsOp, counts, dest, src, p, e});
  return routings.back();
}

void Router::route(const RoutedContraction &r) {
  linalg::LinalgOp op = r.contraction;
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  auto stackType = cast<RankedTensorType>(r.stack.getType());
  Type element = stackType.getElementType();
  std::optional<std::string> suffix = runtime::getElementSuffix(element);
  if (!suffix) {
    op->emitRemark() << "not routed: no grouped GEMM for " << element;
    return;
  }
  Routing &routing = routingFor(b, r);
  int64_t rows = r.rows * r.tokens;

  // 4. The sorted rows [P * T, K]: loops (place, token, k) or (place, k).
  Value other = op.getDpsInputOperand(1 - r.weightInput)->get();
  AffineMap otherMap =
      op.getMatchingIndexingMap(op.getDpsInputOperand(1 - r.weightInput));
  bool hasTokens = r.tokenLoop.has_value();
  unsigned nLoops = hasTokens ? 3 : 2;
  SmallVector<int64_t> sortedShape = {r.rows};
  if (hasTokens)
    sortedShape.push_back(r.tokens);
  sortedShape.push_back(r.k);
  SmallVector<IteratorType> parallel(nLoops, IteratorType::parallel);
  AffineMap byPlace = AffineMap::get(nLoops, 0, {getAffineDimExpr(0, ctx)},
                                     ctx);
  Value sorted = generic(
      b, loc, routing.src, tensor::EmptyOp::create(b, loc, sortedShape, element),
      {byPlace, b.getMultiDimIdentityMap(nLoops)}, parallel,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value source =
            arith::IndexCastOp::create(nb, l, nb.getIndexType(), args[0]);
        SmallVector<Value> indices;
        for (AffineExpr expr : otherMap.getResults()) {
          unsigned loop = cast<AffineDimExpr>(expr).getPosition();
          if (loop == r.rowLoop)
            indices.push_back(source);
          else if (loop == r.kLoop)
            indices.push_back(loopIndex(nb, l, nLoops - 1));
          else
            indices.push_back(loopIndex(nb, l, 1));
        }
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, other, indices).getResult());
      });
  if (hasTokens)
    sorted = tensor::CollapseShapeOp::create(
        b, loc, sorted, ArrayRef<ReassociationIndices>{{0, 1}, {2}});

  // The rows per expert: counts * T.
  Value groupRows = routing.counts;
  if (r.tokens != 1) {
    AffineMap id1 = b.getMultiDimIdentityMap(1);
    groupRows = generic(
        b, loc, routing.counts,
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{r.experts}, i64),
        {id1, id1}, {IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          linalg::YieldOp::create(
              nb, l,
              arith::MulIOp::create(nb, l, args[0],
                                    i64Constant(nb, l, r.tokens))
                  .getResult());
        });
  }

  // 5. The grouped GEMM on buffers, as tp-gemm-to-runtime passes them.
  auto unranked = [](Type t) { return UnrankedMemRefType::get(t, nullptr); };
  auto toArg = [&](Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    Value buffer = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()),
        tensor, /*readOnly=*/true);
    return memref::CastOp::create(b, loc, unranked(type.getElementType()),
                                  buffer)
        .getResult();
  };
  auto i32 = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(int32_t(v)))
        .getResult();
  };
  auto outType = MemRefType::get({rows, r.outs}, element);
  Value out = memref::AllocOp::create(b, loc, outType);
  SmallVector<Value> args = {i32(r.transB), toArg(sorted), toArg(r.stack),
                             toArg(groupRows),
                             memref::CastOp::create(b, loc, unranked(element),
                                                    out)};
  SmallVector<Type> argTypes = {b.getI32Type(), unranked(element),
                                unranked(element), unranked(i64),
                                unranked(element)};
  func::CallOp::create(
      b, loc,
      runtime::getOrDeclare(
          module, runtime::getCollectiveSymbol(runtime::kGemmGrouped, *suffix),
          argTypes),
      args);
  Value products = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get({rows, r.outs}, element), out,
      /*restrict=*/true, /*writable=*/true);

  // 6. Back to row order, in the result's own dimension order.
  Value init = op.getDpsInitOperand(0)->get();
  // A 16-bit product rounded back by its only use: the result is that
  // use's, in the operands' type (the GEMM sums in f32 and rounds once).
  linalg::GenericOp narrowing = r.narrowing;
  Operation *replaced =
      narrowing ? narrowing.getOperation() : op.getOperation();
  auto resultType = cast<RankedTensorType>(replaced->getResult(0).getType());
  AffineMap resultMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  unsigned rank = resultType.getRank();
  int rowDim = -1, tokenDim = -1, outDim = -1;
  for (auto [i, expr] : llvm::enumerate(resultMap.getResults())) {
    unsigned loop = cast<AffineDimExpr>(expr).getPosition();
    if (loop == r.rowLoop)
      rowDim = int(i);
    else if (loop == r.outLoop)
      outDim = int(i);
    else
      tokenDim = int(i);
  }
  bool accumulate = !r.narrowing && !isZeroFill(init);
  Value resultInit =
      accumulate ? init
                 : Value(tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                                 element));
  AffineMap destMap =
      AffineMap::get(rank, 0, {getAffineDimExpr(unsigned(rowDim), ctx)}, ctx);
  Value result = generic(
      b, loc, routing.dest, resultInit,
      {destMap, b.getMultiDimIdentityMap(rank)},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value place = args[0];
        if (tokenDim >= 0) {
          Value token = toI64(nb, l, loopIndex(nb, l, unsigned(tokenDim)));
          place = arith::AddIOp::create(
              nb, l,
              arith::MulIOp::create(nb, l, place,
                                    i64Constant(nb, l, r.tokens)),
              token);
        }
        Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), place);
        Value value = tensor::ExtractOp::create(
            nb, l, products,
            ValueRange{row, loopIndex(nb, l, unsigned(outDim))});
        if (accumulate)
          value = arith::AddFOp::create(nb, l, args[1], value);
        linalg::YieldOp::create(nb, l, value);
      });
  replaced->getResult(0).replaceAllUsesWith(result);
  Operation *gather = r.gather;
  if (narrowing)
    narrowing->erase();
  op->erase();
  if (gather->use_empty()) {
    Value gatherInit = gather->getOperands().back(); // its init
    gather->erase();
    if (auto empty = gatherInit.getDefiningOp<tensor::EmptyOp>();
        empty && empty->use_empty())
      empty->erase();
  }
  ++numRouted;
}

struct RouteExpertsPass
    : public tp::impl::RouteExpertsPassBase<RouteExpertsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (linalg::isaContractionOpInterface(op))
        candidates.push_back(op);
    });
    Router router(getOperation());
    for (linalg::LinalgOp op : candidates) {
      std::string why;
      std::optional<RoutedContraction> routed = matchRoutedContraction(op, why);
      if (routed)
        router.route(*routed);
      else if (!why.empty())
        op->emitRemark() << "not routed: " << why;
    }
  }
};

} // namespace
