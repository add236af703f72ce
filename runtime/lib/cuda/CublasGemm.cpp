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
  if ((!handle && !pointerArrays) || !currentDevice() ||
      makeCurrent() != TPRT_OK)
    return;
  if (pointerArrays) {
    // The last shared-A GEMM may still read them.
    cuStreamSynchronize(stream);
    cuMemFree(pointerArrays);
  }
  if (handle)
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

tprt_status Cublas::prepare(tprt_dtype dtype, float alpha, float beta,
                            Setup &setup) {
  switch (dtype) {
  case TPRT_F32:
  case TPRT_F16:
  case TPRT_BF16:
  case TPRT_F64:
    break;
  default:
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "dtype %s is not supported (f32, f64, f16 and bf16 are)",
                dtypeName(dtype));
  }
  if (tprt_status status = makeCurrent())
    return status;
  // Before the mapping: initialize() reads TPRT_ALLOW_TF32.
  if (!handle)
    if (tprt_status status = initialize())
      return status;
  setup.f[0] = alpha;
  setup.f[1] = beta;
  setup.d[0] = alpha;
  setup.d[1] = beta;
  setup.compute = CUBLAS_COMPUTE_32F;
  setup.doubleScalars = false;
  switch (dtype) {
  case TPRT_F32:
    setup.type = CUDA_R_32F;
    setup.compute =
        allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    break;
  case TPRT_F16:
    setup.type = CUDA_R_16F;
    break;
  case TPRT_BF16:
    setup.type = CUDA_R_16BF;
    break;
  default: // TPRT_F64
    setup.type = CUDA_R_64F;
    setup.compute = CUBLAS_COMPUTE_64F;
    setup.doubleScalars = true;
    break;
  }
  return TPRT_OK;
}

tprt_status Cublas::gemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                         int64_t n, int64_t k, float alpha, const void *a,
                         int64_t lda, int64_t strideA, const void *b,
                         int64_t ldb, int64_t strideB, float beta, void *c,
                         int64_t ldc, int64_t strideC, int64_t batch) {
  Setup setup;
  if (tprt_status status = prepare(dtype, alpha, beta, setup))
    return status;
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLAS rejects leading dimensions below the rows of the column-major
  // view even when the matrix is empty.
  cublasStatus_t status;
  if (batch == 1)
    status = cublasGemmEx_64(handle, opB, opA, n, m, k, setup.alpha(), b,
                             setup.type, ldb, a, setup.type, lda, setup.beta(),
                             c, setup.type, ldc, setup.compute,
                             CUBLAS_GEMM_DEFAULT);
  else
    status = cublasGemmStridedBatchedEx_64(
        handle, opB, opA, n, m, k, setup.alpha(), b, setup.type, ldb, strideB,
        a, setup.type, lda, strideA, setup.beta(), c, setup.type, ldc, strideC,
        batch, setup.compute, CUBLAS_GEMM_DEFAULT);
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

tprt_status Cublas::gemmSharedA(tprt_dtype dtype, bool transA, bool transB,
                                int64_t m, int64_t n, int64_t k, float alpha,
                                const void *a, int64_t lda,
                                const void *const *b, int64_t ldb, float beta,
                                void *const *c, int64_t ldc, int count) {
  if (count == 1)
    return gemm(dtype, transA, transB, m, n, k, alpha, a, lda, 0, b[0], ldb, 0,
                beta, c[0], ldc, 0, 1);
  Setup setup;
  if (tprt_status status = prepare(dtype, alpha, beta, setup))
    return status;

  // The pointer arrays in cuBLAS's operand order (row-major trick: its
  // first operand is our B_i, its second our A): [B_0..B_{count-1},
  // A x count, C_0..C_{count-1}].
  size_t entries = 3 * size_t(count);
  hostPointers.resize(entries);
  for (int i = 0; i < count; ++i) {
    hostPointers[size_t(i)] = b[i];
    hostPointers[size_t(count + i)] = a;
    hostPointers[size_t(2 * count + i)] = c[i];
  }
  if (entries > pointerCapacity) {
    if (pointerArrays) {
      // The previous shared-A GEMM may still read the old arrays.
      cuStreamSynchronize(stream);
      cuMemFree(pointerArrays);
    }
    pointerArrays = 0;
    pointerCapacity = 0;
    size_t capacity = entries < 24 ? 24 : entries;
    if (tprt_status status =
            check(cuMemAlloc(&pointerArrays, capacity * sizeof(void *)),
                  "cuMemAlloc"))
      return status;
    pointerCapacity = capacity;
  }
  // hostPointers is pageable memory: cuMemcpyHtoDAsync stages a pageable
  // source before it returns, so the vector may be rewritten by the next
  // call. The copy is ordered on the rank's stream after the GEMM of the
  // previous call, which has then finished reading the device arrays, so
  // reusing them without a synchronization is safe.
  if (tprt_status status =
          check(cuMemcpyHtoDAsync(pointerArrays, hostPointers.data(),
                                  entries * sizeof(void *), stream),
                "cuMemcpyHtoDAsync"))
    return status;
  auto *device = reinterpret_cast<void **>(pointerArrays);
  const void *const *firstArray = device;                // our B_i
  const void *const *secondArray = device + count;       // our A
  void *const *outputArray = device + 2 * size_t(count); // our C_i

  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t status = cublasGemmBatchedEx_64(
      handle, opB, opA, n, m, k, setup.alpha(), firstArray, setup.type, ldb,
      secondArray, setup.type, lda, setup.beta(), outputArray, setup.type, ldc,
      count, setup.compute, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    return fail(status == CUBLAS_STATUS_ALLOC_FAILED ? TPRT_ERROR_OUT_OF_MEMORY
                                                     : TPRT_ERROR_BACKEND,
                "cublasGemmBatchedEx of %lldx%lldx%lld (%s, %d products "
                "sharing A) failed: %s",
                static_cast<long long>(m), static_cast<long long>(n),
                static_cast<long long>(k), dtypeName(dtype), count,
                cublasText(status));
  return TPRT_OK;
}
