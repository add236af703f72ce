//===- Llama.cpp - Llama decoder --------------------------------*- C++ -*-===//
//
// Llama 2 / Llama 3 (Touvron et al. 2023), as in Hugging Face's
// LlamaForCausalLM:
//
//   x = embed_tokens[ids]
//   per block:  h = input_layernorm(x)
//               q, k, v = h·Wq, h·Wk, h·Wv;  q, k = rope(q), rope(k)
//               x += o_proj(attn(q, k, v))          (grouped-query)
//               h = post_attention_layernorm(x)
//               x += down_proj(silu(gate_proj(h)) * up_proj(h))
//   logits = norm(x) · lm_head                      (untied)
//
// Weights are stored [in, out]. Attention works on [B, S, heads, D]; with
// kv-heads < heads, k and v are repeated to every query head (query head
// kv * group + g uses key/value head kv) by a broadcast and a collapse, as
// Hugging Face's repeat_kv does, so all maps stay projected permutations.
// Parameter names follow HF without the `model.` prefix; weights and the
// embedding are normal(0.02), norm weights one. With --hf (config.hf) the
// names are HF's state-dict names (`model.` included, `lm_head.weight`) and
// the weights nn.Linear's [out, in], consumed transposed by the matmul's
// indexing maps (matmulTransposedRhs); with tieEmbeddings the LM head is
// `model.embed_tokens.weight`.
//
//===----------------------------------------------------------------------===//

#include "tp/Models/ModelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::tp::models;

/// The name of the parameter `name` of the decoder: with --hf, the state
/// dict's.
static std::string paramName(ModelBuilder &mb, const Twine &name) {
  return ((mb.getConfig().hf ? "model." : "") + name).str();
}

/// The token embedding [V, H].
static Value getEmbedding(ModelBuilder &mb) {
  const ModelConfig &config = mb.getConfig();
  return mb.getParam(paramName(mb, "embed_tokens.weight"),
                     {config.vocab, config.hidden},
                     InitSpec::normal(config.initStd));
}

Value mlir::tp::models::buildLlamaEmbedding(ModelBuilder &mb, Value ids) {
  ModelBuilder::NameScope scope(mb, "embed_tokens");
  return mb.embedTokens(ids, getEmbedding(mb), /*positions=*/Value());
}

/// An RMSNorm with its weight parameter (ones).
static Value rmsNorm(ModelBuilder &mb, Value x, const Twine &name) {
  ModelBuilder::NameScope scope(mb, name);
  Value weight = mb.getParam(paramName(mb, name + ".weight"),
                             {mb.getConfig().hidden}, InitSpec::ones());
  return mb.rmsNorm(x, weight);
}

/// A linear layer x[T, in] -> [T, out] without bias, its weight called
/// `name`: [in, out] (y = x·W), or nn.Linear's [out, in] with --hf
/// (y = x·Wᵀ, the transpose in the matmul's indexing maps).
static Value linear(ModelBuilder &mb, Value x, const std::string &name,
                    int64_t in, int64_t out) {
  InitSpec init = InitSpec::normal(mb.getConfig().initStd);
  if (mb.getConfig().hf)
    return mb.matmulTransposedRhs(x, mb.getParam(name, {out, in}, init));
  return mb.matmul(x, mb.getParam(name, {in, out}, init));
}

