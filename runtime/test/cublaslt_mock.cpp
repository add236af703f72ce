//===- cublaslt_mock.cpp - The emulator's libcublasLt.so.13, directly -----===//
//
// tprt-cublaslt-mock-test: cuBLASLt calls as the runtime makes them
// (runtime/lib/cuda/CublasGemm.cpp) against the emulator's mock
// (runtime/emu/CublasLt.cpp) on the emulated driver's device memory: one
// good matmul with a GELU_BIAS epilogue and an addend (checked against the
// formula), then one bad argument per call, each of which must fail with
// cuBLASLt's status and a "tprt emulator: <call>: <why>" line on stderr;
// then the alignment the heuristic is told against the pointers given.
// Prints "<case>: status <n>" per case.
//
//===----------------------------------------------------------------------===//

#include <cublasLt.h>
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const char *what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok)
    ++failures;
}

/// The runtime's problem: row-major C (m x n) = act(A (m x k) B (k x n) +
/// addend + bias) as the column-major D (n x m) = B^T A^T.
struct Problem {
  int m = 3, n = 4, k = 5;
  CUdeviceptr a = 0, b = 0, c = 0, d = 0, bias = 0, workspace = 0;
  std::vector<float> ha, hb, hc, hbias;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  size_t workspaceBytes = size_t(32) << 20;

  void upload(CUdeviceptr &p, const std::vector<float> &v) {
    cuMemAlloc(&p, v.size() * sizeof(float));
    cuMemcpyHtoDAsync(p, v.data(), v.size() * sizeof(float), nullptr);
  }

  void setUp(cublasLtEpilogue_t epilogue) {
    ha.resize(size_t(m * k));
    hb.resize(size_t(k * n));
    hc.resize(size_t(m * n));
    hbias.resize(size_t(n));
    for (size_t i = 0; i < ha.size(); ++i)
      ha[i] = 0.25f * float(int(i * 3 % 7) - 3);
    for (size_t i = 0; i < hb.size(); ++i)
      hb[i] = 0.5f * float(int(i * 2 % 5) - 2);
    for (size_t i = 0; i < hc.size(); ++i)
      hc[i] = 0.25f * float(int(i % 4) - 1);
    for (size_t j = 0; j < hbias.size(); ++j)
      hbias[j] = 0.5f * float(int(j % 3) - 1);
    upload(a, ha);
    upload(b, hb);
    upload(c, hc);
    upload(bias, hbias);
    cuMemAlloc(&d, size_t(m * n) * sizeof(float));
    cuMemAlloc(&workspace, workspaceBytes);
    cublasLtCreate(&lt);
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t op = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op,
                                   sizeof(op));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op,
                                   sizeof(op));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                   &epilogue, sizeof(epilogue));
    void *biasPointer = reinterpret_cast<void *>(bias);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                   &biasPointer, sizeof(biasPointer));
    cudaDataType biasType = CUDA_R_32F;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                   &biasType, sizeof(biasType));
    cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, n, k, n); // B, k x n row-major
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, m, k); // A, m x k row-major
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, m, n);
    cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, n, m, n);
    cublasLtMatmulPreferenceCreate(&pref);
    uint64_t max = workspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max, sizeof(max));
    int returned = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
        lt, desc, la, lb, lc, ld, pref, 1, &algo, &returned);
    expect(s == CUBLAS_STATUS_SUCCESS && returned == 1, "heuristic");
  }

  cublasStatus_t run(const void *cPointer, size_t workspaceSize,
                     CUdeviceptr ltA = 0) {
    float alpha = 1, beta = 1;
    return cublasLtMatmul(lt, desc, &alpha,
                          reinterpret_cast<void *>(ltA ? ltA : b), la,
                          reinterpret_cast<void *>(a), lb, &beta,
                          cPointer, lc,
                          reinterpret_cast<void *>(d), ld, &algo.algo,
                          reinterpret_cast<void *>(workspace), workspaceSize,
                          nullptr);
  }
};

void report(const char *what, cublasStatus_t status) {
  std::printf("%s: status %d\n", what, int(status));
  std::fflush(stdout);
}

} // namespace

