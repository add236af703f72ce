//===- DeviceApi.cpp - C entry points: memory, topology, batched GEMM -----===//
//
// The calls a runner needs to drive a GPU backend the same way as a CPU one:
// tprt_memory_is_device, tprt_memcpy and tprt_synchronize; the topology
// queries; tprt_gemm_strided_batched, tprt_gemm_mixed, tprt_gemm_shared_a,
// tprt_gemm_grouped and tprt_gemm_epilogue.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "DType.h"
#include "Error.h"

#include <algorithm>
#include <utility>
#include <vector>

using namespace tprt;

#define TPRT_EXPORT extern "C" TPRT_API

TPRT_EXPORT tprt_status tprt_memory_is_device(tprt_context *ctx, int *out) {
  ApiScope scope("tprt_memory_is_device");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  *out = ctx->backend->deviceMemory() ? 1 : 0;
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_memcpy(tprt_context *ctx, void *dst,
                                    const void *src, size_t bytes) {
  ApiScope scope("tprt_memcpy");
  return guard([&]() -> tprt_status {
    if (!ctx)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "ctx is null");
    if (bytes == 0)
      return TPRT_OK;
    if (tprt_status status = checkNotNull({{"dst", dst}, {"src", src}}))
      return status;
    return ctx->backend->copyBytes(dst, src, bytes);
  });
}

TPRT_EXPORT tprt_status tprt_synchronize(tprt_context *ctx) {
  ApiScope scope("tprt_synchronize");
  if (!ctx)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "ctx is null");
  return guard([&] { return ctx->backend->synchronize(); });
}

TPRT_EXPORT tprt_status tprt_local_rank(tprt_context *ctx, int *out) {
  ApiScope scope("tprt_local_rank");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  *out = ctx->topology.localRank[size_t(ctx->backend->rank())];
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_node_count(tprt_context *ctx, int *out) {
  ApiScope scope("tprt_node_count");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  *out = ctx->topology.nodeCount;
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_node_of(tprt_context *ctx, int world_rank,
                                     int *out) {
  ApiScope scope("tprt_node_of");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  int size = ctx->backend->size();
  if (world_rank < 0 || world_rank >= size)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "world_rank %d is out of range for %d ranks", world_rank, size);
  *out = ctx->topology.nodeOf[size_t(world_rank)];
  return TPRT_OK;
}

namespace {

/// The checks the batched GEMM entry points share: the context, a float
/// dtype, sizes >= 0 (`what` names them in the message) and leading
/// dimensions that hold a stored row of each operand.
tprt_status checkGemm(tprt_context *ctx, tprt_dtype dtype, int trans_a,
                      int trans_b, int64_t m, int64_t n, int64_t k,
                      int64_t lda, int64_t ldb, int64_t ldc) {
  if (!ctx)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "ctx is null");
  if (!isValidDType(dtype))
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "dtype %d is not a tprt_dtype",
                static_cast<int>(dtype));
  if (dtype == TPRT_I32 || dtype == TPRT_I64)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "dtype %s is not supported (f32, f64, f16 and bf16 are)",
                dtypeName(dtype));
  if (m < 0 || n < 0 || k < 0)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "m, n and k must be >= 0, got %lld, %lld and %lld",
                static_cast<long long>(m), static_cast<long long>(n),
                static_cast<long long>(k));
  struct Operand {
    const char *ld;
    int64_t value, columns;
    const char *name;
  };
  const Operand operands[] = {{"lda", lda, trans_a ? m : k, "A"},
                              {"ldb", ldb, trans_b ? k : n, "B"},
                              {"ldc", ldc, n, "C"}};
  for (const Operand &op : operands)
    if (op.value < std::max<int64_t>(1, op.columns))
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "%s is %lld, smaller than the %lld columns of %s as stored",
                  op.ld, static_cast<long long>(op.value),
                  static_cast<long long>(op.columns), op.name);
  return TPRT_OK;
}

