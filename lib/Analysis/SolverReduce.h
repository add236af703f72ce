//===- SolverReduce.h - exact reductions before the elimination -*- C++ -*-===//
//
// Dominated choices removed and single-choice nodes folded into their
// neighbours (SolverReduce.cpp), with the map back to the original problem.
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_SOLVERREDUCE_H
#define TP_ANALYSIS_SOLVERREDUCE_H

#include "tp/Analysis/Solver.h"

namespace mlir::tp::detail {

struct ProblemReduction {
  /// The reduced problem: the nodes with two or more live choices, their
  /// live choices, folded neighbours' edges as unary costs, the budget less
  /// the folded nodes' memory.
  AssignmentProblem problem;
  /// Reduced node -> original node; reduced (node, choice) -> original
  /// choice.
  std::vector<int> nodeOf;
  std::vector<std::vector<int>> choiceOf;
  /// Original node -> reduced node, or -1 when folded.
  std::vector<int> reducedOf;
  /// Original node -> its only live choice when folded, else -1.
  std::vector<int> fixedChoice;
  /// The elimination groups of the reduced nodes (empty when none given).
  std::vector<int> groups;
  double constantCost = 0;
  double constantMemory = 0;
  int prunedChoices = 0;
  int foldedNodes = 0;
  /// A node has no live choice: nothing is feasible (proven).
  bool infeasible = false;
};

/// Removes dominated choices (memory-aware when `respectMemory`, which also
/// drops choices over the budget on their own) and folds single-choice
/// nodes. Exact: the reduced problem's optimum, expanded, is an optimum of
/// `problem` (under its budget when `respectMemory`, without it otherwise).
ProblemReduction reduceProblem(const AssignmentProblem &problem,
                               bool respectMemory,
                               const std::vector<int> &groups);

/// Maps a solution of `red.problem` back to `problem`, with cost and memory
/// evaluated there and the lower bound shifted by the folded constants.
AssignmentSolution expandSolution(const AssignmentProblem &problem,
                                  const ProblemReduction &red,
                                  AssignmentSolution reduced);

} // namespace mlir::tp::detail

#endif // TP_ANALYSIS_SOLVERREDUCE_H
