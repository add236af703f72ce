//===- RoutedContraction.cpp - contractions over per-row expert weights ---===//
//
// See RoutedContraction.h.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/RoutedContraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::tp;

namespace {

/// Whether the body of `op` is `acc + x * y` over its two inputs, each
/// read as it is or widened by one arith.extf to the accumulator's type
/// (a 16-bit product into f32), every other op of the body dead and pure.
bool isMultiplyAccumulate(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  if (!body || body->getNumArguments() != 3)
    return false;
  Operation *yield = body->getTerminator();
  if (yield->getNumOperands() != 1)
    return false;
  auto add = yield->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = body->getArgument(2);
  Value product = add.getLhs() == acc   ? add.getRhs()
                  : add.getRhs() == acc ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  SmallVector<Operation *> chain = {add, mul, yield};
  auto input = [&](Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>()) {
      chain.push_back(ext);
      return ext.getIn();
    }
    return v;
  };
  Value l = input(mul.getLhs()), r = input(mul.getRhs());
  Value x = body->getArgument(0), y = body->getArgument(1);
  if (!((l == x && r == y) || (l == y && r == x)))
    return false;
  for (Operation &inner : *body)
    if (!llvm::is_contained(chain, &inner) && !isPure(&inner))
      return false;
  return true;
}


/// Whether `v`, a value used in `body`, is computed from the block
/// arguments `inputs`, values defined outside the body and pure
/// single-block-free ops of the body only (no linalg.index). The body ops
/// it needs are added to `slice` operands first; `readsInput` is set when
/// an input is reached.
bool computedFromInputs(Value v, Block *body, ArrayRef<BlockArgument> inputs,
                        llvm::SetVector<Operation *> &slice,
                        bool &readsInput) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != body)
      return true;
    if (!llvm::is_contained(inputs, arg))
      return false;
    readsInput = true;
    return true;
  }
  Operation *def = v.getDefiningOp();
  if (def->getBlock() != body)
    return true;
  if (slice.contains(def))
    return true;
  if (isa<linalg::IndexOp>(def) || !isPure(def) || def->getNumRegions() != 0)
    return false;
  for (Value operand : def->getOperands())
    if (!computedFromInputs(operand, body, inputs, slice, readsInput))
      return false;
  slice.insert(def);
  return true;
}

/// `v`, a value of `body`, as a sum of terms (linalg.index results and
/// values defined outside the body) times constants plus a constant, or
/// nullopt when it is not one (index arithmetic: addi, subi, muli by a
/// constant, index_cast). The partitioner writes a local index as
/// `(i + offset) - offset`; this sees `i`.
struct Linear {
  llvm::SmallDenseMap<Value, int64_t> terms;
  int64_t constant = 0;
};

std::optional<Linear> linearize(Value v, Block *body, int depth = 0) {
  if (depth > 16)
    return std::nullopt;
  Linear l;
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c))) {
    l.constant = c.getSExtValue();
    return l;
  }
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != body || isa<linalg::IndexOp>(def)) {
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == body)
      return std::nullopt; // an input's or the init's element
    l.terms[v] = 1;
    return l;
  }
  auto combine = [&](Value a, Value b, int64_t sign) -> std::optional<Linear> {
    std::optional<Linear> x = linearize(a, body, depth + 1),
                          y = linearize(b, body, depth + 1);
    if (!x || !y)
      return std::nullopt;
    for (auto [term, coefficient] : y->terms)
      x->terms[term] += sign * coefficient;
    x->constant += sign * y->constant;
    return x;
  };
  if (auto add = dyn_cast<arith::AddIOp>(def))
    return combine(add.getLhs(), add.getRhs(), 1);
  if (auto sub = dyn_cast<arith::SubIOp>(def))
    return combine(sub.getLhs(), sub.getRhs(), -1);
  if (auto cast = dyn_cast<arith::IndexCastOp>(def))
    return linearize(cast.getIn(), body, depth + 1);
  if (auto mul = dyn_cast<arith::MulIOp>(def)) {
    for (auto [x, y] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())})
      if (matchPattern(y, m_ConstantInt(&c))) {
        std::optional<Linear> r = linearize(x, body, depth + 1);
        if (!r)
          return std::nullopt;
        for (auto &entry : r->terms)
          entry.second *= c.getSExtValue();
        r->constant *= c.getSExtValue();
        return r;
      }
  }
  return std::nullopt;
}

/// The loop `v` is the index of, through index arithmetic that cancels
/// (`(i + offset) - offset`), or nullopt.
std::optional<unsigned> loopIndexOf(Value v, Block *body) {
  std::optional<Linear> l = linearize(v, body);
  if (!l || l->constant != 0)
    return std::nullopt;
  std::optional<unsigned> loop;
  for (auto [term, coefficient] : l->terms) {
    if (coefficient == 0)
      continue;
    auto index = term.getDefiningOp<linalg::IndexOp>();
    if (!index || index->getBlock() != body || coefficient != 1 || loop)
      return std::nullopt;
    loop = unsigned(index.getDim());
  }
  return loop;
}

