//===- Driver.cpp - libcuda.so.1 of the emulator (cuda-emu) ---------------===//
//
// A CUDA driver for machines without a GPU: it implements the driver calls
// that libtprt_cuda.so and a compiled model make, with host memory standing
// in for device memory and kernels run by the SIMT emulator (Simt.h) from
// the PTX the module carries. `tp-run --backend cuda-emu` puts its folder
// (and those of the emulated cuBLAS and NCCL) first on LD_LIBRARY_PATH; the
// runtime tests do the same (test/runtime/cuda-mock.test).
//
// Device memory:
//  - is host memory, mapped with an unused guard page after each buffer,
//    but addressed through non-canonical pointers (the host address plus
//    kDeviceTag, Memory.h), so that host code that reads or writes device
//    memory directly (a memcpy on a device buffer in the runtime or the
//    model's host code) dies with SIGSEGV; the driver's copies and sets,
//    the emulator and the emulated libraries translate
//    (tprtEmuHostRange);
//  - is registered with its requested size (Memory.h), so that a kernel,
//    a copy or a GEMM that reaches past a buffer or into a freed one is an
//    error naming the buffer, not a silent read of a neighbour.
//
// Modules: cuModuleLoadData{,Ex} take PTX text, or a fatbinary carrying
// uncompressed PTX; the PTX is parsed and decoded at load (an instruction
// the emulator does not support fails the load with its line). Launches
// check the configuration against the device's limits and the kernel's
// (.maxntid, shared memory, the opt-in for dynamic shared memory) and
// every `.ptr` parameter against live device memory, then run the grid
// synchronously. A violation returns the error a device would
// (CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_MISALIGNED_ADDRESS,
// CUDA_ERROR_ASSERT, CUDA_ERROR_LAUNCH_FAILED) and cuGetErrorString
// returns the emulator's message for it: the kernel, the block, the thread,
// the PTX line and what happened.
//
// Environment: MOCK_CUDA_DEVICES sets the device count (default 1; a
// CUDA_VISIBLE_DEVICES list narrows it as on a real driver),
// MOCK_CUDA_MEMORY the bytes of device memory (default 1 GiB; a larger
// allocation is CUDA_ERROR_OUT_OF_MEMORY); MOCK_TRACE=1 prints a line to
// stderr for every cuStreamSynchronize ("mock cuda: cuStreamSynchronize");
// TPRT_EMU_TRACE=1 prints one line per launch (kernel, grid, block, warp
// instructions, milliseconds); TPRT_EMU_INSTRUCTION_LIMIT bounds the warp
// instructions of one launch (a kernel that loops forever).
//
//===----------------------------------------------------------------------===//

#include "Memory.h"
#include "Ptx.h"
#include "Simt.h"

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#define MOCK_EXPORT extern "C" __attribute__((visibility("default")))

using namespace tprt::emu;

