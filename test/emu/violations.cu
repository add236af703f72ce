// Kernels that are wrong on purpose: each is stopped by the emulator with
// an error naming the kernel, the block, the thread, the PTX line and what
// happened (the checks compute-sanitizer's synccheck and memcheck make),
// and the launch fails (CUDA_ERROR_LAUNCH_FAILED, _ILLEGAL_ADDRESS, ...).
//
// RUN: %cuda-ptx %s -o %t.ptx
//
// A barrier moved into a branch: half the block never reaches it.
// RUN: %expect-exit 1 %emu-run %t.ptx barrier_in_branch --block 64 i32[64] 2>&1 | FileCheck %s --check-prefix=BRANCH
// BRANCH: tprt emulator: kernel barrier_in_branch: block (0,0,0), thread (32,0,0): line {{[0-9]+}} `bar.sync 0;`: this thread exited while 32 threads of its block wait at the barrier here (every thread must reach a bar.sync)
// BRANCH: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED
//
// Two halves of the block at two different barriers.
// RUN: %expect-exit 1 %emu-run %t.ptx two_barriers --block 64 i32[64] 2>&1 | FileCheck %s --check-prefix=TWO
// TWO: kernel two_barriers: block (0,0,0), thread (32,0,0): line {{[0-9]+}} `barrier.sync 0;`: threads wait at different barriers: thread (0,0,0) at line {{[0-9]+}} `bar.sync 0;`, this one here
//
// A shuffle whose width was changed to 16 (membermask 0xffff) while the
// whole warp executes it: lane 16 is not in its own membermask.
// RUN: %expect-exit 1 %emu-run %t.ptx shuffle_width --block 32 i32[32] 2>&1 | FileCheck %s --check-prefix=WIDTH
// WIDTH: kernel shuffle_width: block (0,0,0), thread (16,0,0): line {{[0-9]+}} `shfl.sync.bfly.b32 {{.*}}`: the membermask 0x0000ffff does not name the executing lane 16
//
// Lanes of one shuffle passing different widths.
// RUN: %expect-exit 1 %emu-run %t.ptx width_disagree --block 32 i32[32] 2>&1 | FileCheck %s --check-prefix=DISAGREE
// DISAGREE: kernel width_disagree: block (0,0,0), thread (16,0,0): line {{[0-9]+}} `shfl.sync.bfly.b32 {{.*}}`: lanes of one warp-synchronous instruction disagree on its clamp and segment mask (the width): lane 0 passes 0x0000001f, lane 16 passes 0x00000f1f
//
// A lane that returns early while the others wait for it at a shuffle.
// RUN: %expect-exit 1 %emu-run %t.ptx exit_at_shuffle --block 32 i32[32] 2>&1 | FileCheck %s --check-prefix=EXIT
// EXIT: kernel exit_at_shuffle: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `shfl.sync.bfly.b32 {{.*}}`: lane 5 of the membermask 0xffffffff has exited while this lane waits for it here
//
// An off-by-one store: the last thread writes one element past the end.
// RUN: %expect-exit 1 %emu-run %t.ptx off_by_one --block 64 i32[64] 2>&1 | FileCheck %s --check-prefix=OFF
// OFF: kernel off_by_one: block (0,0,0), thread (63,0,0): line {{[0-9]+}} `st.global.b32 {{.*}}`: out-of-bounds global store of 4 bytes at 0x{{[0-9a-f]+}}: it is 0 bytes past the end of the device buffer of 256 bytes at 0x{{[0-9a-f]+}} (offset 256, element 64 of 64)
// OFF: cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS
//
// A pointer to a buffer that was freed before the launch.
// RUN: %expect-exit 1 %emu-run %t.ptx off_by_one --block 64 i32[64] free@0 2>&1 | FileCheck %s --check-prefix=FREED
// FREED: kernel off_by_one: pointer parameter 0 (off_by_one_param_0) is 0x{{[0-9a-f]+}}, which is not in live device memory: it is in the device buffer of 256 bytes at 0x{{[0-9a-f]+}}, which was freed (a use after free, offset 0, element 0 of 256)
//
// Shared memory indexed past its end.
// RUN: %expect-exit 1 %emu-run %t.ptx shared_overflow --block 64 i32[64] 2>&1 | FileCheck %s --check-prefix=SHARED
// SHARED: kernel shared_overflow: block (0,0,0), thread (4,0,0): line {{[0-9]+}} `st.shared.b32 {{.*}}`: out-of-bounds shared store of 4 bytes at offset 256 of the block's 256 bytes of shared memory
//
// A load from a pointer off its element size.
// RUN: %expect-exit 1 %emu-run %t.ptx misaligned --block 1 i32[4] 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: kernel misaligned: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `ld.volatile.global.b32 {{.*}}`: misaligned load of 4 bytes at global address 0x{{[0-9a-f]+}} (needs 4-byte alignment)
// ALIGN: CUDA_ERROR_MISALIGNED_ADDRESS
//
// trap, and a kernel that never ends (bounded by TPRT_EMU_INSTRUCTION_LIMIT).
// RUN: %expect-exit 1 %emu-run %t.ptx traps --block 1 i32[4] 2>&1 | FileCheck %s --check-prefix=TRAP
// TRAP: kernel traps: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `trap;`: the kernel executed trap
// RUN: %expect-exit 1 env TPRT_EMU_INSTRUCTION_LIMIT=100000 %emu-run %t.ptx spins --block 32 i32[4] 2>&1 | FileCheck %s --check-prefix=SPIN
// SPIN: kernel spins: block (0,0,0), thread (0,0,0): line {{[0-9]+}} {{.*}}: the kernel did not finish within 100000 warp instructions (TPRT_EMU_INSTRUCTION_LIMIT)
//
// Launch configurations a device refuses.
// RUN: %expect-exit 1 %emu-run %t.ptx off_by_one --block 2048 i32[64] 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: tprt emulator: kernel off_by_one: block (2048, 1, 1) is outside the device's limits (1024, 1024, 64)
// BLOCK: CUDA_ERROR_INVALID_VALUE
// RUN: %expect-exit 1 %emu-run %t.ptx off_by_one --block 64 --shared 65536 i32[64] 2>&1 | FileCheck %s --check-prefix=DYN
// DYN: kernel off_by_one: 65536 bytes of dynamic shared memory without the opt-in (cuFuncSetAttribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES allows 0)

