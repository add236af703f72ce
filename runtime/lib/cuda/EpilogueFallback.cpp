//===- EpilogueFallback.cpp - tprt_gemm_epilogue without cuBLASLt ---------===//
//
// When cuBLASLt has no algorithm for an epilogue GEMM (its heuristic finds
// none at the operands' alignments, or the matmul refuses them: see
// CublasGemm.h), the call runs on the plain cuBLAS path instead:
//
//   1. P = op(A) op(B) by cublasGemmEx into a scratch of the compute type
//      (f32 for f32, f16 and bf16: the mixed-precision GEMM for 16-bit
//      operands; f64 for f64), row-major m x n. cublasGemmEx takes any
//      operand aligned to its element size.
//   2. C[i, j] = round(act(P[i, j] + addend[i, j] + bias[j])) by the kernel
//      below, one thread per element (a grid-stride loop over m x n): the
//      sum in the compute type, the activation, one rounding to C's type,
//      as cuBLASLt's fused epilogue computes it. The addend may be C itself
//      (each thread reads its element before writing it).
//
// The kernel is PTX written here (no toolkit needed to build the runtime),
// for sm_80 and later (cvt.rn.bf16.f32), JIT-compiled by the driver at the
// first fallback and kept. GELU (tanh form) is computed as
//   0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)),  u = sqrt(2/pi)(x + 0.044715 x^3)
// which has no cancellation for large negative x, with exp by ex2.approx
// (relative error about 2^-22) and a correctly rounded division; for f64
// the exponential is computed in f32 (PTX has no f64 ex2): the activation
// is then accurate to f32, the sums to f64.
//
//===----------------------------------------------------------------------===//

#include "CublasGemm.h"

#include "CudaDevice.h"
#include "common/DType.h"
#include "common/Error.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

using namespace tprt;
using namespace tprt::cuda;

