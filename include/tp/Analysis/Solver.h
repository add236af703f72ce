//===- Solver.h - exact min-cost layout assignment --------------*- C++ -*-===//
//
// The optimisation problem behind the planner, stated without MLIR: choose
// one strategy per node of a graph so that the sum of node costs and edge
// costs is minimal while the sum of node "memory" stays within a budget.
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_SOLVER_H
#define TP_ANALYSIS_SOLVER_H

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace mlir::tp {

/// A pairwise min-cost assignment problem with one resource constraint.
struct AssignmentProblem {
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();

  struct Edge {
    int u, v;
    /// Row-major |choices(u)| x |choices(v)| costs; kInfinity forbids a pair.
    std::vector<double> cost;
  };

  /// Per node, per choice: cost (kInfinity forbids the choice) and the
  /// amount of the constrained resource it uses (bytes per device).
  std::vector<std::vector<double>> nodeCost;
  std::vector<std::vector<double>> nodeMemory;
  std::vector<Edge> edges;
  /// Upper bound on the summed memory of the chosen choices.
  double memoryBudget = kInfinity;

  int addNode(std::vector<double> cost, std::vector<double> memory = {});
  void addEdge(int u, int v, std::vector<double> cost);
  int numNodes() const { return static_cast<int>(nodeCost.size()); }
  int numChoices(int node) const {
    return static_cast<int>(nodeCost[node].size());
  }
  /// Cost and memory of a complete assignment (cost is kInfinity when a
  /// forbidden choice or pair is used).
  std::pair<double, double> evaluate(const std::vector<int> &choice) const;
};

struct AssignmentSolution {
  bool feasible = false;
  /// False when the solver had to cap a Pareto front (see maxFrontSize), in
  /// which case the result is feasible but possibly not optimal.
  bool exact = true;
  std::vector<int> choice;
  double cost = AssignmentProblem::kInfinity;
  double memory = 0;
  /// Statistics: elimination width (largest separator) and largest front.
  int width = 0;
  int largestFront = 0;
};

struct SolverOptions {
  /// Pareto fronts (cost vs. memory) larger than this are thinned, which
  /// makes the result inexact; far above what transformer graphs need.
  int maxFrontSize = 4096;
  /// Separators whose assignment table would exceed this many entries are
  /// refused (the solver reports infeasible with exact=false).
  int64_t maxTableSize = int64_t(1) << 24;
  /// Optional elimination groups, one per node: nodes of a lower group are
  /// eliminated first (within a group, in min-weight or weighted min-fill
  /// order, see solveExact). The planner puts the inside of every layer in
  /// group 0 and the values between layers in increasing groups, so that the
  /// Pareto fronts of one layer never travel through the inside of the next
  /// one.
  std::vector<int> eliminationGroup;
};

/// Exact solver: bucket (variable) elimination, where each table entry holds
/// the Pareto front of (cost, memory) over the eliminated nodes. Exact for
/// the constrained problem: a partial solution dominated in both cost and
/// memory can be replaced in any completion by the one that dominates it.
/// Runs in time exponential only in the elimination width. The order is
/// greedy within each elimination group: min-weight (smallest neighbourhood
/// table first), or weighted min-fill (fewest new table entries first) when
/// its simulated work is under half of min-weight's. With a budget, the
/// problem is first solved without it (one-entry fronts); when that optimum
/// fits the budget it is returned (largestFront is then 1), else the
/// constrained problem is solved in the same order.
AssignmentSolution solveExact(const AssignmentProblem &problem,
                              const SolverOptions &options = {});

/// Enumerates every assignment; for tests on small problems.
AssignmentSolution solveBruteForce(const AssignmentProblem &problem);

} // namespace mlir::tp

#endif // TP_ANALYSIS_SOLVER_H
