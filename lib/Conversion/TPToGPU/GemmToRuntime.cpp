//===- GemmToRuntime.cpp - matmul-family linalg ops to GEMM calls -*- C++ -*-//
//
// Every linalg contraction on tensors becomes a call of the runtime's GEMM
// (cuBLAS on GPUs, the host GEMM on CPU ranks).
//
// Algorithm, per contraction (linalg::isaContractionOpInterface: two inputs,
// one init, projected-permutation maps, a multiply-accumulate body):
//  1. linalg::inferContractionDims splits the loops into batch, M, N and K
//     dimensions. The result C decides the order of batch, M and N: its map
//     must read [batch..., M..., N...] (C = A·B) or [batch..., N..., M...]
//     (C^T = B^T·A^T, computed by swapping the operands); any other order is
//     computed as [batch..., M..., N...] and transposed into C.
//  2. The left operand must then read [batch, rows, K] (trans = 0) or
//     [batch, K, rows] (trans = 1) and the right one [batch, K, cols]
//     (trans = 0) or [batch, cols, K] (trans = 1), each group in C's order
//     and K in one order shared by both operands. The K order is taken from
//     whichever operand needs no transpose; an operand that fits neither
//     form gets a linalg.transpose (a copy kernel on GPUs).
//  3. Groups collapse into one dimension each (tensor.collapse_shape, a view
//     after bufferization): operands become [B, M, K]-shaped (rank 3,
//     `tprt_mlir_batched_gemm_<t>`) or [M, K]-shaped (`tprt_mlir_gemm_<t>`).
//     Buffers reach the runtime as `bufferization.to_buffer` with the
//     identity layout, so bufferization copies only operands that are not
//     contiguous already.
//  4. The product lands in a fresh buffer; an init that is not a fill of
//     zero is added to it with an elementwise linalg.generic.
// Before step 1, an operand that is a linalg.transpose is replaced by the
// transpose's input read through the composed map (torch-mlir's weight
// transposes become trans flags, foldOperandTransposes).
//
// What the body computes is judged by value (checkMultiplyAccumulate), not
// by linalg::isaContractionOpInterface alone, which looks through any unary
// side-effect-free op (a negf or an exp of an operand would be dropped):
// the yield must be `acc + x * y` (arith.addf of the accumulator and an
// arith.mulf, either operand order), x and y the two input block arguments
// read as they are or through one arith.extf to the accumulator's type, and
// every other op of the body dead and pure; a 16-bit accumulator may also
// be widened by arith.extf and the sum rounded back by arith.truncf (the
// 16-bit GEMM, which rounds once). Element types, A and B equal:
//  - C of the same type: `tprt_mlir_[batched_]gemm_<t>`;
//  - f16 or bf16 operands into f32 (torch-mlir's 16-bit matmuls: the body
//    widens both operands, multiplies and adds in f32):
//    `tprt_mlir_[batched_]gemm_<t>_f32`, products summed in f32 and C
//    written in f32 (cuBLAS: 16-bit A and B, f32 C, CUBLAS_COMPUTE_32F).
//    When C starts from a zero fill and its only use is an elementwise
//    linalg.generic that rounds it back to the operands' type (arith.truncf,
//    to nearest even) the rounding folds into the GEMM: the call is the
//    16-bit `tprt_mlir_[batched_]gemm_<t>`, which sums in f32 and rounds
//    once, exactly that (getNarrowingConsumer), and the f32 product is
//    never written.
// Contractions on integers, on other mixes of element types (bf16 x f16,
// f32 into f64), with another body, or with dynamic shapes, stay linalg with
// a remark: they become (slower) kernels or loops.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/RoutedContraction.h"
#include "tp/Conversion/Passes.h"
#include "tp/Conversion/RuntimeSymbols.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tp {
#define GEN_PASS_DEF_GEMMTORUNTIMEPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-gemm-to-runtime"

using namespace mlir;
using namespace mlir::tp;

namespace {

/// The loop dimensions an operand's (projected permutation) map reads, in
/// the operand's dimension order.
SmallVector<unsigned> readDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(cast<AffineDimExpr>(e).getPosition());
  return dims;
}

