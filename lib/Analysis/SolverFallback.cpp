//===- SolverFallback.cpp - cutset conditioning with bounds -----*- C++ -*-===//
//
// The fallback of solveExact when bucket elimination of the whole problem
// would build a table over SolverOptions::maxTableSize or do more than
// maxWork (the method is summarised at the top of Solver.cpp).
//
//  1. Cutset (pickCutset). From the order simulated on the whole graph,
//     take out the node whose removal saves the most simulated work (its
//     share of the work times 1 - 1/choices, among the first oversized
//     table's scope when there is one): a hub is in every table. Repeat
//     until the rest fits the exact solver's limits, then put back every
//     picked node the rest does not need. If S's assignments are few enough
//     to solve them all (maxConditioningSolves, maxFallbackWork), stop.
//     Else keep taking nodes out until one solve of the rest simulates to
//     maxFallbackWork / 64, and then while a node halves it (more hubs):
//     the search below wants many cheap solves. S is the picked set, R the
//     rest; R's order is planned once.
//  2. Subproblems (solve). Every node of S is either *fixed* to a value (its
//     edges become unary costs on its neighbours or constants, its cost and
//     memory constants, the budget shrinks by its memory) or *split* into
//     one copy per incident edge, each copy choosing on its own. A copy
//     pays the node cost divided by the number of copies plus a Lagrange
//     multiplier lambda(copy, value), the multipliers summing to zero over
//     a node's copies for each value; the first copy carries the node's
//     memory. Every assignment of the original (all copies equal) keeps its
//     cost and memory, so a subproblem's optimum bounds from below every
//     completion of its fixed values, and when all copies of that optimum
//     agree it is an assignment of the original, optimal for those values.
//     Copies are leaves (or pairs): the ones without memory are eliminated
//     while the subproblem is built (their least cost per value of the
//     other end becomes a unary cost there), the others first; then R in
//     its planned order, so every subproblem fits.
//  3. Search (run). The relaxation with all of S split settles infeasible
//     problems (none of its assignments is feasible) and agreeing optima.
//     If S is small, every assignment of S is solved: exact. Else
//     subgradient steps on the multipliers raise the lower bound. Every
//     relaxed optimum is *repaired* into an assignment (each split node at
//     the value cheapest against its neighbours' values there, finite
//     against the split nodes repaired before it; then the nodes still
//     paying an infinite edge move to their cheapest value against their
//     neighbours', iterated conditional modes: an upper bound without a
//     solve), and for one that raised the bound those
//     values of S are solved with S fixed; coordinate descent on S's values
//     improves the best one; then depth-first branch and bound over S's
//     values (children cheapest first against the parent's relaxed
//     optimum, each bounded by its own relaxation) while maxFallbackSolves
//     and maxFallbackWork last; if that ends without an assignment (and
//     without proving there is none) it runs again, once, with
//     kRescueFactor times the budget. A subtree left unexplored
//     keeps its parent's bound, so the bound reported is always valid: the
//     answer is exact when it meets the best cost, and infeasibility is
//     proven when a completed search finds nothing.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/Solver.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir::tp;
using detail::OrderPlan;

namespace {

constexpr double kInf = AssignmentProblem::kInfinity;
/// When the search ends without an assignment and without proving that
/// none exists, it runs again once with this many times its budget (the
/// GPT-2 training step of issue 27 on dp=2 x tp=2 without data pins: 48
/// solves, 0.7 s, where 11 found nothing).
constexpr int kRescueFactor = 16;

/// An upper and a lower bound that agree up to rounding (sums taken in
/// different orders, multipliers that cancel).
bool closes(double upper, double lower) {
  if (upper == kInf)
    return lower == kInf;
  if (lower >= upper)
    return true;
  return upper - lower <=
         1e-10 * std::max({std::abs(upper), std::abs(lower), 1e-300});
}

class Conditioner {
public:
  Conditioner(const AssignmentProblem &p, const SolverOptions &o);
  AssignmentSolution run(const OrderPlan &whole);

private:
  /// One subproblem's answer, in the original problem's terms.
  struct Sub {
    bool feasible = false;
    /// The subproblem's optimum plus the fixed nodes' constants (for a
    /// relaxation, its relaxed cost).
    double cost = kInf;
    /// A proven lower bound on every completion of the fixed values
    /// (kInfinity: none is feasible; -kInfinity: nothing is known, an
    /// elimination was refused, which the planned orders rule out).
    double lowerBound = kInf;
    /// The eliminations proved their optimum (no front was thinned).
    bool exact = true;
    /// Per node: R's and the fixed nodes' values; a split node's first
    /// copy.
    std::vector<int> choice;
    /// Per node of S: its copies' values (empty when fixed).
    std::vector<std::vector<int>> copies;
  };

