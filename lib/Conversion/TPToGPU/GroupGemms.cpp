//===- GroupGemms.cpp - the tp-group-gemms pass --------------------*- C++ -*-//
//
// One idea: GEMM calls that multiply the same left operand (Q, K and V of
// one normalised input; an MLP's gate and up) become one shared-A call,
// which the runtime runs as one batched cuBLAS call over pointer arrays:
// the products run together and A is fetched once for all of them instead
// of once per product (docs/passes/lower-gpu.md).
//
// Algorithm, per block, after tp-gemm-to-runtime (on tensors):
//  1. Decode every `tprt_mlir_gemm_<t>` call: its trans flags (constants),
//     the tensor behind A and B (`memref.cast` of a read-only
//     `bufferization.to_buffer`), and its result (`memref.cast` of a
//     `memref.alloc` that one `bufferization.to_tensor` reads back).
//  2. Group the calls by (callee, trans flags, A tensor, B type, C type),
//     in program order. Within a group, a call joins the current chunk when
//     its B tensor is available at the chunk's first call (it properly
//     dominates it); a chunk closes at kMaxSharedAGemms products.
//  3. Each chunk of two or more becomes one `tprt_mlir_gemm_shared_a<N>_<t>`
//     call before its first call: the first product keeps its buffers, the
//     others get a to_buffer of their B and a fresh result buffer there,
//     and their results are read back right after the new call. The old
//     calls and their now unused buffers go.
// Nothing else changes: a product that cannot join stays its own call.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"
#include "tp/Conversion/RuntimeSymbols.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::tp {
#define GEN_PASS_DEF_GROUPGEMMSPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-group-gemms"

using namespace mlir;
using namespace mlir::tp;

