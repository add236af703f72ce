//===- LinalgToGPU.cpp - linalg ops on buffers to gpu.launch ------*- C++ -*-//
//
// After bufferization every remaining linalg op becomes one gpu.launch, and
// the host side moves to device memory.
//
// Kernel mapping, per linalg op (static loop ranges, buffer semantics):
//  * Parallel-only op: a 1-D grid-stride kernel over the flattened iteration
//    space (256 threads per block, fewer for tiny ops; at most 65535 blocks).
//    Each point delinearizes its index into loop indices, loads every operand
//    the region reads through its indexing map, clones the region (with
//    linalg.index replaced by the loop index) and stores the yielded values
//    through the output maps.
//  * Row reduction: every reduction dimension trails every parallel one and
//    each output's region value is `combiner(out, contribution)` with a
//    combiner that gpu.all_reduce knows (matchReduction, then
//    arith::getNeutralElement), on f32, f64, i32, i64, f16 or bf16 (64-bit
//    values shuffle as two 32-bit halves). One block per row: the grid is the number of
//    parallel points, the block 32..256 threads (the row length rounded up to
//    a power of two). Each thread folds a strided part of the row into a
//    partial starting at the neutral element, by the op's own region; a
//    uniform gpu.all_reduce combines the partials (upstream lowers it to
//    shfl.sync.bfly within warps, a workgroup buffer and bar.sync across
//    warps; 16-bit floats combine in f32); thread 0 combines the result
//    with the output's initial value and stores it once.
//    f16/bf16 outputs accumulate in f32 throughout and are truncated once.
//    Row epilogue: when the next op reading the row's result is a parallel
//    op over the same iteration space that reads it broadcast along the row
//    (a norm's scaling by its statistic: sum(x^2), then x * rsqrt(...) * w),
//    the same launch applies it after the all-reduce, each thread over its
//    strided part of the row: one kernel, and the row statistic never goes
//    through device memory unless something else reads it. The row is read
//    again by the same block, from cache. Before that op, further row
//    reductions over the same rows may join (a chain, findRowChain: the
//    variance after the mean), each reading the earlier results from
//    registers.
//  * Column reduction (the innermost loop parallel, some reduction loop
//    before it: linalg.reduce dimensions = [0], bias and norm-weight
//    gradients) with such combiners: blocks of 32 x R threads (R = 8, or 32
//    when the grid has under 128 blocks, at most the reduction length);
//    threadIdx.x picks one of 32 neighbouring output points (coalesced
//    loads), threadIdx.y a strided part of the reduction; the partials meet
//    in workgroup memory and log2(R) barrier-separated tree steps combine
//    them; row 0 folds in the initial value and stores.
//  * linalg.softmax over the last dimension (tp-fuse-softmax puts tp-gen's
//    and the decomposition's max / exp / sum / divide back into one): one
//    block per row, one pass with an online max and sum per thread, two
//    uniform all-reduces (max, then the rescaled sums), and a second loop
//    over the thread's elements storing exp(x - max) / sum (f32 for 16-bit).
//  * Any other reduction (interleaved dimensions ending in a reduction,
//    unknown combiners, several coupled outputs): one thread per output
//    point running the reduction loop serially, with a remark.
// Host side: memref.alloc / memref.dealloc become gpu.alloc / gpu.dealloc;
// memref.copy becomes gpu.memcpy between contiguous buffers and a copy
// kernel otherwise; memref.get_global gets a device copy (gpu.alloc +
// gpu.memcpy, freed before each return); a memref.load left on the host (a
// top-level tensor.extract) becomes a one-thread kernel that copies the
// element into a one-element device buffer, a gpu.memcpy of it into a host
// alloca and a load from there, with a remark. Otherwise host code may only
// compute views of device buffers: a memref.store left outside a kernel is
// an error.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tp {
#define GEN_PASS_DEF_LINALGTOGPUPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-linalg-to-gpu"

using namespace mlir;
using namespace mlir::tp;

namespace {

constexpr int64_t kThreadsPerBlock = 256;
constexpr int64_t kMaxBlocks = 65535;
constexpr int64_t kWarp = 32;

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

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

/// A gpu.launch with a 1-D grid and block; the builder is left inside its
/// body, before the terminator.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads) {
  Value one = index(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, index(b, loc, blocks), one, one,
                                      index(b, loc, threads), one, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);
  return launch;
}

