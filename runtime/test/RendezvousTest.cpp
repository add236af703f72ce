//===- RendezvousTest.cpp - The TCP bootstrap with real processes ---------===//
//
// tprt-rendezvous-test SCENARIO [N]
//
// Forks ranks that find each other through the TCP rendezvous of
// torchrun-style launches (lib/common/Rendezvous.cpp) on 127.0.0.1 and a
// free port, the way the nccl backend starts without mpirun:
//
//   ok N          N ranks: allgather of host names and ranks, the topology
//                 (with TPRT_RANKS_PER_NODE=2), point-to-point messages
//                 around a ring, out-of-order tags, a non-zero sender to
//                 every other rank; each rank prints "rank R: ok"
//   missing-rank  WORLD_SIZE=3 but rank 2 never starts (TPRT_INIT_TIMEOUT=1)
//   refused       rank 1 alone: nobody listens on MASTER_PORT
//   world-size    rank 1 says WORLD_SIZE=3, rank 0 WORLD_SIZE=2
//   bad-port      MASTER_PORT=70000
//   no-addr       MASTER_ADDR unset
//
// Every rank prints one line, "rank R: ok" or "rank R: <status>: <message>";
// the lines are sorted by rank. Exits 0 when every rank behaved as the
// scenario expects (ok: all succeed; the others: all listed ranks fail).
//
//===----------------------------------------------------------------------===//

#include "common/Rendezvous.h"
#include "common/Bootstrap.h"
#include "common/Topology.h"

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace tprt;

namespace {

/// A port nobody listens on right now.
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  socklen_t length = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &length);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string failure(tprt_status status) {
  return std::string(tprt_status_name(status)) + ": " + tprt_last_error();
}

/// The body of one rank of the "ok" scenario; returns its line.
std::string runOk() {
  std::unique_ptr<Bootstrap> b;
  if (tprt_status status = createWorldBootstrap(b))
    return failure(status);
  int rank = b->rank(), n = b->size();
  if (std::string(b->name()) != "tcp")
    return std::string("expected the tcp bootstrap, got ") + b->name();

  // Allgather: each rank's host name block plus its rank.
  struct Entry {
    char host[HostNameBytes];
    int32_t rank;
    int32_t square;
  } mine = {};
  hostNameBlock("host-" + std::to_string(rank / 2), mine.host);
  mine.rank = rank;
  mine.square = rank * rank;
  std::vector<Entry> all(static_cast<size_t>(n));
  if (tprt_status status = b->allGather(&mine, all.data(), sizeof(Entry)))
    return failure(status);
  for (int r = 0; r < n; ++r)
    if (all[size_t(r)].rank != r || all[size_t(r)].square != r * r)
      return "allgather entry " + std::to_string(r) + " is wrong";

  // Topology from the exchanged names: two ranks per "host".
  std::vector<char> names(size_t(n) * HostNameBytes);
  for (int r = 0; r < n; ++r)
    std::memcpy(&names[size_t(r) * HostNameBytes], all[size_t(r)].host,
                HostNameBytes);
  Topology topology;
  if (tprt_status status = computeTopology(names.data(), n, topology))
    return failure(status);
  if (topology.nodeCount != (n + 1) / 2 ||
      topology.nodeOf[size_t(rank)] != rank / 2 ||
      topology.localRank[size_t(rank)] != rank % 2)
    return "topology: node " + std::to_string(topology.nodeOf[size_t(rank)]) +
           " of " + std::to_string(topology.nodeCount) + ", local rank " +
           std::to_string(topology.localRank[size_t(rank)]);

  if (n == 1)
    return "ok";
  // A ring: send to the next rank, receive from the previous one.
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  int64_t payload = 1000 + rank;
  if (tprt_status status = b->send(next, 7, &payload, sizeof(payload)))
    return failure(status);
  int64_t got = 0;
  if (tprt_status status = b->recv(prev, 7, &got, sizeof(got)))
    return failure(status);
  if (got != 1000 + prev)
    return "ring message from rank " + std::to_string(prev) + " is " +
           std::to_string(got);

  // Two tags sent in one order and received in the other.
  int32_t first = 11 * rank, second = 13 * rank;
  if (tprt_status status = b->send(next, 100, &first, sizeof(first)))
    return failure(status);
  if (tprt_status status = b->send(next, 200, &second, sizeof(second)))
    return failure(status);
  int32_t a = -1, c = -1;
  if (tprt_status status = b->recv(prev, 200, &c, sizeof(c)))
    return failure(status);
  if (tprt_status status = b->recv(prev, 100, &a, sizeof(a)))
    return failure(status);
  if (a != 11 * prev || c != 13 * prev)
    return "tagged messages arrived mixed up";

  // A group leader that is not rank 0 hands an id to every other member,
  // as the nccl backend does with ncclUniqueId.
  std::vector<int> group;
  for (int r = 1; r < n; ++r)
    group.push_back(r);
  if (group.size() >= 2 && rank >= 1) {
    uint32_t tag = groupTag(group);
    char id[128];
    if (rank == 1) {
      for (size_t i = 0; i < sizeof(id); ++i)
        id[i] = char(i * 3);
      for (size_t i = 1; i < group.size(); ++i)
        if (tprt_status status = b->send(group[i], tag, id, sizeof(id)))
          return failure(status);
    } else {
      if (tprt_status status = b->recv(1, tag, id, sizeof(id)))
        return failure(status);
      for (size_t i = 0; i < sizeof(id); ++i)
        if (id[i] != char(i * 3))
          return "the group id arrived damaged";
    }
  }
  // Everybody is done before anybody exits.
  int32_t done = 1;
  std::vector<int32_t> flags(static_cast<size_t>(n));
  if (tprt_status status = b->allGather(&done, flags.data(), sizeof(done)))
    return failure(status);
  return "ok";
}