SmallVector<unsigned> concat(ArrayRef<unsigned> a, ArrayRef<unsigned> b,
                             ArrayRef<unsigned> c) {
  SmallVector<unsigned> r(a);
  r.append(b.begin(), b.end());
  r.append(c.begin(), c.end());
  return r;
}

/// `group` sorted by the position of its dimensions in `order`.
SmallVector<unsigned> inOrderOf(ArrayRef<unsigned> group,
                                ArrayRef<unsigned> order) {
  SmallVector<unsigned> r;
  for (unsigned d : order)
    if (llvm::is_contained(group, d))
      r.push_back(d);
  return r;
}

/// How one GEMM operand is fed: its loop dimensions in the order the
/// runtime reads them, and whether that is the transposed form.
struct OperandPlan {
  SmallVector<unsigned> order; // batch, then (rows, k) or (k, rows)
  bool trans = false;
  bool needsTranspose = false; // order differs from the operand's own
};

OperandPlan planOperand(ArrayRef<unsigned> own, ArrayRef<unsigned> batch,
                        ArrayRef<unsigned> rows, ArrayRef<unsigned> k,
                        bool kFirstIsTrans) {
  // kFirstIsTrans: for the left operand [batch, k, rows] is the transposed
  // form; for the right operand [batch, k, cols] is the plain one.
  OperandPlan plan;
  SmallVector<unsigned> rowsFirst = concat(batch, rows, k);
  SmallVector<unsigned> kFirst = concat(batch, k, rows);
  if (llvm::equal(own, rowsFirst)) {
    plan.order = rowsFirst;
    plan.trans = !kFirstIsTrans;
  } else if (llvm::equal(own, kFirst)) {
    plan.order = kFirst;
    plan.trans = kFirstIsTrans;
  } else {
    // A copy either way: pick the form that keeps the operand's innermost
    // dimension innermost (the transpose kernel then reads rows whole).
    plan.needsTranspose = true;
    bool useKFirst = !kFirst.empty() && !own.empty() &&
                     kFirst.back() == own.back();
    plan.order = useKFirst ? kFirst : rowsFirst;
    plan.trans = useKFirst == kFirstIsTrans;
  }
  return plan;
}

/// Why the body of contraction `op` is not `acc + x * y` over its two
/// inputs, each read as it is or widened by one arith.extf to the type of
/// the sum, or the empty string when it is. Judged on values: addf and mulf
/// in either operand order, and every other op of the body dead and pure.
/// The accumulator is read as it is, or widened by arith.extf and the sum
/// rounded back by arith.truncf (to nearest even).
std::string checkMultiplyAccumulate(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  if (!body || body->getNumArguments() != 3)
    return "its body does not read two inputs and an accumulator";
  auto describe = [](Value v) -> std::string {
    if (Operation *def = v.getDefiningOp())
      return "'" + def->getName().getStringRef().str() + "'";
    return "a block argument";
  };
  BlockArgument x = body->getArgument(0), y = body->getArgument(1),
                acc = body->getArgument(2);
  Operation *terminator = body->getTerminator();
  if (terminator->getNumOperands() != 1)
    return "its body yields more than one value";
  SmallVector<Operation *> chain = {terminator};
  Value sum = terminator->getOperand(0);
  // A 16-bit accumulator may be widened, added to and rounded back: the
  // 16-bit GEMM's meaning (f32 sums, rounded; it rounds once).
  Value accumulated = acc;
  if (auto trunc = sum.getDefiningOp<arith::TruncFOp>()) {
    std::optional<arith::RoundingMode> mode = trunc.getRoundingmode();
    auto widen = [&](Value v) {
      auto ext = v.getDefiningOp<arith::ExtFOp>();
      return ext && ext.getIn() == acc ? ext : arith::ExtFOp();
    };
    auto add = trunc.getIn().getDefiningOp<arith::AddFOp>();
    arith::ExtFOp ext = add ? widen(add.getLhs()) : arith::ExtFOp();
    if (add && !ext)
      ext = widen(add.getRhs());
    Type narrow = acc.getType();
    if ((mode && *mode != arith::RoundingMode::to_nearest_even) || !ext ||
        !(narrow.isBF16() || narrow.isF16()) || !ext.getType().isF32())
      return "it yields " + describe(sum) + ", not an arith.addf";
    chain.append({trunc, ext});
    accumulated = ext;
    sum = trunc.getIn();
  }
  auto add = sum.getDefiningOp<arith::AddFOp>();
  if (!add)
    return "it yields " + describe(sum) + ", not an arith.addf";
  Value product = add.getLhs() == accumulated   ? add.getRhs()
                  : add.getRhs() == accumulated ? add.getLhs()
                                                : Value();
  if (!product)
    return "its arith.addf does not add to the accumulator as it is";
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return "it adds " + describe(product) +
           " to the accumulator, not an arith.mulf";
  chain.append({add, mul});
  auto operandOf = [&](Value v) -> Value {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>()) {
      chain.push_back(ext);
      return ext.getIn();
    }
    return v;
  };
  Value l = operandOf(mul.getLhs()), r = operandOf(mul.getRhs());
  for (Value v : {l, r})
    if (v != x && v != y)
      return "its product reads " + describe(v) +
             ", not an input as it is or widened by arith.extf";
  if (l == r)
    return "its product reads the same input twice";
  for (Operation &inner : *body)
    if (!llvm::is_contained(chain, &inner) && !isPure(&inner))
      return "it also computes '" + inner.getName().getStringRef().str() +
             "'";
  return "";
}


