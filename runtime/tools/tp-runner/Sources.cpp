//===- Sources.cpp - Where each input and param gets its value ------------===//

#include "Sources.h"

#include "Init.h"

#include <cmath>
#include <cstdio>

using namespace tprun;

namespace {

/// The standard deviation of the default init (GPT-2's and most Hugging
/// Face models' initializer_range).
constexpr double kDefaultStd = 0.02;

std::string plural(size_t count, const char *word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

std::string valueText(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

/// The flat row-major index of `position` in `shape`.
uint64_t flatIndex(const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &position) {
  uint64_t index = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    index = index * uint64_t(shape[d]) + uint64_t(position[d]);
  return index;
}

} // namespace

std::string Sources::missing(const Buffer &buffer, bool inReference,
                             const std::string &why) const {
  std::string which = "(the model's " + std::string(roleName(buffer.role)) +
                      " " + std::to_string(buffer.index) + why + ")";
  bool inCheckpoint = checkpoint.isOpen();
  if (inCheckpoint && inReference)
    return "neither checkpoint " + checkpoint.path() + " nor reference " +
           reference.path() + " has a tensor \"" + buffer.name + "\" " + which;
  return (inCheckpoint ? "checkpoint " + checkpoint.path()
                       : "reference " + reference.path()) +
         " has no tensor \"" + buffer.name + "\" " + which;
}

void Sources::noteConversion(const std::string &role,
                             const CheckpointTensor &tensor,
                             const Buffer &buffer) {
  DType stored;
  if (!dtypeOfSafetensors(tensor.dtype, stored) || stored == buffer.dtype)
    return;
  conversions[{role, std::string(dtypeName(stored)) + " -> " +
                         dtypeName(buffer.dtype)}]
      .insert(tensor.name);
}

void Sources::plan(const Model &model, const SourceOptions &options,
                   std::vector<std::string> &errors) {
  this->model = &model;
  this->options = options;
  choices.assign(model.buffers.size(), Choice());
  referenceTensors.assign(model.buffers.size(), nullptr);
  std::string error;
  if (!options.checkpoint.empty() &&
      !checkpoint.open(options.checkpoint, "checkpoint", error))
    errors.push_back(error);
  if (!options.reference.empty() &&
      !reference.open(options.reference, "reference", error))
    errors.push_back(error);
  if (!errors.empty())
    return;

  for (size_t k = 0; k < model.buffers.size(); ++k) {
    const Buffer &buffer = model.buffers[k];
    Choice &choice = choices[k];
    if (buffer.role == Role::Output) {
      if (!reference.isOpen())
        continue;
      const CheckpointTensor *tensor = reference.find(buffer.name);
      DType stored;
      if (!tensor)
        errors.push_back("reference " + reference.path() + " has no tensor \"" +
                         buffer.name + "\" (the model's output " +
                         std::to_string(buffer.index) + ")");
      else if (tensor->shape != buffer.globalShape)
        errors.push_back("reference tensor \"" + buffer.name + "\" in " +
                         reference.fileOf(*tensor) + " has shape " +
                         shapeText(tensor->shape) + " but output " +
                         std::to_string(buffer.index) + " has shape " +
                         shapeText(buffer.globalShape));
      else if (!dtypeOfSafetensors(tensor->dtype, stored))
        errors.push_back("reference tensor \"" + buffer.name + "\" in " +
                         reference.fileOf(*tensor) + " has dtype " +
                         tensor->dtype + ", which tp-runner does not read");
      else {
        referenceTensors[k] = tensor;
        usedReference.insert(buffer.name);
        ++referenceOutputs;
      }
      continue;
    }

    // 1. The checkpoint.
    if (const CheckpointTensor *tensor =
            checkpoint.isOpen() ? checkpoint.find(buffer.name) : nullptr) {
      std::string mismatch =
          checkTensor(checkpoint, *tensor, buffer, "checkpoint");
      if (!mismatch.empty()) {
        errors.push_back(mismatch);
        continue;
      }
      choice = {Kind::Checkpoint, tensor};
      usedCheckpoint.insert(buffer.name);
      noteConversion("checkpoint", *tensor, buffer);
      ++fromCheckpoint;
      continue;
    }
    // 2. The reference's inputs.
    bool inReference = buffer.role == Role::Input && reference.isOpen();
    if (const CheckpointTensor *tensor =
            inReference ? reference.find(buffer.name) : nullptr) {
      std::string mismatch =
          checkTensor(reference, *tensor, buffer, "reference");
      if (!mismatch.empty()) {
        errors.push_back(mismatch);
        continue;
      }
      choice = {Kind::Reference, tensor};
      usedReference.insert(buffer.name);
      noteConversion("reference", *tensor, buffer);
      ++fromReference;
      continue;
    }
    // 3. Its init; 4. the default.
    bool consulted = checkpoint.isOpen() || inReference;
    if (options.requireAll)
      errors.push_back(missing(buffer, inReference, "; --require-all"));
    else if (buffer.hasInit) {
      choice.kind = Kind::Init;
      ++fromInit;
    } else if (consulted)
      errors.push_back(missing(buffer, inReference, ", which has no init"));
    else if (!isFloat(buffer.dtype))
      errors.push_back("the model's " + std::string(roleName(buffer.role)) +
                       " " + std::to_string(buffer.index) + " \"" +
                       buffer.name + "\" holds integers (" +
                       dtypeName(buffer.dtype) +
                       ") and has no init: give its value in a --checkpoint "
                       "(a tensor \"" +
                       buffer.name + "\")");
    else {
      choice.kind = Kind::Default;
      ++fromDefault;
    }
  }
}

void Sources::fill(size_t k, const std::vector<int64_t> &offsets, void *data,
                   std::vector<std::string> &errors) const {
  const Buffer &buffer = model->buffers[k];
  const Choice &choice = choices[k];
  switch (choice.kind) {
  case Kind::None:
  case Kind::Init:
    fillLocal(buffer, offsets, data);
    checkIndexBound(k, offsets, data, errors);
    checkInitFinite(k, offsets, data, errors);
    return;
  case Kind::Default: {
    Buffer drawn = buffer;
    drawn.init.kind = Init::Kind::Normal;
    drawn.init.seed = uint64_t(buffer.index);
    drawn.init.std = kDefaultStd;
    fillLocal(drawn, offsets, data);
    return;
  }
  case Kind::Checkpoint:
  case Kind::Reference:
    break;
  }
  const Checkpoint &file =
      choice.kind == Kind::Checkpoint ? checkpoint : reference;
  const CheckpointTensor &tensor = *choice.tensor;
  DType stored = buffer.dtype;
  dtypeOfSafetensors(tensor.dtype, stored);
  const char *global = file.data(tensor);
  if (stored == buffer.dtype)
    copyLocal(buffer, offsets, global, data);
  else
    copyLocalConverted(buffer, offsets, stored, global, data);
  checkIndexBound(k, offsets, data, errors);
  // Weights must be finite (inputs may hold -inf, e.g. attention masks).
  if (buffer.role != Role::Param || !isFloat(buffer.dtype))
    return;
  for (int64_t l = 0, n = buffer.localElements(); l < n; ++l) {
    double value = loadDouble(buffer.dtype, data, l);
    if (std::isfinite(value))
      continue;
    // The position in the file's tensor (a piece's stored tensor).
    std::vector<int64_t> position = storedPosition(buffer, offsets, l);
    double original =
        loadDouble(stored, global,
                   int64_t(flatIndex(buffer.hasSource ? buffer.sourceShape
                                                      : buffer.globalShape,
                                     position)));
    std::string named =
        (choice.kind == Kind::Checkpoint ? "checkpoint" : "reference") +
        std::string(" tensor \"") + tensor.name + "\" in " +
        file.fileOf(tensor);
    std::string which = " (the model's param " + std::to_string(buffer.index) +
                        "; weights must be finite)";
    if (std::isfinite(original))
      errors.push_back(named + " holds " + valueText(original) + " at index " +
                       shapeText(position) + ", which overflows " +
                       dtypeName(buffer.dtype) + which);
    else
      errors.push_back(named + " holds " + valueText(original) + " at index " +
                       shapeText(position) + which);
    return;
  }
}

void Sources::checkInitFinite(size_t k, const std::vector<int64_t> &offsets,
                              const void *data,
                              std::vector<std::string> &errors) const {
  const Buffer &buffer = model->buffers[k];
  if (!isFloat(buffer.dtype) || (buffer.init.kind != Init::Kind::Normal &&
                                 buffer.init.kind != Init::Kind::Uniform))
    return;
  for (int64_t l = 0, n = buffer.localElements(); l < n; ++l) {
    if (std::isfinite(loadDouble(buffer.dtype, data, l)))
      continue;
    std::vector<int64_t> position = storedPosition(buffer, offsets, l);
    uint64_t flat = flatIndex(
        buffer.hasSource ? buffer.sourceShape : buffer.globalShape, position);
    bool normal = buffer.init.kind == Init::Kind::Normal;
    double drawn =
        normal ? initNormal(buffer.init.seed, buffer.init.std, flat)
               : initUniform(buffer.init.seed, buffer.init.scale, flat);
    errors.push_back(
        "the model's " + std::string(roleName(buffer.role)) + " " +
        std::to_string(buffer.index) + " \"" + buffer.name + "\": its tp.init (" +
        (normal ? "normal, std " + valueText(buffer.init.std)
                : "uniform, scale " + valueText(buffer.init.scale)) +
        ") draws " + valueText(drawn) + " at index " + shapeText(position) +
        ", which overflows " + dtypeName(buffer.dtype) +
        " (a smaller std or scale, or a wider element type)");
    return;
  }
}

void Sources::checkIndexBound(size_t k, const std::vector<int64_t> &offsets,
                              const void *data,
                              std::vector<std::string> &errors) const {
  const Buffer &buffer = model->buffers[k];
  if (buffer.indexBound <= 0)
    return;
  for (int64_t l = 0, n = buffer.localElements(); l < n; ++l) {
    int64_t value;
    switch (buffer.dtype) {
    case DType::I64:
      value = static_cast<const int64_t *>(data)[l];
      break;
    case DType::I32:
      value = static_cast<const int32_t *>(data)[l];
      break;
    case DType::I8:
      value = static_cast<const int8_t *>(data)[l];
      break;
    default: // i1: 0 or 1; floats have no bound (Model.cpp)
      value = static_cast<const uint8_t *>(data)[l];
      break;
    }
    if (value >= 0 && value < buffer.indexBound)
      continue;
    const Choice &choice = choices[k];
    std::string from;
    if (choice.kind == Kind::Checkpoint || choice.kind == Kind::Reference) {
      const Checkpoint &file =
          choice.kind == Kind::Checkpoint ? checkpoint : reference;
      from = "; its values come from " +
             std::string(choice.kind == Kind::Checkpoint ? "checkpoint"
                                                         : "reference") +
             " " + file.fileOf(*choice.tensor);
    } else if (buffer.init.kind == Init::Kind::Integers) {
      from = "; its init draws integers below " +
             std::to_string(buffer.init.high) + " (tp-run --input-high)";
    }
    errors.push_back(
        std::string(roleName(buffer.role)) + " " +
        std::to_string(buffer.index) + " \"" + buffer.name + "\" holds " +
        std::to_string(value) + " at index " +
        shapeText(storedPosition(buffer, offsets, l)) + ", outside [0, " +
        std::to_string(buffer.indexBound) +
        "): the model indexes a dimension of " +
        std::to_string(buffer.indexBound) + " with its values" + from);
    return;
  }
}

void Sources::printReport() const {
  if (checkpoint.isOpen()) {
    std::string others = std::to_string(fromInit) + " from init";
    if (fromReference)
      others += ", " + std::to_string(fromReference) + " from the reference";
    std::printf("checkpoint: %s: %zu of %zu inputs and params loaded, %s; "
                "%zu of its %zu tensors unused\n",
                checkpoint.path().c_str(), fromCheckpoint,
                fromCheckpoint + fromReference + fromInit + fromDefault,
                others.c_str(),
                checkpoint.tensors().size() - usedCheckpoint.size(),
                checkpoint.tensors().size());
  }
  if (reference.isOpen())
    std::printf("reference: %s: %s loaded, %s to compare; %zu of its %zu "
                "tensors unused\n",
                reference.path().c_str(),
                plural(fromReference, "input").c_str(),
                plural(referenceOutputs, "output").c_str(),
                reference.tensors().size() - usedReference.size(),
                reference.tensors().size());
  for (const auto &[key, names] : conversions)
    std::printf("%s: converted %s %s\n", key.first.c_str(),
                plural(names.size(), "tensor").c_str(), key.second.c_str());
  if (fromDefault)
    std::printf("default init: %zu of %zu inputs and params have no init: "
                "normal(std %g, seed = argument index)\n",
                fromDefault,
                fromCheckpoint + fromReference + fromInit + fromDefault,
                kDefaultStd);
}
