//===- ReductionKernels.cpp - reductions to kernels ---------------*- C++ -*-//
//
//  * Row reduction: every reduction dimension trails every parallel one and
//    each output's region value is `combiner(out, contribution)` with a
//    combiner that gpu.all_reduce knows (matchReduction, then
//    arith::getNeutralElement), on f32, f64, i32, i64, f16 or bf16 (64-bit
//    values shuffle as two 32-bit halves). One block per row: the grid is
//    the number of parallel points, the block 32..256 threads (the row
//    length rounded up to a power of two). Each thread folds a strided part
//    of the row into a partial starting at the neutral element, by the op's
//    own region; a uniform gpu.all_reduce combines the partials (upstream
//    lowers it to shfl.sync.bfly within warps, a workgroup buffer and
//    bar.sync across warps; 16-bit floats combine in f32); thread 0
//    combines the result with the output's initial value and stores it
//    once. f16/bf16 outputs accumulate in f32 throughout and are truncated
//    once. Row epilogue: when the next op reading the row's result is a
//    parallel op over the same iteration space that reads it broadcast
//    along the row (a norm's scaling by its statistic), the same launch
//    applies it after the all-reduce, each thread over its strided part of
//    the row: one kernel, and the row statistic never goes through device
//    memory unless something else reads it. Before that op, further row
//    reductions over the same rows may join (a chain, findRowChain: the
//    variance after the mean), each reading the earlier results from
//    registers.
//  * Column reduction (the innermost loop parallel, some reduction loop
//    before it: linalg.reduce dimensions = [0], bias and norm-weight
//    gradients): blocks of 32 x R threads (R = 8, or 32 when the grid has
//    under 128 blocks, at most the reduction length); threadIdx.x picks one
//    of 32 neighbouring output points (coalesced loads), threadIdx.y a
//    strided part of the reduction; the partials meet in workgroup memory
//    and log2(R) barrier-separated tree steps combine them; row 0 folds in
//    the initial value and stores.
//  * Any other reduction (interleaved dimensions ending in a reduction,
//    unknown combiners, several coupled outputs): one thread per output
//    point running the reduction loop serially, with a remark.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::tp::gpukernels;