namespace {

/// The driver's state outlives static destructors: a model's module
/// destructor may unload its module after this library's statics are gone.
struct State {
  std::recursive_mutex mutex;
  /// device base -> mapped length (the buffer, rounded to pages, plus a
  /// guard page).
  std::map<uintptr_t, size_t> deviceBlocks;
};
State &state() {
  static State *s = new State();
  return *s;
}
std::recursive_mutex &mutex = state().mutex;
std::map<uintptr_t, size_t> &deviceBlocks = state().deviceBlocks;
int dummy;

size_t pageSize() { return size_t(sysconf(_SC_PAGESIZE)); }

size_t memoryBytes() {
  const char *env = std::getenv("MOCK_CUDA_MEMORY");
  return env ? size_t(std::strtoull(env, nullptr, 10)) : size_t(1) << 30;
}

/// The last error's message, for cuGetErrorString.
struct LastError {
  CUresult code = CUDA_SUCCESS;
  std::string message;
};
thread_local LastError lastError;

CUresult failWith(CUresult code, const std::string &message) {
  lastError.code = code;
  lastError.message = message;
  return code;
}

/// The block of `ptr` (its mapping, guard page included), or end().
std::map<uintptr_t, size_t>::iterator blockOf(uintptr_t ptr) {
  auto it = deviceBlocks.upper_bound(ptr);
  if (it == deviceBlocks.begin())
    return deviceBlocks.end();
  --it;
  return ptr < it->first + it->second ? it : deviceBlocks.end();
}

/// Checks that [ptr, ptr + bytes) is either host memory or inside one live
/// device buffer; the message names the call.
CUresult checkRange(uintptr_t ptr, size_t bytes, const char *call) {
  if (!bytes)
    return CUDA_SUCCESS;
  std::lock_guard<std::recursive_mutex> lock(mutex);
  auto it = blockOf(ptr);
  Allocation a;
  if (it == deviceBlocks.end()) {
    if (Registry::instance().freed(ptr, a))
      return failWith(CUDA_ERROR_INVALID_VALUE,
                      std::string(call) + ": " +
                          Registry::instance().explain(ptr, bytes));
    return CUDA_SUCCESS; // host memory
  }
  if (!Registry::instance().find(ptr, bytes, a))
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    std::string(call) + " of " + std::to_string(bytes) +
                        " bytes: " + Registry::instance().explain(ptr, bytes));
  return CUDA_SUCCESS;
}

CUresult deviceAlloc(CUdeviceptr *out, size_t bytes) {
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytes > memoryBytes())
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t page = pageSize();
  size_t length = (bytes + page - 1) / page * page;
  if (length == 0)
    length = page;
  length += page; // the guard page
  void *p = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t device = reinterpret_cast<uintptr_t>(p) + kDeviceTag;
  std::lock_guard<std::recursive_mutex> lock(mutex);
  deviceBlocks[device] = length;
  Registry::instance().add(device, bytes, "device");
  *out = CUdeviceptr(device);
  return CUDA_SUCCESS;
}

CUresult deviceFree(CUdeviceptr ptr) {
  if (!ptr)
    return CUDA_SUCCESS;
  std::lock_guard<std::recursive_mutex> lock(mutex);
  auto it = deviceBlocks.find(uintptr_t(ptr));
  if (it == deviceBlocks.end()) {
    // Managed memory (cuMemAllocManaged) is plain host memory here.
    if (Registry::instance().remove(uintptr_t(ptr))) {
      std::free(reinterpret_cast<void *>(ptr));
      return CUDA_SUCCESS;
    }
    Allocation a;
    if (Registry::instance().freed(uintptr_t(ptr), a))
      return failWith(CUDA_ERROR_INVALID_VALUE,
                      "cuMemFree of a buffer freed before (a double free)");
    return failWith(CUDA_ERROR_INVALID_VALUE,
                    "cuMemFree of a pointer that is not device memory");
  }
  munmap(reinterpret_cast<void *>(hostAddress(it->first)), it->second);
  deviceBlocks.erase(it);
  Registry::instance().remove(uintptr_t(ptr));
  return CUDA_SUCCESS;
}

CUresult copy(uintptr_t dst, uintptr_t src, size_t bytes, const char *call) {
  if (!bytes)
    return CUDA_SUCCESS;
  if (CUresult r = checkRange(dst, bytes, call))
    return r;
  if (CUresult r = checkRange(src, bytes, call))
    return r;
  std::memmove(reinterpret_cast<void *>(hostAddress(dst)),
               reinterpret_cast<const void *>(hostAddress(src)), bytes);
  return CUDA_SUCCESS;
}

/// cuMemsetD{16,32}: `count` copies of a `bytes`-byte value.
CUresult fill(uintptr_t dst, const void *value, size_t bytes, size_t count,
              const char *call) {
  if (CUresult r = checkRange(dst, bytes * count, call))
    return r;
  char *host = reinterpret_cast<char *>(hostAddress(dst));
  for (size_t i = 0; i < count; ++i)
    std::memcpy(host + bytes * i, value, bytes);
  return CUDA_SUCCESS;
}

