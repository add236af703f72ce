//===- SolverReduce.cpp - exact reductions before the elimination -*- C++ -*-===//
//
// Choices that can never be needed are removed before any table is built,
// and nodes left with one choice are folded into their neighbours, so that
// the elimination (Solver.cpp) sees fewer choices and fewer nodes. On a 2-D
// mesh most of an op's strategies put the data axis somewhere that costs
// more than putting it on the batch in every context; removing them is
// what lets a [dp, tp] training step fit the exact elimination at all.
//
// Dominance (dead-end elimination, Goldstein's criterion). Choice r of node
// i is dominated by choice s when
//
//   cost_i(s) - cost_i(r) + sum over edges (i, j) of
//       max over live choices t of j of [edge(s, t) - edge(r, t)]  <=  0
//
// and, when memory is constrained, memory_i(s) <= memory_i(r). Then in any
// assignment that picks r, switching i to s changes the cost by at most
// that sum (each edge by at most its maximum) and the memory by at most 0:
// the switched assignment is as good and as feasible. Removing r therefore
// keeps an optimal assignment of the problem restricted to the live
// choices; removals are applied one at a time against the current live
// sets, which is exact by induction (the classic iterated DEE argument).
// A pair that forbids (t, s) but not (t, r) makes the maximum infinite and
// r stays; pairs forbidden for r cost nothing to give up.
//
// Folding. A node with one live choice is a constant: its edges become
// unary costs of its neighbours, its cost and memory a constant offset (the
// budget shrinks by its memory). Edges between two folded nodes are
// constants too.
//
// The reduced problem is solved by the usual elimination; its solution is
// mapped back, with the folded nodes at their only choice. Cost and memory
// are evaluated on the original problem.
//
//===----------------------------------------------------------------------===//

#include "SolverReduce.h"

#include <algorithm>
#include <cmath>

using namespace mlir::tp;
using namespace mlir::tp::detail;

namespace {

constexpr double kInf = AssignmentProblem::kInfinity;
/// About a second of comparisons.
constexpr double kMaxDominanceWork = double(int64_t(1) << 28);

struct Incidence {
  int edge;
  bool first; // the node is the edge's u
};

/// edge(a, t) for node choice a and neighbour choice t.
inline double edgeCost(const AssignmentProblem &p, const Incidence &inc,
                       int a, int t) {
  const AssignmentProblem::Edge &e = p.edges[inc.edge];
  return inc.first ? e.cost[size_t(a) * p.numChoices(e.v) + t]
                   : e.cost[size_t(t) * p.numChoices(e.v) + a];
}

} // namespace

