//===- CublasLt.cpp - libcublasLt.so.13 of the emulator (cuda-emu) --------===//
//
// The cuBLASLt calls the runtime makes (runtime/lib/cuda/CublasGemm.cpp,
// tprt_gemm_epilogue), served by the host GEMM of the CPU backends
// (common/HostGemm.h: hostGemmEpilogue, the product in f32 and the
// epilogue rounded once) on the emulated driver's device memory.
//
// The descriptors are the mock's own structures behind cuBLASLt's opaque
// pointers. What cuBLASLt checks is checked here, with the status it
// returns: known attributes and attribute sizes, operations N or T, one
// data type for A, B, C and D (f32, f16 and bf16 with the f32 compute and
// scale types, f64 with f64), the shapes of op(A) op(B), C and D agreeing,
// leading dimensions >= rows, a known epilogue, a bias pointer (in device
// memory, one value per row of D, of the bias data type, which must be
// D's) for the BIAS epilogues, C equal to D only with the same layout, an
// algorithm from cublasLtMatmulAlgoGetHeuristic and at least the workspace
// it asked for (in device memory). alpha must be 1 and beta 0 or 1 (what
// the runtime passes; others are not emulated). A failure prints
// "tprt emulator: <call>: <why>" to stderr.
//
// Alignment, as cuBLASLt treats it: the preference's
// CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES (default 256) is what
// the heuristic may assume of the pointers, and the algorithm it returns is
// entitled to that alignment: cublasLtMatmul refuses (NOT_SUPPORTED) an
// operand less aligned than the heuristic was told (what a view at 64 bytes
// gets from a runtime that leaves the default 256). The emulated algorithm
// is a 16-byte vectorised kernel: below 16 bytes for any of A, B, C, D or
// the bias pointer the heuristic finds no algorithm (NOT_SUPPORTED, none
// returned). The real library may still find a slower algorithm there; a
// caller must work either way, and CI then sees its fallback taken.
//
// cuBLASLt is column-major: D (rows x cols) = op(A) op(B) is the row-major
// D^T = op(B)^T op(A)^T, so the product runs as hostGemmEpilogue(op(B),
// op(A)) with the dimensions swapped; the bias (one value per row of D) is
// then one per column of the row-major D^T, as hostGemmEpilogue adds it.
//
//===----------------------------------------------------------------------===//

#include "common/Alignment.h"
#include "common/HostGemm.h"

#include <cublasLt.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#define MOCK_EXPORT extern "C" __attribute__((visibility("default")))

// From the emulated driver (Driver.cpp).
extern "C" void *tprtEmuHostRange(const void *ptr, size_t bytes,
                                  char *message, size_t capacity);