/// The ops a row reduction `r`'s kernel computes in the same launch (the
/// row epilogue of the header). Walking on from `r`, past allocations,
/// effect-free ops (views), and deallocations and fills of buffers the
/// chain neither reads nor writes, each next op must be a linalg.generic on buffers over
/// `r`'s loop ranges that reads a chain result only as an input through
/// that result's own map (the row's value, broadcast along the row), and
///  * a row reduction with `r`'s iterators, one output that no chain op
///    reads, and a combiner the row kernel knows (the variance after the
///    mean, or a second statistic of the same rows): it joins the chain;
///  * or a parallel op that reads a chain result and writes no buffer the
///    chain reads, except in place (the same buffer through the same map
///    as every chain op reads it: each element is read before the
///    all-reduce's barrier and written after it): the epilogue; the chain
///    ends.
/// Anything else ends the chain.
RowChain mlir::tp::gpukernels::findRowChain(linalg::LinalgOp r) {
  RowChain chain;
  if (r.getNumDpsInits() != 1 || !r.hasPureBufferSemantics())
    return chain;
  SmallVector<linalg::LinalgOp> members{r};
  // Chain results by root: the buffer and the map its producer writes it
  // through. Buffers the chain reads, by root: the operands reading them.
  DenseMap<Value, std::pair<Value, AffineMap>> results;
  DenseMap<Value, SmallVector<OpOperand *>> reads;
  auto addMember = [&](linalg::LinalgOp m) {
    OpOperand &out = m.getDpsInitsMutable()[0];
    results[viewRoot(out.get())] = {out.get(), m.getMatchingIndexingMap(&out)};
    for (OpOperand *input : m.getDpsInputOperands())
      if (isa<BaseMemRefType>(input->get().getType()) &&
          !results.count(viewRoot(input->get())))
        reads[viewRoot(input->get())].push_back(input);
  };
  addMember(r);
  for (Operation *next = r->getNextNode(); next; next = next->getNextNode()) {
    if (isa<memref::AllocOp>(next) || isMemoryEffectFree(next))
      continue;
    if (auto dealloc = dyn_cast<memref::DeallocOp>(next)) {
      Value root = viewRoot(dealloc.getMemref());
      if (results.count(root) || reads.count(root))
        break;
      continue;
    }
    // The fill of a later reduction's output (absorbed by that reduction)
    // may come between, if the chain neither reads nor writes its buffer.
    if (auto fill = dyn_cast<linalg::FillOp>(next);
        fill && fill.hasPureBufferSemantics()) {
      Value root = viewRoot(fill.getOutputs().front());
      if (results.count(root) || reads.count(root))
        break;
      continue;
    }
    auto c = dyn_cast<linalg::GenericOp>(next);
    if (!c || !c.hasPureBufferSemantics() || c.hasDynamicShape() ||
        c.getStaticLoopRanges() != r.getStaticLoopRanges())
      break;
    bool isReduction = c.getNumReductionLoops() != 0;
    if (isReduction &&
        (c.getIteratorTypesArray() != r.getIteratorTypesArray() ||
         c.getNumDpsInits() != 1 || !isChainableRowReduction(c)))
      break;
    bool readsResult = false, ok = true;
    for (OpOperand &operand : c->getOpOperands()) {
      Value v = operand.get();
      if (!isa<BaseMemRefType>(v.getType()))
        continue;
      Value root = viewRoot(v);
      bool isInit = c.isDpsInit(&operand);
      if (auto it = results.find(root); it != results.end()) {
        if (isInit || v != it->second.first ||
            c.getMatchingIndexingMap(&operand) != it->second.second) {
          ok = false;
          break;
        }
        readsResult = true;
        continue;
      }
      if (!isInit)
        continue;
      auto it = reads.find(root);
      if (it == reads.end())
        continue;
      // A reduction's output is a buffer of its own; an epilogue may
      // overwrite what the chain read only in place.
      if (isReduction ||
          llvm::any_of(it->second, [&](OpOperand *read) {
            auto owner = cast<linalg::LinalgOp>(read->getOwner());
            return read->get() != v || owner.getMatchingIndexingMap(read) !=
                                           c.getMatchingIndexingMap(&operand);
          })) {
        ok = false;
        break;
      }
    }
    if (!ok)
      break;
    if (!isReduction) {
      if (readsResult)
        chain.epilogue = c;
      break;
    }
    chain.reductions.push_back(c);
    members.push_back(c);
    addMember(c);
  }
  // A result nothing outside the chain reads is never stored.
  for (linalg::LinalgOp m : members) {
    Value out = m.getDpsInitsMutable()[0].get();
    chain.dropResult.push_back(
        out.getDefiningOp<memref::AllocOp>() &&
        llvm::all_of(out.getUsers(), [&](Operation *user) {
          return llvm::any_of(members,
                              [&](linalg::LinalgOp m) {
                                return m.getOperation() == user;
                              }) ||
                 (chain.epilogue && user == chain.epilogue.getOperation()) ||
                 isa<memref::DeallocOp, linalg::FillOp>(user);
        }));
  }
  return chain;
}

FailureOr<SmallVector<RowCombiner>> KernelBuilder::matchRowReduction() {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned numParallel = op.getNumParallelLoops();
  for (auto [i, it] : llvm::enumerate(iterators))
    if ((i < numParallel) != (it == utils::IteratorType::parallel))
      return failure(); // reductions interleaved with parallel dimensions
  return matchCombiners();
}

FailureOr<SmallVector<RowCombiner>> KernelBuilder::matchCombiners() {
  Block *block = op.getBlock();
  Operation *yield = block->getTerminator();
  SmallVector<BlockArgument> outArgs(op.getRegionOutputArgs());
  SmallVector<RowCombiner> combiners;
  for (unsigned i = 0; i < outArgs.size(); ++i) {
    SmallVector<Operation *> ops;
    if (!matchReduction(outArgs, i, ops) || ops.size() != 1)
      return failure();
    Operation *combiner = ops.front();
    if (!outArgs[i].hasOneUse() || combiner->getNumOperands() != 2 ||
        combiner->getNumResults() != 1 || !combiner->getResult(0).hasOneUse() ||
        yield->getOperand(i) != combiner->getResult(0))
      return failure();
    std::optional<gpu::AllReduceOperation> kind = getAllReduceKind(combiner);
    std::optional<TypedAttr> neutral = arith::getNeutralElement(combiner);
    Type type = combiner->getResult(0).getType();
    // 64-bit values are shuffled as two 32-bit halves by convert-gpu-to-nvvm.
    bool shuffleable = type.isF32() || type.isF64() || type.isInteger(32) ||
                       type.isInteger(64) ||
                       ((type.isF16() || type.isBF16()) && isa<FloatType>(type));
    if (!kind || !neutral || !shuffleable)
      return failure();
    unsigned outOperand = combiner->getOperand(0) == outArgs[i] ? 0 : 1;
    if (combiner->getOperand(outOperand) != outArgs[i] ||
        combiner->getOperand(0) == combiner->getOperand(1))
      return failure();
    combiners.push_back({combiner, *neutral, *kind, outOperand});
  }
  return combiners;
}

