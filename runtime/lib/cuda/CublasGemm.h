//===- CublasGemm.h - Row-major GEMMs with cuBLAS ---------------*- C++ -*-===//
//
// tprt_gemm, tprt_gemm_strided_batched, tprt_gemm_mixed and
// tprt_gemm_shared_a on the rank's stream. cuBLAS is
// column-major: a row-major C (m x n) is a column-major C^T, so
// C = op(A) op(B) runs as C^T = op(B)^T op(A)^T, passing B first with the
// same transpose flags and leading dimensions, m and n swapped.
//
// Precision: f16 and bf16 inputs and outputs with f32 accumulation
// (CUBLAS_COMPUTE_32F, tensor cores), or f16 and bf16 inputs with an f32
// output (tprt_gemm_mixed: CUDA_R_16F / CUDA_R_16BF A and B, CUDA_R_32F C,
// CUBLAS_COMPUTE_32F, one of cublasGemmEx's documented combinations); f32 as plain FP32
// (CUBLAS_COMPUTE_32F) unless TPRT_ALLOW_TF32=1 opts into
// CUBLAS_COMPUTE_32F_FAST_TF32; f64 with CUBLAS_COMPUTE_64F. The 64-bit
// integer entry points (cublasGemmEx_64) take any size.
//
// Reductions: cuBLAS may split K and reduce the partial products in the
// output's precision (bf16, f16); the handle disallows that
// (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) unless
// TPRT_ALLOW_REDUCED_PRECISION_REDUCTION=1 asks for it, so a 16-bit GEMM
// sums in f32 throughout, as its compute type says.
//
// Shared-A products (tprt_gemm_shared_a: C_i = op(A) op(B_i), the Q/K/V or
// gate/up projections of one activation) are one cublasGemmBatchedEx_64
// over device arrays of pointers, so the products run in one launch and A
// is read from HBM once for all of them (the concurrent tiles of one A
// block hit in L2). The pointer arrays go to the device from pinned host
// memory (an asynchronous copy on the rank's stream, not a staged pageable
// one): a ring of kPointerSlots slots, each reused only after the event
// recorded behind its copy has completed.
//
// Grouped products (tprt_gemm_grouped: a mixture of experts' tokens, sorted
// by expert, times each expert's weight) are one cublasGemmGroupedBatchedEx_64
// with one cuBLAS group per non-empty group of rows (group_size 1 each: the
// shapes differ by their row counts), host arrays of shapes and scalars and
// device arrays of pointers staged as for the shared-A products; f64, which
// that call does not take, is one cublasGemmEx per group. The row counts
// reach the host before the call (tprt_gemm_grouped copies them).
//
// GEMMs with an epilogue (tprt_gemm_epilogue: C = act(op(A) op(B) + addend
// + bias)) are one cublasLtMatmul: the bias and the activation in the
// matmul descriptor's epilogue (BIAS, RELU_BIAS, GELU_BIAS, RELU, GELU),
// the addend as cuBLASLt's C with beta = 1 (D is the output), f32 compute
// (f64 for f64) and split-K reductions restricted to none or the compute
// type (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK) unless
// TPRT_ALLOW_REDUCED_PRECISION_REDUCTION=1. In the column-major view D^T
// = op(B)^T op(A)^T the row-major bias (one value per column of C) is one
// value per row of D, which is what cuBLASLt's bias epilogue adds. The
// Lt handle and a kLtWorkspaceBytes workspace are created at the first
// such call.
//
// Alignment: cuBLASLt's heuristic assumes 256-byte aligned operands unless
// told otherwise (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES, default
// 256), and an algorithm it picks under that assumption may refuse a less
// aligned view at cublasLtMatmul (NOT_SUPPORTED). Each call therefore sets
// the four preferences from the operands' real addresses (the largest power
// of two dividing each, at most 256), and the heuristic's first algorithm is
// cached per (shape, leading dimensions, epilogue, those alignments and the
// bias's). When the heuristic finds no algorithm (or cublasLtMatmul still
// refuses with NOT_SUPPORTED), the call falls back to the plain cuBLAS path
// (EpilogueFallback.cpp): cublasGemmEx into an f32 (f64) scratch, which
// accepts any alignment of its element size, then the runtime's own PTX
// kernel adds the addend and the bias, applies the activation and rounds
// once, as the fused epilogue does.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_CUDA_CUBLASGEMM_H
#define TPRT_CUDA_CUBLASGEMM_H

#include "tprt/tprt.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>

