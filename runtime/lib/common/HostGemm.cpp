//===- HostGemm.cpp - Matrix products on the host -------------------------===//
//
// f32 and f64 go straight to cblas_sgemm / cblas_dgemm (row-major) of the
// BLAS that HostBlas.h loads. f16 and bf16 operands (Debian's OpenBLAS
// 0.3.21 has no sbgemm) are widened to f32 and multiplied by cblas_sgemm,
// so products accumulate in f32; C is f32 (hostGemmWidened into f32, the
// mixed-precision GEMM) or rounded back to the operands' type once.
//
// Widening by panels (hostGemmWidened): op(A) is cut into blocks of rows
// and op(B) into blocks of columns, each widened into a dense f32 scratch
// matrix and multiplied into its block of C by one sgemm. An operand of at
// most kWholeElements is one block, widened once per call (the activation
// of a projection; a 525M-element LM head is not); the other is cut into
// panels of about kPanelElements (4 MiB of f32, so that a panel is still in
// cache when sgemm packs it). The scratch belongs to the calling thread and
// only grows: once a step has run, later steps allocate nothing (the
// compiled step's own temporaries live in its arena, docs/passes/
// lower-cpu.md; this is the runtime's share). A 16-bit C goes through an
// f32 block of scratch too (read first when beta is not 0), rounded to
// nearest-even once.
//
// Without a BLAS a plain triple loop stands in. hostGemmEpilogue multiplies
// into a dense f32 (f64) scratch matrix and adds the addend and bias,
// activates and rounds in one pass.
//
//===----------------------------------------------------------------------===//

#include "HostGemm.h"

#include "DType.h"
#include "Error.h"
#include "HostBlas.h"

#include <algorithm>
#include <climits>
#include <vector>

using namespace tprt;

namespace {

// CBLAS's enumerators (cblas.h): the library is loaded at run time.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

int toCblas(bool trans) { return trans ? kTrans : kNoTrans; }

template <typename T>
void referenceGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   T alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
                   T beta, T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t l = 0; l < k; ++l)
        sum += (transA ? a[l * lda + i] : a[i * lda + l]) *
               (transB ? b[j * ldb + l] : b[l * ldb + j]);
      T &out = c[i * ldc + j];
      out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
    }
  }
}

void gemmF32(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
             float alpha, const float *a, int64_t lda, const float *b,
             int64_t ldb, float beta, float *c, int64_t ldc) {
  if (SgemmFn sgemm = hostBlas().sgemm)
    sgemm(kRowMajor, toCblas(transA), toCblas(transB), int(m), int(n), int(k),
          alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
  else
    referenceGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                  ldc);
}

void gemmF64(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
             double alpha, const double *a, int64_t lda, const double *b,
             int64_t ldb, double beta, double *c, int64_t ldc) {
  if (DgemmFn dgemm = hostBlas().dgemm)
    dgemm(kRowMajor, toCblas(transA), toCblas(transB), int(m), int(n), int(k),
          alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
  else
    referenceGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                  ldc);
}

/// Widens a rows x cols matrix with row stride `ld` into a dense f32 copy.
std::vector<float> widen(tprt_dtype dtype, const void *src, int64_t rows,
                         int64_t cols, int64_t ld) {
  std::vector<float> dense(size_t(rows * cols));
  const char *in = static_cast<const char *>(src);
  for (int64_t r = 0; r < rows; ++r)
    toFloat(dtype, in + size_t(r * ld) * 2, dense.data() + r * cols,
            size_t(cols));
  return dense;
}

/// An operand of at most this many elements is widened whole.
constexpr int64_t kWholeElements = int64_t(8) << 20;
/// The size of a panel of the other operand, in elements.
constexpr int64_t kPanelElements = int64_t(1) << 20;

/// The calling thread's widened blocks of A, B and C; grown, never shrunk.
struct WideningScratch {
  std::vector<float> a, b, c;
};

WideningScratch &wideningScratch() {
  thread_local WideningScratch scratch;
  return scratch;
}

float *reserve(std::vector<float> &v, int64_t elements) {
  if (v.size() < size_t(elements))
    v.resize(size_t(elements));
  return v.data();
}

/// Widens the block [row0, row0 + rows) x [col0, col0 + cols) of a 16-bit
/// matrix with row stride `ld` into `dst`, dense (row stride cols).
void widenBlock(tprt_dtype dtype, const void *src, int64_t ld, int64_t row0,
                int64_t rows, int64_t col0, int64_t cols, float *dst) {
  const char *in = static_cast<const char *>(src);
  for (int64_t r = 0; r < rows; ++r)
    toFloat(dtype, in + size_t((row0 + r) * ld + col0) * 2, dst + r * cols,
            size_t(cols));
}

