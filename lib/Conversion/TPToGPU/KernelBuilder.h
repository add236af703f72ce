//===- KernelBuilder.h - one linalg op on buffers to a gpu.launch -*- C++ -*-//
//
// What the kernel families of tp-linalg-to-gpu share: launch geometry
// helpers, the reduction combiners a gpu.all_reduce knows, and
// KernelBuilder, which turns one linalg op on buffers into one gpu.launch
// (KernelBuilder.cpp: the region cloned at loop indices, the dispatch to a
// family). The families: ElementwiseKernels.cpp (parallel ops),
// ReductionKernels.cpp (row reductions and their chains, column
// reductions, the serial fallback), SoftmaxKernel.cpp. The thread-level
// pieces (a thread's warp and lane, warp shuffles, block-wide all-reduces,
// workgroup buffers, guarded and 16-byte accesses) serve the fused
// attention kernels too (AttentionCudaCore.cpp, AttentionTensorCore.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TP_CONVERSION_TPTOGPU_KERNELBUILDER_H
#define TP_CONVERSION_TPTOGPU_KERNELBUILDER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace mlir::tp::gpukernels {

constexpr int64_t kThreadsPerBlock = 256;
constexpr int64_t kMaxBlocks = 65535;
constexpr int64_t kWarp = 32;

Value index(OpBuilder &b, Location loc, int64_t v);
inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t product(ArrayRef<int64_t> values);

/// Loop indices for the flat index `flat` over `ranges` (row-major).
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value flat,
                               ArrayRef<int64_t> ranges);

/// A gpu.launch with a 1-D grid of `blocks` and a block of `threads` x
/// `threadsY`; the builder is left inside its body, before the terminator.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads, int64_t threadsY = 1);

/// The type of a workgroup (shared memory) buffer of `element`s of
/// `shape`, for a gpu.launch's or a gpu.func's workgroup attribution.
MemRefType workgroupType(MLIRContext *context, ArrayRef<int64_t> shape,
                         Type element);

/// One block per row of `rowLength` elements (a power of two of threads,
/// a warp to a full block), over rows indexed by `rowRanges`: the launch,
/// the thread index and the row's indices. The builder is left inside.
struct RowLaunch {
  gpu::LaunchOp launch;
  Value tid;
  SmallVector<Value> rowIvs;
  int64_t threads;
  /// The loop indices of element `j` of the row: rowIvs, then `j`
  /// delinearized over `rowShape` (the row's own loop ranges).
  SmallVector<Value> at(OpBuilder &b, Location loc, Value j,
                        ArrayRef<int64_t> rowShape) const;
};
RowLaunch createRowLaunch(OpBuilder &b, Location loc,
                          ArrayRef<int64_t> rowRanges, int64_t rowLength);

/// blockIdx.x * `blockSize` + threadIdx.x in `launch`: the thread's index
/// in the grid, counted along x.
Value globalThreadIndex(OpBuilder &b, Location loc, gpu::LaunchOp launch,
                        int64_t blockSize);

/// A 1-D launch over `total` points: threadsFor(total) threads per block,
/// at most kMaxBlocks blocks, each thread taking the points of a
/// grid-stride loop (a bounds guard where the grid covers every point);
/// `body` gets the flat index. The builder is left inside the launch.
gpu::LaunchOp createGridStrideLaunch(
    OpBuilder &b, Location loc, int64_t total,
    function_ref<void(OpBuilder &, Value)> body);
/// Threads per block for `total` points: a multiple of a warp, at most
/// kThreadsPerBlock.
int64_t threadsFor(int64_t total);

/// An scf.if without else on `condition`, `body` building its then-block;
/// the builder is left after the if.
void emitIf(OpBuilder &b, Location loc, Value condition,
            function_ref<void()> body);

/// The place of the thread in a 1-D block of warps: threadIdx.x, its warp
/// (tid / 32) and its lane (tid % 32), created in that order after the
/// index constant 32 (`warpSize`, for lane-strided loops).
struct WarpCoordinates {
  Value tid, warp, lane, warpSize;
};
WarpCoordinates warpCoordinates(OpBuilder &b, Location loc);

/// `v` reduced across the lanes of a warp by a butterfly: at each of
/// `offsets` in turn, a gpu.shuffle xor (width 32) and arith.maximumf
/// (`max`) or arith.addf. Every lane ends with the reduction over the lanes
/// that differ from it only in the offsets' bits: the whole warp for
/// {16, 8, 4, 2, 1}, the 4 lanes of a quad for {1, 2}.
Value xorShuffleReduce(OpBuilder &b, Location loc, Value v,
                       ArrayRef<int32_t> offsets, bool max);
/// The offsets of a butterfly over the whole warp.
constexpr int32_t kWarpButterfly[] = {16, 8, 4, 2, 1};

/// A uniform gpu.all_reduce of `v` over the block (every thread reaches it
/// and gets the result; upstream lowers it to warp shuffles, then a
/// workgroup buffer and barriers across warps).
Value uniformAllReduce(OpBuilder &b, Location loc, Value v,
                       gpu::AllReduceOperation kind);
/// uniformAllReduce of an index value, as i32 (a block-wide min or max of
/// key bounds).
Value uniformAllReduceIndex(OpBuilder &b, Location loc, Value v,
                            gpu::AllReduceOperation kind);

/// A 16-byte aligned vector.load of `type` from `memref` at `indices`
/// (ld.global.v4 or ld.shared.v4 where the vector is 16 bytes), and its
/// store.
Value loadAligned16(OpBuilder &b, Location loc, VectorType type, Value memref,
                    ValueRange indices);
void storeAligned16(OpBuilder &b, Location loc, Value vector, Value memref,
                    ValueRange indices);

/// The gpu.all_reduce kind of a combiner op, if it has one.
std::optional<gpu::AllReduceOperation> getAllReduceKind(Operation *op);

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
                                    SmallVectorImpl<Operation *> &widened);

/// `c`'s combiner on `acc` and `contribution`, in the type of `acc` (f32
/// for a widened combiner, whose operands are extended first).
Value combine(OpBuilder &b, Location loc, const RowCombiner &c, Value acc,
              Value contribution);

/// The buffer `v` is a view of (through view ops).
Value viewRoot(Value v);

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

/// Whether `op` is a row reduction with combiners the row kernel knows
/// (one that may join a chain).
bool isChainableRowReduction(linalg::GenericOp op);
/// The ops a row reduction `r`'s kernel computes in the same launch
/// (ReductionKernels.cpp).
RowChain findRowChain(linalg::LinalgOp r);

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
  /// The vectorized form of buildParallel: several elements per thread with
  /// 16-byte loads and stores; failure when no operand allows it.
  LogicalResult buildVectorized();
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
    /// The loop indices with `parallel` at the parallel loops and
    /// `reduction` at the reduction loops (each in loop order; where
    /// `reduction` is empty, the constant 0 there: an output's indices).
    SmallVector<Value> join(OpBuilder &b, Location loc, ValueRange parallel,
                            ValueRange reduction = {}) const;
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

/// linalg.softmax over the last dimension: one block per row
/// (SoftmaxKernel.cpp).
LogicalResult buildSoftmax(linalg::SoftmaxOp op);

} // namespace mlir::tp::gpukernels

#endif // TP_CONVERSION_TPTOGPU_KERNELBUILDER_H
