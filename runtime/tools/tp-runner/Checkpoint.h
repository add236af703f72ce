//===- Checkpoint.h - A .safetensors checkpoint of global tensors -*- C++ -*-===//
//
// tp-runner --checkpoint FILE: the global values of inputs and params, read
// from a safetensors file (https://github.com/huggingface/safetensors): a
// u64 little-endian header length N, N bytes of JSON
//
//   {"NAME": {"dtype": "F32", "shape": [256, 64], "data_offsets": [B, E]},
//    ..., "__metadata__": {...}}
//
// then the data, each tensor row-major at [B, E) of the bytes after the
// header. The file is mapped read-only; each rank copies only its blocks.
// Little-endian hosts only (the file's byte order).
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_CHECKPOINT_H
#define TP_RUNNER_CHECKPOINT_H

#include "Model.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tprun {

struct CheckpointTensor {
  std::string name;
  std::string dtype; // as written: "F32", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; // data_offsets
};

class Checkpoint {
public:
  Checkpoint() = default;
  Checkpoint(const Checkpoint &) = delete;
  Checkpoint &operator=(const Checkpoint &) = delete;
  ~Checkpoint();

  /// Maps and checks the file: the header parses, every tensor has a dtype,
  /// a shape and data_offsets inside the file that hold as many bytes as
  /// the shape needs. On failure returns false and sets `error` (a message
  /// naming the file and, where it applies, the tensor).
  bool open(const std::string &path, std::string &error);

  const std::string &path() const { return filePath; }
  const std::vector<CheckpointTensor> &tensors() const { return entries; }
  /// The tensor called `name`, or null.
  const CheckpointTensor *find(const std::string &name) const;
  /// The first byte of a tensor's data.
  const char *data(const CheckpointTensor &tensor) const {
    return dataStart + tensor.begin;
  }

private:
  std::string filePath;
  void *mapping = nullptr;
  size_t mappingSize = 0;
  const char *dataStart = nullptr;
  std::vector<CheckpointTensor> entries;
  std::map<std::string, size_t> byName;
};

/// The safetensors dtype holding `dtype` ("F32", ..., "I8", "BOOL" for i1).
const char *safetensorsDType(DType dtype);

/// Why `tensor` cannot fill `buffer` ("checkpoint tensor "w" has shape [10,
/// 8] but the model expects [256, 64]"), or "" when it can.
std::string checkTensor(const CheckpointTensor &tensor, const Buffer &buffer);

} // namespace tprun

#endif // TP_RUNNER_CHECKPOINT_H
