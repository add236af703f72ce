//===- BackendFactory.cpp - Backend names to implementations --------------===//
//
// createBackend() is the one place that maps backend names to
// implementations. The GPU backends live in libtprt_cuda.so, which
// CudaLoader.cpp loads on demand so that libtprt itself needs no driver.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include "Error.h"

using namespace tprt;

tprt_status tprt::createBackend(const std::string &name,
                                std::unique_ptr<Backend> &out) {
  if (name == "single") {
    out = createSingleBackend();
    return TPRT_OK;
  }
  if (name == "mpi") {
#ifdef TPRT_HAVE_MPI
    return createMpiBackend(out);
#else
    return fail(TPRT_ERROR_UNAVAILABLE,
                "backend \"mpi\" is not available: libtprt was built without "
                "MPI (install libopenmpi-dev and reconfigure)");
#endif
  }
  if (name == "nccl" || name == "cuda" || name == "cuda-shared")
    return createCudaBackend(name, out);
  return fail(TPRT_ERROR_INVALID_ARGUMENT,
              "unknown backend \"%s\" (expected \"mpi\", \"single\", "
              "\"nccl\", \"cuda\" or \"cuda-shared\")",
              name.c_str());
}
