//===- CudaPlugin.h - libtprt and libtprt_cuda.so meet here ---*- C++ -*-===//
//
// libtprt.so stays loadable without an NVIDIA driver: the GPU backends live
// in libtprt_cuda.so (runtime/lib/nccl/, runtime/lib/cuda/), which links
// libcuda.so.1, cuBLAS and NCCL, and which libtprt dlopens when a context
// asks for "nccl", "cuda" or "cuda-shared" (CudaLoader.cpp). The two
// libraries are built from the same sources with the same compiler and meet
// at one C symbol, tprt_cuda_create_backend, that takes a table of libtprt's
// services and returns a Backend. libtprt_cuda keeps no error state of its
// own: its tprt::fail() formats the message and hands it to host->setError,
// so tprt_last_error() sees it.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_CUDAPLUGIN_H
#define TPRT_COMMON_CUDAPLUGIN_H

#include "Backend.h"
#include "Bootstrap.h"

namespace tprt {

/// Bumped whenever this struct, Backend or Bootstrap change.
constexpr int CudaPluginVersion = 2;

struct CudaPluginHost {
  int version;
  /// Sets libtprt's last error ("<entry point>: <message>"); returns code.
  tprt_status (*setError)(tprt_status code, const char *message);
  /// The world bootstrap (Bootstrap.h): MPI under mpirun, else TCP, else
  /// a world of one.
  tprt_status (*createWorldBootstrap)(std::unique_ptr<Bootstrap> &out);
  /// libtprt's mpi backend for the shared-GPU mode; null without MPI.
  tprt_status (*createMpiBackend)(std::unique_ptr<Backend> &out);
};

} // namespace tprt

/// `mode`: "nccl" or "cuda-shared". On success *out is a new Backend
/// (deleted by libtprt); on failure the error is set through host->setError.
extern "C" __attribute__((visibility("default"))) tprt_status
tprt_cuda_create_backend(const tprt::CudaPluginHost *host, const char *mode,
                         tprt::Backend **out);

#endif // TPRT_COMMON_CUDAPLUGIN_H
