//===- Solver.cpp - min-cost layout assignment ------------------*- C++ -*-===//
//
// Bucket elimination with Pareto fronts, and conditioning on a cutset when
// the elimination would be too large.
//
// The problem: nodes with a finite set of choices, a cost and a memory amount
// per choice, pairwise edge costs, and a budget on the summed memory.
//
// Phase 0 (planning, before any table is built). Two greedy elimination
// orders are simulated on the graph (detail::planOrder): min-weight (the
// node whose neighbourhood table is smallest first) and weighted min-fill.
// The simulation knows every table the elimination will build: if one
// exceeds SolverOptions::maxTableSize or the work (the sum of table size x
// choices) exceeds maxWork, the exact elimination is not attempted and the
// fallback below answers instead, within milliseconds of the decision.
//
// Phase 1 (tables). Every node contributes a unary table, every edge a
// pairwise table. A table maps each assignment of its scope (the nodes it
// depends on) to a *front*: the (cost, memory) pairs of partial solutions
// that are not dominated (no other pair is at most as costly and at most as
// large). Without a budget every front holds one entry and this is the
// textbook min-sum elimination.
//
// Phase 2 (elimination). Nodes are eliminated one at a time in the order of
// phase 0: min-weight, or weighted min-fill when that at least halves the
// summed table sizes (or when only it fits the limits). Eliminating x
// multiplies every table that mentions x (Minkowski sums of fronts),
// minimises over x (union of fronts) and prunes dominated entries and
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
// front above SolverOptions::maxFrontSize, which is reported (with the
// budget-free optimum as the lower bound). Thinning keeps each front's
// least-memory entry, so an infeasible answer is proven even then.
//
// Two passes (solveExact). With a budget, the problem is first solved
// without it: every front then holds one entry, and plain min-sum needs no
// front arithmetic and one trace per table entry. If that optimum fits the
// budget it is the constrained optimum too (the budget only removes
// assignments); otherwise the constrained pass runs in the same order.
// Within a pass, the candidates of a table entry record their traces in a
// scratch arena and only the entries that survive pruning are copied into
// the arena; tables are freed once eliminated.
//
// Cost: for each eliminated node, (table size of its neighbourhood) x
// (choices) x (front sizes). Transformer graphs have small elimination width
// (the residual stream), so this is linear in the number of layers.
//
// Fallback (SolverFallback.cpp): a hub, a value read by every layer (a
// shared zero-init tensor, a causal mask), is in every separator; several
// hubs multiply every table by their choice counts. The fallback picks a
// cutset S, repeatedly the node whose removal saves the most simulated work
// (a hub first), until the rest R fits; then
//  - relaxation (lower bound): every node of S is split into one copy per
//    incident edge, each choosing independently, with the node's cost
//    divided among the copies plus Lagrange multipliers summing to zero
//    over a node's copies, and its memory on the first copy. Every original
//    assignment keeps its cost and memory there, so the relaxed optimum
//    within the budget is a lower bound; copies are leaves, so it is
//    eliminated in R's order. When the copies of its optimum agree, that
//    optimum is an assignment of the original and optimal. Subgradient
//    steps on the multipliers raise the bound;
//  - conditioning (upper bound): S fixed to values (each node of S at the
//    value cheapest against its neighbours' values in a relaxed optimum,
//    which with the rest of that optimum is already an assignment; then
//    coordinate descent, then branch and bound over S's values with the
//    relaxation of each partial fixing as its bound), the rest solved
//    exactly with S's edges folded into unary costs and the budget reduced
//    by S's memory;
//  - exhaustive conditioning: when S's choice counts multiply to at most
//    maxConditioningSolves (and their solves fit maxFallbackWork), every
//    assignment of S is solved, which is exact.
// The answer is the best assignment found, the best proven bound, and
// their relative gap; exact when they meet (to rounding), and infeasible
// with proof when the relaxation or a completed search finds nothing. The
// fallback's work is bounded by maxFallbackSolves and maxFallbackWork.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/Solver.h"
#include "SolverReduce.h"

