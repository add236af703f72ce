/* model_abi.c - the GEMM entry points of tprt_model.h, called the way code
 * compiled by tp-opt calls them: MLIR memref descriptors, on a bound
 * context of the single backend.
 *
 *   tprt-model-abi-test            batched and 2-D products, checked
 *   tprt-model-abi-test bad-rank   a 2-D operand to the batched product
 *   tprt-model-abi-test bad-batch  operands with different batch sizes
 *   tprt-model-abi-test bad-shape  K of A and B disagree
 *
 * The bad cases must end the process with status 1 and the message
 * "tprt: batched_gemm failed on rank 0: ..." (failures are fatal).
 */
#include "tprt/tprt_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A rank-3 and a rank-2 memref descriptor of the default lowering. */
typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[3], strides[3];
} Memref3;
typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} Memref2;

static Memref3 memref3(void *data, int64_t d0, int64_t d1, int64_t d2) {
  Memref3 m;
  m.allocated = m.aligned = data;
  m.offset = 0;
  m.sizes[0] = d0;
  m.sizes[1] = d1;
  m.sizes[2] = d2;
  m.strides[0] = d1 * d2;
  m.strides[1] = d2;
  m.strides[2] = 1;
  return m;
}

static int failures = 0;

static void expect(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok)
    ++failures;
}

/* Element (b, i, j) of op(X) for X stored [batch, rows, cols]. */
static float at(const float *x, int trans, int64_t rows, int64_t cols,
                int64_t b, int64_t i, int64_t j) {
  return trans ? x[(b * rows + j) * cols + i] : x[(b * rows + i) * cols + j];
}

static void batched(int transA, int transB) {
  enum { B = 2, M = 3, K = 4, N = 5 };
  float a[B * M * K], b[B * K * N], c[B * M * N];
  int64_t i, j, l, p;
  int right = 1;
  char what[80];
  Memref3 ma, mb, mc;
  for (i = 0; i < B * M * K; ++i)
    a[i] = (float)((i * 7) % 5 - 2);
  for (i = 0; i < B * K * N; ++i)
    b[i] = (float)((i * 3) % 7 - 3);
  for (i = 0; i < B * M * N; ++i)
    c[i] = NAN;
  ma = transA ? memref3(a, B, K, M) : memref3(a, B, M, K);
  mb = transB ? memref3(b, B, N, K) : memref3(b, B, K, N);
  mc = memref3(c, B, M, N);
  tprt_mlir_batched_gemm_f32(transA, transB, 3, &ma, 3, &mb, 3, &mc);
  for (p = 0; p < B; ++p)
    for (i = 0; i < M; ++i)
      for (j = 0; j < N; ++j) {
        float want = 0;
        for (l = 0; l < K; ++l)
          want += at(a, transA, transA ? K : M, transA ? M : K, p, i, l) *
                  at(b, transB, transB ? N : K, transB ? K : N, p, l, j);
        if (c[(p * M + i) * N + j] != want)
          right = 0;
      }
  snprintf(what, sizeof(what), "batched_gemm f32%s%s", transA ? " A^T" : "",
           transB ? " B^T" : "");
  expect(right, what);
}

int main(int argc, char **argv) {
  tprt_context *ctx = NULL;
  int64_t mesh[1] = {1};
  float a[2 * 2 * 2] = {1, 2, 3, 4, 5, 6, 7, 8}, b[2 * 2 * 2] = {0},
                  c[2 * 2 * 2] = {0}, flat[4] = {0};
  Memref3 ma, mb, mc;
  Memref2 m2;
  if (tprt_init("single", &ctx) != TPRT_OK ||
      tprt_model_bind(ctx, 1, mesh) != TPRT_OK) {
    printf("init: %s\n", tprt_last_error());
    return 2;
  }
  ma = memref3(a, 2, 2, 2);
  mb = memref3(b, 2, 2, 2);
  mc = memref3(c, 2, 2, 2);
  if (argc == 2 && strcmp(argv[1], "bad-rank") == 0) {
    m2.allocated = m2.aligned = flat;
    m2.offset = 0;
    m2.sizes[0] = m2.sizes[1] = 2;
    m2.strides[0] = 2;
    m2.strides[1] = 1;
    tprt_mlir_batched_gemm_f32(0, 0, 3, &ma, 2, &m2, 3, &mc);
  } else if (argc == 2 && strcmp(argv[1], "bad-batch") == 0) {
    mb = memref3(b, 1, 2, 2);
    tprt_mlir_batched_gemm_f32(0, 0, 3, &ma, 3, &mb, 3, &mc);
  } else if (argc == 2 && strcmp(argv[1], "bad-shape") == 0) {
    mb = memref3(b, 2, 1, 2);
    tprt_mlir_batched_gemm_bf16(0, 0, 3, &ma, 3, &mb, 3, &mc);
  } else if (argc == 1) {
    batched(0, 0);
    batched(1, 0);
    batched(0, 1);
    batched(1, 1);
    tprt_finalize(ctx);
    printf("model-abi: %d failed\n", failures);
    return failures ? 1 : 0;
  } else {
    fprintf(stderr,
            "usage: tprt-model-abi-test [bad-rank|bad-batch|bad-shape]\n");
    return 2;
  }
  printf("the bad call returned\n");
  return 0;
}
