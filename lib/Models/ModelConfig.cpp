//===- ModelConfig.cpp - presets and checks of model shapes -----*- C++ -*-===//
//
// The presets carry the published shapes (GPT-2: Radford et al. 2019 and the
// Hugging Face configs; Llama 2: Touvron et al. 2023; Llama 3: Meta's
// config.json). Their parameter counts are checked against the published
// figures by test/tp-gen/param-count.test.
//
//===----------------------------------------------------------------------===//

#include "tp/Models/ModelConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir::tp::models;
using llvm::StringRef;

namespace {
struct Preset {
  StringRef name;
  Arch arch;
  int64_t layers, hidden, heads, kvHeads, ffn, vocab, seq, batch, maxPositions;
  double ropeTheta;
};
} // namespace

// Sequence lengths default to the context length each model was trained
// with; `tiny` ones are small enough for tests that run the IR.
// clang-format off
static const Preset kPresets[] = {
  // name          arch         layers hidden heads kv  ffn    vocab   seq   batch pos   rope-theta
  {"gpt2-tiny",   Arch::GPT2,   2,     64,    4,    4,  256,   256,    8,    2,    32,   0},
  {"gpt2-small",  Arch::GPT2,   12,    768,   12,   12, 3072,  50257,  1024, 1,    1024, 0},
  {"gpt2-medium", Arch::GPT2,   24,    1024,  16,   16, 4096,  50257,  1024, 1,    1024, 0},
  {"gpt2-xl",     Arch::GPT2,   48,    1600,  25,   25, 6400,  50257,  1024, 1,    1024, 0},
  {"llama-tiny",  Arch::Llama,  2,     64,    4,    2,  176,   256,    8,    2,    0,    10000.0},
  {"llama2-7b",   Arch::Llama,  32,    4096,  32,   32, 11008, 32000,  4096, 1,    0,    10000.0},
  {"llama3-8b",   Arch::Llama,  32,    4096,  32,   8,  14336, 128256, 8192, 1,    0,    500000.0},
  {"llama2-70b",  Arch::Llama,  80,    8192,  64,   8,  28672, 32000,  4096, 1,    0,    10000.0},
};
// clang-format on

llvm::ArrayRef<StringRef> mlir::tp::models::getPresetNames() {
  static const llvm::SmallVector<StringRef> names = llvm::map_to_vector(
      kPresets, [](const Preset &preset) { return preset.name; });
  return names;
}

std::optional<ModelConfig> mlir::tp::models::lookupPreset(StringRef name) {
  const Preset *preset =
      llvm::find_if(kPresets, [&](const Preset &p) { return p.name == name; });
  if (preset == std::end(kPresets))
    return std::nullopt;
  ModelConfig config;
  config.arch = preset->arch;
  config.preset = preset->name.str();
  config.layers = preset->layers;
  config.hidden = preset->hidden;
  config.heads = preset->heads;
  config.kvHeads = preset->kvHeads;
  config.ffn = preset->ffn;
  config.vocab = preset->vocab;
  config.seq = preset->seq;
  config.batch = preset->batch;
  config.maxPositions = preset->maxPositions;
  config.ropeTheta = preset->ropeTheta;
  // GPT-2 and every Llama 2/3 checkpoint use 1e-5 for their norms and 0.02
  // for the initialisation of weights.
  config.normEps = 1e-5;
  config.initStd = 0.02;
  return config;
}

StringRef mlir::tp::models::getDefaultPresetName(Arch arch) {
  return arch == Arch::GPT2 ? "gpt2-small" : "llama2-7b";
}

StringRef mlir::tp::models::getTinyPresetName(Arch arch) {
  return arch == Arch::GPT2 ? "gpt2-tiny" : "llama-tiny";
}

StringRef mlir::tp::models::stringifyArch(Arch arch) {
  return arch == Arch::GPT2 ? "gpt2" : "llama";
}

std::optional<Arch> mlir::tp::models::parseArch(StringRef name) {
  return llvm::StringSwitch<std::optional<Arch>>(name)
      .Case("gpt2", Arch::GPT2)
      .Case("llama", Arch::Llama)
      .Default(std::nullopt);
}

StringRef mlir::tp::models::stringifyDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  llvm_unreachable("unknown dtype");
}

std::optional<DType> mlir::tp::models::parseDType(StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("f32", DType::F32)
      .Case("f16", DType::F16)
      .Case("bf16", DType::BF16)
      .Default(std::nullopt);
}

