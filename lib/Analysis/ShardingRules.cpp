//===- ShardingRules.cpp - factor rules for upstream ops --------*- C++ -*-===//
//
// External models of ShardingRuleOpInterface for upstream ops. Every rule is
// read off the op itself:
//
//  * linalg structured ops: one factor per loop; the iterator type says
//    parallel or reduction, the body's combiner (matched with
//    `matchReduction`) gives the reduction kind, and the indexing maps say
//    which factor indexes each tensor dimension. A map result that is not a
//    plain loop dimension (a window `d0 + d1`) makes the loops in it opaque.
//    A fill of the combiner identity (0, -inf, +inf) may produce a partial.
//  * linalg.softmax: parallel over every dimension but the softmax one.
//  * tensor reshapes: the expanded dimensions are the factors; a collapsed
//    dimension is made of its group, major first.
//  * tensor slices and concat: full dimensions are parallel, sliced or
//    concatenated ones opaque. tensor.extract reads its source whole.
//  * tensor.empty: any layout at no cost (it holds no data).
//  * elementwise arith/math ops on tensors: parallel over every dimension.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/ShardingRules.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tp;

#include "tp/Analysis/ShardingRuleInterface.cpp.inc"

std::optional<ReductionKind> mlir::tp::getCombinerKind(Operation *combiner) {
  return llvm::TypeSwitch<Operation *, std::optional<ReductionKind>>(combiner)
      .Case<arith::AddFOp, arith::AddIOp>(
          [](auto) { return ReductionKind::Sum; })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp,
            arith::MaxUIOp>([](auto) { return ReductionKind::Max; })
      .Case<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp,
            arith::MinUIOp>([](auto) { return ReductionKind::Min; })
      .Default([](Operation *) { return std::nullopt; });
}

FailureOr<ShardingRule> mlir::tp::getShardingRule(Operation *op,
                                                  std::string *reason) {
  auto iface = dyn_cast<ShardingRuleOpInterface>(op);
  if (!iface) {
    if (reason)
      *reason = "no sharding rule for '" + op->getName().getStringRef().str() +
                "'";
    return failure();
  }
  FailureOr<ShardingRule> rule = iface.getShardingRule();
  if (failed(rule) && reason)
    *reason = "the sharding rule of '" + op->getName().getStringRef().str() +
              "' does not apply to this form of the op";
  return rule;
}

/// The identity mapping of a tensor of `rank` onto factors 0..rank-1.
static TensorFactors identityFactors(int64_t rank) {
  TensorFactors dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back({d});
  return dims;
}

/// One parallel factor per dimension of `type`; dynamic dimensions are
/// opaque (never split).
static SmallVector<Factor> factorsOfShape(RankedTensorType type) {
  SmallVector<Factor> factors;
  for (int64_t size : type.getShape()) {
    if (ShapedType::isDynamic(size))
      factors.push_back({1, FactorKind::Opaque});
    else
      factors.push_back({size, FactorKind::Parallel});
  }
  return factors;
}

/// Which combiner's identity `value` (a fill value) is, if any.
static std::optional<ReductionKind> identityKind(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  if (auto f = dyn_cast<FloatAttr>(attr)) {
    const llvm::APFloat &v = f.getValue();
    if (v.isZero())
      return ReductionKind::Sum;
    bool largest =
        llvm::APFloat::getLargest(v.getSemantics(), v.isNegative())
            .bitwiseIsEqual(v);
    if (v.isNegative() && (v.isInfinity() || largest))
      return ReductionKind::Max;
    if (!v.isNegative() && (v.isInfinity() || largest))
      return ReductionKind::Min;
    return std::nullopt;
  }
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    const llvm::APInt &v = i.getValue();
    if (v.isZero())
      return ReductionKind::Sum;
    if (v.isMinSignedValue())
      return ReductionKind::Max;
    if (v.isMaxSignedValue())
      return ReductionKind::Min;
  }
  return std::nullopt;
}

