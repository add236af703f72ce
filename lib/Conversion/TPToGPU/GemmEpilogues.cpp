//===- GemmEpilogues.cpp - the tp-gemm-epilogues pass --------------*- C++ -*-//
//
// One idea: the elementwise kernel that adds a bias and a residual to a
// GEMM's product and applies an activation (a read and a write of C, one
// launch) becomes the GEMM's epilogue, one
// `tprt_mlir_gemm_epilogue_<t>` call (cuBLASLt's fused epilogue on GPUs;
// docs/passes/lower-gpu.md).
//
// Algorithm, after tp-fuse-elementwise (on tensors), per 2-D GEMM call
// `tprt_mlir_gemm_<t>` (tp-gemm-to-runtime's form: the result is a
// `memref.alloc` read back by one `bufferization.to_tensor`; shared-A and
// batched calls are left alone):
//  1. The product (the to_tensor, or one tensor.expand_shape of it, whose
//     two groups are then C's row and column dimensions) has one use: an
//     all-parallel linalg.generic with one result of the product's type
//     and identity maps on the product and on its output.
//  2. Every other input (and the output, when the body reads it) is an
//     addend (identity map, the product's shape) or a bias (its map reads
//     exactly C's column dimensions in order, other results constant 0 on
//     unit dimensions: n values); at most one of each.
//  3. The body's scalar arithmetic is evaluated numerically (in double, on
//     sample points: negative, zero, small and large values of the
//     product, a few values of the addend and bias) and compared with
//     act(c + addend + bias) for act in none, relu, gelu_tanh, within a
//     tolerance of the element type (relative 1e-5 for f32 and f64, 1.6e-2
//     with an absolute 1e-5 for 16-bit types, whose constants are rounded:
//     erf-GELU differs from tanh-GELU by 11 % at -3 and does not match).
//     An op the evaluator does not know refuses the match: the semantics,
//     not the spelling, decide (relu as max(x, 0) or select(cmp), GELU
//     through tanh or a sigmoid, pow or x*x*x all match).
//  4. The call, its buffer and the generic become one epilogue call at the
//     generic's place: addend and bias as read-only buffers (collapsed to
//     2-D and 1-D), a `memref<0xT>` where there is none; its result is
//     read back and expanded as the product was.
// A generic that reads the product and an addend or bias (or another
// operand) but fails 1-3 gets a remark saying which part did not match; a
// function of the product alone that is no activation (a scale, tanh,
// SiLU, erf-GELU) is not a near miss and gets none.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"
#include "tp/Conversion/RuntimeSymbols.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>

namespace mlir::tp {
#define GEN_PASS_DEF_GEMMEPILOGUESPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-gemm-epilogues"

using namespace mlir;
using namespace mlir::tp;

namespace {

/// tprt_activation's values (runtime/include/tprt/tprt.h).
enum Activation { kNone = 0, kRelu = 1, kGeluTanh = 2 };
constexpr const char *kActivationNames[] = {"none", "relu", "gelu_tanh"};

double activate(Activation act, double x) {
  switch (act) {
  case kRelu:
    return x > 0 ? x : 0;
  case kGeluTanh:
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  default:
    return x;
  }
}

//===----------------------------------------------------------------------===//
// The body's arithmetic, evaluated
//===----------------------------------------------------------------------===//

/// Evaluates a linalg.generic body on scalar arguments (in double): every
/// op must be one of the arith/math ops below, its operands block
/// arguments, results of earlier ops or constants.
class BodyEvaluator {
public:
  explicit BodyEvaluator(Block &body) : body(body) {}

  /// The yielded value for `args` (one per block argument), or nullopt
  /// with `unknown` naming the op that cannot be evaluated.
  std::optional<double> run(ArrayRef<double> args) {
    values.clear();
    for (auto [arg, v] : llvm::zip(body.getArguments(), args))
      values[arg] = v;
    for (Operation &op : body) {
      if (auto yield = dyn_cast<linalg::YieldOp>(op)) {
        if (yield.getNumOperands() != 1)
          return fail(op, "yields more than one value");
        return get(yield.getOperand(0));
      }
      if (op.getNumResults() != 1 || op.getNumRegions() != 0)
        return fail(op, "is not a scalar op");
      std::optional<double> r = evaluate(op);
      if (!r)
        return std::nullopt;
      values[op.getResult(0)] = *r;
    }
    return std::nullopt;
  }

