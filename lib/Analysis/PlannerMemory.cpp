//===- PlannerMemory.cpp - the liveness budget -------------------*- C++ -*-===//
//
// An absolute `memory-budget=BYTES` bounds what a device holds at its
// fullest: the parameters (weights and optimizer states) plus the peak,
// over program order, of the activations live at once. A value lives from
// the op that defines it to its last use; view-like results alias their
// operand and count nothing. The peak is a maximum over program points,
// not a sum over nodes, so it is not one resource of the solver; it is
// handled by constraint generation:
//
//   P = {} (only the parameters are constrained)
//   loop: solve with memory(node, s) = |P| x params(s)
//                                     + activations(s) x (points of P
//                                       where the node's results live),
//         budget = |P| x BYTES (BYTES when P is empty);
//         if params + peak of the answer <= BYTES: done;
//         else add the answer's peak point to P.
//
// Each problem is a relaxation of the true one (the sum over P of the
// per-point constraints, each of which a feasible plan satisfies), so an
// answer that satisfies every point is optimal for the true problem, and
// a relaxation without a plan proves that none exists. After
// kMaxLivenessRounds without convergence the planner falls back to the
// conservative form (every activation counted at once, an upper bound on
// the peak) for a feasible plan, and reports the gap to the relaxation's
// bound.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::detail;

namespace {
constexpr int kMaxLivenessRounds = 6;
} // namespace

void PlanBuilder::computeLiveIntervals() {
  Block &block = func.getBody().front();
  DenseMap<Operation *, int> position;
  int point = 0;
  for (Operation &op : block)
    position[&op] = point++;
  numPoints = point;
  liveFirst.assign(nodes.size(), -1);
  liveLast.assign(nodes.size(), -1);
  for (int n = 0, e = nodes.size(); n < e; ++n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Op)
      continue;
    int first = position.lookup(node.op), last = -1;
    for (Value r : node.op->getResults())
      for (Operation *user : r.getUsers())
        if (Operation *top = block.findAncestorOpInBlock(*user))
          last = std::max(last, position.lookup(top));
    liveFirst[n] = first;
    // A result nobody reads stays to the end of the function.
    liveLast[n] = last < 0 ? numPoints - 1 : last;
  }
}

std::pair<double, int>
PlanBuilder::activationPeak(const std::vector<int> &choice) const {
  std::vector<double> delta(numPoints + 1, 0.0);
  for (int n = 0, e = nodes.size(); n < e; ++n) {
    if (liveFirst[n] < 0)
      continue;
    double bytes = nodes[n].strategies[choice[n]].activationBytes;
    delta[liveFirst[n]] += bytes;
    delta[liveLast[n] + 1] -= bytes;
  }
  double live = 0, peak = 0;
  int at = 0;
  for (int t = 0; t < numPoints; ++t) {
    live += delta[t];
    if (live > peak) {
      peak = live;
      at = t;
    }
  }
  return {peak, at};
}

void PlanBuilder::checkDeviceMemory(const std::vector<int> &choice,
                                    int point) {
  const DeviceProfile &device = options.device;
  double params = plan.totals.paramBytesPerDevice;
  double acts = plan.totals.activationBytesPerDevice;
  if (params + acts <= device.memoryCapacity)
    return;
  // The largest value live at the peak.
  int largest = -1;
  double largestBytes = 0;
  for (int n = 0, e = nodes.size(); n < e; ++n) {
    if (liveFirst[n] < 0 || liveFirst[n] > point || liveLast[n] < point)
      continue;
    double bytes = nodes[n].strategies[choice[n]].activationBytes;
    if (bytes > largestBytes) {
      largest = n;
      largestBytes = bytes;
    }
  }
  std::string what;
  if (largest >= 0) {
    Operation *op = nodes[largest].op;
    std::string shapes;
    llvm::raw_string_ostream os(shapes);
    llvm::interleaveComma(op->getResultTypes(), os);
    std::string loc;
    llvm::raw_string_ostream los(loc);
    op->getLoc().print(los);
    what = llvm::formatv("; the largest activation live at the peak is the "
                         "result of '{0}' at {1} ({2}), {3:F0} bytes per "
                         "device",
                         op->getName().getStringRef(), loc, shapes,
                         largestBytes)
               .str();
  }
  std::string warning = llvm::formatv(
      "the plan of '{0}' needs {1:F0} bytes per device ({2:F0} of parameters, "
      "{3:F0} of live activations at their peak), more than the {4:F0} bytes "
      "of a {5} device{6}",
      func.getSymName(), params + acts, params, acts, device.memoryCapacity,
      device.name, what);
  emitWarning(largest >= 0 ? nodes[largest].op->getLoc() : func.getLoc())
      << warning;
  plan.remarks.push_back(warning);
}

AssignmentSolution PlanBuilder::solveWithLiveness(AssignmentProblem &problem,
                                                  const SolverOptions &opts,
                                                  double budget) {
  std::vector<int> points;
  AssignmentSolution last;
  double bound = -kInf; // the best relaxation bound
  int solves = 0;
  auto setMemory = [&](bool conservative) {
    int k = int(points.size());
    for (int n = 0, e = nodes.size(); n < e; ++n) {
      std::vector<double> &memory = problem.nodeMemory[n];
      for (auto [c, s] : llvm::enumerate(nodes[n].strategies)) {
        double acts = 0;
        if (conservative)
          acts = s.activationBytes;
        else if (liveFirst[n] >= 0)
          for (int t : points)
            if (liveFirst[n] <= t && t <= liveLast[n])
              acts += s.activationBytes;
        memory[c] = (conservative ? 1 : std::max(k, 1)) * s.paramBytes + acts;
      }
    }
    problem.memoryBudget =
        (conservative ? 1 : std::max(k, 1)) * budget;
  };
  for (int round = 0; round < kMaxLivenessRounds; ++round) {
    setMemory(false);
    last = solveExact(problem, opts);
    solves += last.solves;
    livenessRounds = round + 1;
    if (!last.feasible) {
      // A relaxation without a plan: none exists (when proven).
      last.solves = solves;
      return last;
    }
    // A relaxation's optimum (or proven bound) bounds the true optimum.
    bound = std::max(bound, last.exact ? last.cost : last.lowerBound);
    double params = 0;
    for (int n = 0, e = nodes.size(); n < e; ++n)
      params += nodes[n].strategies[last.choice[n]].paramBytes;
    auto [peak, at] = activationPeak(last.choice);
    if (params + peak <= budget) {
      livenessPoints = points.size();
      last.solves = solves;
      return last; // satisfies every point: optimal if the solve was exact
    }
    if (llvm::is_contained(points, at))
      break; // the aggregate cannot tell this point apart any more
    points.push_back(at);
  }
  livenessPoints = points.size();
  // Not converged: the conservative form (every activation at once) gives
  // a plan that fits; the relaxations bound it from below.
  setMemory(true);
  livenessConservative = true;
  AssignmentSolution safe = solveExact(problem, opts);
  safe.solves += solves;
  if (!safe.feasible) {
    safe.exact = false; // the conservative form is not the problem itself
    safe.lowerBound = bound;
    return safe;
  }
  safe.lowerBound = std::min(safe.cost, std::max(bound, safe.lowerBound));
  if (safe.cost - safe.lowerBound > 1e-9 * std::abs(safe.cost)) {
    safe.exact = false;
    safe.gap = (safe.cost - safe.lowerBound) / std::max(safe.cost, 1e-300);
  }
  return safe;
}
