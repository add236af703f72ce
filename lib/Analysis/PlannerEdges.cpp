//===- PlannerEdges.cpp - phase 2: edges and reshard costs ----------------===//
//
// Every use of a value joins its producer's node and its consumer's node
// with a table of resharding times (planReshard priced by the cost model).
// A value with several uses goes through a fan-out node, so that one
// resharding shared by several consumers is priced once, as the partitioner
// emits it once; a value every consumer slices for free needs none.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::detail;

/// Phase 2. Adds to `problem` one cost table per producer-consumer pair
/// and returns the dataflow pairs (producer node, consumer node).
std::vector<std::pair<int, int>>
PlanBuilder::buildEdges(AssignmentProblem &problem) {
  // Edges. A value with one use joins producer and consumer directly. A
  // value with several uses goes through a fan-out node whose choice is a
  // pair (P, L): the producer gives P, and one resharding to L is shared by
  // every consumer that wants L; consumers wanting P read it as is, any
  // other pays its own resharding from P. (The partitioner inserts one
  // collective per use and CSE merges identical ones, which matches.)
  llvm::MapVector<Value, SmallVector<std::pair<int, Input>>> uses;
  for (int v = 0, e = nodes.size(); v < e; ++v)
    for (const Input &in : nodes[v].inputs)
      if (producer.count(in.value))
        uses[in.value].push_back({v, in});
  std::map<std::pair<int, int>, std::vector<double>> edgeCosts;
  std::vector<std::pair<int, int>> dataflow; // producer -> consumer
  auto addToEdge = [&](int a, int b, size_t rows, size_t cols,
                       llvm::function_ref<double(size_t, size_t)> cost) {
    dataflow.push_back({a, b});
    std::vector<double> &table = edgeCosts[{a, b}];
    if (table.empty()) {
      tableEntries += double(rows) * cols;
      if (tableEntries > kMaxTableEntries)
        return; // run() reports the size
      table.assign(rows * cols, 0);
    }
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < cols; ++j)
        table[i * cols + j] += cost(i, j);
  };
  for (auto &entry : uses) {
    Value value = entry.first;
    SmallVector<std::pair<int, Input>> &valueUses = entry.second;
    auto [u, result] = producer.lookup(value);
    const Node &prod = nodes[u];
    // Parameters are consumed as stored unless asked otherwise, except by
    // ops without a sharding rule, which read them whole (gathered), and by
    // the function's results: a result's layout is a contract (replicated
    // unless pinned or a parameter), so a parameter returned as it is gets
    // resharded into it rather than stored in it.
    bool paramExact = !options.reshardParams && paramNodes.contains(u);
    // Values computed from weights alone may be sliced, never moved
    // (unless the function returns them: a pinned result is a contract; or
    // an op without a sharding rule reads them whole).
    bool viewLocal =
        !options.reshardParams && weightViewNodes.contains(u) &&
        llvm::none_of(valueUses, [&](const std::pair<int, Input> &use) {
          return nodes[use.first].kind == NodeKind::Result ||
                 nodes[use.first].noRule;
        });
    auto exactUse = [&](int v, const Input &in) {
      return in.exact || (paramExact && !nodes[v].noRule &&
                          nodes[v].kind != NodeKind::Result);
    };
    unsigned resultIndex = result;
    auto resultOf = [&](size_t a) {
      return prod.strategies[a].results[resultIndex];
    };
    auto price = [&](LayoutAttr from, LayoutAttr to, bool exact) {
      if (from == to)
        return 0.0;
      if (exact || (viewLocal && !isLocalReshard(from, to, value)))
        return kInf;
      return reshardTime(from, to, value);
    };
    llvm::SetVector<LayoutAttr> produced, wanted;
    for (size_t a = 0; a < prod.strategies.size(); ++a)
      produced.insert(resultOf(a));
    for (auto &[v, in] : valueUses)
      for (const Strategy &st : nodes[v].strategies)
        wanted.insert(st.inputs[in.slot]);
    // One use, or one produced layout from which every wanted layout is a
    // free slice (a replicated input read by every layer): nothing to share,
    // each use gets its own edge (a fan-out node would join the consumers).
    bool freeFromOne =
        produced.size() == 1 && llvm::all_of(wanted, [&](LayoutAttr l) {
          return price(produced.front(), l, paramExact) == 0.0;
        });
    if (valueUses.size() == 1 || freeFromOne) {
      for (auto &[v, in] : valueUses) {
        const Node &consumer = nodes[v];
        addToEdge(u, v, prod.strategies.size(), consumer.strategies.size(),
                  [&, v = v, in = in](size_t a, size_t b) {
                    return price(resultOf(a),
                                 consumer.strategies[b].inputs[in.slot],
                                 exactUse(v, in));
                  });
      }
      continue;
    }
    size_t pairs = produced.size() * (paramExact ? 1 : 1 + wanted.size());
    if (pairs > kMaxFanOutChoices) {
      // Too many pairs for the search (meshes of three axes or more): each
      // use pays its resharding divided among the uses that can want the
      // same layout, a lower bound on what the partitioner's merged
      // reshardings cost (RelaxedFanOut).
      RelaxedFanOut relaxed;
      relaxed.value = value;
      relaxed.node = u;
      relaxed.result = resultIndex;
      for (auto &[v, in] : valueUses) {
        if (exactUse(v, in))
          continue;
        llvm::SmallDenseSet<LayoutAttr> mine;
        for (const Strategy &st : nodes[v].strategies)
          mine.insert(st.inputs[in.slot]);
        for (LayoutAttr l : mine)
          ++relaxed.wanters[l];
      }
      DenseMap<LayoutAttr, int> &wanters = relaxed.wanters;
      for (auto &[v, in] : valueUses) {
        const Node &consumer = nodes[v];
        relaxed.uses.push_back({v, in.slot});
        addToEdge(u, v, prod.strategies.size(), consumer.strategies.size(),
                  [&, v = v, in = in](size_t a, size_t b) {
                    LayoutAttr want = consumer.strategies[b].inputs[in.slot];
                    double full =
                        price(resultOf(a), want, exactUse(v, in));
                    int share = wanters.lookup(want);
                    return full == kInf || share < 2 ? full : full / share;
                  });
      }
      relaxedFanOuts.push_back(std::move(relaxed));
      continue;
    }
    FanOut fan;
    fan.value = value;
    for (LayoutAttr p : produced) {
      fan.choices.push_back({p, p});
      for (LayoutAttr l : wanted)
        if (l != p && !paramExact)
          fan.choices.push_back({p, l});
    }
    std::vector<double> zero(fan.choices.size(), 0.0);
    int f = problem.addNode(zero, zero);
    fan.node = f;
    addToEdge(u, f, prod.strategies.size(), fan.choices.size(),
              [&](size_t a, size_t c) {
                auto [p, l] = fan.choices[c];
                return resultOf(a) == p ? price(p, l, false) : kInf;
              });
    for (auto &[v, in] : valueUses) {
      const Node &consumer = nodes[v];
      bool exact = exactUse(v, in);
      addToEdge(f, v, fan.choices.size(), consumer.strategies.size(),
                [&, in = in](size_t c, size_t b) {
                  auto [p, l] = fan.choices[c];
                  LayoutAttr want = consumer.strategies[b].inputs[in.slot];
                  if (want == p || want == l)
                    return want == p || !exact ? 0.0 : kInf;
                  return price(p, want, exact);
                });
    }
    fanOuts.push_back(std::move(fan));
  }
  for (auto &[pair, table] : edgeCosts)
    problem.addEdge(pair.first, pair.second, std::move(table));
  return dataflow;
}

std::pair<double, double>
PlanBuilder::relaxedFanOutCosts(const std::vector<int> &choice) {
  double charged = 0, real = 0;
  for (const RelaxedFanOut &fan : relaxedFanOuts) {
    LayoutAttr produced =
        nodes[fan.node].strategies[choice[fan.node]].results[fan.result];
    llvm::SmallDenseSet<LayoutAttr> emitted;
    for (auto [v, slot] : fan.uses) {
      LayoutAttr want = nodes[v].strategies[choice[v]].inputs[slot];
      if (want == produced)
        continue;
      double full = reshardTime(produced, want, fan.value);
      int share = fan.wanters.lookup(want);
      charged += share < 2 ? full : full / share;
      if (emitted.insert(want).second)
        real += full;
    }
  }
  return {charged, real};
}

