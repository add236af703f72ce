//===- GPT2.cpp - GPT-2 decoder ---------------------------------*- C++ -*-===//
//
// GPT-2 (Radford et al. 2019), as in Hugging Face's GPT2LMHeadModel:
//
//   x = wte[ids] + wpe[0:S]
//   per block:  x += c_proj(attn(c_attn(ln_1(x))))
//               x += mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(x))))
//   logits = ln_f(x) · wteᵀ            (the LM head is tied to wte)
//
// Weights are stored [in, out] (HF's Conv1D layout). The fused QKV weight is
// [H, 3, H] and its bias [3, H] (the same elements as HF's [H, 3H] and [3H])
// so that the split dimension keeps heads as its major factor. Parameter
// names follow HF without the `transformer.` prefix. With --hf (config.hf)
// they are HF's state-dict names, `transformer.` included, and c_attn is
// HF's [H, 3H] / [3H]: one matmul whose product is sliced apart into q, k
// and v with tensor.extract_slice, as HF's split(split_size, dim=2) does
// (the planner splits the weight into its three pieces, FusedParams.cpp).
// Initialisation follows
// HF's _init_weights: normal(0.02) for weights and embeddings,
// normal(0.02 / sqrt(2 * layers)) for the two residual projections, zero
// biases, LayerNorm weights one.
//
//===----------------------------------------------------------------------===//

#include "tp/Models/ModelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tp::models;

/// The name of the parameter `name`: with --hf, the state dict's.
static std::string paramName(ModelBuilder &mb, const Twine &name) {
  return ((mb.getConfig().hf ? "transformer." : "") + name).str();
}

Value mlir::tp::models::buildGPT2Embedding(ModelBuilder &mb, Value ids) {
  const ModelConfig &config = mb.getConfig();
  ModelBuilder::NameScope scope(mb, "embedding");
  Value wte = mb.getParam(paramName(mb, "wte.weight"),
                          {config.vocab, config.hidden},
                          InitSpec::normal(config.initStd));
  Value wpe = mb.getParam(paramName(mb, "wpe.weight"),
                          {config.maxPositions, config.hidden},
                          InitSpec::normal(config.initStd));
  return mb.embedTokens(ids, wte, mb.slicePrefix(wpe, 0, config.seq));
}

/// GELU with the tanh approximation:
/// 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))).
static Value geluTanh(ModelBuilder &mb, OpBuilder &b, Location loc, Value x) {
  Value cube =
      arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
  Value inner = arith::AddFOp::create(
      b, loc, x,
      arith::MulFOp::create(b, loc, cube, mb.constant(b, loc, 0.044715)));
  Value scaled = arith::MulFOp::create(
      b, loc, inner, mb.constant(b, loc, std::sqrt(2.0 / M_PI)));
  Value onePlus = arith::AddFOp::create(b, loc, mb.constant(b, loc, 1.0),
                                        math::TanhOp::create(b, loc, scaled));
  Value half = arith::MulFOp::create(b, loc, x, mb.constant(b, loc, 0.5));
  return arith::MulFOp::create(b, loc, half, onePlus);
}

/// The derivative of geluTanh: with u = sqrt(2/π) (x + 0.044715 x³),
/// 0.5 (1 + tanh u) + 0.5 x (1 - tanh² u) sqrt(2/π) (1 + 3 · 0.044715 x²).
static Value geluTanhDerivative(ModelBuilder &mb, OpBuilder &b, Location loc,
                                Value x) {
  auto c = [&](double value) { return mb.constant(b, loc, value); };
  Value square = arith::MulFOp::create(b, loc, x, x);
  Value cube = arith::MulFOp::create(b, loc, x, square);
  Value inner = arith::AddFOp::create(
      b, loc, x, arith::MulFOp::create(b, loc, cube, c(0.044715)));
  Value tanh = math::TanhOp::create(
      b, loc, arith::MulFOp::create(b, loc, inner, c(std::sqrt(2.0 / M_PI))));
  Value left = arith::MulFOp::create(
      b, loc, c(0.5), arith::AddFOp::create(b, loc, c(1.0), tanh));
  Value sech2 = arith::SubFOp::create(
      b, loc, c(1.0), arith::MulFOp::create(b, loc, tanh, tanh));
  Value dInner = arith::MulFOp::create(
      b, loc, c(std::sqrt(2.0 / M_PI)),
      arith::AddFOp::create(
          b, loc, c(1.0),
          arith::MulFOp::create(b, loc, square, c(3.0 * 0.044715))));
  Value right = arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, x, c(0.5)),
      arith::MulFOp::create(b, loc, sech2, dInner));
  return arith::AddFOp::create(b, loc, left, right);
}

