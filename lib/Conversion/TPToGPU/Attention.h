//===- Attention.h - attention matched on tensors, and its kernels -*- C++ -*-//
//
// What tp-fuse-attention's matcher (AttentionMatch.cpp) finds and its
// generators (AttentionCudaCore.cpp: loops and one warp per query row;
// AttentionTensorCore.cpp: mma.sync tiles) build from it. The pass itself
// (FuseAttention.cpp) chooses among them by the cost model and replaces
// the match (docs/passes/lower-gpu.md, "Fused attention").
//
// Kernel dimensions: o_0..o_{n-1} are the indices of the output O, j the
// key and d the head dimension of Q.K; every tensor the kernel reads is an
// Access, its source (the value where views stop) and its indices as
// affine expressions over those dimensions.
//
//===----------------------------------------------------------------------===//

#ifndef TP_CONVERSION_TPTOGPU_ATTENTION_H
#define TP_CONVERSION_TPTOGPU_ATTENTION_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tp::attention {

using Exprs = SmallVector<AffineExpr>;

/// A tensor the kernel reads: `source` at indices `idx` (affine expressions
/// over the kernel dimensions). When `producer` is set, `source` is
/// computed from indices and constants alone (a mask made of iota
/// compares, broadcast): the kernel evaluates the producer's body at loop
/// indices `loops` instead of reading a buffer, its inputs through
/// `inputs`.
struct Access {
  Value source;
  Exprs idx;
  mutable linalg::GenericOp producer;
  Exprs loops;
  std::vector<Access> inputs;
};

/// One elementwise op of the score chain: `scoreInput` is the operand that
/// carries the scores, the others are read through `sides`.
struct ChainOp {
  mutable linalg::GenericOp op;
  unsigned scoreInput;
  SmallVector<std::pair<unsigned, Access>> sides; // input number, access
};

/// The keys a row can see: lo <= j < hi, affine in the row's indices
/// o_0..o_{n-1} (absent: unbounded on that side). Derived from masks that
/// set the other scores to -inf (a causal or sliding-window compare of
/// indices); the kernels skip the keys outside.
struct KeyRange {
  std::optional<AffineExpr> lo, hi;
};

struct Match {
  mutable linalg::LinalgOp pv;
  unsigned numO;   // rank of O
  unsigned eDim;   // the value column among O's dimensions
  int64_t keys;    // extent of j
  int64_t headDim; // extent of d
  Access q, k, v;
  Exprs scoreIdx; // the score space's indices over the kernel dims
  Type scoreType; // element type of C (the chain's first input)
  SmallVector<ChainOp> chain;
  SetVector<Operation *> fused; // ops that die with the replacement
  KeyRange range;
  /// Per O dimension: K and V read it in blocks of this many consecutive
  /// values (grouped-query heads: the KV head is h floordiv g), 1 where not
  /// (rowParts).
  SmallVector<int64_t> kvGroup;
};

/// Matches the attention whose product with V is `pv`. Success: a match.
/// Failure with an empty `why`: not attention (no division by a row sum
/// over the product's keys). Failure with a reason: attention that cannot
/// be fused.
FailureOr<Match> matchAttention(linalg::LinalgOp pv, std::string &why);

/// Whether `pv` is a candidate (a contraction with one reduction
/// dimension and two inputs).
bool isCandidate(linalg::LinalgOp op);

/// The value column's extent (O's size along eDim).
int64_t valueDim(const Match &m);
/// O's rows: every index of O but the value column.
int64_t rowCount(const Match &m);
/// One part of O's row index as the kernels enumerate rows: dimension `dim`
/// gets `value * stride` from it (value in [0, extent)). `outer`: a part K
/// and V depend on (the grid's heads), else a query part.
struct RowPart {
  unsigned dim;
  int64_t extent, stride;
  bool outer;
};
/// O's row dimensions, slowest first: the parts K and V depend on (batch,
/// kv head), then the others but the value column (the queries). A
/// dimension K and V read only in blocks of g consecutive values (kvGroup:
/// grouped-query heads after torch-mlir's repeat_kv, K's head h floordiv
/// g) is two parts, its block (outer, stride g) and the position in it
/// (inner, the slowest of the queries), so that the g query heads of one KV
/// head are rows of one grid head and share its K and V tiles.
SmallVector<RowPart> rowParts(const Match &m);
/// O's rows split as the kernels launch them: the product of the outer
/// parts (the grid's heads) and of the inner ones (the queries). Their
/// product is rowCount.
std::pair<int64_t, int64_t> headsAndQueries(const Match &m);
/// The attention flops over the keys the range keeps: 2 (d + e) per kept
/// (row, key) pair (the Q.K and the P.V products), counted exactly.
double attentionFlops(const Match &m);

//===----------------------------------------------------------------------===//
// Emission
//===----------------------------------------------------------------------===//

Value indexConstant(OpBuilder &b, Location loc, int64_t v);
Value f32Constant(OpBuilder &b, Location loc, double v);
/// `v` extended or truncated to the float type `to`.
Value castFloat(OpBuilder &b, Location loc, Value v, Type to);