/// Whether the partitioner may mask a lookup from a row-split table in
/// `linalgOp`'s body: the body yields one value and reads no output (a pure
/// map), so that yielding 0 on the devices that do not hold the row makes
/// the results partial sums of the lookup, whatever the body computes from
/// the gathered element (`x`, `select(valid, -x, 0)`, `x * scale`, ...).
static bool isMaskableLookup(linalg::LinalgOp linalgOp,
                             tensor::ExtractOp extract) {
  Block *body = linalgOp.getBlock();
  if (extract->getBlock() != body || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getNumReductionLoops() != 0)
    return false;
  for (BlockArgument out : linalgOp.getRegionOutputArgs())
    if (!out.use_empty())
      return false;
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  return yield.getNumOperands() == 1 &&
         isa<FloatType, IntegerType>(yield.getOperand(0).getType());
}

/// Adds the tensors a linalg body gathers from to `rule.captured`. A
/// dimension indexed by a loop (`linalg.index`) of the same extent carries
/// that loop's factor; one indexed by a loop over fewer elements than the
/// table holds (a position table read at 0..S-1) is read whole; one indexed
/// by data (a token id) gets a factor of its own when the lookup can be
/// masked (isMaskableLookup), at most one per body.
static void addGathers(linalg::LinalgOp linalgOp, ShardingRule &rule) {
  Operation *op = linalgOp;
  Block *body = linalgOp.getBlock();
  SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
  bool maskUsed = false;
  body->walk([&](tensor::ExtractOp extract) {
    Value table = extract.getTensor();
    if (op->isAncestor(table.getParentRegion()->getParentOp()))
      return;
    auto type = cast<RankedTensorType>(table.getType());
    bool masked = !maskUsed && isMaskableLookup(linalgOp, extract);
    TensorFactors dims;
    for (auto [d, index] : llvm::enumerate(extract.getIndices())) {
      SmallVector<int64_t, 1> &dim = dims.emplace_back();
      if (auto loop = index.getDefiningOp<linalg::IndexOp>()) {
        int64_t f = loop.getDim();
        if (!type.isDynamicDim(d) && type.getDimSize(d) == ranges[f])
          dim.push_back(f);
        continue;
      }
      if (masked && !type.isDynamicDim(d)) {
        // A data-dependent row: splitting it masks the lookup.
        rule.factors.push_back(
            {type.getDimSize(d), FactorKind::Reduction, ReductionKind::Sum});
        dim.push_back(rule.factors.size() - 1);
        masked = false; // one gathered dimension at most
        maskUsed = true;
      }
    }
    rule.captured.push_back({table, std::move(dims)});
  });
}

namespace {

//===----------------------------------------------------------------------===//
// linalg structured ops
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct LinalgStructuredModel
    : public ShardingRuleOpInterface::ExternalModel<LinalgStructuredModel<OpTy>,
                                                    OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    if (!linalgOp.hasPureTensorSemantics())
      return failure();
    ShardingRule rule;
    SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iterators =
        linalgOp.getIteratorTypesArray();

    // The combiner shared by every output, if the body has a plain one.
    std::optional<ReductionKind> combiner;
    if (linalgOp.getNumReductionLoops() > 0) {
      SmallVector<BlockArgument> outArgs(linalgOp.getRegionOutputArgs());
      for (unsigned i = 0, e = outArgs.size(); i < e; ++i) {
        SmallVector<Operation *> combinerOps;
        Value reduced = matchReduction(outArgs, i, combinerOps);
        std::optional<ReductionKind> kind;
        if (reduced && combinerOps.size() == 1)
          kind = getCombinerKind(combinerOps.front());
        if (!kind || (combiner && *combiner != *kind)) {
          combiner.reset();
          break;
        }
        combiner = kind;
      }
    }

    for (auto [size, iterator] : llvm::zip(ranges, iterators)) {
      Factor factor{size, FactorKind::Parallel};
      if (ShapedType::isDynamic(size))
        factor = {1, FactorKind::Opaque};
      else if (iterator == utils::IteratorType::reduction) {
        if (combiner)
          factor = {size, FactorKind::Reduction, *combiner};
        else
          factor = {size, FactorKind::Opaque};
      }
      rule.factors.push_back(factor);
    }

    SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
    int64_t numInputs = linalgOp.getNumDpsInputs();
    for (OpOperand &operand : op->getOpOperands()) {
      int64_t index = operand.getOperandNumber();
      // An init whose value the body never reads only gives the shape.
      bool readInit = linalgOp.isDpsInit(&operand) &&
                      linalgOp.payloadUsesValueFromOperand(&operand);
      rule.initOf.push_back(readInit ? index - numInputs : -1);
      if (!isa<RankedTensorType>(operand.get().getType())) {
        rule.operands.push_back(std::nullopt);
        continue;
      }
      AffineMap map = maps[index];
      TensorFactors dims;
      for (AffineExpr expr : map.getResults()) {
        SmallVector<int64_t, 1> &dim = dims.emplace_back();
        if (auto d = dyn_cast<AffineDimExpr>(expr)) {
          dim.push_back(d.getPosition());
          continue;
        }
        if (isa<AffineConstantExpr>(expr))
          continue;
        // A window or other compound index: its loops cannot be split.
        expr.walk([&](AffineExpr sub) {
          if (auto d = dyn_cast<AffineDimExpr>(sub))
            rule.factors[d.getPosition()].kind = FactorKind::Opaque;
        });
      }
      rule.operands.push_back(std::move(dims));
    }
    for (OpOperand &init : linalgOp.getDpsInitsMutable())
      rule.results.push_back(rule.operands[init.getOperandNumber()]);

    if (auto fill = dyn_cast<linalg::FillOp>(op))
      rule.identityOf = identityKind(fill.value());

    addGathers(linalgOp, rule);

    int64_t ops = 0;
    for (Operation &bodyOp : linalgOp.getBlock()->without_terminator())
      if (!isa<linalg::IndexOp>(bodyOp))
        ++ops;
    // A contraction runs as a GEMM: a multiply and an add per point. The
    // casts of a widening body (bf16 operands extf'd into an f32
    // accumulator) are not work of their own: the GEMM reads 16-bit
    // operands as they are.
    if (linalg::isaContractionOpInterface(linalgOp))
      ops = std::min<int64_t>(ops, 2);
    rule.opsPerPoint = ops;
    return rule;
  }
};

template <typename... OpTys>
static void attachLinalgModels(MLIRContext *ctx) {
  (OpTys::template attachInterface<LinalgStructuredModel<OpTys>>(*ctx), ...);
}

struct SoftmaxModel
    : public ShardingRuleOpInterface::ExternalModel<SoftmaxModel,
                                                    linalg::SoftmaxOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto softmax = cast<linalg::SoftmaxOp>(op);
    auto type = dyn_cast<RankedTensorType>(softmax.getInput().getType());
    if (!type || !isa<RankedTensorType>(softmax.getOutput().getType()))
      return failure();
    ShardingRule rule;
    rule.factors = factorsOfShape(type);
    rule.factors[softmax.getDimension()].kind = FactorKind::Opaque;
    rule.operands = {identityFactors(type.getRank()),
                     identityFactors(type.getRank())};
    rule.initOf = {-1, 0};
    rule.results = {identityFactors(type.getRank())};
    rule.opsPerPoint = 5; // max, sub, exp, sum, div
    return rule;
  }
};

//===----------------------------------------------------------------------===//
// tensor ops
//===----------------------------------------------------------------------===//

struct EmptyModel
    : public ShardingRuleOpInterface::ExternalModel<EmptyModel,
                                                    tensor::EmptyOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    ShardingRule rule;
    rule.factors = factorsOfShape(type);
    rule.operands.assign(op->getNumOperands(), std::nullopt);
    rule.initOf.assign(op->getNumOperands(), -1);
    rule.results = {identityFactors(type.getRank())};
    rule.anyLayout = true;
    rule.opsPerPoint = 0;
    rule.viewLike = true;
    return rule;
  }
};