  /// The order planned for the graph without the `removed` nodes, in the
  /// indices of `rest` (filled with the kept nodes).
  OrderPlan planWithout(const std::vector<bool> &removed,
                        std::vector<int> &rest) const;
  void pickCutset(const OrderPlan &whole);
  /// Room for one more solve, expected to cost as much as the dearest so
  /// far.
  bool budgetLeft() const {
    return solves < options.maxFallbackSolves &&
           effort + dearest <= options.maxFallbackWork;
  }
  /// Solves with S[k] fixed to fixed[k] (or split where -1).
  Sub solve(const std::vector<int> &fixed);
  /// solve() with every node of S fixed, cached.
  const Sub &leaf(const std::vector<int> &fixed);
  /// Whether every split node's copies agree in `r` (then r.choice is an
  /// assignment of the original problem).
  bool agree(const Sub &r) const;
  /// The usable values of S[k] (split in r), best first: by the cost of
  /// r's assignment with all of S[k]'s copies set to the value (its node
  /// cost and its edges to the other ends' values in r), then by the
  /// copies' votes.
  std::vector<int> ranking(const Sub &r, int k) const;
  /// The best-ranked value of every split node of r (fixed ones keep
  /// theirs); offers r's assignment repaired with them, which costs no
  /// solve. Empty when a node has no usable value.
  std::vector<int> repair(const Sub &r);
  /// Moves the nodes of `choice` that pay an infinite cost to their
  /// cheapest value against their neighbours', until none does (true) or
  /// each has moved a bounded number of times.
  bool settle(std::vector<int> &choice) const;
  /// Offers a complete assignment as the incumbent.
  void offer(const std::vector<int> &choice);
  bool usable(int k, int value) const { return allowed[k][value]; }
  /// The other end of edge e from x, and its cost with x = a, other = b.
  int otherEnd(int e, int x) const {
    const AssignmentProblem::Edge &edge = problem.edges[e];
    return edge.u == x ? edge.v : edge.u;
  }
  double edgeCost(int e, int x, int a, int b) const {
    const AssignmentProblem::Edge &edge = problem.edges[e];
    return edge.u == x ? edge.cost[size_t(a) * choices[edge.v] + b]
                       : edge.cost[size_t(b) * choices[edge.v] + a];
  }

  /// Solves the relaxation with all of S split (root); false when that
  /// settles the problem (infeasible, or its optimum is an assignment).
  bool relax();
  void enumerate();
  void lagrange();
  void descend();
  double branch(int k, std::vector<int> &fixed, const Sub &parent);

  const AssignmentProblem &problem;
  SolverOptions options; // for the subproblems' eliminations
  int64_t givenTableSize;
  /// The simulated work one subproblem may take: a small share of the
  /// fallback's budget, so that it has room for many solves.
  double solveLimit;
  /// pickCutset found S small enough to try all of its assignments.
  bool exhaustive = false;
  int n;
  std::vector<int> choices;
  std::vector<std::set<int>> adjacency;
  /// Per node, its edges (indices into problem.edges); per edge, its
  /// position in the lists of its two ends.
  std::vector<std::vector<int>> incident;
  std::vector<std::pair<int, int>> position;

  std::vector<int> S;    // the cutset, in the order picked
  std::vector<int> slot; // per node: its index in S, or -1
  std::vector<int> rest; // R (nodes outside S)
  std::vector<int> restIndex;
  std::vector<int> restOrder; // planned order of R, in R's indices
  /// allowed[k][value]: S[k] may take the value (its cost, its memory and
  /// its edges permit it).
  std::vector<std::vector<bool>> allowed;

  /// lambda[k][copy][value] for S[k].
  std::vector<std::vector<std::vector<double>>> lambda;
  Sub root; // the relaxation under the best multipliers

  int solves = 0;
  double effort = 0;  // front entries combined by all solves
  double dearest = 0; // by one solve
  int width = 0;
  int largestFront = 0;
  std::map<std::vector<int>, Sub> leaves;