class GemmLowering {
public:
  explicit GemmLowering(ModuleOp module) : module(module) {}

  /// Rewrites `op` if it is a contraction the runtime can compute; emits a
  /// remark and leaves it alone if it is a contraction it cannot.
  void lower(linalg::LinalgOp op);

private:
  func::FuncOp getCallee(StringRef name, TypeRange inputs) {
    return runtime::getOrDeclare(module, name, inputs);
  }
  Value transpose(OpBuilder &b, Location loc, Value v,
                  ArrayRef<unsigned> own, ArrayRef<unsigned> order);
  Value reshape(OpBuilder &b, Location loc, Value v,
                ArrayRef<int64_t> shape, ArrayRef<unsigned> groupSizes);

  ModuleOp module;
};

} // namespace

/// `v` (whose dimensions read the loops `own`) with its dimensions permuted
/// into `order`.
Value GemmLowering::transpose(OpBuilder &b, Location loc, Value v,
                              ArrayRef<unsigned> own,
                              ArrayRef<unsigned> order) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> perm, shape;
  for (unsigned d : order) {
    int64_t pos = llvm::find(own, d) - own.begin();
    perm.push_back(pos);
    shape.push_back(type.getDimSize(pos));
  }
  Value init = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

/// The reassociation of consecutive runs of `groupSizes[i]` dimensions.
static SmallVector<ReassociationIndices>
consecutiveGroups(ArrayRef<unsigned> groupSizes) {
  SmallVector<ReassociationIndices> groups;
  int64_t next = 0;
  for (unsigned size : groupSizes) {
    ReassociationIndices g;
    for (unsigned i = 0; i < size; ++i)
      g.push_back(next++);
    groups.push_back(g);
  }
  return groups;
}