namespace {

constexpr uint64_t kMagicHandle = 0x4c7448616e646c65;  // "LtHandle"
constexpr uint64_t kMagicAlgo = 0x4c74416c676f7269;    // "LtAlgori"
constexpr uint64_t kMagicMatmul = 0x4c744d61746d756c;  // "LtMatmul"
constexpr uint64_t kMagicLayout = 0x4c744c61796f7574;  // "LtLayout"
constexpr uint64_t kMagicPref = 0x4c74507265666572;    // "LtPrefer"

/// What the heuristic asks for: some workspace, as cuBLASLt's split-K and
/// stream-K algorithms do, capped by the preference.
constexpr uint64_t kAlgoWorkspace = uint64_t(4) << 20;

struct LtHandle {
  uint64_t magic = kMagicHandle;
};

struct MatmulDesc {
  uint64_t magic = kMagicMatmul;
  cublasComputeType_t compute;
  cudaDataType scale;
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  int biasType = -1; // -1: D's type
  cublasLtPointerMode_t pointerMode = CUBLASLT_POINTER_MODE_HOST;
};

struct Layout {
  uint64_t magic = kMagicLayout;
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};

struct Preference {
  uint64_t magic = kMagicPref;
  uint64_t maxWorkspace = 0;
  uint32_t reductionMask = CUBLASLT_REDUCTION_SCHEME_MASK;
  /// MIN_ALIGNMENT_{A,B,C,D}_BYTES.
  uint32_t minAlignment[4] = {256, 256, 256, 256};
};

/// The emulated algorithm's vector width: the least alignment it takes.
constexpr uint32_t kAlgoVectorBytes = 16;


cublasStatus_t complain(cublasStatus_t status, const std::string &what) {
  std::fprintf(stderr, "tprt emulator: %s\n", what.c_str());
  std::fflush(stderr);
  return status;
}

template <typename T>
cublasStatus_t readAttribute(const char *call, const char *name,
                             const void *buf, size_t size, T &out) {
  if (!buf || size != sizeof(T))
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    std::string(call) + ": attribute " + name + " takes " +
                        std::to_string(sizeof(T)) + " bytes, got " +
                        std::to_string(size));
  std::memcpy(&out, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

/// The element type of a matmul: its dtype and bytes.
struct Types {
  tprt_dtype dtype;
  size_t bytes;
  bool doubleScalars;
};

std::string shape(const Layout *l) {
  return std::to_string(l->rows) + " x " + std::to_string(l->cols) +
         ", ld " + std::to_string(l->ld);
}

/// Everything but the pointers: what both the heuristic and the matmul
/// check. `rows` and `cols` are D's; `types` the element type.
cublasStatus_t checkProblem(const char *call, const MatmulDesc *desc,
                            const Layout *a, const Layout *b, const Layout *c,
                            const Layout *d, Types &types) {
  std::string prefix = std::string(call) + ": ";
  if (!desc || desc->magic != kMagicMatmul)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    prefix + "the matmul descriptor is not one of "
                             "cublasLtMatmulDescCreate");
  const Layout *layouts[] = {a, b, c, d};
  const char *names[] = {"A", "B", "C", "D"};
  for (int i = 0; i < 4; ++i)
    if (!layouts[i] || layouts[i]->magic != kMagicLayout)
      return complain(CUBLAS_STATUS_INVALID_VALUE,
                      prefix + "the layout of " + names[i] +
                          " is not one of cublasLtMatrixLayoutCreate");
  for (int i = 1; i < 4; ++i)
    if (layouts[i]->type != a->type)
      return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                      prefix + "mixed data types (A " +
                          std::to_string(a->type) + ", " + names[i] + " " +
                          std::to_string(layouts[i]->type) +
                          ") are not emulated");
  bool f32Compute = desc->compute == CUBLAS_COMPUTE_32F ||
                    desc->compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                    desc->compute == CUBLAS_COMPUTE_32F_PEDANTIC;
  bool f64Compute = desc->compute == CUBLAS_COMPUTE_64F ||
                    desc->compute == CUBLAS_COMPUTE_64F_PEDANTIC;
  switch (a->type) {
  case CUDA_R_32F:
  case CUDA_R_16F:
  case CUDA_R_16BF:
    if (!f32Compute || desc->scale != CUDA_R_32F)
      return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                      prefix + "data type " + std::to_string(a->type) +
                          " with compute type " +
                          std::to_string(desc->compute) + " and scale type " +
                          std::to_string(desc->scale) + " is not emulated");
    types = {a->type == CUDA_R_32F   ? TPRT_F32
             : a->type == CUDA_R_16F ? TPRT_F16
                                     : TPRT_BF16,
             a->type == CUDA_R_32F ? size_t(4) : size_t(2), false};
    break;
  case CUDA_R_64F:
    if (!f64Compute || desc->scale != CUDA_R_64F)
      return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                      prefix + "f64 with compute type " +
                          std::to_string(desc->compute) + " and scale type " +
                          std::to_string(desc->scale) + " is not emulated");
    types = {TPRT_F64, 8, true};
    break;
  default:
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    prefix + "data type " + std::to_string(a->type) +
                        " is not emulated");
  }
  for (cublasOperation_t op : {desc->transa, desc->transb})
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T)
      return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                      prefix + "operation " + std::to_string(op) +
                          " is not emulated (N and T are)");
  for (int i = 0; i < 4; ++i)
    if (layouts[i]->ld < int64_t(layouts[i]->rows > 1 ? layouts[i]->rows : 1))
      return complain(CUBLAS_STATUS_INVALID_VALUE,
                      prefix + "the leading dimension of " + names[i] + " (" +
                          shape(layouts[i]) + ") is smaller than its rows");
  uint64_t rowsA = desc->transa == CUBLAS_OP_N ? a->rows : a->cols;
  uint64_t kA = desc->transa == CUBLAS_OP_N ? a->cols : a->rows;
  uint64_t kB = desc->transb == CUBLAS_OP_N ? b->rows : b->cols;
  uint64_t colsB = desc->transb == CUBLAS_OP_N ? b->cols : b->rows;
  if (kA != kB || rowsA != d->rows || colsB != d->cols)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    prefix + "op(A) (" + std::to_string(rowsA) + " x " +
                        std::to_string(kA) + ") op(B) (" +
                        std::to_string(kB) + " x " + std::to_string(colsB) +
                        ") is not D (" + shape(d) + ")");
  if (c->rows != d->rows || c->cols != d->cols)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    prefix + "C (" + shape(c) + ") and D (" + shape(d) +
                        ") differ in shape");
  switch (desc->epilogue) {
  case CUBLASLT_EPILOGUE_DEFAULT:
  case CUBLASLT_EPILOGUE_RELU:
  case CUBLASLT_EPILOGUE_GELU:
  case CUBLASLT_EPILOGUE_BIAS:
  case CUBLASLT_EPILOGUE_RELU_BIAS:
  case CUBLASLT_EPILOGUE_GELU_BIAS:
    break;
  default:
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    prefix + "epilogue " + std::to_string(desc->epilogue) +
                        " is not emulated (DEFAULT, RELU, GELU and their "
                        "BIAS forms are)");
  }
  if ((desc->epilogue & CUBLASLT_EPILOGUE_BIAS) && desc->biasType != -1 &&
      desc->biasType != int(d->type))
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    prefix + "bias data type " +
                        std::to_string(desc->biasType) + " with D of type " +
                        std::to_string(d->type) + " is not emulated");
  if (desc->pointerMode != CUBLASLT_POINTER_MODE_HOST)
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    prefix + "pointer mode " +
                        std::to_string(desc->pointerMode) +
                        " is not emulated (host scalars are)");
  return CUBLAS_STATUS_SUCCESS;
}

