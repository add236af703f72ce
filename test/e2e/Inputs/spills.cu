// A kernel that cannot fit 1024 threads' registers without spilling: 96
// live floats per thread under __launch_bounds__(1024) (at most 64
// registers). utils/ptxas-check.py must name it (test/e2e/ptxas-check.test).
#define __global__ __attribute__((global))
extern "C" __global__ void __attribute__((launch_bounds(1024)))
spilling(float *out, const float *in) {
  float v[96];
#pragma unroll
  for (int i = 0; i < 96; ++i)
    v[i] = in[i * 1024 + __nvvm_read_ptx_sreg_tid_x()];
  float s = 0;
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int i = 0; i < 96; ++i)
      s = s * v[(i * 7 + r) % 96] + v[i];
  out[__nvvm_read_ptx_sreg_tid_x()] = s;
}
