//===- CostModelTest.cpp - reshard planning and prices ----------*- C++ -*-===//

#include "tp/Analysis/CostModel.h"
#include "tp/Dialect/TP/IR/TPDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::tp;

namespace {

class CostModelTest : public ::testing::Test {
protected:
  CostModelTest() {
    context.loadDialect<TPDialect>();
    module = parseSourceString<ModuleOp>(
        R"mlir(tp.mesh @m ["dp" = 2, "tp" = 4])mlir", &context);
    mesh = cast<MeshOp>(&module->getBody()->front());
  }
  LayoutAttr layout(StringRef body) {
    return cast<LayoutAttr>(
        parseAttribute(("#tp.layout<@m, " + body + ">").str(), &context));
  }
  /// The planned steps as "kind(axis, dim[, concat]) in -> out" strings.
  std::vector<std::string> plan(StringRef from, StringRef to,
                                ArrayRef<int64_t> shape) {
    FailureOr<SmallVector<CollectiveStep>> steps =
        planReshard(layout(from), layout(to), shape, mesh);
    if (failed(steps))
      return {"infeasible"};
    std::vector<std::string> out;
    for (const CollectiveStep &s : *steps) {
      std::string text = stringifyCollectiveKind(s.kind).str() + "(" +
                         s.axis.str();
      if (s.dim >= 0)
        text += "," + std::to_string(s.dim);
      if (s.concatDim >= 0)
        text += "," + std::to_string(s.concatDim);
      text += ")";
      for (int64_t d : s.outputShape)
        text += " " + std::to_string(d);
      out.push_back(text);
    }
    return out;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  MeshOp mesh;
};

using Steps = std::vector<std::string>;

// Each single-axis layout change maps to its collective, on local shapes.
TEST_F(CostModelTest, SingleAxisChanges) {
  EXPECT_EQ(plan("[-, -], partial = sum(\"tp\")", "[-, -]", {16, 8}),
            (Steps{"all_reduce(tp) 16 8"}));
  EXPECT_EQ(plan("[-, -], partial = sum(\"tp\")", "[\"tp\", -]", {16, 8}),
            (Steps{"reduce_scatter(tp,0) 4 8"}));
  EXPECT_EQ(plan("[-, \"tp\"]", "[-, -]", {16, 8}),
            (Steps{"all_gather(tp,1) 16 8"}));
  EXPECT_EQ(plan("[-, \"tp\"]", "[\"tp\", -]", {16, 8}),
            (Steps{"all_to_all(tp,0,1) 4 8"}));
  EXPECT_EQ(plan("[-, -]", "[-, \"tp\"]", {16, 8}), (Steps{"slice(tp,1) 16 2"}));
  EXPECT_EQ(plan("[-, \"tp\"]", "[-, \"tp\"]", {16, 8}), (Steps{}));
}

// Two axes: reductions first, then gathers (minor axis first), then slices.
TEST_F(CostModelTest, TwoAxisChanges) {
  EXPECT_EQ(plan("[[\"dp\", \"tp\"], -]", "[-, -]", {16, 8}),
            (Steps{"all_gather(tp,0) 8 8", "all_gather(dp,0) 16 8"}));
  EXPECT_EQ(plan("[\"dp\", -], partial = sum(\"tp\")", "[[\"dp\", \"tp\"], -]",
                 {16, 8}),
            (Steps{"reduce_scatter(tp,0) 2 8"}));
  EXPECT_EQ(plan("[\"tp\", -]", "[[\"dp\", \"tp\"], -]", {16, 8}),
            (Steps{"all_gather(tp,0) 16 8", "slice(dp,0) 8 8",
                   "slice(tp,0) 2 8"}));
  EXPECT_EQ(plan("[-, -], partial = max(\"dp\", \"tp\")", "[-, \"tp\"]",
                 {16, 8}),
            (Steps{"all_reduce(dp) 16 8", "reduce_scatter(tp,1) 16 2"}));
}

// A whole value becomes partial locally (make-partial, before any split);
// one partial kind cannot become another, and a value partial over one axis
// cannot gain another.
TEST_F(CostModelTest, MakePartial) {
  EXPECT_EQ(plan("[-, -]", "[-, -], partial = sum(\"tp\")", {16, 8}),
            (Steps{"make_partial(tp) 16 8"}));
  EXPECT_EQ(plan("[-, -]", "[\"dp\", -], partial = max(\"tp\")", {16, 8}),
            (Steps{"make_partial(tp) 16 8", "slice(dp,0) 8 8"}));
  // Free for max and min (idempotent), one masking pass for sum.
  CostModel costModel(*DeviceProfile::lookup("h100-nvlink"));
  auto steps = *planReshard(layout("[-, -]"),
                            layout("[-, -], partial = max(\"tp\")"),
                            {16, 8}, mesh);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(costModel.collectiveTime(steps[0], 4), 0.0);
  EXPECT_EQ(costModel.collectiveWireBytes(steps[0], 4), 0.0);
  steps = *planReshard(layout("[-, -]"),
                       layout("[-, -], partial = sum(\"tp\")"), {16, 8},
                       mesh);
  EXPECT_GT(costModel.collectiveTime(steps[0], 4), 0.0);
  EXPECT_EQ(costModel.collectiveWireBytes(steps[0], 4), 0.0);
}

TEST_F(CostModelTest, InfeasibleChanges) {
  EXPECT_EQ(plan("[-, -], partial = max(\"tp\")",
                 "[-, -], partial = sum(\"tp\")", {16, 8}),
            (Steps{"infeasible"}));
  EXPECT_EQ(plan("[-, -], partial = sum(\"dp\")",
                 "[-, -], partial = sum(\"dp\", \"tp\")", {16, 8}),
            (Steps{"infeasible"}));
}

// Uneven splits pad the blocks; gathering gives back the exact global size.
TEST_F(CostModelTest, UnevenSplitsPad) {
  EXPECT_EQ(plan("[\"tp\", -]", "[-, -]", {50257, 8}),
            (Steps{"all_gather(tp,0) 50257 8"}));
}

CollectiveStep makeStep(CollectiveKind kind, int64_t group,
                        ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  CollectiveStep step;
  step.kind = kind;
  step.groupSize = group;
  step.inputShape.assign(in.begin(), in.end());
  step.outputShape.assign(out.begin(), out.end());
  return step;
}

// Ring formulas: all-reduce 2(p-1)/p M/B + 2(p-1) steps, all-gather and
// reduce-scatter (p-1)/p M/B + (p-1) steps, plus the launch latency.
TEST_F(CostModelTest, RingPrices) {
  DeviceProfile profile = *DeviceProfile::lookup("h100-nvlink");
  CostModel model(profile);
  CollectiveStep ar =
      makeStep(CollectiveKind::AllReduce, 8, {1024, 1024}, {1024, 1024});
  double m = 1024.0 * 1024 * 2;
  EXPECT_DOUBLE_EQ(model.collectiveMessageBytes(ar, 2), m);
  EXPECT_DOUBLE_EQ(model.collectiveWireBytes(ar, 2), 2.0 * 7 / 8 * m);
  EXPECT_DOUBLE_EQ(model.collectiveTime(ar, 2),
                   profile.launchLatency + 14 * profile.linkLatency +
                       2.0 * 7 / 8 * m / profile.linkBandwidth);
  CollectiveStep ag =
      makeStep(CollectiveKind::AllGather, 8, {128, 1024}, {1024, 1024});
  EXPECT_DOUBLE_EQ(model.collectiveWireBytes(ag, 2), 7.0 / 8 * m);
  EXPECT_DOUBLE_EQ(model.collectiveTime(ag, 2),
                   profile.launchLatency + 7 * profile.linkLatency +
                       7.0 / 8 * m / profile.linkBandwidth);
  // A reduce-scatter followed by an all-gather moves what an all-reduce
  // moves: sequence parallelism costs no extra bandwidth.
  CollectiveStep rs =
      makeStep(CollectiveKind::ReduceScatter, 8, {1024, 1024}, {128, 1024});
  EXPECT_DOUBLE_EQ(model.collectiveWireBytes(rs, 2) +
                       model.collectiveWireBytes(ag, 2),
                   model.collectiveWireBytes(ar, 2));
  // Roofline compute.
  EXPECT_DOUBLE_EQ(model.computeTime(2e12, 1e6, true), 2e12 / profile.flops16);
  EXPECT_DOUBLE_EQ(model.computeTime(1.0, 3.35e9, false),
                   3.35e9 / profile.memoryBandwidth);
  EXPECT_FALSE(DeviceProfile::lookup("tpu").has_value());
}

} // namespace
