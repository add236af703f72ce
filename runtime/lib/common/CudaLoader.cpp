//===- CudaLoader.cpp - Loading the GPU backends from libtprt_cuda.so -----===//
//
// See CudaPlugin.h. The library is looked for in TPRT_CUDA_LIBRARY, else
// next to libtprt.so. It is loaded once per process and never unloaded
// (NCCL and the CUDA driver keep threads running). The failure messages
// tell a missing libtprt_cuda.so (a build without CUDA) from a missing
// driver (libcuda.so.1) or CUDA library.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include "CudaPlugin.h"
#include "Error.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <sys/stat.h>

using namespace tprt;

namespace {

tprt_status setError(tprt_status code, const char *message) {
  return fail(code, "%s", message);
}

tprt_status noMpiBackend(std::unique_ptr<Backend> &out) {
#ifdef TPRT_HAVE_MPI
  return createMpiBackend(out);
#else
  (void)out;
  return fail(TPRT_ERROR_UNAVAILABLE,
              "the shared-GPU mode stages collectives over MPI, but libtprt "
              "was built without MPI");
#endif
}

/// The folder of libtprt.so itself.
std::string ownFolder() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&setError), &info) == 0 ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

using CreateFn = tprt_status (*)(const CudaPluginHost *, const char *,
                                 Backend **);

/// Loads the library once; a failure is remembered with its message.
tprt_status loadPlugin(const std::string &name, CreateFn &create) {
  static std::mutex mutex;
  static CreateFn cached = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (cached) {
    create = cached;
    return TPRT_OK;
  }
  std::string path;
  const char *env = std::getenv("TPRT_CUDA_LIBRARY");
  if (env && *env) {
    path = env;
    if (!exists(path))
      return fail(TPRT_ERROR_UNAVAILABLE,
                  "the %s backend is not available: TPRT_CUDA_LIBRARY is "
                  "\"%s\", which does not exist",
                  name.c_str(), env);
  } else {
    path = ownFolder() + "/libtprt_cuda.so";
    if (!exists(path))
      return fail(TPRT_ERROR_UNAVAILABLE,
                  "the %s backend is not available: %s does not exist "
                  "(libtprt was built without CUDA and NCCL, or set "
                  "TPRT_CUDA_LIBRARY)",
                  name.c_str(), path.c_str());
  }
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *error = dlerror();
    std::string message = error ? error : "unknown dlopen error";
    if (message.find("libcuda.so") != std::string::npos)
      return fail(TPRT_ERROR_UNAVAILABLE,
                  "the %s backend needs an NVIDIA driver: %s", name.c_str(),
                  message.c_str());
    return fail(TPRT_ERROR_UNAVAILABLE,
                "the %s backend cannot load %s: %s (are the CUDA 13, "
                "cuBLAS and NCCL libraries on LD_LIBRARY_PATH?)",
                name.c_str(), path.c_str(), message.c_str());
  }
  void *symbol = dlsym(handle, "tprt_cuda_create_backend");
  if (!symbol)
    return fail(TPRT_ERROR_UNAVAILABLE,
                "%s does not define tprt_cuda_create_backend", path.c_str());
  cached = reinterpret_cast<CreateFn>(symbol);
  create = cached;
  return TPRT_OK;
}

} // namespace

tprt_status tprt::createCudaBackend(const std::string &name,
                                    std::unique_ptr<Backend> &out) {
  CreateFn create = nullptr;
  if (tprt_status status = loadPlugin(name, create))
    return status;
  const char *shared = std::getenv("TPRT_SHARED_GPU");
  bool sharedMode = name == "cuda-shared" ||
                    (shared && *shared && std::strcmp(shared, "0") != 0);
  static const CudaPluginHost host = {CudaPluginVersion, &setError,
                                      &createWorldBootstrap, &noMpiBackend};
  Backend *backend = nullptr;
  if (tprt_status status =
          create(&host, sharedMode ? "cuda-shared" : "nccl", &backend))
    return status;
  out.reset(backend);
  return TPRT_OK;
}
