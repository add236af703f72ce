//===- Train.cpp - tp-run --train -------------------------------*- C++ -*-===//
//
// See Train.h. The loss files are tp-runner's --loss-file: one line
// `step N loss X` per step, N from 1, X printed with 9 significant digits
// (an f32 loss exactly).
//
//===----------------------------------------------------------------------===//

#include "Train.h"

#include "Process.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;

namespace {

cl::OptionCategory &category() {
  static cl::OptionCategory c("tp-run training options (docs/training.md)");
  return c;
}

cl::opt<bool> train(
    "train",
    cl::desc("Run training steps: with --preset, generate the model with "
             "tp-gen --train; --steps K runs K steps (each fed the previous "
             "step's updated parameters and optimizer state) and --check "
             "compares the loss curve with the unsharded run's, step by "
             "step (--tolerance, default 1e-4); with --dp the ranks split "
             "the batch and the plan sums the gradients over \"dp\""),
    cl::cat(category()));

/// The losses of a --loss-file, in step order.
std::vector<double> readLosses(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    tprun::die("cannot read the loss curve '" + path + "'");
  std::vector<double> losses;
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (auto [i, line] : llvm::enumerate(lines)) {
    SmallVector<StringRef> words;
    line.split(words, ' ', -1, false);
    int64_t step = 0;
    double value = 0;
    if (words.size() != 4 || words[0] != "step" || words[2] != "loss" ||
        words[1].getAsInteger(10, step) || step != int64_t(i) + 1 ||
        words[3].getAsDouble(value))
      tprun::die(formatv("'{0}' line {1} is \"{2}\", expected \"step {3} loss "
                   "VALUE\"",
                   path, i + 1, line, i + 1));
    losses.push_back(value);
  }
  if (losses.empty())
    tprun::die("the loss curve '" + path + "' is empty");
  return losses;
}

void printTrend(const std::vector<double> &losses) {
  double first = losses.front(), last = losses.back();
  outs() << formatv("loss: {0:F6} at step 1, {1:F6} at step {2} ({3})\n",
                    first, last, losses.size(),
                    last < first ? "decreased" : "did not decrease");
}

} // namespace

cl::OptionCategory &tprun::trainCategory() { return category(); }

bool tprun::trainRequested() { return train; }

void tprun::addTrainGenOptions(std::vector<std::string> &args) {
  if (train)
    args.push_back("--train");
}

void tprun::addUpdatesField(json::Object &buffer, mlir::DictionaryAttr attrs) {
  if (!attrs)
    return;
  if (auto updates = attrs.getAs<mlir::IntegerAttr>("tp.updates"))
    buffer["updates"] = updates.getInt();
}

bool tprun::isTrainingStep(const json::Object &model) {
  const json::Array *buffers = model.getArray("buffers");
  if (!buffers)
    return false;
  for (const json::Value &b : *buffers)
    if (const json::Object *o = b.getAsObject())
      if (o->get("updates"))
        return true;
  return false;
}

std::string tprun::lossFilePath(StringRef dir) {
  SmallString<256> path(dir);
  sys::path::append(path, "loss.txt");
  return std::string(path);
}

void tprun::summarizeLossCurve(StringRef path) {
  printTrend(readLosses(path));
}

int tprun::compareLossCurves(StringRef sharded, StringRef unsharded,
                             int devices, double tolerance) {
  double limit = tolerance >= 0 ? tolerance : 1e-4;
  std::vector<double> a = readLosses(sharded), b = readLosses(unsharded);
  if (a.size() != b.size())
    tprun::die(formatv("the runs on {0} ranks and on 1 rank took {1} and {2} "
                 "steps",
                 devices, a.size(), b.size()));
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double scale = std::max(std::fabs(a[i]), std::fabs(b[i]));
    double rel = scale > 0 ? std::fabs(a[i] - b[i]) / scale : 0;
    if (!std::isfinite(a[i]) || !std::isfinite(b[i]))
      rel = INFINITY;
    if (rel > limit) {
      errs() << formatv("tp-run: error: the loss curves differ from step "
                        "{0}: tp={1} has {2:e7}, tp=1 has {3:e7} (relative "
                        "difference {4:e2}, limit {5:e1})\n",
                        i + 1, devices, a[i], b[i], rel, limit);
      return 1;
    }
    worst = std::max(worst, rel);
  }
  outs() << formatv("loss curves match (max rel diff {0:e2}, limit {1:e1}, "
                    "{2} steps)\n",
                    worst, limit, a.size());
  printTrend(a);
  return 0;
}
