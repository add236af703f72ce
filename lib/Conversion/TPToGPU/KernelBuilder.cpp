//===- KernelBuilder.cpp - one linalg op on buffers to a gpu.launch -------===//
//
// The helpers the kernel families share, and KernelBuilder's common part:
// loading what a region reads at given loop indices, cloning it, storing
// its results, folding reductions' initial values, absorbing a reduction's
// fill, and the dispatch to a kernel family (KernelBuilder.h).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tp::gpukernels;

namespace mlir::tp::gpukernels {

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}


int64_t product(ArrayRef<int64_t> values) {
  int64_t n = 1;
  for (int64_t v : values)
    n *= v;
  return n;
}

/// Loop indices for the flat index `flat` over `ranges` (row-major).
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value flat,
                               ArrayRef<int64_t> ranges) {
  SmallVector<Value> ivs(ranges.size());
  Value rest = flat;
  for (int64_t d = int64_t(ranges.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      ivs[d] = rest;
      break;
    }
    Value size = index(b, loc, ranges[d]);
    ivs[d] = arith::RemUIOp::create(b, loc, rest, size);
    rest = arith::DivUIOp::create(b, loc, rest, size);
  }
  return ivs;
}

gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads, int64_t threadsY) {
  Value one = index(b, loc, 1);
  Value gridX = index(b, loc, blocks);
  Value blockX = index(b, loc, threads);
  Value blockY = threadsY == 1 ? one : index(b, loc, threadsY);
  auto launch =
      gpu::LaunchOp::create(b, loc, gridX, one, one, blockX, blockY, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);
  return launch;
}

MemRefType workgroupType(MLIRContext *context, ArrayRef<int64_t> shape,
                         Type element) {
  return MemRefType::get(
      shape, element, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
}

RowLaunch createRowLaunch(OpBuilder &b, Location loc,
                          ArrayRef<int64_t> rowRanges, int64_t rowLength) {
  RowLaunch r;
  r.threads = std::min(kThreadsPerBlock,
                       std::max(kWarp, int64_t(llvm::PowerOf2Ceil(rowLength))));
  r.launch = createLaunch(b, loc, product(rowRanges), r.threads);
  r.tid = r.launch.getThreadIds().x;
  r.rowIvs = delinearize(b, loc, r.launch.getBlockIds().x, rowRanges);
  return r;
}

SmallVector<Value> RowLaunch::at(OpBuilder &b, Location loc, Value j,
                                 ArrayRef<int64_t> rowShape) const {
  SmallVector<Value> ivs(rowIvs);
  ivs.append(delinearize(b, loc, j, rowShape));
  return ivs;
}

/// The gpu.all_reduce kind of a combiner op, if it has one.
std::optional<gpu::AllReduceOperation> getAllReduceKind(Operation *op) {
  using K = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<K>>(op)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return K::ADD; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return K::MUL; })
      .Case<arith::MaximumFOp>([](auto) { return K::MAXIMUMF; })
      .Case<arith::MinimumFOp>([](auto) { return K::MINIMUMF; })
      .Case<arith::MaxNumFOp>([](auto) { return K::MAXNUMF; })
      .Case<arith::MinNumFOp>([](auto) { return K::MINNUMF; })
      .Case<arith::MaxSIOp>([](auto) { return K::MAXSI; })
      .Case<arith::MinSIOp>([](auto) { return K::MINSI; })
      .Case<arith::MaxUIOp>([](auto) { return K::MAXUI; })
      .Case<arith::MinUIOp>([](auto) { return K::MINUI; })
      .Case<arith::AndIOp>([](auto) { return K::AND; })
      .Case<arith::OrIOp>([](auto) { return K::OR; })
      .Case<arith::XOrIOp>([](auto) { return K::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}



/// The initial accumulators of `combiners` (their neutral elements, in f32
/// for widened ones); the widened combiners are appended to `widened`, which
/// emitRegion then skips (combine folds them in f32).
SmallVector<Value> accumulatorInits(OpBuilder &b, Location loc,
                                    ArrayRef<RowCombiner> combiners,
                                    SmallVectorImpl<Operation *> &widened) {
  SmallVector<Value> neutrals;
  for (const RowCombiner &c : combiners) {
    Value neutral = arith::ConstantOp::create(b, loc, c.neutral);
    if (c.widen()) {
      neutral = arith::ExtFOp::create(b, loc, b.getF32Type(), neutral);
      widened.push_back(c.combiner);
    }
    neutrals.push_back(neutral);
  }
  return neutrals;
}

/// `c`'s combiner on `acc` and `contribution`, in the type of `acc` (f32
/// for a widened combiner, whose operands are extended first).
Value combine(OpBuilder &b, Location loc, const RowCombiner &c, Value acc,
              Value contribution) {
  Type accType = acc.getType();
  if (contribution.getType() != accType)
    contribution = arith::ExtFOp::create(b, loc, accType, contribution);
  IRMapping mapping;
  mapping.map(c.combiner->getOperand(c.outOperand), acc);
  mapping.map(c.combiner->getOperand(1 - c.outOperand), contribution);
  Operation *folded = b.clone(*c.combiner, mapping);
  folded->getResult(0).setType(accType);
  return folded->getResult(0);
}

/// The buffer `v` is a view of (through view ops).
Value viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

Value globalThreadIndex(OpBuilder &b, Location loc, gpu::LaunchOp launch,
                        int64_t blockSize) {
  return arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                            index(b, loc, blockSize)),
      launch.getThreadIds().x);
}