  std::string unknown;

private:
  std::optional<double> fail(Operation &op, StringRef why) {
    if (unknown.empty())
      unknown = ("'" + op.getName().getStringRef() + "' " + why).str();
    return std::nullopt;
  }

  std::optional<double> get(Value v) {
    auto it = values.find(v);
    if (it != values.end())
      return it->second;
    // A constant defined outside the body.
    Attribute attr;
    if (matchPattern(v, m_Constant(&attr))) {
      if (auto f = dyn_cast<FloatAttr>(attr))
        return f.getValueAsDouble();
      if (auto i = dyn_cast<IntegerAttr>(attr))
        return double(i.getType().isInteger(1) ? i.getValue().getZExtValue()
                                                : i.getValue().getSExtValue());
    }
    if (unknown.empty())
      unknown = "a value defined outside the body that is not a constant";
    return std::nullopt;
  }

  std::optional<double> evaluate(Operation &op) {
    SmallVector<double, 3> x;
    if (!isa<arith::ConstantOp>(op))
      for (Value operand : op.getOperands()) {
        std::optional<double> v = get(operand);
        if (!v)
          return std::nullopt;
        x.push_back(*v);
      }
    auto unary = [&](double (*f)(double)) -> std::optional<double> {
      return f(x[0]);
    };
    return llvm::TypeSwitch<Operation *, std::optional<double>>(&op)
        .Case([&](arith::ConstantOp c) -> std::optional<double> {
          return get(c.getResult());
        })
        .Case([&](arith::AddFOp) -> std::optional<double> { return x[0] + x[1]; })
        .Case([&](arith::SubFOp) -> std::optional<double> { return x[0] - x[1]; })
        .Case([&](arith::MulFOp) -> std::optional<double> { return x[0] * x[1]; })
        .Case([&](arith::DivFOp) -> std::optional<double> { return x[0] / x[1]; })
        .Case([&](arith::NegFOp) -> std::optional<double> { return -x[0]; })
        .Case<arith::MaximumFOp, arith::MaxNumFOp>(
            [&](Operation *) -> std::optional<double> {
              return std::max(x[0], x[1]);
            })
        .Case<arith::MinimumFOp, arith::MinNumFOp>(
            [&](Operation *) -> std::optional<double> {
              return std::min(x[0], x[1]);
            })
        // 16-bit storage computed in f32/f64: the rounding is within the
        // tolerance; values are compared exactly otherwise.
        .Case<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
              arith::UIToFPOp>(
            [&](Operation *) -> std::optional<double> { return x[0]; })
        .Case([&](arith::SelectOp) -> std::optional<double> {
          return x[0] != 0 ? x[1] : x[2];
        })
        .Case([&](arith::CmpFOp cmp) -> std::optional<double> {
          double a = x[0], b = x[1];
          bool unordered = std::isnan(a) || std::isnan(b);
          bool r = false;
          switch (cmp.getPredicate()) {
          case arith::CmpFPredicate::AlwaysFalse: r = false; break;
          case arith::CmpFPredicate::OEQ: r = !unordered && a == b; break;
          case arith::CmpFPredicate::OGT: r = !unordered && a > b; break;
          case arith::CmpFPredicate::OGE: r = !unordered && a >= b; break;
          case arith::CmpFPredicate::OLT: r = !unordered && a < b; break;
          case arith::CmpFPredicate::OLE: r = !unordered && a <= b; break;
          case arith::CmpFPredicate::ONE: r = !unordered && a != b; break;
          case arith::CmpFPredicate::ORD: r = !unordered; break;
          case arith::CmpFPredicate::UEQ: r = unordered || a == b; break;
          case arith::CmpFPredicate::UGT: r = unordered || a > b; break;
          case arith::CmpFPredicate::UGE: r = unordered || a >= b; break;
          case arith::CmpFPredicate::ULT: r = unordered || a < b; break;
          case arith::CmpFPredicate::ULE: r = unordered || a <= b; break;
          case arith::CmpFPredicate::UNE: r = unordered || a != b; break;
          case arith::CmpFPredicate::UNO: r = unordered; break;
          case arith::CmpFPredicate::AlwaysTrue: r = true; break;
          }
          return r ? 1.0 : 0.0;
        })
        .Case([&](math::TanhOp) { return unary(std::tanh); })
        .Case([&](math::ExpOp) { return unary(std::exp); })
        .Case([&](math::Exp2Op) { return unary(std::exp2); })
        .Case([&](math::ExpM1Op) { return unary(std::expm1); })
        .Case([&](math::LogOp) { return unary(std::log); })
        .Case([&](math::Log1pOp) { return unary(std::log1p); })
        .Case([&](math::ErfOp) { return unary(std::erf); })
        .Case([&](math::SqrtOp) { return unary(std::sqrt); })
        .Case([&](math::AbsFOp) { return unary(std::fabs); })
        .Case([&](math::RsqrtOp) -> std::optional<double> {
          return 1 / std::sqrt(x[0]);
        })
        .Case<math::PowFOp, math::FPowIOp>(
            [&](Operation *) -> std::optional<double> {
              return std::pow(x[0], x[1]);
            })
        .Case([&](math::FmaOp) -> std::optional<double> {
          return x[0] * x[1] + x[2];
        })
        .Default([&](Operation *other) {
          return fail(*other, "cannot be evaluated");
        });
  }

