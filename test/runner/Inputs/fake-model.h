/* Helpers of the fake compiled models of the tp-runner tests: each test
 * writes a tiny model.c implementing tp_model_run (docs/model-abi.md) that
 * includes this header. */
#ifndef FAKE_MODEL_H
#define FAKE_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The world rank under Open MPI's mpirun, 0 otherwise. */
static int fake_rank(void) {
  const char *rank = getenv("OMPI_COMM_WORLD_RANK");
  return rank ? atoi(rank) : 0;
}

/* On the first call, writes buffers[k] (bytes[k] bytes) to
 * local-RANK-K.bin in the current directory, for check-output.py --locals. */
static void fake_dump(void *const *buffers, const long *bytes, int count) {
  static int done;
  if (done)
    return;
  done = 1;
  for (int k = 0; k < count; ++k) {
    char path[64];
    snprintf(path, sizeof(path), "local-%d-%d.bin", fake_rank(), k);
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(buffers[k], 1, (size_t)bytes[k], file) !=
                     (size_t)bytes[k]) {
      fprintf(stderr, "fake model: cannot write %s\n", path);
      exit(3);
    }
    fclose(file);
  }
}

/* A 1-D f32 memref descriptor, as the compiled code passes to libtprt's
 * tprt_mlir_* entry points (tprt/tprt_model.h). */
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} fake_memref1_f32;

#endif
