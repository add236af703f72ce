//===- NoHostGemm.cpp - The host GEMM is not part of libtprt_cuda ---------===//
//
// Backend::gemm's default (Backend.cpp) calls hostGemm, which lives in
// libtprt with its CBLAS. The GPU backend overrides gemm, batchedGemm,
// gemmMixed, sharedAGemm and gemmEpilogue, so these definitions only complete the
// base class inside libtprt_cuda.
//
//===----------------------------------------------------------------------===//

#include "common/Error.h"
#include "common/HostGemm.h"

using namespace tprt;

tprt_status tprt::hostGemm(tprt_dtype, bool, bool, int64_t, int64_t, int64_t,
                           float, const void *, int64_t, const void *, int64_t,
                           float, void *, int64_t) {
  return fail(TPRT_ERROR_INTERNAL,
              "the host GEMM is not available inside libtprt_cuda");
}

tprt_status tprt::hostGemmWidened(tprt_dtype, tprt_dtype, bool, bool, int64_t,
                                  int64_t, int64_t, float, const void *,
                                  int64_t, const void *, int64_t, float,
                                  void *, int64_t) {
  return fail(TPRT_ERROR_INTERNAL,
              "the host GEMM is not available inside libtprt_cuda");
}

tprt_status tprt::hostGemmEpilogue(tprt_dtype, bool, bool, int64_t, int64_t,
                                   int64_t, const void *, int64_t,
                                   const void *, int64_t, const void *,
                                   int64_t, const void *, int, void *,
                                   int64_t) {
  return fail(TPRT_ERROR_INTERNAL,
              "the host GEMM is not available inside libtprt_cuda");
}