LogicalResult
KernelBuilder::buildRowReduction(ArrayRef<RowCombiner> combiners) {
  // The parallel loops come first (matchRowReduction).
  Loops loops = splitLoops();
  ArrayRef<int64_t> reductionRanges = loops.reductionRanges;
  int64_t rowLength = product(reductionRanges);
  // With a chain the launch takes the place of its last op, after the
  // allocation of every output (findRowChain checked the ops between).
  Operation *last = chain.epilogue ? chain.epilogue.getOperation()
                    : !chain.reductions.empty()
                        ? chain.reductions.back().getOperation()
                        : op.getOperation();
  OpBuilder b(last);
  Location loc = op.getLoc();
  RowLaunch row = createRowLaunch(b, loc, loops.parallelRanges, rowLength);
  Value tid = row.tid;
  int64_t threads = row.threads;
  // Outputs do not read reduction dims (0 there).
  SmallVector<Value> outIvs = loops.join(b, loc, row.rowIvs);
  bool chained = chain.epilogue || !chain.reductions.empty();

  // The chain's results known so far, in registers (every thread has them:
  // the all-reduces are uniform), by their buffer.
  DenseMap<Value, Value> rowValues;
  auto given = [&](linalg::LinalgOp user) {
    IRMapping mapping;
    for (OpOperand *input : user.getDpsInputOperands())
      if (auto it = rowValues.find(input->get()); it != rowValues.end())
        mapping.map(user.getMatchingBlockArgument(input), it->second);
    return mapping;
  };
  // One reduction of the chain: per-thread partials over a strided part of
  // the row (f16/bf16 outputs accumulate in f32: their combiner is emitted
  // on f32, the contribution extended to it), the all-reduces, the result
  // folded with the initial value and rounded once; thread 0 stores it
  // unless nothing outside the chain reads it. When no later op of the
  // chain needs it, only thread 0 folds (and loads the initial value).
  auto reduce = [&](KernelBuilder &stage, ArrayRef<RowCombiner> cs,
                    bool store, bool needed) {
    SmallVector<Operation *> widened;
    SmallVector<Value> neutrals = accumulatorInits(b, loc, cs, widened);
    IRMapping known = given(stage.op);
    auto loop = scf::ForOp::create(b, loc, tid, index(b, loc, rowLength),
                                   index(b, loc, threads), neutrals);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> ivs =
          row.at(b, loc, loop.getInductionVar(), reductionRanges);
      scf::YieldOp::create(b, loc,
                           stage.accumulate(b, ivs, loop.getRegionIterArgs(),
                                            cs, widened, &known));
    }
    SmallVector<Value> totals;
    for (auto [c, partial] : llvm::zip(cs, loop.getResults()))
      totals.push_back(uniformAllReduce(b, loc, partial, c.kind));
    auto onThreadZero = [&](function_ref<void()> body) {
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          tid, index(b, loc, 0));
      emitIf(b, loc, first, body);
    };
    if (!needed) {
      if (store) // else: a result nothing reads
        onThreadZero([&] { stage.foldAndStore(b, outIvs, cs, totals); });
      return;
    }
    SmallVector<Value> results = stage.foldResults(b, outIvs, cs, totals);
    if (store)
      onThreadZero([&] { stage.storeResults(b, outIvs, results); });
    rowValues[stage.op.getDpsInitsMutable()[0].get()] = results.front();
  };

  if (!chained) {
    reduce(*this, combiners, /*store=*/true, /*needed=*/false);
    return success();
  }
  reduce(*this, combiners, !chain.dropResult[0], /*needed=*/true);
  std::vector<KernelBuilder> stages;
  for (linalg::GenericOp c : chain.reductions) {
    stages.emplace_back(c);
    KernelBuilder &stage = stages.back();
    stage.ranges = c.getStaticLoopRanges();
    stage.findFilledInits();
  }
  for (auto [i, stage] : llvm::enumerate(stages)) {
    bool lastNeeded = chain.epilogue || i + 1 < stages.size();
    reduce(stage, *stage.matchRowReduction(), !chain.dropResult[i + 1],
           lastNeeded);
  }

  // The epilogue: every thread applies it over its strided part of the row
  // with the chain's results in registers. The all-reduces' barriers order
  // every read of the row before the epilogue's first store, so an
  // epilogue writing in place over the reduced input is safe.
  if (chain.epilogue) {
    KernelBuilder apply(chain.epilogue);
    auto applyLoop = scf::ForOp::create(b, loc, tid, index(b, loc, rowLength),
                                        index(b, loc, threads));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(applyLoop.getBody());
    SmallVector<Value> eIvs =
        row.at(b, loc, applyLoop.getInductionVar(), reductionRanges);
    IRMapping mapping = given(chain.epilogue);
    apply.storeResults(b, eIvs, apply.emitRegion(b, eIvs, {}, {}, &mapping));
  }

  // The chain's ops go; a dropped result goes with its deallocations, its
  // absorbed fill and its allocation (the first op's: in build()).
  SmallVector<Value> dropped;
  if (chain.epilogue)
    chain.epilogue->erase();
  for (auto [i, stage] : llvm::enumerate(stages)) {
    Value out = stage.op.getDpsInitsMutable()[0].get();
    stage.op->erase();
    for (linalg::FillOp fill : stage.fills)
      fill->erase();
    if (chain.dropResult[i + 1])
      dropped.push_back(out);
  }
  if (chain.dropResult[0])
    dropped.push_back(op.getDpsInitsMutable()[0].get());
  for (Value out : dropped) {
    for (Operation *user : llvm::make_early_inc_range(out.getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    if (out != op.getDpsInitsMutable()[0].get() && out.use_empty())
      out.getDefiningOp()->erase();
  }
  return success();
}

bool mlir::tp::gpukernels::isChainableRowReduction(linalg::GenericOp op) {
  return KernelBuilder(op).isRowReduction();
}

/// A column reduction: the innermost loop is parallel (so neighbouring
/// threads read neighbouring elements) and some reduction loop comes
/// before it, e.g. linalg.reduce dimensions = [0] (bias and norm-weight
/// gradients summed over tokens).
bool KernelBuilder::isColumnReduction() const {
  SmallVector<utils::IteratorType> iterators =
      const_cast<linalg::LinalgOp &>(op).getIteratorTypesArray();
  if (iterators.empty() || iterators.back() != utils::IteratorType::parallel ||
      !llvm::is_contained(iterators, utils::IteratorType::reduction))
    return false;
  int64_t outputs = 1;
  for (auto [d, it] : llvm::enumerate(iterators))
    if (it == utils::IteratorType::parallel)
      outputs *= ranges[d];
  return ceilDiv(outputs, kWarp) <= kMaxBlocks;
}

/// Column reductions: blocks of kWarp x rowsY threads. threadIdx.x picks
/// one of kWarp consecutive output points (coalesced loads), threadIdx.y a
/// strided part of the reduction; the partials meet in workgroup memory
/// and a tree of log2(rowsY) barrier-separated steps combines them; row 0
/// folds in the initial value and stores. The grid is the output points
/// over kWarp. f16/bf16 accumulate in f32 as in row reductions.
LogicalResult
KernelBuilder::buildColumnReduction(ArrayRef<RowCombiner> combiners) {
  Loops loops = splitLoops();
  int64_t outputs = product(loops.parallelRanges);
  int64_t length = product(loops.reductionRanges);
  int64_t blocks = ceilDiv(outputs, kWarp);
  // Few blocks: more threads per column, so that the reduction still
  // spreads over the GPU; never more rows than the reduction has.
  int64_t rowsY = blocks >= 128 ? 8 : 32;
  rowsY = std::min<int64_t>(rowsY,
                            std::max<int64_t>(2, llvm::PowerOf2Ceil(length)));
  OpBuilder b(op);
  Location loc = op.getLoc();
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, kWarp, rowsY);
  SmallVector<Value> shared;
  for (const RowCombiner &c : combiners) {
    Type acc = c.widen() ? b.getF32Type() : c.combiner->getResult(0).getType();
    shared.push_back(launch.addWorkgroupAttribution(
        workgroupType(b.getContext(), {rowsY * kWarp}, acc), loc));
  }

  Value tx = launch.getThreadIds().x;
  Value ty = launch.getThreadIds().y;
  Value point = globalThreadIndex(b, loc, launch, kWarp);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        point, index(b, loc, outputs));
  // Out-of-range columns fold nothing but still reach every barrier.
  Value safePoint =
      arith::SelectOp::create(b, loc, inRange, point, index(b, loc, 0));
  Value upper = arith::SelectOp::create(b, loc, inRange, index(b, loc, length),
                                        index(b, loc, 0));
  SmallVector<Value> pIvs =
      delinearize(b, loc, safePoint, loops.parallelRanges);

  SmallVector<Operation *> widened;
  SmallVector<Value> neutrals = accumulatorInits(b, loc, combiners, widened);
  auto loop = scf::ForOp::create(b, loc, ty, upper, index(b, loc, rowsY),
                                 neutrals);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> rIvs =
        delinearize(b, loc, loop.getInductionVar(), loops.reductionRanges);
    SmallVector<Value> ivs = loops.join(b, loc, pIvs, rIvs);
    scf::YieldOp::create(
        b, loc, accumulate(b, ivs, loop.getRegionIterArgs(), combiners,
                           widened));
  }

  // The partials into workgroup memory, then the tree over threadIdx.y.
  Value slot = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, ty, index(b, loc, kWarp)), tx);
  for (auto [buffer, partial] : llvm::zip(shared, loop.getResults()))
    memref::StoreOp::create(b, loc, partial, buffer, slot);
  gpu::BarrierOp::create(b, loc);
  for (int64_t half = rowsY / 2; half >= 1; half /= 2) {
    Value active = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ty,
                                         index(b, loc, half));
    emitIf(b, loc, active, [&] {
      Value other =
          arith::AddIOp::create(b, loc, slot, index(b, loc, half * kWarp));
      for (auto [c, buffer] : llvm::zip(combiners, shared)) {
        Value mine = memref::LoadOp::create(b, loc, buffer, slot);
        Value theirs = memref::LoadOp::create(b, loc, buffer, other);
        memref::StoreOp::create(b, loc, combine(b, loc, c, mine, theirs),
                                buffer, slot);
      }
    });
    gpu::BarrierOp::create(b, loc);
  }

  // Row 0 of an in-range column folds in the initial value and stores.
  Value first = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ty,
                            index(b, loc, 0)),
      inRange);
  emitIf(b, loc, first, [&] {
    // Outputs do not read reduction dims (0 there).
    SmallVector<Value> ivs = loops.join(b, loc, pIvs);
    SmallVector<Value> totals;
    for (Value buffer : shared)
      totals.push_back(memref::LoadOp::create(b, loc, buffer, tx));
    foldAndStore(b, ivs, combiners, totals);
  });
  return success();
}

LogicalResult KernelBuilder::buildSerialReduction() {
  Loops loops = splitLoops();
  OpBuilder b(op);
  Location loc = op.getLoc();
  createGridStrideLaunch(
      b, loc, product(loops.parallelRanges), [&](OpBuilder &b, Value flat) {
        SmallVector<Value> pIvs =
            delinearize(b, loc, flat, loops.parallelRanges);
        SmallVector<Value> ivs = loops.join(b, loc, pIvs);
        SmallVector<Value> initial = loadOutputs(b, ivs);
        auto loop = scf::ForOp::create(
            b, loc, index(b, loc, 0),
            index(b, loc, product(loops.reductionRanges)), index(b, loc, 1),
            initial);
        {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(loop.getBody());
          SmallVector<Value> rIvs = delinearize(
              b, loc, loop.getInductionVar(), loops.reductionRanges);
          SmallVector<Value> inner = loops.join(b, loc, pIvs, rIvs);
          scf::YieldOp::create(b, loc,
                               emitRegion(b, inner, loop.getRegionIterArgs()));
        }
        storeResults(b, ivs, loop.getResults());
      });
  return success();
}
