//===- ModelBuilder.cpp - building blocks of Transformer graphs -*- C++ -*-===//
//
// How tp-gen builds a graph
// =========================
//
// ModelBuilder creates `func.func @forward` with an entry block and grows it
// op by op with OpBuilder; arguments are appended to the entry block as the
// graph asks for them, so parameters appear in the order the model uses them
// (its "model order"), and the function type and argument attributes are set
// once, by finish(). Every op gets a NameLoc naming the module it belongs to
// (`h.3.attn`, `layers.0.mlp`), every argument one with its own name
// (`layers.0.self_attn.q_proj.weight`); `--mlir-print-debuginfo` shows them.
//
// The IR is written for the tensor-parallel planner, which derives sharding
// rules from indexing maps. The conventions, relied on by lib/Analysis:
//
//   1. Hidden states between layers are 2-D [T, H] with T = batch * seq.
//      Linear layers are `linalg.matmul` on a zero `linalg.fill`; a
//      transposed weight (GPT-2's tied LM head) is expressed by the matmul's
//      `indexing_maps`, never by a transpose op. Biases are added by a
//      separate elementwise generic that indexes them by the feature loops.
//   2. Attention views [T, H] as [B, S, heads, D] with `tensor.expand_shape`.
//      Grouped-query attention keeps q as [B, S, heads, D] and repeats k and
//      v, [B, S, kv, D], to [B, S, heads, D] as Hugging Face's repeat_kv
//      does: an elementwise generic broadcasting to [B, S, kv, group, D]
//      (input map (b, s, kv, g, d) -> (b, s, kv, d)) and a
//      `tensor.collapse_shape` [[0], [1], [2, 3], [4]], so that query head
//      h = kv * group + g uses key/value head kv. Scores and context are each
//      ONE linalg.generic contraction whose maps are projected permutations:
//        scores[b, h, s, t] = sum_d q[b, s, h, d] * k[b, t, h, d]
//        ctx[b, s, h, d]    = sum_t p[b, h, s, t] * v[b, t, h, d]
//      GPT-2's fused QKV is one contraction x[T, H] · w[H, 3, H] → [T, 3, H],
//      expanded to [B, S, 3, heads, D] and read with rank-reducing
//      `tensor.extract_slice`s on the size-3 dimension.
//   3. Every reduction is a linalg.generic whose output is a `linalg.fill`
//      with the combiner's identity (0 for arith.addf, -inf for
//      arith.maximumf) and whose body is `combiner(expr(inputs), out)`.
//      Softmax, LayerNorm, RMSNorm and cross-entropy are decomposed into such
//      reductions and elementwise generics; a mean is a sum times 1/n.
//   4. Elementwise work is an all-parallel generic with scalar arith/math in
//      its body. The causal mask and the rotary angles come from
//      `linalg.index` inside bodies; nothing is precomputed as a tensor.
//   5. Numerics: contractions (matmuls, scores, context) compute in the
//      storage type, as linalg.matmul defines them. Every other body computes
//      in f32 (arith.extf of f16/bf16 inputs, arith.truncf of the result), and
//      reductions produce f32 tensors. With f32 no cast is emitted.
//
// The loss is what makes vocabulary-parallel cross-entropy fall out of the
// planner: the target logit is a sum over the vocabulary of
// `select(v == label, logit, 0)` rather than a gather, so every step of the
// loss is a reduction or an elementwise op over the vocabulary dimension.
//
// The token lookup is a generic over [B, S, H] whose body only reads the
// table (captured, not an operand: arith.index_cast of the id, linalg.index
// for the column, tensor.extract); GPT-2's positions are added by a separate
// elementwise generic. A table split by rows then becomes a masked lookup
// with a partial-sum result (vocabulary-parallel embedding), and the
// positions are not added once per device.
//
// Training (`tp-gen --train`): after enableGradients() every layer below also
// records the rule of its gradient, written next to its forward code;
// Backward.cpp explains the tape and Training.cpp the step around it. The
// rules use the same conventions: weight gradients are linalg.matmuls whose
// indexing maps transpose an operand, bias and norm-weight gradients are sum
// reductions over the tokens, and the embedding gradient is a reduction over
// the tokens that is parallel over the vocabulary.
//
//===----------------------------------------------------------------------===//

#include "tp/Models/ModelBuilder.h"
#include "tp/Models/Models.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::tp::models;

/// A reduction body whose expression is its first input.
static Value firstInput(OpBuilder &, Location, ValueRange args) {
  return args[0];
}

/// The loops 0 .. n-1.
static SmallVector<unsigned, 6> allLoops(int64_t n) {
  return llvm::to_vector<6>(llvm::seq<unsigned>(0, n));
}

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

ModelBuilder::ModelBuilder(MLIRContext *context, const ModelConfig &config,
                           StringRef funcName)
    : config(config), builder(context),
      loc(NameLoc::get(StringAttr::get(context, funcName))) {
  context->loadDialect<arith::ArithDialect, func::FuncDialect,
                       linalg::LinalgDialect, math::MathDialect,
                       tensor::TensorDialect>();
  switch (config.dtype) {
  case DType::F32:
    storageType = builder.getF32Type();
    break;
  case DType::F16:
    storageType = builder.getF16Type();
    break;
  case DType::BF16:
    storageType = builder.getBF16Type();
    break;
  }
  computeType = builder.getF32Type();
  module = ModuleOp::create(UnknownLoc::get(context));
  builder.setInsertionPointToEnd(module->getBody());
  func = func::FuncOp::create(builder, loc, funcName,
                              builder.getFunctionType({}, {}));
  entry = func.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
}

//===----------------------------------------------------------------------===//
// The function signature
//===----------------------------------------------------------------------===//