struct Event {
  std::chrono::steady_clock::time_point when;
};

//===----------------------------------------------------------------------===//
// Modules and functions
//===----------------------------------------------------------------------===//

struct EmuModule {
  std::unique_ptr<Module> module;
};

struct EmuFunction {
  EmuModule *module;
  const Kernel *kernel;
  uint32_t maxDynamicShared = 0;
};

std::set<EmuModule *> &modules = *new std::set<EmuModule *>();
std::map<const Kernel *, std::unique_ptr<EmuFunction>> &functions =
    *new std::map<const Kernel *, std::unique_ptr<EmuFunction>>();

bool traceLaunches() {
  static const bool trace = [] {
    const char *env = std::getenv("TPRT_EMU_TRACE");
    return env && *env && std::strcmp(env, "0") != 0;
  }();
  return trace;
}

CUresult loadModule(CUmodule *out, const void *image, std::string &log) {
  if (!out || !image)
    return failWith(CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData: null argument");
  std::string text;
  uint32_t magic;
  std::memcpy(&magic, image, 4);
  if (magic == 0xBA55ED50u) {
    std::string error;
    text = ptxOfFatbin(image, error);
    if (text.empty()) {
      log = "tprt emulator: " + error;
      return failWith(CUDA_ERROR_NO_BINARY_FOR_GPU, log);
    }
  } else if (magic == 0x464c457fu) { // "\x7fELF": a cubin
    log = "tprt emulator: the module is machine code (a cubin); the emulator "
          "runs PTX (build with --gpu-format isa or fatbin)";
    return failWith(CUDA_ERROR_NO_BINARY_FOR_GPU, log);
  } else {
    text = static_cast<const char *>(image);
  }
  std::string error;
  std::unique_ptr<Module> module = parsePtx(text, error);
  if (!module) {
    log = "tprt emulator: cannot load the module's PTX: " + error;
    return failWith(CUDA_ERROR_INVALID_PTX, log);
  }
  auto *m = new EmuModule{std::move(module)};
  for (auto &g : m->module->globals)
    Registry::instance().add(reinterpret_cast<uintptr_t>(g->bytes.data()),
                             g->bytes.size(), "module global " + g->name);
  std::lock_guard<std::recursive_mutex> lock(mutex);
  modules.insert(m);
  *out = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

EmuFunction *functionOf(CUfunction f) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  for (auto &entry : functions)
    if (reinterpret_cast<CUfunction>(entry.second.get()) == f)
      return entry.second.get();
  return nullptr;
}

CUresult launch(CUfunction f, const LaunchConfig &config) {
  EmuFunction *function = functionOf(f);
  if (!function)
    return failWith(CUDA_ERROR_INVALID_HANDLE,
                    "cuLaunchKernel: not a function of a loaded module");
  LaunchConfig c = config;
  c.maxDynamicShared = function->maxDynamicShared;
  auto start = std::chrono::steady_clock::now();
  LaunchStats stats;
  std::string error;
  error = runKernel(*function->module->module, *function->kernel, c, &stats);
  if (traceLaunches()) {
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    std::fprintf(stderr,
                 "emu: %s grid (%u,%u,%u) block (%u,%u,%u) %llu warp "
                 "instructions, %.2f ms%s\n",
                 function->kernel->name.c_str(), c.grid[0], c.grid[1],
                 c.grid[2], c.block[0], c.block[1], c.block[2],
                 static_cast<unsigned long long>(stats.warpInstructions), ms,
                 error.empty() ? "" : ", FAILED");
  }
  if (error.empty())
    return CUDA_SUCCESS;
  CUresult code = CUDA_ERROR_LAUNCH_FAILED;
  if (error.find("out-of-bounds") != std::string::npos ||
      error.find("not in live device memory") != std::string::npos)
    code = CUDA_ERROR_ILLEGAL_ADDRESS;
  else if (error.find("misaligned") != std::string::npos)
    code = CUDA_ERROR_MISALIGNED_ADDRESS;
  else if (error.find("assertion failed") != std::string::npos)
    code = CUDA_ERROR_ASSERT;
  else if (error.find("outside the device's limits") != std::string::npos ||
           error.find("threads, more than") != std::string::npos ||
           error.find("shared memory") != std::string::npos ||
           error.find(".reqntid") != std::string::npos)
    code = CUDA_ERROR_INVALID_VALUE;
  std::fprintf(stderr, "tprt emulator: %s\n", error.c_str());
  std::fflush(stderr);
  return failWith(code, error);
}

const char *errorName(CUresult error) {
  switch (error) {
#define NAME(E) case E: return #E;
    NAME(CUDA_SUCCESS)
    NAME(CUDA_ERROR_INVALID_VALUE)
    NAME(CUDA_ERROR_OUT_OF_MEMORY)
    NAME(CUDA_ERROR_NOT_SUPPORTED)
    NAME(CUDA_ERROR_INVALID_PTX)
    NAME(CUDA_ERROR_NO_BINARY_FOR_GPU)
    NAME(CUDA_ERROR_INVALID_HANDLE)
    NAME(CUDA_ERROR_NOT_FOUND)
    NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
    NAME(CUDA_ERROR_MISALIGNED_ADDRESS)
    NAME(CUDA_ERROR_ASSERT)
    NAME(CUDA_ERROR_LAUNCH_FAILED)
#undef NAME
  default:
    return nullptr;
  }
}

} // namespace