/// One block per row of `rowLength` elements (a power of two of threads,
/// a warp to a full block), over rows indexed by `rowRanges`: the launch,
/// the thread index and the row's indices. The builder is left inside.
struct RowLaunch {
  gpu::LaunchOp launch;
  Value tid;
  SmallVector<Value> rowIvs;
  int64_t threads;
};
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

/// What a row reduction kernel needs to know about each output.
struct RowCombiner {
  Operation *combiner;  // the region's op folding `out` into the row
  TypedAttr neutral;    // its neutral element
  gpu::AllReduceOperation kind;
  unsigned outOperand;  // which operand of `combiner` is `out`
  /// f16/bf16 outputs accumulate in f32: the per-thread partials, the
  /// all-reduce and the fold of the initial value, truncated once.
  bool widen() const {
    Type t = combiner->getResult(0).getType();
    return t.isF16() || t.isBF16();
  }
};

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
static Value viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// What a row reduction's launch computes after it (findRowChain): more
/// row reductions over the same rows, then at most one parallel op, the
/// epilogue. `dropResult[i]` (the first reduction, then `reductions[i-1]`)
/// is set when that result buffer is a memref.alloc that nothing outside
/// the chain reads (besides deallocations and fills): it is never stored.
struct RowChain {
  SmallVector<linalg::GenericOp> reductions;
  linalg::GenericOp epilogue;
  SmallVector<bool> dropResult;
};

bool isChainableRowReduction(linalg::GenericOp op);

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
static RowChain findRowChain(linalg::LinalgOp r) {
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

class KernelBuilder {
public:
  explicit KernelBuilder(linalg::LinalgOp op) : op(op) {}

  LogicalResult build();

private:
  /// Indices of operand `operand` at loop indices `ivs`.
  SmallVector<Value> operandIndices(OpBuilder &b, OpOperand &operand,
                                    ValueRange ivs);
  /// Loads what the region reads and clones it at loop indices `ivs`;
  /// `outputs` (if non-empty) stand for the output block arguments.
  /// Returns the yielded values.
  SmallVector<Value> emitRegion(OpBuilder &b, ValueRange ivs,
                                ValueRange outputs,
                                ArrayRef<Operation *> skip = {},
                                IRMapping *mappingOut = nullptr);
  void storeResults(OpBuilder &b, ValueRange ivs, ValueRange values);
  SmallVector<Value> loadOutputs(OpBuilder &b, ValueRange ivs);
  /// One step of a reduction's partials at loop indices `ivs`: the body's
  /// combined values, widened combiners applied on f32.
  SmallVector<Value> accumulate(OpBuilder &b, ValueRange ivs,
                                ValueRange partials,
                                ArrayRef<RowCombiner> combiners,
                                ArrayRef<Operation *> widened,
                                const IRMapping *given = nullptr);
  /// Combines each total with the output's initial value and stores it at
  /// `ivs`, rounded once to the output's type.
  void foldAndStore(OpBuilder &b, ValueRange ivs,
                    ArrayRef<RowCombiner> combiners, ValueRange totals);
  /// The totals combined with the outputs' initial values, rounded once.
  SmallVector<Value> foldResults(OpBuilder &b, ValueRange ivs,
                                 ArrayRef<RowCombiner> combiners,
                                 ValueRange totals);

  LogicalResult buildParallel();
  FailureOr<SmallVector<RowCombiner>> matchCombiners();
  FailureOr<SmallVector<RowCombiner>> matchRowReduction();
  LogicalResult buildRowReduction(ArrayRef<RowCombiner> combiners);
  bool isColumnReduction() const;
  LogicalResult buildColumnReduction(ArrayRef<RowCombiner> combiners);
  LogicalResult buildSerialReduction();
  /// The loops by kind: parallel ranges, reduction ranges, and their loop
  /// numbers, each in loop order.
  struct Loops {
    SmallVector<int64_t> parallelRanges, reductionRanges;
    SmallVector<unsigned> parallelDims, reductionDims;
  };
  Loops splitLoops();

public:
  /// A reduction whose output buffer was just filled with a constant (the
  /// fill's value, per init; null where there is none): the kernel starts
  /// from that value instead of loading it, and the fill kernel goes.
  void findFilledInits();
  ArrayRef<linalg::FillOp> absorbedFills() const { return fills; }
  /// The ops the row reduction's kernel computed besides its own
  /// (findRowChain): they are gone.
  SmallVector<Operation *> consumed() const {
    SmallVector<Operation *> ops(chain.reductions.begin(),
                                 chain.reductions.end());
    if (chain.epilogue)
      ops.push_back(chain.epilogue);
    return ops;
  }
  /// Whether the op is a row reduction with combiners the row kernel
  /// knows (one that may join a chain).
  bool isRowReduction() { return succeeded(matchRowReduction()); }

private:
  linalg::LinalgOp op;
  SmallVector<int64_t> ranges;
  SmallVector<Value> fillValues;
  SmallVector<linalg::FillOp> fills;
  RowChain chain;
};

} // namespace

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

