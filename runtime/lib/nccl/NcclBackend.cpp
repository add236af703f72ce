//===- NcclBackend.cpp - The GPU backends of libtprt_cuda.so --------------===//
//
// "nccl": one rank per GPU. The world comes from a Bootstrap (MPI under
// mpirun, torchrun's TCP rendezvous otherwise, Bootstrap.h); host names
// exchanged through it give the local rank (LOCAL_RANK or Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK take precedence), whose GPU is local rank
// modulo the visible devices (TPRT_DEVICE overrides; more ranks on a node
// than visible GPUs is an error). Each group is an NCCL communicator: its first
// member makes an ncclUniqueId and sends it to the others through the
// bootstrap, and all run a nonblocking ncclCommInitRankConfig that is polled
// until TPRT_INIT_TIMEOUT, then aborted. Collectives run on the rank's stream
// (CudaDevice.h) and return before they complete; GEMMs are cuBLAS calls on
// the same stream.
//
// "cuda-shared" (or TPRT_SHARED_GPU=1): a test mode for checking multi-rank
// GPU programs on a one-GPU machine. The ranks of an mpirun all use one GPU
// (TPRT_DEVICE, default 0) for memory, GEMMs and kernels, and every
// collective copies its input to pinned host memory, runs libtprt's mpi
// backend on it and copies the result back; slow, but the same results.
//
// NCCL reduces f16 and bf16 in their own precision along its ring, so a sum
// over more than two ranks may differ from the mpi backend's single rounding
// by an ulp; cuda-shared rounds once like mpi.
//
// The mismatch check and the host-name exchange need host buffers
// (allGatherHost): staged through a small device buffer and synchronized.
// Times are CUDA events on the stream, flushed into the counters by
// synchronize().
//
//===----------------------------------------------------------------------===//

#include "common/Backend.h"
#include "common/Bootstrap.h"
#include "common/CudaPlugin.h"
#include "common/DType.h"
#include "common/Error.h"
#include "common/Topology.h"
#include "cuda/CublasGemm.h"
#include "cuda/CudaDevice.h"
#include "cuda/PluginHost.h"

#include <cuda.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace tprt;
using namespace tprt::cuda;

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t ncclType(tprt_dtype dtype) {
  switch (dtype) {
  case TPRT_F32:
    return ncclFloat32;
  case TPRT_F16:
    return ncclFloat16;
  case TPRT_BF16:
    return ncclBfloat16;
  case TPRT_F64:
    return ncclFloat64;
  case TPRT_I32:
    return ncclInt32;
  case TPRT_I64:
    return ncclInt64;
  case TPRT_DTYPE_FORCE_32BIT:
    break;
  }
  return ncclInt8;
}

ncclRedOp_t ncclOp(tprt_reduction op) {
  return op == TPRT_MAX ? ncclMax : op == TPRT_MIN ? ncclMin : ncclSum;
}

class GpuCommunicator final : public Communicator {
public:
  ~GpuCommunicator() override;

  ncclComm_t comm = nullptr;
  /// The mpi backend's communicator in the shared-GPU mode.
  std::unique_ptr<Communicator> host;
  std::vector<int> ranks;
  int index = 0;
  int size() const { return int(ranks.size()); }
};

/// Turns an NCCL result into a status; waits out ncclInProgress of a
/// nonblocking communicator.
tprt_status ncclCheck(ncclResult_t result, ncclComm_t comm, const char *call) {
  if (result == ncclInProgress && comm) {
    do {
      std::this_thread::yield();
      if (ncclCommGetAsyncError(comm, &result) != ncclSuccess)
        break;
    } while (result == ncclInProgress);
  }
  if (result == ncclSuccess)
    return TPRT_OK;
  const char *detail = ncclGetLastError(comm);
  return fail(result == ncclSystemError || result == ncclRemoteError ||
                      result == ncclUnhandledCudaError
                  ? TPRT_ERROR_BACKEND
              : result == ncclInvalidArgument || result == ncclInvalidUsage
                  ? TPRT_ERROR_INVALID_ARGUMENT
                  : TPRT_ERROR_BACKEND,
              "%s failed: %s%s%s", call, ncclGetErrorString(result),
              detail && *detail ? ": " : "", detail ? detail : "");
}

