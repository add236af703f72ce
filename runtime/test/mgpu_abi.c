/* mgpu_abi.c - MLIR's GPU host ABI as libtprt_cuda.so exports it, called
 * from C with upstream CudaRuntimeWrappers.cpp's signatures.
 *
 *   tprt-mgpu-test BACKEND            memory calls on the rank's stream
 *   tprt-mgpu-test BACKEND bad-module  mgpuModuleLoad of garbage: fatal
 *   tprt-mgpu-test BACKEND kernel      a PTX kernel loaded and launched
 *   tprt-mgpu-test BACKEND bad-count   ... launched with one parameter too
 *                                      many: fatal (the parameter count
 *                                      check of mgpuLaunchKernel)
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
void *mgpuModuleLoadJIT(void *data, int optLevel);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
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

/* y[i] = 2 * x[i] for i < n, one thread per element. */
static char kScalePtx[] =
    ".version 7.8\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry scale(.param .u64 .ptr .align 1 scale_x,\n"
    "                     .param .u32 scale_n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [scale_x];\n"
    "  ld.param.u32 %r1, [scale_n];\n"
    "  mov.u32 %r2, %tid.x;\n"
    "  setp.ge.u32 %p1, %r2, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mul.wide.u32 %rd3, %r2, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.f32 %r3, [%rd4];\n"
    "  add.f32 %r4, %r3, %r3;\n"
    "  st.global.f32 [%rd4], %r4;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

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
  if (argc == 3 && (strcmp(argv[2], "kernel") == 0 ||
                    strcmp(argv[2], "bad-count") == 0)) {
    void *module = mgpuModuleLoadJIT(kScalePtx, 2);
    void *function = mgpuModuleGetFunction(module, "scale");
    void *s = mgpuStreamCreate();
    float values[40];
    void *x = mgpuMemAlloc(sizeof(values), s, false);
    uint32_t n = 40;
    void *params[3];
    int good = 1;
    for (i = 0; i < 40; ++i)
      values[i] = (float)i;
    mgpuMemcpy(x, values, sizeof(values), s);
    params[0] = &x;
    params[1] = &n;
    params[2] = &n;
    mgpuLaunchKernel(function, 1, 1, 1, 64, 1, 1, 0, s, params, NULL,
                     strcmp(argv[2], "bad-count") == 0 ? 3 : 2);
    mgpuMemcpy(values, x, sizeof(values), s);
    tprt_synchronize(ctx);
    for (i = 0; i < 40; ++i)
      if (values[i] != 2.0f * (float)i)
        good = 0;
    expect(good, "a PTX kernel loaded, launched and its result read back");
    mgpuMemFree(x, s);
    tprt_finalize(ctx);
    printf("mgpu: %d failed\n", failures);
    return failures ? 1 : 0;
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
