//===- Training.cpp - one training step: forward, backward, AdamW -*- C++ -*-===//
//
// buildTrainStep lays out `func.func @train_step`:
//
//   arguments: the parameters (as @forward has them: tp.param, tp.init),
//              then for each parameter its AdamW first moment
//              `<name>.adam_m`, then for each its second moment
//              `<name>.adam_v` (f32, {tp.param, tp.state, tp.init zeros}),
//              then `step: tensor<f32>` {tp.state, tp.init zeros}, the
//              number of steps already taken, then input_ids and labels;
//   results:   the loss (tensor<f32>), then the updated parameters, first
//              moments, second moments and step + 1, each with
//              `tp.updates = <index of the argument it replaces>`.
//
// The forward pass is the one buildModel emits (buildForward) with the
// builder recording gradient rules; backward() then emits the gradients
// (Backward.cpp) and this file the optimizer, one elementwise generic per
// moment and per parameter. `@train_grads` (TrainOptions::gradsOnly) takes
// the parameters, input_ids and labels and returns the loss and the
// gradients, in parameter order, each marked tp.param.
//
// AdamW (Loshchilov & Hutter 2019, as torch.optim.AdamW), with t = step + 1:
//   m' = β1 m + (1 - β1) g            v' = β2 v + (1 - β2) g²
//   p' = p - lr (m' / (1 - β1^t)) / (sqrt(v' / (1 - β2^t)) + ε) - lr λ p
// where λ is the weight decay for randomly initialised parameters (weight
// matrices and embeddings) and 0 for the others (biases, norm weights).
//
//===----------------------------------------------------------------------===//

#include "tp/Models/Models.h"
#include "tp/Models/ModelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tp::models;

/// The name of a function argument, from its NameLoc.
static std::string argName(BlockArgument arg) {
  if (auto name = dyn_cast<NameLoc>(arg.getLoc()))
    return name.getName().str();
  return ("arg" + Twine(arg.getArgNumber())).str();
}

