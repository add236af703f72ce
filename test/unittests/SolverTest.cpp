//===- SolverTest.cpp - the exact assignment solver -------------*- C++ -*-===//

#include "tp/Analysis/Solver.h"
#include "../../lib/Analysis/SolverReduce.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using namespace mlir::tp;

namespace {

constexpr double kInf = AssignmentProblem::kInfinity;

/// Options that solve the problem as given (no dominance pruning, no
/// folding), for the tests of the elimination's fallback itself.
SolverOptions asGiven() {
  SolverOptions options;
  options.reduce = false;
  return options;
}

/// A random problem: `n` nodes with 1..4 choices, random edges, some
/// forbidden choices and pairs, random memory, and (when `budgeted`) a
/// budget that cuts off part of the assignments.
AssignmentProblem randomProblem(std::mt19937 &rng, int n, bool budgeted) {
  std::uniform_int_distribution<int> choices(1, 4);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> memory(0, 5);
  AssignmentProblem p;
  for (int i = 0; i < n; ++i) {
    int c = choices(rng);
    std::vector<double> costs, mems;
    for (int j = 0; j < c; ++j) {
      costs.push_back(unit(rng) < 0.1 ? kInf : cost(rng));
      mems.push_back(budgeted ? memory(rng) : 0);
    }
    p.addNode(costs, mems);
  }
  double density = 0.2 + 0.6 * unit(rng);
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v) {
      if (unit(rng) > density)
        continue;
      std::vector<double> costs;
      for (int a = 0; a < p.numChoices(u) * p.numChoices(v); ++a)
        costs.push_back(unit(rng) < 0.1 ? kInf : cost(rng));
      if (unit(rng) < 0.5)
        p.addEdge(u, v, costs);
      else {
        // The same edge given from v to u (transposed table).
        std::vector<double> t(costs.size());
        for (int a = 0; a < p.numChoices(u); ++a)
          for (int b = 0; b < p.numChoices(v); ++b)
            t[size_t(b) * p.numChoices(u) + a] =
                costs[size_t(a) * p.numChoices(v) + b];
        p.addEdge(v, u, t);
      }
    }
  if (budgeted)
    p.memoryBudget = std::uniform_int_distribution<int>(0, 3 * n)(rng);
  return p;
}

// The elimination solver finds the same optimum as enumeration on 300 random
// problems, with and without a memory budget, including infeasible ones.
TEST(SolverTest, MatchesBruteForceOnRandomProblems) {
  std::mt19937 rng(20261129);
  int feasible = 0, infeasible = 0, budgetBinding = 0;
  for (int trial = 0; trial < 300; ++trial) {
    int n = 2 + trial % 7;
    bool budgeted = trial % 2 == 1;
    AssignmentProblem p = randomProblem(rng, n, budgeted);
    AssignmentSolution brute = solveBruteForce(p);
    AssignmentSolution exact = solveExact(p);
    ASSERT_EQ(exact.feasible, brute.feasible) << "trial " << trial;
    EXPECT_TRUE(exact.exact) << "trial " << trial;
    // Small problems fit the exact elimination: no fallback, no gap.
    EXPECT_EQ(exact.relaxedNodes, 0) << "trial " << trial;
    EXPECT_EQ(exact.gap, 0.0) << "trial " << trial;
    EXPECT_EQ(exact.lowerBound, exact.cost) << "trial " << trial;
    if (!brute.feasible) {
      ++infeasible;
      continue;
    }
    ++feasible;
    EXPECT_NEAR(exact.cost, brute.cost, 1e-9) << "trial " << trial;
    // The returned assignment really has the reported cost and fits.
    auto [cost, memory] = p.evaluate(exact.choice);
    EXPECT_NEAR(cost, exact.cost, 1e-9) << "trial " << trial;
    EXPECT_LE(memory, p.memoryBudget) << "trial " << trial;
    if (budgeted) {
      AssignmentProblem unbounded = p;
      unbounded.memoryBudget = kInf;
      if (solveBruteForce(unbounded).cost < brute.cost - 1e-9)
        ++budgetBinding;
    }
  }
  // The random mix exercises all three situations.
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 5);
  EXPECT_GT(budgetBinding, 5);
}

