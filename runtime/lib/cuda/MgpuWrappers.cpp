//===- MgpuWrappers.cpp - MLIR's GPU host ABI on the rank's GPU -----------===//
//
// Code lowered by upstream MLIR's gpu-to-llvm, and the gpu.binary /
// #gpu.select_object translation, calls the mgpu* functions of upstream
// mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp. Debian ships no
// libmlir_cuda_runtime, so libtprt_cuda.so implements them with the same
// names and signatures (a deliberate exception to the tprt_ prefix, see
// docs/runtime.md), on the rank's device and stream (CudaDevice.h):
//
//  - mgpuStreamCreate returns the rank's compute stream; destroying or
//    synchronizing that stream is a no-op (one in-order stream per rank;
//    the runner synchronizes at the end of a step). Other streams are
//    passed through to the driver.
//  - mgpuMemAlloc / mgpuMemFree are stream-ordered on the rank's stream
//    (the device's memory pool, so per-step allocations are cheap); host-
//    shared allocations are managed memory.
//  - mgpuSetDefaultDevice only names the device before the runtime opened
//    one; afterwards the rank's device stays (one GPU per process).
//  - Any CUDA error prints "tprt: <call> failed on rank R: <error>" and
//    exits 1, like the tprt_mlir_* entry points.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

using namespace tprt::cuda;

#define MGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

CUstream streamOr(CUstream stream, Device &device) {
  return stream ? stream : device.stream;
}

} // namespace

MGPU_EXPORT CUmodule mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  (void)gpuBlobSize;
  deviceOrExit("mgpuModuleLoad");
  CUmodule module = nullptr;
  checkOrExit(cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

// MLIR 22's translation calls it with two arguments (the PTX is
// NUL-terminated).
MGPU_EXPORT CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  deviceOrExit("mgpuModuleLoadJIT");
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log))),
                    reinterpret_cast<void *>(intptr_t(optLevel))};
  CUmodule module = nullptr;
  CUresult result = cuModuleLoadDataEx(&module, data, 3, options, values);
  if (result != CUDA_SUCCESS && log[0])
    std::fprintf(stderr, "tprt: the driver's PTX compiler says:\n%s\n", log);
  checkOrExit(result, "cuModuleLoadDataEx");
  return module;
}

MGPU_EXPORT void mgpuModuleUnload(CUmodule module) {
  if (!module || !currentDevice())
    return;
  deviceOrExit("mgpuModuleUnload");
  CUresult result = cuModuleUnload(module);
  // At process exit the driver may be shut down already.
  if (result != CUDA_ERROR_DEINITIALIZED)
    checkOrExit(result, "cuModuleUnload");
}

MGPU_EXPORT CUfunction mgpuModuleGetFunction(CUmodule module,
                                             const char *name) {
  deviceOrExit("mgpuModuleGetFunction");
  CUfunction function = nullptr;
  CUresult result = cuModuleGetFunction(&function, module, name);
  if (result != CUDA_SUCCESS)
    std::fprintf(stderr, "tprt: kernel \"%s\" not found in its module\n",
                 name ? name : "(null)");
  checkOrExit(result, "cuModuleGetFunction");
  return function;
}

