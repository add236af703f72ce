//===- BufferPlan.cpp - Static buffers packed by liveness -----------------===//
//
// Algorithm (BufferPlan.h):
//  1. Number the ops of the function's block 0, 1, 2, ...
//  2. Candidates: the block's memref.alloc ops with a static shape, the
//     identity layout and elements of a known size (floats, integers,
//     index: 8 bytes); i1 takes a byte, as the LLVM lowering stores it.
//  3. For each, every view BufferViewFlowAnalysis finds (casts, subviews,
//     reshapes, loop-carried values) and every use of those: the use's
//     ancestor op in the block gives a position. A view returned by the
//     function makes the buffer escape (not planned). The lifetime is
//     [first use, last use], deallocs excluded.
//  4. Placement, largest buffer first (ties: earlier first use, then
//     program order): the lowest aligned offset at which the buffer
//     overlaps, in bytes, none of the placed buffers whose lifetimes overlap
//     its own. Candidate offsets are 0 and the ends of those buffers
//     (aligned), so each placement is quadratic in the number of buffers at
//     most (hundreds for a model).
//  5. The peak of live bytes (a sweep over positions) is the lower bound
//     the report compares the arena with.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/BufferPlan.h"

#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace mlir::tp;

/// Bytes of one element as the LLVM lowering stores it, or 0 when unknown.
static int64_t elementBytes(Type type) {
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
  if (auto complex = dyn_cast<ComplexType>(type))
    return 2 * elementBytes(complex.getElementType());
  return 0;
}

static int64_t alignTo(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

BufferPlan::BufferPlan(func::FuncOp fn, int64_t alignment) {
  if (fn.isExternal())
    return;
  Region &body = fn.getBody();
  if (!body.hasOneBlock()) {
    fn.walk([&](memref::AllocOp alloc) {
      unplanned.push_back({alloc, "the function has more than one block"});
    });
    return;
  }
  Block &block = body.front();
  DenseMap<Operation *, unsigned> position;
  unsigned next = 0;
  for (Operation &op : block)
    position[&op] = next++;

  BufferViewFlowAnalysis views(fn);
  for (Operation &op : block) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc)
      continue;
    MemRefType type = alloc.getType();
    int64_t elemBytes = elementBytes(type.getElementType());
    if (!type.hasStaticShape()) {
      unplanned.push_back({alloc, "dynamic shape"});
      continue;
    }
    if (!type.getLayout().isIdentity()) {
      unplanned.push_back({alloc, "not the identity layout"});
      continue;
    }
    if (elemBytes == 0) {
      unplanned.push_back({alloc, "element type of unknown size"});
      continue;
    }
    Buffer buffer;
    buffer.alloc = alloc;
    buffer.bytes = type.getNumElements() * elemBytes;
    buffer.alignment =
        std::max<int64_t>(alignment, alloc.getAlignment().value_or(1));
    bool escapes = false, used = false;
    unsigned first = ~0u, last = 0;
    for (Value view : views.resolve(alloc.getResult())) {
      for (Operation *user : view.getUsers()) {
        if (isa<memref::DeallocOp>(user)) {
          buffer.deallocs.push_back(user);
          continue;
        }
        if (isa<func::ReturnOp>(user))
          escapes = true;
        Operation *ancestor = block.findAncestorOpInBlock(*user);
        if (!ancestor)
          continue;
        used = true;
        first = std::min(first, position[ancestor]);
        last = std::max(last, position[ancestor]);
      }
    }
    if (escapes) {
      unplanned.push_back({alloc, "returned by the function"});
      continue;
    }
    if (!used || buffer.bytes == 0)
      continue; // nothing reads or writes it: canonicalization's to remove
    buffer.first = first;
    buffer.last = last;
    planned.push_back(buffer);
  }

  // Placement: largest first.
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < planned.size(); ++i)
    order.push_back(i);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    if (planned[a].bytes != planned[b].bytes)
      return planned[a].bytes > planned[b].bytes;
    if (planned[a].first != planned[b].first)
      return planned[a].first < planned[b].first;
    return a < b;
  });
  SmallVector<unsigned> placed;
  for (unsigned i : order) {
    Buffer &buffer = planned[i];
    SmallVector<const Buffer *> live;
    for (unsigned j : placed)
      if (planned[j].first <= buffer.last && buffer.first <= planned[j].last)
        live.push_back(&planned[j]);
    SmallVector<int64_t> candidates = {0};
    for (const Buffer *other : live)
      candidates.push_back(
          alignTo(other->offset + other->bytes, buffer.alignment));
    llvm::sort(candidates);
    for (int64_t offset : candidates) {
      bool fits = llvm::none_of(live, [&](const Buffer *other) {
        return offset < other->offset + other->bytes &&
               other->offset < offset + buffer.bytes;
      });
      if (fits) {
        buffer.offset = offset;
        break;
      }
    }
    placed.push_back(i);
    arena = std::max(arena, buffer.offset + buffer.bytes);
    total += buffer.bytes;
  }

  // The peak of live bytes: +bytes at the first use, -bytes after the last.
  std::map<unsigned, int64_t> delta;
  for (const Buffer &buffer : planned) {
    delta[buffer.first] += buffer.bytes;
    delta[buffer.last + 1] -= buffer.bytes;
  }
  int64_t live = 0;
  for (auto &[at, change] : delta) {
    live += change;
    peak = std::max(peak, live);
  }
}
