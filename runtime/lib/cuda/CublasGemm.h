//===- CublasGemm.h - Row-major GEMMs with cuBLAS ---------------*- C++ -*-===//
//
// tprt_gemm, tprt_gemm_strided_batched and tprt_gemm_shared_a on the rank's
// stream. cuBLAS is
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
// Shared-A products (tprt_gemm_shared_a: C_i = op(A) op(B_i), the Q/K/V or
// gate/up projections of one activation) are one cublasGemmBatchedEx_64
// over device arrays of pointers, so the products run in one launch and A
// is read from HBM once for all of them (the concurrent tiles of one A
// block hit in L2).
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_CUDA_CUBLASGEMM_H
#define TPRT_CUDA_CUBLASGEMM_H

#include "tprt/tprt.h"

#include <cublas_v2.h>
#include <cuda.h>

#include <vector>

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

  /// `count` products sharing A: c[i] = alpha op(A) op(b[i]) + beta c[i].
  /// `b` and `c` are host arrays of device pointers; count 1 is gemm().
  tprt_status gemmSharedA(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                          int64_t n, int64_t k, float alpha, const void *a,
                          int64_t lda, const void *const *b, int64_t ldb,
                          float beta, void *const *c, int64_t ldc, int count);

private:
  tprt_status initialize();
  /// What one cuBLAS call needs: the data and compute types of a dtype,
  /// and alpha and beta as cuBLAS reads them (doubles for f64).
  struct Setup {
    cudaDataType type;
    cublasComputeType_t compute;
    float f[2];
    double d[2];
    bool doubleScalars;
    const void *alpha() const {
      return doubleScalars ? static_cast<const void *>(&d[0]) : &f[0];
    }
    const void *beta() const {
      return doubleScalars ? static_cast<const void *>(&d[1]) : &f[1];
    }
  };
  /// Fills `setup` for `dtype`, makes the device current and creates the
  /// handle at the first call.
  tprt_status prepare(tprt_dtype dtype, float alpha, float beta,
                      Setup &setup);

  CUstream stream = nullptr;
  cublasHandle_t handle = nullptr;
  bool allowTf32 = false;
  /// gemmSharedA's pointer arrays in device memory: [B_0.., A.., C_0..],
  /// 3 x count entries, grown when needed, freed by the destructor.
  CUdeviceptr pointerArrays = 0;
  size_t pointerCapacity = 0; // in pointers
  std::vector<const void *> hostPointers;
};

/// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not
/// supported)"
const char *cublasText(cublasStatus_t status);

} // namespace cuda
} // namespace tprt

#endif // TPRT_CUDA_CUBLASGEMM_H
