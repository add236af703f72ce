//===- MockNccl.cpp - A host-memory NCCL for tests without a GPU ----------===//
//
// libnccl.so.2 for the mock CUDA driver (MockCudaDriver.cpp), so that the
// nccl backend's host logic runs in CI with several ranks: unique ids
// travelling through the bootstrap, the nonblocking communicator start-up
// (ncclCommInitRankConfig answers ncclInProgress and
// ncclCommGetAsyncError reports ready on the third poll), collectives that
// answer ncclInProgress and must be waited out, and send/recv groups.
//
// The ranks of a communicator (processes on one host) meet in a POSIX
// shared-memory segment named by the unique id: every collective copies
// each rank's input into its slot (through the mock driver, since device
// memory is not host-accessible), waits for all, computes its own result
// (reductions in f32/f64/i64 and rounded once, like the mpi backend) and
// waits again before the slots are reused. A slot holds 1 MiB: larger
// buffers go through in chunks of a slot (or of a slot's share per peer,
// for reduce-scatter and all-to-all), one exchange per chunk.
//
// MOCK_NCCL_INIT=hang keeps every communicator in progress (the init
// timeout path); MOCK_NCCL_INIT=fail fails the start-up with
// ncclInvalidUsage and a message. MOCK_TRACE=1 prints a line to stderr
// for every collective ("mock nccl: ncclAllReduce", ncclAllGather,
// ncclReduceScatter, ncclSend, ncclRecv), so tests can count the NCCL calls
// of a tprt collective (nccl-check.test).
//
//===----------------------------------------------------------------------===//

#include "common/DType.h"

#include <cuda.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

#define MOCK_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr size_t kSlotBytes = size_t(1) << 20;

struct Header {
  std::atomic<uint64_t> arrived;
};

struct PendingP2P {
  bool send;
  void *buffer;
  size_t bytes;
  int peer;
};

} // namespace

struct ncclComm {
  int nranks = 1;
  int rank = 0;
  int pollsLeft = 0;
  bool blocking = true;
  std::string name;
  char *segment = nullptr;
  size_t segmentBytes = 0;
  uint64_t barriers = 0;
  CUstream stream = nullptr;

  Header *header() { return reinterpret_cast<Header *>(segment); }
  char *slot(int r) { return segment + 4096 + size_t(r) * kSlotBytes; }
  void barrier() {
    uint64_t target = ++barriers * uint64_t(nranks);
    header()->arrived.fetch_add(1);
    while (header()->arrived.load() < target)
      std::this_thread::yield();
  }
};