Value mlir::tp::models::buildLlamaBlock(ModelBuilder &mb, Value x,
                                        int64_t layer) {
  const ModelConfig &config = mb.getConfig();
  int64_t batch = config.batch, seq = config.seq, tokens = config.tokens();
  int64_t hidden = config.hidden, ffn = config.ffn, heads = config.heads;
  int64_t kvHeads = config.kvHeads, group = config.groupSize();
  int64_t headDim = config.headDim(), kvHidden = kvHeads * headDim;
  std::string prefix = ("layers." + Twine(layer) + ".").str();

  Value h = rmsNorm(mb, x, prefix + "input_layernorm");
  {
    ModelBuilder::NameScope scope(mb, prefix + "self_attn");
    std::string attn = paramName(mb, prefix + "self_attn.");

    // q: [B, S, heads, D]; k, v: [B, S, kv, D]. Under grouped-query
    // attention k and v are repeated to [B, S, heads, D] (query head
    // kv * group + g uses key/value head kv), as Hugging Face's repeat_kv
    // does: a broadcast to [B, S, kv, group, D] and a collapse. With fewer
    // key/value heads than devices, the planner computes k and v whole and
    // slices the repeated heads, which is Megatron's treatment.
    SmallVector<ReassociationIndices> qHeads = {{0, 1}, {2, 3}};
    Value q = mb.expand(linear(mb, h, attn + "q_proj.weight", hidden, hidden),
                        {batch, seq, heads, headDim}, qHeads);
    Value k =
        mb.expand(linear(mb, h, attn + "k_proj.weight", hidden, kvHidden),
                  {batch, seq, kvHeads, headDim}, qHeads);
    Value v =
        mb.expand(linear(mb, h, attn + "v_proj.weight", hidden, kvHidden),
                  {batch, seq, kvHeads, headDim}, qHeads);
    q = mb.rotaryEmbedding(q);
    k = mb.rotaryEmbedding(k);
    auto repeatKV = [&](Value t) -> Value {
      if (group == 1)
        return t;
      Value repeated = mb.elementwise(
          {{t, {0, 1, 2, 4}}}, {batch, seq, kvHeads, group, headDim},
          mb.getStorageType(),
          [](OpBuilder &, Location, ValueRange args) { return args[0]; });
      // The copies' gradients sum back: dt = Σ_g drepeated.
      mb.record(repeated, [&mb, t](Value grad) {
        auto type = cast<RankedTensorType>(t.getType());
        Value sum = mb.reduce(
            Combiner::Sum, {{grad, {0, 1, 2, 3, 4}}}, 5, {0, 1, 2, 4},
            type.getShape(),
            [](OpBuilder &, Location, ValueRange args) { return args[0]; });
        mb.addGrad(t, mb.castTo(sum, type.getElementType()));
      });
      return mb.collapse(repeated, {{0}, {1}, {2, 3}, {4}});
    };
    Value context =
        mb.collapse(mb.causalAttention(q, repeatKV(k), repeatKV(v)), qHeads);
    x = mb.add(x, linear(mb, context, attn + "o_proj.weight", hidden, hidden));
  }

  h = rmsNorm(mb, x, prefix + "post_attention_layernorm");
  {
    ModelBuilder::NameScope scope(mb, prefix + "mlp");
    std::string mlp = paramName(mb, prefix + "mlp.");
    Value gate = linear(mb, h, mlp + "gate_proj.weight", hidden, ffn);
    Value up = linear(mb, h, mlp + "up_proj.weight", hidden, ffn);
    // silu(gate) * up = gate / (1 + exp(-gate)) * up
    Value act = mb.elementwise(
        {{gate, {0, 1}}, {up, {0, 1}}}, {tokens, ffn}, mb.getStorageType(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value negated = arith::NegFOp::create(b, loc, args[0]);
          Value denom =
              arith::AddFOp::create(b, loc, mb.constant(b, loc, 1.0),
                                    math::ExpOp::create(b, loc, negated));
          Value silu = arith::DivFOp::create(b, loc, args[0], denom);
          return arith::MulFOp::create(b, loc, silu, args[1]);
        });
    // With s = sigmoid(gate): dup = dact · gate · s and
    // dgate = dact · up · s · (1 + gate · (1 - s)).
    mb.record(act, [&mb, gate, up, tokens, ffn](Value grad) {
      auto sigmoid = [&](OpBuilder &b, Location loc, Value x) -> Value {
        Value denom = arith::AddFOp::create(
            b, loc, mb.constant(b, loc, 1.0),
            math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x)));
        return arith::DivFOp::create(b, loc, mb.constant(b, loc, 1.0), denom);
      };
      SmallVector<Operand> inputs = {{gate, {0, 1}}, {up, {0, 1}},
                                     {grad, {0, 1}}};
      Value dUp = mb.elementwise(
          inputs, {tokens, ffn}, mb.getStorageType(),
          [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            Value silu =
                arith::MulFOp::create(b, loc, args[0], sigmoid(b, loc, args[0]));
            return arith::MulFOp::create(b, loc, args[2], silu);
          });
      Value dGate = mb.elementwise(
          inputs, {tokens, ffn}, mb.getStorageType(),
          [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            Value s = sigmoid(b, loc, args[0]);
            Value oneMinus =
                arith::SubFOp::create(b, loc, mb.constant(b, loc, 1.0), s);
            Value slope = arith::MulFOp::create(
                b, loc, s,
                arith::AddFOp::create(
                    b, loc, mb.constant(b, loc, 1.0),
                    arith::MulFOp::create(b, loc, args[0], oneMinus)));
            return arith::MulFOp::create(
                b, loc, arith::MulFOp::create(b, loc, args[2], args[1]),
                slope);
          });
      mb.addGrad(up, dUp);
      mb.addGrad(gate, dGate);
    });
    x = mb.add(x, linear(mb, act, mlp + "down_proj.weight", ffn, hidden));
  }
  return x;
}

Value mlir::tp::models::buildLlamaHead(ModelBuilder &mb, Value x) {
  const ModelConfig &config = mb.getConfig();
  Value h = rmsNorm(mb, x, "norm");
  ModelBuilder::NameScope scope(mb, "lm_head");
  // Tied (--hf with tie_word_embeddings): the token embedding, transposed.
  if (config.tieEmbeddings)
    return mb.matmulTransposedRhs(h, getEmbedding(mb));
  return linear(mb, h, "lm_head.weight", config.hidden, config.vocab);
}