#include <algorithm>
#include <cassert>
#include <limits>
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
  /// Solves `p` under `budget` (p.memoryBudget, or kInfinity to ignore
  /// memory: every front then holds one entry).
  Eliminator(const AssignmentProblem &p, const SolverOptions &o, double budget)
      : problem(p), options(o), budget(budget), adjacency(p.numNodes()),
        tablesOf(p.numNodes()) {}

  /// Solves in the given order (a permutation of the nodes, planned by
  /// detail::planOrder on the same graph).
  AssignmentSolution run(const std::vector<int> &order);
  /// Front entries combined so far (a machine-independent measure of the
  /// time taken).
  double effort = 0;
  /// Bound pruning (exact): with a feasible assignment of cost `upper`
  /// known and any multiplier lambda >= 0, an entry (c, m) of a table
  /// whose completions all cost at least
  ///   c + lambda m + sum over the other tables of min(c' + lambda m')
  ///     - lambda budget
  /// more than `upper` cannot beat it (a feasible completion has memory
  /// at most the budget, so the Lagrangian term is at most 0) and is
  /// dropped. An empty result then means the known assignment is optimal.
  double lambda = 0;
  double upper = AssignmentProblem::kInfinity;

private:
  int addTable(std::vector<int> scope, std::vector<Front> fronts);
  /// Entries of a table over `scope` (a vector or set of nodes), capped at
  /// maxTableSize + 1.
  template <typename Scope> int64_t tableSize(const Scope &scope) const;
  bool eliminate(int node);
  /// The pruned Minkowski sum of two fronts, with join traces.
  Front add(const Front &a, const Front &b);
  /// Records a trace node: in the scratch arena while a table entry is
  /// being built (ids -2, -3, ...), else in the arena.
  int record(const Trace &t);
  /// Copies the scratch traces an entry of a finished table entry uses into
  /// the arena and returns its arena id.
  int keep(int trace);

  const AssignmentProblem &problem;
  const SolverOptions &options;
  double budget;
  std::vector<Table> tables;
  std::vector<std::set<int>> adjacency;
  std::vector<std::vector<int>> tablesOf;
  std::vector<Front> finished; // fronts of tables with an empty scope
  std::vector<Trace> arena;
  /// Traces of the candidates of the table entry being built: most are
  /// dominated or discarded, so only the survivors' reach the arena.
  std::vector<Trace> scratch;
  std::vector<int> kept; // per scratch trace: its arena id, or -1
  bool building = false;
  bool thinned = false;
  /// Per table, and summed over the live tables and finished fronts: the
  /// least cost + lambda x memory of its entries (bound pruning).
  std::vector<double> tableMin;
  double liveMin = 0;
  double frontMin(const Front &f) const {
    double m = AssignmentProblem::kInfinity;
    for (const Entry &e : f)
      m = std::min(m, e.cost + lambda * e.memory);
    return m;
  }
  int width = 0;
  int largestFront = 0;
};

template <typename Scope>
int64_t Eliminator::tableSize(const Scope &scope) const {
  int64_t size = 1;
  for (int n : scope) {
    size *= problem.numChoices(n);
    if (size > options.maxTableSize)
      return options.maxTableSize + 1;
  }
  return size;
}

/// Entries of a table over `scope` (node ids into `choices`), capped at
/// cap + 1.
template <typename Scope>
int64_t cappedSize(const std::vector<int> &choices, const Scope &scope,
                   int64_t cap) {
  int64_t size = 1;
  for (int n : scope) {
    size *= choices[n];
    if (size > cap)
      return cap + 1;
  }
  return size;
}

