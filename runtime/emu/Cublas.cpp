//===- Cublas.cpp - libcublas.so.13 of the emulator (cuda-emu) ------------===//
//
// The cuBLAS calls the runtime makes (runtime/lib/cuda/CublasGemm.cpp),
// served by the host GEMM of the CPU backends (common/HostGemm.h: CBLAS in
// f32/f64, f16 and bf16 widened to f32 and rounded once, or written as f32
// for the mixed-precision CUDA_R_16F/16BF x CUDA_R_32F form), on the emulated
// driver's device memory. The arguments are checked as cuBLAS checks them
// (operations, cublasGemmEx's table of data and compute types, leading
// dimensions, batch counts:
// CUBLAS_STATUS_INVALID_VALUE or CUBLAS_STATUS_NOT_SUPPORTED), and every
// operand's extent as the column-major view spans it (lda * (columns - 1)
// + rows elements, per batch) must lie in one live device buffer; a
// pointer array of cublasGemmBatchedEx is read from device memory, as the
// GPU would. Device pointers are translated to host addresses through the
// emulated driver (tprtEmuHostRange). A failure prints "tprt emulator: <call>: <why>" to stderr
// (the runtime adds the call's shape and status).
//
// cuBLAS is column-major; the host GEMM is row-major: column-major
// C (m x n) = op(A) op(B) is row-major C^T = op(B)^T op(A)^T, so each
// product runs as hostGemm(op(B), op(A)) with the dimensions swapped.
//
//===----------------------------------------------------------------------===//

#include "common/HostGemm.h"

#include <cublas_v2.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define MOCK_EXPORT extern "C" __attribute__((visibility("default")))

// From the emulated driver (Driver.cpp).
extern "C" void *tprtEmuHostRange(const void *ptr, size_t bytes,
                                  char *message, size_t capacity);

namespace {

struct Handle {
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointerMode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t mathMode = CUBLAS_DEFAULT_MATH;
};

cublasStatus_t complain(cublasStatus_t status, const std::string &what) {
  std::fprintf(stderr, "tprt emulator: %s\n", what.c_str());
  std::fflush(stderr);
  return status;
}

/// The element types of a GEMM (A and B, C) and how to read its scalars.
struct Types {
  tprt_dtype dtype;  // A and B
  size_t bytes;
  tprt_dtype cDtype; // C: dtype, or f32 for 16-bit A and B
  size_t cBytes;
  bool doubleScalars;
};

/// cublasGemmEx's table of data and compute types (the cuBLAS
/// documentation), for the types the emulator computes: A and B of one
/// type; C of that type, or CUDA_R_32F for CUDA_R_16F and CUDA_R_16BF
/// operands; CUBLAS_COMPUTE_32F[_PEDANTIC] for 16-bit and f32 operands
/// (f32 alone also with the FAST_16F, FAST_16BF and FAST_TF32 compute
/// types), CUBLAS_COMPUTE_64F[_PEDANTIC] for f64. Any other combination is
/// CUBLAS_STATUS_NOT_SUPPORTED, as cuBLAS answers.
cublasStatus_t typesOf(const char *call, cudaDataType a, cudaDataType b,
                       cudaDataType c, cublasComputeType_t compute, Types &out) {
  auto unsupported = [&](const std::string &why) {
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    std::string(call) + ": data types (A " +
                        std::to_string(a) + ", B " + std::to_string(b) +
                        ", C " + std::to_string(c) + ") with compute type " +
                        std::to_string(compute) + " " + why);
  };
  if (a != b)
    return unsupported("are not one of cuBLAS's combinations (A and B of "
                       "different types)");
  bool f32Compute =
      compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC;
  bool fastCompute = compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                     compute == CUBLAS_COMPUTE_32F_FAST_16F ||
                     compute == CUBLAS_COMPUTE_32F_FAST_16BF;
  bool f64Compute =
      compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC;
  switch (a) {
  case CUDA_R_32F:
    if (c != CUDA_R_32F || !(f32Compute || fastCompute))
      break;
    out = {TPRT_F32, 4, TPRT_F32, 4, false};
    return CUBLAS_STATUS_SUCCESS;
  case CUDA_R_16F:
  case CUDA_R_16BF: {
    tprt_dtype dtype = a == CUDA_R_16F ? TPRT_F16 : TPRT_BF16;
    if (compute == CUBLAS_COMPUTE_16F || compute == CUBLAS_COMPUTE_16F_PEDANTIC)
      if (a == CUDA_R_16F && c == CUDA_R_16F)
        return unsupported("are not emulated (f16 compute)");
    if (!f32Compute)
      break;
    if (c == a) {
      out = {dtype, 2, dtype, 2, false};
      return CUBLAS_STATUS_SUCCESS;
    }
    if (c == CUDA_R_32F) {
      out = {dtype, 2, TPRT_F32, 4, false};
      return CUBLAS_STATUS_SUCCESS;
    }
    break;
  }
  case CUDA_R_64F:
    if (c != CUDA_R_64F || !f64Compute)
      break;
    out = {TPRT_F64, 8, TPRT_F64, 8, true};
    return CUBLAS_STATUS_SUCCESS;
  default:
    return unsupported("are not emulated");
  }
  return unsupported("are not one of cuBLAS's combinations");
}