  Block &body;
  DenseMap<Value, double> values;
};

//===----------------------------------------------------------------------===//
// The match
//===----------------------------------------------------------------------===//

/// One 2-D GEMM call and the product it reads back.
struct Gemm {
  func::CallOp call;
  memref::AllocOp out;
  bufferization::ToTensorOp result;
  tensor::ExpandShapeOp expand; // or null
  Value product;                // result, or expand's result
};

std::optional<Gemm> decodeGemm(func::CallOp call, StringRef gemmPrefix) {
  if (!call.getCallee().starts_with(gemmPrefix) ||
      call.getCallee().drop_front(gemmPrefix.size()).contains('_') ||
      call.getNumOperands() != 5 || call.getNumResults() != 0)
    return std::nullopt;
  Gemm g;
  g.call = call;
  auto outCast = call.getOperand(4).getDefiningOp<memref::CastOp>();
  if (!outCast || !outCast->hasOneUse())
    return std::nullopt;
  g.out = outCast.getSource().getDefiningOp<memref::AllocOp>();
  if (!g.out || g.out.getType().getRank() != 2 ||
      !g.out.getType().hasStaticShape())
    return std::nullopt;
  for (Operation *user : g.out->getUsers()) {
    if (user == outCast.getOperation())
      continue;
    auto back = dyn_cast<bufferization::ToTensorOp>(user);
    if (!back || g.result)
      return std::nullopt;
    g.result = back;
  }
  if (!g.result || !g.result->hasOneUse() ||
      g.result->getBlock() != call->getBlock() ||
      !call->isBeforeInBlock(g.result))
    return std::nullopt;
  g.product = g.result.getResult();
  if (auto expand =
          dyn_cast<tensor::ExpandShapeOp>(*g.result->getUsers().begin())) {
    if (!expand->hasOneUse())
      return std::nullopt;
    g.expand = expand;
    g.product = expand.getResult();
  }
  return g;
}

/// The generic fused into the GEMM and what it reads.
struct Epilogue {
  linalg::GenericOp generic;
  Value addend, bias; // tensors as the generic reads them, or null
  AffineMap biasMap;
  Activation act = kNone;
};

/// The loop dimensions of C's columns: the second group of the expand
/// (or dimension 1 of a 2-D product).
SmallVector<unsigned> columnDims(Gemm g) {
  SmallVector<unsigned> dims;
  if (!g.expand)
    return {1};
  for (int64_t d : g.expand.getReassociationIndices()[1])
    dims.push_back(unsigned(d));
  return dims;
}

/// Whether `map` reads exactly `cols` in order, its other results constant
/// 0 on unit dimensions of `type`: the n values of a bias.
bool isBiasMap(AffineMap map, ArrayRef<unsigned> cols, RankedTensorType type) {
  SmallVector<unsigned> read;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      read.push_back(d.getPosition());
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0 || type.getDimSize(i) != 1)
      return false;
  }
  return llvm::equal(read, cols);
}