Value ModelBuilder::addInput(StringRef name, ArrayRef<int64_t> shape,
                             Type elementType) {
  assert(!sawParam && "inputs come before parameters");
  auto type = RankedTensorType::get(shape, elementType);
  // The Hugging Face layout names every argument for the runtime.
  SmallVector<NamedAttribute> attrs;
  if (config.hf)
    attrs.push_back(
        builder.getNamedAttr("tp.name", builder.getStringAttr(name)));
  argAttrs.push_back(builder.getDictionaryAttr(attrs));
  return entry->addArgument(type, NameLoc::get(builder.getStringAttr(name)));
}

/// The `tp.init` dictionary of the parameter `name`.
static DictionaryAttr getInitAttr(Builder &b, StringRef name, InitSpec init) {
  SmallVector<NamedAttribute> fields;
  auto addSeed = [&] {
    fields.push_back(
        b.getNamedAttr("seed", b.getI64IntegerAttr(getParamSeed(name))));
  };
  switch (init.kind) {
  case InitSpec::Kind::Normal:
    fields.push_back(b.getNamedAttr("kind", b.getStringAttr("normal")));
    addSeed();
    fields.push_back(b.getNamedAttr("std", b.getF64FloatAttr(init.value)));
    break;
  case InitSpec::Kind::Uniform:
    fields.push_back(b.getNamedAttr("kind", b.getStringAttr("uniform")));
    addSeed();
    fields.push_back(b.getNamedAttr("scale", b.getF64FloatAttr(init.value)));
    break;
  case InitSpec::Kind::Zeros:
    fields.push_back(b.getNamedAttr("kind", b.getStringAttr("zeros")));
    break;
  case InitSpec::Kind::Ones:
    fields.push_back(b.getNamedAttr("kind", b.getStringAttr("ones")));
    break;
  }
  return b.getDictionaryAttr(fields);
}

Value ModelBuilder::getParam(StringRef name, ArrayRef<int64_t> shape,
                             InitSpec init) {
  auto type = RankedTensorType::get(shape, storageType);
  auto it = paramArgs.find(name);
  if (it != paramArgs.end()) {
    BlockArgument arg = entry->getArgument(it->second);
    assert(arg.getType() == type && "a tied parameter keeps its type");
    return arg;
  }
  sawParam = true;
  BlockArgument arg =
      entry->addArgument(type, NameLoc::get(builder.getStringAttr(name)));
  paramArgs[name] = arg.getArgNumber();
  params.push_back({arg, init});
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("tp.param", builder.getUnitAttr()),
      builder.getNamedAttr("tp.init", getInitAttr(builder, name, init))};
  if (config.hf)
    attrs.push_back(
        builder.getNamedAttr("tp.name", builder.getStringAttr(name)));
  argAttrs.push_back(builder.getDictionaryAttr(attrs));
  return arg;
}

OwningOpRef<ModuleOp> ModelBuilder::finish(Value result) {
  func::ReturnOp::create(builder, loc, result);
  func.setFunctionType(builder.getFunctionType(
      SmallVector<Type>(entry->getArgumentTypes()), {result.getType()}));
  func.setAllArgAttrs(argAttrs);
  return std::move(module);
}

Value ModelBuilder::addArgument(StringRef name, ArrayRef<int64_t> shape,
                                Type elementType, DictionaryAttr attrs) {
  auto type = RankedTensorType::get(shape, elementType);
  argAttrs.push_back(attrs);
  return entry->addArgument(type, NameLoc::get(builder.getStringAttr(name)));
}

OwningOpRef<ModuleOp> ModelBuilder::finish(ValueRange results,
                                           ArrayRef<DictionaryAttr> resultAttrs,
                                           ArrayRef<unsigned> argOrder) {
  unsigned numArgs = entry->getNumArguments();
  assert(argOrder.size() == numArgs && "argOrder permutes every argument");
  func::ReturnOp::create(builder, loc, results);
  // Append the arguments again in their final order, move the uses over
  // and drop the originals.
  SmallVector<DictionaryAttr> orderedAttrs;
  for (unsigned from : argOrder) {
    BlockArgument old = entry->getArgument(from);
    BlockArgument moved = entry->addArgument(old.getType(), old.getLoc());
    old.replaceAllUsesWith(moved);
    orderedAttrs.push_back(argAttrs[from]);
  }
  entry->eraseArguments(0, numArgs);
  func.setFunctionType(builder.getFunctionType(
      SmallVector<Type>(entry->getArgumentTypes()),
      SmallVector<Type>(results.getTypes())));
  func.setAllArgAttrs(orderedAttrs);
  func.setAllResultAttrs(resultAttrs);
  return std::move(module);
}

ModelBuilder::NameScope::NameScope(ModelBuilder &mb, const Twine &name)
    : mb(mb), saved(mb.loc) {
  mb.loc = NameLoc::get(StringAttr::get(mb.getContext(), name));
}

ModelBuilder::NameScope::~NameScope() { mb.loc = saved; }

//===----------------------------------------------------------------------===//
// Tensors and linalg ops
//===----------------------------------------------------------------------===//

Value ModelBuilder::emptyTensor(ArrayRef<int64_t> shape, Type elementType) {
  return tensor::EmptyOp::create(builder, loc, shape, elementType);
}

Value ModelBuilder::filledTensor(ArrayRef<int64_t> shape, Type elementType,
                                 const APFloat &value) {
  Value scalar = arith::ConstantOp::create(builder, loc,
                                           FloatAttr::get(elementType, value));
  return linalg::FillOp::create(builder, loc, ValueRange{scalar},
                                ValueRange{emptyTensor(shape, elementType)})
      ->getResult(0);
}

/// `value` as an APFloat of the float type `type`.
static APFloat getAPFloat(Type type, double value) {
  bool losesInfo = false;
  APFloat result(value);
  result.convert(cast<FloatType>(type).getFloatSemantics(),
                 APFloat::rmNearestTiesToEven, &losesInfo);
  return result;
}

