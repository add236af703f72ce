//===- Checkpoint.h - Global tensors from .safetensors files ----*- C++ -*-===//
//
// tp-runner --checkpoint PATH (and --reference PATH): named global tensors
// read from safetensors files (https://github.com/huggingface/safetensors),
// in the three shapes the Hugging Face Hub ships them:
//
//   * one FILE.safetensors: a u64 little-endian header length N, N bytes of
//     JSON
//
//       {"NAME": {"dtype": "F32", "shape": [256, 64], "data_offsets": [B, E]},
//        ..., "__metadata__": {...}}
//
//     then the data, each tensor row-major at [B, E) of the bytes after the
//     header;
//   * an index, model.safetensors.index.json (any PATH ending in .json):
//     {"metadata": {...}, "weight_map": {"NAME": "model-00001-of-00002
//     .safetensors", ...}}, each shard a file of the first kind next to the
//     index; the checkpoint's tensors are those of the weight map;
//   * a folder holding model.safetensors.index.json or model.safetensors
//     (else its only *.safetensors.index.json or *.safetensors file).
//
// Every file is mapped read-only and checked when the checkpoint opens (the
// header parses, every tensor's data lies inside its file); each rank then
// copies only its blocks. Little-endian hosts only (the files' byte order).
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_CHECKPOINT_H
#define TP_RUNNER_CHECKPOINT_H

#include "Model.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tprun {

struct CheckpointTensor {
  std::string name;
  std::string dtype; // as written: "F32", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; // data_offsets
  size_t file = 0;             // index into the checkpoint's files
};

/// One mapped .safetensors file.
class SafetensorsFile {
public:
  SafetensorsFile() = default;
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;
  ~SafetensorsFile();

  /// Maps and checks the file: the header parses, every tensor has a dtype,
  /// a shape and data_offsets inside the file that hold as many bytes as
  /// the shape needs. On failure returns false and sets `error` (a message
  /// naming the file and, where it applies, the tensor; `role`, e.g.
  /// "checkpoint", comes before the file's name).
  bool open(const std::string &path, const std::string &role,
            std::string &error);

  const std::string &path() const { return filePath; }
  const std::vector<CheckpointTensor> &tensors() const { return entries; }
  /// The tensor called `name`, or null.
  const CheckpointTensor *find(const std::string &name) const;
  const char *dataStart() const { return data; }

private:
  std::string filePath;
  void *mapping = nullptr;
  size_t mappingSize = 0;
  const char *data = nullptr;
  std::vector<CheckpointTensor> entries;
  std::map<std::string, size_t> byName;
};

/// A checkpoint: one safetensors file, or the shards of an index.
class Checkpoint {
public:
  /// Opens PATH (a file, an index or a folder; see above) and every file it
  /// names. `role` ("checkpoint", "reference") starts the messages.
  bool open(const std::string &path, const std::string &role,
            std::string &error);

  bool isOpen() const { return !files.empty(); }
  /// PATH as given.
  const std::string &path() const { return givenPath; }
  /// Every tensor (of the file, or of the index's weight map).
  const std::vector<CheckpointTensor> &tensors() const { return entries; }
  /// The tensor called `name`, or null.
  const CheckpointTensor *find(const std::string &name) const;
  /// The file holding `tensor` (a shard of an index).
  const std::string &fileOf(const CheckpointTensor &tensor) const {
    return files[tensor.file]->path();
  }
  /// The first byte of a tensor's data.
  const char *data(const CheckpointTensor &tensor) const {
    return files[tensor.file]->dataStart() + tensor.begin;
  }

private:
  bool openIndex(const std::string &index, const std::string &role,
                 std::string &error);

  std::string givenPath;
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::vector<CheckpointTensor> entries;
  std::map<std::string, size_t> byName;
};

/// The safetensors dtype holding `dtype` ("F32", ..., "I8", "BOOL" for i1).
const char *safetensorsDType(DType dtype);
/// The buffer dtype a safetensors dtype holds; false for the dtypes
/// tp-runner does not read (U8, F8_E4M3, ...).
bool dtypeOfSafetensors(const std::string &dtype, DType &out);

/// Why `tensor` cannot fill `buffer` ("checkpoint tensor "w" in FILE has
/// shape [10, 8] but the model expects [256, 64]"), or "" when it can: the
/// buffer's global shape (for a buffer with a source, the stored tensor's
/// shape, source.shape) and the same dtype, or two floating-point dtypes
/// (converted on load). `role` is "checkpoint" or "reference".
std::string checkTensor(const Checkpoint &file, const CheckpointTensor &tensor,
                        const Buffer &buffer, const std::string &role);

/// "[10, 8]".
std::string shapeText(const std::vector<int64_t> &shape);

} // namespace tprun

#endif // TP_RUNNER_CHECKPOINT_H
