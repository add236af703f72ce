//===- SolverTest.cpp - the exact assignment solver -------------*- C++ -*-===//

#include "tp/Analysis/Solver.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace mlir::tp;

namespace {

constexpr double kInf = AssignmentProblem::kInfinity;

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
    EXPECT_LE(s.width, 3) << layers << " layers";
    EXPECT_LE(s.memory, p.memoryBudget);
  }
}