/// The host address of a column-major operand in device memory.
cublasStatus_t hostOperand(const char *name, const void *p, const Layout *l,
                           size_t bytes, const void *&host) {
  host = nullptr;
  if (l->rows == 0 || l->cols == 0)
    return CUBLAS_STATUS_SUCCESS;
  size_t extent = size_t((l->cols - 1) * uint64_t(l->ld) + l->rows) * bytes;
  char why[512];
  host = tprtEmuHostRange(p, extent, why, sizeof(why));
  if (!host)
    return complain(CUBLAS_STATUS_EXECUTION_FAILED,
                    std::string("cublasLtMatmul: operand ") + name + " (" +
                        shape(l) + ", " + std::to_string(extent) +
                        " bytes) is not in device memory: " + why);
  return CUBLAS_STATUS_SUCCESS;
}

/// Whether beta (host scalar of the matmul's scale type) is 0.
bool betaValueIsZero(const Types &types, const void *beta) {
  if (!beta)
    return false;
  return types.doubleScalars ? *static_cast<const double *>(beta) == 0.0
                             : *static_cast<const float *>(beta) == 0.0f;
}

} // namespace

MOCK_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  if (!handle)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtCreate: the handle pointer is null");
  *handle = reinterpret_cast<cublasLtHandle_t>(new LtHandle());
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  auto *h = reinterpret_cast<LtHandle *>(handle);
  if (h && h->magic != kMagicHandle)
    return complain(CUBLAS_STATUS_NOT_INITIALIZED,
                    "cublasLtDestroy: not a handle of cublasLtCreate");
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtMatmulDescCreate(
    cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
    cudaDataType_t scale) {
  if (!desc)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtMatmulDescCreate: the descriptor pointer is null");
  auto *d = new MatmulDesc();
  d->compute = compute;
  d->scale = scale;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete reinterpret_cast<MatmulDesc *>(desc);
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(
    cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
    const void *buf, size_t size) {
  const char *call = "cublasLtMatmulDescSetAttribute";
  auto *d = reinterpret_cast<MatmulDesc *>(desc);
  if (!d || d->magic != kMagicMatmul)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    std::string(call) + ": not a matmul descriptor");
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA: {
    int32_t op;
    if (cublasStatus_t s = readAttribute(call, "TRANSA", buf, size, op))
      return s;
    d->transa = cublasOperation_t(op);
    return CUBLAS_STATUS_SUCCESS;
  }
  case CUBLASLT_MATMUL_DESC_TRANSB: {
    int32_t op;
    if (cublasStatus_t s = readAttribute(call, "TRANSB", buf, size, op))
      return s;
    d->transb = cublasOperation_t(op);
    return CUBLAS_STATUS_SUCCESS;
  }
  case CUBLASLT_MATMUL_DESC_EPILOGUE: {
    uint32_t e;
    if (cublasStatus_t s = readAttribute(call, "EPILOGUE", buf, size, e))
      return s;
    d->epilogue = cublasLtEpilogue_t(e);
    return CUBLAS_STATUS_SUCCESS;
  }
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    return readAttribute(call, "BIAS_POINTER", buf, size, d->bias);
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: {
    int32_t t;
    if (cublasStatus_t s = readAttribute(call, "BIAS_DATA_TYPE", buf, size, t))
      return s;
    d->biasType = t;
    return CUBLAS_STATUS_SUCCESS;
  }
  case CUBLASLT_MATMUL_DESC_POINTER_MODE: {
    int32_t mode;
    if (cublasStatus_t s = readAttribute(call, "POINTER_MODE", buf, size, mode))
      return s;
    d->pointerMode = cublasLtPointerMode_t(mode);
    return CUBLAS_STATUS_SUCCESS;
  }
  default:
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    std::string(call) + ": attribute " +
                        std::to_string(attr) + " is not emulated");
  }
}

