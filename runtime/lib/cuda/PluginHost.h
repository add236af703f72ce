//===- PluginHost.h - libtprt's services inside libtprt_cuda ----*- C++ -*-===//
//
// The table libtprt passes to tprt_cuda_create_backend (CudaPlugin.h),
// kept for the rest of the library.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_CUDA_PLUGINHOST_H
#define TPRT_CUDA_PLUGINHOST_H

#include "common/CudaPlugin.h"

namespace tprt {
namespace cuda {

void setPluginHost(const CudaPluginHost *host);
/// Null until libtprt created a GPU backend.
const CudaPluginHost *pluginHost();

} // namespace cuda
} // namespace tprt

#endif // TPRT_CUDA_PLUGINHOST_H