cublasStatus_t scalar(const char *call, const Handle *h, const void *p,
                      bool isDouble, float &out) {
  // Device pointer mode: the scalar lives in device memory.
  if (h->pointerMode == CUBLAS_POINTER_MODE_DEVICE) {
    char why[512];
    p = tprtEmuHostRange(p, isDouble ? 8 : 4, why, sizeof(why));
    if (!p)
      return complain(CUBLAS_STATUS_EXECUTION_FAILED,
                      std::string(call) + ": a scalar is not in device "
                                          "memory: " + why);
  }
  out = isDouble ? float(*static_cast<const double *>(p))
                 : *static_cast<const float *>(p);
  return CUBLAS_STATUS_SUCCESS;
}

/// Checks one column-major operand, rows x cols with leading dimension ld,
/// and gives its host address.
cublasStatus_t checkOperand(const char *call, const char *name, const void *p,
                            int64_t rows, int64_t cols, int64_t ld,
                            size_t bytes, const void *&host) {
  host = nullptr;
  if (rows == 0 || cols == 0)
    return CUBLAS_STATUS_SUCCESS;
  size_t extent = size_t((cols - 1) * ld + rows) * bytes;
  char why[512];
  host = tprtEmuHostRange(p, extent, why, sizeof(why));
  if (!host)
    return complain(CUBLAS_STATUS_EXECUTION_FAILED,
                    std::string(call) + ": operand " + name + " (" +
                        std::to_string(rows) + " x " + std::to_string(cols) +
                        ", leading dimension " + std::to_string(ld) + ", " +
                        std::to_string(extent) + " bytes) is not in device "
                        "memory: " + why);
  return CUBLAS_STATUS_SUCCESS;
}

struct Gemm {
  const char *call;
  cublasOperation_t ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  Types types;
  float alpha, beta;
};

