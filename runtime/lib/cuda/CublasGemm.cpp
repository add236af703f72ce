//===- CublasGemm.cpp - Row-major GEMMs with cuBLAS -----------------------===//
//
// See CublasGemm.h.
//
//===----------------------------------------------------------------------===//

#include "CublasGemm.h"

#include "CudaDevice.h"
#include "common/DType.h"
#include "common/Error.h"

#include <cstdlib>
#include <cstring>

using namespace tprt;
using namespace tprt::cuda;

const char *cuda::cublasText(cublasStatus_t status) {
  const char *text = cublasGetStatusString(status);
  return text ? text : "unknown cuBLAS status";
}

Cublas::~Cublas() {
  if (handle && currentDevice() && makeCurrent() == TPRT_OK)
    cublasDestroy(handle);
}

tprt_status Cublas::initialize() {
  cublasStatus_t status = cublasCreate(&handle);
  if (status != CUBLAS_STATUS_SUCCESS) {
    handle = nullptr;
    return fail(status == CUBLAS_STATUS_ALLOC_FAILED ? TPRT_ERROR_OUT_OF_MEMORY
                                                     : TPRT_ERROR_BACKEND,
                "cublasCreate failed: %s", cublasText(status));
  }
  status = cublasSetStream(handle, reinterpret_cast<cudaStream_t>(stream));
  if (status != CUBLAS_STATUS_SUCCESS)
    return fail(TPRT_ERROR_BACKEND, "cublasSetStream failed: %s",
                cublasText(status));
  const char *tf32 = std::getenv("TPRT_ALLOW_TF32");
  allowTf32 = tf32 && std::strcmp(tf32, "1") == 0;
  return TPRT_OK;
}

tprt_status Cublas::gemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                         int64_t n, int64_t k, float alpha, const void *a,
                         int64_t lda, int64_t strideA, const void *b,
                         int64_t ldb, int64_t strideB, float beta, void *c,
                         int64_t ldc, int64_t strideC, int64_t batch) {
  cudaDataType type;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  double alpha64 = alpha, beta64 = beta;
  const void *alphaPtr = &alpha, *betaPtr = &beta;
  switch (dtype) {
  case TPRT_F32:
    type = CUDA_R_32F;
    compute = allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    break;
  case TPRT_F16:
    type = CUDA_R_16F;
    break;
  case TPRT_BF16:
    type = CUDA_R_16BF;
    break;
  case TPRT_F64:
    type = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
    alphaPtr = &alpha64;
    betaPtr = &beta64;
    break;
  default:
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "dtype %s is not supported (f32, f64, f16 and bf16 are)",
                dtypeName(dtype));
  }
  if (tprt_status status = makeCurrent())
    return status;
  if (!handle)
    if (tprt_status status = initialize())
      return status;
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLAS rejects leading dimensions below the rows of the column-major
  // view even when the matrix is empty.
  cublasStatus_t status;
  if (batch == 1)
    status = cublasGemmEx_64(handle, opB, opA, n, m, k, alphaPtr, b, type, ldb,
                             a, type, lda, betaPtr, c, type, ldc, compute,
                             CUBLAS_GEMM_DEFAULT);
  else
    status = cublasGemmStridedBatchedEx_64(
        handle, opB, opA, n, m, k, alphaPtr, b, type, ldb, strideB, a, type,
        lda, strideA, betaPtr, c, type, ldc, strideC, batch, compute,
        CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    return fail(status == CUBLAS_STATUS_ALLOC_FAILED ? TPRT_ERROR_OUT_OF_MEMORY
                                                     : TPRT_ERROR_BACKEND,
                "%s of %lldx%lldx%lld (%s, batch %lld) failed: %s",
                batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx",
                static_cast<long long>(m), static_cast<long long>(n),
                static_cast<long long>(k), dtypeName(dtype),
                static_cast<long long>(batch), cublasText(status));
  return TPRT_OK;
}