/// The gradient of a bias indexed by the trailing loops of a [T, ...] value:
/// the sum over tokens.
static Value biasGrad(ModelBuilder &mb, Value grad, Value bias) {
  auto type = cast<RankedTensorType>(grad.getType());
  unsigned rank = type.getRank();
  SmallVector<unsigned, 6> loops =
      llvm::to_vector<6>(llvm::seq<unsigned>(0, rank));
  SmallVector<unsigned, 6> biasLoops(loops.begin() + 1, loops.end());
  auto type32 = cast<RankedTensorType>(bias.getType());
  Value sum = mb.reduce(Combiner::Sum, {{grad, loops}}, rank, biasLoops,
                        type32.getShape(),
                        [](OpBuilder &, Location, ValueRange args) -> Value {
                          return args[0];
                        });
  return mb.castTo(sum, type32.getElementType());
}

/// x + y + bias, with bias indexed by the feature dimension.
static Value addBiasResidual(ModelBuilder &mb, Value x, Value y, Value bias) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  Value result = mb.elementwise(
      {{x, {0, 1}}, {y, {0, 1}}, {bias, {1}}}, shape, mb.getStorageType(),
      [](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value biased = arith::AddFOp::create(b, loc, args[1], args[2]);
        return arith::AddFOp::create(b, loc, args[0], biased);
      });
  // dx = dy = dout, dbias = Σ_t dout.
  mb.record(result, [&mb, x, y, bias](Value grad) {
    mb.addGrad(x, grad);
    mb.addGrad(y, grad);
    mb.addGrad(bias, biasGrad(mb, grad, bias));
  });
  return result;
}

/// A LayerNorm with its weight (ones) and bias (zeros) parameters.
static Value layerNorm(ModelBuilder &mb, Value x, const Twine &name) {
  int64_t hidden = mb.getConfig().hidden;
  ModelBuilder::NameScope scope(mb, name);
  Value gamma =
      mb.getParam(paramName(mb, name + ".weight"), {hidden}, InitSpec::ones());
  Value beta =
      mb.getParam(paramName(mb, name + ".bias"), {hidden}, InitSpec::zeros());
  return mb.layerNorm(x, gamma, beta);
}

