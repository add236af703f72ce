//===- HostBlas.h - The BLAS behind the host GEMM ---------------*- C++ -*-===//
//
// libtprt loads OpenBLAS at run time (dlopen) instead of linking it, so that
// it can pick OpenBLAS's kernel from the CPU's features when the library's
// own CPU detection does not know the CPU (Debian 12's OpenBLAS 0.3.21 takes
// recent Xeons for a Prescott or a SkylakeX), and set the number of BLAS
// threads before OpenBLAS starts its thread pool. docs/runtime.md ("The host
// BLAS") explains the choice.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_HOSTBLAS_H
#define TPRT_COMMON_HOSTBLAS_H

#include "tprt/tprt.h"

#include <string>

namespace tprt {

/// The x86 features that decide an OpenBLAS kernel (all false elsewhere).
/// A vector extension counts only when the OS saves its registers (XCR0).
struct CpuFeatures {
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false,
       avx512cd = false, avx512bf16 = false;
};

/// The features of the CPU this process runs on (cpuid and xgetbv).
CpuFeatures hostCpuFeatures();

/// The best OpenBLAS DYNAMIC_ARCH kernel (an OPENBLAS_CORETYPE name) the
/// features allow: "Cooperlake" (AVX-512 with BF16), "SkylakeX" (AVX-512
/// F/BW/DQ/VL/CD), "Haswell" (AVX2 and FMA), "Sandybridge" (AVX), or ""
/// when none of them applies.
const char *openblasCoreFor(const CpuFeatures &features);

/// The instruction-set level of an OpenBLAS core name (case-insensitive):
/// 4 Cooperlake, 3 SkylakeX, 2 Haswell and Zen, 1 Sandybridge, 0 the
/// older x86 kernels (Prescott, Core2, Nehalem, ...), -1 a name this table
/// does not know (a newer kernel, or another architecture).
int openblasCoreLevel(const std::string &name);

/// Function types of the CBLAS entry points (CBLAS enum values as ints).
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double *,
                         int, const double *, int, double, double *, int);

/// The loaded BLAS, or why there is none.
struct HostBlas {
  SgemmFn sgemm = nullptr; // null: the reference loop computes products
  DgemmFn dgemm = nullptr;
  int threads = 1;
  /// One line for reports, e.g. "OpenBLAS 0.3.21, core Cooperlake (picked
  /// by tprt from the CPU's features; OpenBLAS's own detection picks
  /// SkylakeX), 1 thread".
  std::string description;
  /// Set when TPRT_THREADS is invalid: every product fails with it.
  std::string error;
};

/// Loads the BLAS (what hostBlas() does once; tests call it directly). Reads
/// TPRT_THREADS (BLAS threads per rank, default 1), TPRT_BLAS_LIBRARY (the
/// library to load, default libopenblas.so.0) and OPENBLAS_CORETYPE (a
/// kernel the user chose: then tprt chooses none).
HostBlas loadHostBlas();

/// The BLAS of this process, loaded on the first call (thread-safe).
const HostBlas &hostBlas();

/// Sets (or, with a null value, removes) an environment variable for a
/// scope and puts back what was there after: OpenBLAS reads its settings
/// while it opens, and the tests set tprt's.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name;
  std::string previous;
  bool hadPrevious = false;
};

} // namespace tprt

#endif // TPRT_COMMON_HOSTBLAS_H
