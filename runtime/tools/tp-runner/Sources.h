//===- Sources.h - Where each input and param gets its value ----*- C++ -*-===//
//
// One decision per input and param, made by every rank for the whole model
// before anything is allocated (docs/model-abi.md, "Checkpoints"):
//
//   1. the --checkpoint tensor of the buffer's name, when there is one;
//   2. for an input, the --reference tensor of its name (a reference file
//      that also holds the model's inputs, e.g. input_ids);
//   3. the buffer's `init` (its generator in model.json);
//   4. for a floating-point buffer whose `init` is null, when no file was
//      consulted: the default init, normal(std 0.02, seed = argument
//      index); with a --checkpoint (or, for an input, a --reference) that
//      lacks it, or for integers, an error.
//
// With --require-all, step 3 and 4 are errors. A tensor must have the
// buffer's global shape (with a `source`, the stored tensor's shape: the
// buffer is a block of it) and its dtype, or both must be floating-point
// (converted on load, Init.h). With --reference every output must have a
// tensor of its name and global shape there (Reference.h compares them).
// Then each rank fills its blocks; a weight (param) read from a file must be
// finite in this rank's block, and an integer buffer with an `index_bound`
// must hold indices in [0, index_bound).
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_SOURCES_H
#define TP_RUNNER_SOURCES_H

#include "Checkpoint.h"
#include "Model.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tprun {

struct SourceOptions {
  std::string checkpoint; // --checkpoint PATH ("": none)
  std::string reference;  // --reference PATH ("": none)
  bool requireAll = false;
};

class Sources {
public:
  /// Opens the files and decides every buffer's source; appends one message
  /// per problem to `errors`.
  void plan(const Model &model, const SourceOptions &options,
            std::vector<std::string> &errors);

  /// Fills the local block at `offsets` of input or param `k`; appends a
  /// message to `errors` when a param read from a file holds a value that
  /// is not finite (the first one of this block).
  void fill(size_t k, const std::vector<int64_t> &offsets, void *data,
            std::vector<std::string> &errors) const;

  /// Rank 0's report lines: what each file provided, the dtype
  /// conversions, the default inits.
  void printReport() const;

  const Checkpoint &referenceFile() const { return reference; }
  /// The reference tensor of output `k` (null without --reference).
  const CheckpointTensor *referenceFor(size_t k) const {
    return k < referenceTensors.size() ? referenceTensors[k] : nullptr;
  }

private:
  enum class Kind { None, Checkpoint, Reference, Init, Default };
  struct Choice {
    Kind kind = Kind::None;
    const CheckpointTensor *tensor = nullptr;
  };

  /// "checkpoint C has no tensor "x" (the model's input 0, WHY)".
  std::string missing(const Buffer &buffer, bool inReference,
                      const std::string &why) const;
  void noteConversion(const std::string &role, const CheckpointTensor &tensor,
                      const Buffer &buffer);
  /// Appends a message naming the first element of the local block of
  /// buffer `k` outside [0, index_bound), if any.
  void checkIndexBound(size_t k, const std::vector<int64_t> &offsets,
                       const void *data,
                       std::vector<std::string> &errors) const;
  /// Appends a message naming the first element of buffer `k`'s local
  /// block that its tp.init drew past its element type's range (a normal
  /// or uniform draw that overflows f16, say), if any.
  void checkInitFinite(size_t k, const std::vector<int64_t> &offsets,
                       const void *data,
                       std::vector<std::string> &errors) const;

  const Model *model = nullptr;
  SourceOptions options;
  Checkpoint checkpoint, reference;
  std::vector<Choice> choices;
  std::vector<const CheckpointTensor *> referenceTensors;
  size_t fromCheckpoint = 0, fromReference = 0, fromInit = 0, fromDefault = 0,
         referenceOutputs = 0;
  std::set<std::string> usedCheckpoint, usedReference;
  /// (role, "bf16 -> f32") -> the tensors converted so.
  std::map<std::pair<std::string, std::string>, std::set<std::string>>
      conversions;
};

} // namespace tprun

#endif // TP_RUNNER_SOURCES_H