MOCK_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(
    cublasLtMatrixLayout_t *layout, cudaDataType type, uint64_t rows,
    uint64_t cols, int64_t ld) {
  if (!layout)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtMatrixLayoutCreate: the layout pointer is null");
  if (ld < 0)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtMatrixLayoutCreate: negative leading dimension");
  auto *l = new Layout();
  l->type = type;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(
    cublasLtMatrixLayout_t layout) {
  delete reinterpret_cast<Layout *>(layout);
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(
    cublasLtMatmulPreference_t *pref) {
  if (!pref)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtMatmulPreferenceCreate: the pointer is null");
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference());
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(
    cublasLtMatmulPreference_t pref) {
  delete reinterpret_cast<Preference *>(pref);
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
    const void *buf, size_t size) {
  const char *call = "cublasLtMatmulPreferenceSetAttribute";
  auto *p = reinterpret_cast<Preference *>(pref);
  if (!p || p->magic != kMagicPref)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    std::string(call) + ": not a preference descriptor");
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    return readAttribute(call, "MAX_WORKSPACE_BYTES", buf, size,
                         p->maxWorkspace);
  case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
    if (cublasStatus_t s = readAttribute(call, "REDUCTION_SCHEME_MASK", buf,
                                         size, p->reductionMask))
      return s;
    if (p->reductionMask & ~uint32_t(CUBLASLT_REDUCTION_SCHEME_MASK))
      return complain(CUBLAS_STATUS_INVALID_VALUE,
                      std::string(call) + ": unknown reduction schemes in "
                                          "the mask");
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
    int i = attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES;
    uint32_t value;
    if (cublasStatus_t s = readAttribute(call, "MIN_ALIGNMENT", buf, size,
                                         value))
      return s;
    if (!value || (value & (value - 1)))
      return complain(CUBLAS_STATUS_INVALID_VALUE,
                      std::string(call) + ": MIN_ALIGNMENT_" + "ABCD"[i] +
                          "_BYTES " + std::to_string(value) +
                          " is not a power of two");
    p->minAlignment[i] = value;
    return CUBLAS_STATUS_SUCCESS;
  }
  default:
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    std::string(call) + ": attribute " +
                        std::to_string(attr) + " is not emulated");
  }
}

