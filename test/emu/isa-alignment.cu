// The alignment the PTX ISA requires of every access the emulator
// interprets, one kernel per rule. Each misaligned access is stopped with
// the kernel, the block, the thread, the PTX line and the address, and the
// launch fails with CUDA_ERROR_MISALIGNED_ADDRESS, as on a device (where
// the ISA leaves it undefined: the hardware faults or masks the low bits).
// Device buffers start 256-byte aligned (cuMemAlloc's guarantee), so `in +
// 1` (ints) is 4 bytes past a 16-byte boundary.
//
// RUN: %cuda-ptx %s -o %t.ptx
//
// Rule (ISA "cp.async": src and dst as in "Addresses as Operands",
// naturally aligned to cp-size): a 16-byte cp.async.cg from a global
// address 4 past a 16-byte boundary. It used to copy from the unaligned
// address and succeed.
// RUN: %expect-exit 1 %emu-run %t.ptx cg16_from_misaligned --block 32 i32[256]=iota i32[128] 2>&1 | FileCheck %s --check-prefix=CG16
// CG16: tprt emulator: kernel cg16_from_misaligned: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16;`: misaligned load of 16 bytes at global address 0x{{[0-9a-f]*}}4 (needs 16-byte alignment)
// CG16: cuLaunchKernel failed: CUDA_ERROR_MISALIGNED_ADDRESS
//
// The same rule at cp-size 8: an 8-byte cp.async.ca 4 bytes past an 8-byte
// boundary.
// RUN: %expect-exit 1 %emu-run %t.ptx ca8_from_misaligned --block 32 i32[256]=iota i32[128] 2>&1 | FileCheck %s --check-prefix=CA8
// CA8: kernel ca8_from_misaligned: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `cp.async.ca.shared.global [{{.*}}], [{{.*}}], 8;`: misaligned load of 8 bytes at global address 0x{{[0-9a-f]*}}4 (needs 8-byte alignment)
//
// The same rule for dst: a 16-byte copy into shared memory 8 bytes past a
// 16-byte boundary.
// RUN: %expect-exit 1 %emu-run %t.ptx cg16_to_misaligned --block 32 i32[256]=iota i32[128] 2>&1 | FileCheck %s --check-prefix=DST
// DST: kernel cg16_to_misaligned: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16;`: misaligned store of 16 bytes at shared address 0x{{[0-9a-f]*}}8 (needs 16-byte alignment)
//
// Rule (ISA "cp.async": src-size larger than cp-size is undefined): a
// src-size of 20 for a 16-byte copy.
// RUN: %expect-exit 1 %emu-run %t.ptx src_size_too_large --block 32 i32[256]=iota i32[128] 2>&1 | FileCheck %s --check-prefix=SRCSIZE
// SRCSIZE: kernel src_size_too_large: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};`: cp.async: source size 20 is larger than the copy size 16
//
// What the rules allow: 16-byte cp.async.cg from and to 16-byte aligned
// addresses, with src-size 12 (the last 4 bytes of each copy are zeros),
// lands what was copied.
// RUN: %emu-run %t.ptx cg16_aligned --block 32 i32[256]=iota i32[128] | FileCheck %s --check-prefix=OK
// OK: buffer 1: 0 1 2 0 4 5 6 0 8 9 10 0 {{.*}} 124 125 126 0{{$}}
//
// Rule ("Addresses as Operands", vectors: aligned to the vector's whole
// size): ld.global.v4.b32 8 bytes past a 16-byte boundary.
// RUN: %expect-exit 1 %emu-run %t.ptx v4_misaligned --block 1 i32[256]=iota i32[128] 2>&1 | FileCheck %s --check-prefix=V4
// V4: kernel v4_misaligned: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `ld.global.v4.{{[bu]}}32 {{.*}}`: misaligned load of 16 bytes at global address 0x{{[0-9a-f]*}}8 (needs 16-byte alignment)
//
// The same rule in shared memory: st.shared.b64 4 bytes past an 8-byte
// boundary.
// RUN: %expect-exit 1 %emu-run %t.ptx shared_b64_misaligned --block 1 i32[256]=iota i32[128] 2>&1 | FileCheck %s --check-prefix=SHARED
// SHARED: kernel shared_b64_misaligned: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `st.shared.b64 {{.*}}`: misaligned store of 8 bytes at shared address 0x{{[0-9a-f]*}}4 (needs 8-byte alignment)
//
// And for atomics (ISA "atom": the address naturally aligned to the
// operand): atom.global.add.u64 4 bytes past an 8-byte boundary.
// RUN: %expect-exit 1 %emu-run %t.ptx atom_misaligned --block 1 i32[256]=iota i32[128] 2>&1 | FileCheck %s --check-prefix=ATOM
// ATOM: kernel atom_misaligned: block (0,0,0), thread (0,0,0): line {{[0-9]+}} `atom.global.add.u64 {{.*}}`: misaligned store of 8 bytes at global address 0x{{[0-9a-f]*}}4 (needs 8-byte alignment)
//
// Rule (ISA "ldmatrix": each row address 16-byte aligned): lane 3's row
// 8 bytes past a 16-byte boundary.
// RUN: %expect-exit 1 %emu-run %t.ptx ldmatrix_misaligned --block 32 i32[256]=iota i32[128] 2>&1 | FileCheck %s --check-prefix=LDM
// LDM: kernel ldmatrix_misaligned: block (0,0,0), thread (3,0,0): line {{[0-9]+}} `ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{.*}}`: misaligned load of 16 bytes at shared address 0x{{[0-9a-f]*}}8 (needs 16-byte alignment)

