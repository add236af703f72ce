// Tensor-core fragments: one warp loads a 16 x 16 A and a 16 x 8 B (bf16,
// small integers, so every product and sum is exact) into shared memory,
// takes them with ldmatrix (.x4 for A, .x2 for B, whose rows are
// stored k-major) and multiplies them with mma.sync.m16n8k16 into f32
// accumulators that start at C; the f16 variant with an m16n8k8 product
// and f16 accumulators follows. Inputs/tensor.py checks D = A B + C.
//
// RUN: %cuda-ptx %s -o %t.ptx
// RUN: %emu-run %t.ptx tensor --block 32 f32[128] > %t.out
// RUN: %python %S/Inputs/tensor.py %t.out

#include "cuda.h"

typedef unsigned short u16;

__device__ u16 bf16(float x) {
  u32 b = __builtin_bit_cast(u32, x);
  return (u16)(b >> 16); // exact for small integers
}


extern "C" __global__ void tensor(float *out) {
  __shared__ __attribute__((aligned(16))) u16 A[16 * 16];
  __shared__ __attribute__((aligned(16))) u16 B[8 * 16]; // B^T: [n][k]
  int t = threadIdx_x;
  for (int i = t; i < 256; i += 32)
    A[i] = bf16((float)((i / 16 + 2 * (i % 16)) % 7 - 3));
  for (int i = t; i < 128; i += 32)
    B[i] = bf16((float)((i / 16 * 3 + i % 16) % 5 - 2));
  __syncthreads();
  u32 a0, a1, a2, a3, b0, b1;
  // A: lanes 0-15 give rows 0-15 at column 0, lanes 16-31 rows 0-15 at
  // column 8 (matrices 0..3 = top-left, bottom-left, top-right,
  // bottom-right 8 x 8 blocks).
  const u16 *arow = &A[(t % 16) * 16 + (t / 16) * 8];
  u32 aaddr = (u32)(unsigned long long)(const __attribute__((address_space(3))) u16 *)arow;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(aaddr));
  // B^T rows (n) 0-7 at k 0 and at k 8: lanes 0-7 and 8-15.
  const u16 *brow = &B[(t % 8) * 16 + ((t / 8) % 2) * 8];
  u32 baddr = (u32)(unsigned long long)(const __attribute__((address_space(3))) u16 *)brow;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(b0), "=r"(b1) : "r"(baddr));
  float c0 = t, c1 = -t, c2 = 0.5f, c3 = 2 * t;
  float d0, d1, d2, d3;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1),
                 "f"(c0), "f"(c1), "f"(c2), "f"(c3));
  out[t * 4 + 0] = d0;
  out[t * 4 + 1] = d1;
  out[t * 4 + 2] = d2;
  out[t * 4 + 3] = d3;
}
