/* mgpu_abi.c - MLIR's GPU host ABI as libtprt_cuda.so exports it, called
 * from C with upstream CudaRuntimeWrappers.cpp's signatures.
 *
 *   tprt-mgpu-test BACKEND            memory calls on the rank's stream
 *   tprt-mgpu-test BACKEND bad-module  mgpuModuleLoad of garbage: fatal
 *
 * After tprt_init(BACKEND) (the runner's order: the model is loaded after
 * the runtime), checks that mgpuStreamCreate gives one stream per rank and
 * that destroying or synchronizing it is harmless, and moves data through
 * mgpuMemAlloc, mgpuMemset32/16, mgpuMemcpy and mgpuMemFree. Runs on a GPU
 * or on the mock driver (test/runtime/cuda-mock.test).
 */
#include "tprt/tprt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The declarations of upstream mlir/lib/ExecutionEngine/
 * CudaRuntimeWrappers.cpp (CUmodule, CUstream, ... as void *). */
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream);

static int failures = 0;

static void expect(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok)
    ++failures;
}

int main(int argc, char **argv) {
  tprt_context *ctx = NULL;
  void *stream, *again, *device;
  uint32_t words[64];
  uint16_t halves[64];
  int i, right = 1;
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: tprt-mgpu-test BACKEND [bad-module]\n");
    return 2;
  }
  if (tprt_init(argv[1], &ctx) != TPRT_OK) {
    printf("init: %s\n", tprt_last_error());
    return 3;
  }
  if (argc == 3) {
    char garbage[16] = "not a cubin";
    mgpuModuleLoad(garbage, sizeof(garbage));
    printf("mgpuModuleLoad returned\n");
    return 0;
  }
  stream = mgpuStreamCreate();
  again = mgpuStreamCreate();
  expect(stream != NULL && stream == again,
         "mgpuStreamCreate returns the rank's stream");
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(again);

  device = mgpuMemAlloc(sizeof(words), stream, false);
  expect(device != NULL, "mgpuMemAlloc");
  mgpuMemset32(device, 0xdeadbeefu, 64, stream);
  mgpuMemset16(device, 0x1234u, 8, stream); /* the first 4 words */
  memset(words, 0, sizeof(words));
  mgpuMemcpy(words, device, sizeof(words), stream);
  mgpuStreamSynchronize(stream);
  tprt_synchronize(ctx);
  for (i = 0; i < 64; ++i)
    if (words[i] != (i < 4 ? 0x12341234u : 0xdeadbeefu))
      right = 0;
  expect(right, "mgpuMemset32, mgpuMemset16 and mgpuMemcpy to the host");
  for (i = 0; i < 64; ++i)
    halves[i] = (uint16_t)(i * 3);
  /* Markers for MOCK_TRACE (cuda-mock.test): a copy to the device stays
   * asynchronous, a copy into host memory waits for the stream. */
  fprintf(stderr, "memcpy to device\n");
  mgpuMemcpy(device, halves, sizeof(halves), stream);
  memset(halves, 0, sizeof(halves));
  fprintf(stderr, "memcpy to host\n");
  mgpuMemcpy(halves, device, sizeof(halves), stream);
  fprintf(stderr, "memcpy done\n");
  tprt_synchronize(ctx);
  right = 1;
  for (i = 0; i < 64; ++i)
    if (halves[i] != (uint16_t)(i * 3))
      right = 0;
  expect(right, "mgpuMemcpy host to device and back");
  mgpuMemFree(device, stream);
  expect(mgpuMemAlloc(0, stream, false) == NULL, "mgpuMemAlloc of 0 bytes");
  mgpuStreamDestroy(stream);
  tprt_finalize(ctx);
  printf("mgpu: %d failed\n", failures);
  return failures ? 1 : 0;
}