/// The top-level object of the config.json text `json`.
static llvm::Expected<llvm::json::Value> parseJSON(StringRef json) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (value && !value->getAsObject())
    return llvm::createStringError("its top level is not an object");
  return value;
}

std::optional<Arch> mlir::tp::models::getHFConfigArch(StringRef json,
                                                       std::string &error) {
  llvm::raw_string_ostream os(error);
  llvm::Expected<llvm::json::Value> value = parseJSON(json);
  if (!value) {
    os << "not a JSON config: " << llvm::toString(value.takeError());
    return std::nullopt;
  }
  std::optional<StringRef> type = value->getAsObject()->getString("model_type");
  if (!type) {
    os << "it has no string \"model_type\"";
    return std::nullopt;
  }
  if (std::optional<Arch> arch = parseArch(*type))
    return arch;
  os << "model_type '" << *type << "' is not one tp-gen builds; expected "
     << "'gpt2' or 'llama'";
  return std::nullopt;
}

std::optional<std::string>
mlir::tp::models::applyHFConfig(StringRef json, ModelConfig &config) {
  std::string message;
  llvm::raw_string_ostream os(message);
  llvm::Expected<llvm::json::Value> value = parseJSON(json);
  if (!value) {
    os << "not a JSON config: " << llvm::toString(value.takeError());
    return message;
  }
  const llvm::json::Object &object = *value->getAsObject();
  // A size: a positive integer, required unless `fallback` is given (used
  // when the key is absent or null).
  auto size = [&](StringRef key, int64_t &field,
                  std::optional<int64_t> fallback = std::nullopt) -> bool {
    const llvm::json::Value *entry = object.get(key);
    if (!entry || entry->kind() == llvm::json::Value::Null) {
      if (fallback) {
        field = *fallback;
        return true;
      }
      os << "it has no \"" << key << "\"";
      return false;
    }
    std::optional<int64_t> number = entry->getAsInteger();
    if (!number || *number <= 0) {
      os << "\"" << key << "\" is not a positive integer";
      return false;
    }
    field = *number;
    return true;
  };
  // A positive number; `fallback` (transformers' default) when absent.
  auto number = [&](StringRef key, double &field, double fallback) -> bool {
    const llvm::json::Value *entry = object.get(key);
    if (!entry || entry->kind() == llvm::json::Value::Null) {
      field = fallback;
      return true;
    }
    std::optional<double> x = entry->getAsNumber();
    if (!x || !(*x > 0)) {
      os << "\"" << key << "\" is not a positive number";
      return false;
    }
    field = *x;
    return true;
  };
  // A feature tp-gen does not build: the key's value must be `expected`
  // (or absent).
  auto requireBool = [&](StringRef key, bool expected) -> bool {
    std::optional<bool> flag = object.getBoolean(key);
    if (!flag || *flag == expected)
      return true;
    os << "\"" << key << "\" is " << (*flag ? "true" : "false")
       << "; tp-gen builds only " << (expected ? "true" : "false");
    return false;
  };
  auto requireString = [&](StringRef key,
                           llvm::ArrayRef<StringRef> accepted) -> bool {
    std::optional<StringRef> text = object.getString(key);
    if (!text || llvm::is_contained(accepted, *text))
      return true;
    os << "\"" << key << "\" is '" << *text << "'; tp-gen builds only '"
       << llvm::join(accepted, "', '") << "'";
    return false;
  };

  if (config.arch == Arch::GPT2) {
    if (!size("n_layer", config.layers) || !size("n_embd", config.hidden) ||
        !size("n_head", config.heads) || !size("vocab_size", config.vocab) ||
        !size("n_positions", config.maxPositions))
      return message;
    // n_inner: null means 4 * n_embd.
    if (!size("n_inner", config.ffn, 4 * config.hidden) ||
        !number("layer_norm_epsilon", config.normEps, 1e-5))
      return message;
    config.kvHeads = config.heads;
    if (!requireString("activation_function", {"gelu_new", "gelu_pytorch_tanh"}) ||
        !requireBool("tie_word_embeddings", true) ||
        !requireBool("scale_attn_weights", true) ||
        !requireBool("scale_attn_by_inverse_layer_idx", false) ||
        !requireBool("add_cross_attention", false))
      return message;
    return std::nullopt;
  }

  if (!size("num_hidden_layers", config.layers) ||
      !size("hidden_size", config.hidden) ||
      !size("num_attention_heads", config.heads) ||
      !size("intermediate_size", config.ffn) ||
      !size("vocab_size", config.vocab) ||
      !size("num_key_value_heads", config.kvHeads, config.heads) ||
      !number("rms_norm_eps", config.normEps, 1e-6))
    return message;
  // The rotary base: rope_theta (transformers 4) or rope_parameters
  // {rope_theta, rope_type} (transformers 5); only the default rotation.
  if (!number("rope_theta", config.ropeTheta, 10000.0))
    return message;
  for (StringRef key : {"rope_parameters", "rope_scaling"}) {
    const llvm::json::Value *entry = object.get(key);
    if (!entry || entry->kind() == llvm::json::Value::Null)
      continue;
    const llvm::json::Object *rope = entry->getAsObject();
    if (!rope) {
      os << "\"" << key << "\" is not an object";
      return message;
    }
    std::optional<StringRef> type = rope->getString("rope_type");
    if (!type)
      type = rope->getString("type");
    if (type && *type != "default") {
      os << "\"" << key << "\" has rope_type '" << *type
         << "'; tp-gen builds only 'default'";
      return message;
    }
    if (std::optional<double> theta = rope->getNumber("rope_theta"))
      config.ropeTheta = *theta;
  }
  if (config.heads > 0 && config.hidden % config.heads == 0) {
    int64_t headDim = config.hidden / config.heads;
    if (std::optional<int64_t> given = object.getInteger("head_dim");
        given && *given != headDim) {
      os << "\"head_dim\" is " << *given << "; tp-gen builds only hidden_size "
         << "/ num_attention_heads = " << headDim;
      return message;
    }
  }
  if (!requireString("hidden_act", {"silu"}) ||
      !requireBool("attention_bias", false) || !requireBool("mlp_bias", false))
    return message;
  config.tieEmbeddings = object.getBoolean("tie_word_embeddings").value_or(false);
  return std::nullopt;
}