/// A grid-stride loop over `total` points; `body` gets the flat index.
static void gridStrideLoop(OpBuilder &b, Location loc, gpu::LaunchOp launch,
                           int64_t total, int64_t blocks, int64_t threads,
                           function_ref<void(OpBuilder &, Value)> body) {
  Value start = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                            index(b, loc, threads)),
      launch.getThreadIds().x);
  if (blocks * threads >= total) {
    // One point per thread at most: a guard instead of a loop.
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          start, index(b, loc, total));
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    body(b, start);
    return;
  }
  auto loop = scf::ForOp::create(b, loc, start, index(b, loc, total),
                                 index(b, loc, blocks * threads));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  body(b, loop.getInductionVar());
}

static int64_t threadsFor(int64_t total) {
  return std::min(kThreadsPerBlock,
                  std::max(kWarp, ceilDiv(total, kWarp) * kWarp));
}

LogicalResult KernelBuilder::buildParallel() {
  int64_t total = product(ranges);
  int64_t threads = threadsFor(total);
  int64_t blocks = std::min(kMaxBlocks, ceilDiv(total, threads));
  OpBuilder b(op);
  Location loc = op.getLoc();
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  gridStrideLoop(b, loc, launch, total, blocks, threads,
                 [&](OpBuilder &b, Value flat) {
                   SmallVector<Value> ivs = delinearize(b, loc, flat, ranges);
                   storeResults(b, ivs, emitRegion(b, ivs, {}));
                 });
  return success();
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
  unsigned numParallel = op.getNumParallelLoops();
  ArrayRef<int64_t> parallelRanges = ArrayRef<int64_t>(ranges).take_front(
      numParallel);
  ArrayRef<int64_t> reductionRanges =
      ArrayRef<int64_t>(ranges).drop_front(numParallel);
  int64_t rowLength = product(reductionRanges);
  // With a chain the launch takes the place of its last op, after the
  // allocation of every output (findRowChain checked the ops between).
  Operation *last = chain.epilogue ? chain.epilogue.getOperation()
                    : !chain.reductions.empty()
                        ? chain.reductions.back().getOperation()
                        : op.getOperation();
  OpBuilder b(last);
  Location loc = op.getLoc();
  RowLaunch row = createRowLaunch(b, loc, parallelRanges, rowLength);
  Value tid = row.tid;
  SmallVector<Value> &rowIvs = row.rowIvs;
  int64_t threads = row.threads;
  SmallVector<Value> outIvs(rowIvs);
  for (int64_t i = numParallel; i < (int64_t)ranges.size(); ++i)
    outIvs.push_back(index(b, loc, 0)); // outputs do not read reduction dims
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
      SmallVector<Value> ivs(rowIvs);
      ivs.append(delinearize(b, loc, loop.getInductionVar(), reductionRanges));
      scf::YieldOp::create(b, loc,
                           stage.accumulate(b, ivs, loop.getRegionIterArgs(),
                                            cs, widened, &known));
    }
    SmallVector<Value> totals;
    for (auto [c, partial] : llvm::zip(cs, loop.getResults()))
      totals.push_back(
          gpu::AllReduceOp::create(
              b, loc, partial,
              gpu::AllReduceOperationAttr::get(b.getContext(), c.kind),
              b.getUnitAttr())
              .getResult());
    auto onThreadZero = [&](function_ref<void()> body) {
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          tid, index(b, loc, 0));
      auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      body();
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
    SmallVector<Value> eIvs(rowIvs);
    eIvs.append(
        delinearize(b, loc, applyLoop.getInductionVar(), reductionRanges));
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