namespace {

constexpr unsigned kThreads = 256;

/// The kernel's dtypes, in the order of Cublas::epilogueKernels.
int kernelIndex(tprt_dtype dtype) {
  switch (dtype) {
  case TPRT_F32: return 0;
  case TPRT_F16: return 1;
  case TPRT_BF16: return 2;
  default: return 3; // TPRT_F64
  }
}

std::string f32Hex(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  char text[16];
  std::snprintf(text, sizeof(text), "0f%08X", bits);
  return text;
}

std::string f64Hex(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  char text[24];
  std::snprintf(text, sizeof(text), "0d%016llX",
                static_cast<unsigned long long>(bits));
  return text;
}

/// The kernel for one dtype: tprt_gemm_epilogue_<name>(c, ldc, p, addend,
/// ldAddend, bias, rows, cols, activation); addend and bias may be 0. Its
/// labels end in '$', which the module replaces by "_<name>".
std::string kernelPtx(tprt_dtype dtype) {
  bool wide = dtype == TPRT_F64;
  const char *name = dtypeName(dtype);
  std::string F = wide ? "f64" : "f32"; // the compute type
  unsigned bytes = unsigned(dtypeSize(dtype)), pBytes = wide ? 8 : 4;
  auto shift = [](unsigned b) { return std::to_string(b == 8 ? 3 : b == 4 ? 2 : 1); };
  std::string zero = wide ? f64Hex(0) : f32Hex(0), one = wide ? f64Hex(1) : f32Hex(1);
  // Loads an element of C's type at [%rd20] into %x1 (compute type).
  std::string load;
  switch (dtype) {
  case TPRT_F32: load = "  ld.global.f32 %x1, [%rd20];\n"; break;
  case TPRT_F64: load = "  ld.global.f64 %x1, [%rd20];\n"; break;
  case TPRT_F16:
    load = "  ld.global.b16 %h1, [%rd20];\n  cvt.f32.f16 %x1, %h1;\n";
    break;
  default: // bf16: the upper half of an f32
    load = "  ld.global.b16 %h1, [%rd20];\n  cvt.u32.u16 %r10, %h1;\n"
           "  shl.b32 %r10, %r10, 16;\n  mov.b32 %x1, %r10;\n";
    break;
  }
  std::string store;
  switch (dtype) {
  case TPRT_F32: store = "  st.global.f32 [%rd20], %x0;\n"; break;
  case TPRT_F64: store = "  st.global.f64 [%rd20], %x0;\n"; break;
  case TPRT_F16:
    store = "  cvt.rn.f16.f32 %h1, %x0;\n  st.global.b16 [%rd20], %h1;\n";
    break;
  default:
    store = "  cvt.rn.bf16.f32 %h1, %x0;\n  st.global.b16 [%rd20], %h1;\n";
    break;
  }
  // GELU: x / (1 + exp(-2u)), exp(y) = ex2(y log2 e); -2 sqrt(2/pi) log2 e
  // folded into one constant.
  double k = -2.0 * std::sqrt(2.0 / M_PI) / std::log(2.0);
  std::string gelu;
  if (wide)
    gelu = "  mul.rn.f64 %x2, %x0, %x0;\n"
           "  fma.rn.f64 %x2, %x2, " + f64Hex(0.044715) + ", " + one + ";\n"
           "  mul.rn.f64 %x2, %x2, %x0;\n"
           "  mul.rn.f64 %x2, %x2, " + f64Hex(k) + ";\n"
           "  cvt.rn.f32.f64 %s1, %x2;\n"
           "  ex2.approx.f32 %s1, %s1;\n"
           "  cvt.f64.f32 %x2, %s1;\n"
           "  add.rn.f64 %x2, %x2, " + one + ";\n"
           "  div.rn.f64 %x0, %x0, %x2;\n";
  else
    gelu = "  mul.rn.f32 %x2, %x0, %x0;\n"
           "  fma.rn.f32 %x2, %x2, " + f32Hex(0.044715f) + ", " + one + ";\n"
           "  mul.rn.f32 %x2, %x2, %x0;\n"
           "  mul.rn.f32 %x2, %x2, " + f32Hex(float(k)) + ";\n"
           "  ex2.approx.f32 %x2, %x2;\n"
           "  add.rn.f32 %x2, %x2, " + one + ";\n"
           "  div.rn.f32 %x0, %x0, %x2;\n";

  std::string s;
  s += std::string(".visible .entry tprt_gemm_epilogue_") + name + "(\n"
       "  .param .u64 c, .param .u64 ldc, .param .u64 p, .param .u64 addend,\n"
       "  .param .u64 ld_addend, .param .u64 bias, .param .u64 rows,\n"
       "  .param .u64 cols, .param .u32 activation)\n{\n";
  s += "  .reg .pred %q<4>;\n  .reg .b16 %h<2>;\n  .reg .b32 %r<12>;\n"
       "  .reg .f32 %s<2>;\n  .reg .b64 %rd<24>;\n";
  s += "  .reg ." + F + " %x<3>;\n";
  s += "  ld.param.u64 %rd1, [c];\n  ld.param.u64 %rd2, [ldc];\n"
       "  ld.param.u64 %rd3, [p];\n  ld.param.u64 %rd4, [addend];\n"
       "  ld.param.u64 %rd5, [ld_addend];\n  ld.param.u64 %rd6, [bias];\n"
       "  ld.param.u64 %rd7, [rows];\n  ld.param.u64 %rd8, [cols];\n"
       "  ld.param.u32 %r1, [activation];\n"
       "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n"
       "  mov.u32 %r4, %tid.x;\n  mov.u32 %r5, %nctaid.x;\n"
       "  mul.wide.u32 %rd9, %r2, %r3;\n  cvt.u64.u32 %rd10, %r4;\n"
       "  add.u64 %rd9, %rd9, %rd10;\n"       // i
       "  mul.wide.u32 %rd11, %r5, %r3;\n"   // stride
       "  mul.lo.u64 %rd12, %rd7, %rd8;\n";  // rows x cols
  s += "LOOP$:\n  setp.ge.u64 %q1, %rd9, %rd12;\n  @%q1 bra DONE$;\n"
       "  div.u64 %rd13, %rd9, %rd8;\n"       // row
       "  mul.lo.u64 %rd14, %rd13, %rd8;\n"
       "  sub.u64 %rd14, %rd9, %rd14;\n";     // col
  // P[i] (row-major m x n, ld n: element i).
  s += "  shl.b64 %rd20, %rd9, " + shift(pBytes) + ";\n"
       "  add.u64 %rd20, %rd3, %rd20;\n"
       "  ld.global." + F + " %x0, [%rd20];\n";
  s += "  setp.eq.u64 %q2, %rd4, 0;\n  @%q2 bra NOADDEND$;\n"
       "  mad.lo.u64 %rd20, %rd13, %rd5, %rd14;\n"
       "  shl.b64 %rd20, %rd20, " + shift(bytes) + ";\n"
       "  add.u64 %rd20, %rd4, %rd20;\n" + load +
       "  add.rn." + F + " %x0, %x0, %x1;\n";
  s += "NOADDEND$:\n  setp.eq.u64 %q2, %rd6, 0;\n  @%q2 bra NOBIAS$;\n"
       "  shl.b64 %rd20, %rd14, " + shift(bytes) + ";\n"
       "  add.u64 %rd20, %rd6, %rd20;\n" + load +
       "  add.rn." + F + " %x0, %x0, %x1;\n";
  s += "NOBIAS$:\n  setp.ne.u32 %q2, %r1, 1;\n  @%q2 bra NORELU$;\n"
       "  max." + F + " %x0, %x0, " + zero + ";\n";
  s += "NORELU$:\n  setp.ne.u32 %q2, %r1, 2;\n  @%q2 bra STORE$;\n" + gelu;
  s += "STORE$:\n  mad.lo.u64 %rd20, %rd13, %rd2, %rd14;\n"
       "  shl.b64 %rd20, %rd20, " + shift(bytes) + ";\n"
       "  add.u64 %rd20, %rd1, %rd20;\n" + store +
       "  add.u64 %rd9, %rd9, %rd11;\n  bra LOOP$;\n";
  s += "DONE$:\n  ret;\n}\n";
  return s;
}

} // namespace