std::optional<std::string>
mlir::tp::models::verifyConfig(const ModelConfig &config) {
  std::string message;
  llvm::raw_string_ostream os(message);
  std::pair<StringRef, int64_t> sizes[] = {
      {"layers", config.layers}, {"hidden", config.hidden},
      {"heads", config.heads},   {"kv-heads", config.kvHeads},
      {"ffn", config.ffn},       {"vocab", config.vocab},
      {"seq", config.seq},       {"batch", config.batch}};
  for (auto [name, value] : sizes) {
    if (value <= 0) {
      os << name << " must be positive, got " << value;
      return message;
    }
  }
  if (!(config.normEps > 0) || !std::isfinite(config.normEps)) {
    os << "norm-eps must be a positive number, got " << config.normEps;
    return message;
  }
  if (config.arch == Arch::Llama &&
      (!(config.ropeTheta > 0) || !std::isfinite(config.ropeTheta))) {
    os << "rope-theta must be a positive number, got " << config.ropeTheta;
    return message;
  }
  if (config.hidden % config.heads != 0) {
    os << "hidden size " << config.hidden << " is not divisible by "
       << config.heads << " heads";
    return message;
  }
  if (config.heads % config.kvHeads != 0) {
    os << config.heads << " heads are not divisible by " << config.kvHeads
       << " kv-heads";
    return message;
  }
  if (config.arch == Arch::GPT2) {
    if (config.kvHeads != config.heads) {
      os << "gpt2 has no grouped-query attention: kv-heads (" << config.kvHeads
         << ") must equal heads (" << config.heads << ")";
      return message;
    }
    if (config.maxPositions <= 0) {
      os << "max-positions must be positive, got " << config.maxPositions;
      return message;
    }
    if (config.seq > config.maxPositions) {
      os << "sequence length " << config.seq << " exceeds the "
         << config.maxPositions
         << " learned positions of gpt2 (raise --max-positions)";
      return message;
    }
  }
  if (config.arch == Arch::Llama && config.headDim() % 2 != 0) {
    os << "head dimension " << config.headDim()
       << " must be even for the rotary embedding";
    return message;
  }
  if (config.hf && config.scope != Scope::WithEmbedding) {
    os << "the hugging face layout covers the whole model: it needs the "
          "embedding (--with-embedding)";
    return message;
  }
  if (config.tieEmbeddings && (!config.hf || config.arch != Arch::Llama)) {
    os << "--tie-embeddings needs --hf and a llama model (gpt2's head is "
          "always tied)";
    return message;
  }
  if (config.withLoss && config.scope == Scope::BlocksOnly) {
    os << "the loss needs the LM head: --with-loss cannot be combined with "
          "--blocks-only";
    return message;
  }
  return std::nullopt;
}
