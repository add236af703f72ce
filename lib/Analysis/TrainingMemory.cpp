//===- TrainingMemory.cpp - memory classes of a training step ---*- C++ -*-===//
//
// The rules are in TrainingMemory.h. Every class is computed on the
// function's top-level ops in program order (regions are part of their op);
// bytes per device come from the plan's layouts (an argument's layout, the
// layout its producer emits a value in).
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/TrainingMemory.h"

#include "tp/Analysis/CostModel.h"
#include "tp/Analysis/ShardingRules.h"
#include "tp/Dialect/TP/IR/TPDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tp;

namespace {

class Classifier {
public:
  explicit Classifier(const Plan &plan) : plan(plan), func(plan.func) {
    for (auto [i, layout] : llvm::enumerate(plan.argLayouts))
      layouts[func.getArgument(i)] = layout;
    for (const PlannedOp &p : plan.ops) {
      for (auto [r, layout] : llvm::enumerate(p.resultLayouts))
        layouts[p.op->getResult(r)] = layout;
      planned[p.op] = &p;
    }
  }

  std::optional<TrainingMemory> run();

private:
  const Plan &plan;
  func::FuncOp func;
  DenseMap<Value, LayoutAttr> layouts;
  DenseMap<Operation *, const PlannedOp *> planned;
  /// Each gradient's layout as the update reads it (after the collectives
  /// that reduce it, e.g. a norm weight's under sequence parallelism).
  DenseMap<Value, LayoutAttr> consumedLayouts;

  /// In `layout`, or else in the layout the plan gives the value.
  double bytesPerDevice(Value value, LayoutAttr layout = nullptr) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      return 0;
    double n = getElementBytes(type.getElementType());
    if (!layout)
      layout = layouts.lookup(value);
    SmallVector<int64_t> shape =
        layout ? getLocalShape(type.getShape(), layout, plan.mesh)
               : SmallVector<int64_t>(type.getShape());
    for (int64_t s : shape)
      n *= ShapedType::isDynamic(s) ? 1 : s;
    return n;
  }

  std::string argName(unsigned i) {
    if (auto loc = dyn_cast<NameLoc>(func.getArgument(i).getLoc()))
      return loc.getName().str();
    return "arg" + std::to_string(i);
  }

  /// The value a view (reshape, annotate) stands for.
  static Value viewBase(Value value) {
    while (Operation *def = value.getDefiningOp()) {
      if (isa<AnnotateOp>(def)) {
        value = def->getOperand(0);
        continue;
      }
      FailureOr<ShardingRule> rule = getShardingRule(def, nullptr);
      if (succeeded(rule) && rule->viewLike && def->getNumOperands() > 0) {
        value = def->getOperand(0);
        continue;
      }
      break;
    }
    return value;
  }

  /// An op of an update region: linalg, every loop parallel, its results
  /// of `shape`.
  static bool isUpdateOp(Operation *op, ArrayRef<int64_t> shape) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp || linalgOp.getNumReductionLoops() != 0 ||
        op->getNumResults() == 0)
      return false;
    for (Type t : op->getResultTypes()) {
      auto type = dyn_cast<RankedTensorType>(t);
      if (!type || type.getShape() != shape)
        return false;
    }
    return true;
  }

  /// A value that holds no data of its own: tensor.empty, fills, constants.
  static bool isInitLike(Value value) {
    Operation *def = value.getDefiningOp();
    return def && (isa<tensor::EmptyOp, linalg::FillOp>(def) ||
                   matchPattern(value, m_Constant()));
  }

  void findGradients(unsigned weight, ArrayRef<unsigned> states,
                     ArrayRef<Value> updated, SetVector<Value> &gradients,
                     DenseSet<Operation *> &region);
  void findActivations(SetVector<Value> &activations);
};

void Classifier::findGradients(unsigned weight, ArrayRef<unsigned> states,
                               ArrayRef<Value> updated,
                               SetVector<Value> &gradients,
                               DenseSet<Operation *> &region) {
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(func.getArgument(weight).getType()).getShape();
  Block &body = func.getBody().front();
  // Forward from the weight and its states through update ops.
  DenseSet<Operation *> forward;
  SmallVector<Value> work = {func.getArgument(weight)};
  for (unsigned s : states)
    work.push_back(func.getArgument(s));
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top || !isUpdateOp(top, shape) || !forward.insert(top).second)
        continue;
      for (Value r : top->getResults())
        work.push_back(r);
    }
  }
  // Backward from the updated results through update ops; the region is
  // what both reach.
  DenseSet<Operation *> seen;
  SmallVector<Operation *> stack;
  for (Value v : updated)
    if (Operation *def = v.getDefiningOp())
      stack.push_back(def);
  while (!stack.empty()) {
    Operation *op = stack.pop_back_val();
    if (!isUpdateOp(op, shape) || !seen.insert(op).second)
      continue;
    if (forward.contains(op))
      region.insert(op);
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        stack.push_back(def);
  }
  for (Operation &op : body) {
    if (!region.contains(&op))
      continue;
    auto linalgOp = cast<linalg::LinalgOp>(&op);
    for (OpOperand *input : linalgOp.getDpsInputOperands()) {
      Value v = input->get();
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || type.getShape() != shape || isa<BlockArgument>(v) ||
          isInitLike(v) || region.contains(v.getDefiningOp()))
        continue;
      gradients.insert(v);
      const PlannedOp *p = planned.lookup(&op);
      unsigned number = input->getOperandNumber();
      if (p && number < p->operandLayouts.size() && p->operandLayouts[number])
        consumedLayouts.try_emplace(v, p->operandLayouts[number]);
    }
  }
}

