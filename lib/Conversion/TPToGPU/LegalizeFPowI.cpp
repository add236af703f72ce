//===- LegalizeFPowI.cpp - the tp-legalize-fpowi pass ----------------------===//
//
// One idea: `math.fpowi` reaches the NVVM lowering only in the form that
// lowering gets right, a 32-bit exponent (libdevice's __nv_powif takes an
// int); see Passes.td.
//
// Constant exponents use upstream's expansion (repeated squaring,
// math::populateExpansionPatterns with "fpowi"): no call at all. Other
// exponents wider than 32 bits are narrowed with saturation: for |n| past
// the i32 range, x^n is 0, 1 or infinite (or NaN) whatever n's size, so n
// becomes +-(2^31 - 2) plus n's lowest bit, which keeps its sign and its
// parity (the sign of a negative base's power).
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tp {
#define GEN_PASS_DEF_LEGALIZEFPOWIPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;

namespace {

/// fpowi with a non-constant exponent wider than i32: the exponent,
/// saturated to i32 keeping its sign and parity.
struct NarrowExponent : OpRewritePattern<math::FPowIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FPowIOp op,
                                PatternRewriter &rewriter) const override {
    Value n = op.getRhs();
    auto type = dyn_cast<IntegerType>(getElementTypeOrSelf(n.getType()));
    if (!type || type.getWidth() <= 32 || matchPattern(n, m_Constant()))
      return failure();
    Location loc = op.getLoc();
    Type wide = n.getType();
    auto constant = [&](int64_t v) -> Value {
      TypedAttr attr = rewriter.getIntegerAttr(type, v);
      if (auto shaped = dyn_cast<ShapedType>(wide))
        attr = DenseElementsAttr::get(shaped, attr);
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    // limit = 2^31 - 2 + (n & 1): even or odd like n, within i32.
    Value parity = arith::AndIOp::create(rewriter, loc, n, constant(1));
    Value high = arith::AddIOp::create(rewriter, loc, constant((1ll << 31) - 2),
                                       parity);
    Value low = arith::SubIOp::create(rewriter, loc, constant(0), high);
    Value clamped = arith::MaxSIOp::create(
        rewriter, loc, low, arith::MinSIOp::create(rewriter, loc, n, high));
    Type narrow = rewriter.getI32Type();
    if (auto shaped = dyn_cast<ShapedType>(wide))
      narrow = shaped.clone(narrow);
    Value m = arith::TruncIOp::create(rewriter, loc, narrow, clamped);
    rewriter.replaceOpWithNewOp<math::FPowIOp>(op, op.getLhs(), m);
    return success();
  }
};

struct LegalizeFPowIPass
    : public tp::impl::LegalizeFPowIPassBase<LegalizeFPowIPass> {
  void runOnOperation() override {
    RewritePatternSet narrow(&getContext());
    narrow.add<NarrowExponent>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(narrow))))
      return signalPassFailure();
    // Upstream's fpowi pattern also turns a non-constant exponent into a
    // powf (wrong for negative bases): it only sees the constant ones.
    SmallVector<Operation *> constant;
    getOperation()->walk([&](math::FPowIOp op) {
      if (matchPattern(op.getRhs(), m_Constant()))
        constant.push_back(op);
    });
    if (constant.empty())
      return;
    RewritePatternSet expand(&getContext());
    math::populateExpansionPatterns(expand, {"fpowi"});
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(applyOpPatternsGreedily(constant, std::move(expand), config)))
      return signalPassFailure();
  }
};

} // namespace