/// Simulates one greedy order on a copy of the graph. Stops early (returns
/// false, plan.fits false) at the first table over `cap` or once the work
/// passes maxWork.
bool simulateOrder(const std::vector<int> &choices,
                   std::vector<std::set<int>> adj,
                   const std::vector<int> &groups, bool fill, int64_t cap,
                   double maxWork, detail::OrderPlan &plan) {
  // Within an elimination group (lowest first):
  //  - min-weight: the node whose neighbourhood table is smallest;
  //  - weighted min-fill: the node whose elimination adds the fewest table
  //    entries in new edges between its neighbours (the sum of
  //    |choices(a)| x |choices(b)| over neighbour pairs a, b not yet
  //    joined), then the smallest neighbourhood table. Min-weight greedily
  //    takes a cheap node that joins large neighbours; in a training step,
  //    whose backward reads forward values at the other end of the
  //    function, that led to 9-node scopes where min-fill keeps 7 or 8 and
  //    a tenth of the table entries.
  int n = int(choices.size());
  using Key = std::tuple<int, int64_t, int64_t, int>;
  // A hub (a value every layer reads: a scalar, a mask) has so many
  // neighbours that it goes last anyway; scoring its fill exactly would
  // cost the square of its degree at every change of its neighbourhood.
  constexpr size_t kHubDegree = 32;
  std::vector<int> scratch;
  auto key = [&](int x) {
    int group = x < int(groups.size()) ? groups[x] : 0;
    int64_t weight = cappedSize(choices, adj[x], cap) * choices[x];
    if (!fill)
      return Key(group, 0, weight, x);
    if (adj[x].size() > kHubDegree)
      return Key(group, std::numeric_limits<int64_t>::max(), weight, x);
    scratch.assign(adj[x].begin(), adj[x].end());
    int64_t added = 0;
    for (size_t i = 0; i < scratch.size(); ++i)
      for (size_t j = i + 1; j < scratch.size(); ++j)
        if (!adj[scratch[i]].count(scratch[j]))
          added += int64_t(choices[scratch[i]]) * choices[scratch[j]];
    return Key(group, added, weight, x);
  };
  std::set<Key> queue;
  std::vector<Key> keys(n);
  for (int i = 0; i < n; ++i) {
    keys[i] = key(i);
    queue.insert(keys[i]);
  }
  plan = {};
  plan.order.reserve(n);
  plan.contribution.assign(n, 0.0);
  std::vector<bool> done(n, false);
  std::vector<int> touched;
  std::vector<int> mark(n, -1);
  while (!queue.empty()) {
    int x = std::get<3>(*queue.begin());
    queue.erase(queue.begin());
    plan.order.push_back(x);
    done[x] = true;
    int64_t size = cappedSize(choices, adj[x], cap);
    double step = double(size) * choices[x];
    plan.work += step;
    plan.contribution[x] += step;
    for (int y : adj[x])
      plan.contribution[y] += step;
    if (size > plan.maxTable || plan.worstScope.empty()) {
      plan.maxTable = size;
      plan.worstScope.assign(adj[x].begin(), adj[x].end());
      plan.worstScope.push_back(x);
    }
    if (size > cap || plan.work > maxWork) {
      // Stopped: what is left would cost at least its nodes' current
      // neighbourhood tables, counted where the work was (a hub, in every
      // remaining neighbourhood, collects the most).
      for (int y = 0; y < n; ++y) {
        if (done[y])
          continue;
        double rest = double(cappedSize(choices, adj[y], cap)) * choices[y];
        plan.contribution[y] += rest;
        for (int z : adj[y])
          plan.contribution[z] += rest;
      }
      return false;
    }
    // Eliminating x joins its neighbours (as Eliminator::eliminate does).
    std::vector<int> neighbours(adj[x].begin(), adj[x].end());
    for (int a : neighbours) {
      adj[a].erase(x);
      for (int b : neighbours)
        if (a != b)
          adj[a].insert(b);
    }
    adj[x].clear();
    // Min-weight rescores the neighbours; the fill of a node also changes
    // when an edge appears between two of its neighbours, so min-fill also
    // rescores their neighbours (hubs' neighbours excepted).
    touched.clear();
    for (int m : neighbours) {
      if (mark[m] != x) {
        mark[m] = x;
        touched.push_back(m);
      }
      if (!fill || adj[m].size() > kHubDegree)
        continue;
      for (int k : adj[m])
        if (mark[k] != x) {
          mark[k] = x;
          touched.push_back(k);
        }
    }
    for (int m : touched) {
      if (done[m])
        continue;
      queue.erase(keys[m]);
      keys[m] = key(m);
      queue.insert(keys[m]);
    }
  }
  plan.fits = true;
  return true;
}

} // namespace

