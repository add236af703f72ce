//===- ModelBuilder.h - building blocks of Transformer graphs ---*- C++ -*-===//
//
// ModelBuilder owns the module and the `forward` function being generated and
// offers the pieces GPT-2 and Llama are assembled from: parameters with their
// initialisation descriptors, linalg.generic with loop-indexed operands,
// matmuls, reductions, norms, rotary embedding, causal attention, token
// embedding and cross-entropy. lib/Models/ModelBuilder.cpp explains the IR
// conventions these pieces follow.
//
//===----------------------------------------------------------------------===//

#ifndef TP_MODELS_MODELBUILDER_H
#define TP_MODELS_MODELBUILDER_H

#include "tp/Models/ModelConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace mlir::tp::models {

/// How a parameter is initialised: the `tp.init` descriptor without its
/// seed, which derives from the parameter's name.
struct InitSpec {
  enum class Kind { Normal, Uniform, Zeros, Ones };
  Kind kind = Kind::Zeros;
  /// `std` of a normal, `scale` of a uniform; unused otherwise.
  double value = 0.0;

  static InitSpec normal(double std) { return {Kind::Normal, std}; }
  static InitSpec uniform(double scale) { return {Kind::Uniform, scale}; }
  static InitSpec zeros() { return {Kind::Zeros, 0.0}; }
  static InitSpec ones() { return {Kind::Ones, 0.0}; }
};

/// An input of a linalg.generic: a tensor and, for each of its dimensions,
/// the loop that indexes it (the results of a projected-permutation map).
struct Operand {
  Value value;
  llvm::SmallVector<unsigned, 6> loops;
};

/// The combiner of a reduction.
enum class Combiner { Sum, Max };

/// The body of a linalg.generic: gets the block arguments (inputs, then the
/// output's) and returns the value to yield.
using BodyFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

class ModelBuilder {
public:
  /// Starts `func.func @<funcName>` (`forward` unless told otherwise).
  ModelBuilder(MLIRContext *context, const ModelConfig &config,
               llvm::StringRef funcName = "forward");

  const ModelConfig &getConfig() const { return config; }
  MLIRContext *getContext() { return builder.getContext(); }
  /// The element type of activations and weights (the configured dtype).
  Type getStorageType() const { return storageType; }
  /// The type scalar arithmetic and reductions use: f32.
  Type getComputeType() const { return computeType; }

  //===--------------------------------------------------------------------===//
  // The function signature
  //===--------------------------------------------------------------------===//

  /// Appends a non-parameter argument; inputs must come before parameters.
  Value addInput(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                 Type elementType);
  /// The parameter called `name`: appended as a `tp.param` argument in the
  /// storage type on first use, returned again by later calls (tied weights).
  Value getParam(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                 InitSpec init);
  /// Returns `result`, completes the signature and hands the module over.
  OwningOpRef<ModuleOp> finish(Value result);

  /// Appends an argument with the attributes `attrs`, wherever parameters
  /// are (training state: optimizer moments, the step counter).
  Value addArgument(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    Type elementType, DictionaryAttr attrs);
  /// The parameters in model order, with their initialisation.
  llvm::ArrayRef<std::pair<BlockArgument, InitSpec>> getParams() const {
    return params;
  }
  /// Returns `results` with the attributes `resultAttrs` and hands the
  /// module over, with the arguments reordered: argument i of the final
  /// signature is the argument created as number argOrder[i] (a
  /// permutation of all arguments).
  OwningOpRef<ModuleOp> finish(ValueRange results,
                               llvm::ArrayRef<DictionaryAttr> resultAttrs,
                               llvm::ArrayRef<unsigned> argOrder);

  /// While alive, the ops built get the location `loc(name)`.
  class NameScope {
  public:
    NameScope(ModelBuilder &mb, const llvm::Twine &name);
    ~NameScope();

  private:
    ModelBuilder &mb;
    Location saved;
  };

  //===--------------------------------------------------------------------===//
  // Tensors and linalg ops
  //===--------------------------------------------------------------------===//

  Value emptyTensor(llvm::ArrayRef<int64_t> shape, Type elementType);
  /// A linalg.fill of `value` (a float element type is expected).
  Value filledTensor(llvm::ArrayRef<int64_t> shape, Type elementType,
                     const llvm::APFloat &value);
  Value zeroTensor(llvm::ArrayRef<int64_t> shape, Type elementType);