/// Steps 1-3 on the product's one user; failure carries the remark (empty:
/// nothing resembling an epilogue, no remark).
FailureOr<Epilogue> matchEpilogue(Gemm g, std::string &why) {
  llvm::raw_string_ostream os(why);
  Operation *user = *g.product.getUsers().begin();
  auto generic = dyn_cast<linalg::GenericOp>(user);
  if (!generic || !generic.hasPureTensorSemantics())
    return failure();
  auto productType = cast<RankedTensorType>(g.product.getType());
  Type element = productType.getElementType();
  // Reductions, several results: nothing like an epilogue (no remark).
  if (generic.getNumDpsInits() != 1 || generic->getNumResults() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return failure();
  if (generic->getResult(0).getType() != productType) {
    os << "the result type " << generic->getResult(0).getType()
       << " is not the product's " << productType;
    return failure();
  }
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!maps[init->getOperandNumber()].isIdentity()) {
    os << "the output is not written through the identity map";
    return failure();
  }
  Block &body = generic.getRegion().front();
  SmallVector<unsigned> cols = columnDims(g);

  // Roles of the block arguments: 0 the product, 1 the addend, 2 the bias,
  // -1 unread.
  Epilogue e;
  e.generic = generic;
  SmallVector<int> roles(body.getNumArguments(), -1);
  bool sawProduct = false;
  for (OpOperand &operand : generic->getOpOperands()) {
    BlockArgument arg = body.getArgument(operand.getOperandNumber());
    bool isInit = &operand == init;
    if (isInit && arg.use_empty())
      continue;
    if (isInit && operand.get().getDefiningOp<tensor::EmptyOp>()) {
      os << "its body reads its output, which is uninitialized";
      return failure();
    }
    AffineMap map = maps[operand.getOperandNumber()];
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!isInit && operand.get() == g.product) {
      if (sawProduct || !map.isIdentity()) {
        os << "the product is read twice or not through the identity map";
        return failure();
      }
      sawProduct = true;
      roles[arg.getArgNumber()] = 0;
      continue;
    }
    if (!type || type.getElementType() != element) {
      os << "operand #" << operand.getOperandNumber() << " is of type "
         << operand.get().getType() << ", not of the product's elements";
      return failure();
    }
    if (map.isIdentity() && type == productType) {
      if (e.addend) {
        os << "it reads two addends of C's shape";
        return failure();
      }
      e.addend = operand.get();
      roles[arg.getArgNumber()] = 1;
      continue;
    }
    if (isBiasMap(map, cols, type)) {
      if (e.bias) {
        os << "it reads two biases";
        return failure();
      }
      e.bias = operand.get();
      e.biasMap = map;
      roles[arg.getArgNumber()] = 2;
      continue;
    }
    os << "operand #" << operand.getOperandNumber() << " (map " << map
       << ") is neither an addend of C's shape nor a bias of its columns";
    return failure();
  }

  // Step 3: the body against act(c + addend + bias). A body of the
  // product alone that is not an activation (a scale, tanh, SiLU) is no
  // near miss: no remark.
  bool unary = !e.addend && !e.bias;
  static const double kProducts[] = {-10, -5,  -4,  -3,  -2.5, -2,  -1.5,
                                     -1,  -0.7, -0.3, -0.1, 0,    0.1, 0.3,
                                     0.7, 1,    1.5, 2,    3,    5,   10, 60};
  static const double kAddends[] = {0, -0.75, 1.25};
  static const double kBiases[] = {0, 0.5, -1.5};
  static const double kZero[] = {0};
  bool wide = element.isF32() || element.isF64();
  double relative = wide ? 1e-5 : 1.6e-2, absolute = wide ? 1e-6 : 1e-5;
  BodyEvaluator eval(body);
  bool candidates[3] = {true, true, true};
  std::string mismatch[3];
  for (double c : kProducts)
    for (double x : e.addend ? ArrayRef<double>(kAddends) : ArrayRef<double>(kZero))
      for (double y : e.bias ? ArrayRef<double>(kBiases) : ArrayRef<double>(kZero)) {
        SmallVector<double> args(body.getNumArguments(), 0.0);
        for (auto [i, role] : llvm::enumerate(roles))
          args[i] = role == 0 ? c : role == 1 ? x : role == 2 ? y : 0.0;
        std::optional<double> got = eval.run(args);
        if (!got) {
          if (!unary)
            os << "its body's " << eval.unknown;
          return failure();
        }
        for (int a = 0; a < 3; ++a) {
          if (!candidates[a])
            continue;
          double want = activate(Activation(a), c + x + y);
          if (!(std::fabs(*got - want) <= relative * std::fabs(want) + absolute)) {
            candidates[a] = false;
            llvm::raw_string_ostream m(mismatch[a]);
            m << kActivationNames[a] << " (" << llvm::format("%g", *got)
              << " for " << llvm::format("%g", want) << " at product "
              << llvm::format("%g", c) << ", addend " << llvm::format("%g", x)
              << ", bias " << llvm::format("%g", y) << ")";
          }
        }
      }
  if (!sawProduct) {
    os << "its body does not read the product";
    return failure();
  }
  for (int a = 0; a < 3; ++a)
    if (candidates[a]) {
      e.act = Activation(a);
      return e;
    }
  if (!unary)
    os << "its body is not act(product + addend + bias): it differs from "
       << mismatch[0] << ", " << mismatch[1] << ", " << mismatch[2];
  return failure();
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

