//===- Layout.h - Shapes and block transposes for collectives ---*- C++ -*-===//
//
// The backends move contiguous blocks in group order; a collective along a
// non-leading dimension first packs its buffer into that order or unpacks
// the result from it. With a row-major tensor viewed as [outer, d, inner],
// both are a transpose of the two leading axes of a 3-D array of blocks:
//
//   all_gather along d:      gathered [p][outer][blk] -> out [outer][p][blk]
//   reduce_scatter along d:  in [outer][p][blk]       -> packed [p][outer][blk]
//   all_to_all: pack along split_dim, unpack along concat_dim
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_LAYOUT_H
#define TPRT_COMMON_LAYOUT_H

#include <cstddef>
#include <cstdint>

namespace tprt {

/// Product of shape[begin, end); 1 for an empty range.
int64_t shapeProduct(const int64_t *shape, int begin, int end);

/// Views `src` as rows x cols blocks of blockBytes bytes each, row-major, and
/// writes its transpose to `dst` (cols x rows blocks): dst[c][r] = src[r][c].
/// The buffers must not overlap.
void transposeBlocks(const void *src, void *dst, size_t rows, size_t cols,
                     size_t blockBytes);

} // namespace tprt

#endif // TPRT_COMMON_LAYOUT_H