tprt_status Cublas::gemmEpilogueFallback(
    tprt_dtype dtype, bool transA, bool transB, int64_t m, int64_t n,
    int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb,
    const void *addend, int64_t ldAddend, const void *bias, int activation,
    void *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return TPRT_OK;
  tprt_dtype pType = dtype == TPRT_F64 ? TPRT_F64 : TPRT_F32;
  size_t need = size_t(m) * size_t(n) * dtypeSize(pType);
  if (need > scratchBytes) {
    // Earlier fallbacks may still use the scratch.
    if (scratch) {
      if (tprt_status status =
              check(cuStreamSynchronize(stream), "cuStreamSynchronize"))
        return status;
      cuMemFree(scratch);
      scratch = 0;
      scratchBytes = 0;
    }
    if (tprt_status status = check(cuMemAlloc(&scratch, need), "cuMemAlloc"))
      return status;
    scratchBytes = need;
  }
  void *product = reinterpret_cast<void *>(scratch);
  // f16/bf16 operands into f32 (the mixed GEMM), else the dtype itself.
  if (tprt_status status =
          gemm(dtype, pType, transA, transB, m, n, k, 1.0f, a, lda, 0, b, ldb,
               0, 0.0f, product, n, 0, 1))
    return status;

  int index = kernelIndex(dtype);
  if (!epilogueKernels[index]) {
    if (!epilogueModule) {
      // One module with the four kernels, each with its own labels.
      std::string ptx = ".version 7.0\n.target sm_80\n.address_size 64\n\n";
      for (tprt_dtype t : {TPRT_F32, TPRT_F16, TPRT_BF16, TPRT_F64}) {
        std::string one = kernelPtx(t), suffix = std::string("_") + dtypeName(t);
        for (size_t at = one.find('$'); at != std::string::npos;
             at = one.find('$', at))
          one.replace(at, 1, suffix);
        ptx += one + "\n";
      }
      if (tprt_status status = check(cuModuleLoadData(&epilogueModule,
                                                      ptx.c_str()),
                                     "cuModuleLoadData (the epilogue kernels)"))
        return status;
    }
    std::string name = std::string("tprt_gemm_epilogue_") + dtypeName(dtype);
    if (tprt_status status =
            check(cuModuleGetFunction(&epilogueKernels[index], epilogueModule,
                                      name.c_str()),
                  "cuModuleGetFunction"))
      return status;
  }
  uint64_t cArg = reinterpret_cast<uintptr_t>(c);
  uint64_t ldcArg = uint64_t(ldc);
  uint64_t pArg = uint64_t(scratch);
  uint64_t addendArg = reinterpret_cast<uintptr_t>(addend);
  uint64_t ldAddendArg = addend ? uint64_t(ldAddend) : 0;
  uint64_t biasArg = reinterpret_cast<uintptr_t>(bias);
  uint64_t rowsArg = uint64_t(m), colsArg = uint64_t(n);
  uint32_t activationArg = uint32_t(activation);
  void *params[] = {&cArg,    &ldcArg,  &pArg,    &addendArg,    &ldAddendArg,
                    &biasArg, &rowsArg, &colsArg, &activationArg};
  uint64_t elements = uint64_t(m) * uint64_t(n);
  uint64_t blocks = (elements + kThreads - 1) / kThreads;
  if (blocks > 65535)
    blocks = 65535; // the grid-stride loop covers the rest
  return check(cuLaunchKernel(epilogueKernels[index], unsigned(blocks), 1, 1,
                              kThreads, 1, 1, 0, stream, params, nullptr),
               "cuLaunchKernel (the epilogue kernel)");
}