cublasStatus_t checkShape(const Gemm &g, int64_t batch) {
  auto bad = [&](const std::string &what) {
    return complain(CUBLAS_STATUS_INVALID_VALUE, std::string(g.call) + ": " + what);
  };
  for (cublasOperation_t op : {g.ta, g.tb})
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T && op != CUBLAS_OP_C)
      return bad("unknown operation " + std::to_string(op));
  if (g.m < 0 || g.n < 0 || g.k < 0 || batch < 0)
    return bad("negative size");
  int64_t rowsA = g.ta == CUBLAS_OP_N ? g.m : g.k;
  int64_t rowsB = g.tb == CUBLAS_OP_N ? g.k : g.n;
  if (g.lda < (rowsA > 1 ? rowsA : 1))
    return bad("lda " + std::to_string(g.lda) + " < " + std::to_string(rowsA));
  if (g.ldb < (rowsB > 1 ? rowsB : 1))
    return bad("ldb " + std::to_string(g.ldb) + " < " + std::to_string(rowsB));
  if (g.ldc < (g.m > 1 ? g.m : 1))
    return bad("ldc " + std::to_string(g.ldc) + " < " + std::to_string(g.m));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t one(const Gemm &g, const void *a, const void *b, void *c) {
  int64_t rowsA = g.ta == CUBLAS_OP_N ? g.m : g.k, colsA = g.ta == CUBLAS_OP_N ? g.k : g.m;
  int64_t rowsB = g.tb == CUBLAS_OP_N ? g.k : g.n, colsB = g.tb == CUBLAS_OP_N ? g.n : g.k;
  const void *hostA = nullptr, *hostB = nullptr, *hostC = nullptr;
  if (g.k > 0) {
    if (cublasStatus_t s = checkOperand(g.call, "A", a, rowsA, colsA, g.lda,
                                        g.types.bytes, hostA))
      return s;
    if (cublasStatus_t s = checkOperand(g.call, "B", b, rowsB, colsB, g.ldb,
                                        g.types.bytes, hostB))
      return s;
  }
  if (cublasStatus_t s = checkOperand(g.call, "C", c, g.m, g.n, g.ldc,
                                      g.types.cBytes, hostC))
    return s;
  if (g.m == 0 || g.n == 0)
    return CUBLAS_STATUS_SUCCESS;
  // Row-major C^T (n x m, ld ldc) = op(B)^T (n x k) op(A)^T (k x m).
  tprt_status status =
      g.types.cDtype == g.types.dtype
          ? tprt::hostGemm(g.types.dtype, g.tb != CUBLAS_OP_N,
                           g.ta != CUBLAS_OP_N, g.n, g.m, g.k, g.alpha, hostB,
                           g.ldb, hostA, g.lda, g.beta,
                           const_cast<void *>(hostC), g.ldc)
          : tprt::hostGemmWidened(g.types.dtype, g.types.cDtype,
                                  g.tb != CUBLAS_OP_N, g.ta != CUBLAS_OP_N,
                                  g.n, g.m, g.k, g.alpha, hostB, g.ldb, hostA,
                                  g.lda, g.beta, const_cast<void *>(hostC),
                                  g.ldc);
  if (status != TPRT_OK)
    return complain(CUBLAS_STATUS_EXECUTION_FAILED,
                    std::string(g.call) + ": the host GEMM failed: " +
                        tprt_last_error());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t prepare(Gemm &g, cublasHandle_t handle, const void *alpha,
                       const void *beta, cudaDataType at, cudaDataType bt,
                       cudaDataType ct, cublasComputeType_t compute,
                       int64_t batch) {
  if (!handle)
    return complain(CUBLAS_STATUS_NOT_INITIALIZED,
                    std::string(g.call) + ": no handle");
  if (cublasStatus_t s = typesOf(g.call, at, bt, ct, compute, g.types))
    return s;
  if (cublasStatus_t s = checkShape(g, batch))
    return s;
  auto *h = reinterpret_cast<Handle *>(handle);
  if (cublasStatus_t s = scalar(g.call, h, alpha, g.types.doubleScalars, g.alpha))
    return s;
  return scalar(g.call, h, beta, g.types.doubleScalars, g.beta);
}

} // namespace

// tprt_last_error is libtprt's; HostGemm's failures set it through
// common/Error.cpp, compiled into this library.
MOCK_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  if (!handle)
    return CUBLAS_STATUS_INVALID_VALUE;
  *handle = reinterpret_cast<cublasHandle_t>(new Handle());
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete reinterpret_cast<Handle *>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle,
                                              cudaStream_t stream) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<Handle *>(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle,
                                                   cublasPointerMode_t mode) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<Handle *>(handle)->pointerMode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t handle,
                                             cublasMath_t mode) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<Handle *>(handle)->mathMode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT const char *cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  default: return "unknown status";
  }
}

MOCK_EXPORT cublasStatus_t cublasGemmEx_64(
    cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
    int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
    cudaDataType at, int64_t lda, const void *B, cudaDataType bt, int64_t ldb,
    const void *beta, void *C, cudaDataType ct, int64_t ldc,
    cublasComputeType_t compute, cublasGemmAlgo_t) {
  Gemm g{"cublasGemmEx", ta, tb, m, n, k, lda, ldb, ldc, {}, 0, 0};
  if (cublasStatus_t s = prepare(g, handle, alpha, beta, at, bt, ct, compute, 1))
    return s;
  return one(g, A, B, C);
}