#include "cuda.h"

extern "C" __global__ void barrier_in_branch(int *out) {
  __shared__ int s[64];
  int t = threadIdx_x;
  s[t] = t;
  if (t < 32)
    __syncthreads();
  out[t] = s[63 - t];
}

extern "C" __global__ void two_barriers(int *out) {
  __shared__ int s[64];
  int t = threadIdx_x;
  if (t < 32) {
    s[t] = 1;
    __syncthreads();
    out[t] = s[t + 32];
  } else {
    s[t] = 2;
    __nvvm_barrier_sync(0);
    out[t] = s[t - 32] * 3;
  }
}

extern "C" __global__ void shuffle_width(int *out) {
  int t = threadIdx_x;
  // Width 16: membermask (1 << 16) - 1 and clamp 15, as a gpu.shuffle of
  // width 16 lowers, but executed by all 32 lanes.
  out[t] = __nvvm_shfl_sync_bfly_i32(0xffffu, t, 1, 0xf);
}

extern "C" __global__ void width_disagree(int *out) {
  int t = threadIdx_x;
  out[t] = __nvvm_shfl_sync_bfly_i32(FULL, t, 1, t < 16 ? 0x1f : 0xf1f);
}

extern "C" __global__ void exit_at_shuffle(int *out) {
  int t = threadIdx_x;
  if (t == 5)
    return;
  out[t] = __nvvm_shfl_sync_bfly_i32(FULL, t, 1, 0x1f);
}

extern "C" __global__ void off_by_one(int *out) {
  int t = threadIdx_x;
  out[t + 1] = t;
}

extern "C" __global__ void shared_overflow(int *out) {
  __shared__ int s[64];
  int t = threadIdx_x;
  s[t + 60] = t;
  __syncthreads();
  out[t] = s[t];
}

extern "C" __global__ void misaligned(int *out) {
  out[0] = *(volatile int *)((char *)out + 2);
}

extern "C" __global__ void traps(int *out) {
  if (out[0] == 0)
    __builtin_trap();
}

extern "C" __global__ void spins(volatile int *flag) {
  while (flag[0] == 0) {
  }
}
