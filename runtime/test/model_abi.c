/* model_abi.c - the GEMM entry points of tprt_model.h, called the way code
 * compiled by tp-opt calls them: MLIR memref descriptors, on a bound
 * context of the single backend.
 *
 *   tprt-model-abi-test            batched and 2-D products (f32, and bf16
 *                                  into f32), checked
 *   tprt-model-abi-test bad-rank   a 2-D operand to the batched product
 *   tprt-model-abi-test bad-batch  operands with different batch sizes
 *   tprt-model-abi-test bad-shape  K of A and B disagree
 *   tprt-model-abi-test bad-shared-a  B_1 of a shared-A product has a
 *                                     different shape than B_0
 *   tprt-model-abi-test bad-bias   a gemm_epilogue bias of the wrong length
 *   tprt-model-abi-test bad-mixed  K of A and B of a bf16-into-f32 gemm
 *                                  disagree
 *
 * The bad cases must end the process with status 1 and the message
 * "tprt: batched_gemm failed on rank 0: ..." (or gemm_shared_a3: failures
 * are fatal).
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

static Memref2 memref2(void *data, int64_t d0, int64_t d1) {
  Memref2 m;
  m.allocated = m.aligned = data;
  m.offset = 0;
  m.sizes[0] = d0;
  m.sizes[1] = d1;
  m.strides[0] = d1;
  m.strides[1] = 1;
  return m;
}

/* tprt_mlir_gemm_shared_a3_f32: C_p = op(A) op(B_p) for p < 3, each
 * checked against the plain product (small integers: exact). */
static void sharedA3(int transA, int transB) {
  enum { M = 3, K = 4, N = 5 };
  float a[M * K], b[3][K * N], c[3][M * N];
  int64_t i, j, l, p;
  int right = 1;
  char what[80];
  Memref2 ma, mb[3], mc[3];
  for (i = 0; i < M * K; ++i)
    a[i] = (float)((i * 7) % 5 - 2);
  for (p = 0; p < 3; ++p) {
    for (i = 0; i < K * N; ++i)
      b[p][i] = (float)((i * 3 + p * 2) % 7 - 3);
    for (i = 0; i < M * N; ++i)
      c[p][i] = NAN;
    mb[p] = transB ? memref2(b[p], N, K) : memref2(b[p], K, N);
    mc[p] = memref2(c[p], M, N);
  }
  ma = transA ? memref2(a, K, M) : memref2(a, M, K);
  tprt_mlir_gemm_shared_a3_f32(transA, transB, 2, &ma, 2, &mb[0], 2, &mb[1], 2,
                               &mb[2], 2, &mc[0], 2, &mc[1], 2, &mc[2]);
  for (p = 0; p < 3; ++p)
    for (i = 0; i < M; ++i)
      for (j = 0; j < N; ++j) {
        float want = 0;
        for (l = 0; l < K; ++l)
          want += at(a, transA, transA ? K : M, transA ? M : K, 0, i, l) *
                  at(b[p], transB, transB ? N : K, transB ? K : N, 0, l, j);
        if (c[p][i * N + j] != want)
          right = 0;
      }
  snprintf(what, sizeof(what), "gemm_shared_a3 f32%s%s", transA ? " A^T" : "",
           transB ? " B^T" : "");
  expect(right, what);
}

/* bf16 bits of `value` (exact for values of at most 8 significant bits). */
static uint16_t bf16(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return (uint16_t)(bits >> 16);
}