namespace {

std::string lastError;
thread_local std::vector<std::pair<ncclComm *, PendingP2P>> grouped;
thread_local int groupDepth = 0;

tprt_dtype dtypeOf(ncclDataType_t type) {
  switch (type) {
  case ncclFloat16:
    return TPRT_F16;
  case ncclBfloat16:
    return TPRT_BF16;
  case ncclFloat32:
    return TPRT_F32;
  case ncclFloat64:
    return TPRT_F64;
  case ncclInt32:
    return TPRT_I32;
  case ncclInt64:
    return TPRT_I64;
  default:
    return TPRT_DTYPE_FORCE_32BIT; // bytes
  }
}

size_t typeSize(ncclDataType_t type) {
  tprt_dtype d = dtypeOf(type);
  return d == TPRT_DTYPE_FORCE_32BIT ? 1 : tprt::dtypeSize(d);
}

double load(tprt_dtype d, const char *p, size_t i) {
  switch (d) {
  case TPRT_F16:
  case TPRT_BF16: {
    float f;
    tprt::toFloat(d, p + 2 * i, &f, 1);
    return f;
  }
  case TPRT_F32:
    return reinterpret_cast<const float *>(p)[i];
  case TPRT_F64:
    return reinterpret_cast<const double *>(p)[i];
  case TPRT_I32:
    return reinterpret_cast<const int32_t *>(p)[i];
  case TPRT_I64:
    return double(reinterpret_cast<const int64_t *>(p)[i]);
  default:
    return 0;
  }
}

void store(tprt_dtype d, char *p, size_t i, double v) {
  switch (d) {
  case TPRT_F16:
  case TPRT_BF16: {
    float f = float(v);
    tprt::fromFloat(d, &f, p + 2 * i, 1);
    return;
  }
  case TPRT_F32:
    reinterpret_cast<float *>(p)[i] = float(v);
    return;
  case TPRT_F64:
    reinterpret_cast<double *>(p)[i] = v;
    return;
  case TPRT_I32:
    reinterpret_cast<int32_t *>(p)[i] = int32_t(v);
    return;
  case TPRT_I64:
    reinterpret_cast<int64_t *>(p)[i] = int64_t(v);
    return;
  default:
    return;
  }
}

ncclResult_t fail(const char *message) {
  lastError = message;
  return ncclInvalidUsage;
}

bool toHost(char *dst, const void *src, size_t bytes, ncclComm *comm) {
  return !bytes || cuMemcpyDtoHAsync(dst, CUdeviceptr(src), bytes,
                                     comm->stream) == CUDA_SUCCESS;
}

bool toDevice(void *dst, const char *src, size_t bytes, ncclComm *comm) {
  return !bytes || cuMemcpyHtoDAsync(CUdeviceptr(dst), src, bytes,
                                     comm->stream) == CUDA_SUCCESS;
}

ncclResult_t done(ncclComm *comm) {
  return comm->blocking ? ncclSuccess : ncclInProgress;
}

/// Every rank puts `bytes` of `in` in its slot; then `compute` fills `out`
/// from the slots. `bytes` is at most a slot.
template <typename Compute>
ncclResult_t exchange(ncclComm *comm, const void *in, size_t bytes,
                      cudaStream_t stream, Compute &&compute) {
  comm->stream = reinterpret_cast<CUstream>(stream);
  if (!toHost(comm->slot(comm->rank), in, bytes, comm))
    return fail("mock NCCL: device to host copy failed");
  comm->barrier();
  bool ok = compute();
  comm->barrier();
  return ok ? ncclSuccess : fail("mock NCCL: host to device copy failed");
}

/// The largest multiple of `element` at most `limit`.
size_t chunkOf(size_t limit, size_t element) {
  return limit / element * element;
}

ncclResult_t reduceInto(ncclComm *comm, void *out, size_t offset, size_t count,
                        ncclDataType_t type, ncclRedOp_t op) {
  tprt_dtype d = dtypeOf(type);
  size_t es = typeSize(type);
  std::vector<char> result(count * es);
  for (size_t i = 0; i < count; ++i) {
    double v = load(d, comm->slot(0) + offset, i);
    for (int r = 1; r < comm->nranks; ++r) {
      double w = load(d, comm->slot(r) + offset, i);
      v = op == ncclMax   ? (w > v ? w : v)
          : op == ncclMin ? (w < v ? w : v)
                          : v + w;
    }
    store(d, result.data(), i, v);
  }
  return toDevice(out, result.data(), result.size(), comm) ? ncclSuccess
                                                           : ncclSystemError;
}

} // namespace

namespace {
void trace(const char *call) {
  static const bool enabled = [] {
    const char *env = std::getenv("MOCK_TRACE");
    return env && *env && std::strcmp(env, "0") != 0;
  }();
  if (enabled)
    std::fprintf(stderr, "mock nccl: %s\n", call);
}
} // namespace

MOCK_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static int counter = 0;
  std::memset(id, 0, sizeof(*id));
  // MOCK_NCCL_TAG (letters, digits, - and _) goes into the name, so that a
  // test can look for its own segments in /dev/shm.
  const char *tag = std::getenv("MOCK_NCCL_TAG");
  bool tagged = tag && *tag && std::strlen(tag) < 40 &&
                std::strspn(tag, "abcdefghijklmnopqrstuvwxyz"
                                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") ==
                    std::strlen(tag);
  std::snprintf(id->internal, sizeof(id->internal),
                "/tprt-mock-nccl-%s%s%d-%d", tagged ? tag : "",
                tagged ? "-" : "", int(getpid()), counter++);
  // A segment of this name left by an earlier process of the same pid (one
  // killed before its ranks met) would be joined with its stale counters:
  // no live process uses the name, so it goes.
  shm_unlink(id->internal);
  return ncclSuccess;
}