/// tprt_gemm_strided_batched (abType == cType) and tprt_gemm_mixed: the
/// checks, then the backend's batched or mixed-precision GEMM and the
/// counters.
tprt_status stridedGemm(tprt_context *ctx, tprt_dtype abType,
                        tprt_dtype cType, int trans_a, int trans_b, int64_t m,
                        int64_t n, int64_t k, float alpha, const void *a,
                        int64_t lda, int64_t stride_a, const void *b,
                        int64_t ldb, int64_t stride_b, float beta, void *c,
                        int64_t ldc, int64_t stride_c, int64_t batch) {
  if (tprt_status status =
          checkGemm(ctx, abType, trans_a, trans_b, m, n, k, lda, ldb, ldc))
    return status;
  if (cType != abType) {
    if (!isValidDType(cType))
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "c_dtype %d is not a tprt_dtype", static_cast<int>(cType));
    if ((abType != TPRT_F16 && abType != TPRT_BF16) || cType != TPRT_F32)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "%s operands into %s are not supported (f16 or bf16 "
                  "operands into f32 are, and any one float type)",
                  dtypeName(abType), dtypeName(cType));
  }
  if (batch < 0)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "batch is %lld, expected >= 0",
                static_cast<long long>(batch));
  const std::pair<const char *, int64_t> strides[] = {
      {"stride_a", stride_a}, {"stride_b", stride_b}, {"stride_c", stride_c}};
  for (auto [name, value] : strides)
    if (value < 0)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "%s is %lld, expected >= 0",
                  name, static_cast<long long>(value));
  // The C matrices of the batch must not overlap.
  if (batch > 1 && m > 0 && n > 0 && stride_c < (m - 1) * ldc + n)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "stride_c is %lld, smaller than one %lldx%lld C matrix "
                "with ldc %lld: the outputs of the batch overlap",
                static_cast<long long>(stride_c), static_cast<long long>(m),
                static_cast<long long>(n), static_cast<long long>(ldc));
  if (batch > 0)
    if (tprt_status status = checkGemmOperands(a, b, c, m, n, k))
      return status;
  if (batch == 0 || m == 0 || n == 0)
    return TPRT_OK;

  Backend::TimerMark mark;
  ctx->backend->timerBegin(mark);
  tprt_status status =
      cType == abType
          ? ctx->backend->batchedGemm(abType, trans_a != 0, trans_b != 0, m, n,
                                      k, alpha, a, lda, stride_a, b, ldb,
                                      stride_b, beta, c, ldc, stride_c, batch)
          : ctx->backend->gemmMixed(abType, cType, trans_a != 0, trans_b != 0,
                                    m, n, k, alpha, a, lda, stride_a, b, ldb,
                                    stride_b, beta, c, ldc, stride_c, batch);
  if (status) {
    ctx->backend->timerCancel(mark);
    return status;
  }
  ctx->backend->timerEnd(mark, &ctx->stats.gemm_seconds);
  ctx->stats.gemm_calls += uint64_t(batch);
  ctx->stats.gemm_flops +=
      2.0 * double(m) * double(n) * double(k) * double(batch);
  return TPRT_OK;
}

} // namespace

TPRT_EXPORT tprt_status tprt_gemm_strided_batched(
    tprt_context *ctx, tprt_dtype dtype, int trans_a, int trans_b, int64_t m,
    int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
    int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, float beta,
    void *c, int64_t ldc, int64_t stride_c, int64_t batch, void *stream) {
  ApiScope scope("tprt_gemm_strided_batched");
  (void)stream;
  return guard([&]() -> tprt_status {
    return stridedGemm(ctx, dtype, dtype, trans_a, trans_b, m, n, k, alpha, a,
                       lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                       batch);
  });
}

TPRT_EXPORT tprt_status tprt_gemm_mixed(
    tprt_context *ctx, tprt_dtype ab_dtype, tprt_dtype c_dtype, int trans_a,
    int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const void *a,
    int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
    int64_t stride_b, float beta, void *c, int64_t ldc, int64_t stride_c,
    int64_t batch, void *stream) {
  ApiScope scope("tprt_gemm_mixed");
  (void)stream;
  return guard([&]() -> tprt_status {
    return stridedGemm(ctx, ab_dtype, c_dtype, trans_a, trans_b, m, n, k,
                       alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                       stride_c, batch);
  });
}

namespace {

/// Whether two row-major matrices of `rows` rows of `width` bytes, rows
/// `pitch` bytes apart, starting at `first` and `second`, share a byte.
/// Exact, so that interleaved column blocks of one wider matrix (C_i =
/// base + i * n with ldc = count * n) are accepted.
bool matricesOverlap(const void *first, const void *second, int64_t rows,
                     uint64_t width, uint64_t pitch) {
  uintptr_t x = reinterpret_cast<uintptr_t>(first),
            y = reinterpret_cast<uintptr_t>(second);
  uint64_t d = x < y ? y - x : x - y; // the later one starts d bytes in
  uint64_t q = d / pitch, s = d % pitch;
  // Its row 0 lands in row q of the earlier one at column byte s (and, if
  // it wraps, in row q + 1 from column byte 0 up to s + width - pitch).
  return (s < width && q < uint64_t(rows)) ||
         (pitch - s < width && q + 1 < uint64_t(rows));
}

} // namespace

