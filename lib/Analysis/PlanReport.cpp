//===- PlanReport.cpp - the plan in the IR and as JSON --------------------===//
//
// annotateFunction writes the chosen layouts into the IR (tp.layout on the
// function's arguments and results, tp.operand_layouts / tp.result_layouts /
// tp.captured_layouts on ops); getPlanReport describes the plan as the JSON
// report of docs/passes/propagate.md.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::detail;

//===----------------------------------------------------------------------===//
// Writing the plan
//===----------------------------------------------------------------------===//

static ArrayAttr layoutArray(MLIRContext *ctx, ArrayRef<LayoutAttr> layouts) {
  SmallVector<Attribute> attrs;
  for (LayoutAttr l : layouts)
    attrs.push_back(l ? Attribute(l) : Attribute(UnitAttr::get(ctx)));
  return ArrayAttr::get(ctx, attrs);
}

void mlir::tp::annotateFunction(const Plan &plan) {
  func::FuncOp func = plan.func;
  MLIRContext *ctx = func.getContext();
  for (auto [i, layout] : llvm::enumerate(plan.argLayouts))
    if (layout)
      func.setArgAttr(i, TPDialect::getLayoutAttrName(), layout);
  for (auto [i, layout] : llvm::enumerate(plan.resultLayouts))
    if (layout)
      func.setResultAttr(i, TPDialect::getLayoutAttrName(), layout);
  for (const PlannedOp &p : plan.ops) {
    if (p.op->getNumOperands())
      p.op->setAttr(TPDialect::getOperandLayoutsAttrName(),
                    layoutArray(ctx, p.operandLayouts));
    if (!p.capturedLayouts.empty())
      p.op->setAttr(TPDialect::getCapturedLayoutsAttrName(),
                    layoutArray(ctx, p.capturedLayouts));
    if (p.op->getNumResults())
      p.op->setAttr(TPDialect::getResultLayoutsAttrName(),
                    layoutArray(ctx, p.resultLayouts));
  }
  // The return op consumes the results in their final layouts.
  func.walk([&](func::ReturnOp ret) {
    if (ret->getParentOp() != func.getOperation() || !ret.getNumOperands())
      return;
    ret->setAttr(TPDialect::getOperandLayoutsAttrName(),
                 layoutArray(ctx, plan.resultLayouts));
  });
}

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

static std::string printAttr(Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (attr)
    attr.print(os);
  return s;
}

