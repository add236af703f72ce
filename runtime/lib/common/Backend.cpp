//===- Backend.cpp - Defaults of the Backend interface --------------------===//
//
// The host versions of the hooks of Backend.h, shared by the CPU backends
// and compiled into libtprt_cuda.so as the base of the GPU backend. The
// factory that maps backend names to implementations is BackendFactory.cpp.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include "DType.h"
#include "Error.h"
#include "HostGemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace tprt;

Communicator::~Communicator() = default;

Backend::~Backend() = default;

tprt_status Backend::gemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                          int64_t n, int64_t k, float alpha, const void *a,
                          int64_t lda, const void *b, int64_t ldb, float beta,
                          void *c, int64_t ldc) {
  return hostGemm(dtype, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta,
                  c, ldc);
}

tprt_status Backend::batchedGemm(tprt_dtype dtype, bool transA, bool transB,
                                 int64_t m, int64_t n, int64_t k, float alpha,
                                 const void *a, int64_t lda, int64_t strideA,
                                 const void *b, int64_t ldb, int64_t strideB,
                                 float beta, void *c, int64_t ldc,
                                 int64_t strideC, int64_t batch) {
  size_t es = dtypeSize(dtype);
  for (int64_t i = 0; i < batch; ++i)
    if (tprt_status status =
            gemm(dtype, transA, transB, m, n, k, alpha,
                 static_cast<const char *>(a) + size_t(i * strideA) * es, lda,
                 static_cast<const char *>(b) + size_t(i * strideB) * es, ldb,
                 beta, static_cast<char *>(c) + size_t(i * strideC) * es, ldc))
      return status;
  return TPRT_OK;
}

tprt_status Backend::gemmMixed(tprt_dtype abType, tprt_dtype cType,
                               bool transA, bool transB, int64_t m, int64_t n,
                               int64_t k, float alpha, const void *a,
                               int64_t lda, int64_t strideA, const void *b,
                               int64_t ldb, int64_t strideB, float beta,
                               void *c, int64_t ldc, int64_t strideC,
                               int64_t batch) {
  size_t abBytes = dtypeSize(abType), cBytes = dtypeSize(cType);
  for (int64_t i = 0; i < batch; ++i)
    if (tprt_status status = hostGemmWidened(
            abType, cType, transA, transB, m, n, k, alpha,
            static_cast<const char *>(a) + size_t(i * strideA) * abBytes, lda,
            static_cast<const char *>(b) + size_t(i * strideB) * abBytes, ldb,
            beta, static_cast<char *>(c) + size_t(i * strideC) * cBytes, ldc))
      return status;
  return TPRT_OK;
}

tprt_status Backend::sharedAGemm(tprt_dtype dtype, bool transA, bool transB,
                                 int64_t m, int64_t n, int64_t k, float alpha,
                                 const void *a, int64_t lda,
                                 const void *const *b, int64_t ldb, float beta,
                                 void *const *c, int64_t ldc, int count) {
  for (int i = 0; i < count; ++i)
    if (tprt_status status = gemm(dtype, transA, transB, m, n, k, alpha, a, lda,
                                  b[i], ldb, beta, c[i], ldc))
      return status;
  return TPRT_OK;
}

tprt_status Backend::groupedGemm(tprt_dtype dtype, bool transB, int groups,
                                 const int64_t *rows, int64_t n, int64_t k,
                                 float alpha, const void *a, int64_t lda,
                                 const void *b, int64_t ldb, int64_t strideB,
                                 float beta, void *c, int64_t ldc) {
  size_t es = dtypeSize(dtype);
  int64_t first = 0; // the first row of group g
  for (int g = 0; g < groups; ++g) {
    int64_t m = rows[g];
    if (m > 0)
      if (tprt_status status =
              gemm(dtype, false, transB, m, n, k, alpha,
                   static_cast<const char *>(a) + size_t(first * lda) * es,
                   lda,
                   static_cast<const char *>(b) + size_t(g * strideB) * es,
                   ldb, beta,
                   static_cast<char *>(c) + size_t(first * ldc) * es, ldc))
        return status;
    first += m;
  }
  return TPRT_OK;
}

tprt_status Backend::gemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                                  int64_t m, int64_t n, int64_t k,
                                  const void *a, int64_t lda, const void *b,
                                  int64_t ldb, const void *addend,
                                  int64_t ldAddend, const void *bias,
                                  int activation, void *c, int64_t ldc) {
  return hostGemmEpilogue(dtype, transA, transB, m, n, k, a, lda, b, ldb,
                          addend, ldAddend, bias, activation, c, ldc);
}

tprt_status Backend::allocate(size_t bytes, void **out) {
  if (bytes == 0) {
    *out = nullptr;
    return TPRT_OK;
  }
  const size_t alignment = 64;
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  if (rounded < bytes)
    return fail(TPRT_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
  void *ptr = std::aligned_alloc(alignment, rounded);
  if (!ptr)
    return fail(TPRT_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
  *out = ptr;
  return TPRT_OK;
}

void Backend::release(void *ptr) { std::free(ptr); }

tprt_status Backend::copyBytes(void *dst, const void *src, size_t bytes) {
  if (bytes && dst != src)
    std::memmove(dst, src, bytes);
  return TPRT_OK;
}

tprt_status Backend::copy2D(void *dst, size_t dstPitch, const void *src,
                            size_t srcPitch, size_t width, size_t height) {
  char *out = static_cast<char *>(dst);
  const char *in = static_cast<const char *>(src);
  for (size_t row = 0; row < height; ++row)
    std::memcpy(out + row * dstPitch, in + row * srcPitch, width);
  return TPRT_OK;
}

tprt_status Backend::allGatherHost(Communicator &comm, const void *in,
                                   void *out, size_t bytes) {
  return allGather(comm, in, out, bytes);
}

void Backend::timerBegin(TimerMark &mark) {
  mark.host = std::chrono::steady_clock::now();
  mark.slot = -1;
}

void Backend::timerEnd(TimerMark &mark, double *accumulator) {
  *accumulator += std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - mark.host)
                      .count();
}

std::string Backend::hostName() const {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return "localhost";
  return name;
}

tprt_status tprt::transposeBlocks(Backend &backend, const void *src, void *dst,
                                  size_t rows, size_t cols, size_t blockBytes) {
  // dst[c][r] = src[r][c]. One 2-D copy per source column (rows blocks,
  // srcPitch cols blocks, dstPitch one block) or per source row, whichever
  // is fewer.
  const char *in = static_cast<const char *>(src);
  char *out = static_cast<char *>(dst);
  if (rows == 0 || cols == 0 || blockBytes == 0)
    return TPRT_OK;
  if (cols <= rows) {
    for (size_t c = 0; c < cols; ++c)
      if (tprt_status status = backend.copy2D(
              out + c * rows * blockBytes, blockBytes, in + c * blockBytes,
              cols * blockBytes, blockBytes, rows))
        return status;
  } else {
    for (size_t r = 0; r < rows; ++r)
      if (tprt_status status = backend.copy2D(
              out + r * blockBytes, rows * blockBytes,
              in + r * cols * blockBytes, blockBytes, blockBytes, cols))
        return status;
  }
  return TPRT_OK;
}
