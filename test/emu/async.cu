// cp.async: copies from global to shared memory land when waited for
// (cp.async.wait_group / wait_all), not before: a kernel that reads the
// destination before waiting sees what was there (shared memory starts as
// 0xff bytes, -1 as an int), as it could on a device. Groups commit in
// order; wait_group 1 lands all but the newest group.
//
// RUN: %cuda-ptx %s -o %t.ptx
// RUN: %emu-run %t.ptx async --block 32 i32[64]=iota i32[128] | FileCheck %s
// Per thread: the value before waiting, after wait_group 1 (the first
// group landed, the second not yet), after wait_all, and the second
// group's value after wait_all.
// CHECK: buffer 1: -1 0 -1 32 -1 1 -1 33 -1 2 -1 34 {{.*}} -1 31 -1 63{{$}}

#include "cuda.h"

__device__ void copy4(u32 shared, const int *global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(shared),
               "l"(global));
}
__device__ void commit() { asm volatile("cp.async.commit_group;"); }
__device__ void wait1() { asm volatile("cp.async.wait_group 1;"); }
__device__ void waitAll() { asm volatile("cp.async.wait_all;"); }

extern "C" __global__ void async(const int *in, int *out) {
  __shared__ int first[32], second[32];
  int t = threadIdx_x;
  u32 a = (u32)(unsigned long long)(__attribute__((address_space(3))) int *)&first[t];
  u32 b = (u32)(unsigned long long)(__attribute__((address_space(3))) int *)&second[t];
  copy4(a, in + t);
  commit();
  copy4(b, in + 32 + t);
  commit();
  int before = ((volatile int *)first)[t];
  wait1();
  int afterOne = ((volatile int *)first)[t];
  int secondEarly = ((volatile int *)second)[t];
  waitAll();
  out[t * 4 + 0] = before;
  out[t * 4 + 1] = afterOne;
  out[t * 4 + 2] = secondEarly;
  out[t * 4 + 3] = ((volatile int *)second)[t];
}