static float fromBf16(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

/* tprt_mlir_gemm_bf16_f32 and tprt_mlir_batched_gemm_bf16_f32: bf16
 * operands whose products need more than bf16's 8 bits, an f32 C that must
 * hold them unrounded (the exact sums are f32 values). */
static void mixed(int transA, int transB, int batched) {
  enum { B = 2, M = 3, K = 4, N = 5 };
  uint16_t a[B * M * K], b[B * K * N];
  float fa[B * M * K], fb[B * K * N], c[B * M * N];
  int64_t i, j, l, p, batch = batched ? B : 1;
  int right = 1;
  char what[80];
  for (i = 0; i < B * M * K; ++i) {
    a[i] = bf16(1.0f + (float)((i * 7) % 5) / 64.0f);
    fa[i] = fromBf16(a[i]);
  }
  for (i = 0; i < B * K * N; ++i) {
    b[i] = bf16((float)((i * 3) % 7 - 3) * (1.0f + 1.0f / 128.0f));
    fb[i] = fromBf16(b[i]);
  }
  for (i = 0; i < B * M * N; ++i)
    c[i] = NAN;
  if (batched) {
    Memref3 ma = transA ? memref3(a, B, K, M) : memref3(a, B, M, K);
    Memref3 mb = transB ? memref3(b, B, N, K) : memref3(b, B, K, N);
    Memref3 mc = memref3(c, B, M, N);
    tprt_mlir_batched_gemm_bf16_f32(transA, transB, 3, &ma, 3, &mb, 3, &mc);
  } else {
    Memref2 ma = transA ? memref2(a, K, M) : memref2(a, M, K);
    Memref2 mb = transB ? memref2(b, N, K) : memref2(b, K, N);
    Memref2 mc = memref2(c, M, N);
    tprt_mlir_gemm_bf16_f32(transA, transB, 2, &ma, 2, &mb, 2, &mc);
  }
  for (p = 0; p < batch; ++p)
    for (i = 0; i < M; ++i)
      for (j = 0; j < N; ++j) {
        double want = 0;
        for (l = 0; l < K; ++l)
          want += (double)at(fa, transA, transA ? K : M, transA ? M : K, p, i,
                             l) *
                  at(fb, transB, transB ? N : K, transB ? K : N, p, l, j);
        if (fabs(c[(p * M + i) * N + j] - want) > 1e-6 * (1 + fabs(want)))
          right = 0;
      }
  snprintf(what, sizeof(what), "%sgemm bf16 into f32%s%s",
           batched ? "batched_" : "", transA ? " A^T" : "",
           transB ? " B^T" : "");
  expect(right, what);
}

/* A rank-1 memref descriptor. */
typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} Memref1;

static Memref1 memref1(void *data, int64_t d0) {
  Memref1 m;
  m.allocated = m.aligned = data;
  m.offset = 0;
  m.sizes[0] = d0;
  m.strides[0] = 1;
  return m;
}

/* tprt_mlir_gemm_epilogue_f32: C = relu(op(A) op(B) + addend + bias), an
 * absent addend or bias passed as a memref<0xf32> (what tp-gemm-epilogues
 * emits). Small integers: exact. */
static void epilogue(int transA, int transB, int withAddend, int withBias) {
  enum { M = 3, K = 4, N = 5 };
  float a[M * K], b[K * N], c[M * N], add[M * N], bias[N], none[1] = {0};
  int64_t i, j, l;
  int right = 1;
  char what[80];
  Memref2 ma, mb, mc, madd;
  Memref1 mbias, mnone = memref1(none, 0);
  for (i = 0; i < M * K; ++i)
    a[i] = (float)((i * 7) % 5 - 2);
  for (i = 0; i < K * N; ++i)
    b[i] = (float)((i * 3) % 7 - 3);
  for (i = 0; i < M * N; ++i) {
    c[i] = NAN;
    add[i] = (float)(i % 4 - 1);
  }
  for (j = 0; j < N; ++j)
    bias[j] = (float)(j - 2);
  ma = transA ? memref2(a, K, M) : memref2(a, M, K);
  mb = transB ? memref2(b, N, K) : memref2(b, K, N);
  mc = memref2(c, M, N);
  madd = memref2(add, M, N);
  mbias = memref1(bias, N);
  tprt_mlir_gemm_epilogue_f32(transA, transB, 1, 2, &ma, 2, &mb,
                              withAddend ? 2 : 1,
                              withAddend ? (void *)&madd : (void *)&mnone, 1,
                              withBias ? &mbias : &mnone, 2, &mc);
  for (i = 0; i < M; ++i)
    for (j = 0; j < N; ++j) {
      float want = 0;
      for (l = 0; l < K; ++l)
        want += at(a, transA, transA ? K : M, transA ? M : K, 0, i, l) *
                at(b, transB, transB ? N : K, transB ? K : N, 0, l, j);
      if (withAddend)
        want += add[i * N + j];
      if (withBias)
        want += bias[j];
      if (want < 0)
        want = 0;
      if (c[i * N + j] != want)
        right = 0;
    }
  snprintf(what, sizeof(what), "gemm_epilogue f32 relu%s%s%s%s",
           transA ? " A^T" : "", transB ? " B^T" : "",
           withAddend ? " +addend" : "", withBias ? " +bias" : "");
  expect(right, what);
}

/* tprt_mlir_gemm_grouped_f32: rows of A in groups of rows[g] (an empty
 * group among them), group g times op(B[g]). Small integers: exact. */
