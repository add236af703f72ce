//===- Topology.cpp - Which ranks share a host ----------------------------===//
//
// See Topology.h.
//
//===----------------------------------------------------------------------===//

#include "Topology.h"

#include "Error.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace tprt;

int Topology::ranksOnNode(int rank) const {
  int node = nodeOf[size_t(rank)];
  return int(std::count(nodeOf.begin(), nodeOf.end(), node));
}

void tprt::hostNameBlock(const std::string &name, char *block) {
  std::memset(block, 0, HostNameBytes);
  std::memcpy(block, name.data(), std::min(name.size(), HostNameBytes - 1));
}

tprt_status tprt::computeTopology(const char *names, int size, Topology &out) {
  Topology topology;
  topology.nodeOf.assign(size_t(size), 0);
  topology.localRank.assign(size_t(size), 0);
  const char *override = std::getenv("TPRT_RANKS_PER_NODE");
  if (override && *override) {
    char *end = nullptr;
    errno = 0;
    long perNode = std::strtol(override, &end, 10);
    if (errno || end == override || *end || perNode < 1 || perNode > 1 << 20)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "TPRT_RANKS_PER_NODE is \"%s\", expected a number of ranks "
                  ">= 1",
                  override);
    for (int r = 0; r < size; ++r) {
      topology.nodeOf[size_t(r)] = int(r / perNode);
      topology.localRank[size_t(r)] = int(r % perNode);
    }
    topology.nodeCount = int((size + perNode - 1) / perNode);
    out = std::move(topology);
    return TPRT_OK;
  }
  std::map<std::string, int> nodes;
  std::vector<int> counts;
  for (int r = 0; r < size; ++r) {
    const char *block = names + size_t(r) * HostNameBytes;
    std::string name(block, strnlen(block, HostNameBytes));
    auto [it, inserted] = nodes.emplace(name, int(nodes.size()));
    if (inserted)
      counts.push_back(0);
    topology.nodeOf[size_t(r)] = it->second;
    topology.localRank[size_t(r)] = counts[size_t(it->second)]++;
  }
  topology.nodeCount = int(nodes.size());
  out = std::move(topology);
  return TPRT_OK;
}
