//===- ElementwiseKernels.cpp - parallel linalg ops to kernels ----*- C++ -*-//
//
// A parallel-only op (elementwise, broadcasts, fills, transposes, gathers
// through tensor.extract, masks through linalg.index): a 1-D grid-stride
// kernel over the flattened iteration space (256 threads per block, fewer
// for tiny ops; at most 65535 blocks). Each point delinearizes its index
// into loop indices, loads every operand the region reads through its
// indexing map, clones the region (linalg.index becomes the loop index)
// and stores the yielded values through the output maps.
//
// Vectorized form (buildVectorized), the one taken where it applies: each
// thread handles E consecutive points along the innermost loop, E = 16
// bytes / the smallest element among the operands that allow 16-byte
// access. An operand allows it when its map reads the innermost loop as
// its own innermost index (and nowhere else) and its buffer is
// contiguous there with an offset and strides that keep every group of E
// elements 16-byte aligned; such inputs are read with one vector load per
// thread and such outputs written with one vector store. Operands that do
// not use the innermost loop are read once per thread (broadcasts), and
// the rest element by element (gathers, transposes). The innermost extent
// must be a multiple of E (no group straddles two rows): otherwise, and
// when no operand is contiguous, the scalar kernel above stays.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tp::gpukernels;

LogicalResult KernelBuilder::buildParallel() {
  if (succeeded(buildVectorized()))
    return success();
  OpBuilder b(op);
  Location loc = op.getLoc();
  createGridStrideLaunch(b, loc, product(ranges), [&](OpBuilder &b,
                                                      Value flat) {
    SmallVector<Value> ivs = delinearize(b, loc, flat, ranges);
    storeResults(b, ivs, emitRegion(b, ivs, {}));
  });
  return success();
}

namespace {
enum class Form { Contiguous, Broadcast, Gather };

/// How `operand` of `op` can be accessed by a group of `width` consecutive
/// points along the innermost loop (see the header).
Form formOf(linalg::LinalgOp op, OpOperand &operand, int64_t width) {
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  AffineMap map = op.getMatchingIndexingMap(&operand);
  unsigned last = op.getNumLoops() - 1;
  if (!type || !map.isFunctionOfDim(last))
    return Form::Broadcast;
  if (map.getNumResults() == 0 ||
      map.getResults().back() != getAffineDimExpr(last, op.getContext()))
    return Form::Gather;
  for (AffineExpr e : map.getResults().drop_back())
    if (e.isFunctionOfDim(last))
      return Form::Gather;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || strides.back() != 1 ||
      offset % width != 0)
    return Form::Gather;
  for (int64_t s : ArrayRef<int64_t>(strides).drop_back())
    if (ShapedType::isDynamic(s) || s % width != 0)
      return Form::Gather;
  return Form::Contiguous;
}

int64_t elementBytes(Value v) {
  Type t = cast<MemRefType>(v.getType()).getElementType();
  return t.isIndex() ? 8 : std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}
} // namespace