namespace {

/// One decoded 2-D GEMM call.
struct Product {
  func::CallOp call;
  int64_t transA = 0, transB = 0;
  Value a, b;                     // the tensors behind A and B
  memref::AllocOp out;            // C's buffer
  bufferization::ToTensorOp result; // C read back
};

/// The tensor behind a GEMM operand: cast(to_buffer(tensor)).
Value tensorBehind(Value operand) {
  auto cast = operand.getDefiningOp<memref::CastOp>();
  if (!cast)
    return nullptr;
  auto toBuffer = cast.getSource().getDefiningOp<bufferization::ToBufferOp>();
  return toBuffer ? toBuffer.getTensor() : Value();
}

std::optional<Product> decode(func::CallOp call) {
  if (call.getNumOperands() != 5 || call.getNumResults() != 0)
    return std::nullopt;
  Product p;
  p.call = call;
  APInt ta, tb;
  if (!matchPattern(call.getOperand(0), m_ConstantInt(&ta)) ||
      !matchPattern(call.getOperand(1), m_ConstantInt(&tb)))
    return std::nullopt;
  p.transA = ta.getSExtValue();
  p.transB = tb.getSExtValue();
  p.a = tensorBehind(call.getOperand(2));
  p.b = tensorBehind(call.getOperand(3));
  auto outCast = call.getOperand(4).getDefiningOp<memref::CastOp>();
  if (!p.a || !p.b || !outCast)
    return std::nullopt;
  p.out = outCast.getSource().getDefiningOp<memref::AllocOp>();
  if (!p.out || !p.out.getType().hasStaticShape())
    return std::nullopt;
  for (Operation *user : p.out->getUsers()) {
    if (user == outCast.getOperation())
      continue;
    auto back = dyn_cast<bufferization::ToTensorOp>(user);
    if (!back || p.result)
      return std::nullopt;
    p.result = back;
  }
  if (!p.result || p.result->getBlock() != call->getBlock() ||
      !call->isBeforeInBlock(p.result))
    return std::nullopt;
  return p;
}

class Grouper {
public:
  explicit Grouper(ModuleOp module) : module(module) {}
  void run(func::FuncOp fn);

private:
  void rewrite(MutableArrayRef<Product> chunk, StringRef suffix);
  func::FuncOp getCallee(StringRef name, TypeRange inputs) {
    return runtime::getOrDeclare(module, name, inputs);
  }
  ModuleOp module;
};

void Grouper::run(func::FuncOp fn) {
  std::string gemmPrefix =
      (runtime::kSymbolPrefix + runtime::kGemm + "_").str();
  DominanceInfo dominance(fn);
  // Blocks are independent: a chunk's calls share a block.
  SmallVector<Block *> blocks;
  fn.walk([&](Block *block) { blocks.push_back(block); });
  for (Block *block : blocks) {
    // Key: callee, trans flags, A, B type, C type.
    using Key = std::tuple<StringRef, int64_t, int64_t, Value, Type, Type>;
    llvm::MapVector<Key, SmallVector<Product>> groups;
    for (Operation &op : *block) {
      auto call = dyn_cast<func::CallOp>(op);
      if (!call || !call.getCallee().starts_with(gemmPrefix))
        continue;
      StringRef rest = call.getCallee().drop_front(gemmPrefix.size());
      if (rest.contains('_'))
        continue; // not a plain 2-D GEMM (batched_gemm has its own prefix)
      std::optional<Product> p = decode(call);
      if (!p)
        continue;
      groups[Key{call.getCallee(), p->transA, p->transB, p->a,
                 p->b.getType(), p->out.getType()}]
          .push_back(*p);
    }
    for (auto &[key, products] : groups) {
      StringRef suffix =
          std::get<0>(key).drop_front(gemmPrefix.size());
      SmallVector<Product> chunk;
      auto flush = [&]() {
        if (chunk.size() >= 2)
          rewrite(chunk, suffix);
        chunk.clear();
      };
      for (const Product &p : products) {
        if (!chunk.empty() &&
            !dominance.properlyDominates(p.b, chunk.front().call))
          continue; // its B comes later: it stays its own call
        chunk.push_back(p);
        if (int(chunk.size()) == runtime::kMaxSharedAGemms)
          flush();
      }
      flush();
    }
  }
}

void Grouper::rewrite(MutableArrayRef<Product> chunk, StringRef suffix) {
  Product &first = chunk.front();
  OpBuilder builder(first.call);
  Location loc = first.call.getLoc();
  Value a = first.call.getOperand(2);
  SmallVector<Value> bs{first.call.getOperand(3)}, cs{first.call.getOperand(4)};
  SmallVector<memref::AllocOp> outs;
  auto unranked = cast<UnrankedMemRefType>(a.getType());
  for (Product &p : chunk.drop_front()) {
    auto bType = cast<RankedTensorType>(p.b.getType());
    Value buffer = bufferization::ToBufferOp::create(
        builder, loc,
        MemRefType::get(bType.getShape(), bType.getElementType()), p.b,
        /*readOnly=*/true);
    bs.push_back(memref::CastOp::create(builder, loc, unranked, buffer));
    auto out = memref::AllocOp::create(builder, loc, p.out.getType());
    outs.push_back(out);
    cs.push_back(memref::CastOp::create(builder, loc, unranked, out));
  }
  SmallVector<Value> args{first.call.getOperand(0), first.call.getOperand(1),
                          a};
  args.append(bs);
  args.append(cs);
  std::string name = (runtime::kSymbolPrefix + runtime::kGemmSharedA +
                      Twine(chunk.size()) + "_" + suffix)
                         .str();
  func::FuncOp callee =
      getCallee(name, ValueRange(args).getTypes());
  auto grouped = func::CallOp::create(builder, loc, callee, args);
  builder.setInsertionPointAfter(grouped);
  for (auto [p, out] : llvm::zip(chunk.drop_front(), outs)) {
    auto back = bufferization::ToTensorOp::create(
        builder, loc, p.result.getType(), out, /*restrict=*/true,
        /*writable=*/true);
    p.result.getResult().replaceAllUsesWith(back.getResult());
  }
  // The old calls, then whatever only they used: casts, then the
  // buffers they cast (to_buffer, alloc).
  SmallVector<Operation *> worklist;
  for (Product &p : chunk) {
    bool isFirst = &p == &chunk.front();
    for (Value v : p.call->getOperands())
      if (Operation *def = v.getDefiningOp(); def && !isFirst)
        worklist.push_back(def);
    p.call->erase();
    if (!isFirst) {
      p.result->erase();
      worklist.push_back(p.out);
    }
  }
  llvm::SmallPtrSet<Operation *, 16> erased;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (erased.contains(op) || !op->use_empty() ||
        !isa<memref::CastOp, bufferization::ToBufferOp, memref::AllocOp>(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        worklist.push_back(def);
    erased.insert(op);
    op->erase();
  }
}

struct GroupGemmsPass
    : public tp::impl::GroupGemmsPassBase<GroupGemmsPass> {
  void runOnOperation() override {
    Grouper grouper(getOperation());
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        grouper.run(fn);
  }
};

} // namespace
