//===- Watchdog.h - ranks that stop answering -----------------------------===//
//
// A rank stopped with SIGSTOP (or by a debugger, or frozen) makes its peers
// wait in their next collective, spinning, until tp-run's --timeout minutes
// later, with nothing said. The ranks of one host share a heartbeat file in
// the model folder (.tp-runner-heartbeat-<launcher pid>: per rank its pid
// and the monotonic clock, written every 250 ms by a thread of its own that
// beats while the rank computes or waits). Each rank's thread also reads
// its peers' beats: a beat older than --peer-timeout seconds (default 30;
// 0 turns the watch off) is a rank that stopped answering, and the lowest
// rank still beating names it on stderr; every watcher then ends its rank
// (exit 1), and the launcher (mpirun, tp-runner --nproc) the run. A rank
// that ends cleanly marks its slot done first. Ranks on other hosts are not
// watched (their slots stay empty).
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_WATCHDOG_H
#define TP_RUNNER_WATCHDOG_H

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace tprun {

class Watchdog {
public:
  /// Starts the watch of rank `rank` of `size` in `dir` (nothing for one
  /// rank or seconds == 0). Returns false with `error` set when the file
  /// cannot be made.
  bool start(const std::string &dir, int rank, int size, long seconds,
             std::string &error);
  /// Marks this rank done and stops the thread.
  void finish();
  ~Watchdog() { finish(); }

private:
  void loop();

  struct Slot {
    std::atomic<uint64_t> beat; // ms of CLOCK_MONOTONIC; 0 none; ~0 done
    std::atomic<uint64_t> pid;
  };
  Slot *slots = nullptr;
  size_t bytes = 0;
  int rank = 0, size = 0;
  uint64_t timeoutMs = 0;
  std::string path;
  std::atomic<bool> stopping{false};
  std::thread thread;
};

} // namespace tprun

#endif // TP_RUNNER_WATCHDOG_H
