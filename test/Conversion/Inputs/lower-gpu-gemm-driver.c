// Driver of lower-gpu-gemm-numerics.test: runs each product compiled with
// GEMM calls (@case_*) and as loops (@ref_*) on the same pseudo-random
// inputs and prints the largest relative difference. It also provides the
// runtime's two GEMM entry points, written from their contract in
// runtime/include/tprt/tprt_model.h (row-major, C = op(A)·op(B), C
// overwritten, rank 2 or rank-3 batches), and checks that every buffer it
// receives is contiguous and row-major.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  float *allocated, *aligned;
  int64_t offset;
  int64_t sizesAndStrides[8];
} Desc;

static Desc make(float *data, int rank, const int64_t *shape) {
  Desc d;
  memset(&d, 0, sizeof d);
  d.allocated = d.aligned = data;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    d.sizesAndStrides[i] = shape[i];
    d.sizesAndStrides[rank + i] = stride;
    stride *= shape[i];
  }
  return d;
}

// The data of an unranked descriptor, after checking it is row-major.
static float *contiguous(int64_t rank, void *raw, int64_t *sizes) {
  Desc *d = (Desc *)raw;
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    sizes[i] = d->sizesAndStrides[i];
    if (d->sizesAndStrides[rank + i] != stride && sizes[i] != 1) {
      fprintf(stderr, "gemm operand is not contiguous row-major\n");
      exit(2);
    }
    stride *= sizes[i];
  }
  return d->aligned + d->offset;
}

static void product(int ta, int tb, const float *a, const float *b, float *c,
                    int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += (double)(ta ? a[p * m + i] : a[i * k + p]) *
             (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = (float)s;
    }
}

static int sharedACalls = 0;

void tprt_mlir_gemm_f32(int32_t ta, int32_t tb, int64_t ra, void *da,
                        int64_t rb, void *db, int64_t rc, void *dc) {
  int64_t sa[2], sb[2], sc[2];
  if (ra != 2 || rb != 2 || rc != 2) {
    fprintf(stderr, "gemm: operands must be rank 2\n");
    exit(2);
  }
  float *a = contiguous(ra, da, sa), *b = contiguous(rb, db, sb),
        *c = contiguous(rc, dc, sc);
  int64_t m = sc[0], n = sc[1], k = ta ? sa[0] : sa[1];
  if ((ta ? sa[1] : sa[0]) != m || (tb ? sb[0] : sb[1]) != n ||
      (tb ? sb[1] : sb[0]) != k) {
    fprintf(stderr, "gemm: shapes do not match\n");
    exit(2);
  }
  product(ta, tb, a, b, c, m, n, k);
}

void tprt_mlir_batched_gemm_f32(int32_t ta, int32_t tb, int64_t ra, void *da,
                                int64_t rb, void *db, int64_t rc, void *dc) {
  int64_t sa[3], sb[3], sc[3];
  if (ra != 3 || rb != 3 || rc != 3) {
    fprintf(stderr, "batched gemm: operands must be rank 3\n");
    exit(2);
  }
  float *a = contiguous(ra, da, sa), *b = contiguous(rb, db, sb),
        *c = contiguous(rc, dc, sc);
  int64_t batch = sc[0], m = sc[1], n = sc[2], k = ta ? sa[1] : sa[2];
  if (sa[0] != batch || sb[0] != batch || (ta ? sa[2] : sa[1]) != m ||
      (tb ? sb[1] : sb[2]) != n || (tb ? sb[2] : sb[1]) != k) {
    fprintf(stderr, "batched gemm: shapes do not match\n");
    exit(2);
  }
  for (int64_t i = 0; i < batch; ++i)
    product(ta, tb, a + i * m * k, b + i * k * n, c + i * m * n, m, n, k);
}

// The shared-A entry point's contract (runtime/lib/model/ModelAbi.cpp):
// trans flags, A, then the three B's, then the three C's.
void tprt_mlir_gemm_shared_a3_f32(int32_t ta, int32_t tb, int64_t ra,
                                  void *da, int64_t rb0, void *db0,
                                  int64_t rb1, void *db1, int64_t rb2,
                                  void *db2, int64_t rc0, void *dc0,
                                  int64_t rc1, void *dc1, int64_t rc2,
                                  void *dc2) {
  int64_t rb[3] = {rb0, rb1, rb2}, rc[3] = {rc0, rc1, rc2};
  void *db[3] = {db0, db1, db2}, *dc[3] = {dc0, dc1, dc2};
  for (int i = 0; i < 3; ++i)
    tprt_mlir_gemm_f32(ta, tb, ra, da, rb[i], db[i], rc[i], dc[i]);
  sharedACalls++;
}

static float *randomBuffer(int64_t n, unsigned *seed) {
  float *p = malloc(n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    *seed = *seed * 1103515245u + 12345u;
    p[i] = (float)((*seed >> 8) % 2001) / 1000.0f - 1.0f;
  }
  return p;
}

static int64_t count(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= shape[i];
  return n;
}