/// The GPU kernels' grid: blockIdx.y is a head (of headsAndQueries'),
/// blockIdx.x a block of `queriesPerBlock` of its queries, and warp `warp`
/// of the block takes `queriesPerWarp` consecutive ones. The head and the
/// warp's first query (blockIdx.x * queriesPerBlock + warp *
/// queriesPerWarp).
struct WarpQueries {
  Value head, first;
};
WarpQueries warpQueries(OpBuilder &b, Location loc, Value warp,
                        int64_t queriesPerBlock, int64_t queriesPerWarp);

/// What every generator shares: reading the sources through their
/// accesses, the cloned score chain, the key range and the online softmax
/// update; for the GPU kernels, a warp's query rows and the slots of the
/// K and V tiles they stage. `dims` are o_0..o_{n-1}, j, d (null where not defined).
class Emitter {
public:
  Emitter(const Match &m, ArrayRef<Value> sources, ArrayRef<Value> buffers,
          Value out);

  const Match &match() const { return m; }
  Value output() const { return out; }
  Value buffer(const Access &a) const { return bufferOf.lookup(a.source); }

  /// The indices of `a` at `dims`.
  SmallVector<Value> indices(OpBuilder &b, Location loc, const Access &a,
                             ArrayRef<Value> dims);
  Value load(OpBuilder &b, Location loc, const Access &a, ArrayRef<Value> dims);
  /// The score at (o, j) from the f32 dot product: C's type, the cloned
  /// chain, then f32.
  Value score(OpBuilder &b, Location loc, Value dot, ArrayRef<Value> dims);
  /// The key range of the row at `dims` clamped to [0, keys): (lo, hi) as
  /// index values.
  std::pair<Value, Value> keyBounds(OpBuilder &b, Location loc,
                                    ArrayRef<Value> dims);
  /// Row `row` of O to its indices (the value column, j and d left null):
  /// rowParts' order, outer parts slowest, so that neighbouring rows share
  /// keys.
  SmallVector<Value> rowDims(OpBuilder &b, Location loc, Value row);
  /// Query `query` of head `head` (the GPU kernels' grid: blockIdx.y over
  /// headsAndQueries' heads, query blocks along x): whether it exists
  /// (query <= lastQuery, the index constant queries - 1) and the rowDims
  /// of its row of O. A query past the end takes the last query's row: the
  /// kernel computes it and does not store it, so that every warp of the
  /// block reaches every barrier.
  struct QueryRow {
    Value valid;
    SmallVector<Value> dims;
  };
  QueryRow queryRow(OpBuilder &b, Location loc, Value head, Value query,
                    Value lastQuery);
  /// Slot `flat` of a K or V tile staging keys [j0, j0 + tile) in
  /// workgroup memory, `perRow` slots to a key and `width` elements to a
  /// slot: the tile row r = flat / perRow, the column c = (flat % perRow) *
  /// width, and `dims` with the key j0 + r, clamped to the last key (a tile
  /// past the end reads it again; the kernels mask those keys).
  struct TileSlot {
    Value row, col;
    SmallVector<Value> at;
  };
  TileSlot tileSlot(OpBuilder &b, Location loc, ArrayRef<Value> dims,
                    Value flat, Value j0, int64_t perRow, int64_t width);
  /// The online update of (max, sum) with score `s`: returns (max', sum',
  /// rescale, p).
  std::array<Value, 4> online(OpBuilder &b, Location loc, Value mx, Value l,
                              Value s);

private:
  const Match &m;
  Value out;
  DenseMap<Value, Value> bufferOf;
};

/// The kernel a GPU generator builds: a gpu.func (its arguments the
/// sources' buffers and the output), and the launch geometry the
/// generator chooses.
struct KernelFrame {
  gpu::GPUFuncOp fn;
  std::array<int64_t, 3> grid = {1, 1, 1}, block = {1, 1, 1};
  /// A workgroup buffer of `type` (element type and shape; the address
  /// space is added), 16-byte aligned.
  Value workgroup(OpBuilder &b, Location loc, Type element,
                  ArrayRef<int64_t> shape);
};

/// The recurrence in host loops (target=loops, the CPU numerics check).
void emitLoops(Emitter &e, OpBuilder &b, Location loc);
/// One warp per query row on CUDA cores (8 rows per block of 256 threads;
/// the fallback and reference kernel), into `k.fn` (the builder at its
/// entry block's start).
void emitWarpPerRow(Emitter &e, KernelFrame &k, OpBuilder &b, Location loc);

/// Whether the tensor-core kernel takes `m`; else `why` says what it lacks.
bool tensorCoreEligible(const Match &m, std::string &why);
/// Flash attention on tensor cores (mma.sync m16n8k16, K and V tiles in
/// workgroup memory, online softmax in registers); `m` must be eligible.
void emitTensorCore(Emitter &e, KernelFrame &k, OpBuilder &b, Location loc);

} // namespace mlir::tp::attention

#endif // TP_CONVERSION_TPTOGPU_ATTENTION_H
