// Differential test of the emulator's arithmetic: the same C computation
// compiled to PTX (run by the emulator) and for the host; every output must
// be bit-identical. Integer division and remainder by constants (magic
// multiplications, mul.hi), 64-bit products (carry chains), shifts, bit
// operations, min/max, conversions in every rounding mode, and float
// arithmetic without contraction (so that both sides round each operation).
//
// RUN: %cuda-ptx %s -o %t.ptx
// RUN: clang++-22 -x c++ -DHOST -O1 -ffp-contract=off -I%S/Inputs %s -o %t.host
// RUN: %t.host > %t.expected
// RUN: %emu-run %t.ptx ops --block 16 i32[16]=-2147483648,2147483647,0,-1,1,7,-7,123456789,-987654321,65536,255,-256,1000000007,42,-42,3 f32[16]=0.5,-0.5,2.5,-2.5,3.75,-1.25,1e-30,1.0e+30,0.1,-0.0,1.17549435e-38,16777217,0.333333343,-7.5,1e-45,100.25 i32[512] f32[512] i64[256] f64[64] > %t.actual
// RUN: diff %t.expected %t.actual

#ifdef HOST
#include "host.h"
#include <cmath>
#define HD
#else
#include "cuda.h"
#define HD __device__
#endif

#pragma clang fp contract(off)

HD void compute(int t, const int *a, const float *f, int *oi, float *of,
                i64 *ol, double *od) {
  int x = a[t];
  float y = f[t];
  u32 u = (u32)x;
  int *I = oi + t * 32;
  float *F = of + t * 32;
  i64 *L = ol + t * 16;
  double *D = od + t * 4;
  I[0] = x / 7;
  I[1] = x % 7;
  I[2] = (int)(u / 10u);
  I[3] = (int)(u % 1000u);
  I[4] = x >> 3;
  I[5] = (int)(u >> 3);
  I[6] = (int)(u << 5);
  I[7] = (int)(u * 2654435761u);
  I[8] = (int)(((i64)x * 123456789LL) >> 32);
  I[9] = __builtin_popcount(u);
  I[10] = __builtin_clz(u | 1u);
  I[11] = __builtin_ctz(u | 256u);
  I[12] = x < 42 ? x : 42;
  I[13] = x > -42 ? x : -42;
  I[14] = x == (int)0x80000000 ? 0 : (x < 0 ? -x : x);
  I[15] = (int)__builtin_bitreverse32(u);
  I[16] = (int)((u << 7) | (u >> 25));
  I[17] = (int)((u >> 5) & 0x3ffu);
  I[18] = (int)(((u & 0xff) << 8) | ((u >> 8) & 0xff));
  I[19] = (y < 0.5f) + 2 * (y <= 0.5f) + 4 * (y != y) + 8 * (y >= -0.5f);
  I[20] = (y > -1e9f && y < 1e9f) ? (int)y : 0;
  I[21] = (int)(short)x;
  I[22] = (int)(signed char)x;
  I[23] = (int)(unsigned short)x;
  I[24] = x / -3;
  I[25] = (x ^ (x >> 31)) - (x >> 31) == 0;
  L[0] = (i64)x * (i64)x;
  L[1] = (i64)x * 1000003LL / 977LL;
  L[2] = ((i64)x * 1000003LL) % 977LL;
  L[3] = (i64)((u64)(unsigned)x * 0x9E3779B97F4A7C15ull);
  L[4] = (i64)(((unsigned __int128)((u64)(unsigned)x) * 0x9E3779B97F4A7C15ull) >> 64);
  L[5] = ((i64)x << 33) >> 3;
  L[6] = (i64)((u64)(i64)x >> 7);
  L[7] = (y > -2.1e9f && y < 2.1e9f) ? (i64)(int)y * 3 : -5;
  L[8] = (y > -9e18f && y < 9e18f) ? (i64)y : 0;
  F[0] = y + 1.5f;
  F[1] = y * 3.25f;
  F[2] = y / 3.0f;
  F[3] = __builtin_fmaf(y, 2.0f, 1.0f);
  F[4] = y >= 0 ? __builtin_sqrtf(y) : -1.0f;
  F[5] = __builtin_fminf(y, 0.25f);
  F[6] = __builtin_fmaxf(y, -0.25f);
  F[7] = __builtin_fabsf(y);
  F[8] = (float)x;
  F[9] = (float)u;
  F[10] = __builtin_rintf(y);
  F[11] = __builtin_floorf(y);
  F[12] = __builtin_ceilf(y);
  F[13] = __builtin_truncf(y);
  F[14] = __builtin_copysignf(3.0f, y);
  F[15] = y * y * y - y;
  F[16] = (float)((double)y * 1.0e-3);
  F[17] = (float)((double)x / 3.0);
  F[18] = (float)(i64)x * 0.5f;
  F[19] = 1.0f / y;
  F[20] = y - 0.1f;
  F[21] = (float)(u64)(unsigned)x;
  D[0] = (double)y * (double)y;
  D[1] = (double)x / 7.0;
  D[2] = __builtin_fma((double)y, 3.0, -1.0);
  D[3] = __builtin_sqrt((double)(x < 0 ? -(double)x : (double)x));
}

#ifndef HOST
extern "C" __global__ void ops(const int *a, const float *f, int *oi,
                               float *of, i64 *ol, double *od) {
  compute(threadIdx_x, a, f, oi, of, ol, od);
}
#else
int main() {
  const int a[16] = {(int)0x80000000, 2147483647, 0, -1, 1, 7, -7, 123456789,
                     -987654321, 65536, 255, -256, 1000000007, 42, -42, 3};
  const float f[16] = {0.5f, -0.5f, 2.5f, -2.5f, 3.75f, -1.25f, 1e-30f,
                       1.0e+30f, 0.1f, -0.0f, 1.17549435e-38f, 16777217.0f,
                       0.333333343f, -7.5f, 1e-45f, 100.25f};
  static int oi[512];
  static float of[512];
  static i64 ol[256];
  static double od[64];
  for (int t = 0; t < 16; ++t)
    compute(t, a, f, oi, of, ol, od);
  printInts(0, a, 16);
  printFloats(1, f, 16);
  printInts(2, oi, 512);
  printFloats(3, of, 512);
  printLongs(4, ol, 256);
  printDoubles(5, od, 64);
}
#endif
