//===- KernelBuilder.h - one linalg op on buffers to a gpu.launch -*- C++ -*-//
//
// What the kernel families of tp-linalg-to-gpu share: launch geometry
// helpers, the reduction combiners a gpu.all_reduce knows, and
// KernelBuilder, which turns one linalg op on buffers into one gpu.launch
// (KernelBuilder.cpp: the region cloned at loop indices, the dispatch to a
// family). The families: ElementwiseKernels.cpp (parallel ops),
// ReductionKernels.cpp (row reductions and their chains, column
// reductions, the serial fallback), SoftmaxKernel.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TP_CONVERSION_TPTOGPU_KERNELBUILDER_H
#define TP_CONVERSION_TPTOGPU_KERNELBUILDER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
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

/// A gpu.launch with a 1-D grid and block; the builder is left inside its
/// body, before the terminator.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads);

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
                          ArrayRef<int64_t> rowRanges, int64_t rowLength);

/// A grid-stride loop over `total` points; `body` gets the flat index.
void gridStrideLoop(OpBuilder &b, Location loc, gpu::LaunchOp launch,
                    int64_t total, int64_t blocks, int64_t threads,
                    function_ref<void(OpBuilder &, Value)> body);
/// Threads per block for `total` points: a multiple of a warp, at most
/// kThreadsPerBlock.
int64_t threadsFor(int64_t total);

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
