//===- PlannerOrder.cpp - the elimination order ---------------------------===//
//
// The solver eliminates nodes group by group: the inside of every segment
// between two cuts of the dataflow (the residual stream between sub-blocks)
// first, then the cuts in program order, so that the search is a chain
// dynamic programme over the layers.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::detail;

//===----------------------------------------------------------------------===//
// Elimination order: layers first, the values between layers last
//===----------------------------------------------------------------------===//

/// Finds the *cuts* of the dataflow: nodes that every path from the inputs
/// to the outputs crosses (the residual stream between sub-blocks). Nodes
/// inside the segments between cuts go to elimination group 0, the cuts to
/// groups 1, 2, ... in program order, and leaves (weights) used by several
/// segments (a tied embedding) to the last group. Eliminating in this order
/// is a chain dynamic programme over the cuts whose steps are the segments,
/// so a front of (cost, memory) pairs grows with the number of layers only
/// at the cuts, never inside a layer.
std::vector<int>
PlanBuilder::eliminationGroups(const AssignmentProblem &problem,
                               ArrayRef<std::pair<int, int>> dataflow) {
  int n = problem.numNodes();
  std::vector<std::vector<int>> succ(n), pred(n);
  for (auto [a, b] : dataflow) {
    succ[a].push_back(b);
    pred[b].push_back(a);
  }
  // Program positions: arguments first, then ops in order, results last; a
  // fan-out node sits right after its producer.
  std::vector<double> position(n, 0);
  DenseMap<Operation *, int> opIndex;
  int index = 0;
  for (Operation &op : func.getBody().front())
    opIndex[&op] = index++;
  for (int i = 0, e = nodes.size(); i < e; ++i) {
    const Node &node = nodes[i];
    if (node.kind == NodeKind::Argument)
      position[i] = -1.0 - 1e-3 * (func.getNumArguments() - node.index);
    else if (node.kind == NodeKind::Result)
      position[i] = index + 1e-3 * node.index;
    else
      position[i] = opIndex.lookup(node.op);
  }
  for (int i = nodes.size(); i < n; ++i)
    position[i] = pred[i].empty() ? 0 : position[pred[i].front()] + 0.5;

  // Data nodes: reachable from a non-parameter argument.
  std::vector<bool> data(n, false);
  std::vector<int> work;
  for (int i = 0, e = nodes.size(); i < e; ++i)
    if (nodes[i].kind == NodeKind::Argument && !paramNodes.contains(i)) {
      data[i] = true;
      work.push_back(i);
    }
  while (!work.empty()) {
    int x = work.back();
    work.pop_back();
    for (int y : succ[x])
      if (!data[y]) {
        data[y] = true;
        work.push_back(y);
      }
  }
  std::vector<int> order;
  for (int i = 0; i < n; ++i)
    if (data[i])
      order.push_back(i);
  llvm::sort(order, [&](int a, int b) {
    return std::make_pair(position[a], a) < std::make_pair(position[b], b);
  });

  std::vector<int> group(n, 0);
  std::vector<int> segment(n, 0);
  double reach = -1e300;
  int cuts = 0;
  for (int x : order) {
    if (reach <= position[x])
      group[x] = 1 + cuts++;
    segment[x] = cuts;
    for (int y : succ[x])
      if (data[y])
        reach = std::max(reach, position[y]);
  }
  // Leaves shared by several segments are eliminated last.
  for (int i = 0; i < n; ++i) {
    if (data[i])
      continue;
    llvm::SmallDenseSet<int> segments;
    std::vector<int> stack{i};
    llvm::DenseSet<int> seen;
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      for (int y : succ[x]) {
        if (data[y])
          segments.insert(segment[y]);
        else if (seen.insert(y).second)
          stack.push_back(y);
      }
    }
    if (segments.size() > 1)
      group[i] = cuts + 1;
  }
  return group;
}
