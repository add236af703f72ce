//===- BufferPlan.h - Static buffers packed by liveness ---------*- C++ -*-===//
//
// The memory plan of a bufferized function: where in one arena each of its
// statically shaped temporary buffers lives, so that buffers whose lifetimes
// do not overlap share bytes. The CPU lowering (tp-plan-buffers) turns the
// plan into one module global per function, allocated once when the model is
// loaded; a GPU lowering could allocate the arena once per rank the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TP_CONVERSION_BUFFERPLAN_H
#define TP_CONVERSION_BUFFERPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <string>

namespace mlir::tp {

/// Packs the `memref.alloc` ops of a function body into one arena.
///
/// A buffer is planned when its alloc is an op of the function's (single)
/// block with a static shape, the identity layout and elements of a known
/// byte size, and none of its views (BufferViewFlowAnalysis) leaves the
/// function through `func.return`. Its lifetime is the interval of block
/// positions from the first to the last top-level op that uses one of its
/// views (a use inside a loop counts as the loop's position); deallocs do
/// not count. Two buffers may share bytes when their intervals are
/// disjoint. Placement is greedy by size (largest first, each at the lowest
/// offset, a multiple of the alignment, that overlaps no placed buffer with
/// an overlapping interval), which reaches the peak of live bytes on
/// interval graphs in the common cases and never exceeds the sum of sizes.
class BufferPlan {
public:
  struct Buffer {
    memref::AllocOp alloc;
    int64_t bytes = 0;
    int64_t offset = 0;           // bytes from the start of the arena
    int64_t alignment = 0;        // of the offset: the plan's, or the alloc's
    unsigned first = 0, last = 0; // block positions of the first and last use
    SmallVector<Operation *> deallocs; // of the buffer or of its views
  };

  /// Plans `fn`'s buffers at offsets that are multiples of `alignment`
  /// (or of an alloc's own larger alignment). The arena must be aligned
  /// to the largest of them.
  explicit BufferPlan(func::FuncOp fn, int64_t alignment = 64);

  ArrayRef<Buffer> buffers() const { return planned; }
  /// The arena: the end of the highest buffer.
  int64_t arenaBytes() const { return arena; }
  /// What separate allocations of the planned buffers would hold at once
  /// when none is freed (the sum of their sizes).
  int64_t totalBytes() const { return total; }
  /// The most bytes live at one block position: no plan is smaller.
  int64_t peakLiveBytes() const { return peak; }
  /// Allocs of the function the plan leaves alone, each with the reason.
  ArrayRef<std::pair<memref::AllocOp, std::string>> skipped() const {
    return unplanned;
  }

private:
  SmallVector<Buffer> planned;
  SmallVector<std::pair<memref::AllocOp, std::string>> unplanned;
  int64_t arena = 0, total = 0, peak = 0;
};

} // namespace mlir::tp

#endif // TP_CONVERSION_BUFFERPLAN_H