static std::string printLoc(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

static llvm::json::Array shapeArray(ArrayRef<int64_t> shape) {
  llvm::json::Array a;
  for (int64_t s : shape)
    a.push_back(s);
  return a;
}

llvm::json::Object mlir::tp::getPlanReport(const Plan &plan,
                                           const CostModel &costModel) {
  using namespace llvm::json;
  func::FuncOp func = plan.func;
  MeshOp meshOp = plan.mesh;
  Object report;
  report["function"] = func.getSymName().str();
  Object mesh;
  mesh["name"] = meshOp.getSymName().str();
  Array meshAxes;
  for (auto [name, size] :
       llvm::zip(meshOp.getAxisNames(), meshOp.getShape()))
    meshAxes.push_back(Object{{"name", cast<StringAttr>(name).str()},
                              {"size", size}});
  mesh["axes"] = std::move(meshAxes);
  report["mesh"] = std::move(mesh);
  report["device"] = costModel.getProfile().name;

  Array args;
  for (auto [i, layout] : llvm::enumerate(plan.argLayouts)) {
    if (!layout)
      continue;
    args.push_back(Object{
        {"index", int64_t(i)},
        {"param", func.getArgAttr(i, TPDialect::getParamAttrName()) !=
                      nullptr},
        {"layout", printAttr(layout)}});
  }
  report["arguments"] = std::move(args);

  Array ops;
  for (const PlannedOp &p : plan.ops) {
    Array results;
    for (LayoutAttr l : p.resultLayouts)
      results.push_back(printAttr(l));
    ops.push_back(Object{{"op", p.op->getName().getStringRef().str()},
                         {"loc", printLoc(p.op->getLoc())},
                         {"strategy", p.strategy},
                         {"results", std::move(results)},
                         {"compute_seconds", p.computeTime},
                         {"padded", p.padded}});
  }
  report["ops"] = std::move(ops);

  Array reshards;
  for (const PlannedReshard &r : plan.reshards) {
    auto type = cast<RankedTensorType>(r.value.getType());
    int64_t elementBytes = getElementBytes(type.getElementType());
    Array steps;
    for (const CollectiveStep &step : r.steps) {
      Object s{{"collective", stringifyCollectiveKind(step.kind).str()},
               {"axis", step.axis.str()},
               {"group", step.groupSize},
               {"input_shape", shapeArray(step.inputShape)},
               {"output_shape", shapeArray(step.outputShape)},
               {"message_bytes",
                costModel.collectiveMessageBytes(step, elementBytes)},
               {"wire_bytes", costModel.collectiveWireBytes(step, elementBytes)},
               {"seconds", costModel.collectiveTime(step, elementBytes)}};
      if (step.dim >= 0)
        s["dim"] = step.dim;
      if (step.concatDim >= 0)
        s["concat_dim"] = step.concatDim;
      if (step.kind == CollectiveKind::AllReduce ||
          step.kind == CollectiveKind::ReduceScatter)
        s["reduction"] = stringifyReductionKind(step.reduction).str();
      steps.push_back(std::move(s));
    }
    std::string element;
    llvm::raw_string_ostream os(element);
    os << type.getElementType();
    reshards.push_back(Object{
        {"consumer", r.consumer->getName().getStringRef().str()},
        {"loc", printLoc(r.consumer->getLoc())},
        {"operand", int64_t(r.operandNumber)},
        {"value_loc", printLoc(r.value.getLoc())},
        {"shape", shapeArray(type.getShape())},
        {"element_type", element},
        {"from", printAttr(r.from)},
        {"to", printAttr(r.to)},
        {"steps", std::move(steps)},
        {"message_bytes", r.messageBytes},
        {"wire_bytes", r.wireBytes},
        {"seconds", r.time}});
  }
  report["reshards"] = std::move(reshards);

  const PlanTotals &t = plan.totals;
  report["totals"] = Object{
      {"step_seconds", t.stepTime},
      {"compute_seconds", t.computeTime},
      {"communication_seconds", t.communicationTime},
      {"communication_message_bytes_per_device", t.messageBytes},
      {"communication_wire_bytes_per_device", t.wireBytes},
      {"collectives", t.numCollectives},
      {"param_bytes_per_device", t.paramBytesPerDevice},
      {"param_bytes_total", t.paramBytesTotal},
      {"peak_activation_bytes_per_device", t.activationBytesPerDevice},
      {"activation_bytes_all_per_device", t.activationBytesAllPerDevice},
      {"memory_budget_bytes", t.memoryBudget}};
  Array remarks;
  for (const std::string &r : plan.remarks)
    remarks.push_back(r);
  report["remarks"] = std::move(remarks);
  // A training step: bytes per device of weights, gradients, optimizer
  // states and activations (TrainingMemory.h).
  if (std::optional<TrainingMemory> training = analyzeTrainingMemory(plan))
    report["training"] = getTrainingReport(*training);
  llvm::json::Array axisGroups;
  for (const SmallVector<std::string> &group : plan.axisGroups)
    axisGroups.push_back(llvm::json::Array(group));
  report["solver"] = Object{{"exact", plan.exact},
                            {"gap", plan.gap},
                            {"lower_bound_seconds", plan.lowerBound},
                            {"relaxed_nodes", plan.relaxedNodes},
                            {"relaxed_fan_outs", plan.relaxedFanOuts},
                            {"axis_groups", std::move(axisGroups)},
                            {"solves", plan.solves},
                            {"rematerialized", plan.rematerialized},
                            {"fused_params_split", plan.fusedParamsSplit},
                            {"nodes", plan.numNodes},
                            {"strategies", plan.numStrategies},
                            {"pruned_strategies", plan.prunedStrategies},
                            {"memory_constraint", plan.memoryConstraint},
                            {"liveness_points", plan.livenessPoints},
                            {"liveness_rounds", plan.livenessRounds},
                            {"liveness_conservative",
                             plan.livenessConservative},
                            {"width", plan.solverWidth},
                            {"largest_front", plan.largestFront},
                            {"seconds", plan.planSeconds}};
  return report;
}