OwningOpRef<ModuleOp>
mlir::tp::models::buildTrainStep(MLIRContext *context,
                                 const ModelConfig &config,
                                 const TrainOptions &options) {
  assert(!verifyConfig(config) && "the configuration is verified first");
  assert(config.scope == Scope::WithEmbedding && config.withLoss &&
         "a training step starts from token ids and ends with the loss");
  ModelBuilder mb(context, config,
                  options.gradsOnly ? kTrainGradsFuncName : kTrainStepFuncName);
  Builder b(context);
  mb.enableGradients();
  Value loss = buildForward(mb);
  mb.backward(loss);

  // The forward pass made input_ids (0), labels (1), then the parameters.
  SmallVector<std::pair<BlockArgument, InitSpec>> params(mb.getParams());
  unsigned numParams = params.size();
  SmallVector<Value> grads;
  for (auto &[param, init] : params)
    grads.push_back(mb.getGrad(param));
  DictionaryAttr none = b.getDictionaryAttr({});
  DictionaryAttr paramAttr =
      b.getDictionaryAttr(b.getNamedAttr("tp.param", b.getUnitAttr()));
  SmallVector<unsigned> argOrder;
  for (unsigned i = 0; i < numParams; ++i)
    argOrder.push_back(2 + i);

  SmallVector<Value> results = {loss};
  SmallVector<DictionaryAttr> resultAttrs = {none};
  if (options.gradsOnly) {
    argOrder.append({0, 1});
    for (Value grad : grads) {
      results.push_back(grad);
      resultAttrs.push_back(paramAttr);
    }
    return mb.finish(results, resultAttrs, argOrder);
  }

  // The optimizer state, appended after the parameters.
  Type f32 = b.getF32Type();
  NamedAttribute zeros = b.getNamedAttr(
      "tp.init",
      b.getDictionaryAttr(b.getNamedAttr("kind", b.getStringAttr("zeros"))));
  NamedAttribute state = b.getNamedAttr("tp.state", b.getUnitAttr());
  DictionaryAttr momentAttrs = b.getDictionaryAttr(
      {b.getNamedAttr("tp.param", b.getUnitAttr()), state, zeros});
  SmallVector<Value> firstMoments, secondMoments;
  for (auto &[param, init] : params) {
    auto shape = cast<RankedTensorType>(param.getType()).getShape();
    firstMoments.push_back(
        mb.addArgument(argName(param) + ".adam_m", shape, f32, momentAttrs));
  }
  for (auto &[param, init] : params) {
    auto shape = cast<RankedTensorType>(param.getType()).getShape();
    secondMoments.push_back(
        mb.addArgument(argName(param) + ".adam_v", shape, f32, momentAttrs));
  }
  Value step =
      mb.addArgument("step", {}, f32, b.getDictionaryAttr({state, zeros}));
  for (unsigned i = 0; i < 2 * numParams + 1; ++i)
    argOrder.push_back(2 + numParams + i);
  argOrder.append({0, 1});

  double beta1 = options.beta1, beta2 = options.beta2;
  SmallVector<Value> newParams, newFirst, newSecond;
  for (auto [i, entry] : llvm::enumerate(params)) {
    auto [param, init] = entry;
    ModelBuilder::NameScope scope(mb, argName(param) + ".adamw");
    auto type = cast<RankedTensorType>(param.getType());
    SmallVector<unsigned, 6> loops =
        llvm::to_vector<6>(llvm::seq<unsigned>(0, type.getRank()));
    Value grad = grads[i];
    // m' = β1 m + (1 - β1) g
    Value m = mb.elementwise(
        {{firstMoments[i], loops}, {grad, loops}}, type.getShape(), f32,
        [&](OpBuilder &ob, Location l, ValueRange args) -> Value {
          return arith::AddFOp::create(
              ob, l,
              arith::MulFOp::create(ob, l, args[0], mb.constant(ob, l, beta1)),
              arith::MulFOp::create(ob, l, args[1],
                                    mb.constant(ob, l, 1.0 - beta1)));
        });
    // v' = β2 v + (1 - β2) g²
    Value v = mb.elementwise(
        {{secondMoments[i], loops}, {grad, loops}}, type.getShape(), f32,
        [&](OpBuilder &ob, Location l, ValueRange args) -> Value {
          Value square = arith::MulFOp::create(ob, l, args[1], args[1]);
          return arith::AddFOp::create(
              ob, l,
              arith::MulFOp::create(ob, l, args[0], mb.constant(ob, l, beta2)),
              arith::MulFOp::create(ob, l, square,
                                    mb.constant(ob, l, 1.0 - beta2)));
        });
    bool decay = init.kind == InitSpec::Kind::Normal ||
                 init.kind == InitSpec::Kind::Uniform;
    double decayRate = decay ? options.lr * options.weightDecay : 0.0;
    // p' = p - lr · m̂ / (sqrt(v̂) + ε) - lr · λ · p, with t = step + 1
    Value p = mb.elementwise(
        {{param, loops}, {m, loops}, {v, loops}, {step, {}}}, type.getShape(),
        type.getElementType(),
        [&](OpBuilder &ob, Location l, ValueRange args) -> Value {
          auto c = [&](double value) { return mb.constant(ob, l, value); };
          Value t = arith::AddFOp::create(ob, l, args[3], c(1.0));
          auto correction = [&](double beta) -> Value {
            return arith::SubFOp::create(
                ob, l, c(1.0), math::PowFOp::create(ob, l, c(beta), t));
          };
          Value mHat = arith::DivFOp::create(ob, l, args[1], correction(beta1));
          Value vHat = arith::DivFOp::create(ob, l, args[2], correction(beta2));
          Value denom = arith::AddFOp::create(
              ob, l, math::SqrtOp::create(ob, l, vHat), c(options.eps));
          Value update = arith::MulFOp::create(
              ob, l, c(options.lr), arith::DivFOp::create(ob, l, mHat, denom));
          Value updated = arith::SubFOp::create(ob, l, args[0], update);
          if (decayRate == 0.0)
            return updated;
          return arith::SubFOp::create(
              ob, l, updated, arith::MulFOp::create(ob, l, args[0],
                                                    c(decayRate)));
        });
    newParams.push_back(p);
    newFirst.push_back(m);
    newSecond.push_back(v);
  }
  Value nextStep;
  {
    ModelBuilder::NameScope scope(mb, "step");
    nextStep = mb.elementwise(
        {{step, {}}}, {}, f32,
        [&](OpBuilder &ob, Location l, ValueRange args) -> Value {
          return arith::AddFOp::create(ob, l, args[0], mb.constant(ob, l, 1.0));
        });
  }

  // Argument k of the final signature is argOrder[k]; result r replaces
  // argument r - 1 for the parameters, moments and step (in that order).
  auto updates = [&](unsigned argIndex, bool isParam) {
    SmallVector<NamedAttribute> attrs;
    if (isParam)
      attrs.push_back(b.getNamedAttr("tp.param", b.getUnitAttr()));
    attrs.push_back(
        b.getNamedAttr("tp.updates", b.getI64IntegerAttr(argIndex)));
    return b.getDictionaryAttr(attrs);
  };
  unsigned index = 0;
  for (ArrayRef<Value> group : {ArrayRef<Value>(newParams),
                                ArrayRef<Value>(newFirst),
                                ArrayRef<Value>(newSecond)})
    for (Value value : group) {
      results.push_back(value);
      resultAttrs.push_back(updates(index++, /*isParam=*/true));
    }
  results.push_back(nextStep);
  resultAttrs.push_back(updates(index, /*isParam=*/false));
  return mb.finish(results, resultAttrs, argOrder);
}