/// A chain with a skip edge every two nodes, like a residual stream.
AssignmentProblem residualChain(int n) {
  AssignmentProblem p;
  for (int i = 0; i < n; ++i)
    p.addNode({1.0, 2.0, 0.5}, {0, 1, 2});
  for (int i = 0; i + 1 < n; ++i)
    p.addEdge(i, i + 1, {0, 1, 1, 1, 0, 1, 1, 1, 0});
  for (int i = 0; i + 2 < n; i += 2)
    p.addEdge(i, i + 2, {0, 5, 5, 5, 0, 5, 5, 5, 0});
  return p;
}

// A residual chain keeps the elimination width at 2 whatever its length.
TEST(SolverTest, ResidualChainHasSmallWidth) {
  AssignmentProblem p = residualChain(5000);
  AssignmentSolution s = solveExact(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(s.relaxedNodes, 0);
  EXPECT_LE(s.width, 2);
  EXPECT_EQ(s.largestFront, 1); // no budget: plain min-sum
  // Without a budget the cheapest choice (cost 0.5) wins everywhere.
  EXPECT_DOUBLE_EQ(s.cost, 0.5 * 5000);
}

// With a binding budget the fronts grow (one entry per memory level) and the
// answer respects the budget; the first node choices are forced down.
TEST(SolverTest, ResidualChainWithBudget) {
  AssignmentProblem p = residualChain(300);
  p.memoryBudget = 300; // all-"0.5" would need 600
  AssignmentSolution s = solveExact(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_TRUE(s.exact);
  EXPECT_LE(s.width, 2);
  EXPECT_LE(s.memory, p.memoryBudget);
  EXPECT_GT(s.largestFront, 1);
  EXPECT_GT(s.cost, 0.5 * 300);
}

// A node without choices makes the problem infeasible, not a crash.
TEST(SolverTest, NodeWithoutChoicesIsInfeasible) {
  AssignmentProblem p;
  p.addNode({1.0});
  p.addNode({});
  EXPECT_FALSE(solveExact(p).feasible);
  EXPECT_FALSE(solveBruteForce(p).feasible);
}

// Forbidden pairs steer the choice even when a node's own cost prefers
// another.
TEST(SolverTest, ForbiddenPairsAreRespected) {
  AssignmentProblem p;
  int a = p.addNode({0.0, 10.0});
  int b = p.addNode({0.0, 10.0});
  p.addEdge(a, b, {kInf, 1.0, 1.0, kInf});
  AssignmentSolution s = solveExact(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_NE(s.choice[a], s.choice[b]);
  EXPECT_DOUBLE_EQ(s.cost, 11.0);
}

} // namespace

// A budget the unconstrained optimum fits is not binding: the solver
// answers from the budget-free pass (one-entry fronts) with that optimum.
TEST(SolverTest, NonBindingBudgetKeepsFrontsSmall) {
  AssignmentProblem p = residualChain(300);
  p.memoryBudget = 600; // all-"0.5" needs exactly 600
  AssignmentSolution s = solveExact(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(s.largestFront, 1);
  EXPECT_DOUBLE_EQ(s.cost, 0.5 * 300);
  EXPECT_LE(s.memory, p.memoryBudget);
  // One byte less and the budget binds: fronts again, a dearer plan.
  p.memoryBudget = 599;
  AssignmentSolution t = solveExact(p);
  ASSERT_TRUE(t.feasible);
  EXPECT_GT(t.largestFront, 1);
  EXPECT_GT(t.cost, s.cost);
  EXPECT_LE(t.memory, p.memoryBudget);
}

/// A training-step-like ladder of `layers` rungs: a forward chain f_i, a
/// backward chain b_i running the other way, each b_i reading f_i (a saved
/// activation), and a weight w_i read by both. Random costs, 3 choices per
/// node, memory on the weights.
AssignmentProblem ladder(std::mt19937 &rng, int layers, double budget) {
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  auto table = [&] {
    std::vector<double> t;
    for (int i = 0; i < 9; ++i)
      t.push_back(cost(rng));
    return t;
  };
  AssignmentProblem p;
  std::vector<int> f, b, w;
  for (int i = 0; i < layers; ++i) {
    f.push_back(p.addNode({cost(rng), cost(rng), cost(rng)}));
    b.push_back(p.addNode({cost(rng), cost(rng), cost(rng)}));
    w.push_back(p.addNode({cost(rng), cost(rng), cost(rng)}, {4, 2, 1}));
  }
  for (int i = 0; i < layers; ++i) {
    if (i + 1 < layers) {
      p.addEdge(f[i], f[i + 1], table());
      p.addEdge(b[i + 1], b[i], table());
    }
    p.addEdge(f[i], b[i], table());
    p.addEdge(w[i], f[i], table());
    p.addEdge(w[i], b[i], table());
  }
  p.addEdge(f[layers - 1], b[layers - 1], table());
  p.memoryBudget = budget;
  return p;
}

// The ladder is solved exactly (enumeration agrees on small ones, with and
// without a binding budget) and with a small elimination width however
// long it is: the backward's reads of forward values do not widen scopes.
TEST(SolverTest, TrainingLadder) {
  std::mt19937 rng(7);
  for (double budget : {kInf, 4.0 * 4, 2.0 * 4, 1.5 * 4}) {
    AssignmentProblem p = ladder(rng, 4, budget);
    AssignmentSolution brute = solveBruteForce(p);
    AssignmentSolution exact = solveExact(p);
    ASSERT_EQ(exact.feasible, brute.feasible);
    ASSERT_TRUE(exact.feasible);
    EXPECT_NEAR(exact.cost, brute.cost, 1e-9) << "budget " << budget;
    EXPECT_LE(exact.memory, budget);
  }
  for (auto [layers, budget] : {std::pair<int, double>{3000, kInf},
                                 std::pair<int, double>{100, 2.0 * 100}}) {
    AssignmentProblem p = ladder(rng, layers, budget);
    AssignmentSolution s = solveExact(p);
    ASSERT_TRUE(s.feasible);
    EXPECT_TRUE(s.exact);
    EXPECT_EQ(s.relaxedNodes, 0);
    EXPECT_LE(s.width, 3) << layers << " layers";
    EXPECT_LE(s.memory, p.memoryBudget);
  }
}

//===----------------------------------------------------------------------===//
// The fallback: problems whose elimination does not fit the limits.
//===----------------------------------------------------------------------===//

namespace {

/// randomProblem(n) plus a hub: a node joined to every other one, with
/// 2..4 choices, forbidden pairs included.
AssignmentProblem withHub(std::mt19937 &rng, int n, bool budgeted) {
  AssignmentProblem p = randomProblem(rng, n, false);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int c = std::uniform_int_distribution<int>(2, 4)(rng);
  std::vector<double> costs, mems;
  for (int j = 0; j < c; ++j) {
    costs.push_back(cost(rng));
    mems.push_back(budgeted ? std::uniform_int_distribution<int>(0, 5)(rng)
                            : 0);
  }
  int hub = p.addNode(costs, mems);
  for (int v = 0; v < n; ++v) {
    std::vector<double> t;
    for (int a = 0; a < c * p.numChoices(v); ++a)
      t.push_back(unit(rng) < 0.05 ? kInf : cost(rng));
    p.addEdge(hub, v, t);
  }
  if (budgeted) {
    // Memory on every node, and a budget between the least and the most
    // an assignment can use.
    std::uniform_int_distribution<int> memory(0, 5);
    double least = 0, most = 0;
    for (int i = 0; i < p.numNodes(); ++i) {
      if (i != hub)
        for (double &m : p.nodeMemory[i])
          m = memory(rng);
      least +=
          *std::min_element(p.nodeMemory[i].begin(), p.nodeMemory[i].end());
      most += *std::max_element(p.nodeMemory[i].begin(), p.nodeMemory[i].end());
    }
    p.memoryBudget =
        std::floor(least + (most - least) * (0.2 + 0.5 * unit(rng)));
  }
  return p;
}

/// The checks every answer must pass against enumeration: feasible exactly
/// when enumeration is, the assignment has the reported cost and fits, the
/// lower bound is below the optimum and the cost above it, the gap is the
/// relative distance between them, and an exact answer is optimal.
void checkAgainstBruteForce(const AssignmentProblem &p,
                            const AssignmentSolution &s,
                            const AssignmentSolution &brute, int trial) {
  SCOPED_TRACE("trial " + std::to_string(trial));
  double tol = 1e-9 * std::max(1.0, std::abs(brute.cost));
  ASSERT_EQ(s.feasible, brute.feasible);
  if (!brute.feasible) {
    EXPECT_TRUE(s.exact); // infeasibility is proven, not given up on
    EXPECT_EQ(s.lowerBound, kInf);
    return;
  }
  auto [cost, memory] = p.evaluate(s.choice);
  EXPECT_NEAR(cost, s.cost, tol);
  EXPECT_NEAR(memory, s.memory, 1e-9);
  EXPECT_LE(memory, p.memoryBudget);
  EXPECT_LE(s.lowerBound, brute.cost + tol);
  EXPECT_LE(brute.cost, s.cost + tol);
  EXPECT_GE(s.gap, 0.0);
  EXPECT_NEAR(s.gap,
              (s.cost - s.lowerBound) / std::max(std::abs(s.cost), 1e-300),
              1e-9);
  if (s.exact) {
    EXPECT_NEAR(s.cost, brute.cost, tol);
    EXPECT_EQ(s.gap, 0.0);
    EXPECT_EQ(s.lowerBound, s.cost);
  }
}

} // namespace

// A hub joined to every node of random problems, with tables limited to a
// few entries so that the exact elimination does not fit: the fallback
// always finds a plan when there is one, proves infeasibility when there
// is none, and brackets the optimum between its bound and its cost; with
// one or two conditioned nodes (exhaustive conditioning) it is exact.
TEST(SolverTest, FallbackBracketsTheOptimumOnHubProblems) {
  std::mt19937 rng(20260517);
  int fallbacks = 0, exhaustive = 0, exact = 0, infeasible = 0, inexact = 0;
  double worstGap = 0;
  for (int trial = 0; trial < 400; ++trial) {
    int n = 7 + trial % 5; // 8..12 nodes with the hub
    bool budgeted = trial % 2 == 1;
    AssignmentProblem p = withHub(rng, n, budgeted);
    SolverOptions options = asGiven();
    options.maxTableSize = 4 << (trial % 3); // 4, 8 or 16 entries
    AssignmentSolution brute = solveBruteForce(p);
    AssignmentSolution s = solveExact(p, options);
    checkAgainstBruteForce(p, s, brute, trial);
    if (s.relaxedNodes == 0)
      continue;
    ++fallbacks;
    infeasible += !brute.feasible;
    exact += s.exact && brute.feasible;
    if (brute.feasible && !s.exact) {
      ++inexact;
      worstGap = std::max(worstGap, s.gap);
    }
    // Few conditioned nodes: every assignment of them is solved.
    if (s.relaxedNodes == 1 && brute.feasible) {
      ++exhaustive;
      EXPECT_TRUE(s.exact) << "trial " << trial;
    }
    EXPECT_LE(s.solves, options.maxFallbackSolves) << "trial " << trial;
  }
  std::printf("fallback on %d of 400: %d exact (%d on one node), %d proven "
              "infeasible, %d inexact (worst gap %.3g)\n",
              fallbacks, exact, exhaustive, infeasible, inexact, worstGap);
  EXPECT_GT(fallbacks, 300);
  EXPECT_GT(exhaustive, 20);
  EXPECT_GT(infeasible, 5);
}

// One hub on a chain: without the hub the chain fits, so the hub alone is
// conditioned, all of its values are tried, and the answer is exact, with
// and without a binding budget.
TEST(SolverTest, FallbackOnOneHubIsExact) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  for (bool budgeted : {false, true}) {
    AssignmentProblem p;
    for (int i = 0; i < 11; ++i)
      p.addNode({cost(rng), cost(rng), cost(rng)},
                {budgeted ? 3.0 : 0.0, budgeted ? 1.0 : 0.0, 0.0});
    int hub =
        p.addNode({cost(rng), cost(rng), cost(rng), cost(rng)}, {4, 3, 1, 0});
    auto table = [&](int rows, int cols) {
      std::vector<double> t;
      for (int i = 0; i < rows * cols; ++i)
        t.push_back(cost(rng));
      return t;
    };
    for (int i = 0; i + 1 < 11; ++i)
      p.addEdge(i, i + 1, table(3, 3));
    for (int i = 0; i < 11; ++i)
      p.addEdge(hub, i, table(4, 3));
    if (budgeted)
      p.memoryBudget = 14; // the least is 0, the most 37
    SolverOptions options = asGiven();
    options.maxTableSize = 3; // fits the chain, not the chain plus the hub
    AssignmentSolution brute = solveBruteForce(p);
    AssignmentSolution s = solveExact(p, options);
    checkAgainstBruteForce(p, s, brute, budgeted);
    EXPECT_EQ(s.relaxedNodes, 1);
    EXPECT_TRUE(s.exact);
    EXPECT_EQ(s.solves, 1 + 4); // the relaxation, then the hub's 4 values
    // The same problem within the default limits is solved exactly in one
    // elimination.
    AssignmentSolution whole = solveExact(p, asGiven());
    EXPECT_EQ(whole.relaxedNodes, 0);
    EXPECT_NEAR(whole.cost, s.cost, 1e-9);
  }
}

// Pins that contradict each other through a hub: the fallback proves the
// problem infeasible (exact) instead of giving up.
TEST(SolverTest, FallbackProvesInfeasibility) {
  AssignmentProblem p;
  int hub = p.addNode({1.0, 1.0});
  std::vector<int> chain;
  for (int i = 0; i < 6; ++i)
    chain.push_back(p.addNode({1.0, 2.0}));
  for (int i = 0; i + 1 < 6; ++i)
    p.addEdge(chain[i], chain[i + 1], {0, 1, 1, 0});
  for (int i = 0; i < 6; ++i)
    p.addEdge(hub, chain[i], {0, 1, 1, 0});
  // The first chain node wants the hub at 0, the last at 1.
  p.addEdge(hub, chain[0], {0, 0, kInf, kInf});
  p.addEdge(hub, chain[5], {kInf, kInf, 0, 0});
  SolverOptions options = asGiven();
  options.maxTableSize = 2;
  AssignmentSolution s = solveExact(p, options);
  EXPECT_FALSE(s.feasible);
  EXPECT_TRUE(s.exact);
  EXPECT_GT(s.relaxedNodes, 0);
  EXPECT_FALSE(solveBruteForce(p).feasible);
}

namespace {

/// A transformer-like graph: `layers` layers of a residual stream and two
/// sub-blocks (weight, matmul, activation, weight, matmul, add) between two
/// stream values, plus `hubs` hub nodes (a shared constant, a causal mask)
/// each read in every sub-block. 4 choices per layer node, `hubChoices` per
/// hub; weights with memory {4, 1, 1, 2}. Random costs; with `replicated`,
/// a hub's value 0 (a replicated constant) costs its readers nothing.
AssignmentProblem transformer(std::mt19937 &rng, int layers, int hubs,
                              int hubChoices, bool replicated = false) {
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  auto table = [&](int rows, int cols) {
    std::vector<double> t;
    for (int i = 0; i < rows * cols; ++i)
      t.push_back(cost(rng));
    return t;
  };
  auto node = [&] {
    return std::vector<double>{cost(rng), cost(rng), cost(rng), cost(rng)};
  };
  AssignmentProblem p;
  std::vector<int> hub;
  for (int h = 0; h < hubs; ++h) {
    std::vector<double> c;
    for (int j = 0; j < hubChoices; ++j)
      c.push_back(cost(rng));
    hub.push_back(p.addNode(c));
  }
  int stream = p.addNode(node());
  for (int l = 0; l < layers; ++l) {
    for (int block = 0; block < 2; ++block) {
      // weight -> matmul -> act -> matmul(weight) -> add(stream)
      int w1 = p.addNode(node(), {4, 1, 1, 2});
      int m1 = p.addNode(node());
      int act = p.addNode(node());
      int w2 = p.addNode(node(), {4, 1, 1, 2});
      int m2 = p.addNode(node());
      int add = p.addNode(node());
      p.addEdge(stream, m1, table(4, 4));
      p.addEdge(w1, m1, table(4, 4));
      p.addEdge(m1, act, table(4, 4));
      p.addEdge(act, m2, table(4, 4));
      p.addEdge(w2, m2, table(4, 4));
      p.addEdge(m2, add, table(4, 4));
      p.addEdge(stream, add, table(4, 4)); // the residual
      // Every hub is read in every sub-block.
      for (int h : hub) {
        std::vector<double> t = table(hubChoices, 4);
        if (replicated)
          std::fill(t.begin(), t.begin() + 4, 0.0);
        p.addEdge(h, block == 0 ? act : m1, t);
      }
      stream = add;
    }
  }
  return p;
}

} // namespace

namespace {

/// Half of the memory the most memory-hungry assignment would use.
double halfTheMostMemory(const AssignmentProblem &p) {
  double most = 0;
  for (const std::vector<double> &m : p.nodeMemory)
    most += *std::max_element(m.begin(), m.end());
  return 0.5 * most;
}

/// solveExact, timed.
AssignmentSolution timedSolve(const AssignmentProblem &p,
                              const SolverOptions &options, double &seconds) {
  auto start = std::chrono::steady_clock::now();
  AssignmentSolution s = solveExact(p, options);
  seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return s;
}

} // namespace

// Hubs read by every layer join all layers into one clique: the exact
// elimination would need a table over all hubs (10 hubs of 6 choices:
// 6^10 entries). The solver sees that before building anything and falls
// back to conditioning on the hubs: a feasible plan with a bound, quickly,
// with and without a binding budget. With random costs on every hub edge
// the relaxation is loose (each layer would like its own value of each
// hub) and the gap stays open.
TEST(SolverTest, FallbackOnTransformerWithHubs) {
  std::mt19937 rng(3);
  for (bool budgeted : {false, true}) {
    AssignmentProblem p = transformer(rng, 24, 10, 6);
    if (budgeted)
      p.memoryBudget = halfTheMostMemory(p);
    double seconds = 0;
    AssignmentSolution s = timedSolve(p, asGiven(), seconds);
    std::printf("transformer, 24 layers, 10 hubs%s: %.3f s, %d solves, %d "
                "relaxed, cost %.4f, bound %.4f, gap %.3g%%, exact %d\n",
                budgeted ? ", budget" : "", seconds, s.solves, s.relaxedNodes,
                s.cost, s.lowerBound, 100 * s.gap, int(s.exact));
    ASSERT_TRUE(s.feasible);
    EXPECT_GE(s.relaxedNodes, 7); // 7 hubs are needed, 10 at most pay
    EXPECT_LE(s.relaxedNodes, 10);
    EXPECT_LE(s.memory, p.memoryBudget);
    auto [cost, memory] = p.evaluate(s.choice);
    EXPECT_NEAR(cost, s.cost, 1e-9 * cost);
    EXPECT_LE(memory, p.memoryBudget);
    EXPECT_GT(s.lowerBound, 0.75 * s.cost);
    EXPECT_LE(s.lowerBound, s.cost);
    EXPECT_LE(s.solves, SolverOptions().maxFallbackSolves);
    EXPECT_LT(seconds, 5.0); // well under a second in a release build
  }
}

// Hubs as the planner sees them: a replicated constant or mask costs its
// readers nothing, so every copy of a hub agrees and the relaxation's
// optimum is an assignment of the original: exact, in a few solves.
TEST(SolverTest, FallbackOnTransformerWithReplicatedHubsIsExact) {
  std::mt19937 rng(5);
  for (bool budgeted : {false, true}) {
    AssignmentProblem p = transformer(rng, 24, 10, 6, /*replicated=*/true);
    if (budgeted)
      p.memoryBudget = halfTheMostMemory(p);
    double seconds = 0;
    AssignmentSolution s = timedSolve(p, asGiven(), seconds);
    std::printf("replicated hubs%s: %.3f s, %d solves, %d relaxed, cost "
                "%.4f, bound %.4f, exact %d\n",
                budgeted ? ", budget" : "", seconds, s.solves, s.relaxedNodes,
                s.cost, s.lowerBound, int(s.exact));
    ASSERT_TRUE(s.feasible);
    EXPECT_GT(s.relaxedNodes, 0);
    EXPECT_TRUE(s.exact);
    EXPECT_EQ(s.gap, 0.0);
    EXPECT_LE(s.memory, p.memoryBudget);
    EXPECT_LT(seconds, 5.0);
  }
}

// Six hubs of three choices on 24 layers: the whole elimination does not
// fit (its tables do, 6 hubs in every scope, but not its work: 3.5e7 >
// maxWork), but two conditioned hubs leave a rest that fits, and their 9
// assignments are solved one by one: exact. The same
// problem with exhaustive conditioning disabled goes through the bounded
// search (more hubs, Lagrangian bound, branch and bound) and must find the
// same cost or report its gap.
TEST(SolverTest, FallbackConditionsExhaustivelyWhenSmall) {
  std::mt19937 rng(0);
  AssignmentProblem p = transformer(rng, 24, 6, 3);
  AssignmentSolution s = solveExact(p, asGiven());
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.relaxedNodes, 2);
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(s.solves, 1 + 9); // the relaxation, then 3 x 3 assignments
  SolverOptions options = asGiven();
  options.maxConditioningSolves = 0;
  AssignmentSolution t = solveExact(p, options);
  ASSERT_TRUE(t.feasible);
  EXPECT_GT(t.relaxedNodes, 2);
  EXPECT_LE(t.lowerBound, s.cost + 1e-9 * s.cost);
  EXPECT_GE(t.cost, s.cost - 1e-9 * s.cost);
  std::printf("exhaustive: cost %.4f in %d solves; bounded search: cost %.4f, "
              "bound %.4f, gap %.3g%% in %d solves\n",
              s.cost, s.solves, t.cost, t.lowerBound, 100 * t.gap, t.solves);
}

namespace {

/// A random problem whose budget binds: memory levels anti-correlated
/// with cost (cheap choices are large), the budget between the least and
/// the budget-free optimum's memory.
AssignmentProblem bindingProblem(std::mt19937 &rng, int n) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  AssignmentProblem p;
  for (int i = 0; i < n; ++i) {
    int k = 2 + int(unit(rng) * 3);
    std::vector<double> cost, memory;
    for (int c = 0; c < k; ++c) {
      double m = double(int(unit(rng) * 6));
      memory.push_back(m);
      cost.push_back(10.0 - m + 3 * unit(rng));
    }
    p.addNode(cost, memory);
  }
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v) {
      if (unit(rng) > 0.4)
        continue;
      std::vector<double> cost;
      for (int a = 0; a < p.numChoices(u) * p.numChoices(v); ++a)
        cost.push_back(unit(rng) < 0.05 ? kInf : 4 * unit(rng));
      p.addEdge(u, v, cost);
    }
  AssignmentSolution free = solveBruteForce(p);
  double least = 0;
  for (const std::vector<double> &m : p.nodeMemory)
    least += *std::min_element(m.begin(), m.end());
  p.memoryBudget =
      std::floor(least + (free.memory - least) * (0.2 + 0.6 * unit(rng)));
  return p;
}

} // namespace