GpuCommunicator::~GpuCommunicator() {
  if (!comm || makeCurrent() != TPRT_OK)
    return;
  // Finalize (flushes pending work), bounded; abort if it does not finish.
  ncclResult_t result = ncclCommFinalize(comm);
  Clock::time_point until =
      Clock::now() + std::chrono::seconds(int(initTimeoutSeconds()));
  while (result == ncclInProgress && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (ncclCommGetAsyncError(comm, &result) != ncclSuccess)
      break;
  }
  if (result == ncclSuccess)
    ncclCommDestroy(comm);
  else
    ncclCommAbort(comm);
}

GpuCommunicator &gpuComm(Communicator &comm) {
  return static_cast<GpuCommunicator &>(comm);
}

class GpuBackend final : public Backend {
public:
  explicit GpuBackend(bool shared) : shared(shared) {}
  ~GpuBackend() override;

  tprt_status initialize(const CudaPluginHost &host);

  const char *name() const override { return shared ? "cuda-shared" : "nccl"; }
  int rank() const override { return worldRank; }
  int size() const override { return worldSize; }

  tprt_status createCommunicator(const std::vector<int> &ranks,
                                 std::unique_ptr<Communicator> &out) override;
  tprt_status allReduce(Communicator &comm, tprt_dtype dtype, tprt_reduction op,
                        const void *in, void *out, size_t count) override;
  tprt_status allGather(Communicator &comm, const void *in, void *out,
                        size_t bytes) override;
  tprt_status reduceScatter(Communicator &comm, tprt_dtype dtype,
                            tprt_reduction op, const void *in, void *out,
                            size_t count) override;
  tprt_status allToAll(Communicator &comm, const void *in, void *out,
                       size_t bytes) override;
  tprt_status barrier(Communicator &comm) override;

  tprt_status gemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                   int64_t n, int64_t k, float alpha, const void *a,
                   int64_t lda, const void *b, int64_t ldb, float beta, void *c,
                   int64_t ldc) override {
    return cublas.gemm(dtype, dtype, transA, transB, m, n, k, alpha, a, lda, 0,
                       b, ldb, 0, beta, c, ldc, 0, 1);
  }
  tprt_status batchedGemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                          int64_t n, int64_t k, float alpha, const void *a,
                          int64_t lda, int64_t strideA, const void *b,
                          int64_t ldb, int64_t strideB, float beta, void *c,
                          int64_t ldc, int64_t strideC,
                          int64_t batch) override {
    return cublas.gemm(dtype, dtype, transA, transB, m, n, k, alpha, a, lda,
                       strideA, b, ldb, strideB, beta, c, ldc, strideC, batch);
  }
  tprt_status gemmMixed(tprt_dtype abType, tprt_dtype cType, bool transA,
                        bool transB, int64_t m, int64_t n, int64_t k,
                        float alpha, const void *a, int64_t lda,
                        int64_t strideA, const void *b, int64_t ldb,
                        int64_t strideB, float beta, void *c, int64_t ldc,
                        int64_t strideC, int64_t batch) override {
    return cublas.gemm(abType, cType, transA, transB, m, n, k, alpha, a, lda,
                       strideA, b, ldb, strideB, beta, c, ldc, strideC, batch);
  }
  tprt_status sharedAGemm(tprt_dtype dtype, bool transA, bool transB, int64_t m,
                          int64_t n, int64_t k, float alpha, const void *a,
                          int64_t lda, const void *const *b, int64_t ldb,
                          float beta, void *const *c, int64_t ldc,
                          int count) override {
    return cublas.gemmSharedA(dtype, transA, transB, m, n, k, alpha, a, lda, b,
                              ldb, beta, c, ldc, count);
  }
  tprt_status groupedGemm(tprt_dtype dtype, bool transB, int groups,
                          const int64_t *rows, int64_t n, int64_t k,
                          float alpha, const void *a, int64_t lda,
                          const void *b, int64_t ldb, int64_t strideB,
                          float beta, void *c, int64_t ldc) override {
    return cublas.gemmGrouped(dtype, transB, groups, rows, n, k, alpha, a, lda,
                              b, ldb, strideB, beta, c, ldc);
  }
  tprt_status gemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                           int64_t m, int64_t n, int64_t k, const void *a,
                           int64_t lda, const void *b, int64_t ldb,
                           const void *addend, int64_t ldAddend,
                           const void *bias, int activation, void *c,
                           int64_t ldc) override {
    return cublas.gemmEpilogue(dtype, transA, transB, m, n, k, a, lda, b, ldb,
                               addend, ldAddend, bias, activation, c, ldc);
  }

  tprt_status allocate(size_t bytes, void **out) override;
  void release(void *ptr) override;
  bool deviceMemory() const override { return true; }
  tprt_status copyBytes(void *dst, const void *src, size_t bytes) override;
  tprt_status copy2D(void *dst, size_t dstPitch, const void *src,
                     size_t srcPitch, size_t width, size_t height) override;
  tprt_status allGatherHost(Communicator &comm, const void *in, void *out,
                            size_t bytes) override;
  tprt_status synchronize() override;
  void timerBegin(TimerMark &mark) override;
  void timerEnd(TimerMark &mark, double *accumulator) override;
  void timerCancel(TimerMark &mark) override {
    if (mark.slot >= 0)
      freeSlots.push_back(mark.slot);
    mark.slot = -1;
  }