LogicalResult KernelBuilder::buildVectorized() {
  if (op.getNumLoops() == 0)
    return failure();
  // Elements narrower than a byte (i1 masks) are one byte each in a memref,
  // but a vector of them is bit-packed in memory (LLVM's layout of
  // <16 x i1> is two bytes): a group store would write 16 flags into 2
  // bytes that the element loads of the next kernel read as 16 (torch-mlir's
  // attention_mask, `mask != 0`, then gathered: issue 39's zoo run).
  for (OpOperand &operand : op->getOpOperands())
    if (auto type = dyn_cast<MemRefType>(operand.get().getType()))
      if (type.getElementType().isIntOrFloat() &&
          type.getElementType().getIntOrFloatBitWidth() % 8 != 0)
        return failure();
  // The group width: 16 bytes of the smallest contiguous element.
  int64_t smallest = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()) ||
        formOf(op, operand, 1) != Form::Contiguous)
      continue;
    int64_t bytes = elementBytes(operand.get());
    smallest = smallest ? std::min(smallest, bytes) : bytes;
  }
  if (!smallest || 16 % smallest != 0)
    return failure();
  int64_t width = 16 / smallest;
  unsigned last = op.getNumLoops() - 1;
  if (width < 2 || ranges[last] % width != 0)
    return failure();
  SmallVector<Form> forms;
  bool anyContiguous = false;
  for (OpOperand &operand : op->getOpOperands()) {
    forms.push_back(formOf(op, operand, width));
    anyContiguous |= forms.back() == Form::Contiguous;
  }
  if (!anyContiguous)
    return failure();

  SmallVector<int64_t> groupRanges(ranges);
  groupRanges[last] /= width;
  OpBuilder b(op);
  Location loc = op.getLoc();
  MutableOperandRange inits = op.getDpsInitsMutable();
  bool readsOutputs = llvm::any_of(inits, [&](OpOperand &o) {
    return !op.getMatchingBlockArgument(&o).use_empty();
  });
  createGridStrideLaunch(b, loc, product(groupRanges), [&](OpBuilder &b,
                                                           Value flat) {
    SmallVector<Value> ivs = delinearize(b, loc, flat, groupRanges);
    ivs[last] = arith::MulIOp::create(b, loc, ivs[last], index(b, loc, width));
    // Group loads of contiguous operands, single loads of broadcasts.
    DenseMap<unsigned, Value> groups, broadcasts;
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      Form form = forms[operand.getOperandNumber()];
      if (arg.use_empty() || !isa<MemRefType>(operand.get().getType()))
        continue;
      if (form == Form::Contiguous) {
        auto type = VectorType::get(
            {width}, cast<MemRefType>(operand.get().getType()).getElementType());
        groups[operand.getOperandNumber()] = loadAligned16(
            b, loc, type, operand.get(), operandIndices(b, operand, ivs));
      } else if (form == Form::Broadcast) {
        broadcasts[operand.getOperandNumber()] = memref::LoadOp::create(
            b, loc, operand.get(), operandIndices(b, operand, ivs));
      }
    }
    // The region at each point of the group.
    SmallVector<SmallVector<Value>> results(op.getNumDpsInits());
    for (int64_t i = 0; i < width; ++i) {
      SmallVector<Value> point(ivs);
      point[last] = arith::AddIOp::create(b, loc, ivs[last], index(b, loc, i));
      IRMapping mapping;
      SmallVector<Value> outputs;
      for (OpOperand &operand : op->getOpOperands()) {
        BlockArgument arg = op.getMatchingBlockArgument(&operand);
        unsigned n = operand.getOperandNumber();
        Value v;
        if (auto it = groups.find(n); it != groups.end())
          v = vector::ExtractOp::create(b, loc, it->second,
                                        ArrayRef<int64_t>{i});
        else if (auto it = broadcasts.find(n); it != broadcasts.end())
          v = it->second;
        if (op.isDpsInit(&operand)) {
          if (!v && readsOutputs)
            v = memref::LoadOp::create(b, loc, operand.get(),
                                       operandIndices(b, operand, point));
          outputs.push_back(v);
        } else if (v) {
          mapping.map(arg, v);
        }
      }
      SmallVector<Value> yielded =
          emitRegion(b, point, readsOutputs ? ValueRange(outputs) : ValueRange(),
                     {}, &mapping);
      for (auto [r, init] : llvm::enumerate(inits)) {
        if (forms[init.getOperandNumber()] == Form::Contiguous) {
          results[r].push_back(yielded[r]);
          continue;
        }
        memref::StoreOp::create(b, loc, yielded[r], init.get(),
                                operandIndices(b, init, point));
      }
    }
    for (auto [r, init] : llvm::enumerate(inits)) {
      if (forms[init.getOperandNumber()] != Form::Contiguous)
        continue;
      auto type = VectorType::get(
          {width}, cast<MemRefType>(init.get().getType()).getElementType());
      Value v = vector::FromElementsOp::create(b, loc, type, results[r]);
      storeAligned16(b, loc, v, init.get(), operandIndices(b, init, ivs));
    }
  });
  return success();
}