MOCK_EXPORT cublasStatus_t cublasGemmEx(
    cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
    int n, int k, const void *alpha, const void *A, cudaDataType at, int lda,
    const void *B, cudaDataType bt, int ldb, const void *beta, void *C,
    cudaDataType ct, int ldc, cublasComputeType_t compute,
    cublasGemmAlgo_t algo) {
  return cublasGemmEx_64(handle, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb,
                         beta, C, ct, ldc, compute, algo);
}

MOCK_EXPORT cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
    int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
    cudaDataType at, int64_t lda, long long strideA, const void *B,
    cudaDataType bt, int64_t ldb, long long strideB, const void *beta, void *C,
    cudaDataType ct, int64_t ldc, long long strideC, int64_t batch,
    cublasComputeType_t compute, cublasGemmAlgo_t) {
  Gemm g{"cublasGemmStridedBatchedEx", ta, tb, m, n, k, lda, ldb, ldc, {}, 0, 0};
  if (cublasStatus_t s = prepare(g, handle, alpha, beta, at, bt, ct, compute, batch))
    return s;
  size_t e = g.types.bytes, ec = g.types.cBytes;
  for (int64_t i = 0; i < batch; ++i)
    if (cublasStatus_t s =
            one(g, static_cast<const char *>(A) + size_t(i * strideA) * e,
                static_cast<const char *>(B) + size_t(i * strideB) * e,
                static_cast<char *>(C) + size_t(i * strideC) * ec))
      return s;
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
    int n, int k, const void *alpha, const void *A, cudaDataType at, int lda,
    long long strideA, const void *B, cudaDataType bt, int ldb,
    long long strideB, const void *beta, void *C, cudaDataType ct, int ldc,
    long long strideC, int batch, cublasComputeType_t compute,
    cublasGemmAlgo_t algo) {
  return cublasGemmStridedBatchedEx_64(handle, ta, tb, m, n, k, alpha, A, at,
                                       lda, strideA, B, bt, ldb, strideB, beta,
                                       C, ct, ldc, strideC, batch, compute,
                                       algo);
}

