// The few CUDA spellings the emulator's test kernels use, for clang's CUDA
// mode without the toolkit's headers (-nocudainc -nocudalib): the kernels
// compile to PTX exactly as a CUDA program's would.
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define threadIdx_x __nvvm_read_ptx_sreg_tid_x()
#define blockIdx_x __nvvm_read_ptx_sreg_ctaid_x()
#define blockDim_x __nvvm_read_ptx_sreg_ntid_x()
#define gridDim_x __nvvm_read_ptx_sreg_nctaid_x()
#define FULL 0xffffffffu
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
