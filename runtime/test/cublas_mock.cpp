//===- cublas_mock.cpp - The emulator's libcublas.so.13, directly ---------===//
//
// tprt-cublas-mock-test: cublasGemmEx and cublasGemmStridedBatchedEx as the
// runtime calls them for the mixed-precision GEMM (runtime/lib/cuda/
// CublasGemm.cpp: CUDA_R_16BF or CUDA_R_16F A and B, a CUDA_R_32F C,
// CUBLAS_COMPUTE_32F, the row-major product as the column-major C^T =
// op(B)^T op(A)^T) against the emulator's mock (runtime/emu/Cublas.cpp) on
// the emulated driver's device memory, checked against a double reference
// (an f32 C: the sums are not rounded to 16 bits); then one combination of
// types per call that cuBLAS's table of cublasGemmEx does not have, each of
// which must fail with CUBLAS_STATUS_NOT_SUPPORTED (15) and a
// "tprt emulator: <call>: <why>" line on stderr. Prints "<case>: status
// <n>" per refused case.
//
//===----------------------------------------------------------------------===//

#include <cublas_v2.h>
#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok)
    ++failures;
}

void report(const char *what, cublasStatus_t status) {
  std::printf("%s: status %d\n", what, int(status));
  std::fflush(stdout);
}

/// bf16 and f16 bits of small binary fractions (exact).
uint16_t toBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return uint16_t(bits >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}
uint16_t toF16(float v) {
  // Normal values with at most 11 significant bits only.
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  uint32_t sign = (bits >> 16) & 0x8000u;
  int32_t exponent = int32_t((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = (bits >> 13) & 0x3ffu;
  if ((bits & 0x7fffffffu) == 0)
    return uint16_t(sign);
  return uint16_t(sign | (uint32_t(exponent) << 10) | mantissa);
}
float fromF16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0 && mantissa == 0) {
    float v;
    std::memcpy(&v, &sign, sizeof(v));
    return v;
  }
  uint32_t bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

CUdeviceptr upload(const void *data, size_t bytes) {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, bytes);
  cuMemcpyHtoDAsync(p, data, bytes, nullptr);
  return p;
}

