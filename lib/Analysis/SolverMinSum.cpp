//===- SolverMinSum.cpp - bucket elimination without a budget ---*- C++ -*-===//
//
// The budget-free pass of the solver (Solver.cpp) as plain min-sum bucket
// elimination on flat tables: one double per table entry, and per
// eliminated node the value that minimises each entry of its new table
// (16 bits) instead of a trace. Decoding walks the order backwards: every
// node's scope is eliminated after it, so its values are known when the
// node's own table is read.
//
// The entries of the new table are visited in mixed-radix order with one
// running offset per input table, updated by a stride when a digit moves:
// the inner loop over the eliminated node's values is a sum of loads.
// Ties go to the lowest value, as in the front-based elimination, so both
// give the same plan. With a multiplier lambda the node costs become
// cost + lambda x memory: the Lagrangian relaxation of the budget that
// Solver.cpp searches before the constrained pass.
//
//===----------------------------------------------------------------------===//

#include "SolverReduce.h"

#include <algorithm>
#include <cstdint>

using namespace mlir::tp;

namespace {

constexpr double kInf = AssignmentProblem::kInfinity;

struct FlatTable {
  std::vector<int> scope; // sorted
  std::vector<int64_t> strides;
  std::vector<double> cost;
  bool alive = true;
};

struct Eliminated {
  int node;
  std::vector<int> scope;
  std::vector<int64_t> strides;
  std::vector<uint16_t> argmin;
};

} // namespace

AssignmentSolution detail::solveMinSumInOrder(const AssignmentProblem &p,
                                              const std::vector<int> &order,
                                              int64_t maxTableSize,
                                              double *effort, double lambda) {
  AssignmentSolution solution;
  int n = p.numNodes();
  std::vector<FlatTable> tables;
  std::vector<std::vector<int>> tablesOf(n);
  double constant = 0;
  auto add = [&](std::vector<int> scope, std::vector<double> cost) {
    if (scope.empty()) {
      constant += cost.front();
      return;
    }
    FlatTable t;
    t.scope = std::move(scope);
    t.strides.resize(t.scope.size());
    int64_t stride = 1;
    for (int i = int(t.scope.size()) - 1; i >= 0; --i) {
      t.strides[i] = stride;
      stride *= p.numChoices(t.scope[i]);
    }
    t.cost = std::move(cost);
    for (int m : t.scope)
      tablesOf[m].push_back(int(tables.size()));
    tables.push_back(std::move(t));
  };
  for (int i = 0; i < n; ++i) {
    if (p.numChoices(i) == 0 || p.numChoices(i) > 65535)
      return solution;
    std::vector<double> cost = p.nodeCost[i];
    if (lambda != 0)
      for (size_t c = 0; c < cost.size(); ++c)
        cost[c] += lambda * p.nodeMemory[i][c];
    add({i}, std::move(cost));
  }
  for (const AssignmentProblem::Edge &e : p.edges) {
    if (e.u < e.v) {
      add({e.u, e.v}, e.cost);
      continue;
    }
    int cu = p.numChoices(e.u), cv = p.numChoices(e.v);
    std::vector<double> t(e.cost.size());
    for (int a = 0; a < cu; ++a)
      for (int b = 0; b < cv; ++b)
        t[size_t(b) * cu + a] = e.cost[size_t(a) * cv + b];
    add({e.v, e.u}, std::move(t));
  }

  std::vector<Eliminated> records;
  records.reserve(order.size());
  std::vector<int> involved, scope, digit;
  std::vector<int64_t> offset, xStride;
  std::vector<std::vector<int64_t>> strideAt; // per view, per scope position
  for (int x : order) {
    involved.clear();
    scope.clear();
    for (int t : tablesOf[x])
      if (tables[t].alive) {
        involved.push_back(t);
        for (int m : tables[t].scope)
          if (m != x)
            scope.push_back(m);
      }
    std::sort(scope.begin(), scope.end());
    scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
    int64_t size = 1;
    for (int m : scope) {
      size *= p.numChoices(m);
      if (size > maxTableSize) {
        solution.exact = false; // refused: the order was planned elsewhere
        return solution;
      }
    }
    solution.width = std::max(solution.width, int(scope.size()));
    size_t views = involved.size();
    xStride.assign(views, 0);
    strideAt.assign(views, std::vector<int64_t>(scope.size(), 0));
    for (size_t v = 0; v < views; ++v) {
      const FlatTable &t = tables[involved[v]];
      for (size_t i = 0; i < t.scope.size(); ++i) {
        if (t.scope[i] == x) {
          xStride[v] = t.strides[i];
          continue;
        }
        size_t pos = std::lower_bound(scope.begin(), scope.end(), t.scope[i]) -
                     scope.begin();
        strideAt[v][pos] = t.strides[i];
      }
    }
    int k = p.numChoices(x);
    if (effort)
      *effort += double(size) * k * std::max<size_t>(1, views);
    Eliminated rec;
    rec.node = x;
    rec.scope = scope;
    rec.argmin.resize(size);
    std::vector<double> out(size);
    offset.assign(views, 0);
    digit.assign(scope.size(), 0);
    std::vector<const double *> base(views);
    for (size_t v = 0; v < views; ++v)
      base[v] = tables[involved[v]].cost.data();
    for (int64_t index = 0; index < size; ++index) {
      double best = kInf;
      int bestValue = 0;
      for (int value = 0; value < k; ++value) {
        double c = 0;
        for (size_t v = 0; v < views; ++v)
          c += base[v][offset[v] + value * xStride[v]];
        if (c < best) {
          best = c;
          bestValue = value;
        }
      }
      out[index] = best;
      rec.argmin[index] = uint16_t(bestValue);
      for (int i = int(scope.size()) - 1; i >= 0; --i) {
        int range = p.numChoices(scope[i]);
        if (++digit[i] < range) {
          for (size_t v = 0; v < views; ++v)
            offset[v] += strideAt[v][i];
          break;
        }
        digit[i] = 0;
        for (size_t v = 0; v < views; ++v)
          offset[v] -= int64_t(range - 1) * strideAt[v][i];
      }
    }
    for (int t : involved) {
      tables[t].alive = false;
      std::vector<double>().swap(tables[t].cost);
    }
    rec.strides.resize(scope.size());
    int64_t stride = 1;
    for (int i = int(scope.size()) - 1; i >= 0; --i) {
      rec.strides[i] = stride;
      stride *= p.numChoices(scope[i]);
    }
    add(scope, std::move(out));
    records.push_back(std::move(rec));
  }
  solution.solves = 1;
  solution.largestFront = 1;
  if (!(constant < kInf))
    return solution; // every assignment is forbidden: proven
  solution.feasible = true;
  solution.choice.assign(n, 0);
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    int64_t index = 0;
    for (size_t i = 0; i < it->scope.size(); ++i)
      index += int64_t(solution.choice[it->scope[i]]) * it->strides[i];
    solution.choice[it->node] = it->argmin[index];
  }
  auto [cost, memory] = p.evaluate(solution.choice);
  solution.cost = cost;
  solution.memory = memory;
  return solution;
}