private:
  tprt_status selectDevice();
  tprt_status copyAsync(void *dst, const void *src, size_t bytes);
  /// Pinned host memory of at least `bytes` in staging[which].
  tprt_status pinned(int which, size_t bytes, char *&out);
  /// The shared mode's collectives: device -> host, mpi, host -> device.
  template <typename HostCall>
  tprt_status staged(const void *in, size_t inBytes, void *out, size_t outBytes,
                     HostCall &&call);

  bool shared;
  int worldRank = 0;
  int worldSize = 1;
  Device *device = nullptr;
  std::unique_ptr<Bootstrap> bootstrap; // nccl mode
  std::unique_ptr<Backend> hostBackend; // shared mode (mpi)
  Topology topology;
  Cublas cublas;
  double timeoutSeconds = 60;

  struct Staging {
    char *data = nullptr;
    size_t capacity = 0;
  } staging[2];
  CUdeviceptr exchange = 0; // allGatherHost's device buffer
  size_t exchangeCapacity = 0;

  struct EventPair {
    CUevent start = nullptr, end = nullptr;
  };
  struct Pending {
    int slot;
    double *accumulator;
  };
  std::vector<EventPair> events;
  std::vector<int> freeSlots;
  std::vector<Pending> pending;
};

tprt_status GpuBackend::initialize(const CudaPluginHost &host) {
  timeoutSeconds = initTimeoutSeconds();
  if (shared) {
    if (!host.createMpiBackend)
      return fail(TPRT_ERROR_UNAVAILABLE,
                  "the shared-GPU mode needs libtprt's mpi backend");
    if (tprt_status status = host.createMpiBackend(hostBackend))
      return status;
    worldRank = hostBackend->rank();
    worldSize = hostBackend->size();
  } else {
    if (tprt_status status = host.createWorldBootstrap(bootstrap))
      return status;
    worldRank = bootstrap->rank();
    worldSize = bootstrap->size();
  }
  // The node of every rank, to pick the device of the local rank.
  char mine[HostNameBytes];
  hostNameBlock(hostName(), mine);
  std::vector<char> names(HostNameBytes * size_t(worldSize));
  if (!shared) {
    if (tprt_status status =
            bootstrap->allGather(mine, names.data(), HostNameBytes))
      return status;
    if (tprt_status status = computeTopology(names.data(), worldSize, topology))
      return status;
  }
  if (tprt_status status = selectDevice())
    return status;
  cublas.setStream(device->stream);
  return TPRT_OK;
}