/// For the emulated libraries: the host address of [ptr, ptr + bytes) when
/// it lies in one live device (or managed) buffer, else null with
/// `message` (of `capacity` bytes) saying why.
MOCK_EXPORT void *tprtEmuHostRange(const void *ptr, size_t bytes,
                                   char *message, size_t capacity) {
  Allocation a;
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  if (Registry::instance().find(p, bytes ? bytes : 1, a))
    return reinterpret_cast<void *>(hostAddress(p));
  std::string why = Registry::instance().explain(p, bytes ? bytes : 1);
  if (message && capacity) {
    std::strncpy(message, why.c_str(), capacity - 1);
    message[capacity - 1] = '\0';
  }
  return nullptr;
}

MOCK_EXPORT CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

MOCK_EXPORT CUresult cuDriverGetVersion(int *version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuGetErrorName(CUresult error, const char **out) {
  const char *name = errorName(error);
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  *out = name;
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuGetErrorString(CUresult error, const char **out) {
  if (lastError.code == error && !lastError.message.empty()) {
    *out = lastError.message.c_str();
    return CUDA_SUCCESS;
  }
  *out = error == CUDA_ERROR_NOT_SUPPORTED
             ? "operation not supported by the mock driver"
             : "mock driver error";
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGetCount(int *count) {
  const char *env = std::getenv("MOCK_CUDA_DEVICES");
  int devices = env ? std::atoi(env) : 1;
  // Like the driver: CUDA_VISIBLE_DEVICES lists the devices a process
  // sees, up to the first entry that is not one.
  if (const char *visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    int seen = 0;
    std::string list = visible;
    size_t start = 0;
    while (start <= list.size() && !list.empty()) {
      size_t comma = list.find(',', start);
      std::string item = list.substr(start, comma == std::string::npos
                                                ? std::string::npos
                                                : comma - start);
      char *end = nullptr;
      long index = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end || index < 0 || index >= devices)
        break;
      ++seen;
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
    devices = seen;
  }
  *count = devices;
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::strncpy(name, "tprt emulated GPU (sm_90)", size_t(length));
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
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = int(DeviceLimits::maxThreadsPerBlock);
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = int(DeviceLimits::maxSharedPerBlock);
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    *value = 32;
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
  if (!*ptr)
    return CUDA_ERROR_OUT_OF_MEMORY;
  Registry::instance().add(uintptr_t(*ptr), bytes, "managed");
  return CUDA_SUCCESS;
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
  Allocation a;
  bool known = Registry::instance().containing(uintptr_t(ptr), a);
  if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED) {
    *static_cast<unsigned int *>(data) = known && a.kind == "managed";
    return CUDA_SUCCESS;
  }
  if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
    // Like the driver: device memory is CU_MEMORYTYPE_DEVICE, memory the
    // driver does not know is CUDA_ERROR_INVALID_VALUE.
    std::lock_guard<std::recursive_mutex> lock(mutex);
    if (blockOf(uintptr_t(ptr)) == deviceBlocks.end())
      return CUDA_ERROR_INVALID_VALUE;
    *static_cast<CUmemorytype *>(data) = CU_MEMORYTYPE_DEVICE;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

MOCK_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                   size_t bytes, CUstream) {
  return copy(uintptr_t(dst), uintptr_t(src), bytes, "cuMemcpyAsync");
}

MOCK_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
                                       size_t bytes, CUstream) {
  return copy(uintptr_t(dst), reinterpret_cast<uintptr_t>(src), bytes,
              "cuMemcpyHtoDAsync");
}

MOCK_EXPORT CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                                       CUstream) {
  return copy(reinterpret_cast<uintptr_t>(dst), uintptr_t(src), bytes,
              "cuMemcpyDtoHAsync");
}