void Classifier::findActivations(SetVector<Value> &activations) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return;
  // The forward pass: everything the loss depends on.
  DenseSet<Operation *> forward;
  SmallVector<Value> work = {ret.getOperand(0)};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || !forward.insert(def).second)
      continue;
    for (Value operand : def->getOperands())
      work.push_back(operand);
    for (Value captured : getCapturedTensors(def))
      work.push_back(captured);
  }
  for (Operation &op : body) {
    if (&op == ret.getOperation() || forward.contains(&op))
      continue;
    // A backward op: the forward values it reads.
    auto consider = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || !forward.contains(def))
        return;
      Value base = viewBase(v);
      if (isa<BlockArgument>(base) || isInitLike(base))
        return;
      activations.insert(base);
    };
    for (Value operand : op.getOperands())
      consider(operand);
    for (Value captured : getCapturedTensors(&op))
      consider(captured);
  }
}

std::optional<TrainingMemory> Classifier::run() {
  // Result -> argument it updates.
  SmallVector<std::pair<unsigned, Value>> updates;
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (auto index = func.getResultAttrOfType<IntegerAttr>(
            r, TPDialect::getUpdatesAttrName()))
      if (index.getInt() >= 0 && index.getInt() < func.getNumArguments())
        updates.push_back({unsigned(index.getInt()), ret.getOperand(r)});
  if (updates.empty())
    return std::nullopt;

  TrainingMemory memory;
  SmallVector<unsigned> weights, states;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    bool isState = func.getArgAttr(i, TPDialect::getStateAttrName()) != nullptr;
    bool isParam = func.getArgAttr(i, TPDialect::getParamAttrName()) != nullptr;
    if (isState) {
      states.push_back(i);
      memory.stateBytes += bytesPerDevice(func.getArgument(i));
      ++memory.numStates;
    } else if (isParam) {
      weights.push_back(i);
      memory.weightBytes += bytesPerDevice(func.getArgument(i));
      ++memory.numWeights;
      if (auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType()))
        memory.weightElements += type.getNumElements();
    }
  }

  SetVector<Value> allGradients;
  for (unsigned w : weights) {
    if (!isa<RankedTensorType>(func.getArgument(w).getType()))
      continue;
    TrainingParam param;
    param.name = argName(w);
    param.argument = w;
    param.layout = plan.argLayouts[w];
    SmallVector<Value> updated;
    for (auto [arg, value] : updates)
      if (arg == w) {
        updated.push_back(value);
        unsigned r = 0;
        for (; r < ret.getNumOperands(); ++r)
          if (ret.getOperand(r) == value &&
              func.getResultAttrOfType<IntegerAttr>(
                  r, TPDialect::getUpdatesAttrName()))
            break;
        if (r < plan.resultLayouts.size())
          param.updateLayouts.push_back(plan.resultLayouts[r]);
      }
    SetVector<Value> gradients;
    DenseSet<Operation *> region;
    findGradients(w, states, updated, gradients, region);
    // Its states: those whose next value the update region computes.
    for (auto [arg, value] : updates)
      if (llvm::is_contained(states, arg) && value.getDefiningOp() &&
          region.contains(value.getDefiningOp()))
        param.stateLayouts.push_back(plan.argLayouts[arg]);
    for (Value g : gradients) {
      param.gradientLayouts.push_back(consumedLayouts.count(g)
                                          ? consumedLayouts.lookup(g)
                                          : layouts.lookup(g));
      allGradients.insert(g);
    }
    memory.params.push_back(std::move(param));
  }
  for (Value g : allGradients)
    memory.gradientBytes += bytesPerDevice(g, consumedLayouts.lookup(g));
  memory.numGradients = allGradients.size();

  SetVector<Value> activations;
  findActivations(activations);
  for (Value a : activations)
    memory.activationBytes += bytesPerDevice(a);
  memory.numActivations = activations.size();
  return memory;
}

std::string printLayout(LayoutAttr layout) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (layout)
    Attribute(layout).print(os);
  return s;
}

llvm::json::Array layoutList(ArrayRef<LayoutAttr> layouts) {
  llvm::json::Array a;
  for (LayoutAttr l : layouts)
    a.push_back(printLayout(l));
  return a;
}

} // namespace

std::optional<TrainingMemory>
mlir::tp::analyzeTrainingMemory(const Plan &plan) {
  return Classifier(plan).run();
}

llvm::json::Object mlir::tp::getTrainingReport(const TrainingMemory &memory) {
  llvm::json::Array params;
  for (const TrainingParam &p : memory.params)
    params.push_back(llvm::json::Object{
        {"name", p.name},
        {"argument", int64_t(p.argument)},
        {"layout", printLayout(p.layout)},
        {"update_layouts", layoutList(p.updateLayouts)},
        {"gradient_layouts", layoutList(p.gradientLayouts)},
        {"state_layouts", layoutList(p.stateLayouts)}});
  return llvm::json::Object{
      {"weight_bytes_per_device", memory.weightBytes},
      {"gradient_bytes_per_device", memory.gradientBytes},
      {"optimizer_state_bytes_per_device", memory.stateBytes},
      {"activation_bytes_per_device", memory.activationBytes},
      {"weights", memory.numWeights},
      {"gradients", memory.numGradients},
      {"optimizer_states", memory.numStates},
      {"activations", memory.numActivations},
      {"weight_elements", memory.weightElements},
      {"params", std::move(params)}};
}
