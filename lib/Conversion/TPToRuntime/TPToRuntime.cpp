//===- TPToRuntime.cpp - tp collectives to tprt calls -----------*- C++ -*-===//
//
// Each collective of a partitioned program becomes, on tensors, a read-only
// buffer of its input (`bufferization.to_buffer` with the identity layout:
// bufferization copies only an input that is not contiguous already), a
// fresh buffer for its result, and a call of the runtime entry point for its
// element type (the runtime never writes a collective's input, tprt.h);
// one-shot bufferization then handles the rest of the program. tp.axis_index becomes a call returning
// the group index. The callee declarations are added once per module.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/IR/InputChecks.h"
#include "tp/Conversion/Passes.h"
#include "tp/Conversion/RuntimeSymbols.h"

#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tp {
#define GEN_PASS_DEF_CONVERTTPTORUNTIMEPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

std::optional<std::string> runtime::getElementSuffix(Type type) {
  if (type.isF32())
    return std::string("f32");
  if (type.isF16())
    return std::string("f16");
  if (type.isBF16())
    return std::string("bf16");
  if (type.isF64())
    return std::string("f64");
  if (type.isInteger(64))
    return std::string("i64");
  if (type.isInteger(32))
    return std::string("i32");
  return std::nullopt;
}

std::string runtime::getCollectiveSymbol(StringRef collective,
                                         StringRef suffix) {
  return ("tprt_mlir_" + collective + "_" + suffix).str();
}

func::FuncOp runtime::getOrDeclare(ModuleOp module, StringRef name,
                                   TypeRange inputs, TypeRange results) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(builder, module.getLoc(), name,
                                 builder.getFunctionType(inputs, results));
  fn.setPrivate();
  return fn;
}

/// `input` with its integer elements converted to `to`: extended (zero
/// extended when `isUnsigned`) to a wider type, truncated to a narrower one;
/// an elementwise linalg.generic, which both lowerings turn into a loop or
/// a kernel.
static Value convertElements(OpBuilder &builder, Location loc, Value input,
                             Type to, bool isUnsigned) {
  auto type = cast<RankedTensorType>(input.getType());
  unsigned from = type.getElementType().getIntOrFloatBitWidth();
  unsigned width = to.getIntOrFloatBitWidth();
  Value init = tensor::EmptyOp::create(builder, loc, type.getShape(), to);
  AffineMap identity = builder.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> parallel(type.getRank(),
                                            utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      builder, loc, TypeRange{init.getType()}, ValueRange{input},
      ValueRange{init}, ArrayRef<AffineMap>{identity, identity}, parallel,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value value = args[0];
        if (width < from)
          value = arith::TruncIOp::create(b, l, to, value);
        else if (isUnsigned)
          value = arith::ExtUIOp::create(b, l, to, value);
        else
          value = arith::ExtSIOp::create(b, l, to, value);
        linalg::YieldOp::create(b, l, value);
      });
  return generic.getResult(0);
}

namespace {

class Lowering {
public:
  explicit Lowering(ModuleOp module) : module(module) {}

  LogicalResult run();

private:
  func::FuncOp getCallee(StringRef name, TypeRange inputs, TypeRange results) {
    return runtime::getOrDeclare(module, name, inputs, results);
  }
  FailureOr<int64_t> axesMask(Operation *op, FlatSymbolRefAttr meshRef,
                              ArrayAttr axes);
  void lowerMatmul(linalg::MatmulOp matmul);
  LogicalResult lowerCollective(Operation *op, StringRef name,
                                ArrayRef<int64_t> scalars,
                                ArrayRef<bool> scalarIs32);

  ModuleOp module;
};

} // namespace