Value mlir::tp::models::buildGPT2Block(ModelBuilder &mb, Value x,
                                       int64_t layer) {
  const ModelConfig &config = mb.getConfig();
  int64_t tokens = config.tokens(), hidden = config.hidden, ffn = config.ffn;
  int64_t heads = config.heads, headDim = config.headDim();
  std::string prefix = ("h." + Twine(layer) + ".").str();
  std::string param = paramName(mb, prefix);
  double weightStd = config.initStd;
  double projStd =
      weightStd / std::sqrt(2.0 * static_cast<double>(config.layers));

  Value h = layerNorm(mb, x, prefix + "ln_1");
  {
    ModelBuilder::NameScope scope(mb, prefix + "attn");
    // tp-gen's layout [H, 3, H] / [3, H]; HF's [H, 3H] / [3H].
    SmallVector<int64_t> qkvShape = {hidden, 3, hidden};
    SmallVector<int64_t> qkvBiasShape = {3, hidden};
    if (config.hf) {
      qkvShape = {hidden, 3 * hidden};
      qkvBiasShape = {3 * hidden};
    }
    Value wQkv = mb.getParam(param + "attn.c_attn.weight", qkvShape,
                             InitSpec::normal(weightStd));
    Value bQkv = mb.getParam(param + "attn.c_attn.bias", qkvBiasShape,
                             InitSpec::zeros());
    Value wOut = mb.getParam(param + "attn.c_proj.weight", {hidden, hidden},
                             InitSpec::normal(projStd));
    Value bOut =
        mb.getParam(param + "attn.c_proj.bias", {hidden}, InitSpec::zeros());
    Value q, k, v;
    SmallVector<int64_t> headsShape = {config.batch, config.seq, heads,
                                       headDim};
    if (config.hf) {
      // qkv[t, j] = Σ_k h[t, k] * w[k, j] + b[j], cut into q = qkv[:, 0:H],
      // k = qkv[:, H:2H] and v = qkv[:, 2H:3H].
      Value qkv = mb.matmul(h, wQkv);
      qkv = mb.elementwise(
          {{qkv, {0, 1}}, {bQkv, {1}}}, {tokens, 3 * hidden},
          mb.getStorageType(),
          [](OpBuilder &b, Location loc, ValueRange args) -> Value {
            return arith::AddFOp::create(b, loc, args[0], args[1]);
          });
      auto piece = [&](int64_t index) {
        return mb.expand(mb.sliceRange(qkv, 1, index * hidden, hidden),
                         headsShape, {{0, 1}, {2, 3}});
      };
      q = piece(0);
      k = piece(1);
      v = piece(2);
    } else {
      // qkv[t, c, j] = Σ_k h[t, k] * w[k, c, j] + b[c, j]
      Value qkv = mb.contract({h, {0, 3}}, {wQkv, {3, 1, 2}}, 4, {0, 1, 2},
                              {tokens, 3, hidden});
      Value biased = mb.elementwise(
          {{qkv, {0, 1, 2}}, {bQkv, {1, 2}}}, {tokens, 3, hidden},
          mb.getStorageType(),
          [](OpBuilder &b, Location loc, ValueRange args) -> Value {
            return arith::AddFOp::create(b, loc, args[0], args[1]);
          });
      mb.record(biased, [&mb, qkv, bQkv](Value grad) {
        mb.addGrad(qkv, grad);
        mb.addGrad(bQkv, biasGrad(mb, grad, bQkv));
      });
      Value split =
          mb.expand(biased, {config.batch, config.seq, 3, heads, headDim},
                    {{0, 1}, {2}, {3, 4}});
      q = mb.selectIndex(split, 2, 0);
      k = mb.selectIndex(split, 2, 1);
      v = mb.selectIndex(split, 2, 2);
    }
    Value context = mb.collapse(mb.causalAttention(q, k, v), {{0, 1}, {2, 3}});
    x = addBiasResidual(mb, x, mb.matmul(context, wOut), bOut);
  }

  h = layerNorm(mb, x, prefix + "ln_2");
  {
    ModelBuilder::NameScope scope(mb, prefix + "mlp");
    Value wFc = mb.getParam(param + "mlp.c_fc.weight", {hidden, ffn},
                            InitSpec::normal(weightStd));
    Value bFc = mb.getParam(param + "mlp.c_fc.bias", {ffn}, InitSpec::zeros());
    Value wProj = mb.getParam(param + "mlp.c_proj.weight", {ffn, hidden},
                              InitSpec::normal(projStd));
    Value bProj =
        mb.getParam(param + "mlp.c_proj.bias", {hidden}, InitSpec::zeros());
    Value fc = mb.matmul(h, wFc);
    Value act = mb.elementwise(
        {{fc, {0, 1}}, {bFc, {1}}}, {tokens, ffn}, mb.getStorageType(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return geluTanh(mb, b, loc,
                          arith::AddFOp::create(b, loc, args[0], args[1]));
        });
    // dz = dact · gelu'(fc + b): dfc = dz, db = Σ_t dz.
    mb.record(act, [&mb, fc, bFc, tokens, ffn](Value grad) {
      Value dz = mb.elementwise(
          {{fc, {0, 1}}, {bFc, {1}}, {grad, {0, 1}}}, {tokens, ffn},
          mb.getStorageType(),
          [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            Value z = arith::AddFOp::create(b, loc, args[0], args[1]);
            return arith::MulFOp::create(b, loc, args[2],
                                         geluTanhDerivative(mb, b, loc, z));
          });
      mb.addGrad(fc, dz);
      mb.addGrad(bFc, biasGrad(mb, dz, bFc));
    });
    x = addBiasResidual(mb, x, mb.matmul(act, wProj), bProj);
  }
  return x;
}

Value mlir::tp::models::buildGPT2Head(ModelBuilder &mb, Value x) {
  const ModelConfig &config = mb.getConfig();
  Value h = layerNorm(mb, x, "ln_f");
  ModelBuilder::NameScope scope(mb, "lm_head");
  // Tied: the token embedding, created here when there is no embedding.
  Value wte = mb.getParam(paramName(mb, "wte.weight"),
                          {config.vocab, config.hidden},
                          InitSpec::normal(config.initStd));
  return mb.matmulTransposedRhs(h, wte);
}
