//===- HostGemm.h - Matrix products on the host -----------------*- C++ -*-===//
//
// The CPU implementation of tprt_gemm: CBLAS for f32 and f64 (OpenBLAS),
// f16 and bf16 widened to f32, multiplied, and rounded back.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_HOSTGEMM_H
#define TPRT_COMMON_HOSTGEMM_H

#include "tprt/tprt.h"

#include <cstdint>

namespace tprt {

/// Row-major C = alpha * op(A) * op(B) + beta * C with checked arguments.
tprt_status hostGemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                     int64_t n, int64_t k, float alpha, const void *a,
                     int64_t lda, const void *b, int64_t ldb, float beta,
                     void *c, int64_t ldc);

} // namespace tprt

#endif // TPRT_COMMON_HOSTGEMM_H