static void grouped(int transB) {
  enum { G = 3, R = 6, K = 4, N = 5 };
  float a[R * K], b[G * K * N], c[R * N];
  int64_t rows[G] = {2, 0, 4}, i, j, l;
  int64_t groupOf[R] = {0, 0, 2, 2, 2, 2};
  int right = 1;
  char what[80];
  Memref2 ma, mc;
  Memref3 mb;
  Memref1 mrows;
  for (i = 0; i < R * K; ++i)
    a[i] = (float)((i * 5) % 7 - 3);
  for (i = 0; i < G * K * N; ++i)
    b[i] = (float)((i * 3) % 5 - 2);
  for (i = 0; i < R * N; ++i)
    c[i] = NAN;
  ma = memref2(a, R, K);
  mb = transB ? memref3(b, G, N, K) : memref3(b, G, K, N);
  mrows = memref1(rows, G);
  mc = memref2(c, R, N);
  tprt_mlir_gemm_grouped_f32(transB, 2, &ma, 3, &mb, 1, &mrows, 2, &mc);
  for (i = 0; i < R; ++i)
    for (j = 0; j < N; ++j) {
      float want = 0;
      for (l = 0; l < K; ++l)
        want += a[i * K + l] *
                at(b, transB, transB ? N : K, transB ? K : N, groupOf[i], l, j);
      if (c[i * N + j] != want)
        right = 0;
    }
  snprintf(what, sizeof(what), "gemm_grouped f32%s", transB ? " B^T" : "");
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
  } else if (argc == 2 && strcmp(argv[1], "bad-shared-a") == 0) {
    /* A 2x2, B_0 2x2, B_1 1x4, B_2 2x2: the B operands differ. */
    Memref2 a2 = memref2(a, 2, 2), b0 = memref2(b, 2, 2),
            b1 = memref2(b + 4, 1, 4), b2 = memref2(flat, 2, 2),
            c0 = memref2(c, 2, 2), c1 = memref2(c + 4, 2, 2);
    m2 = memref2(flat, 2, 2);
    tprt_mlir_gemm_shared_a3_f32(0, 0, 2, &a2, 2, &b0, 2, &b1, 2, &b2, 2, &c0,
                                 2, &c1, 2, &m2);
  } else if (argc == 2 && strcmp(argv[1], "bad-bias") == 0) {
    /* C 2x2 with a bias of 3 values. */
    Memref2 a2 = memref2(a, 2, 2), b2 = memref2(b, 2, 2), c2 = memref2(c, 2, 2);
    Memref1 bias = memref1(flat, 3), none = memref1(flat, 0);
    tprt_mlir_gemm_epilogue_f32(0, 0, 0, 2, &a2, 2, &b2, 1, &none, 1, &bias,
                                2, &c2);
  } else if (argc == 2 && strcmp(argv[1], "bad-mixed") == 0) {
    /* bf16 A 2x2, B 1x4, f32 C 2x2: K of A and B disagree. */
    uint16_t a16[4] = {0}, b16[4] = {0};
    Memref2 a2 = memref2(a16, 2, 2), b2 = memref2(b16, 1, 4),
            c2 = memref2(c, 2, 2);
    tprt_mlir_gemm_bf16_f32(0, 0, 2, &a2, 2, &b2, 2, &c2);
  } else if (argc == 2 && strcmp(argv[1], "bad-grouped") == 0) {
    /* B of 2 groups, row counts for 3. */
    int64_t rows[3] = {1, 1, 0};
    Memref2 a2 = memref2(a, 2, 2), c2 = memref2(c, 2, 2);
    Memref3 b3 = memref3(b, 2, 2, 2);
    Memref1 r1 = memref1(rows, 3);
    tprt_mlir_gemm_grouped_f32(0, 2, &a2, 3, &b3, 1, &r1, 2, &c2);
  } else if (argc == 1) {
    batched(0, 0);
    batched(1, 0);
    batched(0, 1);
    batched(1, 1);
    sharedA3(0, 0);
    sharedA3(0, 1);
    sharedA3(1, 0);
    sharedA3(1, 1);
    epilogue(0, 0, 1, 1);
    epilogue(1, 1, 1, 0);
    epilogue(0, 1, 0, 1);
    epilogue(1, 0, 0, 0);
    mixed(0, 0, 0);
    mixed(1, 1, 0);
    mixed(0, 1, 1);
    mixed(1, 0, 1);
    grouped(0);
    grouped(1);
    tprt_finalize(ctx);
    printf("model-abi: %d failed\n", failures);
    return failures ? 1 : 0;
  } else {
    fprintf(stderr, "usage: tprt-model-abi-test "
                    "[bad-rank|bad-batch|bad-shape|bad-shared-a|bad-bias|bad-mixed|bad-grouped]\n");
    return 2;
  }
  printf("the bad call returned\n");
  return 0;
}
