//===- Model.h - model.json of a compiled model -----------------*- C++ -*-===//
//
// The description of a compiled model (docs/model-abi.md), read and checked:
// every field present with the right type, local shapes consistent with the
// global shapes and the layouts over the mesh.
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_MODEL_H
#define TP_RUNNER_MODEL_H

#include "tprt/tprt.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tprun {

/// A model.json that is not what docs/model-abi.md describes.
class ModelError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class DType { F32, F16, BF16, F64, I64, I32, I8, I1 };

/// The element size in bytes (i1: one byte).
size_t dtypeSize(DType dtype);
const char *dtypeName(DType dtype);
/// The code of the tp-runner output format: the tprt_dtype value for f32,
/// f16, bf16, f64, i32, i64; 6 for i8, 7 for i1.
uint32_t dtypeCode(DType dtype);
/// The dtype a buffer is communicated in: its own, with i8 and i1 widened
/// to i32.
tprt_dtype commDType(DType dtype);
bool isFloat(DType dtype);

enum class Role { Input, Param, Output };
const char *roleName(Role role);

struct Init {
  enum class Kind { Normal, Uniform, Zeros, Ones, Integers };
  Kind kind = Kind::Zeros;
  uint64_t seed = 0;
  double std = 0;   // normal
  double scale = 0; // uniform
  uint64_t high = 0; // integers
};

struct Buffer {
  Role role = Role::Input;
  int64_t index = 0;
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> globalShape, localShape;
  /// The mesh axes (indices into Model::axisSizes) splitting each dimension,
  /// major first.
  std::vector<std::vector<int>> dimAxes;
  bool partial = false;
  tprt_reduction partialKind = TPRT_SUM;
  std::vector<int> partialAxes;
  bool hasInit = false; // inputs and params
  Init init;
  /// Inputs and params (optional "source"): the buffer is the block at
  /// `sourceOffsets` (extent `globalShape`) of a stored tensor of shape
  /// `sourceShape`, e.g. one piece of a fused weight. The checkpoint holds
  /// that tensor, and the init generators index it: global element p is
  /// the stored tensor's element p + sourceOffsets (flat row-major index in
  /// sourceShape). Without "source", sourceOffsets are zeros and
  /// sourceShape is globalShape (the stored tensor is the global value).
  bool hasSource = false;
  std::vector<int64_t> sourceOffsets, sourceShape;
  /// Outputs of a training step: the argument this output replaces on the
  /// next step (optional "updates"; -1: none). See Train.h.
  int64_t updates = -1;
  /// Integer inputs and params whose values index a tensor dimension of
  /// this size (optional "index_bound"; 0: none): every element must lie in
  /// [0, indexBound), checked when the buffer is filled (Sources.h).
  int64_t indexBound = 0;

  int64_t localElements() const;
  int64_t globalElements() const;
};

/// model.json's names of the collectives ("collectives"), by tprt_collective.
extern const char *const kCollectiveNames[TPRT_NUM_COLLECTIVES];

struct Model {
  std::string entry;
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
  std::vector<Buffer> buffers;
  /// Planned collectives per run, by tprt_collective.
  int64_t collectives[TPRT_NUM_COLLECTIVES] = {0, 0, 0, 0};
  /// Tokens one call of the entry processes (optional "tokens"; 0: unknown),
  /// for the throughput line of the report.
  int64_t tokens = 0;

  int64_t devices() const;
  /// The product of the sizes of `axes`.
  int64_t groupSize(const std::vector<int> &axes) const;
  /// "tp=4" or "dp=2 x tp=4"; "(no axes)" for an empty mesh.
  std::string meshText() const;
};

/// Reads and checks model.json; throws ModelError naming the field.
Model loadModel(const std::string &path);
/// The same for the text of a model.json.
Model parseModel(const std::string &text);

/// The symbol of model.so that holds the model.json it was compiled with, a
/// NUL-terminated string (docs/model-abi.md; optional in the ABI, tp-run
/// always emits it).
constexpr const char *kCompiledModelSymbol = "tp_model_json";

/// "" when `model` (model.json) describes the buffers `compiled` (the copy
/// inside model.so) was compiled for: the mesh, and per buffer its role,
/// index, dtype, global and local shape, layout and update; else what
/// differs first ("buffers[1] is param 1 "w": f16 [8, 6] (...) but the
/// library was compiled for param 1 "w": f32 [8, 6] (...)"). Names, inits,
/// sources, tokens and collective counts may differ.
std::string compareCompiledModel(const Model &model, const Model &compiled);

} // namespace tprun

#endif // TP_RUNNER_MODEL_H
