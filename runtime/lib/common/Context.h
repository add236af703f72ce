//===- Context.h - The objects behind tprt_context and tprt_group -*- C++ -*-=//
//
// A context owns its backend, its groups (cached by rank list until
// tprt_finalize), its counters, the topology and scratch buffers for
// packing.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_CONTEXT_H
#define TPRT_COMMON_CONTEXT_H

#include "Backend.h"
#include "Topology.h"

#include "tprt/tprt.h"

#include <chrono>
#include <map>
#include <memory>
#include <vector>

namespace tprt {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A growable buffer of the backend's collective memory (device memory on
/// GPU backends) that keeps its memory between calls.
class Scratch {
public:
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() { reset(); }

  void bind(Backend *owner) { backend = owner; }
  /// At least `bytes` of memory in `out` (null for 0 bytes before the first
  /// allocation); the backend's error when the allocation fails.
  tprt_status get(size_t bytes, void *&out) {
    if (bytes > capacity) {
      reset();
      if (tprt_status status = backend->allocate(bytes, &data)) {
        data = nullptr;
        return status;
      }
      capacity = bytes;
    }
    out = data;
    return TPRT_OK;
  }
  void reset() {
    if (data && backend)
      backend->release(data);
    data = nullptr;
    capacity = 0;
  }

private:
  Backend *backend = nullptr;
  void *data = nullptr;
  size_t capacity = 0;
};

} // namespace tprt

struct tprt_group {
  tprt_context *ctx = nullptr;
  /// World ranks in group order.
  std::vector<int> ranks;
  /// The calling rank's position in `ranks`.
  int index = 0;
  std::unique_ptr<tprt::Communicator> comm;
  /// Outstanding creates not yet destroyed; the world group has none.
  int references = 0;
  bool isWorld = false;

  int size() const { return static_cast<int>(ranks.size()); }
};

struct tprt_context {
  // Declared first so that it is destroyed last, after the groups'
  // communicators.
  std::unique_ptr<tprt::Backend> backend;
  std::map<std::vector<int>, std::unique_ptr<tprt_group>> groups;
  tprt_group *world = nullptr;
  /// Exchange a call header before every collective (TPRT_CHECK_COLLECTIVES,
  /// TPRT_CHECK; default on except on nccl, see Api.cpp).
  bool check = true;
  tprt_stats stats = {};
  tprt::Clock::time_point timerStart;
  /// Which ranks share a host, from the host names exchanged at init.
  tprt::Topology topology;
  /// Pack and unpack buffers of the collectives; released before the
  /// backend (declared after it).
  tprt::Scratch scratch[2];
};

#endif // TPRT_COMMON_CONTEXT_H