detail::OrderPlan detail::planOrder(const std::vector<int> &choices,
                                    const std::vector<std::set<int>> &adjacency,
                                    const std::vector<int> &groups,
                                    int64_t maxTableSize, double maxWork) {
  // Two greedy orders, simulated on the graph; the elimination follows the
  // one whose tables are smaller in all (min-weight unless weighted
  // min-fill at least halves the work: ties between equally good plans are
  // broken by the order, and min-weight is the historic one). An order
  // that does not fit the limits loses to one that does.
  OrderPlan byWeight, byFill;
  simulateOrder(choices, adjacency, groups, /*fill=*/false, maxTableSize,
                maxWork, byWeight);
  simulateOrder(choices, adjacency, groups, /*fill=*/true, maxTableSize,
                maxWork, byFill);
  if (byWeight.fits && byFill.fits)
    return byFill.work < 0.5 * byWeight.work ? byFill : byWeight;
  if (byWeight.fits)
    return byWeight;
  if (byFill.fits)
    return byFill;
  // Neither fits: the one that got further (the fallback picks from it).
  return std::make_pair(byWeight.order.size(), -byWeight.maxTable) >=
                 std::make_pair(byFill.order.size(), -byFill.maxTable)
             ? byWeight
             : byFill;
}

namespace {

int Eliminator::addTable(std::vector<int> scope, std::vector<Front> fronts) {
  if (scope.empty()) {
    liveMin += frontMin(fronts.front());
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
  if (upper != AssignmentProblem::kInfinity) {
    double least = AssignmentProblem::kInfinity;
    for (const Front &f : t.fronts)
      least = std::min(least, frontMin(f));
    tableMin.push_back(least);
    liveMin += least;
  }
  for (int n : t.scope)
    tablesOf[n].push_back(id);
  for (int a : t.scope)
    for (int b : t.scope)
      if (a != b)
        adjacency[a].insert(b);
  tables.push_back(std::move(t));
  return id;
}

int Eliminator::record(const Trace &t) {
  if (building) {
    scratch.push_back(t);
    kept.push_back(-1);
    return -1 - int(scratch.size());
  }
  arena.push_back(t);
  return int(arena.size()) - 1;
}

int Eliminator::keep(int trace) {
  if (trace >= -1)
    return trace; // nothing, or already in the arena
  int local = -2 - trace;
  if (kept[local] >= 0)
    return kept[local];
  Trace t = scratch[local];
  t.left = keep(t.left);
  t.right = keep(t.right);
  arena.push_back(t);
  kept[local] = int(arena.size()) - 1;
  return kept[local];
}

Front Eliminator::add(const Front &a, const Front &b) {
  effort += double(a.size()) * b.size();
  auto join = [&](int left, int right) {
    if (left == -1)
      return right;
    if (right == -1)
      return left;
    return record({-1, 0, left, right});
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
      if (memory > budget)
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
        if (memory > budget) {
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
  prune(sums, budget, options.maxFrontSize, thinned);
  Front out;
  out.reserve(sums.size());
  for (const Candidate &c : sums)
    out.push_back({c.cost, c.memory, join(a[c.a].trace, b[c.b].trace)});
  return out;
}

bool Eliminator::eliminate(int x) {
  if (budget != AssignmentProblem::kInfinity &&
      effort > options.maxParetoWork)
    return false; // out of work: the caller keeps the Lagrangian plan
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
  if (budget == AssignmentProblem::kInfinity) {
    // Without a budget every front holds at most one entry: plain min-sum,
    // with no front arithmetic and one trace per table entry. Ties go to
    // the lowest value, sums are taken in view order (as below).
    effort += double(size) * choicesX * std::max<size_t>(1, views.size());
    for (int64_t index = 0; index < size; ++index) {
      double bestCost = AssignmentProblem::kInfinity;
      int bestValue = -1;
      for (int value = 0; value < choicesX; ++value) {
        double cost = 0.0;
        bool feasible = true;
        for (const View &v : views) {
          int64_t i = int64_t(value) * v.xStride;
          for (auto [pos, stride] : v.scopeStrides)
            i += int64_t(assignment[pos]) * stride;
          const Front &f = v.table->fronts[i];
          if (f.empty()) {
            feasible = false;
            break;
          }
          cost += f.front().cost;
        }
        if (feasible && (bestValue < 0 || cost < bestCost)) {
          bestCost = cost;
          bestValue = value;
        }
      }
      if (bestValue >= 0) {
        int trace = -1;
        for (const View &v : views) {
          int64_t i = int64_t(bestValue) * v.xStride;
          for (auto [pos, stride] : v.scopeStrides)
            i += int64_t(assignment[pos]) * stride;
          int other = v.table->fronts[i].front().trace;
          if (trace == -1)
            trace = other;
          else if (other != -1)
            trace = record({-1, 0, trace, other});
        }
        fronts[index].push_back(
            {bestCost, 0.0, record({x, bestValue, trace, -1})});
        largestFront = std::max(largestFront, 1);
      }
      for (int i = int(scope.size()) - 1; i >= 0; --i) {
        if (++assignment[i] < problem.numChoices(scope[i]))
          break;
        assignment[i] = 0;
      }
    }
  } else {
    building = true;
    bool bounding = upper != AssignmentProblem::kInfinity;
    double rest = 0;
    if (bounding) {
      rest = liveMin;
      for (int t : involved)
        rest -= tableMin[t];
    }
    // Rounding in the running sums: keep entries within 1e-9 of the bound.
    double limit = upper + lambda * budget + 1e-9 * std::abs(upper);
    for (int64_t index = 0; index < size; ++index) {
      scratch.clear();
      kept.clear();
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
        for (Entry &e : acc)
          if (!bounding || e.cost + lambda * e.memory + rest <= limit)
            mine.push_back(
                {e.cost, e.memory, record({x, value, e.trace, -1})});
        // Union with the other values' fronts: a merge of sorted lists.
        Front merged(best.size() + mine.size());
        std::merge(best.begin(), best.end(), mine.begin(), mine.end(),
                   merged.begin(), byMemoryThenCost<Entry>);
        effort += double(merged.size());
        pruneSorted(merged, options.maxFrontSize, thinned);
        best = std::move(merged);
      }
      largestFront = std::max(largestFront, int(best.size()));
      for (Entry &e : best)
        e.trace = keep(e.trace);
      best.shrink_to_fit();
      fronts[index] = std::move(best);
      // Next assignment (mixed radix, last position fastest).
      for (int i = int(scope.size()) - 1; i >= 0; --i) {
        if (++assignment[i] < problem.numChoices(scope[i]))
          break;
        assignment[i] = 0;
      }
    }

    building = false;
  }
  for (int t : involved) {
    if (upper != AssignmentProblem::kInfinity)
      liveMin -= tableMin[t];
    tables[t].alive = false;
    // Decoding needs the arena only.
    std::vector<Front>().swap(tables[t].fronts);
  }
  for (int n : scope) {
    adjacency[n].erase(x);
  }
  adjacency[x].clear();
  addTable(scope, std::move(fronts)); // an empty scope: a finished front
  return true;
}

AssignmentSolution Eliminator::run(const std::vector<int> &order) {
  AssignmentSolution solution;
  int n = problem.numNodes();
  for (int i = 0; i < n; ++i)
    if (problem.numChoices(i) == 0)
      return solution; // a node with no choice: nothing is feasible
  // Without a budget memory plays no part: fronts collapse to one entry.
  bool budgeted = budget != AssignmentProblem::kInfinity;
  for (int i = 0; i < n; ++i) {
    std::vector<Front> fronts(problem.numChoices(i));
    for (int c = 0; c < problem.numChoices(i); ++c)
      if (problem.nodeCost[i][c] != AssignmentProblem::kInfinity &&
          problem.nodeMemory[i][c] <= budget)
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

  solution.solves = 1;
  for (int x : order)
    if (!eliminate(x)) {
      solution.exact = false; // refused: the order was planned elsewhere
      return solution;
    }

  // Combine the independent components' fronts.
  Front acc{{0.0, 0.0, -1}};
  for (const Front &f : finished)
    acc = add(acc, f);
  solution.width = width;
  solution.largestFront = largestFront;
  // Thinning keeps every front's least-memory entry (fronts are sorted by
  // memory and thinned evenly from the first), so each table entry keeps
  // the least memory any partial solution reaches: a thinned pass still
  // finds a feasible assignment whenever there is one, and "infeasible" is
  // proven either way.
  if (acc.empty())
    return solution;
  solution.exact = !thinned;
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

void detail::finishBounds(AssignmentSolution &s) {
  if (s.exact) {
    s.lowerBound = s.cost; // kInfinity when proven infeasible
    s.gap = 0;
    return;
  }
  s.lowerBound = std::min(s.lowerBound, s.cost);
  if (!s.feasible) {
    s.gap = AssignmentProblem::kInfinity;
    return;
  }
  s.gap =
      std::max(0.0, s.cost - s.lowerBound) / std::max(std::abs(s.cost), 1e-300);
}

namespace {

struct LagrangeSearch {
  /// The best plan within the budget found (feasible false: none).
  AssignmentSolution best;
  /// The best bound, and the multiplier that gave it.
  double lowerBound = -AssignmentProblem::kInfinity;
  double lambda = 0;
  int solves = 0;
};

/// Maximises the Lagrangian dual L(lambda) = min over assignments of
/// cost + lambda (memory - budget), lambda >= 0, with plain min-sum
/// solves: L is concave and piecewise linear, each solve gives its value
/// and a supporting line (the assignment's cost and memory). Multipliers
/// grow by 8 from 0.1 x cost / memory of the budget-free optimum `free`
/// until an assignment fits; then each step evaluates where the lines of
/// the bracketing assignments (one over the budget, one within) cross,
/// which is the dual optimum once no new line rises above them. Every
/// value is a lower bound on the constrained optimum; every assignment
/// within the budget is a plan. At most 4 x maxMinSumWork of work.
LagrangeSearch searchLagrangian(const AssignmentProblem &problem,
                                const SolverOptions &options,
                                const std::vector<int> &order,
                                const AssignmentSolution &free,
                                double *effort) {
  LagrangeSearch out;
  double budget = problem.memoryBudget;
  out.lowerBound = free.cost; // lambda = 0
  double work = 0, limit = 4 * options.maxMinSumWork;
  auto evaluate = [&](double lambda) {
    AssignmentSolution s = detail::solveMinSumInOrder(
        problem, order, options.maxTableSize, &work, lambda);
    ++out.solves;
    if (!s.feasible)
      return s;
    double bound = s.cost + lambda * (s.memory - budget);
    if (bound > out.lowerBound) {
      out.lowerBound = bound;
      out.lambda = lambda;
    }
    if (s.memory <= budget && (!out.best.feasible || s.cost < out.best.cost))
      out.best = s;
    return s;
  };
  auto closed = [&] {
    return out.best.feasible &&
           out.best.cost - out.lowerBound <= 1e-9 * std::abs(out.best.cost);
  };
  AssignmentSolution over = free, within;
  double lambda = 0.1 * std::max(std::abs(free.cost), 1e-300) /
                  std::max(free.memory, 1.0);
  for (int i = 0; i < 40 && work < limit; ++i, lambda *= 8) {
    AssignmentSolution s = evaluate(lambda);
    if (!s.feasible)
      return out;
    if (s.memory <= budget) {
      within = s;
      break;
    }
    over = s;
  }
  if (!within.feasible)
    return out;
  for (int i = 0; i < 40 && work < limit && !closed(); ++i) {
    double dm = over.memory - within.memory;
    if (dm <= 0)
      break;
    double cross = std::max(0.0, (within.cost - over.cost) / dm);
    double line = over.cost + cross * (over.memory - budget);
    AssignmentSolution s = evaluate(cross);
    if (!s.feasible)
      break;
    double value = s.cost + cross * (s.memory - budget);
    if (value >= line - 1e-12 * std::abs(line))
      break; // no line above the crossing: the dual optimum
    (s.memory <= budget ? within : over) = s;
  }
  if (effort)
    *effort += work;
  return out;
}

/// The constrained problem once the budget-free optimum `free` is known
/// not to fit: the Lagrangian search (min-sum solves in `lagrangeOrder`),
/// then, when `pareto` (`order` fits maxWork), the elimination with Pareto
/// fronts in `order`, pruned by the best multiplier and plan. Without
/// `pareto` the Lagrangian's best plan is returned with its gap.
AssignmentSolution solveBudgeted(const AssignmentProblem &problem,
                                 const SolverOptions &options,
                                 const std::vector<int> &lagrangeOrder,
                                 const std::vector<int> &order,
                                 const AssignmentSolution &free, bool pareto,
                                 double *effort) {
  LagrangeSearch lagrange =
      searchLagrangian(problem, options, lagrangeOrder, free, effort);
  double lowerBound = std::max(free.cost, lagrange.lowerBound);
  if (lagrange.best.feasible &&
      (!pareto || lagrange.best.cost - lowerBound <=
                      1e-9 * std::abs(lagrange.best.cost))) {
    AssignmentSolution s = lagrange.best;
    s.exact = lagrange.best.cost - lowerBound <=
              1e-9 * std::abs(lagrange.best.cost);
    s.lowerBound = lowerBound;
    s.solves = 1 + lagrange.solves;
    s.width = free.width;
    detail::finishBounds(s);
    return s;
  }
  if (!pareto) {
    AssignmentSolution none; // no plan found, none proven impossible
    none.exact = false;
    none.solves = 1 + lagrange.solves;
    none.lowerBound = lowerBound;
    detail::finishBounds(none);
    return none;
  }
  Eliminator second(problem, options, problem.memoryBudget);
  if (lagrange.best.feasible) {
    second.lambda = lagrange.lambda;
    second.upper = lagrange.best.cost;
  }
  AssignmentSolution bounded = second.run(order);
  if (effort)
    *effort += second.effort;
  if (lagrange.best.feasible &&
      (!bounded.feasible || lagrange.best.cost <= bounded.cost)) {
    // Nothing beat the Lagrangian plan: optimal when the pass was exact
    // (every entry it dropped cost more than that plan).
    bool exact = bounded.exact;
    int width = bounded.width, front = bounded.largestFront;
    bounded = lagrange.best;
    bounded.exact = exact;
    bounded.width = width;
    bounded.largestFront = front;
  }
  bounded.solves = 2 + lagrange.solves;
  bounded.width = std::max(bounded.width, free.width);
  bounded.lowerBound = lowerBound;
  detail::finishBounds(bounded);
  return bounded;
}

} // namespace

AssignmentSolution detail::solveInOrder(const AssignmentProblem &problem,
                                        const SolverOptions &options,
                                        const std::vector<int> &order,
                                        double *effort) {
  double budget = problem.memoryBudget;
  AssignmentSolution free =
      solveMinSumInOrder(problem, order, options.maxTableSize, effort);
  // Without a budget nothing is thinned: an answer is exact, and its cost
  // is a lower bound under any budget.
  free.lowerBound = free.cost;
  if (budget == AssignmentProblem::kInfinity) {
    finishBounds(free);
    return free;
  }
  // Without the budget, fronts hold one entry each and the elimination is
  // plain min-sum. If that optimum fits the budget it is also the optimum
  // under it (the budget only removes assignments); a training step's
  // optimum usually fits (sharding pays for itself through the gradient
  // and optimizer traffic), a forward graph's does not (replicated weights
  // need no communication at all). An infeasible or abandoned first pass
  // is final: the budget cannot add assignments.
  if (!free.feasible || (free.exact && free.memory <= budget)) {
    finishBounds(free);
    return free;
  }
  return solveBudgeted(problem, options, order, order, free, /*pareto=*/true,
                       effort);
}

namespace {

/// The choice counts and adjacency of `p`'s graph, as planOrder reads them.
std::pair<std::vector<int>, std::vector<std::set<int>>>
graphOf(const AssignmentProblem &p) {
  int n = p.numNodes();
  std::vector<int> choices(n);
  for (int i = 0; i < n; ++i)
    choices[i] = p.numChoices(i);
  std::vector<std::set<int>> adjacency(n);
  for (const AssignmentProblem::Edge &e : p.edges) {
    adjacency[e.u].insert(e.v);
    adjacency[e.v].insert(e.u);
  }
  return {std::move(choices), std::move(adjacency)};
}

/// Plans the order on `p` and eliminates in it, or falls back to
/// conditioning when the order does not fit.
AssignmentSolution solvePlanned(const AssignmentProblem &p,
                                const SolverOptions &options,
                                const std::vector<int> &groups) {
  auto [choices, adjacency] = graphOf(p);
  SolverOptions o = options;
  o.eliminationGroup = groups;
  // Decided before any table is built: the simulated order tells the size
  // of every table the elimination would build.
  detail::OrderPlan plan = detail::planOrder(choices, adjacency, groups,
                                             o.maxTableSize, o.maxWork);
  if (plan.fits)
    return detail::solveInOrder(p, o, plan.order);
  // Hubs (values read across all layers) or plain width: condition on a
  // cutset instead (SolverFallback.cpp).
  return detail::solveByConditioning(p, o, plan);
}

} // namespace

AssignmentSolution mlir::tp::solveExact(const AssignmentProblem &problem,
                                        const SolverOptions &options) {
  int n = problem.numNodes();
  for (int i = 0; i < n; ++i)
    if (problem.numChoices(i) == 0) {
      AssignmentSolution none; // a node with no choice: nothing is feasible
      detail::finishBounds(none);
      return none;
    }
  if (!options.reduce)
    return solvePlanned(problem, options, options.eliminationGroup);
  double budget = problem.memoryBudget;

  // Pass 1: plain min-sum without the budget, on the problem reduced by
  // dominance that ignores memory (which prunes the most). Exact when its
  // optimum fits the budget: the budget only removes assignments.
  AssignmentProblem unbounded = problem;
  unbounded.memoryBudget = AssignmentProblem::kInfinity;
  detail::ProblemReduction red =
      detail::reduceProblem(unbounded, false, options.eliminationGroup);
  if (red.infeasible) {
    AssignmentSolution none; // proven: a node has no usable choice
    none.prunedChoices = red.prunedChoices;
    detail::finishBounds(none);
    return none;
  }
  auto [choices, adjacency] = graphOf(red.problem);
  detail::OrderPlan plan =
      detail::planOrder(choices, adjacency, red.groups, options.maxTableSize,
                        options.maxMinSumWork);
  AssignmentSolution free;
  bool freeExact = false;
  if (plan.fits) {
    free = detail::expandSolution(
        problem, red,
        detail::solveMinSumInOrder(red.problem, plan.order,
                                   options.maxTableSize));
    free.prunedChoices = red.prunedChoices;
    detail::finishBounds(free);
    if (!free.feasible || free.memory <= budget)
      return free; // proven infeasible, or optimal (and within the budget)
    freeExact = true;
  } else if (budget == AssignmentProblem::kInfinity) {
    // Too wide for the elimination: condition on a cutset (Solver.cpp's
    // fallback) on the reduced problem.
    AssignmentSolution s = detail::expandSolution(
        problem, red, solvePlanned(red.problem, options, red.groups));
    s.prunedChoices = red.prunedChoices;
    detail::finishBounds(s);
    return s;
  }

  // Pass 2: the budget binds; dominance now respects memory. The
  // Lagrangian search needs only min-sum orders; the Pareto pass the
  // tighter limit; without either, the conditioning fallback.
  int pruned = 0;
  AssignmentSolution bounded;
  detail::ProblemReduction red1 =
      detail::reduceProblem(problem, true, options.eliminationGroup);
  pruned = red1.prunedChoices;
  if (red1.infeasible || red1.problem.memoryBudget < 0) {
    detail::finishBounds(bounded); // proven infeasible
  } else {
    const AssignmentProblem &p1 = red1.problem;
    auto [choices1, adjacency1] = graphOf(p1);
    detail::OrderPlan minSumPlan =
        detail::planOrder(choices1, adjacency1, red1.groups,
                          options.maxTableSize, options.maxMinSumWork);
    AssignmentSolution reduced;
    bool solved = false;
    if (minSumPlan.fits) {
      AssignmentSolution free1 = detail::solveMinSumInOrder(
          p1, minSumPlan.order, options.maxTableSize);
      free1.lowerBound = free1.cost;
      if (!free1.feasible || free1.memory <= p1.memoryBudget) {
        reduced = free1; // proven infeasible, or optimal within the budget
        solved = true;
      } else {
        detail::OrderPlan paretoPlan =
            detail::planOrder(choices1, adjacency1, red1.groups,
                              options.maxTableSize, options.maxWork);
        reduced = solveBudgeted(p1, options, minSumPlan.order,
                                paretoPlan.order, free1, paretoPlan.fits,
                                nullptr);
        solved = reduced.feasible || reduced.exact;
      }
    }
    if (!solved) {
      SolverOptions o = options;
      reduced = solvePlanned(p1, o, red1.groups);
    }
    bounded = detail::expandSolution(problem, red1, reduced);
    detail::finishBounds(bounded);
  }
  bounded.prunedChoices = pruned;
  if (freeExact) {
    bounded.solves += free.solves;
    bounded.width = std::max(bounded.width, free.width);
    if (!bounded.exact)
      bounded.lowerBound = std::max(bounded.lowerBound, free.cost);
  }
  detail::finishBounds(bounded);
  return bounded;
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
  detail::finishBounds(best);
  return best;
}