tprt_status GpuBackend::selectDevice() {
  int count = 0;
  if (tprt_status status = deviceCount(count))
    return status;
  int ordinal = envInt("TPRT_DEVICE", -1);
  if (shared) {
    if (ordinal < 0)
      ordinal = 0;
  } else if (ordinal < 0) {
    // The launcher's local rank when it says one (torchrun's LOCAL_RANK,
    // Open MPI's), else the position among the ranks of this host.
    int local = envInt("LOCAL_RANK", -1);
    if (local < 0)
      local = envInt("OMPI_COMM_WORLD_LOCAL_RANK", -1);
    if (local < 0)
      local = topology.localRank[size_t(worldRank)];
    int onNode = topology.ranksOnNode(worldRank);
    if (onNode > count)
      return fail(TPRT_ERROR_UNAVAILABLE,
                  "%d ranks on this node but %d GPU%s visible (%s); the nccl "
                  "backend needs one GPU per rank (TPRT_SHARED_GPU=1 or the "
                  "\"cuda-shared\" backend shares one GPU among mpirun ranks "
                  "for tests)",
                  onNode, count, count == 1 ? "" : "s",
                  visibleDevicesText().c_str());
    ordinal = local % count;
  }
  if (ordinal >= count)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "TPRT_DEVICE is %d but %d GPU%s visible (%s)", ordinal, count,
                count == 1 ? "" : "s", visibleDevicesText().c_str());
  if (tprt_status status = openDevice(ordinal, worldRank))
    return status;
  device = currentDevice();
  return TPRT_OK;
}

GpuBackend::~GpuBackend() {
  if (!device || makeCurrent() != TPRT_OK)
    return;
  cuStreamSynchronize(device->stream);
  for (EventPair &pair : events) {
    cuEventDestroy(pair.start);
    cuEventDestroy(pair.end);
  }
  for (Staging &s : staging)
    if (s.data)
      cuMemFreeHost(s.data);
  if (exchange)
    cuMemFree(exchange);
}

