//===- Layout.cpp - Shapes and block transposes for collectives -----------===//
//
// See Layout.h.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include <cstring>

using namespace tprt;

int64_t tprt::shapeProduct(const int64_t *shape, int begin, int end) {
  int64_t product = 1;
  for (int i = begin; i < end; ++i)
    product *= shape[i];
  return product;
}

void tprt::transposeBlocks(const void *src, void *dst, size_t rows, size_t cols,
                           size_t blockBytes) {
  const char *in = static_cast<const char *>(src);
  char *out = static_cast<char *>(dst);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c)
      std::memcpy(out + (c * rows + r) * blockBytes,
                  in + (r * cols + c) * blockBytes, blockBytes);
}