MOCK_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks,
                                                ncclUniqueId id, int rank,
                                                ncclConfig_t *config) {
  const char *init = std::getenv("MOCK_NCCL_INIT");
  if (init && std::strcmp(init, "fail") == 0)
    return fail("mock NCCL was told to fail (MOCK_NCCL_INIT=fail)");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail("mock NCCL: bad rank");
  auto comm = new ncclComm();
  comm->nranks = nranks;
  comm->rank = rank;
  comm->blocking = !config || config->blocking != 0;
  comm->pollsLeft = init && std::strcmp(init, "hang") == 0 ? -1 : 2;
  comm->name.assign(id.internal, strnlen(id.internal, sizeof(id.internal)));
  comm->segmentBytes = 4096 + size_t(nranks) * kSlotBytes;
  int fd = shm_open(comm->name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, off_t(comm->segmentBytes)) != 0) {
    delete comm;
    return fail("mock NCCL: shm_open failed");
  }
  void *p = mmap(nullptr, comm->segmentBytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    delete comm;
    return fail("mock NCCL: mmap failed");
  }
  comm->segment = static_cast<char *>(p);
  *out = comm;
  // Everybody has the segment open before anybody may unlink it; then its
  // name goes at once, so that a rank that crashes, is killed or hangs
  // leaves nothing in /dev/shm (the mappings live until the last rank
  // ends).
  comm->barrier();
  if (rank == 0)
    shm_unlink(comm->name.c_str());
  return done(comm);
}

MOCK_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                               ncclResult_t *result) {
  if (comm->pollsLeft < 0) {
    *result = ncclInProgress;
  } else if (comm->pollsLeft > 0) {
    --comm->pollsLeft;
    *result = ncclInProgress;
  } else {
    *result = ncclSuccess;
  }
  return ncclSuccess;
}

MOCK_EXPORT const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "mock NCCL error";
  }
}

MOCK_EXPORT const char *ncclGetLastError(ncclComm_t) {
  return lastError.c_str();
}

MOCK_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return done(comm);
}

static void release(ncclComm_t comm) {
  if (comm->segment)
    munmap(comm->segment, comm->segmentBytes); // its name is gone already
  delete comm;
}

MOCK_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  release(comm);
  return ncclSuccess;
}

MOCK_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  release(comm);
  return ncclSuccess;
}

MOCK_EXPORT ncclResult_t ncclAllReduce(const void *in, void *out, size_t count,
                                       ncclDataType_t type, ncclRedOp_t op,
                                       ncclComm_t comm, cudaStream_t stream) {
  trace("ncclAllReduce");
  size_t es = typeSize(type), chunk = chunkOf(kSlotBytes, es) / es;
  for (size_t at = 0; at < count; at += chunk) {
    size_t n = std::min(chunk, count - at);
    if (ncclResult_t r = exchange(
            comm, static_cast<const char *>(in) + at * es, n * es, stream, [&] {
              return reduceInto(comm, static_cast<char *>(out) + at * es, 0, n,
                                type, op) == ncclSuccess;
            }))
      return r;
  }
  return done(comm);
}

MOCK_EXPORT ncclResult_t ncclAllGather(const void *in, void *out, size_t count,
                                       ncclDataType_t type, ncclComm_t comm,
                                       cudaStream_t stream) {
  trace("ncclAllGather");
  size_t bytes = count * typeSize(type);
  size_t chunk = chunkOf(kSlotBytes, typeSize(type));
  for (size_t at = 0; at < bytes; at += chunk) {
    size_t n = std::min(chunk, bytes - at);
    if (ncclResult_t r = exchange(
            comm, static_cast<const char *>(in) + at, n, stream, [&] {
              for (int rk = 0; rk < comm->nranks; ++rk)
                if (!toDevice(static_cast<char *>(out) + size_t(rk) * bytes + at,
                              comm->slot(rk), n, comm))
                  return false;
              return true;
            }))
      return r;
  }
  return done(comm);
}