tprt_status GpuBackend::createCommunicator(const std::vector<int> &ranks,
                                           std::unique_ptr<Communicator> &out) {
  auto comm = std::make_unique<GpuCommunicator>();
  comm->ranks = ranks;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == worldRank)
      comm->index = int(i);
  if (shared) {
    if (tprt_status status = hostBackend->createCommunicator(ranks, comm->host))
      return status;
    out = std::move(comm);
    return TPRT_OK;
  }
  if (tprt_status status = makeCurrent())
    return status;
  // The first member makes the id and sends it to the others.
  ncclUniqueId id;
  uint32_t tag = groupTag(ranks);
  if (comm->index == 0) {
    if (tprt_status status =
            ncclCheck(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId"))
      return status;
    for (size_t i = 1; i < ranks.size(); ++i)
      if (tprt_status status = bootstrap->send(ranks[i], tag, &id, sizeof(id)))
        return status;
  } else if (tprt_status status =
                 bootstrap->recv(ranks[0], tag, &id, sizeof(id))) {
    return status;
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result = ncclCommInitRankConfig(&comm->comm, int(ranks.size()),
                                               id, comm->index, &config);
  Clock::time_point until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeoutSeconds));
  while (result == ncclInProgress) {
    if (Clock::now() > until) {
      ncclCommAbort(comm->comm);
      comm->comm = nullptr;
      return fail(TPRT_ERROR_TIMEOUT,
                  "the NCCL communicator of ranks %s was not ready after %g s "
                  "(TPRT_INIT_TIMEOUT): a member did not join, or cannot "
                  "reach the others (NCCL_DEBUG=INFO tells more)",
                  rankListText(ranks).c_str(), timeoutSeconds);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (ncclCommGetAsyncError(comm->comm, &result) != ncclSuccess)
      break;
  }
  if (result != ncclSuccess) {
    tprt_status status =
        ncclCheck(result, comm->comm, "ncclCommInitRankConfig");
    if (comm->comm)
      ncclCommAbort(comm->comm);
    comm->comm = nullptr;
    return status;
  }
  out = std::move(comm);
  return TPRT_OK;
}

tprt_status GpuBackend::pinned(int which, size_t bytes, char *&out) {
  Staging &s = staging[which];
  if (bytes > s.capacity) {
    if (s.data)
      cuMemFreeHost(s.data);
    s.data = nullptr;
    s.capacity = 0;
    void *data = nullptr;
    if (tprt_status status =
            check(cuMemHostAlloc(&data, bytes, 0), "cuMemHostAlloc"))
      return status;
    s.data = static_cast<char *>(data);
    s.capacity = bytes;
  }
  out = s.data;
  return TPRT_OK;
}

template <typename HostCall>
tprt_status GpuBackend::staged(const void *in, size_t inBytes, void *out,
                               size_t outBytes, HostCall &&call) {
  if (tprt_status status = makeCurrent())
    return status;
  char *hostIn = nullptr, *hostOut = nullptr;
  if (tprt_status status = pinned(0, inBytes, hostIn))
    return status;
  if (tprt_status status = pinned(1, outBytes, hostOut))
    return status;
  if (inBytes) {
    if (tprt_status status = check(
            cuMemcpyDtoHAsync(hostIn, CUdeviceptr(in), inBytes, device->stream),
            "cuMemcpyDtoHAsync"))
      return status;
  }
  if (tprt_status status =
          check(cuStreamSynchronize(device->stream), "cuStreamSynchronize"))
    return status;
  if (tprt_status status = call(hostIn, hostOut))
    return status;
  if (outBytes) {
    if (tprt_status status = check(cuMemcpyHtoDAsync(CUdeviceptr(out), hostOut,
                                                     outBytes, device->stream),
                                   "cuMemcpyHtoDAsync"))
      return status;
  }
  // The staging buffers are reused by the next call.
  return check(cuStreamSynchronize(device->stream), "cuStreamSynchronize");
}

tprt_status GpuBackend::allReduce(Communicator &comm, tprt_dtype dtype,
                                  tprt_reduction op, const void *in, void *out,
                                  size_t count) {
  GpuCommunicator &c = gpuComm(comm);
  size_t bytes = count * dtypeSize(dtype);
  if (shared)
    return staged(in, bytes, out, bytes, [&](char *hin, char *hout) {
      return hostBackend->allReduce(*c.host, dtype, op, hin, hout, count);
    });
  if (tprt_status status = makeCurrent())
    return status;
  return ncclCheck(ncclAllReduce(in, out, count, ncclType(dtype), ncclOp(op),
                                 c.comm, device->stream),
                   c.comm, "ncclAllReduce");
}

tprt_status GpuBackend::allGather(Communicator &comm, const void *in, void *out,
                                  size_t bytes) {
  GpuCommunicator &c = gpuComm(comm);
  if (shared)
    return staged(in, bytes, out, bytes * size_t(c.size()),
                  [&](char *hin, char *hout) {
                    return hostBackend->allGather(*c.host, hin, hout, bytes);
                  });
  if (tprt_status status = makeCurrent())
    return status;
  return ncclCheck(
      ncclAllGather(in, out, bytes, ncclInt8, c.comm, device->stream), c.comm,
      "ncclAllGather");
}

tprt_status GpuBackend::reduceScatter(Communicator &comm, tprt_dtype dtype,
                                      tprt_reduction op, const void *in,
                                      void *out, size_t count) {
  GpuCommunicator &c = gpuComm(comm);
  size_t bytes = count * dtypeSize(dtype);
  if (shared)
    return staged(in, bytes * size_t(c.size()), out, bytes,
                  [&](char *hin, char *hout) {
                    return hostBackend->reduceScatter(*c.host, dtype, op, hin,
                                                      hout, count);
                  });
  if (tprt_status status = makeCurrent())
    return status;
  return ncclCheck(ncclReduceScatter(in, out, count, ncclType(dtype),
                                     ncclOp(op), c.comm, device->stream),
                   c.comm, "ncclReduceScatter");
}

tprt_status GpuBackend::allToAll(Communicator &comm, const void *in, void *out,
                                 size_t bytes) {
  GpuCommunicator &c = gpuComm(comm);
  size_t total = bytes * size_t(c.size());
  if (shared)
    return staged(in, total, out, total, [&](char *hin, char *hout) {
      return hostBackend->allToAll(*c.host, hin, hout, bytes);
    });
  if (tprt_status status = makeCurrent())
    return status;
  const char *src = static_cast<const char *>(in);
  char *dst = static_cast<char *>(out);
  // Our own block is a local copy; the others are send/recv pairs in one
  // NCCL group (works with every NCCL 2.7+, unlike ncclAlltoAll).
  if (tprt_status status = copyAsync(dst + size_t(c.index) * bytes,
                                     src + size_t(c.index) * bytes, bytes))
    return status;
  if (c.size() == 1 || bytes == 0)
    return TPRT_OK;
  if (tprt_status status =
          ncclCheck(ncclGroupStart(), nullptr, "ncclGroupStart"))
    return status;
  for (int peer = 0; peer < c.size(); ++peer) {
    if (peer == c.index)
      continue;
    ncclResult_t r = ncclSend(src + size_t(peer) * bytes, bytes, ncclInt8, peer,
                              c.comm, device->stream);
    if (r == ncclSuccess || r == ncclInProgress)
      r = ncclRecv(dst + size_t(peer) * bytes, bytes, ncclInt8, peer, c.comm,
                   device->stream);
    if (r != ncclSuccess && r != ncclInProgress) {
      ncclGroupEnd();
      return ncclCheck(r, c.comm, "ncclSend/ncclRecv");
    }
  }
  return ncclCheck(ncclGroupEnd(), c.comm, "ncclGroupEnd");
}

tprt_status GpuBackend::barrier(Communicator &comm) {
  GpuCommunicator &c = gpuComm(comm);
  if (shared) {
    if (tprt_status status = synchronize())
      return status;
    return hostBackend->barrier(*c.host);
  }
  char token = 1;
  std::vector<char> all(size_t(c.size()));
  return allGatherHost(comm, &token, all.data(), 1);
}

tprt_status GpuBackend::allGatherHost(Communicator &comm, const void *in,
                                      void *out, size_t bytes) {
  GpuCommunicator &c = gpuComm(comm);
  if (shared)
    return hostBackend->allGather(*c.host, in, out, bytes);
  if (c.size() == 1) {
    std::memmove(out, in, bytes);
    return TPRT_OK;
  }
  if (tprt_status status = makeCurrent())
    return status;
  size_t needed = bytes * size_t(c.size() + 1);
  if (needed > exchangeCapacity) {
    if (exchange) {
      cuStreamSynchronize(device->stream);
      cuMemFree(exchange);
    }
    exchange = 0;
    exchangeCapacity = 0;
    if (tprt_status status = check(cuMemAlloc(&exchange, needed), "cuMemAlloc"))
      return status;
    exchangeCapacity = needed;
  }
  if (tprt_status status =
          check(cuMemcpyHtoDAsync(exchange, in, bytes, device->stream),
                "cuMemcpyHtoDAsync"))
    return status;
  if (tprt_status status =
          ncclCheck(ncclAllGather(reinterpret_cast<void *>(exchange),
                                  reinterpret_cast<void *>(exchange + bytes),
                                  bytes, ncclInt8, c.comm, device->stream),
                    c.comm, "ncclAllGather"))
    return status;
  if (tprt_status status =
          check(cuMemcpyDtoHAsync(out, exchange + bytes,
                                  bytes * size_t(c.size()), device->stream),
                "cuMemcpyDtoHAsync"))
    return status;
  return check(cuStreamSynchronize(device->stream), "cuStreamSynchronize");
}

tprt_status GpuBackend::allocate(size_t bytes, void **out) {
  if (bytes == 0) {
    *out = nullptr;
    return TPRT_OK;
  }
  if (tprt_status status = makeCurrent())
    return status;
  CUdeviceptr ptr = 0;
  CUresult result = cuMemAllocAsync(&ptr, bytes, device->stream);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t freeBytes = 0, totalBytes = 0;
    cuMemGetInfo(&freeBytes, &totalBytes);
    return fail(TPRT_ERROR_OUT_OF_MEMORY,
                "cannot allocate %zu bytes on GPU %d (%s): %.2f GiB free of "
                "%.2f GiB",
                bytes, device->ordinal, device->name.c_str(),
                double(freeBytes) / double(1ull << 30),
                double(totalBytes) / double(1ull << 30));
  }
  if (tprt_status status = check(result, "cuMemAllocAsync"))
    return status;
  *out = reinterpret_cast<void *>(ptr);
  return TPRT_OK;
}