Value ModelBuilder::zeroTensor(ArrayRef<int64_t> shape, Type elementType) {
  return filledTensor(shape, elementType, getAPFloat(elementType, 0.0));
}

Value ModelBuilder::expand(Value value, ArrayRef<int64_t> shape,
                           ArrayRef<ReassociationIndices> reassociation) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(value.getType()).getElementType());
  Value result =
      tensor::ExpandShapeOp::create(builder, loc, type, value, reassociation);
  if (isRecording()) {
    SmallVector<ReassociationIndices> groups(reassociation);
    record(result, [this, value, groups](Value grad) {
      addGrad(value, collapse(grad, groups));
    });
  }
  return result;
}

Value ModelBuilder::collapse(Value value,
                             ArrayRef<ReassociationIndices> reassociation) {
  Value result =
      tensor::CollapseShapeOp::create(builder, loc, value, reassociation);
  if (isRecording()) {
    SmallVector<ReassociationIndices> groups(reassociation);
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(value.getType()).getShape());
    record(result, [this, value, groups, shape](Value grad) {
      addGrad(value, expand(grad, shape, groups));
    });
  }
  return result;
}

Value ModelBuilder::selectIndex(Value value, unsigned dim, int64_t index) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  SmallVector<int64_t> resultShape;
  for (auto [i, size] : llvm::enumerate(type.getShape())) {
    offsets.push_back(builder.getIndexAttr(i == dim ? index : 0));
    sizes.push_back(builder.getIndexAttr(i == dim ? 1 : size));
    strides.push_back(builder.getIndexAttr(1));
    if (i != dim)
      resultShape.push_back(size);
  }
  auto resultType = RankedTensorType::get(resultShape, type.getElementType());
  Value result = tensor::ExtractSliceOp::create(
      builder, loc, resultType, value, offsets, sizes, strides);
  if (isRecording())
    record(result, [=](Value grad) {
      // The slices of one tensor taken at distinct indices (GPT-2's q, k
      // and v) are inserted into one zero tensor; a slice taken twice, or
      // a gradient that also has other terms, adds.
      auto it = grads.find(value);
      bool fresh = it == grads.end();
      auto slices = sliceGrads.find(value);
      bool overlap = !fresh && (slices == sliceGrads.end() ||
                                llvm::is_contained(slices->second,
                                                   std::make_pair(dim, index)));
      Value base = fresh ? zeroTensor(type.getShape(), type.getElementType())
                         : it->second;
      if (overlap) {
        Value current = tensor::ExtractSliceOp::create(
            builder, loc, resultType, base, offsets, sizes, strides);
        grad = add(current, grad);
      }
      grads[value] = tensor::InsertSliceOp::create(builder, loc, grad, base,
                                                   offsets, sizes, strides);
      if (fresh)
        sliceGrads[value] = {{dim, index}};
      else if (slices != sliceGrads.end())
        slices->second.push_back({dim, index});
    });
  return result;
}

Value ModelBuilder::slicePrefix(Value value, unsigned dim, int64_t size) {
  return sliceRange(value, dim, 0, size);
}

Value ModelBuilder::sliceRange(Value value, unsigned dim, int64_t offset,
                               int64_t size) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  SmallVector<int64_t> resultShape(type.getShape());
  resultShape[dim] = size;
  for (auto [i, extent] : llvm::enumerate(resultShape)) {
    offsets.push_back(builder.getIndexAttr(i == dim ? offset : 0));
    sizes.push_back(builder.getIndexAttr(extent));
    strides.push_back(builder.getIndexAttr(1));
  }
  auto resultType = RankedTensorType::get(resultShape, type.getElementType());
  Value result = tensor::ExtractSliceOp::create(
      builder, loc, resultType, value, offsets, sizes, strides);
  if (isRecording())
    record(result, [=](Value grad) {
      // The entries outside the range get no gradient.
      Value zeros = zeroTensor(type.getShape(), type.getElementType());
      addGrad(value, tensor::InsertSliceOp::create(builder, loc, grad, zeros,
                                                   offsets, sizes, strides));
    });
  return result;
}

/// Converts the float `value` to the float type `type` (extf or truncf).
static Value convertFloat(OpBuilder &b, Location loc, Value value, Type type) {
  Type from = value.getType();
  if (from == type)
    return value;
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(type);
  assert(fromFloat && toFloat && "only floats are converted");
  if (fromFloat.getWidth() < toFloat.getWidth())
    return arith::ExtFOp::create(b, loc, type, value);
  return arith::TruncFOp::create(b, loc, type, value);
}

Value ModelBuilder::generic(ArrayRef<Operand> inputs, Value init,
                            unsigned numLoops, ArrayRef<unsigned> outLoops,
                            BodyFn body, bool computeInF32) {
  MLIRContext *context = getContext();
  SmallVector<Value> values;
  SmallVector<AffineMap> maps;
  for (const Operand &input : inputs) {
    assert(cast<RankedTensorType>(input.value.getType()).getRank() ==
               static_cast<int64_t>(input.loops.size()) &&
           "one loop per operand dimension");
    values.push_back(input.value);
    maps.push_back(
        AffineMap::getMultiDimMapWithTargets(numLoops, input.loops, context));
  }
  maps.push_back(
      AffineMap::getMultiDimMapWithTargets(numLoops, outLoops, context));
  SmallVector<utils::IteratorType> iterators(numLoops,
                                             utils::IteratorType::reduction);
  for (unsigned loop : outLoops)
    iterators[loop] = utils::IteratorType::parallel;
  Type outType = getElementTypeOrSelf(init.getType());
  size_t numInputs = inputs.size();
  auto op = linalg::GenericOp::create(
      builder, loc, TypeRange{init.getType()}, values, ValueRange{init}, maps,
      iterators, [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
        SmallVector<Value> operands(args);
        if (computeInF32)
          for (size_t i = 0; i < numInputs; ++i)
            operands[i] = toCompute(b, bodyLoc, operands[i]);
        Value result = body(b, bodyLoc, operands);
        linalg::YieldOp::create(b, bodyLoc,
                                convertFloat(b, bodyLoc, result, outType));
      });
  return op->getResult(0);
}