MOCK_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t adesc, cublasLtMatrixLayout_t bdesc,
    cublasLtMatrixLayout_t cdesc, cublasLtMatrixLayout_t ddesc,
    cublasLtMatmulPreference_t pref, int requested,
    cublasLtMatmulHeuristicResult_t results[], int *returned) {
  const char *call = "cublasLtMatmulAlgoGetHeuristic";
  auto *h = reinterpret_cast<LtHandle *>(handle);
  if (!h || h->magic != kMagicHandle)
    return complain(CUBLAS_STATUS_NOT_INITIALIZED,
                    std::string(call) + ": not a handle of cublasLtCreate");
  auto *p = reinterpret_cast<Preference *>(pref);
  if (!p || p->magic != kMagicPref)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    std::string(call) + ": not a preference descriptor");
  if (requested < 1 || !results || !returned)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    std::string(call) + ": no room for a result");
  Types types;
  if (cublasStatus_t s = checkProblem(
          call, reinterpret_cast<MatmulDesc *>(desc),
          reinterpret_cast<Layout *>(adesc), reinterpret_cast<Layout *>(bdesc),
          reinterpret_cast<Layout *>(cdesc), reinterpret_cast<Layout *>(ddesc),
          types))
    return s;
  // One algorithm, 16-byte vectorised: none for less aligned operands.
  *returned = 0;
  auto *matmul = reinterpret_cast<MatmulDesc *>(desc);
  uint32_t biasAlignment = (matmul->epilogue & CUBLASLT_EPILOGUE_BIAS)
                               ? tprt::pointerAlignment(matmul->bias)
                               : 256;
  for (int i = 0; i < 5; ++i) {
    uint32_t align = i < 4 ? p->minAlignment[i] : biasAlignment;
    if (align < kAlgoVectorBytes)
      return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                      std::string(call) + ": no algorithm for " +
                          (i < 4 ? std::string(1, "ABCD"[i])
                                 : std::string("the bias")) +
                          " aligned to " + std::to_string(align) +
                          " bytes (the emulated algorithm loads " +
                          std::to_string(kAlgoVectorBytes) +
                          "-byte vectors)");
  }
  // It asks for some workspace when the preference allows it (as split-K
  // ones do), none otherwise, and is entitled to the alignments the
  // preference promised.
  std::memset(results, 0, sizeof(results[0]));
  results[0].algo.data[0] = kMagicAlgo;
  for (int i = 0; i < 4; ++i)
    results[0].algo.data[2 + i] = p->minAlignment[i];
  results[0].workspaceSize =
      p->maxWorkspace < kAlgoWorkspace ? 0 : kAlgoWorkspace;
  results[0].algo.data[1] = results[0].workspaceSize;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

