//===- MockCudaDriver.cpp - A CUDA driver for tests without a GPU ---------===//
//
// libcuda.so.1 for the build machines, which have no GPU: it implements the
// driver calls libtprt_cuda.so makes, with host memory standing in for
// device memory, so that the GPU backends' host logic (start-up, device
// selection, the cuda-shared mode's staging, packing through copy2D,
// scratch buffers, event timing) runs in CI. Put its folder first on
// LD_LIBRARY_PATH (test/runtime/cuda-mock.test).
//
// "Device" memory is mapped PROT_NONE and opened only inside the mock's
// copy and set calls, so any host code that reads or writes device memory
// directly (a memcpy in common/ on a device buffer) dies with SIGSEGV.
// Kernels and modules are not supported (CUDA_ERROR_NOT_SUPPORTED); cuBLAS
// and NCCL need the real driver.
//
// MOCK_CUDA_DEVICES sets the device count (default 1), MOCK_CUDA_MEMORY the
// bytes of device memory (default 1 GiB; a larger allocation is
// CUDA_ERROR_OUT_OF_MEMORY). MOCK_TRACE=1 prints a line to stderr for
// every cuStreamSynchronize ("mock cuda: cuStreamSynchronize"), so tests
// can count the synchronizations of a call (nccl-check.test).
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sys/mman.h>
#include <unistd.h>

#define MOCK_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::mutex mutex;
std::map<uintptr_t, size_t> deviceBlocks; // base -> mapped length
int dummy;

size_t pageSize() { return size_t(sysconf(_SC_PAGESIZE)); }

size_t memoryBytes() {
  const char *env = std::getenv("MOCK_CUDA_MEMORY");
  return env ? size_t(std::strtoull(env, nullptr, 10)) : size_t(1) << 30;
}

/// The block of `ptr`, or deviceBlocks.end().
std::map<uintptr_t, size_t>::iterator blockOf(uintptr_t ptr) {
  auto it = deviceBlocks.upper_bound(ptr);
  if (it == deviceBlocks.begin())
    return deviceBlocks.end();
  --it;
  return ptr < it->first + it->second ? it : deviceBlocks.end();
}

/// Opens the device blocks of the given pointers for the duration of a
/// copy.
class Open {
public:
  Open(std::initializer_list<uintptr_t> pointers) : lock(mutex) {
    for (uintptr_t p : pointers) {
      auto it = blockOf(p);
      if (it != deviceBlocks.end() && opened.insert(it->first).second)
        mprotect(reinterpret_cast<void *>(it->first), it->second,
                 PROT_READ | PROT_WRITE);
    }
  }
  ~Open() {
    for (uintptr_t base : opened)
      mprotect(reinterpret_cast<void *>(base), deviceBlocks[base], PROT_NONE);
  }

private:
  std::lock_guard<std::mutex> lock;
  std::set<uintptr_t> opened;
};

CUresult deviceAlloc(CUdeviceptr *out, size_t bytes) {
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytes > memoryBytes())
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t length = (bytes + pageSize() - 1) / pageSize() * pageSize();
  if (length == 0)
    length = pageSize();
  void *p =
      mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(mutex);
  deviceBlocks[reinterpret_cast<uintptr_t>(p)] = length;
  *out = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult deviceFree(CUdeviceptr ptr) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = deviceBlocks.find(uintptr_t(ptr));
  if (it == deviceBlocks.end()) {
    // Managed memory (cuMemAllocManaged) is plain host memory here.
    std::free(reinterpret_cast<void *>(ptr));
    return CUDA_SUCCESS;
  }
  munmap(reinterpret_cast<void *>(it->first), it->second);
  deviceBlocks.erase(it);
  return CUDA_SUCCESS;
}

CUresult copy(uintptr_t dst, uintptr_t src, size_t bytes) {
  if (!bytes)
    return CUDA_SUCCESS;
  Open open({dst, src});
  std::memmove(reinterpret_cast<void *>(dst),
               reinterpret_cast<const void *>(src), bytes);
  return CUDA_SUCCESS;
}

struct Event {
  std::chrono::steady_clock::time_point when;
};

} // namespace

MOCK_EXPORT CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

MOCK_EXPORT CUresult cuGetErrorName(CUresult error, const char **out) {
  switch (error) {
  case CUDA_SUCCESS:
    *out = "CUDA_SUCCESS";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE:
    *out = "CUDA_ERROR_INVALID_VALUE";
    return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *out = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_SUPPORTED:
    *out = "CUDA_ERROR_NOT_SUPPORTED";
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

MOCK_EXPORT CUresult cuGetErrorString(CUresult error, const char **out) {
  *out = error == CUDA_ERROR_NOT_SUPPORTED ? "operation not supported by the "
                                             "mock driver"
                                           : "mock driver error";
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGetCount(int *count) {
  const char *env = std::getenv("MOCK_CUDA_DEVICES");
  *count = env ? std::atoi(env) : 1;
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::strncpy(name, "tprt mock GPU", size_t(length));
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGetAttribute(int *value,
                                          CUdevice_attribute attribute,
                                          CUdevice) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
    // Small, so that wide copies take copy2D's row-by-row path too.
    *value = 256;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    *value = 1;
    return CUDA_SUCCESS;
  default:
    *value = 0;
    return CUDA_SUCCESS;
  }
}

MOCK_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  *ctx = reinterpret_cast<CUcontext>(&dummy);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }

MOCK_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice) {
  *pool = reinterpret_cast<CUmemoryPool>(&dummy);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute,
                                           void *) {
  return CUDA_SUCCESS;
}