namespace {
bool isChainableRowReduction(linalg::GenericOp op) {
  return KernelBuilder(op).isRowReduction();
}
} // namespace

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
  SmallVector<int64_t> &parallelRanges = loops.parallelRanges;
  SmallVector<int64_t> &reductionRanges = loops.reductionRanges;
  SmallVector<unsigned> &parallelDims = loops.parallelDims;
  SmallVector<unsigned> &reductionDims = loops.reductionDims;
  int64_t outputs = product(parallelRanges);
  int64_t length = product(reductionRanges);
  int64_t blocks = ceilDiv(outputs, kWarp);
  // Few blocks: more threads per column, so that the reduction still
  // spreads over the GPU; never more rows than the reduction has.
  int64_t rowsY = blocks >= 128 ? 8 : 32;
  rowsY = std::min<int64_t>(rowsY,
                            std::max<int64_t>(2, llvm::PowerOf2Ceil(length)));
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value one = index(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, index(b, loc, blocks), one, one,
                                      index(b, loc, kWarp),
                                      index(b, loc, rowsY), one);
  SmallVector<Value> shared;
  for (const RowCombiner &c : combiners) {
    Type acc = c.widen() ? b.getF32Type() : c.combiner->getResult(0).getType();
    auto type = MemRefType::get(
        {rowsY * kWarp}, acc, MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    shared.push_back(launch.addWorkgroupAttribution(type, loc));
  }
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);

  Value tx = launch.getThreadIds().x;
  Value ty = launch.getThreadIds().y;
  Value point = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                            index(b, loc, kWarp)),
      tx);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        point, index(b, loc, outputs));
  // Out-of-range columns fold nothing but still reach every barrier.
  Value safePoint =
      arith::SelectOp::create(b, loc, inRange, point, index(b, loc, 0));
  Value upper = arith::SelectOp::create(b, loc, inRange, index(b, loc, length),
                                        index(b, loc, 0));
  SmallVector<Value> pIvs = delinearize(b, loc, safePoint, parallelRanges);

  SmallVector<Operation *> widened;
  SmallVector<Value> neutrals = accumulatorInits(b, loc, combiners, widened);
  auto loop = scf::ForOp::create(b, loc, ty, upper, index(b, loc, rowsY),
                                 neutrals);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> ivs(ranges.size());
    for (auto [d, v] : llvm::zip(parallelDims, pIvs))
      ivs[d] = v;
    SmallVector<Value> rIvs =
        delinearize(b, loc, loop.getInductionVar(), reductionRanges);
    for (auto [d, v] : llvm::zip(reductionDims, rIvs))
      ivs[d] = v;
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
    auto step = scf::IfOp::create(b, loc, active, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&step.getThenRegion().front());
      Value other =
          arith::AddIOp::create(b, loc, slot, index(b, loc, half * kWarp));
      for (auto [c, buffer] : llvm::zip(combiners, shared)) {
        Value mine = memref::LoadOp::create(b, loc, buffer, slot);
        Value theirs = memref::LoadOp::create(b, loc, buffer, other);
        memref::StoreOp::create(b, loc, combine(b, loc, c, mine, theirs),
                                buffer, slot);
      }
    }
    gpu::BarrierOp::create(b, loc);
  }

  // Row 0 of an in-range column folds in the initial value and stores.
  Value first = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ty,
                            index(b, loc, 0)),
      inRange);
  auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
  SmallVector<Value> ivs(ranges.size());
  for (auto [d, v] : llvm::zip(parallelDims, pIvs))
    ivs[d] = v;
  for (unsigned d : reductionDims)
    ivs[d] = index(b, loc, 0); // outputs do not read reduction dims
  SmallVector<Value> totals;
  for (Value buffer : shared)
    totals.push_back(memref::LoadOp::create(b, loc, buffer, tx));
  foldAndStore(b, ivs, combiners, totals);
  return success();
}