TPRT_EXPORT tprt_status tprt_gemm_shared_a(
    tprt_context *ctx, tprt_dtype dtype, int trans_a, int trans_b, int64_t m,
    int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
    const void *const *b, int64_t ldb, float beta, void *const *c, int64_t ldc,
    int count, void *stream) {
  ApiScope scope("tprt_gemm_shared_a");
  (void)stream;
  return guard([&]() -> tprt_status {
    if (tprt_status status =
            checkGemm(ctx, dtype, trans_a, trans_b, m, n, k, lda, ldb, ldc))
      return status;
    if (count < 1)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "count is %d, expected >= 1",
                  count);
    if (tprt_status status = checkNotNull({{"b", b}, {"c", c}}))
      return status;
    if (!a && m > 0 && k > 0)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "a is null");
    for (int i = 0; i < count; ++i) {
      if (!b[i] && k > 0 && n > 0)
        return fail(TPRT_ERROR_INVALID_ARGUMENT, "b[%d] is null", i);
      if (!c[i] && m > 0 && n > 0)
        return fail(TPRT_ERROR_INVALID_ARGUMENT, "c[%d] is null", i);
    }
    if (m == 0 || n == 0)
      return TPRT_OK;
    // The products may run concurrently: their outputs must not overlap.
    size_t es = dtypeSize(dtype);
    for (int i = 1; i < count; ++i)
      for (int j = 0; j < i; ++j)
        if (matricesOverlap(c[j], c[i], m, uint64_t(n) * es,
                            uint64_t(ldc) * es))
          return fail(TPRT_ERROR_INVALID_ARGUMENT,
                      "c[%d] overlaps c[%d] (%lldx%lld C matrices with ldc "
                      "%lld): the outputs must not overlap",
                      i, j, static_cast<long long>(m),
                      static_cast<long long>(n), static_cast<long long>(ldc));

    Backend::TimerMark mark;
    ctx->backend->timerBegin(mark);
    tprt_status status =
        ctx->backend->sharedAGemm(dtype, trans_a != 0, trans_b != 0, m, n, k,
                                  alpha, a, lda, b, ldb, beta, c, ldc, count);
    if (status) {
      ctx->backend->timerCancel(mark);
      return status;
    }
    ctx->backend->timerEnd(mark, &ctx->stats.gemm_seconds);
    ctx->stats.gemm_calls += uint64_t(count);
    ctx->stats.gemm_flops +=
        2.0 * double(m) * double(n) * double(k) * double(count);
    return TPRT_OK;
  });
}

TPRT_EXPORT tprt_status tprt_gemm_grouped(
    tprt_context *ctx, tprt_dtype dtype, int trans_b, int groups,
    const int64_t *group_rows, int64_t rows, int64_t n, int64_t k,
    float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
    int64_t stride_b, float beta, void *c, int64_t ldc, void *stream) {
  ApiScope scope("tprt_gemm_grouped");
  (void)stream;
  return guard([&]() -> tprt_status {
    // A is rows x k as stored (never transposed: its rows are the groups').
    if (tprt_status status =
            checkGemm(ctx, dtype, 0, trans_b, rows, n, k, lda, ldb, ldc))
      return status;
    if (groups < 0)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "groups is %d, expected >= 0",
                  groups);
    if (stride_b < 0)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "stride_b is %lld, expected >= 0",
                  static_cast<long long>(stride_b));
    if (groups == 0)
      return TPRT_OK;
    if (tprt_status status = checkNotNull({{"group_rows", group_rows}}))
      return status;
    if (tprt_status status = checkGemmOperands(a, b, c, rows, n, k))
      return status;
    // The counts, wherever they live (a kernel's output on GPU backends).
    std::vector<int64_t> counts(static_cast<size_t>(groups));
    if (tprt_status status = ctx->backend->copyBytes(
            counts.data(), group_rows, counts.size() * sizeof(int64_t)))
      return status;
    int64_t total = 0, products = 0;
    for (int g = 0; g < groups; ++g) {
      int64_t count = counts[static_cast<size_t>(g)];
      if (count < 0)
        return fail(TPRT_ERROR_INVALID_ARGUMENT,
                    "group_rows[%d] is %lld, expected >= 0", g,
                    static_cast<long long>(count));
      total += count;
      products += count > 0 ? 1 : 0;
      if (total > rows)
        return fail(TPRT_ERROR_INVALID_ARGUMENT,
                    "the group rows sum to more than the %lld rows of A and C "
                    "(%lld after group %d)",
                    static_cast<long long>(rows),
                    static_cast<long long>(total), g);
    }
    if (total == 0 || n == 0)
      return TPRT_OK;

    Backend::TimerMark mark;
    ctx->backend->timerBegin(mark);
    tprt_status status = ctx->backend->groupedGemm(
        dtype, trans_b != 0, groups, counts.data(), n, k, alpha, a, lda, b,
        ldb, stride_b, beta, c, ldc);
    if (status) {
      ctx->backend->timerCancel(mark);
      return status;
    }
    ctx->backend->timerEnd(mark, &ctx->stats.gemm_seconds);
    ctx->stats.gemm_calls += uint64_t(products);
    ctx->stats.gemm_flops += 2.0 * double(total) * double(n) * double(k);
    return TPRT_OK;
  });
}