MOCK_EXPORT CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream) {
  if (p->srcMemoryType != CU_MEMORYTYPE_UNIFIED ||
      p->dstMemoryType != CU_MEMORYTYPE_UNIFIED || p->srcPitch > 256 ||
      p->dstPitch > 256 || p->WidthInBytes > p->srcPitch ||
      p->WidthInBytes > p->dstPitch)
    return CUDA_ERROR_INVALID_VALUE; // what the real driver rejects too
  if (p->Height) {
    size_t span = (p->Height - 1);
    if (CUresult r = checkRange(uintptr_t(p->dstDevice),
                                span * p->dstPitch + p->WidthInBytes,
                                "cuMemcpy2DAsync"))
      return r;
    if (CUresult r = checkRange(uintptr_t(p->srcDevice),
                                span * p->srcPitch + p->WidthInBytes,
                                "cuMemcpy2DAsync"))
      return r;
  }
  for (size_t row = 0; row < p->Height; ++row)
    std::memmove(
        reinterpret_cast<char *>(hostAddress(uintptr_t(p->dstDevice))) +
            row * p->dstPitch,
        reinterpret_cast<const char *>(hostAddress(uintptr_t(p->srcDevice))) +
            row * p->srcPitch,
        p->WidthInBytes);
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value,
                                      size_t count, CUstream) {
  return fill(uintptr_t(dst), &value, 4, count, "cuMemsetD32Async");
}

MOCK_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value,
                                      size_t count, CUstream) {
  return fill(uintptr_t(dst), &value, 2, count, "cuMemsetD16Async");
}

MOCK_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  std::string log;
  CUresult r = loadModule(module, image, log);
  if (r != CUDA_SUCCESS)
    std::fprintf(stderr, "%s\n", log.c_str());
  return r;
}

MOCK_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                                        unsigned int count,
                                        CUjit_option *options, void **values) {
  std::string log;
  CUresult r = loadModule(module, image, log);
  if (r == CUDA_SUCCESS)
    return r;
  // The JIT's error log, when the caller asked for one.
  char *buffer = nullptr;
  size_t capacity = 0;
  for (unsigned i = 0; i < count && options && values; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      buffer = static_cast<char *>(values[i]);
    else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      capacity = size_t(reinterpret_cast<uintptr_t>(values[i]));
  }
  if (buffer && capacity) {
    std::strncpy(buffer, log.c_str(), capacity - 1);
    buffer[capacity - 1] = '\0';
  } else {
    std::fprintf(stderr, "%s\n", log.c_str());
  }
  return r;
}