MOCK_EXPORT cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t computeDesc,
    const void *alpha, const void *A, cublasLtMatrixLayout_t adesc,
    const void *B, cublasLtMatrixLayout_t bdesc, const void *beta,
    const void *C, cublasLtMatrixLayout_t cdesc, void *D,
    cublasLtMatrixLayout_t ddesc, const cublasLtMatmulAlgo_t *algo,
    void *workspace, size_t workspaceSize, cudaStream_t) {
  const char *call = "cublasLtMatmul";
  std::string prefix = std::string(call) + ": ";
  auto *h = reinterpret_cast<LtHandle *>(handle);
  if (!h || h->magic != kMagicHandle)
    return complain(CUBLAS_STATUS_NOT_INITIALIZED,
                    prefix + "not a handle of cublasLtCreate");
  auto *desc = reinterpret_cast<MatmulDesc *>(computeDesc);
  auto *a = reinterpret_cast<Layout *>(adesc);
  auto *b = reinterpret_cast<Layout *>(bdesc);
  auto *c = reinterpret_cast<Layout *>(cdesc);
  auto *d = reinterpret_cast<Layout *>(ddesc);
  Types types;
  if (cublasStatus_t s = checkProblem(call, desc, a, b, c, d, types))
    return s;
  if (!algo || algo->data[0] != kMagicAlgo)
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    prefix + "the algorithm is not one of "
                             "cublasLtMatmulAlgoGetHeuristic (the emulator "
                             "runs no other)");
  const void *operands[4] = {A, B, C, D};
  for (int i = 0; i < 4; ++i) {
    if (i == 2 && betaValueIsZero(types, beta))
      continue; // C is not read
    uint32_t align = tprt::pointerAlignment(operands[i]);
    if (align < algo->data[2 + i])
      return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                      prefix + "operand " + "ABCD"[i] + " is " +
                          std::to_string(align) +
                          "-byte aligned; the algorithm was chosen for " +
                          std::to_string(algo->data[2 + i]) +
                          " bytes (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_" +
                          "ABCD"[i] + "_BYTES)");
  }
  uint64_t needed = algo->data[1];
  if (workspaceSize < needed)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    prefix + "the algorithm needs " + std::to_string(needed) +
                        " bytes of workspace, given " +
                        std::to_string(workspaceSize));
  char why[512];
  if (workspaceSize > 0 &&
      !tprtEmuHostRange(workspace, workspaceSize, why, sizeof(why)))
    return complain(CUBLAS_STATUS_EXECUTION_FAILED,
                    prefix + "the workspace (" + std::to_string(workspaceSize) +
                        " bytes) is not in device memory: " + why);
  if (!alpha || !beta)
    return complain(CUBLAS_STATUS_INVALID_VALUE, prefix + "alpha or beta is null");
  double alphaValue = types.doubleScalars ? *static_cast<const double *>(alpha)
                                          : *static_cast<const float *>(alpha);
  double betaValue = types.doubleScalars ? *static_cast<const double *>(beta)
                                         : *static_cast<const float *>(beta);
  if (alphaValue != 1.0 || (betaValue != 0.0 && betaValue != 1.0))
    return complain(CUBLAS_STATUS_NOT_SUPPORTED,
                    prefix + "alpha " + std::to_string(alphaValue) +
                        " and beta " + std::to_string(betaValue) +
                        " are not emulated (alpha 1, beta 0 or 1 are)");
  // In-place (C == D) needs one layout.
  if (betaValue != 0.0 && C == D && c->ld != d->ld)
    return complain(CUBLAS_STATUS_INVALID_VALUE,
                    prefix + "C is D with another leading dimension (C " +
                        shape(c) + ", D " + shape(d) + ")");

  uint64_t rows = d->rows, cols = d->cols;
  uint64_t k = desc->transa == CUBLAS_OP_N ? a->cols : a->rows;
  const void *hostA = nullptr, *hostB = nullptr, *hostC = nullptr,
             *hostD = nullptr, *hostBias = nullptr;
  if (k > 0) {
    if (cublasStatus_t s = hostOperand("A", A, a, types.bytes, hostA))
      return s;
    if (cublasStatus_t s = hostOperand("B", B, b, types.bytes, hostB))
      return s;
  }
  if (betaValue != 0.0)
    if (cublasStatus_t s = hostOperand("C", C, c, types.bytes, hostC))
      return s;
  if (cublasStatus_t s = hostOperand("D", D, d, types.bytes, hostD))
    return s;
  bool hasBias = desc->epilogue & CUBLASLT_EPILOGUE_BIAS;
  if (hasBias) {
    if (!desc->bias)
      return complain(CUBLAS_STATUS_INVALID_VALUE,
                      prefix + "a BIAS epilogue without a bias pointer "
                               "(CUBLASLT_MATMUL_DESC_BIAS_POINTER)");
    if (rows > 0 &&
        !(hostBias = tprtEmuHostRange(desc->bias, rows * types.bytes, why,
                                      sizeof(why))))
      return complain(CUBLAS_STATUS_EXECUTION_FAILED,
                      prefix + "the bias (" + std::to_string(rows) +
                          " values, one per row of D) is not in device "
                          "memory: " + why);
  }
  if (rows == 0 || cols == 0)
    return CUBLAS_STATUS_SUCCESS;
  int activation = TPRT_ACTIVATION_NONE;
  if ((desc->epilogue & ~CUBLASLT_EPILOGUE_BIAS) == CUBLASLT_EPILOGUE_RELU)
    activation = TPRT_ACTIVATION_RELU;
  if ((desc->epilogue & ~CUBLASLT_EPILOGUE_BIAS) == CUBLASLT_EPILOGUE_GELU)
    activation = TPRT_ACTIVATION_GELU_TANH;
  // Row-major D^T (cols x rows, ld d->ld) = op(B)^T op(A)^T (+ C^T, + the
  // bias along its columns).
  tprt_status status = tprt::hostGemmEpilogue(
      types.dtype, desc->transb != CUBLAS_OP_N, desc->transa != CUBLAS_OP_N,
      int64_t(cols), int64_t(rows), int64_t(k), hostB, b->ld, hostA, a->ld,
      hostC, c->ld, hostBias, activation, const_cast<void *>(hostD), d->ld);
  if (status != TPRT_OK)
    return complain(CUBLAS_STATUS_EXECUTION_FAILED,
                    prefix + "the host GEMM failed: " + tprt_last_error());
  return CUBLAS_STATUS_SUCCESS;
}