/// A grid-stride loop over `total` points; `body` gets the flat index.
static void gridStrideLoop(OpBuilder &b, Location loc, gpu::LaunchOp launch,
                           int64_t total, int64_t blocks, int64_t threads,
                           function_ref<void(OpBuilder &, Value)> body) {
  Value start = globalThreadIndex(b, loc, launch, threads);
  if (blocks * threads >= total) {
    // One point per thread at most: a guard instead of a loop.
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          start, index(b, loc, total));
    emitIf(b, loc, inRange, [&] { body(b, start); });
    return;
  }
  auto loop = scf::ForOp::create(b, loc, start, index(b, loc, total),
                                 index(b, loc, blocks * threads));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  body(b, loop.getInductionVar());
}

gpu::LaunchOp createGridStrideLaunch(
    OpBuilder &b, Location loc, int64_t total,
    function_ref<void(OpBuilder &, Value)> body) {
  int64_t threads = threadsFor(total);
  int64_t blocks = std::min(kMaxBlocks, ceilDiv(total, threads));
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  gridStrideLoop(b, loc, launch, total, blocks, threads, body);
  return launch;
}

int64_t threadsFor(int64_t total) {
  return std::min(kThreadsPerBlock,
                  std::max(kWarp, ceilDiv(total, kWarp) * kWarp));
}

void emitIf(OpBuilder &b, Location loc, Value condition,
            function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, condition, /*withElse=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  body();
}

WarpCoordinates warpCoordinates(OpBuilder &b, Location loc) {
  WarpCoordinates w;
  w.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  w.warpSize = index(b, loc, kWarp);
  w.warp = arith::DivUIOp::create(b, loc, w.tid, w.warpSize);
  w.lane = arith::RemUIOp::create(b, loc, w.tid, w.warpSize);
  return w;
}

Value xorShuffleReduce(OpBuilder &b, Location loc, Value v,
                       ArrayRef<int32_t> offsets, bool max) {
  for (int32_t offset : offsets) {
    Value other = gpu::ShuffleOp::create(b, loc, v, offset, int32_t(kWarp),
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    v = max ? arith::MaximumFOp::create(b, loc, v, other).getResult()
            : arith::AddFOp::create(b, loc, v, other).getResult();
  }
  return v;
}

Value uniformAllReduce(OpBuilder &b, Location loc, Value v,
                       gpu::AllReduceOperation kind) {
  return gpu::AllReduceOp::create(
             b, loc, v, gpu::AllReduceOperationAttr::get(b.getContext(), kind),
             b.getUnitAttr())
      .getResult();
}

Value uniformAllReduceIndex(OpBuilder &b, Location loc, Value v,
                            gpu::AllReduceOperation kind) {
  Value i32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
  Value r = uniformAllReduce(b, loc, i32, kind);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), r);
}

Value loadAligned16(OpBuilder &b, Location loc, VectorType type, Value memref,
                    ValueRange indices) {
  return vector::LoadOp::create(b, loc, type, memref, indices,
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
}

void storeAligned16(OpBuilder &b, Location loc, Value vector, Value memref,
                    ValueRange indices) {
  vector::StoreOp::create(b, loc, vector, memref, indices,
                          /*nontemporal=*/false, llvm::MaybeAlign(16));
}

} // namespace mlir::tp::gpukernels