ProblemReduction detail::reduceProblem(const AssignmentProblem &problem,
                                       bool respectMemory,
                                       const std::vector<int> &groups) {
  ProblemReduction red;
  int n = problem.numNodes();
  std::vector<std::vector<Incidence>> incident(n);
  for (int e = 0; e < int(problem.edges.size()); ++e) {
    incident[problem.edges[e].u].push_back({e, true});
    incident[problem.edges[e].v].push_back({e, false});
  }
  std::vector<std::vector<char>> live(n);
  std::vector<int> liveCount(n, 0);
  for (int i = 0; i < n; ++i) {
    live[i].assign(problem.numChoices(i), 0);
    for (int c = 0; c < problem.numChoices(i); ++c)
      if (problem.nodeCost[i][c] != kInf &&
          (!respectMemory ||
           problem.nodeMemory[i][c] <= problem.memoryBudget)) {
        live[i][c] = 1;
        ++liveCount[i];
      }
    if (liveCount[i] == 0) {
      red.infeasible = true;
      return red;
    }
  }

  // Worklist of nodes whose neighbours lost choices (their maxima may have
  // dropped, so more of their choices may be dominated now).
  std::vector<char> queued(n, 1);
  std::vector<int> work(n);
  for (int i = 0; i < n; ++i)
    work[i] = n - 1 - i;
  // Dominance is optional (the elimination is exact without it): it
  // stops after kMaxDominanceWork edge entries compared, so that nodes of
  // thousands of choices cannot make it quadratic without bound.
  double compared = 0;
  while (!work.empty() && compared <= kMaxDominanceWork) {
    int i = work.back();
    work.pop_back();
    queued[i] = 0;
    if (liveCount[i] < 2)
      continue;
    int k = problem.numChoices(i);
    bool removed = false;
    for (int r = 0; r < k && compared <= kMaxDominanceWork; ++r) {
      if (!live[i][r])
        continue;
      for (int s = 0; s < k; ++s) {
        if (s == r || !live[i][s])
          continue;
        if (respectMemory &&
            problem.nodeMemory[i][s] > problem.nodeMemory[i][r])
          continue;
        double sum = problem.nodeCost[i][s] - problem.nodeCost[i][r];
        for (const Incidence &inc : incident[i]) {
          const AssignmentProblem::Edge &e = problem.edges[inc.edge];
          int j = inc.first ? e.v : e.u;
          double worst = -kInf;
          int t = 0;
          for (; t < problem.numChoices(j); ++t) {
            if (!live[j][t])
              continue;
            double cr = edgeCost(problem, inc, r, t);
            if (cr == kInf)
              continue; // r cannot meet t: nothing to lose there
            double cs = edgeCost(problem, inc, s, t);
            worst = std::max(worst, cs - cr); // +inf when s cannot
            if (worst == kInf)
              break;
          }
          compared += t + 1;
          sum += worst;
          if (sum == kInf || std::isnan(sum))
            break;
        }
        if (!std::isnan(sum) && sum <= 0) {
          live[i][r] = 0;
          --liveCount[i];
          ++red.prunedChoices;
          removed = true;
          break;
        }
      }
    }
    if (!removed)
      continue;
    for (const Incidence &inc : incident[i]) {
      const AssignmentProblem::Edge &e = problem.edges[inc.edge];
      int j = inc.first ? e.v : e.u;
      if (!queued[j] && liveCount[j] > 1) {
        queued[j] = 1;
        work.push_back(j);
      }
    }
  }

  // Fold the nodes with one live choice.
  red.fixedChoice.assign(n, -1);
  red.reducedOf.assign(n, -1);
  for (int i = 0; i < n; ++i) {
    if (liveCount[i] == 1) {
      for (int c = 0; c < problem.numChoices(i); ++c)
        if (live[i][c])
          red.fixedChoice[i] = c;
      ++red.foldedNodes;
      red.constantCost += problem.nodeCost[i][red.fixedChoice[i]];
      red.constantMemory += problem.nodeMemory[i][red.fixedChoice[i]];
      continue;
    }
    red.reducedOf[i] = int(red.nodeOf.size());
    red.nodeOf.push_back(i);
    std::vector<int> choices;
    for (int c = 0; c < problem.numChoices(i); ++c)
      if (live[i][c])
        choices.push_back(c);
    red.choiceOf.push_back(std::move(choices));
  }
  AssignmentProblem &out = red.problem;
  for (size_t r = 0; r < red.nodeOf.size(); ++r) {
    int i = red.nodeOf[r];
    std::vector<double> cost, memory;
    for (int c : red.choiceOf[r]) {
      cost.push_back(problem.nodeCost[i][c]);
      memory.push_back(problem.nodeMemory[i][c]);
    }
    out.addNode(std::move(cost), std::move(memory));
    if (!groups.empty())
      red.groups.push_back(groups[i]);
  }
  // Edges: between kept nodes a sub-matrix (parallel edges summed), to a
  // folded node a unary cost, between folded nodes a constant.
  std::vector<std::vector<std::pair<int, int>>> edgeOf(red.nodeOf.size());
  for (const AssignmentProblem::Edge &e : problem.edges) {
    int ru = red.reducedOf[e.u], rv = red.reducedOf[e.v];
    int cvAll = problem.numChoices(e.v);
    if (ru < 0 && rv < 0) {
      red.constantCost +=
          e.cost[size_t(red.fixedChoice[e.u]) * cvAll + red.fixedChoice[e.v]];
      continue;
    }
    if (ru < 0 || rv < 0) {
      int kept = ru < 0 ? rv : ru;
      std::vector<double> &cost = out.nodeCost[kept];
      const std::vector<int> &choices = red.choiceOf[kept];
      for (size_t a = 0; a < choices.size(); ++a) {
        double c = ru < 0 ? e.cost[size_t(red.fixedChoice[e.u]) * cvAll +
                                   choices[a]]
                          : e.cost[size_t(choices[a]) * cvAll +
                                   red.fixedChoice[e.v]];
        cost[a] += c;
      }
      continue;
    }
    const std::vector<int> &cu = red.choiceOf[ru], &cv = red.choiceOf[rv];
    std::vector<double> cost(cu.size() * cv.size());
    for (size_t a = 0; a < cu.size(); ++a)
      for (size_t b = 0; b < cv.size(); ++b)
        cost[a * cv.size() + b] = e.cost[size_t(cu[a]) * cvAll + cv[b]];
    // Sum parallel edges into one: fewer tables, same problem.
    int lo = std::min(ru, rv), hi = std::max(ru, rv);
    int existing = -1;
    for (auto [other, index] : edgeOf[lo])
      if (other == hi)
        existing = index;
    if (existing < 0) {
      edgeOf[lo].push_back({hi, int(out.edges.size())});
      out.addEdge(ru, rv, std::move(cost));
      continue;
    }
    AssignmentProblem::Edge &into = out.edges[existing];
    for (size_t a = 0; a < cu.size(); ++a)
      for (size_t b = 0; b < cv.size(); ++b) {
        size_t at = into.u == ru ? a * cv.size() + b : b * cu.size() + a;
        into.cost[at] += cost[a * cv.size() + b];
      }
  }
  // Two folded nodes whose pair is forbidden: nothing is feasible. A kept
  // choice made infinitely costly by a folded neighbour stays as a choice
  // (the elimination ignores it); the budget loses the constants.
  if (red.constantCost == kInf)
    red.infeasible = true;
  out.memoryBudget = problem.memoryBudget == kInf
                         ? kInf
                         : problem.memoryBudget - red.constantMemory;
  return red;
}

AssignmentSolution detail::expandSolution(const AssignmentProblem &problem,
                                          const ProblemReduction &red,
                                          AssignmentSolution reduced) {
  AssignmentSolution s = reduced;
  s.lowerBound = reduced.lowerBound == kInf
                     ? kInf
                     : reduced.lowerBound + red.constantCost;
  if (!reduced.feasible) {
    s.choice.clear();
    return s;
  }
  s.choice.assign(problem.numNodes(), 0);
  for (int i = 0; i < problem.numNodes(); ++i)
    s.choice[i] = red.fixedChoice[i] >= 0
                      ? red.fixedChoice[i]
                      : red.choiceOf[red.reducedOf[i]]
                                    [reduced.choice[red.reducedOf[i]]];
  auto [cost, memory] = problem.evaluate(s.choice);
  s.cost = cost;
  s.memory = memory;
  return s;
}