namespace {

/// The kernel must take exactly the `count` parameters the caller passes
/// (cuFuncGetParamInfo: index count - 1 exists, index count does not); a
/// mismatch between the host code and the module would otherwise read
/// garbage parameters. Drivers that cannot tell (older than CUDA 12.4, or
/// a module without the information) skip the check.
void checkParameterCount(CUfunction function, size_t count) {
  size_t offset = 0, size = 0;
  CUresult past = cuFuncGetParamInfo(function, count, &offset, &size);
  if (past == CUDA_SUCCESS) {
    std::fprintf(stderr,
                 "tprt: mgpuLaunchKernel failed on rank %d: the kernel takes "
                 "more than the %zu parameters the model passes (its module "
                 "and its host code disagree)\n",
                 messageRank(), count);
    std::exit(1);
  }
  if (past != CUDA_ERROR_INVALID_VALUE || count == 0)
    return;
  if (cuFuncGetParamInfo(function, count - 1, &offset, &size) ==
      CUDA_ERROR_INVALID_VALUE) {
    std::fprintf(stderr,
                 "tprt: mgpuLaunchKernel failed on rank %d: the kernel takes "
                 "fewer than the %zu parameters the model passes (its module "
                 "and its host code disagree)\n",
                 messageRank(), count);
    std::exit(1);
  }
}

void allowSharedMemory(CUfunction function, int32_t smem) {
  // Above 48 KiB of dynamic shared memory a kernel must opt in.
  if (smem > 48 * 1024)
    checkOrExit(
        cuFuncSetAttribute(
            function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
        "cuFuncSetAttribute");
}

} // namespace

MGPU_EXPORT void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                  intptr_t gridY, intptr_t gridZ,
                                  intptr_t blockX, intptr_t blockY,
                                  intptr_t blockZ, int32_t smem,
                                  CUstream stream, void **params, void **extra,
                                  size_t paramsCount) {
  Device &device = deviceOrExit("mgpuLaunchKernel");
  checkParameterCount(function, paramsCount);
  allowSharedMemory(function, smem);
  checkOrExit(cuLaunchKernel(function, unsigned(gridX), unsigned(gridY),
                             unsigned(gridZ), unsigned(blockX),
                             unsigned(blockY), unsigned(blockZ), unsigned(smem),
                             streamOr(stream, device), params, extra),
              "cuLaunchKernel");
}

MGPU_EXPORT void mgpuLaunchClusterKernel(
    CUfunction function, intptr_t clusterX, intptr_t clusterY,
    intptr_t clusterZ, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
    intptr_t blockX, intptr_t blockY, intptr_t blockZ, int32_t smem,
    CUstream stream, void **params, void **extra, size_t paramsCount) {
  Device &device = deviceOrExit("mgpuLaunchClusterKernel");
  checkParameterCount(function, paramsCount);
  allowSharedMemory(function, smem);
  checkOrExit(
      cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
      "cuFuncSetAttribute");
  CUlaunchAttribute attribute;
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = unsigned(clusterX);
  attribute.value.clusterDim.y = unsigned(clusterY);
  attribute.value.clusterDim.z = unsigned(clusterZ);
  CUlaunchConfig config;
  config.gridDimX = unsigned(gridX);
  config.gridDimY = unsigned(gridY);
  config.gridDimZ = unsigned(gridZ);
  config.blockDimX = unsigned(blockX);
  config.blockDimY = unsigned(blockY);
  config.blockDimZ = unsigned(blockZ);
  config.sharedMemBytes = unsigned(smem);
  config.hStream = streamOr(stream, device);
  config.attrs = &attribute;
  config.numAttrs = 1;
  checkOrExit(cuLaunchKernelEx(&config, function, params, extra),
              "cuLaunchKernelEx");
}

MGPU_EXPORT CUstream mgpuStreamCreate() {
  return deviceOrExit("mgpuStreamCreate").stream;
}

MGPU_EXPORT void mgpuStreamDestroy(CUstream stream) {
  Device &device = deviceOrExit("mgpuStreamDestroy");
  if (stream && stream != device.stream)
    checkOrExit(cuStreamDestroy(stream), "cuStreamDestroy");
}

MGPU_EXPORT void mgpuStreamSynchronize(CUstream stream) {
  Device &device = deviceOrExit("mgpuStreamSynchronize");
  if (stream && stream != device.stream)
    checkOrExit(cuStreamSynchronize(stream), "cuStreamSynchronize");
}

MGPU_EXPORT void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  Device &device = deviceOrExit("mgpuStreamWaitEvent");
  checkOrExit(cuStreamWaitEvent(streamOr(stream, device), event, 0),
              "cuStreamWaitEvent");
}