class Rewriter {
public:
  explicit Rewriter(ModuleOp module) : module(module) {}
  void rewrite(Gemm g, Epilogue e, StringRef suffix);

private:
  ModuleOp module;
};

void Rewriter::rewrite(Gemm g, Epilogue e, StringRef suffix) {
  linalg::GenericOp generic = e.generic;
  OpBuilder b(generic);
  Location loc = generic.getLoc();
  auto outType = g.out.getType();
  Type element = outType.getElementType();
  auto unranked = UnrankedMemRefType::get(element, nullptr);
  SmallVector<ReassociationIndices> groups;
  if (g.expand)
    groups = g.expand.getReassociationIndices();

  auto toArg = [&](Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    Value buffer = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), element), tensor,
        /*readOnly=*/true);
    return memref::CastOp::create(b, loc, unranked, buffer).getResult();
  };
  auto none = [&]() {
    Value empty =
        memref::AllocaOp::create(b, loc, MemRefType::get({0}, element));
    return memref::CastOp::create(b, loc, unranked, empty).getResult();
  };
  Value addend = none(), bias;
  if (e.addend) {
    Value a = e.addend;
    if (g.expand)
      a = tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get(outType.getShape(), element), a,
          groups);
    addend = toArg(a);
  }
  if (e.bias) {
    Value v = e.bias;
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != 1) {
      ReassociationIndices all;
      for (int64_t i = 0; i < type.getRank(); ++i)
        all.push_back(i);
      v = tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get({outType.getDimSize(1)}, element), v,
          ArrayRef<ReassociationIndices>{all});
    }
    bias = toArg(v);
  } else {
    bias = none();
  }
  Value out = memref::AllocOp::create(b, loc, outType);
  Value outArg = memref::CastOp::create(b, loc, unranked, out);
  auto i32 = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(int32_t(v)))
        .getResult();
  };
  SmallVector<Value> args = {g.call.getOperand(0), g.call.getOperand(1),
                             i32(e.act),           g.call.getOperand(2),
                             g.call.getOperand(3), addend,
                             bias,                 outArg};
  SmallVector<Type> argTypes(3, b.getI32Type());
  argTypes.append(5, unranked);
  func::FuncOp callee = runtime::getOrDeclare(
      module, runtime::getCollectiveSymbol(runtime::kGemmEpilogue, suffix),
      argTypes);
  func::CallOp::create(b, loc, callee, args);
  Value result = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(outType.getShape(), element), out,
      /*restrict=*/true, /*writable=*/true);
  if (g.expand)
    result = tensor::ExpandShapeOp::create(b, loc, g.product.getType(), result,
                                           groups);
  generic->getResult(0).replaceAllUsesWith(result);
  generic->erase();
  if (g.expand)
    g.expand->erase();
  g.result->erase();
  // The old call goes; the new one reads its A and B buffers.
  Operation *outCast = g.call.getOperand(4).getDefiningOp();
  g.call->erase();
  outCast->erase();
  g.out->erase();
}

struct GemmEpiloguesPass
    : public tp::impl::GemmEpiloguesPassBase<GemmEpiloguesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string gemmPrefix =
        (runtime::kSymbolPrefix + runtime::kGemm + "_").str();
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call.getCallee().starts_with(gemmPrefix))
        calls.push_back(call);
    });
    Rewriter rewriter(module);
    for (func::CallOp call : calls) {
      std::optional<Gemm> g = decodeGemm(call, gemmPrefix);
      if (!g)
        continue;
      std::string why;
      FailureOr<Epilogue> e = matchEpilogue(*g, why);
      if (failed(e)) {
        if (!why.empty())
          (*g->product.getUsers().begin())->emitRemark()
              << "GEMM epilogue not fused: " << why;
        continue;
      }
      StringRef suffix =
          call.getCallee().drop_front(gemmPrefix.size());
      rewriter.rewrite(*g, *e, suffix);
    }
  }
};

} // namespace