#include <map>
#include <tuple>
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

  /// `batch` strided products (one cublasGemmEx when batch is 1), A and B
  /// in `dtype`, C in `cType`: `dtype`, or f32 for f16 and bf16 operands
  /// (the mixed-precision GEMM, tprt_gemm_mixed).
  tprt_status gemm(tprt_dtype dtype, tprt_dtype cType, bool transA,
                   bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                   const void *a, int64_t lda, int64_t strideA, const void *b,
                   int64_t ldb, int64_t strideB, float beta, void *c,
                   int64_t ldc, int64_t strideC, int64_t batch);

  /// `count` products sharing A: c[i] = alpha op(A) op(b[i]) + beta c[i].
  /// `b` and `c` are host arrays of device pointers; count 1 is gemm().
  tprt_status gemmSharedA(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                          int64_t n, int64_t k, float alpha, const void *a,
                          int64_t lda, const void *const *b, int64_t ldb,
                          float beta, void *const *c, int64_t ldc, int count);

  /// Grouped products (see tprt_gemm_grouped): `rows` is a host array of
  /// `groups` row counts; group g reads the next rows[g] rows of A, B_g = b
  /// + g * strideB, and writes the same rows of C.
  tprt_status gemmGrouped(tprt_dtype dtype, bool transB, int groups,
                          const int64_t *rows, int64_t n, int64_t k,
                          float alpha, const void *a, int64_t lda,
                          const void *b, int64_t ldb, int64_t strideB,
                          float beta, void *c, int64_t ldc);

  /// C = act(op(A) op(B) + addend + bias) as one cublasLtMatmul (see
  /// tprt_gemm_epilogue); addend and bias may be null.
  tprt_status gemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                           int64_t m, int64_t n, int64_t k, const void *a,
                           int64_t lda, const void *b, int64_t ldb,
                           const void *addend, int64_t ldAddend,
                           const void *bias, int activation, void *c,
                           int64_t ldc);

  /// gemmEpilogue without cuBLASLt (EpilogueFallback.cpp): the product by
  /// cublasGemmEx into an f32 scratch (f64 for f64), then the runtime's
  /// epilogue kernel C = round(act(P + addend + bias)).
  tprt_status gemmEpilogueFallback(tprt_dtype dtype, bool transA, bool transB,
                                   int64_t m, int64_t n, int64_t k,
                                   const void *a, int64_t lda, const void *b,
                                   int64_t ldb, const void *addend,
                                   int64_t ldAddend, const void *bias,
                                   int activation, void *c, int64_t ldc);
  /// Epilogue GEMMs that took the fallback since the handle was created.
  uint64_t epilogueFallbacks() const { return fallbacks; }

private:
  tprt_status initialize();
  /// Creates the Lt handle and its workspace at the first epilogue GEMM.
  tprt_status initializeLt();
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

  /// Copies `entries` pointers to a device array on the stream, from a
  /// pinned slot of the ring; returns the device array.
  tprt_status stagePointers(const void *const *pointers, size_t entries,
                            CUdeviceptr &device);

  CUstream stream = nullptr;
  cublasHandle_t handle = nullptr;
  bool allowTf32 = false;
  bool allowReduced = false;
  /// cuBLASLt: the handle, the workspace every epilogue GEMM may use, and
  /// the heuristic's first algorithm per (dtype, trans flags, m, n, k,
  /// leading dimensions, epilogue, addend, and the alignments of Lt's A, B,
  /// C, D and of the bias), or none (the fallback).
  static constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;
  cublasLtHandle_t lt = nullptr;
  CUdeviceptr ltWorkspace = 0;
  using AlgoKey =
      std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t,
                 int64_t, int64_t, int, bool, uint32_t, uint32_t, uint32_t,
                 uint32_t, uint32_t>;
  struct AlgoChoice {
    bool found = false;
    cublasLtMatmulHeuristicResult_t result{};
  };
  std::map<AlgoKey, AlgoChoice> algorithms;
  /// The fallback's product scratch (grown on demand), its kernels (one
  /// module, a function per dtype) and how often it ran.
  CUdeviceptr scratch = 0;
  size_t scratchBytes = 0;
  CUmodule epilogueModule = nullptr;
  CUfunction epilogueKernels[4] = {};
  uint64_t fallbacks = 0;
  /// gemmSharedA's pointer arrays: kPointerSlots slots of slotEntries
  /// pointers each, in pinned host memory and in device memory, with an
  /// event per slot recorded after its copy. Grown (all slots) when a
  /// call needs more, freed by the destructor.
  static constexpr int kPointerSlots = 16;
  size_t slotEntries = 0;
  const void **pinned = nullptr;
  CUdeviceptr pointerArrays = 0;
  CUevent slotDone[kPointerSlots] = {};
  int nextSlot = 0;
};

/// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not
/// supported)"
const char *cublasText(cublasStatus_t status);

} // namespace cuda
} // namespace tprt

#endif // TPRT_CUDA_CUBLASGEMM_H