MGPU_EXPORT CUevent mgpuEventCreate() {
  deviceOrExit("mgpuEventCreate");
  CUevent event = nullptr;
  checkOrExit(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return event;
}

MGPU_EXPORT void mgpuEventDestroy(CUevent event) {
  deviceOrExit("mgpuEventDestroy");
  checkOrExit(cuEventDestroy(event), "cuEventDestroy");
}

MGPU_EXPORT void mgpuEventSynchronize(CUevent event) {
  deviceOrExit("mgpuEventSynchronize");
  checkOrExit(cuEventSynchronize(event), "cuEventSynchronize");
}

MGPU_EXPORT void mgpuEventRecord(CUevent event, CUstream stream) {
  Device &device = deviceOrExit("mgpuEventRecord");
  checkOrExit(cuEventRecord(event, streamOr(stream, device)), "cuEventRecord");
}

MGPU_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, CUstream stream,
                               bool isHostShared) {
  Device &device = deviceOrExit("mgpuMemAlloc");
  if (sizeBytes == 0)
    return nullptr;
  CUdeviceptr ptr = 0;
  if (isHostShared) {
    checkOrExit(cuMemAllocManaged(&ptr, sizeBytes, CU_MEM_ATTACH_GLOBAL),
                "cuMemAllocManaged");
    return reinterpret_cast<void *>(ptr);
  }
  CUresult result = cuMemAllocAsync(&ptr, sizeBytes, streamOr(stream, device));
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t freeBytes = 0, totalBytes = 0;
    cuMemGetInfo(&freeBytes, &totalBytes);
    std::fprintf(stderr,
                 "tprt: mgpuMemAlloc failed on rank %d: cannot allocate %llu "
                 "bytes on GPU %d: %.2f GiB free of %.2f GiB\n",
                 messageRank(), static_cast<unsigned long long>(sizeBytes),
                 device.ordinal, double(freeBytes) / double(1ull << 30),
                 double(totalBytes) / double(1ull << 30));
    std::fflush(stderr);
    std::exit(1);
  }
  checkOrExit(result, "cuMemAllocAsync");
  return reinterpret_cast<void *>(ptr);
}

MGPU_EXPORT void mgpuMemFree(void *ptr, CUstream stream) {
  if (!ptr)
    return;
  Device &device = deviceOrExit("mgpuMemFree");
  unsigned int managed = 0;
  cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                        CUdeviceptr(ptr));
  if (managed) {
    checkOrExit(cuStreamSynchronize(device.stream), "cuStreamSynchronize");
    checkOrExit(cuMemFree(CUdeviceptr(ptr)), "cuMemFree");
    return;
  }
  checkOrExit(cuMemFreeAsync(CUdeviceptr(ptr), streamOr(stream, device)),
              "cuMemFreeAsync");
}

// A copy into host memory that is not the driver's (a compiled model's
// stack or heap: the element a host-side tensor.extract reads, see
// docs/passes/lower-gpu.md) completes before returning, since the host
// reads it next and the rank's stream is never synchronized by
// mgpuStreamSynchronize. Copies into device, managed or pinned memory stay
// asynchronous.
MGPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                            CUstream stream) {
  Device &device = deviceOrExit("mgpuMemcpy");
  CUstream s = streamOr(stream, device);
  checkOrExit(
      cuMemcpyAsync(CUdeviceptr(dst), CUdeviceptr(src), sizeBytes, s),
      "cuMemcpyAsync");
  if (!sizeBytes)
    return;
  CUmemorytype type = CUmemorytype(0);
  CUresult known = cuPointerGetAttribute(
      &type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(dst));
  if (known != CUDA_SUCCESS || type == CU_MEMORYTYPE_HOST)
    checkOrExit(cuStreamSynchronize(s), "cuStreamSynchronize");
}

MGPU_EXPORT void mgpuMemset32(void *dst, unsigned int value, size_t count,
                              CUstream stream) {
  Device &device = deviceOrExit("mgpuMemset32");
  checkOrExit(cuMemsetD32Async(CUdeviceptr(dst), value, count,
                               streamOr(stream, device)),
              "cuMemsetD32Async");
}

MGPU_EXPORT void mgpuMemset16(void *dst, unsigned short value, size_t count,
                              CUstream stream) {
  Device &device = deviceOrExit("mgpuMemset16");
  checkOrExit(cuMemsetD16Async(CUdeviceptr(dst), value, count,
                               streamOr(stream, device)),
              "cuMemsetD16Async");
}

MGPU_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  if (currentDevice())
    return; // the rank's device is fixed once open
  int count = 0;
  if (deviceCount(count) != TPRT_OK || count == 0) {
    std::fprintf(stderr, "tprt: mgpuSetDefaultDevice failed on rank %d: %s\n",
                 messageRank(), lastFailure());
    std::exit(1);
  }
  if (openDevice(device % count, -1) != TPRT_OK) {
    std::fprintf(stderr, "tprt: mgpuSetDefaultDevice failed on rank %d: %s\n",
                 messageRank(), lastFailure());
    std::exit(1);
  }
}
