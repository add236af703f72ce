//===- Solver.h - min-cost layout assignment --------------------*- C++ -*-===//
//
// The optimisation problem behind the planner, stated without MLIR: choose
// one strategy per node of a graph so that the sum of node costs and edge
// costs is minimal while the sum of node "memory" stays within a budget.
// solveExact answers exactly when bucket elimination fits its limits, else
// by conditioning on a cutset with a proven lower bound (Solver.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_SOLVER_H
#define TP_ANALYSIS_SOLVER_H

#include <cstdint>
#include <limits>
#include <set>
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
  /// True when the answer is proven: `choice` is optimal, or, with
  /// feasible false, no assignment satisfies the constraints. False when
  /// the result is feasible but possibly not optimal (a Pareto front was
  /// capped, see maxFrontSize, or the search fell back to conditioning and
  /// could not close the gap), or, with feasible false, when the search
  /// gave up without finding a feasible assignment or proving there is
  /// none.
  bool exact = true;
  std::vector<int> choice;
  double cost = AssignmentProblem::kInfinity;
  double memory = 0;
  /// A proven lower bound on the optimal cost: `cost` itself when exact
  /// (kInfinity when proven infeasible).
  double lowerBound = AssignmentProblem::kInfinity;
  /// Relative optimality gap (cost - lowerBound) / max(|cost|, tiny): 0 when
  /// exact, kInfinity when infeasible without proof.
  double gap = 0;
  /// Nodes the fallback conditioned on (split in its relaxation); 0 when the
  /// exact elimination ran on the whole problem.
  int relaxedNodes = 0;
  /// Statistics: elimination width (largest separator) and largest front,
  /// over all the eliminations run.
  int width = 0;
  int largestFront = 0;
  /// Eliminations run: 1 or 2 for the exact path (two with a binding
  /// budget, see solveExact), more in the fallback.
  int solves = 0;
  /// Choices removed as dominated before the elimination (of the pass
  /// that produced the answer; SolverReduce.cpp).
  int prunedChoices = 0;
};