/// Row-major C (m x n, f32) = alpha op(A) op(B) + beta C for `batch`
/// strided products, called as the runtime calls cuBLAS; checked.
void mixed(cublasHandle_t handle, cudaDataType type, bool transA, bool transB,
           int64_t batch, float beta) {
  const int64_t m = 3, n = 4, k = 5;
  bool bf = type == CUDA_R_16BF;
  int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
  int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
  int64_t lda = colsA, ldb = colsB + 1, ldc = n + 1;
  int64_t strideA = rowsA * lda, strideB = rowsB * ldb + 2,
          strideC = m * ldc + 1;
  std::vector<uint16_t> a(size_t(batch * strideA)), b(size_t(batch * strideB));
  std::vector<float> fa(a.size()), fb(b.size()), c(size_t(batch * strideC));
  for (size_t i = 0; i < a.size(); ++i) {
    float v = 1.0f + float((i * 5) % 7) / 64.0f;
    a[i] = bf ? toBf16(v) : toF16(v);
    fa[i] = bf ? fromBf16(a[i]) : fromF16(a[i]);
  }
  for (size_t i = 0; i < b.size(); ++i) {
    float v = float(int(i * 3 % 5) - 2) * (1.0f + 1.0f / 128.0f);
    b[i] = bf ? toBf16(v) : toF16(v);
    fb[i] = bf ? fromBf16(b[i]) : fromF16(b[i]);
  }
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = float(i % 3) - 1.0f;
  std::vector<float> before = c;
  CUdeviceptr da = upload(a.data(), a.size() * 2),
              db = upload(b.data(), b.size() * 2),
              dc = upload(c.data(), c.size() * 4);
  float alpha = 0.5f;
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t s;
  if (batch == 1)
    s = cublasGemmEx_64(handle, opB, opA, n, m, k, &alpha,
                        reinterpret_cast<void *>(db), type, ldb,
                        reinterpret_cast<void *>(da), type, lda, &beta,
                        reinterpret_cast<void *>(dc), CUDA_R_32F, ldc,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  else
    s = cublasGemmStridedBatchedEx_64(
        handle, opB, opA, n, m, k, &alpha, reinterpret_cast<void *>(db), type,
        ldb, strideB, reinterpret_cast<void *>(da), type, lda, strideA, &beta,
        reinterpret_cast<void *>(dc), CUDA_R_32F, ldc, strideC, batch,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  cuMemcpyDtoHAsync(c.data(), dc, c.size() * 4, nullptr);
  cuStreamSynchronize(nullptr);
  bool right = s == CUBLAS_STATUS_SUCCESS;
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        size_t at = size_t(p * strideC + i * ldc + j);
        double want = before[at]; // padding: untouched
        if (j < n) {
          double sum = 0;
          for (int64_t l = 0; l < k; ++l)
            sum += double(fa[size_t(p * strideA +
                                    (transA ? l * lda + i : i * lda + l))]) *
                   fb[size_t(p * strideB +
                             (transB ? j * ldb + l : l * ldb + j))];
          want = alpha * sum + beta * before[at];
        }
        right &= std::fabs(c[at] - want) <= 1e-6 * (1 + std::fabs(want));
      }
  expect(right, std::string(bf ? "bf16" : "f16") + " into f32" +
                    (transA ? " A^T" : "") + (transB ? " B^T" : "") +
                    " batch " + std::to_string(batch));
  cuMemFree(da);
  cuMemFree(db);
  cuMemFree(dc);
}

/// cublasGemmGroupedBatchedEx_64 as the runtime calls it for
/// tprt_gemm_grouped: f32, one cuBLAS group per expert (group_size 1), the
/// row-major C_g (m_g x n) = A_g (m_g x k) op(B_g) as the column-major
/// C_g^T = op(B_g)^T A_g^T, pointer arrays in device memory; groups of 2
/// and 3 rows of one A into the same rows of one C. Checked exactly
/// (small integers).
void grouped(cublasHandle_t handle, bool transB) {
  const int64_t n = 4, k = 3, rows[2] = {2, 3}, total = 5;
  std::vector<float> a(size_t(total * k)), b(size_t(2 * k * n)),
      c(size_t(total * n), -7.0f);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i * 5 % 7) - 3);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i * 3 % 5) - 2);
  CUdeviceptr da = upload(a.data(), a.size() * 4),
              db = upload(b.data(), b.size() * 4),
              dc = upload(c.data(), c.size() * 4);
  // [B_0, B_1, A_0, A_1, C_0, C_1]: cuBLAS's first operand is our B.
  const void *pointers[6] = {
      reinterpret_cast<void *>(db), reinterpret_cast<void *>(db + k * n * 4),
      reinterpret_cast<void *>(da),
      reinterpret_cast<void *>(da + rows[0] * k * 4),
      reinterpret_cast<void *>(dc),
      reinterpret_cast<void *>(dc + rows[0] * n * 4)};
  CUdeviceptr arrays = upload(pointers, sizeof(pointers));
  auto *device = reinterpret_cast<void **>(arrays);
  cublasOperation_t first[2], second[2] = {CUBLAS_OP_N, CUBLAS_OP_N};
  first[0] = first[1] = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  int64_t ms[2] = {n, n}, ns[2] = {rows[0], rows[1]}, ks[2] = {k, k},
          ldFirst[2] = {transB ? k : n, transB ? k : n}, ldSecond[2] = {k, k},
          ldOut[2] = {n, n}, sizes[2] = {1, 1};
  float alphas[2] = {1.0f, 2.0f}, betas[2] = {0.0f, 0.0f};
  cublasStatus_t s = cublasGemmGroupedBatchedEx_64(
      handle, first, second, ms, ns, ks, alphas, device, CUDA_R_32F, ldFirst,
      device + 2, CUDA_R_32F, ldSecond, betas, device + 4, CUDA_R_32F, ldOut,
      2, sizes, CUBLAS_COMPUTE_32F);
  cuMemcpyDtoHAsync(c.data(), dc, c.size() * 4, nullptr);
  cuStreamSynchronize(nullptr);
  bool right = s == CUBLAS_STATUS_SUCCESS;
  for (int64_t i = 0; i < total; ++i) {
    int64_t g = i < rows[0] ? 0 : 1;
    for (int64_t j = 0; j < n; ++j) {
      float want = 0;
      for (int64_t l = 0; l < k; ++l)
        want += a[size_t(i * k + l)] *
                b[size_t(g * k * n + (transB ? j * k + l : l * n + j))];
      right &= c[size_t(i * n + j)] == alphas[g] * want;
    }
  }
  expect(right, std::string("grouped f32") + (transB ? " B^T" : "") +
                    " groups of 2 and 3 rows");
  // cublasGemmGroupedBatchedEx has no f64 (the runtime loops over
  // cublasGemmEx for it) and no mixed types.
  report("grouped f64",
         cublasGemmGroupedBatchedEx_64(
             handle, first, second, ms, ns, ks, alphas, device, CUDA_R_64F,
             ldFirst, device + 2, CUDA_R_64F, ldSecond, betas, device + 4,
             CUDA_R_64F, ldOut, 2, sizes, CUBLAS_COMPUTE_64F));
  report("grouped bf16 into f32",
         cublasGemmGroupedBatchedEx_64(
             handle, first, second, ms, ns, ks, alphas, device, CUDA_R_16BF,
             ldFirst, device + 2, CUDA_R_16BF, ldSecond, betas, device + 4,
             CUDA_R_32F, ldOut, 2, sizes, CUBLAS_COMPUTE_32F));
  cuMemFree(arrays);
  cuMemFree(da);
  cuMemFree(db);
  cuMemFree(dc);
}

} // namespace