int main() {
  CUdevice device;
  CUcontext context;
  cuInit(0);
  cuDeviceGet(&device, 0);
  cuDevicePrimaryCtxRetain(&context, device);
  cuCtxSetCurrent(context);

  Problem p;
  p.setUp(CUBLASLT_EPILOGUE_GELU_BIAS);
  // The good call: D = gelu(A B + C + bias) per row-major element.
  cublasStatus_t s = p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize);
  std::vector<float> out(size_t(p.m * p.n));
  cuMemcpyDtoHAsync(out.data(), p.d, out.size() * sizeof(float), nullptr);
  cuStreamSynchronize(nullptr);
  bool right = s == CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < p.m; ++i)
    for (int j = 0; j < p.n; ++j) {
      double v = p.hc[size_t(i * p.n + j)] + p.hbias[size_t(j)];
      for (int l = 0; l < p.k; ++l)
        v += double(p.ha[size_t(i * p.k + l)]) * p.hb[size_t(l * p.n + j)];
      v = 0.5 * v *
          (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      right &= std::fabs(out[size_t(i * p.n + j)] - v) <= 1e-5 * (1 + std::fabs(v));
    }
  expect(right, "GELU_BIAS with C: D = gelu(A B + C + bias), bias per row of D");

  // Too little workspace for the algorithm.
  report("short workspace", p.run(reinterpret_cast<const void *>(p.c), 0));
  // A bias in host memory.
  const void *hostBias = p.hbias.data();
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                 &hostBias, sizeof(hostBias));
  report("host bias", p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize));
  // No bias pointer with a BIAS epilogue.
  const void *noBias = nullptr;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                 &noBias, sizeof(noBias));
  report("no bias", p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize));
  // An attribute of the wrong size.
  uint64_t wide = CUBLASLT_EPILOGUE_BIAS;
  report("attribute size",
         cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                        &wide, sizeof(wide)));
  // An epilogue the emulator does not run.
  cublasLtEpilogue_t grad = CUBLASLT_EPILOGUE_BGRADA;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &grad,
                                 sizeof(grad));
  report("epilogue", p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize));
  cublasLtEpilogue_t none = CUBLASLT_EPILOGUE_DEFAULT;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &none,
                                 sizeof(none));
  // A bias data type other than D's.
  cudaDataType half = CUDA_R_16BF;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                 &half, sizeof(half));
  cublasLtEpilogue_t biasOnly = CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                 &biasOnly, sizeof(biasOnly));
  report("bias type", p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize));
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &none,
                                 sizeof(none));
  // A leading dimension below the rows.
  cublasLtMatrixLayout_t shortLd;
  cublasLtMatrixLayoutCreate(&shortLd, CUDA_R_32F, p.n, p.m, p.n - 1);
  std::swap(p.ld, shortLd);
  report("leading dimension", p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize));
  std::swap(p.ld, shortLd);
  // Mixed data types.
  cublasLtMatrixLayout_t bf16;
  cublasLtMatrixLayoutCreate(&bf16, CUDA_R_16BF, p.n, p.m, p.n);
  std::swap(p.lc, bf16);
  report("mixed types", p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize));
  std::swap(p.lc, bf16);
  // Shapes that do not multiply.
  cublasLtMatrixLayout_t wrongK;
  cublasLtMatrixLayoutCreate(&wrongK, CUDA_R_32F, p.k + 1, p.m, p.k + 1);
  std::swap(p.lb, wrongK);
  report("shapes", p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize));
  std::swap(p.lb, wrongK);
  // An algorithm that is not the heuristic's.
  std::memset(&p.algo.algo, 0, sizeof(p.algo.algo));
  report("algorithm", p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize));
  // Alignment (MIN_ALIGNMENT_*_BYTES, default 256): the heuristic told
  // that A is `bytes`-byte aligned.
  int returned = -1;
  auto promise = [&](uint32_t bytes) {
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(
        p.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &bytes,
        sizeof(bytes));
    if (s != CUBLAS_STATUS_SUCCESS)
      return s;
    return cublasLtMatmulAlgoGetHeuristic(p.lt, p.desc, p.la, p.lb, p.lc, p.ld,
                                          p.pref, 1, &p.algo, &returned);
  };
  // At 4 bytes it finds no algorithm (the emulated one loads 16-byte
  // vectors); 3 is not a power of two.
  report("4-byte A: heuristic", promise(4));
  expect(returned == 0, "4-byte A: no algorithm returned");
  report("alignment 3", promise(3));
  // Chosen for the default 256 bytes, the algorithm refuses A at 64 bytes
  // past a 256-byte boundary (what a view gets from a runtime that leaves
  // the default); chosen for 64, it runs.
  CUdeviceptr shifted = 0;
  cuMemAlloc(&shifted, 4096);
  cuMemcpyHtoDAsync(shifted + 64, p.hb.data(), p.hb.size() * sizeof(float),
                    nullptr);
  promise(256);
  report("64-byte A chosen for 256",
         p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize,
               shifted + 64));
  promise(64);
  report("64-byte A chosen for 64",
         p.run(reinterpret_cast<const void *>(p.c), p.algo.workspaceSize,
               shifted + 64));
  std::printf("cublaslt-mock: %d failed\n", failures);
  return failures ? 1 : 0;
}
