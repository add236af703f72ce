//===- Train.h - tp-runner's training loop ----------------------*- C++ -*-===//
//
// A model whose outputs carry `updates` (docs/model-abi.md, "Training
// steps") is one training step: output r is the next value of argument
// `updates`. The runner then runs --steps K as K training steps: between two
// calls of the entry it swaps the buffer pointers of every updated output
// and its argument (no copy), assembles the loss (output 0, a float scalar,
// replicated or partial) after every call, prints it on rank 0 and writes it
// to --loss-file. The collectives and the time spent assembling the loss are
// not part of the step's figures.
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_TRAIN_H
#define TP_RUNNER_TRAIN_H

#include "Model.h"

#include "tprt/tprt.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace tprun {

/// Checks the `updates` fields of a loaded model: each names an argument
/// that exists, is updated by one output only and has the output's dtype,
/// shapes and layout (so that the two buffers can trade places), and output
/// 0 of a training step is a float scalar that updates nothing (the loss).
/// Throws ModelError naming the field.
void checkUpdates(const Model &model);

/// The training loop's state: which buffers trade places, the losses so
/// far, and the runtime figures that assembling them cost.
class TrainingLoop {
public:
  explicit TrainingLoop(const Model &model);

  /// Whether the model is a training step (some output has `updates`).
  bool active() const { return !swaps.empty(); }
  /// Position in Model::buffers of the loss (output 0).
  size_t lossBuffer() const { return loss; }

  /// Opens --loss-file (rank 0 only); false with `error` set on failure.
  bool openLossFile(const std::string &path, std::string &error);
  /// Before every call but the first: each updated output becomes the
  /// argument it updates, and the argument's old buffer receives the next
  /// result.
  void advance(std::vector<void *> &pointers) const;
  /// After a call: the loss's global value (`data`, as the runner assembled
  /// it). Rank 0 prints `step N loss X` and appends it to the loss file.
  /// `costs` are the runtime's counters before and after the assembly,
  /// `seconds` its wall time; for a timed step they are set aside.
  void record(int rank, const std::vector<char> &data, bool timed,
              const tprt_stats &before, const tprt_stats &after,
              double seconds);
  /// Removes what the timed steps' loss assemblies cost from the
  /// measurement of the timed steps.
  void discount(tprt_stats &after, double &seconds) const;
  /// Closes the loss file; false when it could not be written.
  bool finish(std::string &error);

  long steps() const { return long(losses.size()); }
  const std::vector<double> &history() const { return losses; }

private:
  const Model &model;
  /// Pairs of positions in Model::buffers: (updated output, its argument).
  std::vector<std::pair<size_t, size_t>> swaps;
  size_t loss = 0;
  std::vector<double> losses;
  std::FILE *lossFile = nullptr;
  std::string lossPath;
  bool writeFailed = false;
  tprt_stats excluded = {};
  double excludedSeconds = 0;
};

} // namespace tprun

#endif // TP_RUNNER_TRAIN_H
