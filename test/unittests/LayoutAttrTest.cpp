//===- LayoutAttrTest.cpp - #tp.layout and tp.mesh C++ API ------*- C++ -*-===//

#include "tp/Dialect/TP/IR/TPDialect.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::tp;

namespace {

class LayoutAttrTest : public ::testing::Test {
protected:
  LayoutAttrTest() {
    context.loadDialect<TPDialect>();
    module = parseSourceString<ModuleOp>(R"mlir(
      tp.mesh @m ["dp" = 2, "tp" = 4]
    )mlir",
                                         &context);
    mesh = cast<MeshOp>(&module->getBody()->front());
    meshRef = FlatSymbolRefAttr::get(&context, "m");
  }

  LayoutAttr parse(StringRef text) {
    return dyn_cast_or_null<LayoutAttr>(parseAttribute(text, &context));
  }

  StringAttr str(StringRef s) { return StringAttr::get(&context, s); }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
};

TEST_F(LayoutAttrTest, MeshQueries) {
  EXPECT_EQ(mesh.getRank(), 2);
  EXPECT_EQ(mesh.getNumDevices(), 8);
  EXPECT_EQ(mesh.getAxisIndex("tp"), 1);
  EXPECT_EQ(mesh.getAxisSize("dp"), 2);
  EXPECT_EQ(mesh.getAxisSize("pp"), std::nullopt);
  EXPECT_EQ(mesh.getGroupSize({str("dp"), str("tp")}), 8);
  EXPECT_EQ(mesh.getGroupSize({}), 1);
  EXPECT_EQ(mesh.getGroupSize({str("x")}), std::nullopt);
}

TEST_F(LayoutAttrTest, ReplicatedIsNeitherSplitNorPartial) {
  LayoutAttr rep = LayoutAttr::getReplicated(meshRef, 3);
  EXPECT_EQ(rep.getRank(), 3);
  EXPECT_TRUE(rep.isReplicated());
  EXPECT_FALSE(rep.isPartial());
  for (int64_t d = 0; d < 3; ++d)
    EXPECT_FALSE(rep.isSplit(d));
  EXPECT_EQ(rep, parse("#tp.layout<@m, [-, -, -]>"));
}

TEST_F(LayoutAttrTest, BuildersAgreeWithParser) {
  LayoutAttr col = LayoutAttr::getReplicated(meshRef, 2).withDimAxes(1, {str("tp")});
  EXPECT_EQ(col, parse("#tp.layout<@m, [-, \"tp\"]>"));
  EXPECT_TRUE(col.isSplit(1));
  EXPECT_FALSE(col.isReplicated());
  EXPECT_EQ(col.getDimOfAxis("tp"), 1);
  EXPECT_EQ(col.getDimOfAxis("dp"), -1);

  LayoutAttr partial = LayoutAttr::getReplicated(meshRef, 2)
                           .withPartial({str("tp")}, ReductionKind::Max);
  EXPECT_EQ(partial, parse("#tp.layout<@m, [-, -], partial = max(\"tp\")>"));
  EXPECT_TRUE(partial.isPartial());
  EXPECT_FALSE(partial.isReplicated());
  EXPECT_EQ(partial.withoutPartial(), LayoutAttr::getReplicated(meshRef, 2));
  // Dropping the partial axes also resets the kind, so equal layouts are
  // the same attribute.
  EXPECT_EQ(partial.withPartial({}, ReductionKind::Max).getPartialKind(),
            ReductionKind::Sum);
}

TEST_F(LayoutAttrTest, UsedAxesInOrder) {
  LayoutAttr l = parse("#tp.layout<@m, [[\"dp\", \"tp\"], -]>");
  ASSERT_TRUE(l);
  auto axes = l.getUsedAxes();
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].getValue(), "dp");
  EXPECT_EQ(axes[1].getValue(), "tp");
  EXPECT_EQ(l.getDimAxes(0).size(), 2u);
}