/// The gather feeding input `i` of `op`: an all-parallel generic yielding
/// a tensor.extract from a tensor defined outside it.
linalg::GenericOp gatherOf(linalg::LinalgOp op, unsigned i,
                           tensor::ExtractOp &extract) {
  auto gather =
      op.getDpsInputOperand(i)->get().getDefiningOp<linalg::GenericOp>();
  if (!gather || gather->getNumResults() != 1 ||
      gather.getNumDpsInits() != 1)
    return {};
  Operation *yield = gather.getBlock()->getTerminator();
  extract = yield->getOperand(0).getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract->getBlock() != gather.getBlock())
    return {};
  Value table = extract.getTensor();
  if (Operation *def = table.getDefiningOp(); def && gather->isAncestor(def))
    return {};
  if (auto arg = dyn_cast<BlockArgument>(table);
      arg && gather->isAncestor(arg.getOwner()->getParentOp()))
    return {};
  return gather;
}

} // namespace

namespace {

/// The routed form of `op` with input `input` as the gathered weights
/// (`gather`, yielding `extract`), or nullopt and why not.
std::optional<RoutedContraction> matchWith(linalg::LinalgOp op,
                                           unsigned input,
                                           linalg::GenericOp gather,
                                           tensor::ExtractOp extract,
                                           std::string &why) {
  RoutedContraction r;
  r.contraction = op;
  r.gather = gather;
  r.extract = extract;
  r.weightInput = input;
  auto refuse = [&](const std::string &reason) {
    why = reason;
    return std::nullopt;
  };

  // The gather: per stack dimension, a loop index or the expert id.
  Block *body = gather.getBlock();
  r.stack = r.extract.getTensor();
  auto stackType = cast<RankedTensorType>(r.stack.getType());
  if (!gather.hasPureTensorSemantics() ||
      gather.getNumLoops() != gather.getNumParallelLoops())
    return refuse("its gathered operand is not computed by parallel loops");
  if (!body->getArguments().back().use_empty())
    return refuse("its gather reads its init");
  SmallVector<BlockArgument> inputs(
      body->getArguments().take_front(gather.getNumDpsInputs()));
  int expertPos = -1;
  SmallVector<int64_t> loopOfDim(stackType.getRank(), -1);
  for (auto [j, index] : llvm::enumerate(r.extract.getIndices())) {
    if (std::optional<unsigned> loop = loopIndexOf(index, body)) {
      if (llvm::is_contained(loopOfDim, int64_t(*loop)))
        return refuse("its gather reads one loop index twice");
      loopOfDim[j] = *loop;
      continue;
    }
    llvm::SetVector<Operation *> slice;
    bool readsInput = false;
    if (!computedFromInputs(index, body, inputs, slice, readsInput) ||
        !readsInput || expertPos >= 0)
      return refuse("index " + std::to_string(j) +
                    " of its gather is neither a loop index nor one expert "
                    "id computed from the gather's inputs");
    expertPos = int(j);
    r.expertIndex = index;
    r.expertSlice = std::move(slice);
  }
  if (expertPos < 0)
    return refuse("its gather reads no per-row expert id");
  if (stackType.getRank() != 3 || expertPos != 0)
    return refuse("its gather does not read a 3-D stack [experts, a, b] by "
                  "its first dimension");
  if (!stackType.hasStaticShape())
    return refuse("its stack of experts has a dynamic shape");
  // The rows: the one loop no index names; the inputs read only it.
  SmallVector<unsigned> rowLoops;
  for (unsigned d = 0; d < gather.getNumLoops(); ++d)
    if (!llvm::is_contained(loopOfDim, int64_t(d)))
      rowLoops.push_back(d);
  if (rowLoops.size() != 1)
    return refuse("its gather has " + std::to_string(rowLoops.size()) +
                  " row loops, not one");
  r.gatherRowLoop = rowLoops.front();
  for (OpOperand *input : gather.getDpsInputOperands()) {
    AffineMap map = gather.getMatchingIndexingMap(input);
    for (AffineExpr e : map.getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (!dim || dim.getPosition() != r.gatherRowLoop)
        return refuse("an input of its gather is read by more than its rows");
    }
  }
  AffineMap gatherOut = gather.getIndexingMapsArray().back();
  if (!gatherOut.isPermutation())
    return refuse("its gather's result map is not a permutation");

  // Onto the contraction's loops.
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return refuse("its loops are not batch, free and reduction dimensions");
  AffineMap weightMap =
      op.getMatchingIndexingMap(op.getDpsInputOperand(r.weightInput));
  auto contractionLoopOf = [&](unsigned gatherLoop) -> int64_t {
    unsigned position = *gatherOut.getResultPosition(
        getAffineDimExpr(gatherLoop, op.getContext()));
    auto dim = dyn_cast<AffineDimExpr>(weightMap.getResult(position));
    return dim ? int64_t(dim.getPosition()) : -1;
  };
  ArrayRef<unsigned> weightFree = r.weightInput == 0 ? dims->m : dims->n;
  ArrayRef<unsigned> otherFree = r.weightInput == 0 ? dims->n : dims->m;
  if (dims->batch.size() != 1 || dims->k.size() != 1 ||
      weightFree.size() != 1 || otherFree.size() > 1)
    return refuse("it is not one batch of rows, one reduction, one free "
                  "dimension of the weight and at most one of the rows");
  int64_t row = contractionLoopOf(r.gatherRowLoop);
  int64_t a = contractionLoopOf(unsigned(loopOfDim[1]));
  int64_t b = contractionLoopOf(unsigned(loopOfDim[2]));
  r.rowLoop = dims->batch.front();
  r.kLoop = dims->k.front();
  r.outLoop = weightFree.front();
  if (!otherFree.empty())
    r.tokenLoop = otherFree.front();
  if (row != int64_t(r.rowLoop))
    return refuse("its batch dimension is not the rows its gather routes");
  if (a == int64_t(r.outLoop) && b == int64_t(r.kLoop))
    r.transB = true;
  else if (!(a == int64_t(r.kLoop) && b == int64_t(r.outLoop)))
    return refuse("its stack's dimensions are not the reduction and the "
                  "weight's outputs");

  // Types and sizes.
  Type element = stackType.getElementType();
  Value other = op.getDpsInputOperand(1 - r.weightInput)->get();
  auto otherType = cast<RankedTensorType>(other.getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!isa<FloatType>(element) || otherType.getElementType() != element)
    return refuse("its operands are not of one float type");
  if (resultType.getElementType() != element) {
    // 16-bit operands into f32, rounded back by the only use: the 16-bit
    // grouped GEMM (f32 sums, rounded once) computes exactly that.
    r.narrowing = narrowingConsumer(op->getResult(0), element);
    Value init = op.getDpsInitOperand(0)->get();
    auto fill = init.getDefiningOp<linalg::FillOp>();
    if (!(element.isBF16() || element.isF16()) ||
        !resultType.getElementType().isF32() || !r.narrowing || !fill ||
        !matchPattern(fill.getInputs().front(), m_AnyZeroFloat()))
      return refuse("its operands and result are not of one float type (and "
                    "it is not a 16-bit product from zero rounded back by its "
                    "only use)");
  }
  if (!isMultiplyAccumulate(op))
    return refuse("its body is not a multiply-accumulate of its inputs");
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) ||
      !otherType.hasStaticShape())
    return refuse("it has dynamic shapes");
  r.rows = ranges[r.rowLoop];
  r.k = ranges[r.kLoop];
  r.outs = ranges[r.outLoop];
  r.tokens = r.tokenLoop ? ranges[*r.tokenLoop] : 1;
  r.experts = stackType.getDimSize(0);
  return r;
}

} // namespace

