//===- Topology.h - Which ranks share a host --------------------*- C++ -*-===//
//
// A node is the group of ranks on one host. At init every backend exchanges
// host names (HostNameBytes each) among the world; nodes are numbered by
// first appearance in rank order, and a rank's local rank is its position
// among the ranks of its node. TPRT_RANKS_PER_NODE=K overrides the host
// names (for tests): ranks 0..K-1 are node 0, K..2K-1 node 1, and so on.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_TOPOLOGY_H
#define TPRT_COMMON_TOPOLOGY_H

#include "tprt/tprt.h"

#include <string>
#include <vector>

namespace tprt {

constexpr size_t HostNameBytes = 64;

struct Topology {
  std::vector<int> nodeOf;    // by world rank
  std::vector<int> localRank; // by world rank
  int nodeCount = 1;

  /// Ranks on the node of `rank`.
  int ranksOnNode(int rank) const;
};

/// `names` holds size() blocks of HostNameBytes (not necessarily
/// NUL-terminated). Fails for a bad TPRT_RANKS_PER_NODE.
tprt_status computeTopology(const char *names, int size, Topology &out);

/// This host's name in a block of HostNameBytes, NUL-padded.
void hostNameBlock(const std::string &name, char *block);

} // namespace tprt

#endif // TPRT_COMMON_TOPOLOGY_H