LogicalResult KernelBuilder::buildSerialReduction() {
  Loops loops = splitLoops();
  SmallVector<int64_t> &parallelRanges = loops.parallelRanges;
  SmallVector<int64_t> &reductionRanges = loops.reductionRanges;
  SmallVector<unsigned> &parallelDims = loops.parallelDims;
  SmallVector<unsigned> &reductionDims = loops.reductionDims;
  int64_t total = product(parallelRanges);
  int64_t threads = threadsFor(total);
  int64_t blocks = std::min(kMaxBlocks, ceilDiv(total, threads));
  OpBuilder b(op);
  Location loc = op.getLoc();
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  gridStrideLoop(
      b, loc, launch, total, blocks, threads, [&](OpBuilder &b, Value flat) {
        SmallVector<Value> pIvs = delinearize(b, loc, flat, parallelRanges);
        SmallVector<Value> ivs(ranges.size());
        for (auto [d, v] : llvm::zip(parallelDims, pIvs))
          ivs[d] = v;
        for (unsigned d : reductionDims)
          ivs[d] = index(b, loc, 0);
        SmallVector<Value> initial = loadOutputs(b, ivs);
        auto loop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                       index(b, loc, product(reductionRanges)),
                                       index(b, loc, 1), initial);
        {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(loop.getBody());
          SmallVector<Value> inner(ivs);
          SmallVector<Value> rIvs =
              delinearize(b, loc, loop.getInductionVar(), reductionRanges);
          for (auto [d, v] : llvm::zip(reductionDims, rIvs))
            inner[d] = v;
          scf::YieldOp::create(b, loc,
                               emitRegion(b, inner, loop.getRegionIterArgs()));
        }
        storeResults(b, ivs, loop.getResults());
      });
  return success();
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
static LogicalResult buildSoftmax(linalg::SoftmaxOp op) {
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
  SmallVector<Value> &rowIvs = row.rowIvs;
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
    SmallVector<Value> ivs(rowIvs);
    ivs.push_back(j);
    Value v = memref::LoadOp::create(ib, loc, op.getInput(), ivs);
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
  auto allReduce = [&](Value v, gpu::AllReduceOperation kind) -> Value {
    return gpu::AllReduceOp::create(
               b, loc, v, gpu::AllReduceOperationAttr::get(b.getContext(), kind),
               b.getUnitAttr())
        .getResult();
  };
  Value rowMax = allReduce(m, gpu::AllReduceOperation::MAXIMUMF);
  Value rescaled =
      arith::MulFOp::create(b, loc, partial, expDiff(b, m, rowMax));
  Value rowSum = allReduce(rescaled, gpu::AllReduceOperation::ADD);

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
    SmallVector<Value> ivs(rowIvs);
    ivs.push_back(j);
    memref::StoreOp::create(b, loc, y, output, ivs);
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

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// Buffers gpu.memcpy takes whole: identity layouts only (a contiguous view
/// with an offset is copied by a kernel, which honours the offset).
static bool isContiguous(MemRefType type) {
  return type.getLayout().isIdentity() && type.hasStaticShape();
}

static LogicalResult moveHostToDevice(func::FuncOp fn) {
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) {
    if (op->getParentOfType<gpu::LaunchOp>())
      return;
    if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp,
            memref::GetGlobalOp, memref::LoadOp, memref::StoreOp>(op))
      ops.push_back(op);
  });
  SmallVector<Value> globalsOnDevice;
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      auto gpuAlloc = gpu::AllocOp::create(
          b, loc, alloc.getType(), /*asyncToken=*/Type(), ValueRange(),
          alloc.getDynamicSizes(), alloc.getSymbolOperands(),
          /*hostShared=*/false);
      alloc.replaceAllUsesWith(gpuAlloc.getMemref());
      alloc.erase();
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange(),
                             dealloc.getMemref());
      dealloc.erase();
    } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      auto srcType = cast<MemRefType>(copy.getSource().getType());
      auto dstType = cast<MemRefType>(copy.getTarget().getType());
      if (isContiguous(srcType) && isContiguous(dstType)) {
        gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange(),
                              copy.getTarget(), copy.getSource());
        copy.erase();
        continue;
      }
      auto kernel =
          linalg::CopyOp::create(b, loc, copy.getSource(), copy.getTarget());
      copy.erase();
      if (failed(KernelBuilder(cast<linalg::LinalgOp>(kernel.getOperation()))
                     .build()))
        return failure();
    } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
      if (global->getBlock() != &fn.getBody().front())
        return global.emitOpError()
               << "reads a global inside control flow, which the GPU "
                  "lowering cannot copy to the device";
      b.setInsertionPointAfter(global);
      auto type = global.getType();
      if (!isContiguous(type))
        return global.emitOpError() << "reads a strided global";
      auto device = gpu::AllocOp::create(b, loc, type, Type(), ValueRange(),
                                         ValueRange(), ValueRange(), false);
      global.getResult().replaceAllUsesWith(device.getMemref());
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), device.getMemref(),
                            global.getResult());
      globalsOnDevice.push_back(device.getMemref());
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      // A host-side read of one element (a top-level tensor.extract): a
      // one-thread kernel copies it into a one-element device buffer, which
      // is copied into host memory and read there. The runtime's mgpuMemcpy
      // into host memory completes before it returns (docs/runtime.md).
      load->emitRemark()
          << "reads one element of a device buffer on the host: a one-thread "
             "kernel and a device-to-host copy, which waits for the stream";
      auto one = MemRefType::get({1}, load.getType());
      Value zero = index(b, loc, 0);
      auto staging = gpu::AllocOp::create(b, loc, one, Type(), ValueRange(),
                                          ValueRange(), ValueRange(), false);
      {
        OpBuilder::InsertionGuard g(b);
        createLaunch(b, loc, 1, 1);
        Value v = memref::LoadOp::create(b, loc, load.getMemRef(),
                                         load.getIndices());
        memref::StoreOp::create(b, loc, v, staging.getMemref(), zero);
      }
      auto host = memref::AllocaOp::create(b, loc, one);
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), host,
                            staging.getMemref());
      Value v = memref::LoadOp::create(b, loc, host, zero);
      gpu::DeallocOp::create(b, loc, Type(), ValueRange(),
                             staging.getMemref());
      load.replaceAllUsesWith(v);
      load.erase();
    } else {
      return op->emitOpError()
             << "accesses memory on the host, where every buffer is a device "
                "buffer";
    }
  }
  if (!globalsOnDevice.empty())
    fn.walk([&](func::ReturnOp ret) {
      OpBuilder b(ret);
      for (Value v : globalsOnDevice)
        gpu::DeallocOp::create(b, ret.getLoc(), Type(), ValueRange(), v);
    });
  return success();
}

