//===- Solver.cpp - exact min-cost layout assignment ------------*- C++ -*-===//
//
// Bucket elimination with Pareto fronts.
//
// The problem: nodes with a finite set of choices, a cost and a memory amount
// per choice, pairwise edge costs, and a budget on the summed memory.
//
// Phase 1 (tables). Every node contributes a unary table, every edge a
// pairwise table. A table maps each assignment of its scope (the nodes it
// depends on) to a *front*: the (cost, memory) pairs of partial solutions
// that are not dominated (no other pair is at most as costly and at most as
// large). Without a budget every front holds one entry and this is the
// textbook min-sum elimination.
//
// Phase 2 (elimination). Nodes are eliminated one at a time, the node whose
// neighbourhood table would be smallest first (min-weight greedy ordering).
// Eliminating x multiplies every table that mentions x (Minkowski sums of
// fronts), minimises over x (union of fronts) and prunes dominated entries and
// entries over the budget. The new table depends on x's neighbours only.
// Every surviving entry records, in a trace arena, x's value and the entries
// it was built from.
//
// Phase 3 (decoding). After the last elimination one front remains; its
// cheapest entry within the budget is optimal, and following its trace back
// yields the choice of every node.
//
// Exactness: min distributes over sums (elimination is exact for min-sum),
// and if partial solution A dominates B over the same eliminated set, any
// completion of B is a completion of A that costs no more and uses no more
// memory, so dropping B loses nothing. The only inexact step is thinning a
// front above SolverOptions::maxFrontSize, which is reported.
//
// Cost: for each eliminated node, (table size of its neighbourhood) x
// (choices) x (front sizes). Transformer graphs have small elimination width
// (the residual stream), so this is linear in the number of layers.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/Solver.h"

#include <algorithm>
#include <cassert>
#include <set>
#include <tuple>

using namespace mlir::tp;

int AssignmentProblem::addNode(std::vector<double> cost,
                               std::vector<double> memory) {
  if (memory.empty())
    memory.assign(cost.size(), 0.0);
  assert(memory.size() == cost.size() && "one memory amount per choice");
  nodeCost.push_back(std::move(cost));
  nodeMemory.push_back(std::move(memory));
  return numNodes() - 1;
}

void AssignmentProblem::addEdge(int u, int v, std::vector<double> cost) {
  assert(u != v && "an edge joins two different nodes");
  assert(cost.size() == size_t(numChoices(u)) * numChoices(v));
  edges.push_back({u, v, std::move(cost)});
}

std::pair<double, double>
AssignmentProblem::evaluate(const std::vector<int> &choice) const {
  double cost = 0, memory = 0;
  for (int n = 0; n < numNodes(); ++n) {
    cost += nodeCost[n][choice[n]];
    memory += nodeMemory[n][choice[n]];
  }
  for (const Edge &e : edges)
    cost += e.cost[size_t(choice[e.u]) * numChoices(e.v) + choice[e.v]];
  return {cost, memory};
}

namespace {

struct Entry {
  double cost;
  double memory;
  int trace; // -1: a leaf (an input table), else an index into the arena
};
using Front = std::vector<Entry>;

struct Table {
  std::vector<int> scope;       // sorted node ids
  std::vector<int64_t> strides; // per scope position
  std::vector<Front> fronts;    // indexed by the mixed-radix assignment
  bool alive = true;
};

/// A node of the trace arena: either "node = value" on top of `left` (an
/// elimination record), or a join of two partial solutions `left`, `right`.
struct Trace {
  int node; // -1 for a join
  int value;
  int left;
  int right;
};

/// A candidate of a Minkowski sum before it is materialised: which entries
/// of the two fronts it adds up.
struct Candidate {
  double cost;
  double memory;
  int a;
  int b;
};

bool lessOrEqual(double a, double b) { return a <= b + 1e-15 * std::abs(b); }

/// Removes dominated entries and entries over the budget; keeps the
/// cheapest entry per memory level. Sets `thinned` when capping.
/// Keeps the non-dominated entries of a front sorted by (memory, cost),
/// caps it at maxSize (setting `thinned`).
template <typename T>
void pruneSorted(std::vector<T> &front, int maxSize, bool &thinned) {
  size_t kept = 0;
  for (size_t i = 0; i < front.size(); ++i) {
    if (kept && lessOrEqual(front[kept - 1].cost, front[i].cost))
      continue; // dominated: no cheaper, and no smaller
    front[kept++] = front[i];
  }
  front.resize(kept);
  if (int(front.size()) > maxSize) {
    thinned = true;
    std::vector<T> thin;
    for (int i = 0; i < maxSize; ++i)
      thin.push_back(front[size_t(i) * (front.size() - 1) /
                           std::max(1, maxSize - 1)]);
    front = std::move(thin);
  }
}

template <typename T> bool byMemoryThenCost(const T &a, const T &b) {
  if (a.memory != b.memory)
    return a.memory < b.memory;
  return a.cost < b.cost;
}

/// Removes entries over the budget or infinitely costly, sorts and prunes.
template <typename T>
void prune(std::vector<T> &front, double budget, int maxSize, bool &thinned) {
  front.erase(std::remove_if(front.begin(), front.end(),
                             [&](const T &e) {
                               return e.memory > budget ||
                                      e.cost == AssignmentProblem::kInfinity;
                             }),
              front.end());
  if (front.size() <= 1)
    return;
  std::sort(front.begin(), front.end(), byMemoryThenCost<T>);
  pruneSorted(front, maxSize, thinned);
}

class Eliminator {
public:
  Eliminator(const AssignmentProblem &p, const SolverOptions &o)
      : problem(p), options(o), adjacency(p.numNodes()),
        tablesOf(p.numNodes()) {}

