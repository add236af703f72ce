//===- Models.h - Transformer graphs in upstream MLIR -----------*- C++ -*-===//
//
// Builds GPT-2 and Llama forward functions in plain upstream dialects (func,
// linalg, tensor, arith, math) with static shapes, weights as function
// arguments marked `tp.param` and carrying a `tp.init` descriptor. The IR
// conventions and the initialisation contract are in docs/models.md.
//
//===----------------------------------------------------------------------===//

#ifndef TP_MODELS_MODELS_H
#define TP_MODELS_MODELS_H

#include "tp/Models/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>

namespace mlir {
class DialectRegistry;
class MLIRContext;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace mlir::tp::models {

/// The name of the generated function.
inline constexpr llvm::StringLiteral kForwardFuncName = "forward";

/// The names of the training functions (buildTrainStep).
inline constexpr llvm::StringLiteral kTrainStepFuncName = "train_step";
inline constexpr llvm::StringLiteral kTrainGradsFuncName = "train_grads";

/// What buildTrainStep emits and the AdamW hyperparameters, constants in the
/// IR.
struct TrainOptions {
  /// Emit `@train_grads` (loss and gradients, no optimizer) instead of
  /// `@train_step`.
  bool gradsOnly = false;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// Decoupled weight decay (AdamW), applied to the randomly initialised
  /// parameters (weight matrices and embeddings), not to biases and norm
  /// weights.
  double weightDecay = 0.01;
};

/// Builds a module holding one training step of `config` (which must pass
/// verifyConfig, have the embedding scope and the loss): forward, mean
/// cross-entropy, backward and an AdamW update (docs/models.md gives the
/// signature and the formulas). With `options.gradsOnly`, the function
/// returns the loss and the gradients instead.
OwningOpRef<ModuleOp> buildTrainStep(MLIRContext *context,
                                     const ModelConfig &config,
                                     const TrainOptions &options);

/// Adds the dialects the generated IR uses to `registry`.
void registerModelDialects(DialectRegistry &registry);

/// Builds a module holding `func.func @forward` for `config`, which must
/// pass verifyConfig. The dialects of registerModelDialects must be loadable
/// in `context` (they are loaded on demand).
OwningOpRef<ModuleOp> buildModel(MLIRContext *context,
                                 const ModelConfig &config);

/// The seed of the `tp.init` descriptor of the parameter called `name`:
/// FNV-1a 64 of its UTF-8 bytes with the top bit cleared (docs/models.md).
int64_t getParamSeed(llvm::StringRef name);

/// What the `tp.param` arguments of a function hold, read from its argument
/// types and attributes.
struct ParamStats {
  /// Number of `tp.param` arguments (not counting `tp.state`: a training
  /// step's optimizer moments).
  int64_t tensors = 0;
  /// Sum over them of the number of elements.
  int64_t elements = 0;
  /// Sum over them of the storage size in bytes.
  int64_t bytes = 0;
  /// Arguments whose `tp.init` is random (normal or uniform), and how many
  /// distinct seeds they use.
  int64_t randomInits = 0;
  int64_t distinctSeeds = 0;
};

/// Counts the parameters of `fn` from its argument types.
ParamStats computeParamStats(func::FuncOp fn);

} // namespace mlir::tp::models

#endif // TP_MODELS_MODELS_H