std::string runConnectOnly() {
  std::unique_ptr<Bootstrap> b;
  if (tprt_status status = createWorldBootstrap(b))
    return failure(status);
  return "ok";
}

struct Launch {
  int rank;
  std::vector<std::pair<std::string, std::string>> env; // "" value: unset
};

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tprt-rendezvous-test SCENARIO [N]\n");
    return 2;
  }
  std::string scenario = argv[1];
  int n = argc > 2 ? std::atoi(argv[2]) : 4;
  std::string port = std::to_string(freePort());
  std::vector<Launch> launches;
  auto standard = [&](int rank, int worldSize) {
    return Launch{rank,
                  {{"RANK", std::to_string(rank)},
                   {"WORLD_SIZE", std::to_string(worldSize)},
                   {"MASTER_ADDR", "127.0.0.1"},
                   {"MASTER_PORT", port},
                   {"TPRT_INIT_TIMEOUT", "20"}}};
  };
  bool expectOk = false;
  if (scenario == "ok") {
    expectOk = true;
    for (int r = 0; r < n; ++r)
      launches.push_back(standard(r, n));
  } else if (scenario == "missing-rank") {
    // Rank 0 gives up after 1 s; rank 1 waits longer, so it sees rank 0
    // close the connection.
    launches.push_back(standard(0, 3));
    launches.back().env.push_back({"TPRT_INIT_TIMEOUT", "1"});
    launches.push_back(standard(1, 3));
  } else if (scenario == "refused") {
    launches.push_back(standard(1, 2));
    launches.back().env.push_back({"TPRT_INIT_TIMEOUT", "1"});
  } else if (scenario == "world-size") {
    launches.push_back(standard(0, 2));
    launches.push_back(standard(1, 3));
  } else if (scenario == "bad-port") {
    launches.push_back(standard(0, 2));
    launches.back().env.push_back({"MASTER_PORT", "70000"});
  } else if (scenario == "no-addr") {
    launches.push_back(standard(0, 2));
    launches.back().env.push_back({"MASTER_ADDR", ""});
  } else {
    std::fprintf(stderr, "tprt-rendezvous-test: unknown scenario \"%s\"\n",
                 scenario.c_str());
    return 2;
  }

  // Each child writes its line into a pipe; the parent prints them in rank
  // order.
  struct Child {
    int rank;
    pid_t pid;
    int fd;
  };
  std::vector<Child> children;
  for (const Launch &launch : launches) {
    int fds[2];
    if (::pipe(fds) != 0)
      return 2;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      ::unsetenv("OMPI_COMM_WORLD_SIZE");
      ::unsetenv("PMI_SIZE");
      ::unsetenv("PMIX_RANK");
      ::unsetenv("TPRT_RANKS_PER_NODE");
      for (const auto &[name, value] : launch.env) {
        if (value.empty())
          ::unsetenv(name.c_str());
        else
          ::setenv(name.c_str(), value.c_str(), 1);
      }
      std::string line = expectOk ? runOk() : runConnectOnly();
      line = "rank " + std::to_string(launch.rank) + ": " + line + "\n";
      ssize_t written = ::write(fds[1], line.data(), line.size());
      (void)written;
      ::close(fds[1]);
      std::_Exit(line.find(": ok\n") != std::string::npos ? 0 : 1);
    }
    ::close(fds[1]);
    children.push_back({launch.rank, pid, fds[0]});
  }
  bool asExpected = true;
  std::vector<std::pair<int, std::string>> lines;
  for (const Child &child : children) {
    std::string text;
    char buffer[512];
    ssize_t got;
    while ((got = ::read(child.fd, buffer, sizeof(buffer))) > 0)
      text.append(buffer, size_t(got));
    ::close(child.fd);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    bool succeeded = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!WIFEXITED(status))
      text = "rank " + std::to_string(child.rank) + ": crashed\n";
    if (succeeded != expectOk)
      asExpected = false;
    lines.push_back({child.rank, text});
  }
  for (const auto &[rank, text] : lines)
    std::fputs(text.c_str(), stdout);
  std::printf("rendezvous %s: %zu ranks, %s\n", scenario.c_str(),
              children.size(), asExpected ? "as expected" : "UNEXPECTED");
  return asExpected ? 0 : 1;
}