#include "cuda.h"

__device__ u32 sharedAddress(const void *p) {
  return (u32)(unsigned long long)(__attribute__((address_space(3))) const void *)p;
}
__device__ void commitAndWait() {
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_all;");
}

extern "C" __global__ void cg16_from_misaligned(const int *in, int *out) {
  __shared__ __attribute__((aligned(16))) int tile[32 * 4];
  int t = threadIdx_x;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(
                   sharedAddress(&tile[4 * t])),
               "l"(in + 1 + 4 * t));
  commitAndWait();
  out[t] = tile[4 * t];
}

extern "C" __global__ void ca8_from_misaligned(const int *in, int *out) {
  __shared__ __attribute__((aligned(16))) int tile[32 * 2];
  int t = threadIdx_x;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(
                   sharedAddress(&tile[2 * t])),
               "l"(in + 1 + 2 * t));
  commitAndWait();
  out[t] = tile[2 * t];
}

extern "C" __global__ void cg16_to_misaligned(const int *in, int *out) {
  __shared__ __attribute__((aligned(16))) int tile[32 * 4 + 4];
  int t = threadIdx_x;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(
                   sharedAddress(&tile[2 + 4 * t])),
               "l"(in + 4 * t));
  commitAndWait();
  out[t] = tile[2 + 4 * t];
}

extern "C" __global__ void src_size_too_large(const int *in, int *out) {
  __shared__ __attribute__((aligned(16))) int tile[32 * 4];
  int t = threadIdx_x;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(
                   sharedAddress(&tile[4 * t])),
               "l"(in + 4 * t), "r"(20));
  commitAndWait();
  out[t] = tile[4 * t];
}

extern "C" __global__ void cg16_aligned(const int *in, int *out) {
  __shared__ __attribute__((aligned(16))) int tile[32 * 4];
  int t = threadIdx_x;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(
                   sharedAddress(&tile[4 * t])),
               "l"(in + 4 * t), "r"(12));
  commitAndWait();
  for (int i = 0; i < 4; ++i)
    out[4 * t + i] = tile[4 * t + i];
}

extern "C" __global__ void v4_misaligned(const int *in, int *out) {
  int a, b, c, d;
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
               : "l"(in + 2));
  out[0] = a + b + c + d;
}

extern "C" __global__ void shared_b64_misaligned(const int *in, int *out) {
  __shared__ __attribute__((aligned(16))) int s[8];
  u64 v = (u64)in[0];
  asm volatile("st.shared.b64 [%0], %1;" ::"r"(sharedAddress(&s[1])), "l"(v));
  out[0] = s[1];
}

extern "C" __global__ void atom_misaligned(const int *in, int *out) {
  u64 old;
  asm volatile("atom.global.add.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(out + 1), "l"((u64)1));
  out[0] = (int)old;
}

extern "C" __global__ void ldmatrix_misaligned(const int *in, int *out) {
  __shared__ __attribute__((aligned(16))) int s[8 * 4 + 4];
  int t = threadIdx_x;
  s[t] = in[t];
  // Rows 16 bytes apart; lane 3's row 8 bytes off.
  u32 row = sharedAddress(&s[4 * (t % 8)]) + (t == 3 ? 8 : 0);
  u32 r;
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];"
               : "=r"(r)
               : "r"(row));
  out[t] = (int)r;
}