// Dominance pruning and folding keep the optimum: the reduced problem's
// optimum plus the folded constants is the original's, with and without a
// budget (memory-aware dominance when budgeted), infeasibility included.
TEST(SolverTest, ReductionKeepsTheOptimum) {
  std::mt19937 rng(20261201);
  int pruned = 0, folded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    bool budgeted = trial % 2 == 1;
    AssignmentProblem p = randomProblem(rng, 2 + trial % 7, budgeted);
    AssignmentSolution brute = solveBruteForce(p);
    detail::ProblemReduction red = detail::reduceProblem(p, budgeted, {});
    pruned += red.prunedChoices;
    folded += red.foldedNodes;
    SCOPED_TRACE("trial " + std::to_string(trial));
    if (red.infeasible || red.problem.memoryBudget < 0) {
      EXPECT_FALSE(brute.feasible);
      continue;
    }
    AssignmentSolution reduced = solveBruteForce(red.problem);
    ASSERT_EQ(reduced.feasible, brute.feasible);
    if (!brute.feasible)
      continue;
    AssignmentSolution back = detail::expandSolution(p, red, reduced);
    EXPECT_NEAR(back.cost, brute.cost, 1e-9);
    EXPECT_NEAR(reduced.cost + red.constantCost, brute.cost, 1e-9);
    EXPECT_LE(back.memory, p.memoryBudget);
  }
  EXPECT_GT(pruned, 100);
  EXPECT_GT(folded, 50);
}