/// Whether an output read through `map` covers every element of a buffer
/// of `type`: each result is a distinct loop dimension, or the constant 0
/// on a dimension of size 1.
static bool writesEveryElement(AffineMap map, MemRefType type) {
  if (map.getNumResults() != type.getRank() || !type.hasStaticShape())
    return false;
  llvm::SmallBitVector seen(map.getNumDims());
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(e)) {
      if (seen.test(dim.getPosition()))
        return false;
      seen.set(dim.getPosition());
      continue;
    }
    auto constant = dyn_cast<AffineConstantExpr>(e);
    if (!constant || constant.getValue() != 0 || type.getDimSize(i) != 1)
      return false;
  }
  return true;
}

void KernelBuilder::findFilledInits() {
  fillValues.assign(op.getNumDpsInits(), nullptr);
  if (op.getNumReductionLoops() == 0)
    return;
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    Value buffer = init.get();
    // The op writes every element of the output (a projected permutation
    // covering the output's dimensions, where a kept reduced dimension of
    // size 1 may be read at the constant 0: torch-mlir's keepdim
    // reductions, `(d0, d1, d2) -> (d0, d1, 0)`), so what the fill wrote is
    // read by this op only.
    AffineMap map = op.getMatchingIndexingMap(&init);
    auto type = dyn_cast<MemRefType>(buffer.getType());
    if (!type || !writesEveryElement(map, type))
      continue;
    // The nearest earlier op of the block that touches the buffer (as an
    // operand or inside its regions) must be a fill of it.
    for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
      bool touches = llvm::any_of(buffer.getUsers(), [&](Operation *user) {
        return prev == user || prev->isProperAncestor(user);
      });
      if (!touches)
        continue;
      auto fill = dyn_cast<linalg::FillOp>(prev);
      if (fill && fill.getOutputs().front() == buffer &&
          fill.getInputs().front().getType() == type.getElementType()) {
        fillValues[i] = fill.getInputs().front();
        fills.push_back(fill);
      }
      break;
    }
  }
}

SmallVector<Value> KernelBuilder::Loops::join(OpBuilder &b, Location loc,
                                              ValueRange parallel,
                                              ValueRange reduction) const {
  SmallVector<Value> ivs(parallelDims.size() + reductionDims.size());
  for (auto [d, v] : llvm::zip(parallelDims, parallel))
    ivs[d] = v;
  for (auto [i, d] : llvm::enumerate(reductionDims))
    ivs[d] = reduction.empty() ? index(b, loc, 0) : reduction[i];
  return ivs;
}

KernelBuilder::Loops KernelBuilder::splitLoops() {
  Loops loops;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (it == utils::IteratorType::parallel) {
      loops.parallelRanges.push_back(ranges[d]);
      loops.parallelDims.push_back(d);
    } else {
      loops.reductionRanges.push_back(ranges[d]);
      loops.reductionDims.push_back(d);
    }
  }
  return loops;
}

SmallVector<Value> KernelBuilder::operandIndices(OpBuilder &b,
                                                 OpOperand &operand,
                                                 ValueRange ivs) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  std::optional<SmallVector<Value, 8>> values =
      affine::expandAffineMap(b, op.getLoc(), map, ivs);
  return SmallVector<Value>(values->begin(), values->end());
}

SmallVector<Value> KernelBuilder::emitRegion(OpBuilder &b, ValueRange ivs,
                                             ValueRange outputs,
                                             ArrayRef<Operation *> skip,
                                             IRMapping *mappingOut) {
  Location loc = op.getLoc();
  Block *block = op.getBlock();
  IRMapping local;
  IRMapping &mapping = mappingOut ? *mappingOut : local;
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(input);
    if (arg.use_empty() || mapping.contains(arg))
      continue; // unused, or given by the caller (a row epilogue's statistic)
    Value v = input->get();
    if (isa<MemRefType>(v.getType()))
      v = memref::LoadOp::create(b, loc, v, operandIndices(b, *input, ivs));
    mapping.map(arg, v);
  }
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    BlockArgument arg = op.getMatchingBlockArgument(&init);
    if (!outputs.empty()) {
      mapping.map(arg, outputs[i]);
      continue;
    }
    if (arg.use_empty())
      continue;
    mapping.map(arg, memref::LoadOp::create(b, loc, init.get(),
                                            operandIndices(b, init, ivs)));
  }
  for (Operation &inner : block->without_terminator()) {
    if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(idx.getResult(), ivs[idx.getDim()]);
      continue;
    }
    if (llvm::is_contained(skip, &inner))
      continue;
    b.clone(inner, mapping);
  }
  SmallVector<Value> yielded;
  for (Value v : block->getTerminator()->getOperands())
    yielded.push_back(mapping.lookupOrDefault(v));
  return yielded;
}

