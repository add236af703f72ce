/* nccl_init.c - tprt_init on a GPU backend, from C.
 *
 *   tprt-nccl-init BACKEND [--alloc BYTES | --collectives N [--mismatch]]
 *
 * Prints "init BACKEND: <status>: <message>" and exits 3 when tprt_init
 * fails (the no-driver, no-device and too-few-GPUs paths). Otherwise it
 * checks, on whatever memory the backend allocates, a round trip through
 * tprt_alloc and tprt_memcpy, a strided-batched GEMM of device buffers, an
 * all_reduce over the world and the topology calls; prints one "ok:" or
 * "FAILED:" line each and "nccl-init: N failed", exiting 1 if any failed.
 * With --alloc it only allocates BYTES with tprt_alloc and prints
 * "alloc: <status>: <message>" (exit 0 on success, 5 on failure).
 * With --collectives it only runs N all_reduces of 4 floats over the world,
 * writing "collective I" to stderr before the I-th, "collectives done" after
 * the last, and one "all_reduce I: <status>" line each to stdout (exit 0 if
 * all succeed, 6 otherwise); the mock NCCL and driver's MOCK_TRACE lines
 * then fall between the markers (nccl-check.test). --mismatch adds one
 * all_reduce where rank 0 passes [4] and the others [5], and prints
 * "mismatch: <status>: <message>" (exit 7 unless it is
 * TPRT_ERROR_MISMATCH: run it with the mismatch check on).
 */
#include "tprt/tprt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) {
    ++failures;
    printf("  last error: %s\n", tprt_last_error());
  }
}