std::optional<RoutedContraction>
mlir::tp::matchRoutedContraction(linalg::LinalgOp op, std::string &why) {
  why.clear();
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return std::nullopt;
  // Either input may be the gathered weights (the other one may itself
  // be read through a gather: the rows of an earlier routed product put
  // back in order); the first reason heard is the one reported.
  for (unsigned i = 0; i < 2; ++i) {
    tensor::ExtractOp extract;
    linalg::GenericOp gather = gatherOf(op, i, extract);
    if (!gather)
      continue;
    std::string reason;
    if (std::optional<RoutedContraction> r =
            matchWith(op, i, gather, extract, reason)) {
      why.clear();
      return r;
    }
    if (why.empty())
      why = reason;
  }
  return std::nullopt;
}

bool mlir::tp::isRoutedGatherOnly(Operation *gather) {
  if (!gather || gather->getNumResults() != 1)
    return false;
  Value result = gather->getResult(0);
  if (result.use_empty())
    return false;
  for (Operation *user : result.getUsers()) {
    auto op = dyn_cast<linalg::LinalgOp>(user);
    std::string why;
    std::optional<RoutedContraction> routed =
        op ? matchRoutedContraction(op, why) : std::nullopt;
    if (!routed || routed->gather.getOperation() != gather)
      return false;
  }
  return true;
}

/// The elementwise linalg.generic that is the only use of `result` and
/// rounds it to `narrow` (arith.truncf to nearest even; identity maps, its
/// init not read), or null: torch-mlir's 16-bit product, summed in f32 and
/// rounded back, which is the 16-bit GEMM's meaning.
linalg::GenericOp mlir::tp::narrowingConsumer(Value result, Type narrow) {
  if (!result.hasOneUse())
    return {};
  auto generic = dyn_cast<linalg::GenericOp>(*result.getUsers().begin());
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic->getNumResults() != 1 ||
      generic.getDpsInputOperand(0)->get() != result ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return {};
  Block *body = generic.getBlock();
  if (!body->getArgument(1).use_empty() || body->getOperations().size() != 2)
    return {};
  auto trunc = dyn_cast<arith::TruncFOp>(body->front());
  if (!trunc || trunc.getIn() != body->getArgument(0) ||
      body->getTerminator()->getOperand(0) != trunc.getResult() ||
      trunc.getType() != narrow)
    return {};
  if (std::optional<arith::RoundingMode> mode = trunc.getRoundingmode())
    if (*mode != arith::RoundingMode::to_nearest_even)
      return {};
  return generic;
}