/// Reshapes: the expanded shape's dimensions are the factors; each collapsed
/// dimension is its reassociation group.
template <typename OpTy>
struct ReshapeModel
    : public ShardingRuleOpInterface::ExternalModel<ReshapeModel<OpTy>, OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto reshape = cast<OpTy>(op);
    constexpr bool isExpand = std::is_same_v<OpTy, tensor::ExpandShapeOp>;
    RankedTensorType expanded =
        isExpand ? reshape.getResultType() : reshape.getSrcType();
    ShardingRule rule;
    rule.factors = factorsOfShape(expanded);
    TensorFactors collapsed;
    for (const ReassociationIndices &group :
         reshape.getReassociationIndices()) {
      SmallVector<int64_t, 1> &dim = collapsed.emplace_back();
      for (int64_t d : group)
        dim.push_back(d);
    }
    TensorFactors full = identityFactors(expanded.getRank());
    rule.operands.assign(op->getNumOperands(), std::nullopt);
    rule.initOf.assign(op->getNumOperands(), -1);
    rule.operands[0] = isExpand ? collapsed : full;
    rule.results = {isExpand ? full : collapsed};
    rule.opsPerPoint = 0;
    rule.viewLike = true;
    return rule;
  }
};

/// A dimension of `full` is whole in the slice when offset 0, stride 1 and
/// the size covers it.
static bool coversDim(OffsetSizeAndStrideOpInterface slice, int64_t dim,
                      int64_t fullSize) {
  std::optional<int64_t> offset = getConstantIntValue(slice.getMixedOffsets()[dim]);
  std::optional<int64_t> size = getConstantIntValue(slice.getMixedSizes()[dim]);
  std::optional<int64_t> stride = getConstantIntValue(slice.getMixedStrides()[dim]);
  return offset == 0 && stride == 1 && size && !ShapedType::isDynamic(fullSize) &&
         *size == fullSize;
}

/// The factors of the slice-side tensor of a (possibly rank-reducing) slice
/// of a tensor with one factor per dimension.
static TensorFactors sliceFactors(int64_t fullRank,
                                  const llvm::SmallBitVector &dropped) {
  TensorFactors dims;
  for (int64_t d = 0; d < fullRank; ++d)
    if (!dropped.test(d))
      dims.push_back({d});
  return dims;
}

struct ExtractSliceModel
    : public ShardingRuleOpInterface::ExternalModel<ExtractSliceModel,
                                                    tensor::ExtractSliceOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    RankedTensorType source = slice.getSourceType();
    ShardingRule rule;
    rule.factors = factorsOfShape(source);
    for (int64_t d = 0; d < source.getRank(); ++d)
      if (!coversDim(slice, d, source.getDimSize(d)))
        rule.factors[d].kind = FactorKind::Opaque;
    rule.operands.assign(op->getNumOperands(), std::nullopt);
    rule.initOf.assign(op->getNumOperands(), -1);
    rule.operands[0] = identityFactors(source.getRank());
    rule.results = {sliceFactors(source.getRank(), slice.getDroppedDims())};
    rule.opsPerPoint = 0;
    return rule;
  }
};

struct InsertSliceModel
    : public ShardingRuleOpInterface::ExternalModel<InsertSliceModel,
                                                    tensor::InsertSliceOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    RankedTensorType dest = insert.getResultType();
    ShardingRule rule;
    rule.factors = factorsOfShape(dest);
    for (int64_t d = 0; d < dest.getRank(); ++d)
      if (!coversDim(insert, d, dest.getDimSize(d)))
        rule.factors[d].kind = FactorKind::Opaque;
    rule.operands.assign(op->getNumOperands(), std::nullopt);
    rule.initOf.assign(op->getNumOperands(), -1);
    rule.operands[0] = sliceFactors(dest.getRank(), insert.getDroppedDims());
    rule.operands[1] = identityFactors(dest.getRank());
    rule.results = {identityFactors(dest.getRank())};
    rule.opsPerPoint = 0;
    return rule;
  }
};