/// What every host GEMM checks first: the sizes fit CBLAS's 32-bit ints
/// and a BLAS was loaded. `empty` is set for a product with no elements
/// (nothing to do, and no BLAS needed).
tprt_status checkHostGemm(int64_t m, int64_t n, int64_t k, int64_t lda,
                          int64_t ldb, int64_t ldc, bool &empty) {
  for (int64_t value : {m, n, k, lda, ldb, ldc})
    if (value > INT_MAX)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "size %lld exceeds the 32-bit range of CBLAS",
                  static_cast<long long>(value));
  empty = m == 0 || n == 0;
  if (!empty && !hostBlas().error.empty())
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "%s", hostBlas().error.c_str());
  return TPRT_OK;
}

} // namespace

tprt_status tprt::hostGemmWidened(tprt_dtype abType, tprt_dtype cType,
                                  bool transA, bool transB, int64_t m,
                                  int64_t n, int64_t k, float alpha,
                                  const void *a, int64_t lda, const void *b,
                                  int64_t ldb, float beta, void *c,
                                  int64_t ldc) {
  if (abType != TPRT_F16 && abType != TPRT_BF16)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "operands of dtype %s are not widened (f16 and bf16 are)",
                dtypeName(abType));
  if (cType != TPRT_F32 && cType != abType)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "%s operands into %s are not supported (f32 or %s is)",
                dtypeName(abType), dtypeName(cType), dtypeName(abType));
  bool empty = false;
  if (tprt_status st = checkHostGemm(m, n, k, lda, ldb, ldc, empty))
    return st;
  if (empty)
    return TPRT_OK;

  // Blocks of op(A)'s rows (mb) and op(B)'s columns (nb).
  int64_t depth = std::max<int64_t>(k, 1);
  int64_t panel = std::max<int64_t>(64, kPanelElements / depth);
  int64_t mb = m, nb = n;
  if (m * k > kWholeElements) {
    mb = std::min(m, panel);
    if (k * n > kWholeElements)
      nb = std::min(n, panel);
  } else if (k * n > kWholeElements) {
    nb = std::min(n, panel);
  }
  WideningScratch &scratch = wideningScratch();
  float *wideA = reserve(scratch.a, std::max<int64_t>(mb * k, 1));
  float *wideB = reserve(scratch.b, std::max<int64_t>(k * nb, 1));
  float *wideC =
      cType == TPRT_F32 ? nullptr : reserve(scratch.c, mb * nb);
  char *outC = static_cast<char *>(c);
  size_t cBytes = dtypeSize(cType);
  bool bDone = false;
  for (int64_t i0 = 0; i0 < m; i0 += mb) {
    int64_t rows = std::min(mb, m - i0);
    // op(A)'s rows [i0, i0 + rows): stored rows (columns if transposed).
    if (transA)
      widenBlock(abType, a, lda, 0, k, i0, rows, wideA);
    else
      widenBlock(abType, a, lda, i0, rows, 0, k, wideA);
    int64_t ldWideA = std::max<int64_t>(transA ? rows : k, 1);
    for (int64_t j0 = 0; j0 < n; j0 += nb) {
      int64_t cols = std::min(nb, n - j0);
      // op(B)'s columns [j0, j0 + cols), widened once when it is one block.
      if (!(bDone && nb == n)) {
        if (transB)
          widenBlock(abType, b, ldb, j0, cols, 0, k, wideB);
        else
          widenBlock(abType, b, ldb, 0, k, j0, cols, wideB);
        bDone = true;
      }
      int64_t ldWideB = std::max<int64_t>(transB ? k : cols, 1);
      char *block = outC + size_t(i0 * ldc + j0) * cBytes;
      if (cType == TPRT_F32) {
        gemmF32(transA, transB, rows, cols, k, alpha, wideA, ldWideA, wideB,
                ldWideB, beta, reinterpret_cast<float *>(block), ldc);
        continue;
      }
      if (beta != 0.0f)
        widenBlock(cType, block, ldc, 0, rows, 0, cols, wideC);
      gemmF32(transA, transB, rows, cols, k, alpha, wideA, ldWideA, wideB,
              ldWideB, beta, wideC, cols);
      for (int64_t r = 0; r < rows; ++r)
        fromFloat(cType, wideC + r * cols, block + size_t(r * ldc) * cBytes,
                  size_t(cols));
    }
  }
  return TPRT_OK;
}