typedef void (*Fn3)(Desc *, Desc *, Desc *);
typedef void (*Fn4)(Desc *, Desc *, Desc *, Desc *);
typedef void (*Fn5)(Desc *, Desc *, Desc *, Desc *, Desc *);

// Runs one case: inputs of the given ranks and shapes, one output.
static void run(const char *name, void *viaGemm, void *viaLoops, int inputs,
                const int *ranks, const int64_t (*shapes)[4]) {
  // Each version gets its own copy of the inputs: a compiled function may
  // reuse an argument's buffer (the accumulating init, for instance).
  unsigned seedGemm = 42, seedLoops = 42;
  Desc in[4], inLoops[4], outGemm, outLoops;
  for (int i = 0; i < inputs; ++i) {
    int64_t size = count(ranks[i], shapes[i]);
    in[i] = make(randomBuffer(size, &seedGemm), ranks[i], shapes[i]);
    inLoops[i] = make(randomBuffer(size, &seedLoops), ranks[i], shapes[i]);
  }
  int64_t n = count(ranks[inputs], shapes[inputs]);
  float *g = calloc(n, sizeof(float)), *l = calloc(n, sizeof(float));
  outGemm = make(g, ranks[inputs], shapes[inputs]);
  outLoops = make(l, ranks[inputs], shapes[inputs]);
  if (inputs == 2) {
    ((Fn3)viaGemm)(&in[0], &in[1], &outGemm);
    ((Fn3)viaLoops)(&inLoops[0], &inLoops[1], &outLoops);
  } else if (inputs == 3) {
    ((Fn4)viaGemm)(&in[0], &in[1], &in[2], &outGemm);
    ((Fn4)viaLoops)(&inLoops[0], &inLoops[1], &inLoops[2], &outLoops);
  } else {
    ((Fn5)viaGemm)(&in[0], &in[1], &in[2], &in[3], &outGemm);
    ((Fn5)viaLoops)(&inLoops[0], &inLoops[1], &inLoops[2], &inLoops[3],
                    &outLoops);
  }
  double worst = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    worst = fmax(worst, fabs((double)g[i] - l[i]));
    norm = fmax(norm, fabs((double)l[i]));
  }
  printf("%s: %lld values, max |reference| %.3f, max difference %s\n", name,
         (long long)n, norm, worst <= 1e-5 * (norm + 1) ? "below 1e-5" : "TOO LARGE");
}

#define DECLARE(NAME, ...)                                                     \
  void _mlir_ciface_case_##NAME(__VA_ARGS__);                                  \
  void _mlir_ciface_ref_##NAME(__VA_ARGS__);
DECLARE(transposed_a, Desc *, Desc *, Desc *)
DECLARE(result_transposed, Desc *, Desc *, Desc *)
DECLARE(batch_transposed_b, Desc *, Desc *, Desc *)
DECLARE(qkv, Desc *, Desc *, Desc *)
DECLARE(scores, Desc *, Desc *, Desc *)
DECLARE(pv, Desc *, Desc *, Desc *)
DECLARE(accumulate, Desc *, Desc *, Desc *, Desc *)
DECLARE(matvec, Desc *, Desc *, Desc *)
DECLARE(shared_a, Desc *, Desc *, Desc *, Desc *, Desc *)
DECLARE(linear_wt, Desc *, Desc *, Desc *)

#define RUN(NAME, INPUTS, RANKS, ...)                                          \
  do {                                                                         \
    const int ranks[] = RANKS;                                                 \
    const int64_t shapes[][4] = {__VA_ARGS__};                                 \
    run(#NAME, (void *)_mlir_ciface_case_##NAME,                               \
        (void *)_mlir_ciface_ref_##NAME, INPUTS, ranks, shapes);               \
  } while (0)
#define R(...) {__VA_ARGS__}

int main(void) {
  RUN(transposed_a, 2, R(2, 2, 2), {8, 4}, {8, 16}, {4, 16});
  RUN(result_transposed, 2, R(2, 2, 2), {4, 8}, {8, 16}, {16, 4});
  RUN(batch_transposed_b, 2, R(3, 3, 3), {3, 4, 8}, {3, 16, 8}, {3, 4, 16});
  RUN(qkv, 2, R(2, 3, 3), {16, 64}, {64, 3, 32}, {16, 3, 32});
  RUN(scores, 2, R(4, 4, 4), {2, 8, 4, 16}, {2, 8, 4, 16}, {2, 4, 8, 8});
  RUN(pv, 2, R(4, 4, 4), {2, 4, 8, 8}, {2, 8, 4, 16}, {2, 8, 4, 16});
  RUN(accumulate, 3, R(2, 2, 2, 2), {4, 8}, {8, 16}, {4, 16}, {4, 16});
  RUN(matvec, 2, R(2, 1, 1), {4, 8}, {8}, {4});
  RUN(shared_a, 4, R(2, 2, 2, 2, 2), {16, 64}, {64, 32}, {64, 32}, {64, 32},
      {16, 32});
  RUN(linear_wt, 2, R(2, 2, 2), {16, 64}, {32, 64}, {16, 32});
  printf("shared-A calls: %d\n", sharedACalls);
  return 0;
}