static int streams[16];
static int nextStream = 0;

MOCK_EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  // Distinct handles, nothing to free (the rank's stream lives until exit).
  *stream = reinterpret_cast<CUstream>(&streams[nextStream++ % 16]);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }

MOCK_EXPORT CUresult cuStreamSynchronize(CUstream) {
  static const bool trace = [] {
    const char *env = std::getenv("MOCK_TRACE");
    return env && *env && std::strcmp(env, "0") != 0;
  }();
  if (trace)
    std::fputs("mock cuda: cuStreamSynchronize\n", stderr);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) {
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = reinterpret_cast<CUevent>(new Event());
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuEventDestroy(CUevent event) {
  delete reinterpret_cast<Event *>(event);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuEventRecord(CUevent event, CUstream) {
  reinterpret_cast<Event *>(event)->when = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }

MOCK_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  *ms = std::chrono::duration<float, std::milli>(
            reinterpret_cast<Event *>(end)->when -
            reinterpret_cast<Event *>(start)->when)
            .count();
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  return deviceAlloc(ptr, bytes);
}

MOCK_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t bytes, CUstream) {
  return deviceAlloc(ptr, bytes);
}

MOCK_EXPORT CUresult cuMemFree(CUdeviceptr ptr) { return deviceFree(ptr); }

MOCK_EXPORT CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream) {
  return deviceFree(ptr);
}

MOCK_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes,
                                       unsigned int) {
  *ptr = reinterpret_cast<CUdeviceptr>(std::malloc(bytes ? bytes : 1));
  return *ptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

MOCK_EXPORT CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned int) {
  *ptr = std::malloc(bytes ? bytes : 1);
  return *ptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

MOCK_EXPORT CUresult cuMemFreeHost(void *ptr) {
  std::free(ptr);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemGetInfo(size_t *free, size_t *total) {
  *free = *total = memoryBytes();
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuPointerGetAttribute(void *data,
                                           CUpointer_attribute attribute,
                                           CUdeviceptr ptr) {
  if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED) {
    *static_cast<unsigned int *>(data) = 0;
    return CUDA_SUCCESS;
  }
  if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
    // Like the driver: device memory is CU_MEMORYTYPE_DEVICE, memory the
    // driver does not know is CUDA_ERROR_INVALID_VALUE.
    std::lock_guard<std::mutex> lock(mutex);
    auto it = deviceBlocks.upper_bound(uintptr_t(ptr));
    if (it == deviceBlocks.begin())
      return CUDA_ERROR_INVALID_VALUE;
    --it;
    if (uintptr_t(ptr) >= it->first + it->second)
      return CUDA_ERROR_INVALID_VALUE;
    *static_cast<CUmemorytype *>(data) = CU_MEMORYTYPE_DEVICE;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

MOCK_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                   size_t bytes, CUstream) {
  return copy(uintptr_t(dst), uintptr_t(src), bytes);
}

MOCK_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
                                       size_t bytes, CUstream) {
  return copy(uintptr_t(dst), reinterpret_cast<uintptr_t>(src), bytes);
}

MOCK_EXPORT CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                                       CUstream) {
  return copy(reinterpret_cast<uintptr_t>(dst), uintptr_t(src), bytes);
}

MOCK_EXPORT CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream) {
  if (p->srcMemoryType != CU_MEMORYTYPE_UNIFIED ||
      p->dstMemoryType != CU_MEMORYTYPE_UNIFIED || p->srcPitch > 256 ||
      p->dstPitch > 256 || p->WidthInBytes > p->srcPitch ||
      p->WidthInBytes > p->dstPitch)
    return CUDA_ERROR_INVALID_VALUE; // what the real driver rejects too
  Open open({uintptr_t(p->dstDevice), uintptr_t(p->srcDevice)});
  for (size_t row = 0; row < p->Height; ++row)
    std::memmove(reinterpret_cast<char *>(p->dstDevice) + row * p->dstPitch,
                 reinterpret_cast<const char *>(p->srcDevice) +
                     row * p->srcPitch,
                 p->WidthInBytes);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value,
                                      size_t count, CUstream) {
  Open open({uintptr_t(dst)});
  for (size_t i = 0; i < count; ++i)
    std::memcpy(reinterpret_cast<char *>(dst) + 4 * i, &value, 4);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value,
                                      size_t count, CUstream) {
  Open open({uintptr_t(dst)});
  for (size_t i = 0; i < count; ++i)
    std::memcpy(reinterpret_cast<char *>(dst) + 2 * i, &value, 2);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuModuleLoadData(CUmodule *, const void *) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
MOCK_EXPORT CUresult cuModuleLoadDataEx(CUmodule *, const void *, unsigned int,
                                        CUjit_option *, void **) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
MOCK_EXPORT CUresult cuModuleUnload(CUmodule) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
MOCK_EXPORT CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
MOCK_EXPORT CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
MOCK_EXPORT CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int,
                                    unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, CUstream,
                                    void **, void **) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
MOCK_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *, CUfunction,
                                      void **, void **) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
