//===- RuntimePackTest.cpp - libtprt's pack/unpack helpers ------*- C++ -*-===//
//
// transposeBlocks() is how collectives along non-leading dimensions reorder
// their buffers (runtime/lib/common/Layout.h); these tests replay the
// all_gather, reduce_scatter and all_to_all packings on small tensors.
//
//===----------------------------------------------------------------------===//

#include "common/Layout.h"

#include "gtest/gtest.h"

#include <numeric>
#include <vector>

using namespace tprt;

namespace {

TEST(RuntimePack, ShapeProduct) {
  const int64_t shape[] = {3, 8, 5};
  EXPECT_EQ(shapeProduct(shape, 0, 0), 1);
  EXPECT_EQ(shapeProduct(shape, 0, 1), 3);
  EXPECT_EQ(shapeProduct(shape, 1, 3), 40);
  EXPECT_EQ(shapeProduct(shape, 0, 3), 120);
}

TEST(RuntimePack, TransposeBlocks) {
  // 2 x 3 blocks of two ints: [[a b c] [d e f]] -> [[a d] [b e] [c f]].
  std::vector<int> src = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
  std::vector<int> dst(src.size());
  transposeBlocks(src.data(), dst.data(), 2, 3, 2 * sizeof(int));
  EXPECT_EQ(dst, (std::vector<int>{0, 1, 10, 11, 2, 3, 12, 13, 4, 5, 14, 15}));
  std::vector<int> back(src.size());
  transposeBlocks(dst.data(), back.data(), 3, 2, 2 * sizeof(int));
  EXPECT_EQ(back, src);
}

TEST(RuntimePack, AllGatherAlongMiddleDimension) {
  // Three members each hold [2, 2, 3] (member m's element = 100 m + i);
  // gathering along dim 1 gives [2, 6, 3] with the members' blocks side by
  // side in each of the 2 outer rows.
  const int p = 3, outer = 2, block = 2 * 3;
  std::vector<int> gathered(p * outer * block); // as the backend returns it
  for (int m = 0; m < p; ++m)
    for (int i = 0; i < outer * block; ++i)
      gathered[m * outer * block + i] = 100 * m + i;
  std::vector<int> out(gathered.size());
  transposeBlocks(gathered.data(), out.data(), p, outer, block * sizeof(int));
  for (int o = 0; o < outer; ++o)
    for (int m = 0; m < p; ++m)
      for (int j = 0; j < block; ++j)
        EXPECT_EQ(out[(o * p + m) * block + j], 100 * m + o * block + j);
}

TEST(RuntimePack, ReduceScatterPacksBlocksByDestination) {
  // in [2, 4] scattered along dim 1 over 2 members: member j's block is
  // columns 2j and 2j+1 of both rows.
  std::vector<int> in = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<int> packed(in.size());
  transposeBlocks(in.data(), packed.data(), 2, 2, 2 * sizeof(int));
  EXPECT_EQ(packed, (std::vector<int>{0, 1, 4, 5, 2, 3, 6, 7}));
}

TEST(RuntimePack, ZeroSizedBlocks) {
  int src = 7, dst = 9;
  transposeBlocks(&src, &dst, 3, 4, 0);
  EXPECT_EQ(dst, 9);
}

} // namespace