  AssignmentSolution run();

private:
  int addTable(std::vector<int> scope, std::vector<Front> fronts);
  int64_t tableSize(const std::vector<int> &scope) const;
  bool eliminate(int node);
  /// The pruned Minkowski sum of two fronts, with join traces.
  Front add(const Front &a, const Front &b);

  const AssignmentProblem &problem;
  const SolverOptions &options;
  std::vector<Table> tables;
  std::vector<std::set<int>> adjacency;
  std::vector<std::vector<int>> tablesOf;
  std::vector<Front> finished; // fronts of tables with an empty scope
  std::vector<Trace> arena;
  bool thinned = false;
  int width = 0;
  int largestFront = 0;
};

int64_t Eliminator::tableSize(const std::vector<int> &scope) const {
  int64_t size = 1;
  for (int n : scope) {
    size *= problem.numChoices(n);
    if (size > options.maxTableSize)
      return options.maxTableSize + 1;
  }
  return size;
}

int Eliminator::addTable(std::vector<int> scope, std::vector<Front> fronts) {
  if (scope.empty()) {
    finished.push_back(std::move(fronts.front()));
    return -1;
  }
  Table t;
  t.scope = std::move(scope);
  t.strides.resize(t.scope.size());
  int64_t stride = 1;
  for (int i = int(t.scope.size()) - 1; i >= 0; --i) {
    t.strides[i] = stride;
    stride *= problem.numChoices(t.scope[i]);
  }
  t.fronts = std::move(fronts);
  int id = int(tables.size());
  for (int n : t.scope)
    tablesOf[n].push_back(id);
  for (int a : t.scope)
    for (int b : t.scope)
      if (a != b)
        adjacency[a].insert(b);
  tables.push_back(std::move(t));
  return id;
}

Front Eliminator::add(const Front &a, const Front &b) {
  auto join = [&](int left, int right) {
    if (left < 0)
      return right;
    if (right < 0)
      return left;
    arena.push_back({-1, 0, left, right});
    return int(arena.size()) - 1;
  };
  // Fronts are kept sorted and pruned, so adding a single entry to one
  // keeps it sorted and pruned (the usual case).
  if (a.size() == 1 || b.size() == 1) {
    const Front &many = a.size() == 1 ? b : a;
    const Entry &one = a.size() == 1 ? a.front() : b.front();
    Front out;
    out.reserve(many.size());
    for (const Entry &e : many) {
      double memory = e.memory + one.memory;
      if (memory > problem.memoryBudget)
        break; // sorted by memory
      out.push_back({e.cost + one.cost, memory,
                     a.size() == 1 ? join(one.trace, e.trace)
                                   : join(e.trace, one.trace)});
    }
    return out;
  }
  // A small front added to a large one: merge the shifted copies of the
  // large front (each sorted by memory) and prune as entries come out.
  const Front &big = a.size() >= b.size() ? a : b;
  const Front &small = a.size() >= b.size() ? b : a;
  if (small.size() <= 16) {
    std::vector<size_t> at(small.size(), 0);
    Front out;
    while (true) {
      int pick = -1;
      double pickMemory = 0, pickCost = 0;
      for (size_t j = 0; j < small.size(); ++j) {
        if (at[j] >= big.size())
          continue;
        double memory = big[at[j]].memory + small[j].memory;
        double cost = big[at[j]].cost + small[j].cost;
        if (memory > problem.memoryBudget) {
          at[j] = big.size(); // sorted by memory: the rest is over too
          continue;
        }
        if (pick < 0 || memory < pickMemory ||
            (memory == pickMemory && cost < pickCost)) {
          pick = int(j);
          pickMemory = memory;
          pickCost = cost;
        }
      }
      if (pick < 0)
        break;
      const Entry &e = big[at[pick]++];
      if (!out.empty() && lessOrEqual(out.back().cost, pickCost))
        continue; // dominated
      const Entry &f = small[pick];
      out.push_back({pickCost, pickMemory,
                     &big == &a ? join(e.trace, f.trace)
                                : join(f.trace, e.trace)});
    }
    if (int(out.size()) > options.maxFrontSize)
      pruneSorted(out, options.maxFrontSize, thinned);
    return out;
  }
  std::vector<Candidate> sums;
  sums.reserve(a.size() * b.size());
  for (int i = 0, e = int(a.size()); i < e; ++i)
    for (int j = 0, f = int(b.size()); j < f; ++j)
      sums.push_back({a[i].cost + b[j].cost, a[i].memory + b[j].memory, i, j});
  prune(sums, problem.memoryBudget, options.maxFrontSize, thinned);
  Front out;
  out.reserve(sums.size());
  for (const Candidate &c : sums)
    out.push_back({c.cost, c.memory, join(a[c.a].trace, b[c.b].trace)});
  return out;
}

bool Eliminator::eliminate(int x) {
  std::vector<int> involved;
  for (int t : tablesOf[x])
    if (tables[t].alive)
      involved.push_back(t);

  std::vector<int> scope(adjacency[x].begin(), adjacency[x].end());
  int64_t size = tableSize(scope);
  if (size > options.maxTableSize)
    return false;
  width = std::max(width, int(scope.size()));

  // For each involved table: where x and each new-scope node sit in it.
  struct View {
    const Table *table;
    int64_t xStride;
    std::vector<std::pair<int, int64_t>> scopeStrides; // (pos in scope, stride)
  };
  std::vector<View> views;
  for (int t : involved) {
    View v{&tables[t], 0, {}};
    for (size_t i = 0; i < tables[t].scope.size(); ++i) {
      int n = tables[t].scope[i];
      if (n == x) {
        v.xStride = tables[t].strides[i];
        continue;
      }
      int pos = int(std::lower_bound(scope.begin(), scope.end(), n) -
                    scope.begin());
      v.scopeStrides.push_back({pos, tables[t].strides[i]});
    }
    views.push_back(std::move(v));
  }

  std::vector<Front> fronts(size);
  std::vector<int> assignment(scope.size(), 0);
  int choicesX = problem.numChoices(x);
  for (int64_t index = 0; index < size; ++index) {
    Front best;
    for (int value = 0; value < choicesX; ++value) {
      Front acc{{0.0, 0.0, -1}};
      for (const View &v : views) {
        int64_t at = int64_t(value) * v.xStride;
        for (auto [pos, stride] : v.scopeStrides)
          at += int64_t(assignment[pos]) * stride;
        acc = add(acc, v.table->fronts[at]);
        if (acc.empty())
          break;
      }
      Front mine;
      mine.reserve(acc.size());
      for (Entry &e : acc) {
        arena.push_back({x, value, e.trace, -1});
        mine.push_back({e.cost, e.memory, int(arena.size()) - 1});
      }
      // Union with the other values' fronts: a merge of sorted lists.
      Front merged(best.size() + mine.size());
      std::merge(best.begin(), best.end(), mine.begin(), mine.end(),
                 merged.begin(), byMemoryThenCost<Entry>);
      pruneSorted(merged, options.maxFrontSize, thinned);
      best = std::move(merged);
    }
    largestFront = std::max(largestFront, int(best.size()));
    fronts[index] = std::move(best);
    // Next assignment (mixed radix, last position fastest).
    for (int i = int(scope.size()) - 1; i >= 0; --i) {
      if (++assignment[i] < problem.numChoices(scope[i]))
        break;
      assignment[i] = 0;
    }
  }

  for (int t : involved)
    tables[t].alive = false;
  for (int n : scope) {
    adjacency[n].erase(x);
  }
  adjacency[x].clear();
  if (scope.empty()) {
    finished.push_back(std::move(fronts.front()));
  } else {
    addTable(scope, std::move(fronts));
  }
  return true;
}

AssignmentSolution Eliminator::run() {
  AssignmentSolution solution;
  int n = problem.numNodes();
  for (int i = 0; i < n; ++i)
    if (problem.numChoices(i) == 0)
      return solution; // a node with no choice: nothing is feasible
  // Without a budget memory plays no part: fronts collapse to one entry.
  bool budgeted = problem.memoryBudget != AssignmentProblem::kInfinity;
  for (int i = 0; i < n; ++i) {
    std::vector<Front> fronts(problem.numChoices(i));
    for (int c = 0; c < problem.numChoices(i); ++c)
      if (problem.nodeCost[i][c] != AssignmentProblem::kInfinity &&
          problem.nodeMemory[i][c] <= problem.memoryBudget)
        fronts[c].push_back({problem.nodeCost[i][c],
                             budgeted ? problem.nodeMemory[i][c] : 0.0, -1});
    addTable({i}, std::move(fronts));
  }
  for (const AssignmentProblem::Edge &e : problem.edges) {
    int u = std::min(e.u, e.v), v = std::max(e.u, e.v);
    int cu = problem.numChoices(u), cv = problem.numChoices(v);
    std::vector<Front> fronts(size_t(cu) * cv);
    for (int a = 0; a < cu; ++a)
      for (int b = 0; b < cv; ++b) {
        int ce = e.u == u ? a : b, cf = e.u == u ? b : a;
        double c = e.cost[size_t(ce) * problem.numChoices(e.v) + cf];
        if (c != AssignmentProblem::kInfinity)
          fronts[size_t(a) * cv + b].push_back({c, 0.0, -1});
      }
    addTable({u, v}, std::move(fronts));
  }

  // Min-weight greedy order: the node whose neighbourhood table is smallest.
  // Within an elimination group (lowest first), the node whose
  // neighbourhood table is smallest goes first.
  std::set<std::tuple<int, int64_t, int>> queue;
  std::vector<std::tuple<int, int64_t, int>> key(n);
  auto weight = [&](int x) {
    std::vector<int> scope(adjacency[x].begin(), adjacency[x].end());
    int group = x < int(options.eliminationGroup.size())
                    ? options.eliminationGroup[x]
                    : 0;
    return std::make_tuple(group, tableSize(scope) * problem.numChoices(x), x);
  };
  for (int i = 0; i < n; ++i) {
    key[i] = weight(i);
    queue.insert(key[i]);
  }
  std::vector<bool> done(n, false);
  while (!queue.empty()) {
    int x = std::get<2>(*queue.begin());
    queue.erase(queue.begin());
    std::vector<int> neighbours(adjacency[x].begin(), adjacency[x].end());
    if (!eliminate(x)) {
      solution.exact = false;
      return solution;
    }
    done[x] = true;
    for (int m : neighbours) {
      if (done[m])
        continue;
      queue.erase(key[m]);
      key[m] = weight(m);
      queue.insert(key[m]);
    }
  }

  // Combine the independent components' fronts.
  Front acc{{0.0, 0.0, -1}};
  for (const Front &f : finished)
    acc = add(acc, f);
  solution.exact = !thinned;
  solution.width = width;
  solution.largestFront = largestFront;
  if (acc.empty())
    return solution;
  const Entry *best = &acc.front();
  for (const Entry &e : acc)
    if (e.cost < best->cost)
      best = &e;

  solution.feasible = true;
  solution.choice.assign(n, 0);
  std::vector<int> stack;
  if (best->trace >= 0)
    stack.push_back(best->trace);
  while (!stack.empty()) {
    const Trace &t = arena[stack.back()];
    stack.pop_back();
    if (t.node >= 0)
      solution.choice[t.node] = t.value;
    if (t.left >= 0)
      stack.push_back(t.left);
    if (t.right >= 0)
      stack.push_back(t.right);
  }
  auto [cost, memory] = problem.evaluate(solution.choice);
  solution.cost = cost;
  solution.memory = memory;
  return solution;
}

} // namespace

AssignmentSolution mlir::tp::solveExact(const AssignmentProblem &problem,
                                        const SolverOptions &options) {
  return Eliminator(problem, options).run();
}

AssignmentSolution mlir::tp::solveBruteForce(const AssignmentProblem &problem) {
  AssignmentSolution best;
  int n = problem.numNodes();
  std::vector<int> choice(n, 0);
  for (int i = 0; i < n; ++i)
    if (problem.numChoices(i) == 0)
      return best;
  while (true) {
    auto [cost, memory] = problem.evaluate(choice);
    if (cost != AssignmentProblem::kInfinity &&
        memory <= problem.memoryBudget && cost < best.cost) {
      best.feasible = true;
      best.cost = cost;
      best.memory = memory;
      best.choice = choice;
    }
    int i = n - 1;
    for (; i >= 0; --i) {
      if (++choice[i] < problem.numChoices(i))
        break;
      choice[i] = 0;
    }
    if (i < 0)
      break;
  }
  return best;
}
