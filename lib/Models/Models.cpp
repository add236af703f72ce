//===- Models.cpp - assemble a Transformer forward function -----*- C++ -*-===//
//
// buildModel lays out `func.func @forward`:
//
//   arguments: the input (input_ids: tensor<BxSxi64> with the embedding,
//              otherwise hidden_states: tensor<(B*S)xHxdtype>), then
//              labels: tensor<BxSxi64> with the loss, then the parameters in
//              model order, each {tp.param, tp.init = {...}};
//   result:    the loss (tensor<f32>) with the loss, else the logits
//              tensor<(B*S)xVxdtype> (with --hf tensor<BxSxVxdtype>), else
//              (blocks only) the hidden states. With --hf every argument
//              and the result carry tp.name.
//
// Everything between is delegated to the architecture (GPT2.cpp, Llama.cpp)
// and the shared pieces of ModelBuilder.cpp. buildForward is the part a
// training step (Training.cpp) shares.
//
//===----------------------------------------------------------------------===//

#include "tp/Models/Models.h"
#include "tp/Models/ModelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::tp::models;

void mlir::tp::models::registerModelDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect,
                  math::MathDialect, tensor::TensorDialect>();
}

int64_t mlir::tp::models::getParamSeed(StringRef name) {
  // FNV-1a, 64 bit.
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return static_cast<int64_t>(hash & 0x7fffffffffffffffULL);
}

namespace {
/// The three stages an architecture provides.
struct Architecture {
  Value (*embedding)(ModelBuilder &, Value);
  Value (*block)(ModelBuilder &, Value, int64_t);
  Value (*head)(ModelBuilder &, Value);
};
} // namespace

static Architecture getArchitecture(Arch arch) {
  switch (arch) {
  case Arch::GPT2:
    return {buildGPT2Embedding, buildGPT2Block, buildGPT2Head};
  case Arch::Llama:
    return {buildLlamaEmbedding, buildLlamaBlock, buildLlamaHead};
  }
  llvm_unreachable("unknown architecture");
}

OwningOpRef<ModuleOp> mlir::tp::models::buildModel(MLIRContext *context,
                                                   const ModelConfig &config) {
  assert(!verifyConfig(config) && "the configuration is verified first");
  ModelBuilder mb(context, config);
  OwningOpRef<ModuleOp> module = mb.finish(buildForward(mb));
  // The Hugging Face layout names the result for the runtime (--reference).
  if (config.hf) {
    auto fn = *module->getOps<func::FuncOp>().begin();
    fn.setResultAttr(0, "tp.name",
                     StringAttr::get(context,
                                     config.withLoss ? "loss" : "logits"));
  }
  return module;
}

Value mlir::tp::models::buildForward(ModelBuilder &mb) {
  const ModelConfig &config = mb.getConfig();
  Architecture arch = getArchitecture(config.arch);
  IntegerType i64 = IntegerType::get(mb.getContext(), 64);

  Value ids, x, labels;
  if (config.scope == Scope::WithEmbedding)
    ids = mb.addInput("input_ids", {config.batch, config.seq}, i64);
  else
    x = mb.addInput("hidden_states", {config.tokens(), config.hidden},
                    mb.getStorageType());
  if (config.withLoss)
    labels = mb.addInput("labels", {config.batch, config.seq}, i64);

  if (ids)
    x = arch.embedding(mb, ids);
  for (int64_t layer = 0; layer < config.layers; ++layer)
    x = arch.block(mb, x, layer);
  if (config.scope == Scope::BlocksOnly)
    return x;
  Value logits = arch.head(mb, x);
  // Hugging Face's logits are [B, S, V].
  if (!config.withLoss && config.hf)
    return mb.expand(logits, {config.batch, config.seq, config.vocab},
                     {{0, 1}, {2}});
  if (!config.withLoss)
    return logits;
  ModelBuilder::NameScope scope(mb, "loss");
  return mb.crossEntropy(logits, labels);
}

ParamStats mlir::tp::models::computeParamStats(func::FuncOp fn) {
  ParamStats stats;
  llvm::DenseSet<int64_t> seeds;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    if (!fn.getArgAttr(i, "tp.param") || fn.getArgAttr(i, "tp.state"))
      continue;
    auto type = cast<RankedTensorType>(fn.getArgument(i).getType());
    ++stats.tensors;
    stats.elements += type.getNumElements();
    stats.bytes += type.getNumElements() *
                   llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    auto init = fn.getArgAttrOfType<DictionaryAttr>(i, "tp.init");
    if (!init)
      continue;
    auto seed = init.getAs<IntegerAttr>("seed");
    if (!seed)
      continue;
    ++stats.randomInits;
    seeds.insert(seed.getInt());
  }
  stats.distinctSeeds = seeds.size();
  return stats;
}