// Dominance by hand. Node 0: choice 2 costs 1 more than choice 0 and
// meets node 1 at the same prices, so it goes. Node 1: choice 1 is never
// cheaper than choice 0 against node 0's remaining choices, so it goes and
// node 1 is folded; against node 1's choice 0 alone, node 0's choice 1
// (cost 0.5) beats choice 0 (cost 1), so node 0 folds too. Under a budget
// of 3, choices 0 and 1 (memory 4) are over it on their own and only
// choice 2 is left.
TEST(SolverTest, DominatedChoicesArePruned) {
  AssignmentProblem p;
  p.addNode({1.0, 0.5, 2.0}, {4, 4, 1});
  p.addNode({0.0, 0.0});
  p.addEdge(0, 1, {0, 0, 0, 3, 0, 0});
  detail::ProblemReduction free = detail::reduceProblem(p, false, {});
  ASSERT_FALSE(free.infeasible);
  EXPECT_EQ(free.prunedChoices, 3);
  EXPECT_EQ(free.foldedNodes, 2);
  EXPECT_EQ(free.fixedChoice[0], 1);
  EXPECT_EQ(free.fixedChoice[1], 0);
  EXPECT_DOUBLE_EQ(free.constantCost, 0.5);
  EXPECT_EQ(free.problem.numNodes(), 0);
  p.memoryBudget = 3;
  detail::ProblemReduction bounded = detail::reduceProblem(p, true, {});
  ASSERT_FALSE(bounded.infeasible);
  EXPECT_EQ(bounded.fixedChoice[0], 2);
  AssignmentSolution s = solveExact(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(s.choice[0], 2);
  EXPECT_DOUBLE_EQ(s.cost, 2.0);
}

// The Lagrangian search with binding budgets, against enumeration: alone
// (the Pareto pass disabled by a tiny work limit, so the fallback answers
// when the bound does not close) its answer is a plan within the budget
// bracketed by a valid bound, exact only when the bound closes; with the
// Pareto pass it prunes, and the answer is always exact.
TEST(SolverTest, LagrangianMatchesBruteForceWithBindingBudget) {
  std::mt19937 rng(7);
  int closed = 0, binding = 0;
  for (int trial = 0; trial < 200; ++trial) {
    AssignmentProblem p = bindingProblem(rng, 6 + trial % 5);
    AssignmentSolution brute = solveBruteForce(p);
    AssignmentProblem unbounded = p;
    unbounded.memoryBudget = kInf;
    if (brute.feasible && solveBruteForce(unbounded).cost < brute.cost - 1e-9)
      ++binding;
    SolverOptions lagrangeOnly;
    lagrangeOnly.maxWork = 1;
    AssignmentSolution s = solveExact(p, lagrangeOnly);
    checkAgainstBruteForce(p, s, brute, trial);
    closed += s.exact && s.relaxedNodes == 0 && brute.feasible;
    AssignmentSolution t = solveExact(p);
    checkAgainstBruteForce(p, t, brute, trial);
    EXPECT_TRUE(t.exact) << "trial " << trial;
  }
  EXPECT_GT(binding, 150);
  EXPECT_GT(closed, 10); // the bound closes on some problems
}