void KernelBuilder::storeResults(OpBuilder &b, ValueRange ivs,
                                 ValueRange values) {
  for (auto [init, value] : llvm::zip(op.getDpsInitsMutable(), values))
    memref::StoreOp::create(b, op.getLoc(), value, init.get(),
                            operandIndices(b, init, ivs));
}

SmallVector<Value> KernelBuilder::loadOutputs(OpBuilder &b, ValueRange ivs) {
  SmallVector<Value> values;
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    values.push_back(i < fillValues.size() && fillValues[i]
                         ? fillValues[i]
                         : memref::LoadOp::create(b, op.getLoc(), init.get(),
                                                  operandIndices(b, init, ivs))
                               .getResult());
  return values;
}

SmallVector<Value> KernelBuilder::accumulate(OpBuilder &b, ValueRange ivs,
                                             ValueRange partials,
                                             ArrayRef<RowCombiner> combiners,
                                             ArrayRef<Operation *> widened,
                                             const IRMapping *given) {
  IRMapping mapping;
  if (given)
    for (auto [from, to] : given->getValueMap())
      mapping.map(from, to);
  SmallVector<Value> next = emitRegion(b, ivs, partials, widened, &mapping);
  for (auto [i, c] : llvm::enumerate(combiners))
    if (c.widen())
      next[i] = combine(
          b, op.getLoc(), c, partials[i],
          mapping.lookup(c.combiner->getOperand(1 - c.outOperand)));
  return next;
}

SmallVector<Value> KernelBuilder::foldResults(OpBuilder &b, ValueRange ivs,
                                              ArrayRef<RowCombiner> combiners,
                                              ValueRange totals) {
  SmallVector<Value> initial = loadOutputs(b, ivs);
  SmallVector<Value> results;
  for (auto [c, init, total] : llvm::zip(combiners, initial, totals)) {
    Value r = combine(b, op.getLoc(), c, total, init);
    if (c.widen())
      r = arith::TruncFOp::create(b, op.getLoc(), init.getType(), r);
    results.push_back(r);
  }
  return results;
}

void KernelBuilder::foldAndStore(OpBuilder &b, ValueRange ivs,
                                 ArrayRef<RowCombiner> combiners,
                                 ValueRange totals) {
  storeResults(b, ivs, foldResults(b, ivs, combiners, totals));
}

LogicalResult KernelBuilder::build() {
  if (!op.hasPureBufferSemantics())
    return op->emitOpError()
           << "is not bufferized: the GPU lowering runs after bufferization";
  if (op.hasDynamicShape())
    return op->emitOpError()
           << "has dynamic shapes: the GPU lowering needs static ones";
  ranges = op.getStaticLoopRanges();
  if (product(ranges) == 0) {
    op->erase();
    return success();
  }
  LogicalResult result = success();
  findFilledInits();
  if (op.getNumReductionLoops() == 0) {
    result = buildParallel();
  } else if (FailureOr<SmallVector<RowCombiner>> combiners =
                 matchRowReduction();
             succeeded(combiners)) {
    chain = findRowChain(op);
    result = buildRowReduction(*combiners);
  } else if (FailureOr<SmallVector<RowCombiner>> combiners = matchCombiners();
             succeeded(combiners) && isColumnReduction() &&
             llvm::all_of(*combiners, [](const RowCombiner &c) {
               Type t = c.combiner->getResult(0).getType();
               return t.isIntOrFloat();
             })) {
    result = buildColumnReduction(*combiners);
  } else {
    op->emitRemark() << "reduction is not a row reduction with a known "
                        "combiner: one thread per output point";
    result = buildSerialReduction();
  }
  if (succeeded(result)) {
    Value rowResult = !chain.dropResult.empty() && chain.dropResult[0]
                          ? op.getDpsInitsMutable()[0].get()
                          : Value();
    op->erase();
    for (linalg::FillOp fill : fills)
      fill->erase();
    if (rowResult && rowResult.use_empty())
      rowResult.getDefiningOp()->erase(); // the statistic's memref.alloc
  }
  return result;
}