Value ModelBuilder::elementwise(ArrayRef<Operand> inputs,
                                ArrayRef<int64_t> shape, Type elementType,
                                BodyFn body) {
  SmallVector<unsigned> loops =
      llvm::to_vector(llvm::seq<unsigned>(0, shape.size()));
  return generic(inputs, emptyTensor(shape, elementType), shape.size(), loops,
                 body, /*computeInF32=*/true);
}

Value ModelBuilder::reduce(Combiner combiner, ArrayRef<Operand> inputs,
                           unsigned numLoops, ArrayRef<unsigned> outLoops,
                           ArrayRef<int64_t> outShape, BodyFn expr) {
  APFloat identity =
      combiner == Combiner::Sum
          ? APFloat::getZero(APFloat::IEEEsingle())
          : APFloat::getInf(APFloat::IEEEsingle(), /*Negative=*/true);
  Value init = filledTensor(outShape, computeType, identity);
  return generic(
      inputs, init, numLoops, outLoops,
      [&](OpBuilder &b, Location bodyLoc, ValueRange args) -> Value {
        Value value = expr(b, bodyLoc, args.drop_back());
        if (combiner == Combiner::Sum)
          return arith::AddFOp::create(b, bodyLoc, value, args.back());
        return arith::MaximumFOp::create(b, bodyLoc, value, args.back());
      },
      /*computeInF32=*/true);
}

Value ModelBuilder::contract(Operand lhs, Operand rhs, unsigned numLoops,
                             ArrayRef<unsigned> outLoops,
                             ArrayRef<int64_t> outShape) {
  Value result = generic(
      {lhs, rhs}, zeroTensor(outShape, storageType), numLoops, outLoops,
      [](OpBuilder &b, Location bodyLoc, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(b, bodyLoc, args[0], args[1]);
        return arith::AddFOp::create(b, bodyLoc, args[2], product);
      },
      /*computeInF32=*/false);
  if (isRecording()) {
    // out[O] = Σ lhs[L] rhs[R]: dlhs[L] = Σ dout[O] rhs[R] and
    // drhs[R] = Σ lhs[L] dout[O], contractions over the same loops.
    SmallVector<unsigned> out(outLoops);
    record(result, [=](Value grad) {
      Operand dOut{grad, SmallVector<unsigned, 6>(out.begin(), out.end())};
      addGrad(lhs.value, contract(dOut, rhs, numLoops, lhs.loops,
                                  shapeOf(lhs.value)));
      addGrad(rhs.value, contract(lhs, dOut, numLoops, rhs.loops,
                                  shapeOf(rhs.value)));
    });
  }
  return result;
}

Value ModelBuilder::matmul(Value x, Value w) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  assert(xType.getDimSize(1) == wType.getDimSize(0) && "inner sizes agree");
  Value init =
      zeroTensor({xType.getDimSize(0), wType.getDimSize(1)}, storageType);
  Value result =
      linalg::MatmulOp::create(builder, loc, TypeRange{init.getType()},
                               ValueRange{x, w}, ValueRange{init})
          ->getResult(0);
  // y = x · w: dx = dy · wᵀ, dw = xᵀ · dy.
  record(result, [=](Value grad) {
    addGrad(x, matmulTransposedRhs(grad, w));
    addGrad(w, matmulTransposedLhs(x, grad));
  });
  return result;
}

Value ModelBuilder::matmulTransposedRhs(Value x, Value w) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  assert(xType.getDimSize(1) == wType.getDimSize(1) && "inner sizes agree");
  Value init =
      zeroTensor({xType.getDimSize(0), wType.getDimSize(0)}, storageType);
  auto op = linalg::MatmulOp::create(builder, loc, TypeRange{init.getType()},
                                     ValueRange{x, w}, ValueRange{init});
  // (m, n, k): x[m, k], w[n, k], out[m, n].
  MLIRContext *context = getContext();
  auto map = [&](ArrayRef<unsigned> loops) -> Attribute {
    return AffineMapAttr::get(
        AffineMap::getMultiDimMapWithTargets(3, loops, context));
  };
  op.setIndexingMapsAttr(
      builder.getArrayAttr({map({0, 2}), map({1, 2}), map({0, 1})}));
  Value result = op->getResult(0);
  // y = x · wᵀ: dx = dy · w, dw = dyᵀ · x.
  record(result, [=](Value grad) {
    addGrad(x, matmul(grad, w));
    addGrad(w, matmulTransposedLhs(grad, x));
  });
  return result;
}

Value ModelBuilder::matmulTransposedLhs(Value a, Value b) {
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  assert(aType.getDimSize(0) == bType.getDimSize(0) && "inner sizes agree");
  Value init =
      zeroTensor({aType.getDimSize(1), bType.getDimSize(1)}, storageType);
  auto op = linalg::MatmulOp::create(builder, loc, TypeRange{init.getType()},
                                     ValueRange{a, b}, ValueRange{init});
  // (m, n, k): a[k, m], b[k, n], out[m, n].
  MLIRContext *context = getContext();
  auto map = [&](ArrayRef<unsigned> loops) -> Attribute {
    return AffineMapAttr::get(
        AffineMap::getMultiDimMapWithTargets(3, loops, context));
  };
  op.setIndexingMapsAttr(
      builder.getArrayAttr({map({2, 0}), map({2, 1}), map({0, 1})}));
  assert(!isRecording() && "only gradients use transposed left operands");
  return op->getResult(0);
}

