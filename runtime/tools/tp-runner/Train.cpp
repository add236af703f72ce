//===- Train.cpp - tp-runner's training loop --------------------*- C++ -*-===//
//
// See Train.h. The loop needs no copy: the step's results are written into
// the output buffers, and before the next call every updated output trades
// its buffer with the argument it updates. After the last call the outputs
// hold the last step's results (the --output file), and the arguments the
// state the last step started from.
//
//===----------------------------------------------------------------------===//

#include "Train.h"

#include "Init.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

using namespace tprun;

namespace {

std::string field(size_t position, const char *name) {
  return "field \"buffers[" + std::to_string(position) + "]." + name + "\"";
}

std::string axesText(const Model &model, const Buffer &buffer) {
  std::string text = "[";
  for (size_t d = 0; d < buffer.dimAxes.size(); ++d) {
    text += d ? ", " : "";
    if (buffer.dimAxes[d].empty())
      text += "-";
    for (size_t i = 0; i < buffer.dimAxes[d].size(); ++i)
      text += (i ? "+" : "") + model.axisNames[size_t(buffer.dimAxes[d][i])];
  }
  return text + "]";
}

} // namespace

void tprun::checkUpdates(const Model &model) {
  std::vector<size_t> argumentAt;   // argument index -> buffer position
  std::vector<long> updatedBy;      // argument index -> output index
  size_t firstOutput = model.buffers.size();
  for (size_t k = 0; k < model.buffers.size(); ++k) {
    if (model.buffers[k].role == Role::Output) {
      firstOutput = std::min(firstOutput, k);
      continue;
    }
    argumentAt.push_back(k);
    updatedBy.push_back(-1);
  }
  bool training = false;
  for (size_t k = firstOutput; k < model.buffers.size(); ++k) {
    const Buffer &out = model.buffers[k];
    if (out.updates < 0)
      continue;
    training = true;
    std::string at = field(k, "updates");
    if (size_t(out.updates) >= argumentAt.size())
      throw ModelError(at + " is " + std::to_string(out.updates) +
                       " but the model has " +
                       std::to_string(argumentAt.size()) + " arguments");
    if (updatedBy[size_t(out.updates)] >= 0)
      throw ModelError(at + " is " + std::to_string(out.updates) +
                       ", which output " +
                       std::to_string(updatedBy[size_t(out.updates)]) +
                       " already updates");
    updatedBy[size_t(out.updates)] = long(out.index);
    const Buffer &arg = model.buffers[argumentAt[size_t(out.updates)]];
    std::string pair = "output " + std::to_string(out.index) +
                       " updates argument " + std::to_string(arg.index) +
                       " \"" + arg.name + "\" but ";
    if (out.dtype != arg.dtype)
      throw ModelError(at + ": " + pair + "its dtype is " +
                       dtypeName(out.dtype) + ", the argument's " +
                       dtypeName(arg.dtype));
    if (out.globalShape != arg.globalShape)
      throw ModelError(at + ": " + pair +
                       "their global shapes differ");
    if (out.partial)
      throw ModelError(at + ": " + pair +
                       "it is partial (an argument holds whole values)");
    if (out.dimAxes != arg.dimAxes)
      throw ModelError(at + ": " + pair + "its layout " +
                       axesText(model, out) + " differs from the argument's " +
                       axesText(model, arg) +
                       " (the buffers must trade places)");
  }
  if (!training)
    return;
  if (firstOutput == model.buffers.size())
    return;
  const Buffer &loss = model.buffers[firstOutput];
  if (loss.updates >= 0 || !loss.globalShape.empty() || !isFloat(loss.dtype))
    throw ModelError(field(firstOutput, "global_shape") +
                     ": the first output of a training step is its loss, a "
                     "floating-point scalar that updates no argument");
}

TrainingLoop::TrainingLoop(const Model &model) : model(model) {
  std::vector<size_t> argumentAt;
  for (size_t k = 0; k < model.buffers.size(); ++k)
    if (model.buffers[k].role != Role::Output)
      argumentAt.push_back(k);
  bool first = true;
  for (size_t k = 0; k < model.buffers.size(); ++k) {
    const Buffer &buffer = model.buffers[k];
    if (buffer.role != Role::Output)
      continue;
    if (first)
      loss = k;
    first = false;
    if (buffer.updates >= 0)
      swaps.push_back({k, argumentAt[size_t(buffer.updates)]});
  }
}

bool TrainingLoop::openLossFile(const std::string &path, std::string &error) {
  lossPath = path;
  lossFile = std::fopen(path.c_str(), "w");
  if (!lossFile)
    error = "cannot open " + path + " for writing: " + std::strerror(errno);
  return lossFile != nullptr;
}

void TrainingLoop::advance(std::vector<void *> &pointers) const {
  for (auto [output, argument] : swaps)
    std::swap(pointers[output], pointers[argument]);
}

void TrainingLoop::record(int rank, const std::vector<char> &data, bool timed,
                          const tprt_stats &before, const tprt_stats &after,
                          double seconds) {
  double value = loadDouble(model.buffers[loss].dtype, data.data(), 0);
  losses.push_back(value);
  if (timed) {
    for (int k = 0; k < TPRT_NUM_COLLECTIVES; ++k) {
      excluded.calls[k] += after.calls[k] - before.calls[k];
      excluded.bytes[k] += after.bytes[k] - before.bytes[k];
      excluded.bytes_sent[k] += after.bytes_sent[k] - before.bytes_sent[k];
      excluded.seconds[k] += after.seconds[k] - before.seconds[k];
    }
    excludedSeconds += seconds;
  }
  if (rank != 0)
    return;
  std::printf("step %ld loss %.8g\n", long(losses.size()), value);
  std::fflush(stdout);
  if (lossFile &&
      std::fprintf(lossFile, "step %ld loss %.9g\n", long(losses.size()),
                   value) < 0)
    writeFailed = true;
}

void TrainingLoop::discount(tprt_stats &after, double &seconds) const {
  for (int k = 0; k < TPRT_NUM_COLLECTIVES; ++k) {
    after.calls[k] -= excluded.calls[k];
    after.bytes[k] -= excluded.bytes[k];
    after.bytes_sent[k] -= excluded.bytes_sent[k];
    after.seconds[k] -= excluded.seconds[k];
  }
  seconds = std::max(0.0, seconds - excludedSeconds);
}

bool TrainingLoop::finish(std::string &error) {
  if (!lossFile)
    return true;
  bool ok = !writeFailed && std::fflush(lossFile) == 0;
  ok &= std::fclose(lossFile) == 0;
  lossFile = nullptr;
  if (!ok)
    error = "cannot write " + lossPath + ": " + std::strerror(errno);
  return ok;
}
