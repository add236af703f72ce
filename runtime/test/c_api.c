/* c_api.c - calls libtprt from a C99 program through tprt.h.
 *
 * Compiled as C (-std=c99 -pedantic -Werror), so it fails to build if the
 * header ever needs C++. Runs a few calls on the "single" backend and prints
 * one line per check for FileCheck (test/runtime/c-api.test). */
#include "tprt/tprt.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) {
    printf("  last error: %s\n", tprt_last_error());
    ++failures;
  }
}

int main(void) {
  tprt_context *ctx = NULL;
  tprt_context *other = NULL;
  tprt_group *world = NULL;
  tprt_group *group = NULL;
  tprt_stats stats;
  int rank = -1, size = -1, index = -1, device = -1, local = -1, nodes = -1;
  int node = -1;
  float in[6] = {1, 2, 3, 4, 5, 6};
  float out[6] = {0};
  int64_t shape[2] = {2, 3};
  int64_t mesh[1] = {1};
  int axes[1] = {0};
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {0};
  tprt_status status;
  const char *blas = NULL;

  expect(tprt_init("single", &ctx) == TPRT_OK, "tprt_init single");
  if (!ctx)
    return 1;
  expect(tprt_rank(ctx, &rank) == TPRT_OK && rank == 0, "rank 0");
  expect(tprt_size(ctx, &size) == TPRT_OK && size == 1, "size 1");
  expect(tprt_group_world(ctx, &world) == TPRT_OK, "world group");

  expect(tprt_all_reduce(ctx, world, TPRT_F32, TPRT_SUM, in, out, 2, shape,
                         NULL) == TPRT_OK &&
             memcmp(in, out, sizeof(in)) == 0,
         "all_reduce copies on one rank");
  expect(tprt_all_gather(ctx, world, TPRT_F32, in, out, 2, shape, 1, NULL) ==
             TPRT_OK,
         "all_gather along dim 1");
  expect(tprt_group_for_axes(ctx, 1, mesh, 1, axes, &group) == TPRT_OK &&
             tprt_group_rank(group, &index) == TPRT_OK && index == 0,
         "group for axis 0 of mesh [1]");
  expect(tprt_group_destroy(group) == TPRT_OK, "group destroyed");

  /* [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]] */
  expect(tprt_gemm(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2,
                   NULL) == TPRT_OK &&
             c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50,
         "gemm f32 2x2");

  /* The BLAS behind it, named in one line; a null pointer is refused. */
  expect(tprt_host_blas(&blas) == TPRT_OK && blas != NULL && blas[0] != '\0',
         "host blas named");
  expect(tprt_host_blas(NULL) == TPRT_ERROR_INVALID_ARGUMENT,
         "host blas: null pointer");

  expect(tprt_stats_get(ctx, &stats) == TPRT_OK &&
             stats.calls[TPRT_ALL_REDUCE] == 1 &&
             stats.calls[TPRT_ALL_GATHER] == 1 && stats.gemm_calls == 1,
         "stats count the calls");

  /* The memory and topology calls on a CPU backend: host memory, one node. */
  expect(tprt_memory_is_device(ctx, &device) == TPRT_OK && device == 0,
         "single: host memory");
  expect(tprt_memcpy(ctx, out, in, sizeof(in)) == TPRT_OK && out[5] == 6.0f &&
             tprt_synchronize(ctx) == TPRT_OK,
         "tprt_memcpy and tprt_synchronize");
  expect(tprt_local_rank(ctx, &local) == TPRT_OK && local == 0 &&
             tprt_node_count(ctx, &nodes) == TPRT_OK && nodes == 1 &&
             tprt_node_of(ctx, 0, &node) == TPRT_OK && node == 0,
         "single: one node, local rank 0");
  status = tprt_node_of(ctx, 1, &node);
  printf("node_of 1: %s: %s\n", tprt_status_name(status), tprt_last_error());

  status = tprt_all_gather(ctx, world, TPRT_F32, in, out, 2, shape, 2, NULL);
  printf("bad dim: %s: %s\n", tprt_status_name(status), tprt_last_error());
  expect(status == TPRT_ERROR_INVALID_ARGUMENT, "bad dim rejected");

  status = tprt_init("nccl", &other);
  printf("nccl: %s\n", tprt_status_name(status));
  expect(status == TPRT_ERROR_UNAVAILABLE && other == NULL, "nccl unavailable");

  status = tprt_init("carrier-pigeon", &other);
  printf("unknown: %s: %s\n", tprt_status_name(status), tprt_last_error());
  expect(status == TPRT_ERROR_INVALID_ARGUMENT && other == NULL,
         "unknown backend rejected");

  expect(tprt_finalize(ctx) == TPRT_OK, "tprt_finalize");
  printf("c_api: %d failed\n", failures);
  return failures ? 1 : 0;
}