Value ModelBuilder::castTo(Value value, Type elementType) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  return elementwise({{value, allLoops(type.getRank())}}, type.getShape(),
                     elementType,
                     [](OpBuilder &, Location, ValueRange args) -> Value {
                       return args[0];
                     });
}

Value ModelBuilder::sumGrad(ArrayRef<Operand> inputs, unsigned numLoops,
                            ArrayRef<unsigned> outLoops, Value like,
                            BodyFn expr) {
  auto type = cast<RankedTensorType>(like.getType());
  Value sum = reduce(Combiner::Sum, inputs, numLoops, outLoops,
                     type.getShape(), expr);
  return castTo(sum, type.getElementType());
}

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

Value ModelBuilder::constant(OpBuilder &b, Location bodyLoc, double value) {
  return arith::ConstantOp::create(b, bodyLoc, b.getF32FloatAttr(value));
}

Value ModelBuilder::toCompute(OpBuilder &b, Location bodyLoc, Value value) {
  auto floatType = dyn_cast<FloatType>(value.getType());
  if (!floatType || floatType.getWidth() >= 32)
    return value;
  return arith::ExtFOp::create(b, bodyLoc, computeType, value);
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

Value ModelBuilder::add(Value a, Value b) {
  ArrayRef<int64_t> shape = shapeOf(a);
  auto loops = allLoops(shape.size());
  Value result =
      elementwise({{a, loops}, {b, loops}}, shape,
                  getElementTypeOrSelf(a.getType()),
                  [](OpBuilder &ob, Location l, ValueRange args) -> Value {
                    return arith::AddFOp::create(ob, l, args[0], args[1]);
                  });
  record(result, [=](Value grad) {
    addGrad(a, grad);
    addGrad(b, grad);
  });
  return result;
}

/// LayerNorm's normalised input and reciprocal standard deviation from x and
/// the row statistics sum = Σ x and sq = Σ (x - mean)².
static std::pair<Value, Value> normalise(ModelBuilder &mb, OpBuilder &b,
                                         Location l, Value x, Value sum,
                                         Value sq, double invHidden,
                                         double eps) {
  Value invH = mb.constant(b, l, invHidden);
  Value mean = arith::MulFOp::create(b, l, sum, invH);
  Value var = arith::MulFOp::create(b, l, sq, invH);
  Value rstd = math::RsqrtOp::create(
      b, l, arith::AddFOp::create(b, l, var, mb.constant(b, l, eps)));
  Value centered = arith::SubFOp::create(b, l, x, mean);
  return {arith::MulFOp::create(b, l, centered, rstd), rstd};
}

Value ModelBuilder::layerNorm(Value x, Value gamma, Value beta) {
  int64_t tokens = shapeOf(x)[0], hidden = shapeOf(x)[1];
  double invHidden = 1.0 / static_cast<double>(hidden);
  double eps = config.normEps;
  // sum[t] = Σ_k x[t, k]
  Value sum =
      reduce(Combiner::Sum, {{x, {0, 1}}}, 2, {0}, {tokens}, firstInput);
  // sq[t] = Σ_k (x[t, k] - sum[t] / H)²
  Value sq =
      reduce(Combiner::Sum, {{x, {0, 1}}, {sum, {0}}}, 2, {0}, {tokens},
             [&](OpBuilder &b, Location l, ValueRange args) -> Value {
               Value mean = arith::MulFOp::create(b, l, args[1],
                                                  constant(b, l, invHidden));
               Value centered = arith::SubFOp::create(b, l, args[0], mean);
               return arith::MulFOp::create(b, l, centered, centered);
             });
  // y = (x - mean) * rsqrt(sq / H + eps) * gamma + beta
  Value y = elementwise(
      {{x, {0, 1}}, {sum, {0}}, {sq, {0}}, {gamma, {1}}, {beta, {1}}},
      {tokens, hidden}, storageType,
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Value normed =
            normalise(*this, b, l, args[0], args[1], args[2], invHidden, eps)
                .first;
        Value scaled = arith::MulFOp::create(b, l, normed, args[3]);
        return arith::AddFOp::create(b, l, scaled, args[4]);
      });
  if (!isRecording())
    return y;
  // With x̂ = (x - mean) · rstd and g = dy · gamma:
  //   dbeta = Σ_t dy, dgamma = Σ_t dy · x̂,
  //   dx = rstd · (g - (Σ_k g + x̂ · Σ_k g · x̂) / H).
  record(y, [=](Value dy) {
    auto xhat = [&](OpBuilder &b, Location l, ValueRange args) {
      return normalise(*this, b, l, args[0], args[1], args[2], invHidden, eps);
    };
    addGrad(beta, sumGrad({{dy, {0, 1}}}, 2, {1}, beta, firstInput));
    addGrad(gamma,
            sumGrad({{x, {0, 1}}, {sum, {0}}, {sq, {0}}, {dy, {0, 1}}}, 2, {1},
                    gamma,
                    [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                      return arith::MulFOp::create(b, l, args[3],
                                                   xhat(b, l, args).first);
                    }));
    // gSum[t] = Σ_k dy · gamma, gDot[t] = Σ_k dy · gamma · x̂
    Value gSum = reduce(Combiner::Sum, {{dy, {0, 1}}, {gamma, {1}}}, 2, {0},
                        {tokens},
                        [](OpBuilder &b, Location l, ValueRange args) -> Value {
                          return arith::MulFOp::create(b, l, args[0], args[1]);
                        });
    Value gDot = reduce(
        Combiner::Sum,
        {{x, {0, 1}}, {sum, {0}}, {sq, {0}}, {dy, {0, 1}}, {gamma, {1}}}, 2,
        {0}, {tokens}, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value g = arith::MulFOp::create(b, l, args[3], args[4]);
          return arith::MulFOp::create(b, l, g, xhat(b, l, args).first);
        });
    addGrad(x, elementwise({{x, {0, 1}},
                            {sum, {0}},
                            {sq, {0}},
                            {dy, {0, 1}},
                            {gamma, {1}},
                            {gSum, {0}},
                            {gDot, {0}}},
                           {tokens, hidden}, storageType,
                           [&](OpBuilder &b, Location l,
                               ValueRange args) -> Value {
                             auto [normed, rstd] = xhat(b, l, args);
                             Value g = arith::MulFOp::create(b, l, args[3],
                                                             args[4]);
                             Value corr = arith::AddFOp::create(
                                 b, l, args[5],
                                 arith::MulFOp::create(b, l, normed, args[6]));
                             corr = arith::MulFOp::create(
                                 b, l, corr, constant(b, l, invHidden));
                             return arith::MulFOp::create(
                                 b, l, rstd,
                                 arith::SubFOp::create(b, l, g, corr));
                           }));
  });
  return y;
}