FailureOr<int64_t> Lowering::axesMask(Operation *op, FlatSymbolRefAttr meshRef,
                                      ArrayAttr axes) {
  MeshOp mesh = lookupMesh(op, meshRef);
  if (!mesh)
    return op->emitOpError() << "refers to no tp.mesh";
  int64_t mask = 0;
  for (Attribute a : axes) {
    std::optional<int64_t> index =
        mesh.getAxisIndex(cast<StringAttr>(a).getValue());
    if (!index || *index >= 63)
      return op->emitOpError() << "has an axis the runtime cannot address";
    mask |= int64_t(1) << *index;
  }
  return mask;
}

LogicalResult Lowering::lowerCollective(Operation *op, StringRef name,
                                        ArrayRef<int64_t> scalars,
                                        ArrayRef<bool> scalarIs32) {
  OpBuilder builder(op);
  Location loc = op->getLoc();
  Value input = op->getOperand(0);
  auto inType = cast<RankedTensorType>(input.getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!inType.hasStaticShape() || !resultType.hasStaticShape())
    return op->emitOpError() << "needs static shapes to be lowered";
  // Integers narrower than 32 bits (i1, i8, ...) travel as i32: sign
  // extended (i1 zero extended: a bool), truncated back.
  auto narrow = dyn_cast<IntegerType>(inType.getElementType());
  // ui8, si32, ...: arith's extensions and the runtime's entry points take
  // signless integers only.
  if (narrow && !narrow.isSignless())
    return op->emitOpError()
           << "has element type " << narrow
           << ", which the runtime cannot communicate (integers must be "
              "signless, e.g. i"
           << narrow.getWidth() << ")";
  if (narrow && narrow.getWidth() >= 32)
    narrow = nullptr;
  if (narrow) {
    input = convertElements(builder, loc, input, builder.getI32Type(),
                            narrow.getWidth() == 1);
    inType = cast<RankedTensorType>(input.getType());
  }
  auto outType = resultType.clone(inType.getElementType());
  std::optional<std::string> suffix =
      runtime::getElementSuffix(inType.getElementType());
  if (!suffix)
    return op->emitOpError()
           << "has element type " << inType.getElementType()
           << ", which the runtime cannot communicate (it communicates f32, "
              "f16, bf16, f64, i64, i32, and integers of fewer bits as i32)";

  // The input read in place (contiguous: the identity layout makes
  // bufferization copy a strided view, and only that), and a fresh buffer
  // for the result. A copy here would move every collective's input twice
  // more through device memory.
  auto inMemref = MemRefType::get(inType.getShape(), inType.getElementType());
  auto outMemref =
      MemRefType::get(outType.getShape(), outType.getElementType());
  Value inBuffer = bufferization::ToBufferOp::create(builder, loc, inMemref,
                                                     input, /*readOnly=*/true);
  Value outBuffer = memref::AllocOp::create(builder, loc, outMemref);
  auto unranked = UnrankedMemRefType::get(inType.getElementType(), nullptr);
  Value inArg = memref::CastOp::create(builder, loc, unranked, inBuffer);
  Value outArg = memref::CastOp::create(builder, loc, unranked, outBuffer);

  SmallVector<Value> args;
  SmallVector<Type> argTypes;
  for (auto [value, is32] : llvm::zip(scalars, scalarIs32)) {
    Type type = is32 ? builder.getI32Type() : builder.getI64Type();
    args.push_back(arith::ConstantOp::create(
        builder, loc, builder.getIntegerAttr(type, value)));
    argTypes.push_back(type);
  }
  args.append({inArg, outArg});
  argTypes.append({unranked, unranked});
  func::FuncOp callee = getCallee(
      runtime::getCollectiveSymbol(name, *suffix), argTypes, TypeRange());
  func::CallOp::create(builder, loc, callee, args);
  Value result = bufferization::ToTensorOp::create(
      builder, loc, outType, outBuffer, /*restrict=*/true, /*writable=*/true);
  if (narrow)
    result = convertElements(builder, loc, result, narrow, false);
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  return success();
}