void GpuBackend::release(void *ptr) {
  if (!ptr || makeCurrent() != TPRT_OK)
    return;
  cuMemFreeAsync(CUdeviceptr(ptr), device->stream);
}

tprt_status GpuBackend::copyAsync(void *dst, const void *src, size_t bytes) {
  if (!bytes || dst == src)
    return TPRT_OK;
  return check(
      cuMemcpyAsync(CUdeviceptr(dst), CUdeviceptr(src), bytes, device->stream),
      "cuMemcpyAsync");
}

tprt_status GpuBackend::copyBytes(void *dst, const void *src, size_t bytes) {
  if (tprt_status status = makeCurrent())
    return status;
  if (tprt_status status = copyAsync(dst, src, bytes))
    return status;
  return synchronize();
}

tprt_status GpuBackend::copy2D(void *dst, size_t dstPitch, const void *src,
                               size_t srcPitch, size_t width, size_t height) {
  if (tprt_status status = makeCurrent())
    return status;
  if (width == 0 || height == 0)
    return TPRT_OK;
  char *out = static_cast<char *>(dst);
  const char *in = static_cast<const char *>(src);
  bool contiguous = dstPitch == width && srcPitch == width;
  if (height == 1 || contiguous)
    return copyAsync(out, in, width * height);
  if (srcPitch > device->maxPitch || dstPitch > device->maxPitch) {
    for (size_t row = 0; row < height; ++row)
      if (tprt_status status =
              copyAsync(out + row * dstPitch, in + row * srcPitch, width))
        return status;
    return TPRT_OK;
  }
  CUDA_MEMCPY2D p;
  std::memset(&p, 0, sizeof(p));
  p.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.srcDevice = CUdeviceptr(in);
  p.srcPitch = srcPitch;
  p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.dstDevice = CUdeviceptr(out);
  p.dstPitch = dstPitch;
  p.WidthInBytes = width;
  p.Height = height;
  return check(cuMemcpy2DAsync(&p, device->stream), "cuMemcpy2DAsync");
}

