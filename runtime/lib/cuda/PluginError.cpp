//===- PluginError.cpp - tprt::fail() inside libtprt_cuda -----------------===//
//
// libtprt_cuda.so has no error state of its own (CudaPlugin.h): fail()
// formats the message, keeps a copy for the mgpu* wrappers, and hands it to
// libtprt through the host table, which prefixes the running entry point
// and stores it for tprt_last_error().
//
//===----------------------------------------------------------------------===//

#include "PluginHost.h"

#include "CudaDevice.h"
#include "common/Error.h"

#include <cstdarg>
#include <cstdio>

using namespace tprt;

namespace {
const CudaPluginHost *hostTable = nullptr;
thread_local char lastMessage[1024];
} // namespace

void tprt::cuda::setPluginHost(const CudaPluginHost *host) { hostTable = host; }

const CudaPluginHost *tprt::cuda::pluginHost() { return hostTable; }

const char *tprt::cuda::lastFailure() { return lastMessage; }

tprt_status tprt::fail(tprt_status code, const char *format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(lastMessage, sizeof(lastMessage), format, args);
  va_end(args);
  if (hostTable)
    hostTable->setError(code, lastMessage);
  return code;
}