/// The transposes of a 2-D matmul's operands read off its indexing maps, or
/// nullopt when it is not a plain (possibly transposed) product.
static std::optional<std::pair<bool, bool>>
getTransposes(linalg::MatmulOp matmul) {
  SmallVector<AffineMap> maps = matmul.getIndexingMapsArray();
  MLIRContext *ctx = matmul.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  auto is = [&](AffineMap map, AffineExpr a, AffineExpr b) {
    return map.getNumDims() == 3 && map.getNumResults() == 2 &&
           map.getResult(0) == a && map.getResult(1) == b;
  };
  if (!is(maps[2], m, n))
    return std::nullopt;
  bool transA, transB;
  if (is(maps[0], m, k))
    transA = false;
  else if (is(maps[0], k, m))
    transA = true;
  else
    return std::nullopt;
  if (is(maps[1], k, n))
    transB = false;
  else if (is(maps[1], n, k))
    transB = true;
  else
    return std::nullopt;
  return std::make_pair(transA, transB);
}

/// A matmul whose init is a fill of zero, on static 2-D floating-point
/// tensors, becomes a call of the runtime's GEMM (cuBLAS on GPUs, OpenBLAS
/// here). Others stay linalg and become loops.
void Lowering::lowerMatmul(linalg::MatmulOp matmul) {
  if (!matmul.hasPureTensorSemantics() || matmul->getNumResults() != 1)
    return;
  std::optional<std::pair<bool, bool>> transposes = getTransposes(matmul);
  auto fill = matmul.getOutputs()[0].getDefiningOp<linalg::FillOp>();
  if (!transposes || !fill || !matchPattern(fill.value(), m_AnyZeroFloat()))
    return;
  Value a = matmul.getInputs()[0], b = matmul.getInputs()[1];
  auto resultType = cast<RankedTensorType>(matmul.getResult(0).getType());
  Type element = resultType.getElementType();
  std::optional<std::string> suffix = runtime::getElementSuffix(element);
  if (!suffix || !isa<FloatType>(element))
    return;
  for (Value v : {a, b})
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape() ||
        cast<RankedTensorType>(v.getType()).getElementType() != element)
      return;
  if (!resultType.hasStaticShape())
    return;
  OpBuilder builder(matmul);
  Location loc = matmul.getLoc();
  auto unranked = UnrankedMemRefType::get(element, nullptr);
  SmallVector<Value> args;
  auto i32 = [&](int64_t v) {
    return arith::ConstantOp::create(builder, loc,
                                     builder.getI32IntegerAttr(int32_t(v)));
  };
  args.push_back(i32(transposes->first));
  args.push_back(i32(transposes->second));
  for (Value v : {a, b}) {
    auto type = cast<RankedTensorType>(v.getType());
    Value copy = bufferization::AllocTensorOp::create(
        builder, loc, type, ValueRange(), v, Value(), Attribute());
    Value buffer = bufferization::ToBufferOp::create(
        builder, loc, MemRefType::get(type.getShape(), element), copy,
        /*readOnly=*/true);
    args.push_back(memref::CastOp::create(builder, loc, unranked, buffer));
  }
  Value out = memref::AllocOp::create(
      builder, loc, MemRefType::get(resultType.getShape(), element));
  args.push_back(memref::CastOp::create(builder, loc, unranked, out));
  SmallVector<Type> argTypes(2, builder.getI32Type());
  argTypes.append(3, unranked);
  func::CallOp::create(
      builder, loc,
      getCallee(runtime::getCollectiveSymbol("gemm", *suffix), argTypes,
                TypeRange()),
      args);
  Value result = bufferization::ToTensorOp::create(builder, loc, resultType,
                                                   out, true, true);
  matmul.getResult(0).replaceAllUsesWith(result);
  matmul.erase();
}

