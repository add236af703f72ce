//===- CudaDevice.cpp - The rank's GPU: context, stream, memory -----------===//
//
// See CudaDevice.h.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"

#include "common/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

using namespace tprt;
using namespace tprt::cuda;

namespace {

std::mutex deviceMutex;
Device openedDevice;
bool opened = false;
thread_local CUcontext currentOnThread = nullptr;

} // namespace

int cuda::envInt(const char *name, int fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end || value < 0 || value > 1 << 20)
    return fallback;
  return int(value);
}

std::string cuda::errorText(CUresult result) {
  if (result == CUDA_ERROR_STUB_LIBRARY)
    return "CUDA_ERROR_STUB_LIBRARY (the toolkit's stub libcuda.so was "
           "loaded instead of the NVIDIA driver; remove the stubs folder "
           "from LD_LIBRARY_PATH)";
  const char *name = nullptr, *text = nullptr;
  // Without a working driver the lookups fail too: give the number.
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA error " + std::to_string(int(result));
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    return name;
  return std::string(name) + " (" + text + ")";
}

tprt_status cuda::check(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return TPRT_OK;
  tprt_status code = result == CUDA_ERROR_OUT_OF_MEMORY
                         ? TPRT_ERROR_OUT_OF_MEMORY
                         : TPRT_ERROR_BACKEND;
  Device *device = currentDevice();
  if (device)
    return fail(code, "%s failed on GPU %d: %s", call, device->ordinal,
                errorText(result).c_str());
  return fail(code, "%s failed: %s", call, errorText(result).c_str());
}

std::string cuda::visibleDevicesText() {
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return visible ? std::string("CUDA_VISIBLE_DEVICES=") + visible
                 : std::string("CUDA_VISIBLE_DEVICES unset");
}

tprt_status cuda::deviceCount(int &count) {
  CUresult result = cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE) {
    count = 0;
  } else if (result != CUDA_SUCCESS) {
    return fail(result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ||
                        result == CUDA_ERROR_STUB_LIBRARY
                    ? TPRT_ERROR_UNAVAILABLE
                    : TPRT_ERROR_BACKEND,
                "cannot initialise the NVIDIA driver: cuInit failed: %s",
                errorText(result).c_str());
  } else if (tprt_status status =
                 check(cuDeviceGetCount(&count), "cuDeviceGetCount")) {
    return status;
  }
  if (count == 0)
    return fail(TPRT_ERROR_UNAVAILABLE, "no CUDA device visible (%s)",
                visibleDevicesText().c_str());
  return TPRT_OK;
}

tprt_status cuda::openDevice(int ordinal, int rank) {
  std::lock_guard<std::mutex> lock(deviceMutex);
  if (opened) {
    if (openedDevice.ordinal != ordinal)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "this process already drives GPU %d and cannot switch to "
                  "GPU %d (one GPU per process)",
                  openedDevice.ordinal, ordinal);
    openedDevice.rank = rank;
    return TPRT_OK;
  }
  int count = 0;
  if (tprt_status status = deviceCount(count))
    return status;
  if (ordinal < 0 || ordinal >= count)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "GPU %d does not exist: %d GPU%s visible (%s)", ordinal, count,
                count == 1 ? "" : "s", visibleDevicesText().c_str());
  Device device;
  device.ordinal = ordinal;
  device.rank = rank;
  if (tprt_status status =
          check(cuDeviceGet(&device.device, ordinal), "cuDeviceGet"))
    return status;
  char name[256] = {0};
  if (cuDeviceGetName(name, sizeof(name) - 1, device.device) == CUDA_SUCCESS)
    device.name = name;
  if (tprt_status status =
          check(cuDevicePrimaryCtxRetain(&device.context, device.device),
                "cuDevicePrimaryCtxRetain"))
    return status;
  if (tprt_status status =
          check(cuCtxSetCurrent(device.context), "cuCtxSetCurrent"))
    return status;
  currentOnThread = device.context;
  if (tprt_status status =
          check(cuStreamCreate(&device.stream, CU_STREAM_NON_BLOCKING),
                "cuStreamCreate"))
    return status;
  int pitch = 0;
  if (cuDeviceGetAttribute(&pitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH,
                           device.device) == CUDA_SUCCESS &&
      pitch > 0)
    device.maxPitch = size_t(pitch);
  // Keep freed pool memory for reuse instead of returning it at every
  // synchronization.
  int pools = 0;
  cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                       device.device);
  if (!pools)
    return fail(TPRT_ERROR_UNAVAILABLE,
                "GPU %d (%s) does not support stream-ordered memory pools",
                ordinal, device.name.c_str());
  CUmemoryPool pool = nullptr;
  if (tprt_status status =
          check(cuDeviceGetDefaultMemPool(&pool, device.device),
                "cuDeviceGetDefaultMemPool"))
    return status;
  cuuint64_t threshold = UINT64_MAX;
  if (tprt_status status =
          check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                      &threshold),
                "cuMemPoolSetAttribute"))
    return status;
  openedDevice = device;
  opened = true;
  return TPRT_OK;
}

Device *cuda::currentDevice() { return opened ? &openedDevice : nullptr; }

tprt_status cuda::makeCurrent() {
  Device *device = currentDevice();
  if (!device)
    return fail(TPRT_ERROR_INTERNAL, "no GPU is open in this process");
  if (currentOnThread == device->context)
    return TPRT_OK;
  if (tprt_status status =
          check(cuCtxSetCurrent(device->context), "cuCtxSetCurrent"))
    return status;
  currentOnThread = device->context;
  return TPRT_OK;
}

int cuda::messageRank() {
  if (opened && openedDevice.rank >= 0)
    return openedDevice.rank;
  int rank = envInt("RANK", -1);
  if (rank < 0)
    rank = envInt("OMPI_COMM_WORLD_RANK", 0);
  return rank;
}

void cuda::checkOrExit(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return;
  std::fprintf(stderr, "tprt: %s failed on rank %d: %s\n", call, messageRank(),
               errorText(result).c_str());
  std::fflush(stderr);
  std::exit(1);
}

Device &cuda::deviceOrExit(const char *what) {
  if (!opened) {
    // A model loaded without tprt_init on a GPU backend: pick the device
    // the way the backend would.
    int local = envInt("TPRT_DEVICE", -1);
    if (local < 0)
      local = envInt("LOCAL_RANK", -1);
    if (local < 0)
      local = envInt("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    int count = 0;
    tprt_status status = deviceCount(count);
    if (status == TPRT_OK)
      status = openDevice(local % count, -1);
    if (status != TPRT_OK) {
      // The message was handed to libtprt's error state; repeat it here.
      std::fprintf(stderr, "tprt: %s failed on rank %d: %s\n", what,
                   messageRank(), lastFailure());
      std::fflush(stderr);
      std::exit(1);
    }
  }
  if (currentOnThread != openedDevice.context) {
    checkOrExit(cuCtxSetCurrent(openedDevice.context), "cuCtxSetCurrent");
    currentOnThread = openedDevice.context;
  }
  return openedDevice;
}
