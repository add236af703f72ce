//===- CublasGemm.cpp - Row-major GEMMs with cuBLAS -----------------------===//
//
// See CublasGemm.h.
//
//===----------------------------------------------------------------------===//

#include "CublasGemm.h"

#include "CudaDevice.h"
#include "common/Alignment.h"
#include "common/DType.h"
#include "common/Error.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace tprt;
using namespace tprt::cuda;

const char *cuda::cublasText(cublasStatus_t status) {
  const char *text = cublasGetStatusString(status);
  return text ? text : "unknown cuBLAS status";
}

Cublas::~Cublas() {
  if ((!handle && !pointerArrays && !lt) || !currentDevice() ||
      makeCurrent() != TPRT_OK)
    return;
  if (lt) {
    // The last epilogue GEMM may still use the workspace.
    cuStreamSynchronize(stream);
    if (ltWorkspace)
      cuMemFree(ltWorkspace);
    if (scratch)
      cuMemFree(scratch);
    if (epilogueModule)
      cuModuleUnload(epilogueModule);
    cublasLtDestroy(lt);
  }
  if (pointerArrays) {
    // The last shared-A GEMM may still read them.
    cuStreamSynchronize(stream);
    cuMemFree(pointerArrays);
    cuMemFreeHost(pinned);
    for (CUevent &event : slotDone)
      if (event)
        cuEventDestroy(event);
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
  // 16-bit GEMMs reduce in f32 even when cuBLAS splits K, unless asked.
  const char *reduced = std::getenv("TPRT_ALLOW_REDUCED_PRECISION_REDUCTION");
  allowReduced = reduced && std::strcmp(reduced, "1") == 0;
  if (!allowReduced) {
    status = cublasSetMathMode(
        handle, static_cast<cublasMath_t>(
                    CUBLAS_DEFAULT_MATH |
                    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    if (status != CUBLAS_STATUS_SUCCESS)
      return fail(TPRT_ERROR_BACKEND, "cublasSetMathMode failed: %s",
                  cublasText(status));
  }
  return TPRT_OK;
}

tprt_status Cublas::stagePointers(const void *const *pointers, size_t entries,
                                  CUdeviceptr &device) {
  if (entries > slotEntries) {
    // Grow every slot (rare: the first shared-A call, or more products).
    if (pointerArrays) {
      // Earlier GEMMs may still read the device arrays.
      if (tprt_status status =
              check(cuStreamSynchronize(stream), "cuStreamSynchronize"))
        return status;
      cuMemFree(pointerArrays);
      cuMemFreeHost(pinned);
      pointerArrays = 0;
      pinned = nullptr;
    }
    slotEntries = entries < 24 ? 24 : entries;
    size_t bytes = kPointerSlots * slotEntries * sizeof(void *);
    if (tprt_status status = check(cuMemAlloc(&pointerArrays, bytes),
                                   "cuMemAlloc"))
      return status;
    void *host = nullptr;
    if (tprt_status status = check(cuMemHostAlloc(&host, bytes, 0),
                                   "cuMemHostAlloc")) {
      cuMemFree(pointerArrays);
      pointerArrays = 0;
      return status;
    }
    pinned = static_cast<const void **>(host);
    for (CUevent &event : slotDone)
      if (!event)
        if (tprt_status status = check(
                cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
          return status;
  }
  int slot = nextSlot;
  nextSlot = (nextSlot + 1) % kPointerSlots;
  // The slot's previous copy has read the pinned memory once its event is
  // done (kPointerSlots calls ago: normally long since).
  if (tprt_status status =
          check(cuEventSynchronize(slotDone[slot]), "cuEventSynchronize"))
    return status;
  const void **host = pinned + size_t(slot) * slotEntries;
  std::memcpy(host, pointers, entries * sizeof(void *));
  device = pointerArrays + size_t(slot) * slotEntries * sizeof(void *);
  if (tprt_status status =
          check(cuMemcpyHtoDAsync(device, host, entries * sizeof(void *),
                                  stream),
                "cuMemcpyHtoDAsync"))
    return status;
  return check(cuEventRecord(slotDone[slot], stream), "cuEventRecord");
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

tprt_status Cublas::gemm(tprt_dtype dtype, tprt_dtype cType, bool transA,
                         bool transB, int64_t m, int64_t n, int64_t k,
                         float alpha, const void *a, int64_t lda,
                         int64_t strideA, const void *b, int64_t ldb,
                         int64_t strideB, float beta, void *c, int64_t ldc,
                         int64_t strideC, int64_t batch) {
  Setup setup;
  if (tprt_status status = prepare(dtype, alpha, beta, setup))
    return status;
  cudaDataType outType = setup.type;
  if (cType != dtype) {
    // The mixed-precision GEMM: 16-bit A and B, an f32 C, f32 compute
    // (prepare chose CUBLAS_COMPUTE_32F for f16 and bf16).
    if ((dtype != TPRT_F16 && dtype != TPRT_BF16) || cType != TPRT_F32)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "%s operands into %s are not supported (f16 or bf16 "
                  "operands into f32 are)",
                  dtypeName(dtype), dtypeName(cType));
    outType = CUDA_R_32F;
  }
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLAS rejects leading dimensions below the rows of the column-major
  // view even when the matrix is empty.
  cublasStatus_t status;
  if (batch == 1)
    status = cublasGemmEx_64(handle, opB, opA, n, m, k, setup.alpha(), b,
                             setup.type, ldb, a, setup.type, lda, setup.beta(),
                             c, outType, ldc, setup.compute,
                             CUBLAS_GEMM_DEFAULT);
  else
    status = cublasGemmStridedBatchedEx_64(
        handle, opB, opA, n, m, k, setup.alpha(), b, setup.type, ldb, strideB,
        a, setup.type, lda, strideA, setup.beta(), c, outType, ldc, strideC,
        batch, setup.compute, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::string types = dtypeName(dtype);
    if (cType != dtype)
      types += std::string(" into ") + dtypeName(cType);
    return fail(status == CUBLAS_STATUS_ALLOC_FAILED ? TPRT_ERROR_OUT_OF_MEMORY
                                                     : TPRT_ERROR_BACKEND,
                "%s of %lldx%lldx%lld (%s, batch %lld) failed: %s",
                batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx",
                static_cast<long long>(m), static_cast<long long>(n),
                static_cast<long long>(k), types.c_str(),
                static_cast<long long>(batch), cublasText(status));
  }
  return TPRT_OK;
}

tprt_status Cublas::gemmSharedA(tprt_dtype dtype, bool transA, bool transB,
                                int64_t m, int64_t n, int64_t k, float alpha,
                                const void *a, int64_t lda,
                                const void *const *b, int64_t ldb, float beta,
                                void *const *c, int64_t ldc, int count) {
  if (count == 1)
    return gemm(dtype, dtype, transA, transB, m, n, k, alpha, a, lda, 0, b[0],
                ldb, 0, beta, c[0], ldc, 0, 1);
  Setup setup;
  if (tprt_status status = prepare(dtype, alpha, beta, setup))
    return status;

  // The pointer arrays in cuBLAS's operand order (row-major trick: its
  // first operand is our B_i, its second our A): [B_0..B_{count-1},
  // A x count, C_0..C_{count-1}].
  const void *pointers[3 * 64];
  size_t entries = 3 * size_t(count);
  if (count > 64)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "%d products share A; at most 64 do", count);
  for (int i = 0; i < count; ++i) {
    pointers[size_t(i)] = b[i];
    pointers[size_t(count + i)] = a;
    pointers[size_t(2 * count + i)] = c[i];
  }
  CUdeviceptr arrays = 0;
  if (tprt_status status = stagePointers(pointers, entries, arrays))
    return status;
  auto *device = reinterpret_cast<void **>(arrays);
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

tprt_status Cublas::gemmGrouped(tprt_dtype dtype, bool transB, int groups,
                                const int64_t *rows, int64_t n, int64_t k,
                                float alpha, const void *a, int64_t lda,
                                const void *b, int64_t ldb, int64_t strideB,
                                float beta, void *c, int64_t ldc) {
  size_t es = dtypeSize(dtype);
  // The non-empty groups: their first rows and their B.
  struct Product {
    int64_t m, firstRow, group;
  };
  std::vector<Product> products;
  int64_t first = 0;
  for (int g = 0; g < groups; ++g) {
    if (rows[g] > 0)
      products.push_back({rows[g], first, g});
    first += rows[g];
  }
  auto operandA = [&](const Product &p) {
    return static_cast<const void *>(static_cast<const char *>(a) +
                                     size_t(p.firstRow * lda) * es);
  };
  auto operandB = [&](const Product &p) {
    return static_cast<const void *>(static_cast<const char *>(b) +
                                     size_t(p.group * strideB) * es);
  };
  auto operandC = [&](const Product &p) {
    return static_cast<void *>(static_cast<char *>(c) +
                               size_t(p.firstRow * ldc) * es);
  };
  if (dtype == TPRT_F64 || products.size() == 1) {
    // cublasGemmGroupedBatchedEx has no f64; one product is one GEMM.
    for (const Product &p : products)
      if (tprt_status status =
              gemm(dtype, dtype, false, transB, p.m, n, k, alpha, operandA(p),
                   lda, 0, operandB(p), ldb, 0, beta, operandC(p), ldc, 0, 1))
        return status;
    return TPRT_OK;
  }
  Setup setup;
  if (tprt_status status = prepare(dtype, alpha, beta, setup))
    return status;
  size_t count = products.size();
  // Column-major, as gemm(): C_g^T (n x m_g) = op(B_g)^T A_g^T, cuBLAS's
  // first operand our B_g, its second our A_g. Pointer arrays [B.., A..,
  // C..] on the device; shapes and scalars on the host.
  std::vector<const void *> pointers(3 * count);
  std::vector<cublasOperation_t> opFirst(count, transB ? CUBLAS_OP_T
                                                       : CUBLAS_OP_N),
      opSecond(count, CUBLAS_OP_N);
  std::vector<int64_t> ms(count, n), ns(count), ks(count, k),
      ldFirst(count, ldb), ldSecond(count, lda), ldOut(count, ldc),
      sizes(count, 1);
  std::vector<float> alphas(count, alpha), betas(count, beta);
  for (size_t i = 0; i < count; ++i) {
    pointers[i] = operandB(products[i]);
    pointers[count + i] = operandA(products[i]);
    pointers[2 * count + i] = operandC(products[i]);
    ns[i] = products[i].m;
  }
  CUdeviceptr arrays = 0;
  if (tprt_status status = stagePointers(pointers.data(), pointers.size(),
                                         arrays))
    return status;
  auto *device = reinterpret_cast<void **>(arrays);
  cublasStatus_t status = cublasGemmGroupedBatchedEx_64(
      handle, opFirst.data(), opSecond.data(), ms.data(), ns.data(), ks.data(),
      alphas.data(), device, setup.type, ldFirst.data(), device + count,
      setup.type, ldSecond.data(), betas.data(), device + 2 * count,
      setup.type, ldOut.data(), int64_t(count), sizes.data(), setup.compute);
  if (status != CUBLAS_STATUS_SUCCESS)
    return fail(status == CUBLAS_STATUS_ALLOC_FAILED ? TPRT_ERROR_OUT_OF_MEMORY
                                                     : TPRT_ERROR_BACKEND,
                "cublasGemmGroupedBatchedEx of %zu groups (n %lld, k %lld, "
                "%s) failed: %s",
                count, static_cast<long long>(n), static_cast<long long>(k),
                dtypeName(dtype), cublasText(status));
  return TPRT_OK;
}

tprt_status Cublas::initializeLt() {
  cublasStatus_t status = cublasLtCreate(&lt);
  if (status != CUBLAS_STATUS_SUCCESS) {
    lt = nullptr;
    return fail(status == CUBLAS_STATUS_ALLOC_FAILED ? TPRT_ERROR_OUT_OF_MEMORY
                                                     : TPRT_ERROR_BACKEND,
                "cublasLtCreate failed: %s", cublasText(status));
  }
  return check(cuMemAlloc(&ltWorkspace, kLtWorkspaceBytes), "cuMemAlloc");
}

namespace {

/// Destroys the cuBLASLt descriptors of one call on every path.
struct LtDescriptors {
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~LtDescriptors() {
    if (preference)
      cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : {a, b, c, d})
      if (layout)
        cublasLtMatrixLayoutDestroy(layout);
    if (matmul)
      cublasLtMatmulDescDestroy(matmul);
  }
};

cublasLtEpilogue_t ltEpilogue(bool bias, int activation) {
  switch (activation) {
  case TPRT_ACTIVATION_RELU:
    return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  case TPRT_ACTIVATION_GELU_TANH:
    return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  default:
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

} // namespace

tprt_status Cublas::gemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                                 int64_t m, int64_t n, int64_t k,
                                 const void *a, int64_t lda, const void *b,
                                 int64_t ldb, const void *addend,
                                 int64_t ldAddend, const void *bias,
                                 int activation, void *c, int64_t ldc) {
  Setup setup;
  if (tprt_status status = prepare(dtype, 1.0f, addend ? 1.0f : 0.0f, setup))
    return status;
  if (!lt)
    if (tprt_status status = initializeLt())
      return status;
  cudaDataType scaleType = setup.doubleScalars ? CUDA_R_64F : CUDA_R_32F;
  cublasLtEpilogue_t epilogue = ltEpilogue(bias != nullptr, activation);
  auto failed = [&](const char *call, cublasStatus_t status) {
    return fail(status == CUBLAS_STATUS_ALLOC_FAILED ? TPRT_ERROR_OUT_OF_MEMORY
                                                     : TPRT_ERROR_BACKEND,
                "%s for the %lldx%lldx%lld GEMM (%s, epilogue %d) failed: %s",
                call, static_cast<long long>(m), static_cast<long long>(n),
                static_cast<long long>(k), dtypeName(dtype),
                static_cast<int>(epilogue), cublasText(status));
  };
#define TPRT_LT(call, ...)                                                     \
  if (cublasStatus_t s = call(__VA_ARGS__); s != CUBLAS_STATUS_SUCCESS)        \
    return failed(#call, s);

  // Column-major: D (n x m) = op(B)^T-slot x op(A)^T-slot, as in gemm().
  LtDescriptors desc;
  TPRT_LT(cublasLtMatmulDescCreate, &desc.matmul, setup.compute, scaleType);
  cublasOperation_t opFirst = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  TPRT_LT(cublasLtMatmulDescSetAttribute, desc.matmul,
          CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof(opFirst));
  TPRT_LT(cublasLtMatmulDescSetAttribute, desc.matmul,
          CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof(opSecond));
  TPRT_LT(cublasLtMatmulDescSetAttribute, desc.matmul,
          CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  if (bias) {
    TPRT_LT(cublasLtMatmulDescSetAttribute, desc.matmul,
            CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
    cudaDataType biasType = setup.type;
    TPRT_LT(cublasLtMatmulDescSetAttribute, desc.matmul,
            CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType));
  }
  // The stored matrices: our B is n columns wide (k x n, or n x k when
  // transposed), our A k or m wide; row-major rows are column-major
  // columns.
  TPRT_LT(cublasLtMatrixLayoutCreate, &desc.a, setup.type,
          uint64_t(transB ? k : n), uint64_t(transB ? n : k), ldb);
  TPRT_LT(cublasLtMatrixLayoutCreate, &desc.b, setup.type,
          uint64_t(transA ? m : k), uint64_t(transA ? k : m), lda);
  TPRT_LT(cublasLtMatrixLayoutCreate, &desc.d, setup.type, uint64_t(n),
          uint64_t(m), ldc);
  TPRT_LT(cublasLtMatrixLayoutCreate, &desc.c, setup.type, uint64_t(n),
          uint64_t(m), addend ? ldAddend : ldc);

  // Lt's A is our B, its B our A, its C the addend (or C), its D our C.
  uint32_t alignments[4] = {pointerAlignment(b), pointerAlignment(a),
                            pointerAlignment(addend ? addend : c),
                            pointerAlignment(c)};
  AlgoKey key{int(dtype),    transA,        transB,        m,
              n,             k,             lda,           ldb,
              ldc,           addend ? ldAddend : 0,        int(epilogue),
              addend != nullptr,            alignments[0], alignments[1],
              alignments[2], alignments[3], pointerAlignment(bias)};
  auto fallBack = [&] {
    ++fallbacks;
    return gemmEpilogueFallback(dtype, transA, transB, m, n, k, a, lda, b, ldb,
                                addend, ldAddend, bias, activation, c, ldc);
  };
  auto found = algorithms.find(key);
  if (found == algorithms.end()) {
    TPRT_LT(cublasLtMatmulPreferenceCreate, &desc.preference);
    uint64_t workspace = kLtWorkspaceBytes;
    TPRT_LT(cublasLtMatmulPreferenceSetAttribute, desc.preference,
            CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
            sizeof(workspace));
    const cublasLtMatmulPreferenceAttributes_t alignment[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; ++i)
      TPRT_LT(cublasLtMatmulPreferenceSetAttribute, desc.preference,
              alignment[i], &alignments[i], sizeof(alignments[i]));
    if (!allowReduced) {
      // Split-K partial sums in the compute type only (not in bf16/f16).
      uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE |
                         CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      TPRT_LT(cublasLtMatmulPreferenceSetAttribute, desc.preference,
              CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
              sizeof(schemes));
    }
    AlgoChoice choice;
    int returned = 0;
    // No algorithm for this problem at these alignments: NOT_SUPPORTED, or
    // success with none returned.
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        lt, desc.matmul, desc.a, desc.b, desc.c, desc.d, desc.preference, 1,
        &choice.result, &returned);
    if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED)
      return failed("cublasLtMatmulAlgoGetHeuristic", status);
    choice.found = status == CUBLAS_STATUS_SUCCESS && returned >= 1;
    found = algorithms.emplace(key, choice).first;
  }
  if (!found->second.found)
    return fallBack();
  const cublasLtMatmulHeuristicResult_t &algo = found->second.result;
  cublasStatus_t status = cublasLtMatmul(
      lt, desc.matmul, setup.alpha(), b, desc.a, a, desc.b, setup.beta(),
      addend ? addend : c, desc.c, c, desc.d, &algo.algo,
      reinterpret_cast<void *>(ltWorkspace), algo.workspaceSize,
      reinterpret_cast<cudaStream_t>(stream));
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
    // The algorithm refuses these operands after all: never again for
    // this key.
    found->second.found = false;
    return fallBack();
  }
  if (status != CUBLAS_STATUS_SUCCESS)
    return failed("cublasLtMatmul", status);
#undef TPRT_LT
  return TPRT_OK;
}
