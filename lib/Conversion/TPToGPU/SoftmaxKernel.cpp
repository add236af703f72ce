//===- SoftmaxKernel.cpp - linalg.softmax to one kernel per row ---*- C++ -*-//
//
// linalg.softmax over the last dimension (tp-fuse-softmax puts tp-gen's and
// the decomposition's max / exp / sum / divide back into one): one block
// per row, one pass with an online max and sum per thread, two uniform
// all-reduces (max, then the rescaled sums), and a second loop over the
// thread's elements storing exp(x - max) / sum (f32 for 16-bit).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tp::gpukernels;

/// The elementwise cast that is the only reader of a softmax's output
/// buffer (tp-fuse-softmax leaves an f32 softmax and a truncf into bf16
/// after it), when the softmax kernel can store the cast value into the
/// cast's output instead: the buffer is a memref.alloc used by the softmax,
/// the cast and deallocs only; the cast reads it and writes its output with
/// identity maps and nothing but an arith.truncf, later in the same block;
/// and no op in between touches a view of the cast's output. Else null.
static linalg::GenericOp foldableCast(linalg::SoftmaxOp op) {
  Value buffer = op.getOutput();
  if (!buffer.getDefiningOp<memref::AllocOp>())
    return nullptr;
  linalg::GenericOp castOp;
  for (Operation *user : buffer.getUsers()) {
    if (user == op.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || castOp)
      return nullptr;
    castOp = generic;
  }
  if (!castOp || castOp->getBlock() != op->getBlock() ||
      !op->isBeforeInBlock(castOp) || castOp.getNumDpsInputs() != 1 ||
      castOp.getNumDpsInits() != 1 ||
      castOp.getDpsInputOperand(0)->get() != buffer ||
      castOp.getNumReductionLoops() != 0 ||
      !llvm::all_of(castOp.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return nullptr;
  Block *body = castOp.getBody();
  auto trunc = dyn_cast<arith::TruncFOp>(&body->front());
  if (!trunc || trunc.getIn() != body->getArgument(0) ||
      body->getTerminator()->getOperand(0) != trunc.getResult() ||
      trunc->getNextNode() != body->getTerminator())
    return nullptr;
  Value target = castOp.getDpsInitOperand(0)->get();
  auto targetType = dyn_cast<MemRefType>(target.getType());
  if (!targetType ||
      targetType.getShape() != cast<MemRefType>(buffer.getType()).getShape())
    return nullptr;
  Value root = viewRoot(target);
  for (Operation *between = op->getNextNode(); between != castOp;
       between = between->getNextNode())
    for (Value v : between->getOperands())
      if (isa<BaseMemRefType>(v.getType()) && viewRoot(v) == root)
        return nullptr;
  return castOp;
}

/// linalg.softmax over the last dimension (tp-fuse-softmax's result): one
/// block per row, 32..256 threads. Each thread makes one pass over a strided
/// part of the row keeping an online max m and a sum s of exp(x - m)
/// (when x raises the max to m', s becomes s * exp(m - m') + exp(x - m'));
/// a uniform gpu.all_reduce gives the row max M, each partial is rescaled to
/// it (s * exp(m - M)) and a second all-reduce gives the sum S; a second
/// loop over the thread's elements stores exp(x - M) / S. f16/bf16
/// accumulate in f32 and round once at the store. Where the running max and
/// the element are equal (both -inf in a masked part of a row) the factor is
/// 1 instead of exp(-inf + inf), so masked elements never make a NaN that
/// the exact softmax would not make. A truncf that is the only reader of the
/// result (foldableCast) is folded into the store, and the f32 buffer goes.
LogicalResult mlir::tp::gpukernels::buildSoftmax(linalg::SoftmaxOp op) {
  auto inType = dyn_cast<MemRefType>(op.getInput().getType());
  auto outType = dyn_cast<MemRefType>(op.getOutput().getType());
  if (!inType || !outType)
    return op.emitOpError()
           << "is not bufferized: the GPU lowering runs after bufferization";
  if (!inType.hasStaticShape() || !outType.hasStaticShape())
    return op.emitOpError()
           << "has dynamic shapes: the GPU lowering needs static ones";
  int64_t rank = inType.getRank();
  if (rank == 0 || int64_t(op.getDimension()) != rank - 1)
    return op.emitOpError()
           << "normalizes dimension " << op.getDimension() << " of a rank-"
           << rank
           << " buffer; the GPU lowering maps softmax over the last "
              "dimension (tp-decompose-aggregates expands the others)";
  // A truncf of the result (bf16 attention) is folded into the store.
  linalg::GenericOp castOp = foldableCast(op);
  Value output = castOp ? castOp.getDpsInitOperand(0)->get() : op.getOutput();
  outType = cast<MemRefType>(output.getType());
  ArrayRef<int64_t> shape = inType.getShape();
  SmallVector<int64_t> rowRanges(shape.drop_back());
  int64_t rows = product(rowRanges);
  int64_t rowLength = shape.back();
  if (rows == 0 || rowLength == 0) {
    op->erase();
    return success();
  }
  OpBuilder b(op);
  Location loc = op.getLoc();
  RowLaunch row = createRowLaunch(b, loc, rowRanges, rowLength);
  Value tid = row.tid;
  int64_t threads = row.threads;

  auto element = cast<FloatType>(inType.getElementType());
  FloatType acc = element.getWidth() < 32 ? b.getF32Type() : element;
  auto constant = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, acc, b.getFloatAttr(acc, v));
  };
  Value negInf = arith::ConstantOp::create(
      b, loc, acc,
      b.getFloatAttr(acc, APFloat::getInf(acc.getFloatSemantics(), true)));
  Value zero = constant(0.0), one = constant(1.0);
  auto load = [&](OpBuilder &ib, Value j) -> Value {
    Value v = memref::LoadOp::create(ib, loc, op.getInput(),
                                     row.at(ib, loc, j, rowLength));
    if (v.getType() != acc)
      v = arith::ExtFOp::create(ib, loc, acc, v);
    return v;
  };
  // exp(a - b), or 1 where a == b (a max meeting itself, -inf included).
  auto expDiff = [&](OpBuilder &ib, Value a, Value bv) -> Value {
    Value same =
        arith::CmpFOp::create(ib, loc, arith::CmpFPredicate::OEQ, a, bv);
    Value diff = arith::SubFOp::create(ib, loc, a, bv);
    Value e = math::ExpOp::create(ib, loc, diff);
    return arith::SelectOp::create(ib, loc, same, one, e);
  };

  Value end = index(b, loc, rowLength), step = index(b, loc, threads);
  auto online = scf::ForOp::create(b, loc, tid, end, step,
                                   ValueRange{negInf, zero});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(online.getBody());
    Value m = online.getRegionIterArgs()[0];
    Value sum = online.getRegionIterArgs()[1];
    Value x = load(b, online.getInductionVar());
    Value next = arith::MaximumFOp::create(b, loc, m, x);
    Value scaled =
        arith::MulFOp::create(b, loc, sum, expDiff(b, m, next));
    Value added = arith::AddFOp::create(b, loc, scaled, expDiff(b, x, next));
    scf::YieldOp::create(b, loc, ValueRange{next, added});
  }
  Value m = online.getResult(0), partial = online.getResult(1);
  Value rowMax =
      uniformAllReduce(b, loc, m, gpu::AllReduceOperation::MAXIMUMF);
  Value rescaled =
      arith::MulFOp::create(b, loc, partial, expDiff(b, m, rowMax));
  Value rowSum =
      uniformAllReduce(b, loc, rescaled, gpu::AllReduceOperation::ADD);

  auto store = scf::ForOp::create(b, loc, tid, end, step);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(store.getBody());
    Value j = store.getInductionVar();
    Value x = load(b, j);
    Value e = math::ExpOp::create(b, loc,
                                  arith::SubFOp::create(b, loc, x, rowMax));
    Value y = arith::DivFOp::create(b, loc, e, rowSum);
    Type outElement = outType.getElementType();
    if (outElement != acc)
      y = arith::TruncFOp::create(b, loc, outElement, y);
    memref::StoreOp::create(b, loc, y, output, row.at(b, loc, j, rowLength));
  }
  if (castOp) {
    // The f32 buffer has no reader left: it goes, with its deallocs.
    Value buffer = op.getOutput();
    castOp->erase();
    op->erase();
    for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
      user->erase();
    buffer.getDefiningOp()->erase();
    return success();
  }
  op->erase();
  return success();
}