int main() {
  CUdevice device;
  CUcontext context;
  cuInit(0);
  cuDeviceGet(&device, 0);
  cuDevicePrimaryCtxRetain(&context, device);
  cuCtxSetCurrent(context);
  cublasHandle_t handle = nullptr;
  cublasCreate(&handle);

  mixed(handle, CUDA_R_16BF, false, false, 1, 0.0f);
  mixed(handle, CUDA_R_16BF, false, true, 1, 1.0f);
  mixed(handle, CUDA_R_16BF, true, false, 3, 0.0f);
  mixed(handle, CUDA_R_16F, true, true, 2, 0.5f);
  grouped(handle, false);
  grouped(handle, true);

  // The types cublasGemmEx refuses (its documented table): each one call.
  std::vector<float> host(64, 0.0f);
  CUdeviceptr buffer = upload(host.data(), host.size() * 4);
  void *p = reinterpret_cast<void *>(buffer);
  float one = 1, zero = 0;
  auto gemm = [&](cudaDataType a, cudaDataType b, cudaDataType c,
                  cublasComputeType_t compute) {
    return cublasGemmEx_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p,
                           a, 2, p, b, 2, &zero, p, c, 2, compute,
                           CUBLAS_GEMM_DEFAULT);
  };
  report("bf16 x f16", gemm(CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F,
                            CUBLAS_COMPUTE_32F));
  report("bf16 into f16", gemm(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16F,
                               CUBLAS_COMPUTE_32F));
  report("bf16 into f64", gemm(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_64F,
                               CUBLAS_COMPUTE_32F));
  report("bf16 fast-16bf compute", gemm(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F,
                                        CUBLAS_COMPUTE_32F_FAST_16BF));
  report("f16 into f32 with 16f compute",
         gemm(CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_16F));
  report("f32 into bf16", gemm(CUDA_R_32F, CUDA_R_32F, CUDA_R_16BF,
                               CUBLAS_COMPUTE_32F));
  // PEDANTIC is the same combination, computed without tensor-core tricks.
  report("bf16 into f32 pedantic", gemm(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F,
                                        CUBLAS_COMPUTE_32F_PEDANTIC));
  cuMemFree(buffer);
  cublasDestroy(handle);
  std::printf("cublas-mock: %d failed\n", failures);
  return failures ? 1 : 0;
}
