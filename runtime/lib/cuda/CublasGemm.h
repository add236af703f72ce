//===- CublasGemm.h - Row-major GEMMs with cuBLAS ---------------*- C++ -*-===//
//
// tprt_gemm and tprt_gemm_strided_batched on the rank's stream. cuBLAS is
// column-major: a row-major C (m x n) is a column-major C^T, so
// C = op(A) op(B) runs as C^T = op(B)^T op(A)^T, passing B first with the
// same transpose flags and leading dimensions, m and n swapped.
//
// Precision: f16 and bf16 inputs and outputs with f32 accumulation
// (CUBLAS_COMPUTE_32F, tensor cores); f32 as plain FP32
// (CUBLAS_COMPUTE_32F) unless TPRT_ALLOW_TF32=1 opts into
// CUBLAS_COMPUTE_32F_FAST_TF32; f64 with CUBLAS_COMPUTE_64F. The 64-bit
// integer entry points (cublasGemmEx_64) take any size.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_CUDA_CUBLASGEMM_H
#define TPRT_CUDA_CUBLASGEMM_H

#include "tprt/tprt.h"

#include <cublas_v2.h>
#include <cuda.h>

namespace tprt {
namespace cuda {

class Cublas {
public:
  Cublas() = default;
  Cublas(const Cublas &) = delete;
  Cublas &operator=(const Cublas &) = delete;
  ~Cublas();

  /// Binds the GEMMs to `stream`. The handle is created at the first GEMM
  /// (cuBLAS initialises the CUDA runtime and reserves workspace, which a
  /// rank that never multiplies does not need).
  void setStream(CUstream rankStream) { stream = rankStream; }

  tprt_status gemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                   int64_t n, int64_t k, float alpha, const void *a,
                   int64_t lda, int64_t strideA, const void *b, int64_t ldb,
                   int64_t strideB, float beta, void *c, int64_t ldc,
                   int64_t strideC, int64_t batch);

private:
  tprt_status initialize();

  CUstream stream = nullptr;
  cublasHandle_t handle = nullptr;
  bool allowTf32 = false;
};

/// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not
/// supported)"
const char *cublasText(cublasStatus_t status);

} // namespace cuda
} // namespace tprt

#endif // TPRT_CUDA_CUBLASGEMM_H
