//===- HostGemm.h - Matrix products on the host -----------------*- C++ -*-===//
//
// The CPU implementation of tprt_gemm: CBLAS for f32 and f64 (OpenBLAS),
// f16 and bf16 widened to f32 and multiplied, C in f32 (the mixed-precision
// GEMM) or rounded back once.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_HOSTGEMM_H
#define TPRT_COMMON_HOSTGEMM_H

#include "tprt/tprt.h"

#include <cmath>
#include <cstdint>

namespace tprt {

/// Row-major C = alpha * op(A) * op(B) + beta * C with checked arguments.
tprt_status hostGemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                     int64_t n, int64_t k, float alpha, const void *a,
                     int64_t lda, const void *b, int64_t ldb, float beta,
                     void *c, int64_t ldc);

/// Row-major C = alpha * op(A) * op(B) + beta * C with A and B in `abType`
/// (f16 or bf16) and C in `cType` (f32, or `abType`: rounded once), the
/// products summed in f32 by sgemm on widened panels (HostGemm.cpp); the
/// panels live in the calling thread's scratch, which only grows.
tprt_status hostGemmWidened(tprt_dtype abType, tprt_dtype cType, bool transA,
                            bool transB, int64_t m, int64_t n, int64_t k,
                            float alpha, const void *a, int64_t lda,
                            const void *b, int64_t ldb, float beta, void *c,
                            int64_t ldc);

/// Row-major C = act(op(A) op(B) + addend + bias) with checked arguments
/// (see tprt_gemm_epilogue): the product in f32 (f64 for f64) into a dense
/// scratch matrix, then one pass that adds, activates and rounds once.
/// `addend` may equal `c` (with ldAddend == ldc); either may be null.
tprt_status hostGemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                             int64_t m, int64_t n, int64_t k, const void *a,
                             int64_t lda, const void *b, int64_t ldb,
                             const void *addend, int64_t ldAddend,
                             const void *bias, int activation, void *c,
                             int64_t ldc);

/// The activation of a GEMM epilogue (a tprt_activation) on one value,
/// in the precision of T (float for f32, f16 and bf16; double for f64).
template <typename T> inline T applyActivation(int activation, T x) {
  switch (activation) {
  case TPRT_ACTIVATION_RELU:
    return x > T(0) ? x : T(0);
  case TPRT_ACTIVATION_GELU_TANH: {
    const T kSqrt2OverPi = T(0.7978845608028654);
    return T(0.5) * x *
           (T(1) + std::tanh(kSqrt2OverPi * (x + T(0.044715) * x * x * x)));
  }
  default:
    return x;
  }
}

} // namespace tprt

#endif // TPRT_COMMON_HOSTGEMM_H