  Value expand(Value value, llvm::ArrayRef<int64_t> shape,
               llvm::ArrayRef<ReassociationIndices> reassociation);
  Value collapse(Value value,
                 llvm::ArrayRef<ReassociationIndices> reassociation);
  /// The rank-reduced slice of `value` at `index` of dimension `dim`.
  Value selectIndex(Value value, unsigned dim, int64_t index);
  /// The slice of `value` of the first `size` entries of dimension `dim`.
  Value slicePrefix(Value value, unsigned dim, int64_t size);
  /// The slice of `value` of the `size` entries of dimension `dim` from
  /// `offset` on (every other dimension whole).
  Value sliceRange(Value value, unsigned dim, int64_t offset, int64_t size);

  /// A linalg.generic with `numLoops` loops whose output `init` is indexed by
  /// `outLoops`; the other loops are reductions. With `computeInF32`, float
  /// inputs narrower than f32 reach `body` extended to f32; the yielded value
  /// is converted to the output's element type.
  Value generic(llvm::ArrayRef<Operand> inputs, Value init, unsigned numLoops,
                llvm::ArrayRef<unsigned> outLoops, BodyFn body,
                bool computeInF32);
  /// An all-parallel linalg.generic producing a new tensor of `shape`;
  /// computes in f32.
  Value elementwise(llvm::ArrayRef<Operand> inputs,
                    llvm::ArrayRef<int64_t> shape, Type elementType,
                    BodyFn body);
  /// An f32 reduction: output of `outShape` indexed by `outLoops`, filled
  /// with the combiner's identity; the body is `combiner(expr(inputs), out)`.
  Value reduce(Combiner combiner, llvm::ArrayRef<Operand> inputs,
               unsigned numLoops, llvm::ArrayRef<unsigned> outLoops,
               llvm::ArrayRef<int64_t> outShape, BodyFn expr);
  /// out += lhs * rhs over the loops missing from `outLoops`, in the storage
  /// type, on a zero fill: a contraction for what linalg.matmul cannot say.
  Value contract(Operand lhs, Operand rhs, unsigned numLoops,
                 llvm::ArrayRef<unsigned> outLoops,
                 llvm::ArrayRef<int64_t> outShape);
  /// linalg.matmul x[M, K] · w[K, N] on a zero fill.
  Value matmul(Value x, Value w);
  /// linalg.matmul x[M, K] · w[N, K]ᵀ, the transpose expressed by the
  /// operand's indexing map.
  Value matmulTransposedRhs(Value x, Value w);
  /// linalg.matmul a[K, M]ᵀ · b[K, N] (weight gradients), the transpose
  /// expressed by the operand's indexing map.
  Value matmulTransposedLhs(Value a, Value b);
  /// `value` converted elementwise to `elementType` (itself when it has
  /// that element type already).
  Value castTo(Value value, Type elementType);

  //===--------------------------------------------------------------------===//
  // Scalar helpers for bodies
  //===--------------------------------------------------------------------===//

  /// An f32 constant.
  Value constant(OpBuilder &b, Location loc, double value);
  /// `value` extended to f32 when it is a narrower float.
  Value toCompute(OpBuilder &b, Location loc, Value value);

  //===--------------------------------------------------------------------===//
  // Layers
  //===--------------------------------------------------------------------===//

  /// a + b (same type).
  Value add(Value a, Value b);
  /// LayerNorm over the last dimension of x[T, H].
  Value layerNorm(Value x, Value gamma, Value beta);
  /// RMSNorm over the last dimension of x[T, H].
  Value rmsNorm(Value x, Value weight);
  /// Rotary position embedding (rotate-half convention) of x[B, S, ..., D];
  /// the position is the index of dimension 1.
  Value rotaryEmbedding(Value x);
  /// Softmax over the last dimension, in f32, returned in the storage type.
  Value softmaxLastDim(Value x);
  /// Causal scaled dot-product attention of q, k, v all [B, S, heads, D]
  /// (grouped-query attention repeats k and v to every query head first).
  /// Returns the context, [B, S, heads, D].
  Value causalAttention(Value q, Value k, Value v);
  /// Embedding lookup of ids[B, S] (i64) in table[V, H]: one generic whose
  /// body extracts from the captured table; positions[S, H], when given, are
  /// added by a separate elementwise generic. Returns [B*S, H].
  Value embedTokens(Value ids, Value table, Value positions);
  /// Mean cross-entropy of logits[T, V] against labels[B, S] (i64), as a
  /// tensor<f32>.
  Value crossEntropy(Value logits, Value labels);