/// Reads `count` entries of the three device-memory pointer arrays of a
/// batched or grouped call into host vectors (cuBLAS requires the arrays in
/// device memory; anything else is refused as cuBLAS would fail).
static cublasStatus_t readPointerArrays(const std::string &call,
                                        const void *aArray, const void *bArray,
                                        const void *cArray, int64_t count,
                                        std::vector<const void *> &a,
                                        std::vector<const void *> &b,
                                        std::vector<void *> &c) {
  size_t bytes = size_t(count) * sizeof(void *);
  char why[512];
  const void *arrays[] = {aArray, bArray, cArray};
  const void *host[3];
  const char *names[] = {"Aarray", "Barray", "Carray"};
  for (int i = 0; i < 3; ++i)
    if (!(host[i] = tprtEmuHostRange(arrays[i], bytes, why, sizeof(why))))
      return complain(CUBLAS_STATUS_EXECUTION_FAILED,
                      call + ": pointer array " + names[i] + " of " +
                          std::to_string(count) +
                          " entries is not in device memory: " + why);
  a.resize(size_t(count));
  b.resize(size_t(count));
  c.resize(size_t(count));
  std::memcpy(a.data(), host[0], bytes);
  std::memcpy(b.data(), host[1], bytes);
  std::memcpy(c.data(), host[2], bytes);
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasGemmBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
    int64_t m, int64_t n, int64_t k, const void *alpha,
    const void *const Aarray[], cudaDataType at, int64_t lda,
    const void *const Barray[], cudaDataType bt, int64_t ldb, const void *beta,
    void *const Carray[], cudaDataType ct, int64_t ldc, int64_t batch,
    cublasComputeType_t compute, cublasGemmAlgo_t) {
  Gemm g{"cublasGemmBatchedEx", ta, tb, m, n, k, lda, ldb, ldc, {}, 0, 0};
  if (cublasStatus_t s = prepare(g, handle, alpha, beta, at, bt, ct, compute, batch))
    return s;
  if (batch == 0)
    return CUBLAS_STATUS_SUCCESS;
  // The pointer arrays live in device memory, as cuBLAS requires.
  std::vector<const void *> a, b;
  std::vector<void *> c;
  if (cublasStatus_t s = readPointerArrays(g.call, Aarray, Barray, Carray,
                                           batch, a, b, c))
    return s;
  for (int64_t i = 0; i < batch; ++i)
    if (cublasStatus_t s = one(g, a[size_t(i)], b[size_t(i)], c[size_t(i)]))
      return s;
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasGemmBatchedEx(
    cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
    int n, int k, const void *alpha, const void *const Aarray[],
    cudaDataType at, int lda, const void *const Barray[], cudaDataType bt,
    int ldb, const void *beta, void *const Carray[], cudaDataType ct, int ldc,
    int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  return cublasGemmBatchedEx_64(handle, ta, tb, m, n, k, alpha, Aarray, at, lda,
                                Barray, bt, ldb, beta, Carray, ct, ldc, batch,
                                compute, algo);
}

// cublasGemmGroupedBatchedEx: group i holds group_size[i] products of one
// shape, (transa, transb, m, n, k, lda, ldb, ldc, alpha, beta)[i]; the
// pointer arrays (in device memory, as cuBLAS requires) hold one entry per
// product, the groups' products in order. Its table of types is narrower
// than cublasGemmEx's: A, B and C of one type, f32, f16 or bf16, with f32
// compute (f32 also FAST_TF32); anything else is NOT_SUPPORTED.
MOCK_EXPORT cublasStatus_t cublasGemmGroupedBatchedEx_64(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int64_t m_array[],
    const int64_t n_array[], const int64_t k_array[], const void *alpha_array,
    const void *const Aarray[], cudaDataType at, const int64_t lda_array[],
    const void *const Barray[], cudaDataType bt, const int64_t ldb_array[],
    const void *beta_array, void *const Carray[], cudaDataType ct,
    const int64_t ldc_array[], int64_t group_count, const int64_t group_size[],
    cublasComputeType_t compute) {
  const char *call = "cublasGemmGroupedBatchedEx";
  if (!handle)
    return complain(CUBLAS_STATUS_NOT_INITIALIZED,
                    std::string(call) + ": no handle");
  Types types;
  if (cublasStatus_t s = typesOf(call, at, bt, ct, compute, types))
    return s;
  if (types.cDtype != types.dtype || types.dtype == TPRT_F64)
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    std::string(call) + ": data types (A " +
                        std::to_string(at) + ", B " + std::to_string(bt) +
                        ", C " + std::to_string(ct) + ") with compute type " +
                        std::to_string(compute) +
                        " are not one of its combinations");
  if (group_count < 0)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    std::string(call) + ": negative group count");
  int64_t total = 0;
  for (int64_t i = 0; i < group_count; ++i) {
    if (group_size[i] < 0)
      return complain(CUBLAS_STATUS_INVALID_VALUE,
                      std::string(call) + ": negative group size");
    total += group_size[i];
  }
  if (total == 0)
    return CUBLAS_STATUS_SUCCESS;
  std::vector<const void *> a, b;
  std::vector<void *> c;
  if (cublasStatus_t s = readPointerArrays(call, Aarray, Barray, Carray,
                                           total, a, b, c))
    return s;
  auto *h = reinterpret_cast<Handle *>(handle);
  size_t product = 0;
  for (int64_t i = 0; i < group_count; ++i) {
    Gemm g{call,         transa_array[i], transb_array[i], m_array[i],
           n_array[i],   k_array[i],      lda_array[i],    ldb_array[i],
           ldc_array[i], types,           0,               0};
    if (cublasStatus_t s = checkShape(g, group_size[i]))
      return s;
    // The scalars: one per group, of the compute type (f32 here).
    if (cublasStatus_t s = scalar(call, h,
                                  static_cast<const float *>(alpha_array) + i,
                                  false, g.alpha))
      return s;
    if (cublasStatus_t s = scalar(call, h,
                                  static_cast<const float *>(beta_array) + i,
                                  false, g.beta))
      return s;
    for (int64_t j = 0; j < group_size[i]; ++j, ++product)
      if (cublasStatus_t s = one(g, a[product], b[product], c[product]))
        return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}
