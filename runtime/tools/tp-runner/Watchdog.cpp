//===- Watchdog.cpp - ranks that stop answering ---------------------------===//
//
// Watchdog.h says what the heartbeat file holds and when a rank is said to
// have stopped answering.
//
//===----------------------------------------------------------------------===//

#include "Watchdog.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tprun;

namespace {

constexpr uint64_t kDone = ~uint64_t(0);

uint64_t nowMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000 + uint64_t(t.tv_nsec) / 1000000;
}

} // namespace

bool Watchdog::start(const std::string &dir, int rankIn, int sizeIn,
                     long seconds, std::string &error) {
  if (sizeIn < 2 || seconds <= 0)
    return true;
  rank = rankIn;
  size = sizeIn;
  timeoutMs = uint64_t(seconds) * 1000;
  // One file per launch: every rank of this host has the same parent
  // (mpirun, orted, or tp-runner --nproc).
  path = dir + "/.tp-runner-heartbeat-" + std::to_string(getppid());
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  bytes = sizeof(Slot) * size_t(size);
  if (fd < 0 || ftruncate(fd, off_t(bytes)) != 0) {
    error = "cannot make the heartbeat file " + path + ": " +
            std::strerror(errno);
    if (fd >= 0)
      close(fd);
    return false;
  }
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    error = "cannot map the heartbeat file " + path + ": " +
            std::strerror(errno);
    return false;
  }
  slots = static_cast<Slot *>(p);
  slots[rank].pid.store(uint64_t(getpid()));
  slots[rank].beat.store(nowMs());
  thread = std::thread([this] { loop(); });
  return true;
}

void Watchdog::loop() {
  while (!stopping.load()) {
    uint64_t now = nowMs();
    slots[rank].beat.store(now);
    int stopped = -1, lowestAlive = rank;
    uint64_t age = 0;
    for (int r = 0; r < size; ++r) {
      uint64_t beat = slots[r].beat.load();
      if (r == rank || beat == 0 || beat == kDone)
        continue;
      if (now > beat && now - beat > timeoutMs) {
        if (stopped < 0) {
          stopped = r;
          age = now - beat;
        }
      } else if (r < lowestAlive) {
        lowestAlive = r;
      }
    }
    if (stopped >= 0) {
      if (lowestAlive == rank)
        std::fprintf(
            stderr,
            "tp-runner: rank %d: rank %d (pid %llu) has not answered for "
            "%.0f s: it is stopped (SIGSTOP, a debugger) or frozen; ending "
            "the run (--peer-timeout %llu; 0 turns this off)\n",
            rank, stopped,
            static_cast<unsigned long long>(slots[stopped].pid.load()),
            double(age) / 1000.0,
            static_cast<unsigned long long>(timeoutMs / 1000));
      std::fflush(stderr);
      std::_Exit(1);
    }
    for (int i = 0; i < 5 && !stopping.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Watchdog::finish() {
  if (!slots)
    return;
  stopping.store(true);
  if (thread.joinable())
    thread.join();
  slots[rank].beat.store(kDone);
  if (rank == 0)
    unlink(path.c_str()); // the others keep their mappings
  munmap(slots, bytes);
  slots = nullptr;
}
