//===- ModelConfig.h - shapes and options of a generated model --*- C++ -*-===//
//
// The description of a Transformer that tp-gen builds: its architecture, its
// shapes, the element type and which parts of the network the generated
// function covers. Presets carry the published shapes; docs/models.md lists
// them.
//
//===----------------------------------------------------------------------===//

#ifndef TP_MODELS_MODELCONFIG_H
#define TP_MODELS_MODELCONFIG_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::tp::models {

/// The decoder architectures tp-gen knows.
enum class Arch {
  /// Learned position embedding, pre-LayerNorm, fused QKV with biases,
  /// GELU-tanh MLP, LM head tied to the token embedding.
  GPT2,
  /// RMSNorm, separate Q/K/V without biases, grouped-query attention, rotary
  /// position embedding, SwiGLU MLP, untied LM head.
  Llama,
};

/// The element type of activations and weights.
enum class DType { F32, F16, BF16 };

/// Which parts of the network the generated function covers.
enum class Scope {
  /// The decoder blocks only: hidden states in, hidden states out.
  BlocksOnly,
  /// Decoder blocks, final norm and LM head: hidden states in, logits out.
  Default,
  /// Token (and position) embedding too: token ids in, logits out.
  WithEmbedding,
};

struct ModelConfig {
  Arch arch = Arch::GPT2;
  /// The preset this configuration started from (informational).
  std::string preset;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  /// Key/value heads; equal to `heads` for multi-head attention.
  int64_t kvHeads = 0;
  /// Inner size of the MLP.
  int64_t ffn = 0;
  int64_t vocab = 0;
  /// Tokens per sequence of the generated function.
  int64_t seq = 0;
  int64_t batch = 1;
  /// Rows of GPT-2's learned position table; unused by Llama.
  int64_t maxPositions = 0;
  /// Epsilon of LayerNorm / RMSNorm.
  double normEps = 1e-5;
  /// Base of the rotary frequencies (Llama).
  double ropeTheta = 10000.0;
  /// Standard deviation of the normal initialisation of weights.
  double initStd = 0.02;
  DType dtype = DType::F32;
  Scope scope = Scope::Default;
  /// Append the mean cross-entropy over labels; needs the LM head.
  bool withLoss = false;

  int64_t headDim() const { return hidden / heads; }
  int64_t tokens() const { return batch * seq; }
  /// Query heads per key/value head.
  int64_t groupSize() const { return heads / kvHeads; }
};

/// The preset names, in the order `--help` lists them.
llvm::ArrayRef<llvm::StringRef> getPresetNames();

/// The preset called `name`, or std::nullopt when there is none.
std::optional<ModelConfig> lookupPreset(llvm::StringRef name);

/// The preset tp-gen starts from for `arch` when no preset is named.
llvm::StringRef getDefaultPresetName(Arch arch);

/// The preset `tiny` resolves to for `arch`.
llvm::StringRef getTinyPresetName(Arch arch);

llvm::StringRef stringifyArch(Arch arch);
std::optional<Arch> parseArch(llvm::StringRef name);
llvm::StringRef stringifyDType(DType dtype);
std::optional<DType> parseDType(llvm::StringRef name);

/// Checks that `config` describes a model tp-gen can build. Returns the
/// first problem as a lowercase message without trailing period, or
/// std::nullopt when the configuration is valid.
std::optional<std::string> verifyConfig(const ModelConfig &config);

} // namespace mlir::tp::models

#endif // TP_MODELS_MODELCONFIG_H
