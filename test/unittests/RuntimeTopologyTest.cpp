//===- RuntimeTopologyTest.cpp - libtprt's node and local-rank numbering --===//
//
// computeTopology() turns the host names every rank reports at init into
// node ids (by first appearance) and local ranks (runtime/lib/common/
// Topology.h); TPRT_RANKS_PER_NODE overrides the names for tests.
//
//===----------------------------------------------------------------------===//

#include "common/Topology.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <string>
#include <vector>

using namespace tprt;

namespace {

std::vector<char> blocks(const std::vector<std::string> &names) {
  std::vector<char> out(names.size() * HostNameBytes);
  for (size_t i = 0; i < names.size(); ++i)
    hostNameBlock(names[i], &out[i * HostNameBytes]);
  return out;
}

class RuntimeTopology : public ::testing::Test {
protected:
  void SetUp() override { unsetenv("TPRT_RANKS_PER_NODE"); }
  void TearDown() override { unsetenv("TPRT_RANKS_PER_NODE"); }
};

TEST_F(RuntimeTopology, InterleavedHosts) {
  // Ranks alternate between two hosts: nodes by first appearance.
  std::vector<char> names =
      blocks({"gpu-b", "gpu-a", "gpu-b", "gpu-a", "gpu-c"});
  Topology t;
  ASSERT_EQ(computeTopology(names.data(), 5, t), TPRT_OK);
  EXPECT_EQ(t.nodeCount, 3);
  EXPECT_EQ(t.nodeOf, (std::vector<int>{0, 1, 0, 1, 2}));
  EXPECT_EQ(t.localRank, (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_EQ(t.ranksOnNode(0), 2);
  EXPECT_EQ(t.ranksOnNode(4), 1);
}

TEST_F(RuntimeTopology, LongNamesAreCutTheSameWay) {
  // Names past the block size are truncated identically on every rank.
  std::string longName(200, 'x');
  std::vector<char> names = blocks({longName, longName + "y", "short"});
  Topology t;
  ASSERT_EQ(computeTopology(names.data(), 3, t), TPRT_OK);
  EXPECT_EQ(t.nodeOf, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(t.localRank, (std::vector<int>{0, 1, 0}));
}

TEST_F(RuntimeTopology, RanksPerNodeOverride) {
  setenv("TPRT_RANKS_PER_NODE", "3", 1);
  std::vector<char> names = blocks({"h", "h", "h", "h", "h", "h", "h"});
  Topology t;
  ASSERT_EQ(computeTopology(names.data(), 7, t), TPRT_OK);
  EXPECT_EQ(t.nodeCount, 3);
  EXPECT_EQ(t.nodeOf, (std::vector<int>{0, 0, 0, 1, 1, 1, 2}));
  EXPECT_EQ(t.localRank, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
}

TEST_F(RuntimeTopology, BadOverrideIsRejected) {
  std::vector<char> names = blocks({"h", "h"});
  Topology t;
  for (const char *bad : {"0", "-2", "two", "3x"}) {
    setenv("TPRT_RANKS_PER_NODE", bad, 1);
    EXPECT_EQ(computeTopology(names.data(), 2, t), TPRT_ERROR_INVALID_ARGUMENT)
        << bad;
    EXPECT_NE(std::string(tprt_last_error()).find("TPRT_RANKS_PER_NODE is"),
              std::string::npos);
  }
}

} // namespace