tprt_status tprt::hostGemm(tprt_dtype dtype, bool transA, bool transB,
                           int64_t m, int64_t n, int64_t k, float alpha,
                           const void *a, int64_t lda, const void *b,
                           int64_t ldb, float beta, void *c, int64_t ldc) {
  bool empty = false;
  if (tprt_status st = checkHostGemm(m, n, k, lda, ldb, ldc, empty))
    return st;
  if (empty)
    return TPRT_OK;

  switch (dtype) {
  case TPRT_F32:
    gemmF32(transA, transB, m, n, k, alpha, static_cast<const float *>(a), lda,
            static_cast<const float *>(b), ldb, beta, static_cast<float *>(c),
            ldc);
    return TPRT_OK;
  case TPRT_F64:
    gemmF64(transA, transB, m, n, k, alpha, static_cast<const double *>(a), lda,
            static_cast<const double *>(b), ldb, beta, static_cast<double *>(c),
            ldc);
    return TPRT_OK;
  case TPRT_F16:
  case TPRT_BF16:
    return hostGemmWidened(dtype, dtype, transA, transB, m, n, k, alpha, a,
                           lda, b, ldb, beta, c, ldc);
  case TPRT_I32:
  case TPRT_I64:
  case TPRT_DTYPE_FORCE_32BIT:
    break;
  }
  return fail(TPRT_ERROR_INVALID_ARGUMENT, "dtype %s is not supported",
              dtypeName(dtype));
}

namespace {

/// One row of the epilogue: out = act(acc + addend + bias), rounded once.
template <typename Wide>
void epilogueRow(tprt_dtype dtype, const Wide *acc, const char *addend,
                 const char *bias, int activation, char *out, int64_t n) {
  std::vector<float> addendRow, biasRow;
  if (dtype == TPRT_F16 || dtype == TPRT_BF16) {
    if (addend) {
      addendRow.resize(size_t(n));
      toFloat(dtype, addend, addendRow.data(), size_t(n));
    }
    if (bias) {
      biasRow.resize(size_t(n));
      toFloat(dtype, bias, biasRow.data(), size_t(n));
    }
  }
  std::vector<float> row(dtype == TPRT_F16 || dtype == TPRT_BF16 ? size_t(n)
                                                                 : 0);
  for (int64_t j = 0; j < n; ++j) {
    Wide v = acc[j];
    if (dtype == TPRT_F32 || dtype == TPRT_F64) {
      if (addend)
        v += reinterpret_cast<const Wide *>(addend)[j];
      if (bias)
        v += reinterpret_cast<const Wide *>(bias)[j];
      reinterpret_cast<Wide *>(out)[j] = applyActivation(activation, v);
    } else {
      if (addend)
        v += Wide(addendRow[size_t(j)]);
      if (bias)
        v += Wide(biasRow[size_t(j)]);
      row[size_t(j)] = float(applyActivation(activation, v));
    }
  }
  if (!row.empty())
    fromFloat(dtype, row.data(), out, size_t(n));
}

} // namespace

tprt_status tprt::hostGemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                                   int64_t m, int64_t n, int64_t k,
                                   const void *a, int64_t lda, const void *b,
                                   int64_t ldb, const void *addend,
                                   int64_t ldAddend, const void *bias,
                                   int activation, void *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return TPRT_OK;
  size_t es = dtypeSize(dtype);
  char *outC = static_cast<char *>(c);
  const char *add = static_cast<const char *>(addend);
  const char *bs = static_cast<const char *>(bias);
  if (dtype == TPRT_F64) {
    std::vector<double> acc(size_t(m * n));
    if (tprt_status status = hostGemm(dtype, transA, transB, m, n, k, 1.0f, a,
                                      lda, b, ldb, 0.0f, acc.data(), n))
      return status;
    for (int64_t i = 0; i < m; ++i)
      epilogueRow(dtype, acc.data() + i * n,
                  add ? add + size_t(i * ldAddend) * es : nullptr, bs,
                  activation, outC + size_t(i * ldc) * es, n);
    return TPRT_OK;
  }
  if (dtype != TPRT_F32 && dtype != TPRT_F16 && dtype != TPRT_BF16)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "dtype %s is not supported",
                dtypeName(dtype));
  // The product in f32, unrounded: f16 and bf16 operands widened.
  std::vector<float> acc(size_t(m * n));
  if (dtype == TPRT_F32) {
    if (tprt_status status = hostGemm(dtype, transA, transB, m, n, k, 1.0f, a,
                                      lda, b, ldb, 0.0f, acc.data(), n))
      return status;
  } else {
    int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
    int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
    std::vector<float> wideA = widen(dtype, a, rowsA, colsA, lda);
    std::vector<float> wideB = widen(dtype, b, rowsB, colsB, ldb);
    if (tprt_status status = hostGemm(
            TPRT_F32, transA, transB, m, n, k, 1.0f, wideA.data(),
            colsA > 0 ? colsA : 1, wideB.data(), colsB > 0 ? colsB : 1, 0.0f,
            acc.data(), n))
      return status;
  }
  for (int64_t i = 0; i < m; ++i)
    epilogueRow(dtype, acc.data() + i * n,
                add ? add + size_t(i * ldAddend) * es : nullptr, bs,
                activation, outC + size_t(i * ldc) * es, n);
  return TPRT_OK;
}