/// `v` reshaped to `shape`, where consecutive runs of `groupSizes[i]` source
/// dimensions form result dimension i (a run may be empty: a unit dim).
Value GemmLowering::reshape(OpBuilder &b, Location loc, Value v,
                            ArrayRef<int64_t> shape,
                            ArrayRef<unsigned> groupSizes) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  auto target = RankedTensorType::get(shape, type.getElementType());
  bool anyEmpty = llvm::is_contained(groupSizes, 0u);
  if (!anyEmpty && type.getRank() > (int64_t)shape.size()) {
    SmallVector<ReassociationIndices> groups = consecutiveGroups(groupSizes);
    return tensor::CollapseShapeOp::create(b, loc, target, v, groups);
  }
  if (!anyEmpty && type.getRank() < (int64_t)shape.size()) {
    SmallVector<ReassociationIndices> groups = consecutiveGroups(groupSizes);
    return tensor::ExpandShapeOp::create(b, loc, target, v, groups);
  }
  // General case: through one dimension.
  Value flat = v;
  if (type.getRank() != 1) {
    auto flatType =
        RankedTensorType::get({type.getNumElements()}, type.getElementType());
    if (type.getRank() == 0)
      flat = tensor::ExpandShapeOp::create(
          b, loc, flatType, v, ArrayRef<ReassociationIndices>{});
    else {
      ReassociationIndices all;
      for (int64_t i = 0; i < type.getRank(); ++i)
        all.push_back(i);
      flat = tensor::CollapseShapeOp::create(b, loc, flatType, v,
                                             ArrayRef<ReassociationIndices>{all});
    }
  }
  if (shape.size() == 1)
    return flat;
  ReassociationIndices all;
  for (size_t i = 0; i < shape.size(); ++i)
    all.push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, target, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// A contraction whose operand is a linalg.transpose (torch-mlir's
/// `x @ W^T` transposes the weight first) reads the transpose's input
/// instead, through its map composed with the permutation; a named op is
/// generalized first. The GEMM then takes the transpose as a trans flag,
/// and the transpose kernel (a copy of the weight every step) goes with its
/// last use.
static linalg::LinalgOp foldOperandTransposes(linalg::LinalgOp op) {
  auto transposeOf = [](OpOperand *operand) {
    auto t = operand->get().getDefiningOp<linalg::TransposeOp>();
    return t && t.hasPureTensorSemantics() ? t : linalg::TransposeOp();
  };
  if (llvm::none_of(op.getDpsInputOperands(), transposeOf))
    return op;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    IRRewriter rewriter(op.getContext());
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
    if (failed(g))
      return op;
    generic = *g;
  }
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  for (OpOperand *input : generic.getDpsInputOperands()) {
    linalg::TransposeOp t = transposeOf(input);
    if (!t)
      continue;
    // out[x] = in[y] with y[p[j]] = x[j]: the input's map reads result
    // pinv[i] of the old map at its position i.
    ArrayRef<int64_t> perm = t.getPermutation();
    AffineMap old = maps[input->getOperandNumber()];
    SmallVector<AffineExpr> results(perm.size());
    for (auto [j, p] : llvm::enumerate(perm))
      results[p] = old.getResult(j);
    maps[input->getOperandNumber()] =
        AffineMap::get(old.getNumDims(), old.getNumSymbols(), results,
                       op.getContext());
    input->set(t.getInput());
    if (t->use_empty())
      t->erase();
  }
  generic.setIndexingMapsAttr(
      Builder(op.getContext()).getAffineMapArrayAttr(maps));
  return generic;
}