struct ConcatModel
    : public ShardingRuleOpInterface::ExternalModel<ConcatModel,
                                                    tensor::ConcatOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto concat = cast<tensor::ConcatOp>(op);
    RankedTensorType type = concat.getResultType();
    ShardingRule rule;
    rule.factors = factorsOfShape(type);
    rule.factors[concat.getDim()].kind = FactorKind::Opaque;
    for (Value input : concat.getInputs()) {
      (void)input;
      rule.operands.push_back(identityFactors(type.getRank()));
      rule.initOf.push_back(-1);
    }
    rule.results = {identityFactors(type.getRank())};
    rule.opsPerPoint = 0;
    return rule;
  }
};

struct ExtractModel
    : public ShardingRuleOpInterface::ExternalModel<ExtractModel,
                                                    tensor::ExtractOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto extract = cast<tensor::ExtractOp>(op);
    ShardingRule rule;
    rule.operands.assign(op->getNumOperands(), std::nullopt);
    rule.initOf.assign(op->getNumOperands(), -1);
    // The source is read whole: one unsplittable dimension list per dim.
    rule.operands[0] = TensorFactors(extract.getTensor().getType().getRank());
    rule.results = {std::nullopt};
    rule.opsPerPoint = 0;
    return rule;
  }
};

//===----------------------------------------------------------------------===//
// Elementwise ops on tensors (any dialect's ops with the Elementwise trait)
//===----------------------------------------------------------------------===//

struct ElementwiseModel
    : public ShardingRuleOpInterface::FallbackModel<ElementwiseModel> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    if (op->getNumResults() == 0)
      return failure();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type)
      return failure();
    ShardingRule rule;
    rule.factors = factorsOfShape(type);
    for (Value operand : op->getOperands()) {
      auto operandType = dyn_cast<RankedTensorType>(operand.getType());
      if (!operandType) {
        rule.operands.push_back(std::nullopt);
      } else if (operandType.getShape() != type.getShape()) {
        return failure();
      } else {
        rule.operands.push_back(identityFactors(type.getRank()));
      }
      rule.initOf.push_back(-1);
    }
    for (Value result : op->getResults()) {
      if (cast<ShapedType>(result.getType()).getShape() != type.getShape())
        return failure();
      rule.results.push_back(identityFactors(type.getRank()));
    }
    rule.opsPerPoint = 1;
    return rule;
  }
};

template <typename DialectTy>
static void attachElementwiseModels(MLIRContext *ctx, DialectTy *dialect) {
  for (RegisteredOperationName name : ctx->getRegisteredOperations())
    if (&name.getDialect() == dialect &&
        name.hasTrait<OpTrait::Elementwise>() &&
        !name.hasInterface<ShardingRuleOpInterface>())
      name.attachInterface<ElementwiseModel>();
}

} // namespace

void mlir::tp::registerShardingRuleExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    attachLinalgModels<
#define GET_OP_LIST
#include "mlir/Dialect/Linalg/IR/LinalgStructuredOps.cpp.inc"
        >(ctx);
    linalg::SoftmaxOp::attachInterface<SoftmaxModel>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::EmptyOp::attachInterface<EmptyModel>(*ctx);
    tensor::ExpandShapeOp::attachInterface<
        ReshapeModel<tensor::ExpandShapeOp>>(*ctx);
    tensor::CollapseShapeOp::attachInterface<
        ReshapeModel<tensor::CollapseShapeOp>>(*ctx);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceModel>(*ctx);
    tensor::InsertSliceOp::attachInterface<InsertSliceModel>(*ctx);
    tensor::ConcatOp::attachInterface<ConcatModel>(*ctx);
    tensor::ExtractOp::attachInterface<ExtractModel>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *dialect) {
    attachElementwiseModels(ctx, dialect);
  });
  registry.addExtension(+[](MLIRContext *ctx, math::MathDialect *dialect) {
    attachElementwiseModels(ctx, dialect);
  });
}