MOCK_EXPORT CUresult cuModuleUnload(CUmodule module) {
  auto *m = reinterpret_cast<EmuModule *>(module);
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (!modules.erase(m))
    return CUDA_ERROR_INVALID_HANDLE;
  for (auto it = functions.begin(); it != functions.end();)
    it = it->second->module == m ? functions.erase(it) : std::next(it);
  for (auto &g : m->module->globals)
    Registry::instance().remove(reinterpret_cast<uintptr_t>(g->bytes.data()));
  delete m;
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule module,
                                         const char *name) {
  auto *m = reinterpret_cast<EmuModule *>(module);
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (!modules.count(m) || !name || !out)
    return CUDA_ERROR_INVALID_HANDLE;
  auto it = m->module->kernels.find(name);
  if (it == m->module->kernels.end())
    return failWith(CUDA_ERROR_NOT_FOUND, std::string("no kernel named ") +
                                              name + " in the module");
  auto &f = functions[it->second.get()];
  if (!f)
    f = std::make_unique<EmuFunction>(EmuFunction{m, it->second.get()});
  *out = reinterpret_cast<CUfunction>(f.get());
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuFuncSetAttribute(CUfunction f,
                                        CUfunction_attribute attribute,
                                        int value) {
  EmuFunction *function = functionOf(f);
  if (!function)
    return CUDA_ERROR_INVALID_HANDLE;
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 ||
        uint64_t(value) + function->kernel->dynamicSharedOffset >
            DeviceLimits::maxSharedPerBlock)
      return failWith(CUDA_ERROR_INVALID_VALUE,
                      "cuFuncSetAttribute: " + std::to_string(value) +
                          " bytes of dynamic shared memory is more than the "
                          "device allows");
    function->maxDynamicShared = uint32_t(value);
  }
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index,
                                        size_t *offset, size_t *size) {
  EmuFunction *function = functionOf(f);
  if (!function)
    return CUDA_ERROR_INVALID_HANDLE;
  const auto &params = function->kernel->params;
  if (index >= params.size())
    return CUDA_ERROR_INVALID_VALUE;
  if (offset)
    *offset = params[index].offset;
  if (size)
    *size = params[index].bytes;
  return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridX,
                                    unsigned int gridY, unsigned int gridZ,
                                    unsigned int blockX, unsigned int blockY,
                                    unsigned int blockZ, unsigned int shared,
                                    CUstream, void **params, void **extra) {
  if (extra)
    return failWith(CUDA_ERROR_NOT_SUPPORTED,
                    "cuLaunchKernel: the `extra` parameter form is not "
                    "supported by the emulator");
  LaunchConfig c;
  c.grid[0] = gridX;
  c.grid[1] = gridY;
  c.grid[2] = gridZ;
  c.block[0] = blockX;
  c.block[1] = blockY;
  c.block[2] = blockZ;
  c.dynamicShared = shared;
  c.params = params;
  return launch(f, c);
}

MOCK_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config,
                                      CUfunction f, void **params,
                                      void **extra) {
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      const auto &d = config->attrs[i].value.clusterDim;
      if (d.x * d.y * d.z > 1)
        return failWith(CUDA_ERROR_NOT_SUPPORTED,
                        "cuLaunchKernelEx: clusters are not supported by the "
                        "emulator");
    }
  return cuLaunchKernel(f, config->gridDimX, config->gridDimY,
                        config->gridDimZ, config->blockDimX, config->blockDimY,
                        config->blockDimZ, config->sharedMemBytes,
                        config->hStream, params, extra);
}
