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
  /// Hugging Face `transformers` layout (tp-gen --hf; forward graphs with
  /// the embedding only): the parameters have the names and shapes of the
  /// model's state dict (`transformer.` / `model.` prefixes, GPT-2's fused
  /// c_attn as [H, 3H], Llama's nn.Linear weights as [out, in]), every
  /// argument and the result carry `tp.name`, and the logits are
  /// [B, S, V] (docs/models.md).
  bool hf = false;
  /// Llama with --hf: the LM head is the token embedding (one argument,
  /// `model.embed_tokens.weight`), as `tie_word_embeddings` says.
  bool tieEmbeddings = false;

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

/// Applies the Hugging Face `config.json` held in `json` (GPT2Config or
/// LlamaConfig) to `config`, whose `arch` must already be the file's: the
/// sizes, the norm epsilon, the rotary base and the tying of the LM head.
/// Returns the first problem (unreadable JSON, a missing size, a feature
/// tp-gen does not build) as a lowercase message, or std::nullopt.
std::optional<std::string> applyHFConfig(llvm::StringRef json,
                                         ModelConfig &config);

/// The architecture of the Hugging Face `config.json` held in `json`, read
/// from its `model_type`; on failure std::nullopt and `error` says why.
std::optional<Arch> getHFConfigArch(llvm::StringRef json, std::string &error);

/// Checks that `config` describes a model tp-gen can build. Returns the
/// first problem as a lowercase message without trailing period, or
/// std::nullopt when the configuration is valid.
std::optional<std::string> verifyConfig(const ModelConfig &config);

} // namespace mlir::tp::models

#endif // TP_MODELS_MODELCONFIG_H