tprt_status GpuBackend::synchronize() {
  if (tprt_status status = makeCurrent())
    return status;
  if (tprt_status status =
          check(cuStreamSynchronize(device->stream), "cuStreamSynchronize"))
    return status;
  for (const Pending &p : pending) {
    float ms = 0;
    EventPair &pair = events[size_t(p.slot)];
    if (cuEventElapsedTime(&ms, pair.start, pair.end) == CUDA_SUCCESS)
      *p.accumulator += double(ms) / 1000.0;
    freeSlots.push_back(p.slot);
  }
  pending.clear();
  return TPRT_OK;
}

void GpuBackend::timerBegin(TimerMark &mark) {
  Backend::timerBegin(mark); // the host clock, the fallback
  if (makeCurrent() != TPRT_OK)
    return;
  if (freeSlots.empty()) {
    EventPair pair;
    if (cuEventCreate(&pair.start, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return;
    if (cuEventCreate(&pair.end, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      cuEventDestroy(pair.start);
      return;
    }
    events.push_back(pair);
    freeSlots.push_back(int(events.size() - 1));
  }
  int slot = freeSlots.back();
  if (cuEventRecord(events[size_t(slot)].start, device->stream) != CUDA_SUCCESS)
    return;
  freeSlots.pop_back();
  mark.slot = slot;
}

void GpuBackend::timerEnd(TimerMark &mark, double *accumulator) {
  if (mark.slot < 0) {
    Backend::timerEnd(mark, accumulator);
    return;
  }
  if (cuEventRecord(events[size_t(mark.slot)].end, device->stream) !=
      CUDA_SUCCESS) {
    freeSlots.push_back(mark.slot);
    Backend::timerEnd(mark, accumulator);
    return;
  }
  pending.push_back(Pending{mark.slot, accumulator});
  mark.slot = -1;
  // Bound the events in flight: a long run without synchronization
  // flushes itself now and then.
  if (pending.size() >= 4096)
    synchronize();
}

} // namespace

extern "C" tprt_status tprt_cuda_create_backend(const CudaPluginHost *host,
                                                const char *mode,
                                                Backend **out) {
  if (!host)
    return TPRT_ERROR_INTERNAL;
  if (host->version != CudaPluginVersion)
    return host->setError(TPRT_ERROR_UNAVAILABLE,
                          "libtprt_cuda.so comes from another build of libtprt "
                          "(plugin interface version mismatch)");
  setPluginHost(host);
  return guard([&]() -> tprt_status {
    bool shared = mode && std::strcmp(mode, "cuda-shared") == 0;
    auto backend = std::make_unique<GpuBackend>(shared);
    if (tprt_status status = backend->initialize(*host))
      return status;
    *out = backend.release();
    return TPRT_OK;
  });
}