namespace {
struct LinalgToGPUPass
    : public tp::impl::LinalgToGPUPassBase<LinalgToGPUPass> {
  // The later stages of tp-lower-gpu (nvvm-attach-target, serialization,
  // translation) need the NVVM target and the LLVM IR translations; a tool
  // that runs this pass gets them without registering them itself.
  void getDependentDialects(DialectRegistry &registry) const override {
    LinalgToGPUPassBase::getDependentDialects(registry);
    registerGPUTranslations(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Softmaxes first: one may fold the cast after it (a linalg op).
    SmallVector<linalg::SoftmaxOp> softmaxes;
    module.walk([&](linalg::SoftmaxOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>())
        softmaxes.push_back(op);
    });
    for (linalg::SoftmaxOp op : softmaxes)
      if (failed(buildSoftmax(op)))
        return signalPassFailure();
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>() &&
          !op->getParentOfType<gpu::GPUModuleOp>())
        ops.push_back(op);
    });
    // Fills that a reduction's kernel absorbs (it starts from the value)
    // are erased by that kernel's builder, not lowered on their own.
    DenseSet<Operation *> absorbed;
    for (linalg::LinalgOp op : ops) {
      KernelBuilder probe(op);
      probe.findFilledInits();
      for (linalg::FillOp fill : probe.absorbedFills())
        absorbed.insert(fill);
    }
    // The ops a row reduction's kernel computed too (its chain: further
    // reductions of the same rows and the epilogue) are gone with it.
    DenseSet<Operation *> consumed;
    for (linalg::LinalgOp op : ops) {
      if (absorbed.contains(op) || consumed.contains(op))
        continue;
      KernelBuilder builder(op);
      if (failed(builder.build()))
        return signalPassFailure();
      for (Operation *gone : builder.consumed())
        consumed.insert(gone);
    }
    for (func::FuncOp fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(moveHostToDevice(fn)))
        return signalPassFailure();
  }
};
} // namespace
