// Warp-synchronous instructions and block barriers as CUDA defines them,
// on 2 blocks of 64 threads. Values are checked against a Python model of
// the same semantics (Inputs/warps.py): shuffles in 16-lane segments in all
// four modes (the clamp and segment mask of the c operand), ballots and
// votes, lanes that diverge (different trip counts) and meet again at a
// shuffle, a shared-memory tree reduction between barriers, shared and
// global atomics, and per-thread local memory indexed at run time.
//
// RUN: %cuda-ptx %s -o %t.ptx
// RUN: %emu-run %t.ptx warps --grid 2 --block 64 i32[128]=iota i32[1280] i32[2] > %t.out
// RUN: %python %S/Inputs/warps.py %t.out

#include "cuda.h"

extern "C" __global__ void warps(const int *in, int *out, int *total) {
  __shared__ int partial[64];
  __shared__ int counter;
  int t = threadIdx_x, b = blockIdx_x;
  int g = b * 64 + t;
  int v = in[g] * 3 + 1;
  int *o = out + g * 10;
  // Segments of 16 lanes: c = (32 - 16) << 8 | clamp.
  o[0] = __nvvm_shfl_sync_up_i32(FULL, v, 3, (16 << 8) | 0);
  o[1] = __nvvm_shfl_sync_down_i32(FULL, v, 5, (16 << 8) | 0x1f);
  o[2] = __nvvm_shfl_sync_bfly_i32(FULL, v, 9, (16 << 8) | 0x1f);
  o[3] = __nvvm_shfl_sync_idx_i32(FULL, v, (t * 7) & 31, (16 << 8) | 0x1f);
  o[4] = (int)__nvvm_vote_ballot_sync(FULL, (v % 3) == 1 && (t & 5));
  o[5] = __nvvm_vote_all_sync(FULL, v > 0) + 2 * __nvvm_vote_any_sync(FULL, t == 33);
  // Divergent trip counts, then every lane meets at the shuffle.
  int acc = 0;
  for (int i = 0; i < (t % 5); ++i)
    acc += v + i;
  o[6] = __nvvm_shfl_sync_bfly_i32(FULL, acc, 1, 0x1f);
  // A tree reduction through shared memory.
  partial[t] = v;
  if (t == 0)
    counter = 0;
  __syncthreads();
  for (int s = 32; s > 0; s >>= 1) {
    if (t < s)
      partial[t] += partial[t + s];
    __syncthreads();
  }
  o[7] = partial[0];
  __atomic_fetch_add(&counter, t, __ATOMIC_RELAXED);
  __atomic_fetch_add(&total[b], v, __ATOMIC_RELAXED);
  __syncthreads();
  o[8] = counter;
  // Local memory indexed at run time.
  volatile int scratch[8];
  for (int i = 0; i < 8; ++i)
    scratch[i] = v * i;
  o[9] = scratch[(t + 3) & 7] - scratch[t & 7];
}