int main(int argc, char **argv) {
  tprt_context *ctx = NULL;
  tprt_status status;
  int rank = -1, size = 0, device = -1, local = -1, nodes = 0, node = -1;
  enum { B = 3, M = 4, N = 5, K = 6 };
  float a[B * M * K], b[B * K * N], c[B * M * N], sum[4];
  void *da = NULL, *db = NULL, *dc = NULL, *dsum = NULL;
  int i, j, l, bi;
  tprt_group *world = NULL;
  int64_t shape[1] = {4};

  int collectives = -1, mismatch = 0;
  if (argc >= 4 && strcmp(argv[2], "--collectives") == 0) {
    collectives = atoi(argv[3]);
    mismatch = argc == 5 && strcmp(argv[4], "--mismatch") == 0;
    if (argc > 5 || (argc == 5 && !mismatch))
      collectives = -1;
  }
  if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--alloc") == 0) &&
      collectives < 0) {
    fprintf(stderr, "usage: tprt-nccl-init BACKEND [--alloc BYTES | "
                    "--collectives N [--mismatch]]\n");
    return 2;
  }
  status = tprt_init(argv[1], &ctx);
  if (status != TPRT_OK) {
    printf("init %s: %s: %s\n", argv[1], tprt_status_name(status),
           tprt_last_error());
    return ctx == NULL ? 3 : 4;
  }
  if (collectives >= 0) {
    int ok = 1;
    int64_t mine[1];
    tprt_rank(ctx, &rank);
    tprt_group_world(ctx, &world);
    for (i = 0; i < 8; ++i)
      sum[i % 4] = (float)i;
    if (tprt_alloc(ctx, 8 * sizeof(float), &dsum) != TPRT_OK ||
        tprt_memcpy(ctx, dsum, sum, sizeof(sum)) != TPRT_OK) {
      printf("alloc: %s\n", tprt_last_error());
      return 6;
    }
    for (i = 0; i < collectives; ++i) {
      fprintf(stderr, "collective %d\n", i);
      status = tprt_all_reduce(ctx, world, TPRT_F32, TPRT_SUM, dsum, dsum, 1,
                               shape, NULL);
      printf("all_reduce %d: %s\n", i, tprt_status_name(status));
      ok = ok && status == TPRT_OK;
    }
    fprintf(stderr, "collectives done\n");
    if (mismatch) {
      mine[0] = rank == 0 ? 4 : 5;
      status = tprt_all_reduce(ctx, world, TPRT_F32, TPRT_SUM, dsum, dsum, 1,
                               mine, NULL);
      printf("mismatch: %s: %s\n", tprt_status_name(status),
             status == TPRT_OK ? "" : tprt_last_error());
      if (status != TPRT_ERROR_MISMATCH)
        ok = 0;
    }
    tprt_free(ctx, dsum);
    tprt_finalize(ctx);
    return ok ? 0 : mismatch ? 7 : 6;
  }
  if (argc == 4) {
    void *block = NULL;
    status = tprt_alloc(ctx, (size_t)strtoull(argv[3], NULL, 10), &block);
    printf("alloc: %s: %s\n", tprt_status_name(status),
           status == TPRT_OK ? "" : tprt_last_error());
    tprt_free(ctx, block);
    tprt_finalize(ctx);
    return status == TPRT_OK ? 0 : 5;
  }
  tprt_rank(ctx, &rank);
  tprt_size(ctx, &size);
  expect(tprt_memory_is_device(ctx, &device) == TPRT_OK && device == 1,
         "tprt_alloc returns device memory");
  expect(tprt_local_rank(ctx, &local) == TPRT_OK && local >= 0 && local < size,
         "tprt_local_rank");
  expect(tprt_node_count(ctx, &nodes) == TPRT_OK && nodes >= 1 &&
             tprt_node_of(ctx, rank, &node) == TPRT_OK && node >= 0 &&
             node < nodes,
         "tprt_node_count and tprt_node_of");

  for (i = 0; i < B * M * K; ++i)
    a[i] = (float)((i * 3) % 7 - 3);
  for (i = 0; i < B * K * N; ++i)
    b[i] = (float)((i * 5) % 9 - 4);
  expect(tprt_alloc(ctx, sizeof(a), &da) == TPRT_OK &&
             tprt_alloc(ctx, sizeof(b), &db) == TPRT_OK &&
             tprt_alloc(ctx, sizeof(c), &dc) == TPRT_OK,
         "tprt_alloc");
  expect(tprt_memcpy(ctx, da, a, sizeof(a)) == TPRT_OK &&
             tprt_memcpy(ctx, db, b, sizeof(b)) == TPRT_OK,
         "tprt_memcpy host to device");
  expect(tprt_gemm_strided_batched(ctx, TPRT_F32, 0, 0, M, N, K, 1.0f, da, K,
                                   M * K, db, N, K * N, 0.0f, dc, N, M * N, B,
                                   NULL) == TPRT_OK,
         "tprt_gemm_strided_batched f32 on device buffers");
  memset(c, 0, sizeof(c));
  expect(tprt_memcpy(ctx, c, dc, sizeof(c)) == TPRT_OK,
         "tprt_memcpy device to host");
  {
    int right = 1;
    for (bi = 0; bi < B; ++bi)
      for (i = 0; i < M; ++i)
        for (j = 0; j < N; ++j) {
          float want = 0;
          for (l = 0; l < K; ++l)
            want += a[bi * M * K + i * K + l] * b[bi * K * N + l * N + j];
          if (c[bi * M * N + i * N + j] != want)
            right = 0;
        }
    expect(right, "the batched product is exact (small integers)");
  }

  for (i = 0; i < 4; ++i)
    sum[i] = (float)(rank + i);
  tprt_group_world(ctx, &world);
  expect(tprt_alloc(ctx, sizeof(sum), &dsum) == TPRT_OK &&
             tprt_memcpy(ctx, dsum, sum, sizeof(sum)) == TPRT_OK &&
             tprt_all_reduce(ctx, world, TPRT_F32, TPRT_SUM, dsum, dsum, 1,
                             shape, NULL) == TPRT_OK &&
             tprt_memcpy(ctx, sum, dsum, sizeof(sum)) == TPRT_OK,
         "all_reduce of a device buffer");
  expect(sum[1] == (float)(size * (size - 1) / 2 + size),
         "the all_reduce sum is right");
  expect(tprt_synchronize(ctx) == TPRT_OK, "tprt_synchronize");

  tprt_free(ctx, da);
  tprt_free(ctx, db);
  tprt_free(ctx, dc);
  tprt_free(ctx, dsum);
  tprt_finalize(ctx);
  printf("nccl-init: %d failed\n", failures);
  return failures ? 1 : 0;
}