Value ModelBuilder::rmsNorm(Value x, Value weight) {
  int64_t tokens = shapeOf(x)[0], hidden = shapeOf(x)[1];
  double invHidden = 1.0 / static_cast<double>(hidden);
  double eps = config.normEps;
  // sq[t] = Σ_k x[t, k]²
  Value sq = reduce(Combiner::Sum, {{x, {0, 1}}}, 2, {0}, {tokens},
                    [](OpBuilder &b, Location l, ValueRange args) -> Value {
                      return arith::MulFOp::create(b, l, args[0], args[0]);
                    });
  // r[t] = rsqrt(sq / H + eps)
  auto rms = [invHidden, eps, this](OpBuilder &b, Location l, Value sq) {
    Value meanSq = arith::MulFOp::create(b, l, sq, constant(b, l, invHidden));
    return math::RsqrtOp::create(
        b, l, arith::AddFOp::create(b, l, meanSq, constant(b, l, eps)));
  };
  // y = x * r * weight
  Value y = elementwise(
      {{x, {0, 1}}, {sq, {0}}, {weight, {1}}}, {tokens, hidden}, storageType,
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Value normed = arith::MulFOp::create(b, l, args[0], rms(b, l, args[1]));
        return arith::MulFOp::create(b, l, normed, args[2]);
      });
  // dweight = Σ_t dy · x · r;
  // dx = r · dy · weight - x · r³ · (Σ_k dy · weight · x) / H.
  record(y, [=](Value dy) {
    addGrad(weight,
            sumGrad({{x, {0, 1}}, {sq, {0}}, {dy, {0, 1}}}, 2, {1}, weight,
                    [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                      Value xr = arith::MulFOp::create(b, l, args[0],
                                                       rms(b, l, args[1]));
                      return arith::MulFOp::create(b, l, xr, args[2]);
                    }));
    Value dot = reduce(
        Combiner::Sum, {{x, {0, 1}}, {dy, {0, 1}}, {weight, {1}}}, 2, {0},
        {tokens}, [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value g = arith::MulFOp::create(b, l, args[1], args[2]);
          return arith::MulFOp::create(b, l, g, args[0]);
        });
    addGrad(x, elementwise(
                   {{x, {0, 1}}, {sq, {0}}, {dy, {0, 1}}, {weight, {1}},
                    {dot, {0}}},
                   {tokens, hidden}, storageType,
                   [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                     Value r = rms(b, l, args[1]);
                     Value g = arith::MulFOp::create(b, l, args[2], args[3]);
                     Value direct = arith::MulFOp::create(b, l, r, g);
                     Value r3 = arith::MulFOp::create(
                         b, l, r, arith::MulFOp::create(b, l, r, r));
                     Value corr = arith::MulFOp::create(
                         b, l, arith::MulFOp::create(b, l, args[0], r3),
                         arith::MulFOp::create(b, l, args[4],
                                               constant(b, l, invHidden)));
                     return arith::SubFOp::create(b, l, direct, corr);
                   }));
  });
  return y;
}

Value ModelBuilder::rotaryEmbedding(Value x) {
  Value y;
  {
    NoRecord noRecord(*this);
    y = rotate(x, 1.0);
  }
  // A rotation by the angle: its gradient rotates back.
  record(y, [=](Value grad) { addGrad(x, rotate(grad, -1.0)); });
  return y;
}

Value ModelBuilder::rotate(Value x, double sign) {
  ArrayRef<int64_t> shape = shapeOf(x);
  unsigned rank = shape.size();
  int64_t headDim = shape.back();
  // Split the head dimension into [2, D/2] halves: x1 = x[..., 0, :],
  // x2 = x[..., 1, :].
  SmallVector<int64_t> splitShape(shape.drop_back());
  splitShape.append({2, headDim / 2});
  SmallVector<ReassociationIndices> reassociation;
  for (unsigned i = 0; i + 1 < rank; ++i)
    reassociation.push_back({i});
  reassociation.push_back({rank - 1, rank});
  Value split = expand(x, splitShape, reassociation);
  Value x1 = selectIndex(split, rank - 1, 0);
  Value x2 = selectIndex(split, rank - 1, 1);
  // Loops (b, s, heads.., c, j); the halves are indexed by all but c.
  SmallVector<unsigned, 6> halfLoops = allLoops(rank - 1);
  halfLoops.push_back(rank);
  double exponentScale = -2.0 / static_cast<double>(headDim);
  double theta = config.ropeTheta;
  Value rotated = elementwise(
      {{x1, halfLoops}, {x2, halfLoops}}, splitShape, storageType,
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Type i64 = b.getI64Type();
        auto indexAsFloat = [&](unsigned dim) -> Value {
          Value index = linalg::IndexOp::create(b, l, dim);
          Value asInt = arith::IndexCastOp::create(b, l, i64, index);
          return arith::SIToFPOp::create(b, l, computeType, asInt);
        };
        // angle = s * theta^(-2 j / D)
        Value exponent = arith::MulFOp::create(b, l, indexAsFloat(rank),
                                               constant(b, l, exponentScale));
        Value invFreq =
            math::PowFOp::create(b, l, constant(b, l, theta), exponent);
        Value angle = arith::MulFOp::create(b, l, indexAsFloat(1), invFreq);
        Value cos = math::CosOp::create(b, l, angle);
        Value sin = math::SinOp::create(b, l, angle);
        // The inverse rotation negates the sine.
        if (sign < 0)
          sin = arith::NegFOp::create(b, l, sin);
        // out[.., 0, j] = x1 cos - x2 sin; out[.., 1, j] = x2 cos + x1 sin
        Value first = arith::SubFOp::create(
            b, l, arith::MulFOp::create(b, l, args[0], cos),
            arith::MulFOp::create(b, l, args[1], sin));
        Value second = arith::AddFOp::create(
            b, l, arith::MulFOp::create(b, l, args[1], cos),
            arith::MulFOp::create(b, l, args[0], sin));
        Value half = linalg::IndexOp::create(b, l, rank - 1);
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        Value isFirst =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, half, zero);
        return arith::SelectOp::create(b, l, isFirst, first, second);
      });
  return collapse(rotated, reassociation);
}