namespace {

/// Whether [first, first + firstBytes) and [second, second + secondBytes)
/// intersect (conservative for strided matrices: their hulls).
bool spansOverlap(const void *first, uint64_t firstBytes, const void *second,
                  uint64_t secondBytes) {
  uintptr_t x = reinterpret_cast<uintptr_t>(first),
            y = reinterpret_cast<uintptr_t>(second);
  return x < y + secondBytes && y < x + firstBytes;
}

} // namespace

TPRT_EXPORT tprt_status tprt_gemm_epilogue(
    tprt_context *ctx, tprt_dtype dtype, int trans_a, int trans_b, int64_t m,
    int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
    int64_t ldb, const void *addend, int64_t ld_addend, const void *bias,
    int activation, void *c, int64_t ldc, void *stream) {
  ApiScope scope("tprt_gemm_epilogue");
  (void)stream;
  return guard([&]() -> tprt_status {
    if (tprt_status status =
            checkGemm(ctx, dtype, trans_a, trans_b, m, n, k, lda, ldb, ldc))
      return status;
    if (activation != TPRT_ACTIVATION_NONE &&
        activation != TPRT_ACTIVATION_RELU &&
        activation != TPRT_ACTIVATION_GELU_TANH)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "activation %d is not a tprt_activation (0 none, 1 relu, "
                  "2 gelu_tanh)",
                  activation);
    if (addend && ld_addend < std::max<int64_t>(1, n))
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "ld_addend is %lld, smaller than the %lld columns of the "
                  "addend",
                  static_cast<long long>(ld_addend), static_cast<long long>(n));
    if (tprt_status status = checkGemmOperands(a, b, c, m, n, k))
      return status;
    if (m == 0 || n == 0)
      return TPRT_OK;
    size_t es = dtypeSize(dtype);
    uint64_t cBytes = (uint64_t(m - 1) * uint64_t(ldc) + uint64_t(n)) * es;
    // The addend is read while C is written: C itself (same rows) or
    // elsewhere.
    if (addend && !(addend == c && ld_addend == ldc)) {
      uint64_t addendBytes =
          (uint64_t(m - 1) * uint64_t(ld_addend) + uint64_t(n)) * es;
      if (spansOverlap(addend, addendBytes, c, cBytes))
        return fail(TPRT_ERROR_INVALID_ARGUMENT,
                    "the addend overlaps C without being C (the same pointer "
                    "with ld_addend == ldc)");
    }
    if (bias && spansOverlap(bias, uint64_t(n) * es, c, cBytes))
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "the bias overlaps C");

    Backend::TimerMark mark;
    ctx->backend->timerBegin(mark);
    tprt_status status = ctx->backend->gemmEpilogue(
        dtype, trans_a != 0, trans_b != 0, m, n, k, a, lda, b, ldb, addend,
        addend ? ld_addend : n, bias, activation, c, ldc);
    if (status) {
      ctx->backend->timerCancel(mark);
      return status;
    }
    ctx->backend->timerEnd(mark, &ctx->stats.gemm_seconds);
    ctx->stats.gemm_calls += 1;
    ctx->stats.gemm_flops += 2.0 * double(m) * double(n) * double(k);
    return TPRT_OK;
  });
}
