//===- CudaDevice.h - The rank's GPU: context, stream, memory ---*- C++ -*-===//
//
// One process drives one GPU (its rank's) through the CUDA driver API: the
// device's primary context, one in-order compute stream on which every
// collective, GEMM, copy and kernel of the rank runs, and the device's
// default memory pool (stream-ordered cuMemAllocAsync, with the release
// threshold raised so that per-step allocations are reused, not returned).
//
// The state is process-wide because two users need it: the nccl backend,
// which opens it at tprt_init on the device of its local rank, and the
// mgpu* wrappers (MgpuWrappers.cpp) that compiled models call, possibly from
// a global constructor of model.so; if the backend has not opened the
// device yet, they open it from the environment (TPRT_DEVICE, LOCAL_RANK,
// OMPI_COMM_WORLD_LOCAL_RANK, modulo the device count). The context and the
// stream live until the process exits.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_CUDA_CUDADEVICE_H
#define TPRT_CUDA_CUDADEVICE_H

#include "tprt/tprt.h"

#include <cuda.h>

#include <string>

namespace tprt {
namespace cuda {

/// The value of environment variable `name` as a number in [0, 2^20], or
/// `fallback` if it is unset, empty or not such a number.
int envInt(const char *name, int fallback);

/// "cuMemAllocAsync: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string errorText(CUresult result);

/// Fails with TPRT_ERROR_BACKEND "<call> failed on GPU <n>: <error text>"
/// (TPRT_ERROR_OUT_OF_MEMORY for out-of-memory errors) unless result is
/// CUDA_SUCCESS.
tprt_status check(CUresult result, const char *call);

/// Initialises the driver and returns the number of visible devices, or
/// fails with "no CUDA device visible" and the value of
/// CUDA_VISIBLE_DEVICES.
tprt_status deviceCount(int &count);

/// The value of CUDA_VISIBLE_DEVICES for messages ("unset" if unset).
std::string visibleDevicesText();

struct Device {
  int ordinal = -1;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  /// The world rank for messages (-1 until the backend sets it).
  int rank = -1;
  /// CU_DEVICE_ATTRIBUTE_MAX_PITCH: the largest pitch of cuMemcpy2D.
  size_t maxPitch = 0;
  std::string name;
};

/// Opens `ordinal` (primary context, stream, memory pool) unless a device is
/// open already; fails if a different one is.
tprt_status openDevice(int ordinal, int rank);

/// The open device, or null.
Device *currentDevice();

/// Makes the device's context current on the calling thread (cheap when it
/// already is).
tprt_status makeCurrent();

/// For the mgpu* wrappers: the open device, opened from the environment if
/// needed; prints "tprt: <what> failed on rank R: <message>" and exits 1 on
/// failure.
Device &deviceOrExit(const char *what);

/// Prints "tprt: <call> failed on rank R: <error text>" and exits 1 unless
/// result is CUDA_SUCCESS (the mgpu* wrappers' error handling).
void checkOrExit(CUresult result, const char *call);

/// The message of the latest tprt::fail() in libtprt_cuda on this thread
/// (PluginError.cpp), for errors reported without libtprt's error state.
const char *lastFailure();

/// The rank for messages: the backend's, else RANK / OMPI_COMM_WORLD_RANK,
/// else 0.
int messageRank();

} // namespace cuda
} // namespace tprt

#endif // TPRT_CUDA_CUDADEVICE_H