struct SolverOptions {
  /// Pareto fronts (cost vs. memory) larger than this are thinned, which
  /// makes the result inexact; far above what transformer graphs need.
  int maxFrontSize = 4096;
  /// The exact elimination of the whole problem runs only when the
  /// simulated order keeps every separator table within maxTableSize
  /// entries and the simulated work (the sum over eliminated nodes of
  /// table size x choices) within maxWork; this is decided up front, before
  /// any table is built. Otherwise the solver falls back to conditioning on
  /// a cutset (see solveExact), whose eliminations obey the same limits.
  int64_t maxTableSize = int64_t(1) << 24;
  double maxWork = double(int64_t(1) << 25);
  /// The same limit for the budget-free min-sum pass on flat tables
  /// (SolverMinSum.cpp), which takes a few nanoseconds per unit of work
  /// instead of tens: 2^29 is about two seconds.
  double maxMinSumWork = double(int64_t(1) << 29);
  /// The elimination with Pareto fronts under a memory budget stops after
  /// combining this many front entries (about 100 ns each: a few
  /// seconds); the Lagrangian search's best plan is then returned with
  /// its gap (issue 27: an 8-layer tiny GPT-2 on a 4 x 2 mesh ran for
  /// minutes in this pass; 2^28 entries took 33 s).
  double maxParetoWork = double(int64_t(1) << 26);
  /// Fallback: when the picked nodes' choice counts multiply to at most
  /// this many assignments (and their solves fit maxFallbackWork), every
  /// one is solved and the answer is exact.
  int maxConditioningSolves = 64;
  /// Fallback: at most this many eliminations (relaxations and conditioned
  /// problems) in all, combining at most maxFallbackWork front entries in
  /// all (20 to 40 ns each: about a second). The cutset is grown until one
  /// elimination of the rest simulates to maxFallbackWork / 64.
  int maxFallbackSolves = 160;
  double maxFallbackWork = double(int64_t(1) << 25);
  /// Remove dominated choices and fold single-choice nodes before the
  /// elimination (SolverReduce.cpp); exact. Off only to test the
  /// elimination and the fallback on the problem as given.
  bool reduce = true;
  /// Fallback: subgradient steps on the Lagrangian relaxation.
  int lagrangeIterations = 48;
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
///
/// When the simulated order exceeds maxTableSize or maxWork (hubs: values
/// read across all layers join them into one clique), the solver picks a
/// cutset S of nodes whose removal makes the order fit, and answers with a
/// feasible assignment, a proven lower bound and the gap between them:
/// exhaustive conditioning on S when that is small (exact), else a
/// Lagrangian relaxation that splits every node of S into one copy per edge
/// (lower bound), conditioned solves with S fixed (upper bounds), local
/// search on S and branch and bound over S's values within
/// maxFallbackSolves and maxFallbackWork. The result is never "gave up" unless
/// that budget runs out before any feasible assignment is found; infeasibility
/// is proven (exact=true) when the relaxation or the whole search finds none.
AssignmentSolution solveExact(const AssignmentProblem &problem,
                              const SolverOptions &options = {});

/// Enumerates every assignment; for tests on small problems.
AssignmentSolution solveBruteForce(const AssignmentProblem &problem);

/// Internals shared by Solver.cpp and SolverFallback.cpp.
namespace detail {

/// A greedy elimination order simulated on a graph, and what it costs.
struct OrderPlan {
  std::vector<int> order;
  /// Sum over eliminated nodes of (neighbourhood table size) x (choices),
  /// with table sizes capped at maxTableSize + 1.
  double work = 0;
  /// Largest separator table (capped at maxTableSize + 1).
  int64_t maxTable = 0;
  /// The largest separator and its eliminated node (the first one over
  /// maxTableSize when the simulation stopped there).
  std::vector<int> worstScope;
  /// Per node, the work of the eliminations whose table it is in (or
  /// whose node it is): what taking it out of the graph would divide by
  /// its choices. When the simulation stopped, the nodes left count with
  /// the tables of their current neighbourhoods.
  std::vector<double> contribution;
  /// Every table within maxTableSize and the work within maxWork (else the
  /// simulation stopped at the first table or the work over its limit).
  bool fits = false;
};

/// Min-weight and weighted min-fill orders (see solveExact) on the graph
/// `adjacency` of nodes with `choices` choices; the chosen one (min-fill
/// when both fit and it halves the work, else the one that fits).
OrderPlan planOrder(const std::vector<int> &choices,
                    const std::vector<std::set<int>> &adjacency,
                    const std::vector<int> &groups, int64_t maxTableSize,
                    double maxWork);

/// The exact two-pass elimination of solveExact in a given order (a
/// permutation of the nodes); ignores options.eliminationGroup. Adds to
/// `effort` the front entries it combined (a measure of its time).
AssignmentSolution solveInOrder(const AssignmentProblem &problem,
                                const SolverOptions &options,
                                const std::vector<int> &order,
                                double *effort = nullptr);

/// Plain min-sum elimination (memory ignored) in a given order, on flat
/// tables (SolverMinSum.cpp): the budget-free pass of solveInOrder. Returns
/// exact = false, infeasible, when a table would exceed maxTableSize.
/// With `lambda`, minimises cost + lambda x memory instead (the
/// Lagrangian of the budget); the solution's cost and memory are the
/// problem's own.
AssignmentSolution solveMinSumInOrder(const AssignmentProblem &problem,
                                      const std::vector<int> &order,
                                      int64_t maxTableSize,
                                      double *effort = nullptr,
                                      double lambda = 0);

/// The fallback of solveExact for problems whose order does not fit;
/// `plan` is the order simulated on the whole problem.
AssignmentSolution solveByConditioning(const AssignmentProblem &problem,
                                       const SolverOptions &options,
                                       const OrderPlan &plan);

/// Fills in lowerBound and gap from cost (exact) or from `lowerBound`.
void finishBounds(AssignmentSolution &solution);

} // namespace detail

} // namespace mlir::tp

#endif // TP_ANALYSIS_SOLVER_H
