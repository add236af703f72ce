//===- Launch.cpp - tp-runner --nproc: local ranks, torchrun style --------===//
//
// See Launch.h. POSIX only: fork, execv of /proc/self/exe, waitpid polled
// every 20 ms so that the timeout and the signals are seen.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace tprun {

namespace {

/// The signal the launcher got (SIGINT, SIGTERM), 0 if none.
volatile sig_atomic_t launcherSignal = 0;

void onLauncherSignal(int signal) { launcherSignal = signal; }

/// A TCP port on 127.0.0.1 that nobody listens on now: the kernel's pick
/// for port 0. Rank 0 binds it a moment later (the window is the same as
/// torchrun's).
int freePort(std::string &error) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) ||
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length)) {
    error = std::string("bind 127.0.0.1:0: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string describeStatus(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char *name = strsignal(WTERMSIG(status));
    return "was killed by signal " + std::to_string(WTERMSIG(status)) +
           (name ? std::string(" (") + name + ")" : std::string());
  }
  return "ended with wait status " + std::to_string(status);
}

int exitCodeOf(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 1;
}

long envNumber(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return -1;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno || *end || value < 0)
    return -1;
  return value;
}

} // namespace

int launchLocalRanks(const std::vector<std::string> &rankArgs, long nproc,
                     long timeoutSeconds) {
  char self[4096];
  ssize_t length = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) {
    std::fprintf(stderr, "tp-runner: --nproc: cannot find this program "
                         "(/proc/self/exe): %s\n", std::strerror(errno));
    return 1;
  }
  self[length] = 0;
  std::string error;
  int port = freePort(error);
  if (port < 0) {
    std::fprintf(stderr, "tp-runner: --nproc: no free TCP port for the "
                         "rendezvous: %s\n", error.c_str());
    return 1;
  }

  struct sigaction action {};
  action.sa_handler = onLauncherSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(size_t(nproc), 0);
  long running = 0;
  int firstFailure = -1;
  auto stopAll = [&](int signal) {
    for (pid_t pid : pids)
      if (pid > 0)
        ::kill(pid, signal);
  };
  for (long r = 0; r < nproc; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "tp-runner: --nproc: cannot start rank %ld: "
                           "fork: %s\n", r, std::strerror(errno));
      firstFailure = 1;
      break;
    }
    if (pid == 0) {
#if defined(__linux__)
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      auto set = [](const char *name, long value) {
        ::setenv(name, std::to_string(value).c_str(), 1);
      };
      set("RANK", r);
      set("LOCAL_RANK", r);
      set("WORLD_SIZE", nproc);
      set("LOCAL_WORLD_SIZE", nproc);
      set("TP_RUNNER_NPROC", nproc);
      set("MASTER_PORT", port);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      // The ranks are not under mpirun even if the launcher was.
      for (const char *name : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                               "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_RANK",
                               "PMI_RANK"})
        ::unsetenv(name);
      std::vector<char *> argv;
      argv.push_back(self);
      for (const std::string &arg : rankArgs)
        argv.push_back(const_cast<char *>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(self, argv.data());
      std::fprintf(stderr, "tp-runner: --nproc: cannot run %s: %s\n", self,
                   std::strerror(errno));
      std::_Exit(127);
    }
    pids[size_t(r)] = pid;
    ++running;
  }

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto stopping = Clock::time_point();
  bool stopped = false, killed = false, timedOut = false;
  // A rank that exits with an error is usually one of several that found
  // the same problem, and rank 0 is the one that says what it is: the
  // others get a grace period to exit (and print) on their own before
  // SIGTERM, then SIGKILL 5 s later. A signal or a timeout stops at once.
  auto graceUntil = Clock::time_point::max();
  bool terminated = false;
  auto beginStop = [&](std::chrono::milliseconds grace =
                           std::chrono::milliseconds(0)) {
    if (stopped)
      return;
    stopped = true;
    stopping = Clock::now() + grace;
    graceUntil = stopping;
    if (grace.count() == 0) {
      terminated = true;
      stopAll(SIGTERM);
    }
  };
  if (firstFailure >= 0)
    beginStop();
  while (running > 0) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      long rank = -1;
      for (size_t r = 0; r < pids.size(); ++r)
        if (pids[r] == pid) {
          rank = long(r);
          pids[r] = 0;
        }
      if (rank < 0)
        continue;
      --running;
      bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (failed && firstFailure < 0 && !stopped) {
        firstFailure = exitCodeOf(status);
        std::fprintf(stderr, "tp-runner: rank %ld %s", rank,
                     describeStatus(status).c_str());
        if (running > 0)
          std::fprintf(stderr, "; stopping the other %ld rank%s", running,
                       running == 1 ? "" : "s");
        std::fprintf(stderr, "\n");
        std::fflush(stderr);
        beginStop(std::chrono::milliseconds(2000));
      }
      continue;
    }
    if (pid < 0 && errno != EINTR && errno != ECHILD)
      break;
    if (pid < 0 && errno == ECHILD)
      break;
    if (launcherSignal && !terminated) {
      // Also ends a grace period: the user asked to stop.
      std::fprintf(stderr, "tp-runner: --nproc: got signal %d; stopping "
                           "%ld rank%s\n", int(launcherSignal), running,
                   running == 1 ? "" : "s");
      if (firstFailure < 0)
        firstFailure = 128 + int(launcherSignal);
      if (!stopped)
        beginStop();
      graceUntil = Clock::now();
      stopping = std::min(stopping, graceUntil);
    }
    if (!stopped && timeoutSeconds > 0 &&
        Clock::now() - start >= std::chrono::seconds(timeoutSeconds)) {
      timedOut = true;
      std::fprintf(stderr, "tp-runner: --nproc: %ld of %ld rank%s still "
                           "running after %ld s (--timeout); stopping them\n",
                   running, nproc, nproc == 1 ? "" : "s", timeoutSeconds);
      std::fflush(stderr);
      beginStop();
    }
    if (stopped && !terminated && Clock::now() >= graceUntil) {
      terminated = true;
      stopAll(SIGTERM);
    }
    if (stopped && !killed &&
        Clock::now() - stopping >= std::chrono::seconds(5)) {
      killed = true;
      stopAll(SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (timedOut)
    return 124;
  return firstFailure < 0 ? 0 : firstFailure;
}

int applyLaunchFault() {
  if (launchedWorldSize() <= 0)
    return -1;
  const char *text = std::getenv("TP_RUNNER_LAUNCH_FAULT");
  if (!text || !*text)
    return -1;
  long rank = envNumber("RANK");
  // A comma-separated list of exit:R:CODE and hang:R.
  std::string list = text;
  for (size_t at = 0; at <= list.size();) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos)
      comma = list.size();
    std::string item = list.substr(at, comma - at);
    at = comma + 1;
    long faultRank = -1, code = 1;
    char tail = 0;
    bool hang;
    if (std::sscanf(item.c_str(), "exit:%ld:%ld%c", &faultRank, &code,
                    &tail) == 2 &&
        faultRank >= 0 && code >= 0 && code <= 255) {
      hang = false;
    } else if (std::sscanf(item.c_str(), "hang:%ld%c", &faultRank, &tail) ==
                   1 &&
               faultRank >= 0) {
      hang = true;
    } else {
      if (rank == 0)
        std::fprintf(stderr, "tp-runner: error: TP_RUNNER_LAUNCH_FAULT is "
                             "\"%s\", expected a comma-separated list of "
                             "exit:RANK:CODE and hang:RANK\n",
                     text);
      return 2;
    }
    if (faultRank != rank)
      continue;
    std::string what = hang ? "hang" : "exit " + std::to_string(code);
    std::fprintf(stderr, "tp-runner: rank %ld: injected %s "
                         "(TP_RUNNER_LAUNCH_FAULT)\n", rank, what.c_str());
    std::fflush(stderr);
    if (!hang)
      return int(code);
    for (;;)
      ::pause();
  }
  return -1;
}

long launchedWorldSize() {
  long nproc = envNumber("TP_RUNNER_NPROC");
  if (nproc > 0)
    return nproc;
  const char *ompi = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (ompi && *ompi)
    return 0;
  long world = envNumber("WORLD_SIZE");
  return world > 0 && envNumber("RANK") >= 0 ? world : 0;
}

std::string launchDefaultBackend() {
  return launchedWorldSize() > 1 ? "nccl" : "single";
}

} // namespace tprun