Value ModelBuilder::softmaxLastDim(Value x) {
  ArrayRef<int64_t> shape = shapeOf(x);
  unsigned rank = shape.size();
  auto loops = allLoops(rank);
  auto rowLoops = allLoops(rank - 1);
  ArrayRef<int64_t> rowShape = shape.drop_back();
  Value max =
      reduce(Combiner::Max, {{x, loops}}, rank, rowLoops, rowShape, firstInput);
  Value exp =
      elementwise({{x, loops}, {max, rowLoops}}, shape, computeType,
                  [](OpBuilder &b, Location l, ValueRange args) -> Value {
                    return math::ExpOp::create(
                        b, l, arith::SubFOp::create(b, l, args[0], args[1]));
                  });
  Value sum = reduce(Combiner::Sum, {{exp, loops}}, rank, rowLoops, rowShape,
                     firstInput);
  Value probs =
      elementwise({{exp, loops}, {sum, rowLoops}}, shape, storageType,
                  [](OpBuilder &b, Location l, ValueRange args) -> Value {
                    return arith::DivFOp::create(b, l, args[0], args[1]);
                  });
  // dx = p · (dp - Σ_last dp · p)
  record(probs, [=](Value dp) {
    SmallVector<int64_t> rows(rowShape);
    Value dot = reduce(Combiner::Sum, {{dp, loops}, {probs, loops}}, rank,
                       rowLoops, rows,
                       [](OpBuilder &b, Location l, ValueRange args) -> Value {
                         return arith::MulFOp::create(b, l, args[0], args[1]);
                       });
    addGrad(x, elementwise(
                   {{probs, loops}, {dp, loops}, {dot, rowLoops}}, shapeOf(x),
                   getElementTypeOrSelf(x.getType()),
                   [](OpBuilder &b, Location l, ValueRange args) -> Value {
                     return arith::MulFOp::create(
                         b, l, args[0],
                         arith::SubFOp::create(b, l, args[1], args[2]));
                   }));
  });
  return probs;
}

Value ModelBuilder::causalAttention(Value q, Value k, Value v) {
  ArrayRef<int64_t> qShape = shapeOf(q);
  // q, k and v are [B, S, heads, D]; grouped-query attention repeats k and v
  // to every query head before calling this.
  assert(qShape.size() == 4 && shapeOf(k) == qShape && shapeOf(v) == qShape &&
         "q, k and v are [B, S, heads, D]");
  int64_t batch = qShape[0], seq = qShape[1], heads = qShape[2];
  int64_t headDim = qShape[3];

  // scores[b, h, s, t] = Σ_d q[b, s, h, d] * k[b, t, h, d]
  // loops: b = 0, h = 1, s = 2, t = 3, d = 4
  SmallVector<int64_t> scoreShape = {batch, heads, seq, seq};
  Value scores = contract({q, {0, 2, 1, 4}}, {k, {0, 3, 1, 4}}, 5, {0, 1, 2, 3},
                          scoreShape);

  // masked = t > s ? -inf : scores / sqrt(D)
  double scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  auto isFuture = [](OpBuilder &b, Location l) -> Value {
    Value row = linalg::IndexOp::create(b, l, 2);
    Value col = linalg::IndexOp::create(b, l, 3);
    return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt, col, row);
  };
  Value masked = elementwise(
      {{scores, allLoops(4)}}, scoreShape, computeType,
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        Value future = isFuture(b, l);
        Value scaled =
            arith::MulFOp::create(b, l, args[0], constant(b, l, scale));
        Value minusInf = arith::ConstantOp::create(
            b, l, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
        return arith::SelectOp::create(b, l, future, minusInf, scaled);
      });
  // dscores = t > s ? 0 : dmasked / sqrt(D)
  record(masked, [=](Value grad) {
    addGrad(scores,
            elementwise({{grad, allLoops(4)}}, scoreShape, storageType,
                        [&](OpBuilder &b, Location l, ValueRange args) {
                          Value scaled = arith::MulFOp::create(
                              b, l, args[0], constant(b, l, scale));
                          return arith::SelectOp::create(
                              b, l, isFuture(b, l), constant(b, l, 0.0),
                              scaled);
                        }));
  });
  Value probs = softmaxLastDim(masked);

  // ctx[b, s, h, d] = Σ_t p[b, h, s, t] * v[b, t, h, d]
  // loops: b = 0, s = 1, h = 2, d = 3, t = 4
  return contract({probs, {0, 2, 1, 4}}, {v, {0, 4, 2, 3}}, 5, {0, 1, 2, 3},
                  qShape);
}