TEST_F(LayoutAttrTest, LocalShapeDividesSplitDims) {
  LayoutAttr l = parse("#tp.layout<@m, [\"dp\", \"tp\"]>");
  SmallVector<int64_t> local = getLocalShape({6, 16}, l, mesh);
  EXPECT_EQ(local, (SmallVector<int64_t>{3, 4}));
  EXPECT_TRUE(isEvenlyDivisible({6, 16}, l, mesh));

  LayoutAttr both = parse("#tp.layout<@m, [[\"dp\", \"tp\"], -]>");
  EXPECT_EQ(getLocalShape({16, 5}, both, mesh), (SmallVector<int64_t>{2, 5}));
}

TEST_F(LayoutAttrTest, LocalShapeRoundsUpUnevenDims) {
  // GPT-2's vocabulary at tp=4: 50257 rows pad to 4 blocks of 12565.
  LayoutAttr l = parse("#tp.layout<@m, [\"tp\", -]>");
  EXPECT_EQ(getLocalShape({50257, 768}, l, mesh),
            (SmallVector<int64_t>{12565, 768}));
  EXPECT_FALSE(isEvenlyDivisible({50257, 768}, l, mesh));
}

TEST_F(LayoutAttrTest, LocalShapeKeepsDynamicDims) {
  LayoutAttr l = parse("#tp.layout<@m, [-, \"tp\"]>");
  SmallVector<int64_t> local = getLocalShape({ShapedType::kDynamic, 8}, l, mesh);
  EXPECT_TRUE(ShapedType::isDynamic(local[0]));
  EXPECT_EQ(local[1], 2);
}

/// Builds a layout through the verifier and returns its diagnostic, or
/// "ok" when the parameters verify.
static std::string verifyLayout(MLIRContext &context, FlatSymbolRefAttr mesh,
                                ArrayAttr dims, ArrayAttr partialAxes,
                                ReductionKind kind) {
  std::string message = "ok";
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  LayoutAttr l = LayoutAttr::getChecked(
      [&] { return emitError(UnknownLoc::get(&context)); }, &context, mesh,
      dims, partialAxes, kind);
  if (l && message != "ok")
    return "verifier reported an error but returned a layout";
  return message;
}

// The parser cannot produce these parameter lists, so the verifier's
// messages for them are checked through the C++ builder.
TEST_F(LayoutAttrTest, VerifierMessages) {
  Builder b(&context);
  ArrayAttr none = b.getArrayAttr({});
  ArrayAttr tp = b.getArrayAttr({str("tp")});
  EXPECT_EQ(verifyLayout(context, meshRef, b.getArrayAttr({tp}), none,
                         ReductionKind::Sum),
            "ok");
  EXPECT_EQ(verifyLayout(context, meshRef, b.getArrayAttr({tp, tp}), none,
                         ReductionKind::Sum),
            "mesh axis \"tp\" appears more than once in the layout");
  EXPECT_EQ(verifyLayout(context, FlatSymbolRefAttr(), b.getArrayAttr({tp}),
                         none, ReductionKind::Sum),
            "a layout needs a mesh symbol");
  EXPECT_EQ(verifyLayout(context, meshRef, b.getArrayAttr({str("tp")}), none,
                         ReductionKind::Sum),
            "dimension 0 of a layout must be a list of mesh axes, got \"tp\"");
  EXPECT_EQ(verifyLayout(context, meshRef,
                         b.getArrayAttr({b.getArrayAttr({b.getI64IntegerAttr(1)})}),
                         none, ReductionKind::Sum),
            "mesh axes in a layout must be strings, got 1 : i64");
  EXPECT_EQ(verifyLayout(context, meshRef, b.getArrayAttr({none}), none,
                         ReductionKind::Max),
            "reduction kind 'max' given without partial axes");
  EXPECT_EQ(verifyLayout(context, meshRef, b.getArrayAttr({none}),
                         b.getArrayAttr({str("")}), ReductionKind::Min),
            "mesh axis names in a layout must not be empty");
}

TEST_F(LayoutAttrTest, PrintsCompactForm) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  Attribute(parse("#tp.layout<@m, [[\"dp\", \"tp\"], -], partial = min(\"x\")>")).print(os);
  EXPECT_EQ(printed, "#tp.layout<@m, [[\"dp\", \"tp\"], -], partial = min(\"x\")>");
}

} // namespace