  std::vector<int> best;
  double bestCost = kInf;
  double lowerBound = -kInf;
  bool infeasible = false; // proven
};

Conditioner::Conditioner(const AssignmentProblem &p, const SolverOptions &o)
    : problem(p), options(o), givenTableSize(o.maxTableSize),
      solveLimit(std::min(o.maxWork, o.maxFallbackWork / 64)), n(p.numNodes()),
      choices(n), adjacency(n), incident(n), position(p.edges.size()),
      slot(n, -1), restIndex(n, -1) {
  int most = 1;
  for (int i = 0; i < n; ++i) {
    choices[i] = p.numChoices(i);
    most = std::max(most, choices[i]);
  }
  // A copy's table is over one neighbour: however small maxTableSize is,
  // the subproblems must be allowed single-node tables.
  options.maxTableSize = std::max<int64_t>(options.maxTableSize, most);
  for (int e = 0, m = int(p.edges.size()); e < m; ++e) {
    const AssignmentProblem::Edge &edge = p.edges[e];
    adjacency[edge.u].insert(edge.v);
    adjacency[edge.v].insert(edge.u);
    position[e] = {int(incident[edge.u].size()), int(incident[edge.v].size())};
    incident[edge.u].push_back(e);
    incident[edge.v].push_back(e);
  }
}

OrderPlan Conditioner::planWithout(const std::vector<bool> &removed,
                                   std::vector<int> &kept) const {
  kept.clear();
  std::vector<int> index(n, -1);
  for (int i = 0; i < n; ++i)
    if (!removed[i]) {
      index[i] = int(kept.size());
      kept.push_back(i);
    }
  std::vector<int> c(kept.size()), groups;
  std::vector<std::set<int>> adj(kept.size());
  const std::vector<int> &g = options.eliminationGroup;
  for (size_t j = 0; j < kept.size(); ++j) {
    int x = kept[j];
    c[j] = choices[x];
    for (int y : adjacency[x])
      if (!removed[y])
        adj[j].insert(index[y]);
    if (!g.empty())
      groups.push_back(x < int(g.size()) ? g[x] : 0);
  }
  return detail::planOrder(c, adj, groups, options.maxTableSize,
                           options.maxWork);
}

void Conditioner::pickCutset(const OrderPlan &whole) {
  std::vector<bool> removed(n, false);
  std::vector<int> kept(n), trialKept;
  for (int i = 0; i < n; ++i)
    kept[i] = i;
  // The node whose removal saves the most simulated work (its
  // contribution times 1 - 1 / its choices), among the first oversized
  // table's scope if there is one, else among all: a hub, when there is
  // one, is in every table.
  // `count` > 1 takes that many of the best at once (one simulation for
  // several picks, on large graphs).
  auto pickMany = [&](const OrderPlan &plan, int count) {
    std::vector<int> all;
    const std::vector<int> *candidates = &plan.worstScope;
    if (plan.maxTable <= options.maxTableSize) {
      for (size_t j = 0; j < kept.size(); ++j)
        all.push_back(int(j));
      candidates = &all;
    }
    std::vector<std::pair<double, int>> scored;
    for (int j : *candidates) {
      int x = kept[j];
      // (A node of one choice saves only its own elimination.)
      double s = choices[x] > 1
                     ? plan.contribution[j] * (1.0 - 1.0 / choices[x])
                     : 1e-9 * plan.contribution[j];
      scored.push_back({-s, x});
    }
    count = std::min<int>(count, scored.size());
    std::partial_sort(scored.begin(), scored.begin() + count, scored.end());
    std::vector<int> out;
    for (int i = 0; i < count; ++i)
      out.push_back(scored[i].second);
    return out;
  };
  auto pick = [&](const OrderPlan &plan) {
    std::vector<int> one = pickMany(plan, 1);
    return one.empty() ? -1 : one.front();
  };
  // Exhaustive conditioning on S costs (its choice counts' product) x
  // (one solve of the rest), a solve combining some 4 front entries per
  // unit of simulated work.
  auto affordable = [&](const OrderPlan &plan) {
    double product = 1;
    for (int x : S)
      product *= choices[x];
    return plan.fits && product <= options.maxConditioningSolves &&
           product * 4 * plan.work <= options.maxFallbackWork;
  };
  // First the nodes without which one elimination fits the limits of the
  // exact solver.
  // On large graphs each simulation is costly: once 16 nodes are out, take
  // out an eighth of as many again per simulation.
  OrderPlan plan = whole;
  while (!plan.fits) {
    std::vector<int> xs = pickMany(plan, std::max<int>(1, int(S.size()) / 8 *
                                                             (S.size() >= 16)));
    if (xs.empty())
      break; // nothing left to take out
    for (int x : xs) {
      removed[x] = true;
      S.push_back(x);
    }
    plan = planWithout(removed, kept);
  }
  // Put back what the rest does not need (a node picked early that later
  // picks made unnecessary), latest first; at most 64 tries.
  for (int k = int(S.size()) - 1, tries = 0; k >= 0 && tries < 64;
       --k, ++tries) {
    removed[S[k]] = false;
    OrderPlan trial = planWithout(removed, trialKept);
    if (trial.fits && trial.work <= 1.1 * plan.work) {
      S.erase(S.begin() + k);
      plan = std::move(trial);
      std::swap(kept, trialKept);
    } else {
      removed[S[k]] = true;
    }
  }
  // Then, for a search of many solves, until one solve is cheap (or S
  // small enough to try all its assignments).
  exhaustive = affordable(plan);
  while (!exhaustive && !(plan.fits && plan.work <= solveLimit)) {
    int x = pick(plan);
    if (x < 0)
      break;
    removed[x] = true;
    S.push_back(x);
    plan = planWithout(removed, kept);
    exhaustive = affordable(plan);
  }
  // More hubs: while taking the next node out at least halves the work of
  // every solve, it pays (a bound from more split nodes is weaker, but
  // many more solves fit the budget).
  while (!exhaustive && plan.work > solveLimit / 64) {
    int x = pick(plan);
    if (x < 0)
      break;
    removed[x] = true;
    OrderPlan trial = planWithout(removed, trialKept);
    if (!trial.fits || trial.work > 0.5 * plan.work) {
      removed[x] = false;
      break;
    }
    S.push_back(x);
    plan = std::move(trial);
    std::swap(kept, trialKept);
    exhaustive = affordable(plan);
  }
  plan = planWithout(removed, rest);
  for (int k = 0, e = int(S.size()); k < e; ++k)
    slot[S[k]] = k;
  for (int j = 0, e = int(rest.size()); j < e; ++j)
    restIndex[rest[j]] = j;
  restOrder = plan.order;

  // The values a node of S can take: allowed by its own cost and memory,
  // and by each of its edges.
  allowed.resize(S.size());
  for (size_t k = 0; k < S.size(); ++k) {
    int s = S[k];
    allowed[k].assign(choices[s], true);
    for (int c = 0; c < choices[s]; ++c)
      allowed[k][c] = problem.nodeCost[s][c] != kInf &&
                      problem.nodeMemory[s][c] <= problem.memoryBudget;
    for (int e : incident[s]) {
      for (int c = 0; c < choices[s]; ++c) {
        double least = kInf;
        for (int x = 0, other = choices[otherEnd(e, s)]; x < other; ++x)
          least = std::min(least, edgeCost(e, s, c, x));
        if (least == kInf)
          allowed[k][c] = false;
      }
    }
  }
  // Initial multipliers: each copy's local preference (its edge's least
  // cost per value) replaced by the mean over the node's copies, so that
  // copies that only looked at their own edge would agree on the value
  // best for all of them together.
  lambda.resize(S.size());
  for (size_t k = 0; k < S.size(); ++k) {
    int s = S[k];
    int copies = int(std::max<size_t>(1, incident[s].size()));
    lambda[k].assign(copies, std::vector<double>(choices[s], 0.0));
    if (incident[s].empty())
      continue;
    for (int c = 0; c < choices[s]; ++c) {
      if (!allowed[k][c])
        continue;
      std::vector<double> local(copies, kInf);
      double mean = 0;
      for (int i = 0; i < copies; ++i) {
        int e = incident[s][i];
        for (int x = 0, other = choices[otherEnd(e, s)]; x < other; ++x)
          local[i] = std::min(local[i], edgeCost(e, s, c, x));
        mean += local[i] / copies;
      }
      for (int i = 0; i < copies; ++i)
        lambda[k][i][c] = mean - local[i];
    }
  }
}

Conditioner::Sub Conditioner::solve(const std::vector<int> &fixed) {
  Sub out;
  double budget = problem.memoryBudget;
  double offset = 0, fixedMemory = 0;
  for (size_t k = 0; k < S.size(); ++k)
    if (fixed[k] >= 0) {
      offset += problem.nodeCost[S[k]][fixed[k]];
      fixedMemory += problem.nodeMemory[S[k]][fixed[k]];
    }
  if (offset == kInf || (budget != kInf && fixedMemory > budget))
    return out; // proven infeasible without solving

  AssignmentProblem q;
  int m = int(rest.size());
  for (int x : rest)
    q.addNode(problem.nodeCost[x], problem.nodeMemory[x]);
  // The copies of split nodes. A copy on an edge to a node of R or to a
  // fixed node, without memory (all but the first), is eliminated here:
  // its least cost per value of the other end becomes a unary cost there
  // (or a constant), exactly what eliminating the leaf would give.
  // copyNode: the copy's node in q, or -1 when eliminated here; then
  // folded[copyArg + x] is its value when the other end takes x.
  double spent = 0;
  std::vector<std::vector<int>> copyNode(S.size()), copyArg(S.size());
  std::vector<int> folded;
  std::vector<double> cost;
  for (size_t k = 0; k < S.size(); ++k) {
    if (fixed[k] >= 0)
      continue;
    int s = S[k];
    int copies = int(lambda[k].size());
    copyNode[k].assign(copies, -1);
    copyArg[k].assign(copies, -1);
    for (int i = 0; i < copies; ++i) {
      cost.assign(choices[s], kInf);
      for (int c = 0; c < choices[s]; ++c)
        if (usable(int(k), c))
          cost[c] = problem.nodeCost[s][c] / copies + lambda[k][i][c];
      int e = incident[s].empty() ? -1 : incident[s][i];
      int w = e < 0 ? -1 : otherEnd(e, s);
      bool fixedEnd = w >= 0 && slot[w] >= 0 && fixed[slot[w]] >= 0;
      if (i > 0 && w >= 0 && (slot[w] < 0 || fixedEnd)) {
        int values = fixedEnd ? 1 : choices[w];
        copyArg[k][i] = int(folded.size());
        for (int x = 0; x < values; ++x) {
          int other = fixedEnd ? fixed[slot[w]] : x;
          double least = kInf;
          int arg = 0;
          for (int c = 0; c < choices[s]; ++c) {
            double t = cost[c] + edgeCost(e, s, c, other);
            if (t < least) {
              least = t;
              arg = c;
            }
          }
          folded.push_back(arg);
          if (fixedEnd)
            offset += least;
          else
            q.nodeCost[restIndex[w]][x] += least;
        }
        spent += double(values) * choices[s];
        continue;
      }
      std::vector<double> memory(choices[s], 0.0);
      if (i == 0)
        memory = problem.nodeMemory[s];
      copyNode[k][i] = q.addNode(cost, std::move(memory));
    }
  }
  // An end of an edge in the subproblem: a node of R or a copy's node,
  // -1 for a fixed node, -2 for a copy eliminated above.
  auto end = [&](int x, int pos) {
    if (slot[x] < 0)
      return restIndex[x];
    int k = slot[x];
    if (fixed[k] >= 0)
      return -1;
    return copyNode[k][pos] >= 0 ? copyNode[k][pos] : -2;
  };
  for (int e = 0, edges = int(problem.edges.size()); e < edges; ++e) {
    const AssignmentProblem::Edge &edge = problem.edges[e];
    int a = end(edge.u, position[e].first), b = end(edge.v, position[e].second);
    int cv = choices[edge.v];
    if (a == -2 || b == -2)
      continue; // folded into the other end
    if (a >= 0 && b >= 0) {
      q.addEdge(a, b, edge.cost);
    } else if (a >= 0) {
      int fv = fixed[slot[edge.v]];
      for (int c = 0; c < choices[edge.u]; ++c)
        q.nodeCost[a][c] += edge.cost[size_t(c) * cv + fv];
    } else if (b >= 0) {
      int fu = fixed[slot[edge.u]];
      for (int c = 0; c < cv; ++c)
        q.nodeCost[b][c] += edge.cost[size_t(fu) * cv + c];
    } else {
      offset +=
          edge.cost[size_t(fixed[slot[edge.u]]) * cv + fixed[slot[edge.v]]];
    }
  }
  if (offset == kInf)
    return out;
  q.memoryBudget = budget == kInf ? kInf : budget - fixedMemory;
  // The copies left first (leaves and pairs: no fill), then R as planned.
  std::vector<int> order;
  order.reserve(q.numNodes());
  for (int i = m; i < q.numNodes(); ++i)
    order.push_back(i);
  for (int j : restOrder)
    order.push_back(j);

  AssignmentSolution s = detail::solveInOrder(q, options, order, &spent);
  ++solves;
  // Building the subproblem counts too.
  for (int i = 0; i < q.numNodes(); ++i)
    spent += q.numChoices(i);
  for (const AssignmentProblem::Edge &e : q.edges)
    spent += double(e.cost.size());
  effort += spent;
  dearest = std::max(dearest, spent);
  width = std::max(width, s.width);
  largestFront = std::max(largestFront, s.largestFront);
  if (!s.feasible) {
    // Proven (an elimination proves infeasibility even when thinned),
    // unless the elimination was refused.
    if (!s.exact)
      out.lowerBound = -kInf;
    return out;
  }
  out.feasible = true;
  out.exact = s.exact;
  out.cost = s.cost + offset;
  out.lowerBound = s.lowerBound + offset;
  out.choice.assign(n, 0);
  for (int j = 0; j < m; ++j)
    out.choice[rest[j]] = s.choice[j];
  out.copies.resize(S.size());
  for (size_t k = 0; k < S.size(); ++k) {
    if (fixed[k] >= 0) {
      out.choice[S[k]] = fixed[k];
      continue;
    }
    int node = S[k];
    for (size_t i = 0; i < lambda[k].size(); ++i) {
      if (copyNode[k][i] >= 0) {
        out.copies[k].push_back(s.choice[copyNode[k][i]]);
        continue;
      }
      int w = otherEnd(incident[node][i], node);
      int x = slot[w] < 0 ? s.choice[restIndex[w]] : 0;
      out.copies[k].push_back(folded[copyArg[k][i] + x]);
    }
    out.choice[node] = out.copies[k].front();
  }
  return out;
}

const Conditioner::Sub &Conditioner::leaf(const std::vector<int> &fixed) {
  auto it = leaves.find(fixed);
  if (it != leaves.end())
    return it->second;
  Sub r = solve(fixed);
  if (r.feasible)
    offer(r.choice);
  return leaves.emplace(fixed, std::move(r)).first->second;
}

bool Conditioner::agree(const Sub &r) const {
  for (const std::vector<int> &c : r.copies)
    for (int v : c)
      if (v != c.front())
        return false;
  return true;
}

std::vector<int> Conditioner::ranking(const Sub &r, int k) const {
  int s = S[k];
  std::vector<double> local(problem.nodeCost[s]), votes(choices[s], 0.0);
  for (size_t i = 0; i < incident[s].size(); ++i) {
    int e = incident[s][i];
    int w = otherEnd(e, s);
    int x = r.choice[w];
    if (slot[w] >= 0 && !r.copies[slot[w]].empty()) // the copy on e
      x = r.copies[slot[w]][problem.edges[e].u == w ? position[e].first
                                                    : position[e].second];
    for (int c = 0; c < choices[s]; ++c)
      local[c] += edgeCost(e, s, c, x);
  }
  for (int v : r.copies[k])
    votes[v] += 1.0;
  if (!r.copies[k].empty())
    votes[r.copies[k].front()] += 0.5; // the first copy breaks ties
  std::vector<int> values;
  for (int c = 0; c < choices[s]; ++c)
    if (usable(k, c))
      values.push_back(c);
  std::sort(values.begin(), values.end(), [&](int a, int b) {
    if (local[a] != local[b])
      return local[a] < local[b];
    return votes[a] != votes[b] ? votes[a] > votes[b] : a < b;
  });
  return values;
}

std::vector<int> Conditioner::repair(const Sub &r) {
  std::vector<int> values(S.size());
  std::vector<int> choice = r.choice;
  std::vector<bool> repaired(S.size(), false);
  for (size_t k = 0; k < S.size(); ++k) {
    if (r.copies[k].empty()) {
      values[k] = r.choice[S[k]];
      repaired[k] = true;
      continue;
    }
    std::vector<int> ranked = ranking(r, int(k));
    if (ranked.empty())
      return {};
    // The best-ranked value that is finite against the neighbours of S
    // repaired before it (two split neighbours ranked on each other's
    // copies can disagree across an infinite edge: a fan-out and its
    // producer).
    int pick = ranked.front();
    for (int c : ranked) {
      bool finite = true;
      for (int e : incident[S[k]]) {
        int w = otherEnd(e, S[k]);
        if (slot[w] >= 0 && repaired[slot[w]] &&
            edgeCost(e, S[k], c, choice[w]) == kInf) {
          finite = false;
          break;
        }
      }
      if (finite) {
        pick = c;
        break;
      }
    }
    values[k] = choice[S[k]] = pick;
    repaired[k] = true;
  }
  if (problem.evaluate(choice).first == kInf && settle(choice))
    for (size_t k = 0; k < S.size(); ++k)
      values[k] = choice[S[k]];
  offer(choice);
  return values;
}

bool Conditioner::settle(std::vector<int> &choice) const {
  // Iterated conditional modes: the nodes that pay an infinite cost take,
  // one at a time, their cheapest value against their neighbours'; their
  // neighbours are looked at next. Infinite edges (a fan-out's pair
  // against its producer, a parameter consumed as stored) are satisfied
  // this way when the repaired values of S contradict R's.
  auto local = [&](int i, int c) {
    double cost = problem.nodeCost[i][c];
    for (int e : incident[i])
      cost += edgeCost(e, i, c, choice[otherEnd(e, i)]);
    return cost;
  };
  std::vector<int> work;
  std::vector<char> queued(n, 0);
  for (int i = 0; i < n; ++i)
    if (local(i, choice[i]) == kInf) {
      work.push_back(i);
      queued[i] = 1;
    }
  // Each node moves a bounded number of times.
  int64_t moves = 0, maxMoves = 8 * int64_t(n) + 64;
  while (!work.empty() && moves < maxMoves) {
    int i = work.back();
    work.pop_back();
    queued[i] = 0;
    int bestValue = choice[i];
    double bestLocal = local(i, choice[i]);
    if (bestLocal != kInf)
      continue;
    for (int c = 0; c < choices[i]; ++c)
      if (double l = local(i, c); l < bestLocal) {
        bestLocal = l;
        bestValue = c;
      }
    if (bestValue == choice[i])
      continue;
    choice[i] = bestValue;
    ++moves;
    for (int e : incident[i]) {
      int w = otherEnd(e, i);
      if (!queued[w] && edgeCost(e, w, choice[w], choice[i]) == kInf) {
        work.push_back(w);
        queued[w] = 1;
      }
    }
  }
  return problem.evaluate(choice).first != kInf;
}

void Conditioner::offer(const std::vector<int> &choice) {
  auto [cost, memory] = problem.evaluate(choice);
  if (cost == kInf || memory > problem.memoryBudget || cost >= bestCost)
    return;
  bestCost = cost;
  best = choice;
}

void Conditioner::enumerate() {
  // Every assignment of S: the least of the conditioned optima is the
  // optimum, and the least of their bounds a bound (the relaxation's for
  // any left unsolved when the budget runs out).
  std::vector<int> fixed(S.size(), 0);
  double bound = kInf;
  while (true) {
    bool ok = true;
    for (size_t k = 0; k < S.size(); ++k)
      ok = ok && usable(int(k), fixed[k]);
    if (ok && !budgetLeft()) {
      bound = std::min(bound, root.lowerBound);
      break;
    }
    if (ok) {
      const Sub &r = leaf(fixed);
      bound = std::min(bound, r.lowerBound);
    }
    int k = int(S.size()) - 1;
    for (; k >= 0; --k) {
      if (++fixed[k] < choices[S[k]])
        break;
      fixed[k] = 0;
    }
    if (k < 0)
      break;
  }
  lowerBound = std::max(lowerBound, bound);
  infeasible = bound == kInf;
}

bool Conditioner::relax() {
  Sub r = solve(std::vector<int>(S.size(), -1));
  if (!r.feasible) {
    // The relaxation admits every original assignment: none exists.
    infeasible = r.lowerBound == kInf;
    lowerBound = r.lowerBound;
    return false;
  }
  lowerBound = r.lowerBound;
  if (agree(r))
    offer(r.choice); // all copies equal: an original assignment
  repair(r);
  root = std::move(r);
  return !closes(bestCost, lowerBound);
}

void Conditioner::lagrange() {
  std::vector<int> split(S.size(), -1);
  std::vector<std::vector<std::vector<double>>> bestLambda = lambda;
  double theta = 1.0;
  int stall = 0;
  for (int it = 0; it < options.lagrangeIterations; ++it) {
    // The first step starts from the relaxation solved by relax().
    Sub r;
    if (it == 0) {
      r = root;
    } else {
      // Half the solves at most, and none while the repairs find no
      // feasible assignment: branch and bound below searches for one.
      if (!budgetLeft() || 2 * solves > options.maxFallbackSolves ||
          best.empty())
        break;
      r = solve(split);
      if (!r.feasible) // the multipliers cannot make it infeasible
        break;
    }
    bool better = it == 0 || r.lowerBound > lowerBound;
    if (better) {
      lowerBound = std::max(lowerBound, r.lowerBound);
      bestLambda = lambda;
      root = r;
      stall = 0;
    } else if (++stall >= 3) {
      theta /= 2;
      stall = 0;
    }
    if (agree(r)) {
      offer(r.choice); // all copies equal: an original assignment
      if (r.exact)
        break; // and optimal: it meets the bound
    }
    // The repaired relaxation (an upper bound at no cost), and for one
    // that raised the bound its values of S, solved with S fixed.
    std::vector<int> vote = repair(r);
    if (!vote.empty() && better && (leaves.count(vote) || budgetLeft()))
      leaf(vote);
    if (closes(bestCost, lowerBound))
      break;
    // Subgradient of the dual at lambda: a copy's indicator of its value
    // minus the mean over the node's copies (the multipliers stay summing
    // to zero). Polyak's step towards the best cost, or 10% above the
    // bound while there is none.
    double norm = 0;
    std::vector<std::vector<double>> mean(S.size());
    for (size_t k = 0; k < S.size(); ++k) {
      mean[k].assign(choices[S[k]], 0.0);
      for (int v : r.copies[k])
        mean[k][v] += 1.0 / r.copies[k].size();
      for (int v : r.copies[k])
        for (int c = 0; c < choices[S[k]]; ++c) {
          double g = (v == c ? 1.0 : 0.0) - mean[k][c];
          norm += g * g;
        }
    }
    if (norm < 1e-12)
      break;
    double target = bestCost != kInf
                        ? bestCost
                        : r.cost + 0.1 * std::max(std::abs(r.cost), 1e-9);
    double step = theta * (target - r.cost) / norm;
    if (!(step > 0))
      break;
    for (size_t k = 0; k < S.size(); ++k)
      for (size_t i = 0; i < r.copies[k].size(); ++i)
        for (int c = 0; c < choices[S[k]]; ++c)
          lambda[k][i][c] +=
              step * ((r.copies[k][i] == c ? 1.0 : 0.0) - mean[k][c]);
  }
  lambda = std::move(bestLambda);
}

void Conditioner::descend() {
  // Coordinate descent from the incumbent: change one node of S, solve
  // the rest exactly, keep the change when it pays.
  if (best.empty())
    return;
  std::vector<int> current(S.size());
  for (size_t k = 0; k < S.size(); ++k)
    current[k] = best[S[k]];
  bool improved = true;
  while (improved && !closes(bestCost, lowerBound)) {
    improved = false;
    for (size_t k = 0; k < S.size() && budgetLeft(); ++k)
      for (int c = 0; c < choices[S[k]] && budgetLeft(); ++c) {
        if (c == current[k] || !usable(int(k), c))
          continue;
        std::vector<int> trial = current;
        trial[k] = c;
        double before = bestCost;
        leaf(trial);
        if (bestCost < before) {
          current = std::move(trial);
          improved = true;
        }
      }
  }
}

double Conditioner::branch(int k, std::vector<int> &fixed, const Sub &parent) {
  // Children in the order of the parent's ranking; a child's relaxation
  // bounds its subtree. Returns a lower bound on the subtree.
  double bound = kInf;
  bool last = k + 1 == int(S.size());
  for (int c : ranking(parent, k)) {
    if (closes(bestCost, parent.lowerBound)) {
      bound = std::min(bound, parent.lowerBound);
      break; // nothing here can beat the incumbent
    }
    fixed[k] = c;
    if (!(last && leaves.count(fixed)) && !budgetLeft()) {
      bound = std::min(bound, parent.lowerBound); // the rest, unexplored
      break;
    }
    if (last) {
      bound = std::min(bound, leaf(fixed).lowerBound);
      continue;
    }
    Sub r = solve(fixed);
    if (!r.feasible) {
      bound = std::min(bound, r.lowerBound); // kInfinity: no completion
      continue;
    }
    repair(r);
    if (agree(r)) {
      offer(r.choice);
      if (r.exact) {
        bound = std::min(bound, r.lowerBound); // solved: its optimum
        continue;
      }
    }
    if (bestCost != kInf && closes(bestCost, r.lowerBound)) {
      bound = std::min(bound, r.lowerBound); // pruned
      continue;
    }
    bound = std::min(bound, branch(k + 1, fixed, r));
  }
  fixed[k] = -1;
  return bound;
}

AssignmentSolution Conditioner::run(const OrderPlan &whole) {
  OrderPlan plan = whole;
  if (options.maxTableSize != givenTableSize) {
    // The subproblems' limit is wider (see the constructor): plan again.
    std::vector<int> all;
    plan = planWithout(std::vector<bool>(n, false), all);
    if (plan.fits)
      return detail::solveInOrder(problem, options, plan.order);
  }
  pickCutset(plan);
  AssignmentSolution out;

  if (!relax()) {
    // Settled by the relaxation.
  } else if (exhaustive) {
    enumerate();
  } else {
    lagrange();
    if (!infeasible && !closes(bestCost, lowerBound)) {
      descend();
      std::vector<int> fixed(S.size(), -1);
      double bound = branch(0, fixed, root);
      if (best.empty() && bound != kInf) {
        // Nothing found, nothing proven: a valid program should get a plan
        // with its gap rather than none, so the search goes on, once, with
        // kRescueFactor times the budget (the solves done stay cached).
        options.maxFallbackWork *= kRescueFactor;
        options.maxFallbackSolves *= kRescueFactor;
        std::fill(fixed.begin(), fixed.end(), -1);
        bound = std::max(bound, branch(0, fixed, root));
      }
      infeasible = bound == kInf && best.empty();
      lowerBound = std::max(lowerBound, std::min(bound, bestCost));
    }
  }

  out.relaxedNodes = int(S.size());
  out.width = width;
  out.largestFront = largestFront;
  out.solves = solves;
  if (!best.empty()) {
    out.feasible = true;
    out.choice = best;
    std::tie(out.cost, out.memory) = problem.evaluate(best);
    out.lowerBound = lowerBound;
    out.exact = closes(out.cost, lowerBound);
  } else {
    out.feasible = false;
    out.exact = infeasible;
    out.lowerBound = infeasible ? kInf : lowerBound;
  }
  detail::finishBounds(out);
  return out;
}

} // namespace

AssignmentSolution detail::solveByConditioning(const AssignmentProblem &problem,
                                               const SolverOptions &options,
                                               const OrderPlan &plan) {
  return Conditioner(problem, options).run(plan);
}