void GemmLowering::lower(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op->getNumResults() != 1 ||
      !linalg::isaContractionOpInterface(op))
    return;
  op = foldOperandTransposes(op);
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return;
  Value a = op.getDpsInputOperand(0)->get();
  Value b = op.getDpsInputOperand(1)->get();
  Value init = op.getDpsInitOperand(0)->get();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Type element = resultType.getElementType();
  if (!runtime::getElementSuffix(element) || !isa<FloatType>(element)) {
    op->emitRemark() << "contraction on " << element
                     << " stays a kernel: the runtime's GEMM takes f32, f16, "
                        "bf16 or f64";
    return;
  }
  for (Value v : {a, b, init}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (!t.hasStaticShape()) {
      op->emitRemark()
          << "contraction with dynamic shapes stays a kernel";
      return;
    }
  }
  // The operands' element type, and the result's: equal, or f16/bf16 into
  // f32 (the widening GEMM).
  Type operand = cast<RankedTensorType>(a.getType()).getElementType();
  Type operandB = cast<RankedTensorType>(b.getType()).getElementType();
  if (operand != operandB) {
    op->emitRemark() << "contraction of " << operand << " and " << operandB
                     << " into " << element
                     << " stays a kernel: the runtime's GEMM takes operands "
                        "of one element type";
    return;
  }
  bool widening = operand != element;
  if (widening && !((operand.isBF16() || operand.isF16()) && element.isF32())) {
    op->emitRemark() << "contraction of " << operand << " into " << element
                     << " stays a kernel: the runtime's GEMM takes one "
                        "element type, or f16 or bf16 operands into f32";
    return;
  }
  std::string why = checkMultiplyAccumulate(op);
  if (!why.empty()) {
    op->emitRemark() << "contraction stays a kernel: its body is not the "
                        "multiply-accumulate of the runtime's GEMM ("
                     << why << ")";
    return;
  }
  if (dims->m.empty() && dims->n.empty()) {
    op->emitRemark() << "contraction with no M and no N dimension (a dot "
                        "product) stays a kernel";
    return;
  }
  auto fill = init.getDefiningOp<linalg::FillOp>();
  bool zeroInit = fill && matchPattern(fill.value(), m_AnyZeroFloat());
  // A widening product rounded back to its operands' type by its only use:
  // the 16-bit GEMM computes exactly that (f32 sums, one rounding).
  linalg::GenericOp narrowing =
      widening && zeroInit ? narrowingConsumer(op->getResult(0), operand)
                           : linalg::GenericOp();
  Type product = narrowing ? operand : element;
  std::string suffix = *runtime::getElementSuffix(operand);
  if (product != operand)
    suffix += "_" + *runtime::getElementSuffix(product);

  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<unsigned> ownA = readDims(maps[0]), ownB = readDims(maps[1]),
                        ownC = readDims(maps[2]);
  SmallVector<unsigned> batch = inOrderOf(dims->batch, ownC);
  SmallVector<unsigned> mDims = inOrderOf(dims->m, ownC);
  SmallVector<unsigned> nDims = inOrderOf(dims->n, ownC);

  // Step 1: C's order decides which operand is on the left.
  Value left = a, right = b;
  SmallVector<unsigned> ownL = ownA, ownR = ownB, rows = mDims, cols = nDims;
  bool transposeResult = false;
  if (llvm::equal(ownC, concat(batch, mDims, nDims))) {
  } else if (llvm::equal(ownC, concat(batch, nDims, mDims))) {
    std::swap(left, right);
    std::swap(ownL, ownR);
    std::swap(rows, cols);
  } else {
    transposeResult = true;
  }

  // Step 2: a K order shared by both operands, preferring one that spares
  // a transpose.
  OperandPlan bestL, bestR;
  int bestCost = 3;
  for (ArrayRef<unsigned> source : {ArrayRef<unsigned>(ownL),
                                    ArrayRef<unsigned>(ownR)}) {
    SmallVector<unsigned> k = inOrderOf(dims->k, source);
    OperandPlan l = planOperand(ownL, batch, rows, k, /*kFirstIsTrans=*/true);
    OperandPlan r = planOperand(ownR, batch, cols, k, /*kFirstIsTrans=*/false);
    int cost = int(l.needsTranspose) + int(r.needsTranspose);
    if (cost < bestCost) {
      bestCost = cost;
      bestL = l;
      bestR = r;
    }
  }

  OpBuilder builder(op);
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto extent = [&](ArrayRef<unsigned> group) {
    int64_t n = 1;
    for (unsigned d : group)
      n *= ranges[d];
    return n;
  };
  int64_t batchSize = extent(batch), rowSize = extent(rows),
          colSize = extent(cols), kSize = extent(dims->k);
  bool batched = !batch.empty();
  unsigned nb = batch.size(), nk = dims->k.size();

  auto unranked = [](Type t) { return UnrankedMemRefType::get(t, nullptr); };
  auto toArg = [&](Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    Value buffer = bufferization::ToBufferOp::create(
        builder, loc, MemRefType::get(type.getShape(), operand), tensor,
        /*readOnly=*/true);
    return memref::CastOp::create(builder, loc, unranked(operand), buffer)
        .getResult();
  };
  auto prepare = [&](Value v, ArrayRef<unsigned> own, const OperandPlan &plan,
                     ArrayRef<unsigned> other, bool kFirst) {
    if (plan.needsTranspose)
      v = transpose(builder, loc, v, own, plan.order);
    // Group sizes in plan.order: batch, then k and the other group.
    SmallVector<int64_t> shape;
    SmallVector<unsigned> groups;
    if (batched) {
      shape.push_back(batchSize);
      groups.push_back(nb);
    }
    unsigned otherSize = other.size();
    int64_t otherExtent = extent(other);
    if (kFirst) {
      shape.append({kSize, otherExtent});
      groups.append({nk, otherSize});
    } else {
      shape.append({otherExtent, kSize});
      groups.append({otherSize, nk});
    }
    return toArg(reshape(builder, loc, v, shape, groups));
  };
  auto i32 = [&](int64_t v) {
    return arith::ConstantOp::create(builder, loc,
                                     builder.getI32IntegerAttr(int32_t(v)))
        .getResult();
  };

  SmallVector<Value> args = {i32(bestL.trans), i32(bestR.trans)};
  // The left operand is [rows, k] unless transposed, the right [k, cols].
  args.push_back(prepare(left, ownL, bestL, rows, /*kFirst=*/bestL.trans));
  args.push_back(prepare(right, ownR, bestR, cols, /*kFirst=*/!bestR.trans));
  SmallVector<int64_t> outShape;
  if (batched)
    outShape.push_back(batchSize);
  outShape.append({rowSize, colSize});
  auto outMemref = MemRefType::get(outShape, product);
  Value out = memref::AllocOp::create(builder, loc, outMemref);
  args.push_back(memref::CastOp::create(builder, loc, unranked(product), out));
  SmallVector<Type> argTypes(2, builder.getI32Type());
  argTypes.append(2, unranked(operand));
  argTypes.push_back(unranked(product));
  func::CallOp::create(
      builder, loc,
      getCallee(runtime::getCollectiveSymbol(
                    batched ? runtime::kBatchedGemm : runtime::kGemm, suffix),
                argTypes),
      args);
  Value computedProduct = bufferization::ToTensorOp::create(
      builder, loc, RankedTensorType::get(outShape, product), out,
      /*restrict=*/true, /*writable=*/true);

  // Back to C's shape: [batch..., rows..., cols...] dims, then C's order.
  SmallVector<unsigned> computed = concat(batch, rows, cols);
  SmallVector<int64_t> computedShape;
  for (unsigned d : computed)
    computedShape.push_back(ranges[d]);
  SmallVector<unsigned> groups;
  if (batched)
    groups.push_back(nb);
  groups.append({unsigned(rows.size()), unsigned(cols.size())});
  Value result = reshape(builder, loc, computedProduct, computedShape, groups);
  if (transposeResult)
    result = transpose(builder, loc, result, computed, ownC);

  // Step 4: a non-zero init is added.
  if (!zeroInit) {
    AffineMap id = builder.getMultiDimIdentityMap(resultType.getRank());
    SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                               utils::IteratorType::parallel);
    result = linalg::GenericOp::create(
                 builder, loc, TypeRange{resultType}, ValueRange{result},
                 ValueRange{init}, ArrayRef<AffineMap>{id, id}, iterators,
                 [](OpBuilder &b, Location l, ValueRange args) {
                   Value sum = arith::AddFOp::create(b, l, args[1], args[0]);
                   linalg::YieldOp::create(b, l, sum);
                 })
                 .getResult(0);
  }
  if (narrowing) {
    narrowing->getResult(0).replaceAllUsesWith(result);
    narrowing->erase();
  } else {
    op->getResult(0).replaceAllUsesWith(result);
  }
  op->erase();
}

namespace {
struct GemmToRuntimePass
    : public tp::impl::GemmToRuntimePassBase<GemmToRuntimePass> {
  void runOnOperation() override {
    // Contractions only: lowering one erases what it folds (its operands'
    // transposes, the truncf that uses it), never another contraction.
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (linalg::isaContractionOpInterface(op))
        ops.push_back(op);
    });
    GemmLowering lowering(getOperation());
    for (linalg::LinalgOp op : ops)
      lowering.lower(op);
  }
};
} // namespace