LogicalResult Lowering::run() {
  // Blob sizes: the LLVM translation divides a blob's size by the element
  // count and accepts a remainder (a blob one byte long was read off by
  // that byte). tp-propagate checks global programs; this is for programs
  // lowered without it.
  if (failed(checkResourceBlobs(module, "convert-tp-to-runtime")))
    return failure();
  SmallVector<linalg::MatmulOp> matmuls;
  module.walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
  for (linalg::MatmulOp matmul : matmuls)
    lowerMatmul(matmul);

  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, SliceOp,
            AxisIndexOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    LogicalResult result = success();
    if (auto ar = dyn_cast<AllReduceOp>(op)) {
      FailureOr<int64_t> mask = axesMask(op, ar.getMeshAttr(), ar.getAxes());
      if (failed(mask))
        return failure();
      result = lowerCollective(op, "all_reduce",
                               {int64_t(ar.getKind()), *mask}, {true, false});
    } else if (auto ag = dyn_cast<AllGatherOp>(op)) {
      FailureOr<int64_t> mask = axesMask(op, ag.getMeshAttr(), ag.getAxes());
      if (failed(mask))
        return failure();
      result = lowerCollective(op, "all_gather", {int64_t(ag.getDim()), *mask},
                               {false, false});
    } else if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
      FailureOr<int64_t> mask = axesMask(op, rs.getMeshAttr(), rs.getAxes());
      if (failed(mask))
        return failure();
      result = lowerCollective(
          op, "reduce_scatter",
          {int64_t(rs.getKind()), int64_t(rs.getDim()), *mask},
          {true, false, false});
    } else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
      FailureOr<int64_t> mask = axesMask(op, a2a.getMeshAttr(), a2a.getAxes());
      if (failed(mask))
        return failure();
      result = lowerCollective(op, "all_to_all",
                               {int64_t(a2a.getSplitDim()),
                                int64_t(a2a.getConcatDim()), *mask},
                               {false, false, false});
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      FailureOr<int64_t> mask =
          axesMask(op, slice.getMeshAttr(), slice.getAxes());
      if (failed(mask))
        return failure();
      result = lowerCollective(op, runtime::kSlice, {int64_t(slice.getDim()), *mask},
                               {false, false});
    } else if (auto index = dyn_cast<AxisIndexOp>(op)) {
      FailureOr<int64_t> mask =
          axesMask(op, index.getMeshAttr(), index.getAxes());
      if (failed(mask))
        return failure();
      OpBuilder builder(op);
      Location loc = op->getLoc();
      func::FuncOp callee =
          getCallee(runtime::kAxisIndex, {builder.getI64Type()},
                    {builder.getI64Type()});
      Value maskValue = arith::ConstantOp::create(
          builder, loc, builder.getI64IntegerAttr(*mask));
      Value called =
          func::CallOp::create(builder, loc, callee, ValueRange{maskValue})
              .getResult(0);
      Value asIndex = arith::IndexCastOp::create(
          builder, loc, builder.getIndexType(), called);
      index.getResult().replaceAllUsesWith(asIndex);
      op->erase();
    }
    if (failed(result))
      return failure();
  }
  // Layouts and meshes have no meaning below this point (tp-run records the
  // function boundary before lowering).
  for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
    auto strip = [](DictionaryAttr attrs) {
      SmallVector<NamedAttribute> kept;
      if (attrs)
        for (NamedAttribute a : attrs)
          if (!a.getName().getValue().starts_with("tp."))
            kept.push_back(a);
      return kept;
    };
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.setArgAttrs(i, strip(fn.getArgAttrDict(i)));
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.setResultAttrs(i, strip(fn.getResultAttrDict(i)));
  }
  for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
    mesh.erase();
  return success();
}

namespace {
struct ConvertTPToRuntimePass
    : public tp::impl::ConvertTPToRuntimePassBase<ConvertTPToRuntimePass> {
  void runOnOperation() override {
    if (failed(Lowering(getOperation()).run()))
      signalPassFailure();
  }
};
} // namespace
