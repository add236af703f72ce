//===- ReshardUtils.cpp - emit the collectives of a layout change -*- C++ -*-=//
//
// The one place where a layout change becomes tp collectives. Padding: a
// dimension of global size N split over a group of p devices is held in
// blocks of ceil(N / p) elements, the last ones padded. Before a collective
// that splits such a dimension (slice, reduce-scatter, the split side of an
// all-to-all) the dimension is padded to ceil(N / p) * p with the
// reduction's identity (zero otherwise); after a collective that joins it
// (all-gather, the concat side of an all-to-all) the padding is cut off.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/ReshardUtils.h"

#include "tp/Analysis/CostModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tp;

Value mlir::tp::createIdentity(OpBuilder &builder, Location loc,
                               ReductionKind kind, Type elementType) {
  TypedAttr attr;
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    llvm::APFloat value = llvm::APFloat::getZero(sem);
    if (kind == ReductionKind::Max)
      value = llvm::APFloat::getInf(sem, /*Negative=*/true);
    else if (kind == ReductionKind::Min)
      value = llvm::APFloat::getInf(sem, /*Negative=*/false);
    attr = builder.getFloatAttr(floatType, value);
  } else {
    unsigned width = elementType.getIntOrFloatBitWidth();
    llvm::APInt value = llvm::APInt::getZero(width);
    if (kind == ReductionKind::Max)
      value = llvm::APInt::getSignedMinValue(width);
    else if (kind == ReductionKind::Min)
      value = llvm::APInt::getSignedMaxValue(width);
    attr = builder.getIntegerAttr(elementType, value);
  }
  return arith::ConstantOp::create(builder, loc, attr);
}

/// Pads dimension `dim` of `value` at its end to `size` with the identity
/// of `kind` (zero for sum).
static Value padDim(OpBuilder &builder, Location loc, Value value, int64_t dim,
                    int64_t size, ReductionKind kind = ReductionKind::Sum) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getDimSize(dim) == size)
    return value;
  Value padValue = createIdentity(builder, loc, kind, type.getElementType());
  SmallVector<int64_t> shape(type.getShape());
  SmallVector<OpFoldResult> low(type.getRank(), builder.getIndexAttr(0));
  SmallVector<OpFoldResult> high(type.getRank(), builder.getIndexAttr(0));
  high[dim] = builder.getIndexAttr(size - shape[dim]);
  shape[dim] = size;
  return tensor::PadOp::create(builder, loc, type.clone(shape), value, low,
                               high, padValue);
}

/// Cuts dimension `dim` of `value` down to its first `size` elements.
static Value truncateDim(OpBuilder &builder, Location loc, Value value,
                         int64_t dim, int64_t size) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getDimSize(dim) == size)
    return value;
  SmallVector<OpFoldResult> offsets(type.getRank(), builder.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(type.getRank(), builder.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(builder.getIndexAttr(d == dim ? size : type.getDimSize(d)));
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return tensor::ExtractSliceOp::create(builder, loc, type.clone(shape), value,
                                        offsets, sizes, strides);
}

FailureOr<Value> mlir::tp::emitReshard(OpBuilder &builder, Location loc,
                                       Value local, LayoutAttr from,
                                       LayoutAttr to,
                                       ArrayRef<int64_t> globalShape,
                                       MeshOp mesh) {
  FailureOr<SmallVector<CollectiveStep>> steps =
      planReshard(from, to, globalShape, mesh);
  if (failed(steps))
    return failure();
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  Value value = local;
  for (const CollectiveStep &step : *steps) {
    auto type = cast<RankedTensorType>(value.getType());
    ArrayAttr axes = builder.getArrayAttr({step.axis});
    int64_t p = step.groupSize;
    SmallVector<int64_t> shape(type.getShape());
    switch (step.kind) {
    case CollectiveKind::AllReduce:
      value = AllReduceOp::create(
          builder, loc, type, value,
          ReductionKindAttr::get(builder.getContext(), step.reduction),
          meshRef, axes);
      break;
    case CollectiveKind::AllGather: {
      shape[step.dim] *= p;
      value = AllGatherOp::create(builder, loc, type.clone(shape), value,
                                  meshRef, axes, builder.getI64IntegerAttr(step.dim));
      value = truncateDim(builder, loc, value, step.dim,
                          step.outputShape[step.dim]);
      break;
    }
    case CollectiveKind::ReduceScatter: {
      int64_t padded = llvm::divideCeil(shape[step.dim], p) * p;
      value = padDim(builder, loc, value, step.dim, padded, step.reduction);
      shape[step.dim] = padded / p;
      value = ReduceScatterOp::create(
          builder, loc, type.clone(shape), value,
          ReductionKindAttr::get(builder.getContext(), step.reduction),
          meshRef, axes, builder.getI64IntegerAttr(step.dim));
      break;
    }
    case CollectiveKind::AllToAll: {
      int64_t padded = llvm::divideCeil(shape[step.dim], p) * p;
      value = padDim(builder, loc, value, step.dim, padded);
      shape[step.dim] = padded / p;
      shape[step.concatDim] *= p;
      value = AllToAllOp::create(builder, loc, type.clone(shape), value,
                                 meshRef, axes, builder.getI64IntegerAttr(step.dim),
                                 builder.getI64IntegerAttr(step.concatDim));
      value = truncateDim(builder, loc, value, step.concatDim,
                          step.outputShape[step.concatDim]);
      break;
    }
    case CollectiveKind::MakePartial: {
      // max/min: the whole value is already a valid term on every device.
      if (step.reduction != ReductionKind::Sum)
        break;
      // sum: the value on the axis' first device, zeros elsewhere.
      Value index = AxisIndexOp::create(builder, loc, meshRef, axes);
      Value first = arith::ConstantIndexOp::create(builder, loc, 0);
      Value isFirst = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::eq, index, first);
      Value zeros = arith::ConstantOp::create(
          builder, loc, type, builder.getZeroAttr(type));
      value = arith::SelectOp::create(builder, loc, isFirst, value, zeros);
      break;
    }
    case CollectiveKind::Slice: {
      int64_t padded = llvm::divideCeil(shape[step.dim], p) * p;
      value = padDim(builder, loc, value, step.dim, padded);
      shape[step.dim] = padded / p;
      value = SliceOp::create(builder, loc, type.clone(shape), value, meshRef,
                              axes, builder.getI64IntegerAttr(step.dim));
      break;
    }
    }
  }
  return value;
}