MOCK_EXPORT ncclResult_t ncclReduceScatter(const void *in, void *out,
                                           size_t count, ncclDataType_t type,
                                           ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream) {
  trace("ncclReduceScatter");
  // Each round: every rank puts the same range of each destination's
  // block at slot offset destination * share; then reduces its own.
  size_t es = typeSize(type), nr = size_t(comm->nranks);
  size_t share = chunkOf(kSlotBytes / nr, es) / es;
  comm->stream = reinterpret_cast<CUstream>(stream);
  for (size_t at = 0; at < count; at += share) {
    size_t n = std::min(share, count - at);
    for (size_t d = 0; d < nr; ++d)
      if (!toHost(comm->slot(comm->rank) + d * share * es,
                  static_cast<const char *>(in) + (d * count + at) * es, n * es,
                  comm))
        return fail("mock NCCL: device to host copy failed");
    comm->barrier();
    ncclResult_t r =
        reduceInto(comm, static_cast<char *>(out) + at * es,
                   size_t(comm->rank) * share * es, n, type, op);
    comm->barrier();
    if (r != ncclSuccess)
      return fail("mock NCCL: host to device copy failed");
  }
  return done(comm);
}

MOCK_EXPORT ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return ncclSuccess;
}

MOCK_EXPORT ncclResult_t ncclSend(const void *in, size_t count,
                                  ncclDataType_t type, int peer,
                                  ncclComm_t comm, cudaStream_t stream) {
  trace("ncclSend");
  if (groupDepth == 0)
    return fail("mock NCCL: send outside a group");
  comm->stream = reinterpret_cast<CUstream>(stream);
  grouped.push_back(
      {comm, {true, const_cast<void *>(in), count * typeSize(type), peer}});
  return ncclSuccess;
}

MOCK_EXPORT ncclResult_t ncclRecv(void *out, size_t count, ncclDataType_t type,
                                  int peer, ncclComm_t comm,
                                  cudaStream_t stream) {
  trace("ncclRecv");
  if (groupDepth == 0)
    return fail("mock NCCL: recv outside a group");
  comm->stream = reinterpret_cast<CUstream>(stream);
  grouped.push_back({comm, {false, out, count * typeSize(type), peer}});
  return ncclSuccess;
}

/// Runs the grouped sends and receives of one communicator: each rank
/// writes what it sends to peer p at offset p * share of its slot (equal
/// sizes per peer, as in an all-to-all), then reads from the senders'
/// slots; blocks larger than a share go in several rounds.
MOCK_EXPORT ncclResult_t ncclGroupEnd() {
  if (--groupDepth > 0 || grouped.empty())
    return ncclSuccess;
  ncclComm *comm = grouped.front().first;
  size_t block = grouped.front().second.bytes;
  size_t share = kSlotBytes / size_t(comm->nranks) / 8 * 8;
  for (size_t at = 0; at < block || (block == 0 && at == 0); at += share) {
    size_t n = std::min(share, block - at);
    for (auto &[c, op] : grouped)
      if (op.send &&
          !toHost(comm->slot(comm->rank) + size_t(op.peer) * share,
                  static_cast<char *>(op.buffer) + at, n, comm)) {
        grouped.clear();
        return fail("mock NCCL: copy failed");
      }
    comm->barrier();
    for (auto &[c, op] : grouped)
      if (!op.send &&
          !toDevice(static_cast<char *>(op.buffer) + at,
                    comm->slot(op.peer) + size_t(comm->rank) * share, n, comm)) {
        grouped.clear();
        return fail("mock NCCL: copy failed");
      }
    comm->barrier();
    if (block == 0)
      break;
  }
  grouped.clear();
  return done(comm);
}