Value ModelBuilder::embedTokens(Value ids, Value table, Value positions) {
  int64_t batch = shapeOf(ids)[0], seq = shapeOf(ids)[1];
  int64_t hidden = shapeOf(table)[1];
  Value result;
  {
    NoRecord noRecord(*this);
    // out[b, s, k] = table[ids[b, s], k]: the lookup is a generic of its own
    // whose body only reads the table, so that a table split by rows becomes
    // a masked lookup with a partial-sum result (vocabulary-parallel
    // embedding); the positions are added by a separate elementwise op.
    Value embedded = elementwise(
        {{ids, {0, 1}}}, {batch, seq, hidden}, storageType,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value row =
              arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value col = linalg::IndexOp::create(b, l, 2);
          return toCompute(b, l,
                           tensor::ExtractOp::create(b, l, table,
                                                     ValueRange{row, col}));
        });
    if (positions)
      embedded = elementwise(
          {{embedded, {0, 1, 2}}, {positions, {1, 2}}}, {batch, seq, hidden},
          storageType, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::AddFOp::create(b, l, args[0], args[1]);
          });
    result = collapse(embedded, {{0, 1}, {2}});
  }
  // The scatter-add of the lookup is a reduction over the tokens, parallel
  // over the vocabulary (a table split by rows needs no gather):
  //   dtable[v, k] = Σ_{b,s} (ids[b, s] == v ? dout[b, s, k] : 0)
  //   dpositions[s, k] = Σ_b dout[b, s, k]
  record(result, [=](Value grad) {
    Value dOut = expand(grad, {batch, seq, hidden}, {{0, 1}, {2}});
    // loops: v = 0, k = 1, b = 2, s = 3
    addGrad(table,
            sumGrad({{ids, {2, 3}}, {dOut, {2, 3, 1}}}, 4, {0, 1}, table,
                    [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                      Value row = linalg::IndexOp::create(b, l, 0);
                      Value id = arith::IndexCastOp::create(
                          b, l, b.getIndexType(), args[0]);
                      Value hit = arith::CmpIOp::create(
                          b, l, arith::CmpIPredicate::eq, row, id);
                      return arith::SelectOp::create(b, l, hit, args[1],
                                                     constant(b, l, 0.0));
                    }));
    if (positions)
      addGrad(positions,
              sumGrad({{dOut, {2, 0, 1}}}, 3, {0, 1}, positions, firstInput));
  });
  return result;
}

Value ModelBuilder::crossEntropy(Value logits, Value labels) {
  int64_t tokens = shapeOf(logits)[0], vocab = shapeOf(logits)[1];
  std::optional<NoRecord> noRecord;
  noRecord.emplace(*this);
  Value flatLabels = collapse(labels, {{0, 1}});
  // max[t] = max_v logits[t, v]
  Value max =
      reduce(Combiner::Max, {{logits, {0, 1}}}, 2, {0}, {tokens}, firstInput);
  // sumExp[t] = Σ_v exp(logits[t, v] - max[t])
  Value sumExp =
      reduce(Combiner::Sum, {{logits, {0, 1}}, {max, {0}}}, 2, {0}, {tokens},
             [](OpBuilder &b, Location l, ValueRange args) -> Value {
               return math::ExpOp::create(
                   b, l, arith::SubFOp::create(b, l, args[0], args[1]));
             });
  // target[t] = Σ_v (v == labels[t] ? logits[t, v] : 0)
  auto isLabel = [](OpBuilder &b, Location l, Value label) -> Value {
    Value vocabIndex = linalg::IndexOp::create(b, l, 1);
    Value index = arith::IndexCastOp::create(b, l, b.getIndexType(), label);
    return arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, vocabIndex,
                                 index);
  };
  Value target = reduce(
      Combiner::Sum, {{logits, {0, 1}}, {flatLabels, {0}}}, 2, {0}, {tokens},
      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
        return arith::SelectOp::create(b, l, isLabel(b, l, args[1]), args[0],
                                       constant(b, l, 0.0));
      });
  // total = Σ_t (max[t] + log(sumExp[t]) - target[t])
  Value total =
      reduce(Combiner::Sum, {{max, {0}}, {sumExp, {0}}, {target, {0}}}, 1, {},
             {}, [](OpBuilder &b, Location l, ValueRange args) -> Value {
               Value lse = arith::AddFOp::create(
                   b, l, args[0], math::LogOp::create(b, l, args[1]));
               return arith::SubFOp::create(b, l, lse, args[2]);
             });
  // loss = total / T
  double invTokens = 1.0 / static_cast<double>(tokens);
  Value loss =
      elementwise({{total, {}}}, {}, computeType,
                  [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                    return arith::MulFOp::create(b, l, args[0],
                                                 constant(b, l, invTokens));
                  });
  // dlogits[t, v] = dloss · (softmax(logits)[t, v] - (v == labels[t])) / T
  noRecord.reset();
  record(loss, [=](Value dLoss) {
    addGrad(logits,
            elementwise({{logits, {0, 1}},
                         {max, {0}},
                         {sumExp, {0}},
                         {flatLabels, {0}},
                         {dLoss, {}}},
                        {tokens, vocab}, storageType,
                        [&](OpBuilder &b, Location l, ValueRange args) {
                          Value p = arith::DivFOp::create(
                              b, l,
                              math::ExpOp::create(
                                  b, l,
                                  arith::SubFOp::create(b, l, args[0],
                                                        args[1])),
                              args[2]);
                          Value onehot = arith::SelectOp::create(
                              b, l, isLabel(b, l, args[3]),
                              constant(b, l, 1.0), constant(b, l, 0.0));
                          Value diff = arith::SubFOp::create(b, l, p, onehot);
                          Value scale = arith::MulFOp::create(
                              b, l, args[4], constant(b, l, invTokens));
                          return arith::MulFOp::create(b, l, diff, scale);
                        }));
  });
  return loss;
}
