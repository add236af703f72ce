//===- Context.h - The objects behind tprt_context and tprt_group -*- C++ -*-=//
//
// A context owns its backend, its groups (cached by rank list until
// tprt_finalize), its counters and scratch buffers for packing.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_CONTEXT_H
#define TPRT_COMMON_CONTEXT_H

#include "Backend.h"

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

/// A growable buffer that keeps its memory between calls.
class Scratch {
public:
  void *get(size_t bytes) {
    if (bytes > capacity) {
      data.reset(new char[bytes]);
      capacity = bytes;
    }
    return data.get();
  }

private:
  std::unique_ptr<char[]> data;
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
  /// Exchange a call header before every collective (TPRT_CHECK, default 1).
  bool check = true;
  tprt_stats stats = {};
  tprt::Clock::time_point timerStart;
  /// Pack and unpack buffers of the collectives.
  tprt::Scratch scratch[2];
};

#endif // TPRT_COMMON_CONTEXT_H