  //===--------------------------------------------------------------------===//
  // Reverse mode (lib/Models/Backward.cpp)
  //===--------------------------------------------------------------------===//

  /// A gradient rule: given the gradient of the value it was recorded for,
  /// adds the gradients of that value's inputs with addGrad.
  using GradRule = std::function<void(Value grad)>;

  /// From now on the layers record their gradient rules (a tape).
  void enableGradients() { recording = true; }
  /// Whether rules are being recorded: on after enableGradients, off while
  /// a composite layer builds the pieces its own rule covers, and off
  /// during backward.
  bool isRecording() const { return recording && suspended == 0; }
  /// Records `rule` for `result` when recording; otherwise does nothing.
  void record(Value result, GradRule rule);
  /// Adds `grad` (same type) to the gradient of `value`. Integer tensors and
  /// arguments that are not parameters take no gradient.
  void addGrad(Value value, Value grad);
  /// Runs the recorded rules in reverse order from the scalar `loss`, whose
  /// gradient is one. Every op built meanwhile is named `<forward name>.grad`.
  void backward(Value loss);
  /// The gradient of `value` after backward; zeros when nothing reached it.
  Value getGrad(Value value);

  /// While alive, the layers record no rules: a composite layer builds its
  /// pieces under one and records one rule for the whole.
  class NoRecord {
  public:
    explicit NoRecord(ModelBuilder &mb) : mb(mb) { ++mb.suspended; }
    ~NoRecord() { --mb.suspended; }

  private:
    ModelBuilder &mb;
  };

private:
  /// rotaryEmbedding with the angles multiplied by `sign` (-1: the inverse
  /// rotation, which is its transpose and so its gradient).
  Value rotate(Value x, double sign);
  /// Sums `grad` over the loops missing from `outLoops` into a tensor of
  /// `shape` and the element type of `like`.
  Value sumGrad(llvm::ArrayRef<Operand> inputs, unsigned numLoops,
                llvm::ArrayRef<unsigned> outLoops, Value like, BodyFn expr);

  struct TapeEntry {
    Value result;
    Location loc;
    GradRule rule;
  };

  ModelConfig config;
  OpBuilder builder;
  Location loc;
  Type storageType;
  Type computeType;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  Block *entry = nullptr;
  llvm::SmallVector<DictionaryAttr> argAttrs;
  llvm::StringMap<unsigned> paramArgs;
  /// Whether a parameter has been added (inputs must come first).
  bool sawParam = false;
  llvm::SmallVector<std::pair<BlockArgument, InitSpec>> params;
  bool recording = false;
  unsigned suspended = 0;
  std::vector<TapeEntry> tape;
  llvm::DenseMap<Value, Value> grads;
  /// For gradients assembled from rank-reduced slices (selectIndex): the
  /// (dimension, index) slices inserted so far into a zero tensor.
  llvm::DenseMap<Value, llvm::SmallVector<std::pair<unsigned, int64_t>>>
      sliceGrads;
};

//===----------------------------------------------------------------------===//
// Architectures
//===----------------------------------------------------------------------===//

/// GPT-2: ids[B, S] → hidden[B*S, H] (token plus learned position embedding).
Value buildGPT2Embedding(ModelBuilder &mb, Value ids);
/// One GPT-2 decoder block on hidden[B*S, H].
Value buildGPT2Block(ModelBuilder &mb, Value x, int64_t layer);
/// Final LayerNorm and the LM head tied to the token embedding: logits[B*S, V].
Value buildGPT2Head(ModelBuilder &mb, Value x);

/// Llama: ids[B, S] → hidden[B*S, H].
Value buildLlamaEmbedding(ModelBuilder &mb, Value ids);
/// One Llama decoder block on hidden[B*S, H].
Value buildLlamaBlock(ModelBuilder &mb, Value x, int64_t layer);
/// Final RMSNorm and the untied LM head: logits[B*S, V].
Value buildLlamaHead(ModelBuilder &mb, Value x);

/// The forward pass of the builder's configuration (lib/Models/Models.cpp):
/// adds the inputs, then builds embedding, blocks, head and loss as the
/// scope asks. Returns the function's result (loss, logits or hidden
/// states).
Value buildForward(ModelBuilder &mb);

} // namespace mlir::tp::models

#endif // TP_MODELS_MODELBUILDER_H
