//===- Planner.cpp - choose a layout for every value ------------*- C++ -*-===//
//
// The planner in five phases.
//
// 1. Nodes. Every tensor argument, every op of the function body and every
//    tensor result becomes a node with a list of *strategies*. A strategy
//    fixes the layout of each tensor operand (as the node consumes it) and of
//    each result (as it produces it), plus its compute time and memory.
//      - arguments: pinned (`tp.layout`) or replicated: one strategy; a
//        `tp.param` without a pin: every layout of its shape (no partial);
//      - ops with a sharding rule: every assignment of mesh axes to factors
//        (or to nothing); splitting a parallel factor splits the tensor
//        dimensions whose major factor it is, splitting a reduction factor
//        makes the results (and inits) partial with the factor's combiner; a
//        fill of an identity may also produce that partial for free; an
//        elementwise op linear in its inputs (isSumLinear: `a + b`, a
//        gradient sum) whose inputs may all be pending sums of contractions
//        may also read them as partial sums and produce the partial sum;
//        ops whose rule allows any layout (tensor.empty) list every layout;
//      - ops without a rule: one replicated strategy, and a remark;
//      - `tp.annotate`: one strategy with the pinned layout, and the value
//        it pins must be *produced* in that layout;
//      - results: pinned or replicated, or (a `tp.param` result, or one
//        with `tp.updates`, a training step's next state) free.
//    Large constants behave like parameters, small ones are replicated (a
//    split of a replicated value is a free slice).
// 2. Edges. Every use of a value joins the producer's node and the
//    consumer's node with a table: for each pair of strategies, the modelled
//    time of the collectives (planReshard) that take the produced layout to
//    the consumed one, or infinity when none can.
// 3. Constraints. The memory of a strategy is the parameter bytes it keeps
//    per device (plus, with an absolute budget, its activation bytes). The
//    default budget is 1.1 x (total parameter bytes / number of devices the
//    parameters can be split over). Sequence parallelism `off` removes the
//    strategies that split a token factor (a factor whose dimensions come
//    from a non-parameter input and never index a parameter); `on` removes
//    the strategies that leave an axis unused on an op that could split a
//    token factor over it.
// 4. Search. solveExact (bucket elimination with Pareto fronts) returns the
//    assignment of least total time within the budget.
// 5. Result. The chosen strategies, the reshardings on the edges, the totals
//    and the remarks make the Plan; annotateFunction writes it into the IR.
//
//===----------------------------------------------------------------------===//

#include "tp/Analysis/Planner.h"

#include "tp/Analysis/FusedParams.h"
#include "tp/Analysis/Rematerialize.h"
#include "tp/Analysis/ShardingRules.h"
#include "tp/Analysis/Solver.h"
#include "tp/Analysis/TrainingMemory.h"
#include "tp/Dialect/TP/IR/TPDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <functional>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::tp;

namespace {

constexpr double kInf = AssignmentProblem::kInfinity;

struct Strategy {
  /// Per input slot (operands first, then captured values): consumed layout.
  SmallVector<LayoutAttr> inputs;
  SmallVector<LayoutAttr> results;
  double compute = 0;
  double paramBytes = 0;
  double activationBytes = 0;
  std::string description;
  bool padded = false;
};

enum class NodeKind { Argument, Op, Result };

struct Input {
  Value value;
  unsigned slot;
  /// The value must be produced in exactly this node's layout (a pin).
  bool exact = false;
};

struct Node {
  NodeKind kind;
  Operation *op = nullptr;  // Op: the op; Result: the return op
  unsigned index = 0;       // Argument/Result: its number
  SmallVector<Input> inputs;
  SmallVector<Strategy> strategies;
};

/// Union-find over tensor dimensions (value, dim), to find token factors.
using DimKey = std::pair<void *, int64_t>;

class PlanBuilder {
public:
  PlanBuilder(func::FuncOp func, MeshOp mesh, const PlannerOptions &options)
      : func(func), mesh(mesh), options(options),
        costModel(options.device), meshRef(FlatSymbolRefAttr::get(
                                       mesh.getSymNameAttr())) {
    for (auto [name, size] :
         llvm::zip(mesh.getAxisNames(), mesh.getShape()))
      if (size > 1)
        axes.push_back({cast<StringAttr>(name), size});
  }

  FailureOr<Plan> run();

private:
  struct Axis {
    StringAttr name;
    int64_t size;
  };

  LogicalResult buildNodes();
  void addArgumentNode(BlockArgument arg);
  void addOpNode(Operation *op);
  void addResultNodes(func::ReturnOp ret);
  LogicalResult checkPins();
  void computeTokenClasses();
  void computeResidualStream();
  /// Sequence parallelism on/off: whether `value`, if it is on the residual
  /// stream, may have `layout`.
  bool allowedOnStream(Value value, LayoutAttr layout);
  void addRuleStrategies(Node &node, const ShardingRule &rule);
  void addReplicatedStrategy(Node &node, StringRef why);
  SmallVector<LayoutAttr> enumerateLayouts(RankedTensorType type,
                                           bool *anyPadded = nullptr);
  double localBytes(Type type, LayoutAttr layout);
  double reshardTime(LayoutAttr from, LayoutAttr to, Value value);
  double memoryBudget();
  std::vector<int>
  eliminationGroups(const AssignmentProblem &problem,
                    ArrayRef<std::pair<int, int>> dataflow);
  LayoutAttr producedLayout(Value value, int node, int strategy);
  /// A remark naming the factor sizes that kept ops replicated because a
  /// mesh axis does not divide them (12 heads over 8 devices).
  void explainReplicated();

  func::FuncOp func;
  MeshOp mesh;
  const PlannerOptions &options;
  CostModel costModel;
  FlatSymbolRefAttr meshRef;
  SmallVector<Axis> axes;

  std::vector<Node> nodes;
  DenseMap<Value, std::pair<int, unsigned>> producer; // value -> node, result
  Plan plan;

  llvm::EquivalenceClasses<DimKey> dimClasses;
  DenseSet<DimKey> tokenLeaders;
  DenseSet<Value> residualStream;
  std::map<std::tuple<const void *, const void *, const void *>, double>
      reshardCache;
  double totalParamBytes = 0;
  int64_t paramDevices = 1;
  DenseSet<int> paramNodes; // nodes of parameters and constant weights
  /// Values that may be pending sums from a contraction: results of ops
  /// with a reduction factor, and of linear ops on such values only.
  DenseSet<Value> reducedValues;
  /// A value with several uses: its solver node, and per choice the layout
  /// produced and the layout of the shared resharding.
  struct FanOut {
    Value value;
    int node;
    SmallVector<std::pair<LayoutAttr, LayoutAttr>> choices;
  };
  std::vector<FanOut> fanOuts;
};

} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static bool isSixteenBit(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  Type element = shaped ? shaped.getElementType() : type;
  return element.isIntOrFloat() && element.getIntOrFloatBitWidth() <= 16;
}

static double globalBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return 0;
  double n = getElementBytes(tensor.getElementType());
  for (int64_t s : tensor.getShape())
    n *= ShapedType::isDynamic(s) ? 1 : s;
  return n;
}

double PlanBuilder::localBytes(Type type, LayoutAttr layout) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !layout)
    return globalBytes(type);
  double n = getElementBytes(tensor.getElementType());
  for (int64_t s : getLocalShape(tensor.getShape(), layout, mesh))
    n *= ShapedType::isDynamic(s) ? 1 : s;
  return n;
}

static std::string describeValue(Value value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto arg = dyn_cast<BlockArgument>(value))
    os << "argument #" << arg.getArgNumber();
  else
    os << "result #" << cast<OpResult>(value).getResultNumber() << " of '"
       << value.getDefiningOp()->getName() << "'";
  return s;
}

/// Every layout of `type` that splits dimensions over the mesh axes (no
/// partial), each axis used at most once, splits ordered by mesh axis.
SmallVector<LayoutAttr> PlanBuilder::enumerateLayouts(RankedTensorType type,
                                                      bool *anyPadded) {
  SmallVector<LayoutAttr> layouts;
  int64_t rank = type.getRank();
  SmallVector<int64_t> choice(axes.size(), -1);
  std::function<void(size_t)> rec = [&](size_t a) {
    if (a == axes.size()) {
      SmallVector<SmallVector<StringAttr>> dims(rank);
      for (size_t i = 0; i < axes.size(); ++i)
        if (choice[i] >= 0)
          dims[choice[i]].push_back(axes[i].name);
      // Each split must leave at least one element per device.
      for (int64_t d = 0; d < rank; ++d) {
        int64_t group = 1;
        for (StringAttr axis : dims[d])
          group *= *mesh.getAxisSize(axis.getValue());
        int64_t size = type.getDimSize(d);
        if (group == 1)
          continue;
        if (ShapedType::isDynamic(size) || size < group)
          return;
        if (size % group != 0) {
          // Padding is defined for a split over one axis only.
          if (!options.allowPadding || dims[d].size() > 1)
            return;
          if (anyPadded)
            *anyPadded = true;
        }
      }
      layouts.push_back(LayoutAttr::get(func.getContext(), meshRef, dims));
      return;
    }
    for (int64_t d = -1; d < rank; ++d) {
      choice[a] = d;
      rec(a + 1);
    }
  };
  rec(0);
  return layouts;
}

double PlanBuilder::reshardTime(LayoutAttr from, LayoutAttr to, Value value) {
  if (from == to)
    return 0;
  auto key = std::make_tuple(from.getAsOpaquePointer(),
                             to.getAsOpaquePointer(),
                             value.getType().getAsOpaquePointer());
  auto it = reshardCache.find(key);
  if (it != reshardCache.end())
    return it->second;
  auto type = cast<RankedTensorType>(value.getType());
  double time = kInf;
  FailureOr<SmallVector<CollectiveStep>> steps =
      planReshard(from, to, type.getShape(), mesh);
  if (succeeded(steps)) {
    time = 0;
    int64_t elementBytes = getElementBytes(type.getElementType());
    for (const CollectiveStep &step : *steps)
      time += costModel.collectiveTime(step, elementBytes);
  }
  reshardCache[key] = time;
  return time;
}

//===----------------------------------------------------------------------===//
// Phase 1: nodes
//===----------------------------------------------------------------------===//

void PlanBuilder::addArgumentNode(BlockArgument arg) {
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type)
    return;
  unsigned i = arg.getArgNumber();
  Node node;
  node.kind = NodeKind::Argument;
  node.index = i;
  auto pinned = func.getArgAttrOfType<LayoutAttr>(
      i, TPDialect::getLayoutAttrName());
  bool isParam = func.getArgAttr(i, TPDialect::getParamAttrName()) != nullptr;
  if (isParam) {
    totalParamBytes += globalBytes(type);
    paramNodes.insert(nodes.size());
  }
  auto addStrategy = [&](LayoutAttr layout, bool padded) {
    Strategy s;
    s.results = {layout};
    s.paramBytes = isParam ? localBytes(type, layout) : 0;
    s.padded = padded;
    node.strategies.push_back(std::move(s));
  };
  if (pinned) {
    addStrategy(pinned, !isEvenlyDivisible(type.getShape(), pinned, mesh));
  } else if (isParam) {
    // Remarks for dimensions the axes cannot split evenly.
    for (int64_t d = 0; d < type.getRank(); ++d) {
      int64_t size = type.getDimSize(d);
      for (const Axis &axis : axes) {
        if (ShapedType::isDynamic(size)) {
          std::string remark = llvm::formatv(
              "dimension {0} of argument #{1} is dynamic; kept unsplit", d, i);
          func.emitRemark() << remark;
          plan.remarks.push_back(remark);
          break;
        }
        if (size % axis.size != 0)
          plan.remarks.push_back(llvm::formatv(
              "dimension {0} of size {1} of argument #{2} is not divisible by "
              "mesh axis \"{3}\" ({4}); {5}",
              d, size, i, axis.name.getValue(), axis.size,
              options.allowPadding ? "splitting it needs padding"
                                   : "kept unsplit"));
      }
    }
    for (LayoutAttr layout : enumerateLayouts(type))
      addStrategy(layout, !isEvenlyDivisible(type.getShape(), layout, mesh));
  } else {
    addStrategy(LayoutAttr::getReplicated(meshRef, type.getRank()), false);
  }
  producer[arg] = {int(nodes.size()), 0};
  nodes.push_back(std::move(node));
}

void PlanBuilder::addReplicatedStrategy(Node &node, StringRef why) {
  Operation *op = node.op;
  Strategy s;
  double bytes = 0;
  for (Input &in : node.inputs) {
    auto type = cast<RankedTensorType>(in.value.getType());
    s.inputs.push_back(LayoutAttr::getReplicated(meshRef, type.getRank()));
    bytes += globalBytes(type);
  }
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    s.results.push_back(
        type ? LayoutAttr::getReplicated(meshRef, type.getRank()) : nullptr);
    bytes += globalBytes(result.getType());
    s.activationBytes += globalBytes(result.getType());
  }
  s.compute = costModel.computeTime(0, bytes, false);
  s.description = why.str();
  node.strategies.push_back(std::move(s));
}

void PlanBuilder::addOpNode(Operation *op) {
  Node node;
  node.kind = NodeKind::Op;
  node.op = op;
  // Inputs: tensor operands at their operand number, then the tensors the
  // op's regions capture (read whole), numbered after the operands.
  for (OpOperand &operand : op->getOpOperands())
    if (isa<RankedTensorType>(operand.get().getType()))
      node.inputs.push_back({operand.get(), operand.getOperandNumber()});
  SmallVector<Value> captured = getCapturedTensors(op);
  for (auto [k, v] : llvm::enumerate(captured))
    node.inputs.push_back({v, unsigned(op->getNumOperands() + k)});

  auto finish = [&]() {
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      producer[op->getResult(r)] = {int(nodes.size()), r};
    nodes.push_back(std::move(node));
  };
  // Strategies index inputs by slot; make room for every operand.
  auto slotCount = op->getNumOperands() + captured.size();
  auto expand = [&](Strategy &s) {
    SmallVector<LayoutAttr> bySlot(slotCount, nullptr);
    for (auto [in, layout] : llvm::zip(node.inputs, s.inputs))
      bySlot[in.slot] = layout;
    s.inputs = std::move(bySlot);
  };

  if (auto annotate = dyn_cast<AnnotateOp>(op)) {
    Strategy s;
    s.inputs = {annotate.getLayout()};
    s.results = {annotate.getLayout()};
    s.description = "pinned";
    node.inputs.front().exact = true;
    node.strategies.push_back(std::move(s));
    return finish();
  }

  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    if (type) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      bool splat = dense && dense.isSplat();
      if (!splat && globalBytes(type) >= options.largeConstantBytes) {
        // A baked-in weight: its slices are taken at compile time.
        totalParamBytes += globalBytes(type);
        paramNodes.insert(nodes.size());
        for (LayoutAttr layout : enumerateLayouts(type)) {
          Strategy s;
          s.results = {layout};
          s.paramBytes = localBytes(type, layout);
          s.description = "constant weight";
          node.strategies.push_back(std::move(s));
        }
        return finish();
      }
      LayoutAttr rep = LayoutAttr::getReplicated(meshRef, type.getRank());
      Strategy s;
      s.results = {rep};
      s.description = "constant";
      node.strategies.push_back(s);
      // A splat of a combiner's identity is also a valid partial value.
      if (splat) {
        ShardingRule probe;
        Attribute attr = dense.getSplatValue<Attribute>();
        std::optional<ReductionKind> kind;
        if (auto f = dyn_cast<FloatAttr>(attr); f && f.getValue().isZero())
          kind = ReductionKind::Sum;
        if (auto i = dyn_cast<IntegerAttr>(attr); i && i.getValue().isZero())
          kind = ReductionKind::Sum;
        if (kind && !axes.empty()) {
          SmallVector<StringAttr> all;
          for (const Axis &axis : axes)
            all.push_back(axis.name);
          s.results = {rep.withPartial(all, *kind)};
          s.description = "constant identity";
          node.strategies.push_back(s);
        }
      }
      return finish();
    }
  }

  std::string reason;
  FailureOr<ShardingRule> rule = getShardingRule(op, &reason);
  if (succeeded(rule)) {
    addRuleStrategies(node, *rule);
  }
  if (node.strategies.empty()) {
    bool hasTensors = !node.inputs.empty() ||
                      llvm::any_of(op->getResultTypes(), [](Type t) {
                        return isa<RankedTensorType>(t);
                      });
    if (hasTensors && failed(rule)) {
      op->emitRemark() << reason << "; kept replicated";
      plan.remarks.push_back(reason + "; kept replicated");
    }
    addReplicatedStrategy(node, failed(rule) ? "replicated (no rule)"
                                             : "replicated");
  }
  for (Strategy &s : node.strategies)
    expand(s);
  finish();
}

/// Whether `op` computes, element by element, a linear function of its
/// inputs with no constant term: sums and differences of inputs, each
/// scaled by values that depend on no input (`a + b`, `0.5 * (a - b)`). The
/// sum over devices of such an op's results on per-device terms is then the
/// op applied to the summed inputs, so partial sums may flow through it
/// (Megatron's backward adds the partial input gradients of q, k and v, or
/// gate and up, before one all-reduce).
static bool isSumLinear(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumReductionLoops() != 0 ||
      op->getNumRegions() != 1 || !linalgOp.getBlock() ||
      linalgOp.getNumDpsInputs() == 0)
    return false;
  Block *body = linalgOp.getBlock();
  DenseSet<Value> linear;
  for (OpOperand *input : linalgOp.getDpsInputOperands()) {
    if (!isa<RankedTensorType>(input->get().getType()))
      return false;
    linear.insert(linalgOp.getMatchingBlockArgument(input));
  }
  for (OpOperand &init : linalgOp.getDpsInitsMutable())
    if (!linalgOp.getMatchingBlockArgument(&init).use_empty())
      return false;
  for (Operation &inner : body->without_terminator()) {
    unsigned numLinear = llvm::count_if(
        inner.getOperands(), [&](Value v) { return linear.contains(v); });
    if (numLinear == 0) {
      // Depends on no input: a scale factor, if anything.
      if (inner.getNumRegions() != 0)
        return false;
      continue;
    }
    bool ok = false;
    if (isa<arith::AddFOp, arith::SubFOp>(inner))
      ok = numLinear == 2;
    else if (isa<arith::NegFOp>(inner))
      ok = true;
    else if (isa<arith::MulFOp>(inner))
      ok = numLinear == 1;
    else if (auto div = dyn_cast<arith::DivFOp>(inner))
      ok = numLinear == 1 && linear.contains(div.getLhs());
    if (!ok)
      return false;
    linear.insert(inner.getResult(0));
  }
  Operation *yield = body->getTerminator();
  return yield->getNumOperands() > 0 &&
         llvm::all_of(yield->getOperands(),
                       [&](Value v) { return linear.contains(v); });
}

void PlanBuilder::addRuleStrategies(Node &node, const ShardingRule &rule) {
  Operation *op = node.op;
  MLIRContext *ctx = op->getContext();
  int64_t numFactors = rule.factors.size();

  // The token factors of this op (for sequence-parallel on/off).
  SmallVector<bool> isToken(numFactors, false);
  auto markTokens = [&](Value v, const TensorFactors &dims) {
    for (auto [d, fs] : llvm::enumerate(dims)) {
      int64_t major = -1;
      for (int64_t f : fs)
        if (rule.factors[f].size > 1) {
          major = f;
          break;
        }
      if (major < 0)
        continue;
      DimKey key{v.getAsOpaquePointer(), int64_t(d)};
      if (dimClasses.contains(key) &&
          tokenLeaders.contains(dimClasses.getLeaderValue(key)))
        isToken[major] = true;
    }
  };
  for (auto [i, mapping] : llvm::enumerate(rule.operands))
    if (mapping)
      markTokens(op->getOperand(i), *mapping);
  for (auto [i, mapping] : llvm::enumerate(rule.results))
    if (mapping)
      markTokens(op->getResult(i), *mapping);

  auto layoutOf = [&](const TensorFactors &dims,
                      ArrayRef<SmallVector<StringAttr>> factorAxes,
                      ArrayRef<StringAttr> partial,
                      ReductionKind kind) -> LayoutAttr {
    SmallVector<SmallVector<StringAttr>> dimAxes;
    llvm::SmallDenseSet<StringAttr> seen;
    for (const SmallVector<int64_t, 1> &fs : dims) {
      SmallVector<StringAttr> &axesOfDim = dimAxes.emplace_back();
      bool majorSeen = false;
      for (int64_t f : fs) {
        bool isMajor = !majorSeen && rule.factors[f].size > 1;
        if (rule.factors[f].size > 1)
          majorSeen = true;
        if (factorAxes[f].empty())
          continue;
        if (!isMajor)
          return nullptr; // a minor factor of a merged dimension
        for (StringAttr a : factorAxes[f]) {
          if (!seen.insert(a).second)
            return nullptr;
          axesOfDim.push_back(a);
        }
      }
    }
    return LayoutAttr::get(ctx, meshRef, dimAxes, partial, kind);
  };

  // A factor that shares a tensor dimension with another (a reshape's
  // merged dimension) cannot be padded: padding its blocks would not be
  // padding the merged dimension's blocks.
  auto inMergedDim = [&](int64_t f) {
    auto check = [&](const TensorFactors &dims) {
      for (const SmallVector<int64_t, 1> &fs : dims) {
        if (!llvm::is_contained(fs, f))
          continue;
        for (int64_t g : fs)
          if (g != f && rule.factors[g].size > 1)
            return true;
      }
      return false;
    };
    for (const auto &m : rule.operands)
      if (m && check(*m))
        return true;
    for (const auto &m : rule.results)
      if (m && check(*m))
        return true;
    for (const auto &c : rule.captured)
      if (check(c.second))
        return true;
    return false;
  };

  // Whether pending sums may flow through the op (isSumLinear): only
  // where every input read may be one (a sum of partial gradients), which
  // keeps the extra strategies, and the search, small.
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  bool linearInputs =
      dps && isSumLinear(op) && rule.captured.empty() &&
      llvm::all_of(node.inputs, [&](const Input &in) {
        if (in.slot >= op->getNumOperands())
          return false;
        return !dps.isDpsInput(&op->getOpOperand(in.slot)) ||
               reducedValues.contains(in.value);
      });
  if (linearInputs ||
      llvm::any_of(rule.factors, [](const Factor &f) {
        return f.kind == FactorKind::Reduction;
      }))
    for (Value r : op->getResults())
      reducedValues.insert(r);

  // Enumerate: each axis on no factor (-1) or on one splittable factor.
  SmallVector<int64_t> choice(axes.size(), -1);
  std::function<void(size_t)> rec = [&](size_t a) {
    if (a < axes.size()) {
      for (int64_t f = -1; f < numFactors; ++f) {
        if (f >= 0 && rule.factors[f].kind == FactorKind::Opaque)
          continue;
        if (f >= 0 && options.sequenceParallel == SequenceParallelMode::Off &&
            isToken[f])
          continue;
        choice[a] = f;
        rec(a + 1);
      }
      return;
    }
    // Axes per factor, in mesh order.
    SmallVector<SmallVector<StringAttr>> factorAxes(numFactors);
    SmallVector<int64_t> factorGroup(numFactors, 1);
    SmallVector<StringAttr> reductionAxes, unusedAxes;
    std::optional<ReductionKind> combiner;
    bool padded = false;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t f = choice[i];
      if (f < 0) {
        unusedAxes.push_back(axes[i].name);
        continue;
      }
      factorAxes[f].push_back(axes[i].name);
      factorGroup[f] *= axes[i].size;
      if (rule.factors[f].kind == FactorKind::Reduction) {
        if (combiner && *combiner != rule.factors[f].combiner)
          return;
        combiner = rule.factors[f].combiner;
        reductionAxes.push_back(axes[i].name);
      }
    }
    for (int64_t f = 0; f < numFactors; ++f) {
      if (factorGroup[f] == 1)
        continue;
      if (rule.factors[f].size < factorGroup[f])
        return;
      if (rule.factors[f].size % factorGroup[f] != 0) {
        if (!options.allowPadding || factorAxes[f].size() > 1 ||
            inMergedDim(f))
          return;
        padded = true;
      }
    }
    // Partial variants: a fill of an identity may leave unused axes partial,
    // and an op linear in its inputs (a sum of partial gradients) may read
    // every input as a pending sum over unused axes and produce the pending
    // sum of its results.
    SmallVector<SmallVector<StringAttr>> partialVariants = {{}};
    if (rule.identityOf && !unusedAxes.empty())
      partialVariants.push_back(unusedAxes);
    size_t linearVariant = partialVariants.size();
    if (linearInputs && reductionAxes.empty() && !unusedAxes.empty())
      partialVariants.push_back(unusedAxes);

    for (auto [variant, extraPartialAxes] : llvm::enumerate(partialVariants)) {
      ArrayRef<StringAttr> extraPartial = extraPartialAxes;
      bool linear = variant == linearVariant;
      Strategy s;
      SmallVector<StringAttr> partial(reductionAxes);
      llvm::append_range(partial, extraPartial);
      ReductionKind kind =
          combiner ? *combiner : rule.identityOf.value_or(ReductionKind::Sum);
      if (!extraPartial.empty() && combiner && *combiner != *rule.identityOf)
        continue;
      s.results.resize(op->getNumResults());
      for (auto [r, mapping] : llvm::enumerate(rule.results)) {
        if (!mapping)
          continue;
        s.results[r] = layoutOf(*mapping, factorAxes, partial, kind);
        if (!s.results[r])
          return;
        if (!allowedOnStream(op->getResult(r), s.results[r]))
          return;
      }
      double bytes = 0;
      for (Input &in : node.inputs) {
        LayoutAttr layout;
        if (in.slot < rule.operands.size() && rule.operands[in.slot]) {
          int64_t init = rule.initOf[in.slot];
          // (A linear op's init is not read: it stays whole.)
          bool partialInit = init >= 0 && !rule.identityOf && !linear;
          bool partialInput =
              linear && init < 0 &&
              cast<DestinationStyleOpInterface>(op).isDpsInput(
                  &op->getOpOperand(in.slot));
          layout = layoutOf(*rule.operands[in.slot], factorAxes,
                            partialInit || partialInput
                                ? ArrayRef<StringAttr>(partial)
                                : ArrayRef<StringAttr>(),
                            kind);
          if (!layout)
            return;
        } else {
          // Captured tensors follow the rule's gather mapping; anything else
          // is read whole.
          const auto *gather = llvm::find_if(rule.captured, [&](auto &c) {
            return c.first == in.value;
          });
          if (in.slot >= op->getNumOperands() &&
              gather != rule.captured.end()) {
            layout = layoutOf(gather->second, factorAxes, {}, kind);
            if (!layout)
              return;
          } else {
            layout = LayoutAttr::getReplicated(
                meshRef,
                cast<RankedTensorType>(in.value.getType()).getRank());
          }
        }
        s.inputs.push_back(layout);
        // An init is written, not read: fills fuse into their consumer
        // (beta = 0), and the result's bytes below count the write.
        bool isInit = in.slot < rule.initOf.size() && rule.initOf[in.slot] >= 0;
        if (!isInit)
          bytes += localBytes(in.value.getType(), layout);
      }
      for (auto [r, result] : llvm::enumerate(op->getResults())) {
        double b = localBytes(result.getType(), s.results[r]);
        bytes += b;
        if (!rule.viewLike)
          s.activationBytes += b;
      }
      double points = 1;
      for (int64_t f = 0; f < numFactors; ++f)
        points *= double(llvm::divideCeil(rule.factors[f].size, factorGroup[f]));
      // Fills are fused into their consumers (a GEMM with beta = 0, a
      // reduction's first iteration), so they cost nothing on their own.
      s.compute = rule.viewLike || rule.anyLayout || rule.identityOf
                      ? 0
                      : costModel.computeTime(
                            points * rule.opsPerPoint, bytes,
                            op->getNumResults() &&
                                isSixteenBit(op->getResult(0).getType()));
      s.padded = padded;
      // Description: "replicated" or "tp=f1(parallel 3072)" etc.
      SmallVector<std::string> parts;
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t f = choice[i];
        if (f < 0)
          continue;
        const Factor &factor = rule.factors[f];
        parts.push_back(llvm::formatv(
            "{0}=f{1}({2} {3})", axes[i].name.getValue(), f,
            factor.kind == FactorKind::Reduction
                ? "reduction " + stringifyReductionKind(factor.combiner).str()
                : std::string("parallel"),
            factor.size));
      }
      for (StringAttr a : extraPartial)
        parts.push_back(
            llvm::formatv("{0}=partial {1}{2}", a.getValue(),
                          stringifyReductionKind(kind),
                          linear ? " (linear)" : "")
                .str());
      s.description = parts.empty() ? "replicated" : llvm::join(parts, ", ");
      node.strategies.push_back(std::move(s));
    }
  };
  if (rule.anyLayout) {
    // Any layout of the (single) result, at no cost.
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    for (LayoutAttr layout : enumerateLayouts(type)) {
      Strategy s;
      s.results = {layout};
      for (Input &in : node.inputs)
        s.inputs.push_back(LayoutAttr::getReplicated(
            meshRef, cast<RankedTensorType>(in.value.getType()).getRank()));
      s.description = "free";
      node.strategies.push_back(std::move(s));
    }
    return;
  }
  rec(0);
}

void PlanBuilder::addResultNodes(func::ReturnOp ret) {
  for (OpOperand &operand : ret->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    unsigned i = operand.getOperandNumber();
    Node node;
    node.kind = NodeKind::Result;
    node.op = ret;
    node.index = i;
    node.inputs.push_back({operand.get(), 0});
    auto pinned = func.getResultAttrOfType<LayoutAttr>(
        i, TPDialect::getLayoutAttrName());
    bool isParam =
        func.getResultAttr(i, TPDialect::getParamAttrName()) != nullptr;
    // A training step's updated state (`tp.updates = A`) is free like a
    // parameter: the update is elementwise in argument A, which is consumed
    // in its stored layout, so the result costs nothing in that layout and
    // a collective in any other. (A hard tie, an edge from A to this node,
    // would span the whole step and defeat the layer-by-layer elimination;
    // run() checks the outcome instead.)
    bool updates = func.getResultAttrOfType<IntegerAttr>(
                       i, TPDialect::getUpdatesAttrName()) != nullptr;
    SmallVector<LayoutAttr> layouts;
    if (pinned)
      layouts = {pinned};
    else if (isParam || updates)
      layouts = enumerateLayouts(type);
    else
      layouts = {LayoutAttr::getReplicated(meshRef, type.getRank())};
    for (LayoutAttr layout : layouts) {
      Strategy s;
      s.inputs = {layout};
      s.description = pinned ? "pinned"
                      : updates ? "updates"
                                : (isParam ? "free" : "replicated");
      node.strategies.push_back(std::move(s));
    }
    nodes.push_back(std::move(node));
  }
}

LogicalResult PlanBuilder::buildNodes() {
  if (!func.getBody().hasOneBlock())
    return emitError(func.getLoc())
           << "tp-propagate supports functions with a single block; '"
           << func.getSymName() << "' has "
           << func.getBody().getBlocks().size();
  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments())
    addArgumentNode(arg);
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      addResultNodes(ret);
      continue;
    }
    // Scalar code (index arithmetic, scalar constants) is not planned.
    bool touchesTensors =
        llvm::any_of(op.getOperandTypes(), isTensor) ||
        llvm::any_of(op.getResultTypes(), isTensor);
    if (!touchesTensors) {
      bool capturesTensors = false;
      op.walk([&](Operation *inner) {
        capturesTensors |= llvm::any_of(inner->getOperandTypes(), isTensor);
      });
      if (!capturesTensors)
        continue;
    }
    addOpNode(&op);
  }
  return success();
}

/// Contradicting pins: a value pinned twice with different layouts, or an
/// argument pinned by `tp.layout` and a `tp.annotate` that disagree.
LogicalResult PlanBuilder::checkPins() {
  // A pin that splits a dimension its devices cannot share: fewer elements
  // than devices, or a remainder without padding (or over several axes).
  auto checkSplit = [&](LayoutAttr layout, RankedTensorType type,
                        auto emit) -> LogicalResult {
    if (!layout || !type)
      return success();
    for (int64_t d = 0; d < layout.getRank(); ++d) {
      SmallVector<StringAttr> axes = layout.getDimAxes(d);
      int64_t group = 1;
      for (StringAttr axis : axes)
        if (std::optional<int64_t> n = mesh.getAxisSize(axis.getValue()))
          group *= *n;
      int64_t size = type.getDimSize(d);
      if (group == 1 || ShapedType::isDynamic(size))
        continue;
      std::string why;
      if (size < group)
        why = "fewer elements than devices";
      else if (size % group != 0 && !options.allowPadding)
        why = "the devices do not divide it and allow-padding=false";
      else if (size % group != 0 && axes.size() > 1)
        why = "the devices do not divide it (padding covers one axis only)";
      if (!why.empty())
        return emit() << "pinned layout " << layout << " splits dimension "
                      << d << " of size " << size << " over " << group
                      << " devices: " << why;
    }
    return success();
  };
  for (BlockArgument arg : func.getArguments()) {
    auto pinned = func.getArgAttrOfType<LayoutAttr>(
        arg.getArgNumber(), TPDialect::getLayoutAttrName());
    if (failed(checkSplit(pinned, dyn_cast<RankedTensorType>(arg.getType()),
                          [&] {
                            return emitError(func.getLoc())
                                   << "argument #" << arg.getArgNumber()
                                   << ": ";
                          })))
      return failure();
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto pinned = func.getResultAttrOfType<LayoutAttr>(
        i, TPDialect::getLayoutAttrName());
    if (failed(checkSplit(
            pinned, dyn_cast<RankedTensorType>(func.getResultTypes()[i]),
            [&] { return emitError(func.getLoc()) << "result #" << i << ": "; })))
      return failure();
  }
  for (AnnotateOp annotate : func.getOps<AnnotateOp>())
    if (failed(checkSplit(annotate.getLayout(),
                          dyn_cast<RankedTensorType>(annotate.getType()),
                          [&] { return annotate.emitError(); })))
      return failure();

  DenseMap<Value, AnnotateOp> firstPin;
  for (AnnotateOp annotate : func.getOps<AnnotateOp>()) {
    Value v = annotate.getInput();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto pinned = func.getArgAttrOfType<LayoutAttr>(
          arg.getArgNumber(), TPDialect::getLayoutAttrName());
      if (pinned && pinned != annotate.getLayout())
        return annotate.emitError()
               << "pin " << annotate.getLayout() << " contradicts the layout "
               << pinned << " of argument #" << arg.getArgNumber();
    }
    auto [it, inserted] = firstPin.try_emplace(v, annotate);
    if (!inserted && it->second.getLayout() != annotate.getLayout()) {
      InFlightDiagnostic diag = annotate.emitError()
                                << "pin " << annotate.getLayout()
                                << " contradicts an earlier pin of the same "
                                   "value";
      diag.attachNote(it->second.getLoc())
          << "earlier pin " << it->second.getLayout();
      return diag;
    }
  }
  // A pin the producer cannot produce.
  for (AnnotateOp annotate : func.getOps<AnnotateOp>()) {
    std::pair<int, unsigned> def = producer.lookup(annotate.getInput());
    const Node &node = nodes[def.first];
    unsigned result = def.second;
    bool producible = llvm::any_of(node.strategies, [&](const Strategy &s) {
      return s.results[result] == annotate.getLayout();
    });
    if (!producible) {
      InFlightDiagnostic diag = annotate.emitError()
                                << "pinned layout " << annotate.getLayout()
                                << " cannot be produced by "
                                << describeValue(annotate.getInput());
      if (Operation *def = annotate.getInput().getDefiningOp())
        diag.attachNote(def->getLoc()) << "produced here";
      return diag;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Token factors (sequence parallelism on/off)
//===----------------------------------------------------------------------===//

void PlanBuilder::computeTokenClasses() {
  Block &block = func.getBody().front();
  auto key = [](Value v, int64_t d) {
    return DimKey{v.getAsOpaquePointer(), d};
  };
  auto ensure = [&](Value v) {
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      for (int64_t d = 0; d < t.getRank(); ++d)
        dimClasses.insert(key(v, d));
  };
  for (BlockArgument arg : block.getArguments())
    ensure(arg);
  for (Operation &op : block) {
    for (Value r : op.getResults())
      ensure(r);
    for (Value o : op.getOperands())
      ensure(o);
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      auto t = cast<RankedTensorType>(annotate.getType());
      for (int64_t d = 0; d < t.getRank(); ++d)
        dimClasses.unionSets(key(annotate.getInput(), d),
                             key(annotate.getResult(), d));
      continue;
    }
    FailureOr<ShardingRule> rule = getShardingRule(&op, nullptr);
    if (failed(rule))
      continue;
    // Tensor dimensions whose major factor is the same are one class.
    DenseMap<int64_t, DimKey> first;
    auto visit = [&](Value v, const TensorFactors &dims) {
      for (auto [d, fs] : llvm::enumerate(dims)) {
        for (int64_t f : fs) {
          if (rule->factors[f].size <= 1)
            continue;
          auto [it, inserted] = first.try_emplace(f, key(v, d));
          if (!inserted)
            dimClasses.unionSets(it->second, key(v, d));
          break; // the major factor only
        }
      }
    };
    for (auto [i, m] : llvm::enumerate(rule->operands))
      if (m)
        visit(op.getOperand(i), *m);
    for (auto [i, m] : llvm::enumerate(rule->results))
      if (m)
        visit(op.getResult(i), *m);
  }
  DenseSet<DimKey> inputLeaders, paramLeaders;
  for (BlockArgument arg : block.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t)
      continue;
    bool isParam = func.getArgAttr(arg.getArgNumber(),
                                   TPDialect::getParamAttrName()) != nullptr;
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (t.getDimSize(d) == 1)
        continue;
      DimKey leader = dimClasses.getLeaderValue(key(arg, d));
      (isParam ? paramLeaders : inputLeaders).insert(leader);
    }
  }
  for (DimKey leader : inputLeaders)
    if (!paramLeaders.contains(leader))
      tokenLeaders.insert(leader);
}

/// The residual stream: the non-parameter inputs and gathered embeddings,
/// and every elementwise, parameter-free result of the same shape computed
/// from a stream value (residual additions). Sequence parallelism is about
/// the layout of exactly these values.
void PlanBuilder::computeResidualStream() {
  Block &block = func.getBody().front();
  auto isParam = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &block &&
           func.getArgAttr(arg.getArgNumber(), TPDialect::getParamAttrName());
  };
  for (BlockArgument arg : block.getArguments())
    if (isa<RankedTensorType>(arg.getType()) && !isParam(arg))
      residualStream.insert(arg);
  for (Operation &op : block) {
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      if (residualStream.contains(annotate.getInput()))
        residualStream.insert(annotate.getResult());
      continue;
    }
    bool gathers = false;
    for (Region &region : op.getRegions())
      region.walk([&](tensor::ExtractOp extract) {
        gathers |= !op.isAncestor(
            extract.getTensor().getParentRegion()->getParentOp());
      });
    if (gathers) {
      for (Value r : op.getResults())
        residualStream.insert(r);
      continue;
    }
    bool elementwise = op.hasTrait<OpTrait::Elementwise>();
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      elementwise = linalgOp.getNumReductionLoops() == 0 &&
                    !isa<linalg::FillOp>(op);
    if (!elementwise || llvm::any_of(op.getOperands(), isParam))
      continue;
    for (Value r : op.getResults())
      if (llvm::any_of(op.getOperands(), [&](Value o) {
            return residualStream.contains(o) && o.getType() == r.getType();
          }))
        residualStream.insert(r);
  }
}

bool PlanBuilder::allowedOnStream(Value value, LayoutAttr layout) {
  if (options.sequenceParallel == SequenceParallelMode::Auto ||
      !residualStream.contains(value))
    return true;
  if (options.sequenceParallel == SequenceParallelMode::Off)
    return layout.isReplicated();
  // On: every axis that can split one of the value's token dimensions does.
  auto type = cast<RankedTensorType>(value.getType());
  for (const Axis &axis : axes) {
    bool canSplit = false;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      DimKey key{value.getAsOpaquePointer(), d};
      if (dimClasses.contains(key) &&
          tokenLeaders.contains(dimClasses.getLeaderValue(key)) &&
          !type.isDynamicDim(d) && type.getDimSize(d) % axis.size == 0)
        canSplit = true;
    }
    if (!canSplit)
      continue;
    int64_t d = layout.getDimOfAxis(axis.name.getValue());
    if (d < 0)
      return false;
    DimKey key{value.getAsOpaquePointer(), d};
    if (!dimClasses.contains(key) ||
        !tokenLeaders.contains(dimClasses.getLeaderValue(key)))
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Elimination order: layers first, the values between layers last
//===----------------------------------------------------------------------===//

/// Finds the *cuts* of the dataflow: nodes that every path from the inputs
/// to the outputs crosses (the residual stream between sub-blocks). Nodes
/// inside the segments between cuts go to elimination group 0, the cuts to
/// groups 1, 2, ... in program order, and leaves (weights) used by several
/// segments (a tied embedding) to the last group. Eliminating in this order
/// is a chain dynamic programme over the cuts whose steps are the segments,
/// so a front of (cost, memory) pairs grows with the number of layers only
/// at the cuts, never inside a layer.
std::vector<int>
PlanBuilder::eliminationGroups(const AssignmentProblem &problem,
                               ArrayRef<std::pair<int, int>> dataflow) {
  int n = problem.numNodes();
  std::vector<std::vector<int>> succ(n), pred(n);
  for (auto [a, b] : dataflow) {
    succ[a].push_back(b);
    pred[b].push_back(a);
  }
  // Program positions: arguments first, then ops in order, results last; a
  // fan-out node sits right after its producer.
  std::vector<double> position(n, 0);
  DenseMap<Operation *, int> opIndex;
  int index = 0;
  for (Operation &op : func.getBody().front())
    opIndex[&op] = index++;
  for (int i = 0, e = nodes.size(); i < e; ++i) {
    const Node &node = nodes[i];
    if (node.kind == NodeKind::Argument)
      position[i] = -1.0 - 1e-3 * (func.getNumArguments() - node.index);
    else if (node.kind == NodeKind::Result)
      position[i] = index + 1e-3 * node.index;
    else
      position[i] = opIndex.lookup(node.op);
  }
  for (int i = nodes.size(); i < n; ++i)
    position[i] = pred[i].empty() ? 0 : position[pred[i].front()] + 0.5;

  // Data nodes: reachable from a non-parameter argument.
  std::vector<bool> data(n, false);
  std::vector<int> work;
  for (int i = 0, e = nodes.size(); i < e; ++i)
    if (nodes[i].kind == NodeKind::Argument && !paramNodes.contains(i)) {
      data[i] = true;
      work.push_back(i);
    }
  while (!work.empty()) {
    int x = work.back();
    work.pop_back();
    for (int y : succ[x])
      if (!data[y]) {
        data[y] = true;
        work.push_back(y);
      }
  }
  std::vector<int> order;
  for (int i = 0; i < n; ++i)
    if (data[i])
      order.push_back(i);
  llvm::sort(order, [&](int a, int b) {
    return std::make_pair(position[a], a) < std::make_pair(position[b], b);
  });

  std::vector<int> group(n, 0);
  std::vector<int> segment(n, 0);
  double reach = -1e300;
  int cuts = 0;
  for (int x : order) {
    if (reach <= position[x])
      group[x] = 1 + cuts++;
    segment[x] = cuts;
    for (int y : succ[x])
      if (data[y])
        reach = std::max(reach, position[y]);
  }
  // Leaves shared by several segments are eliminated last.
  for (int i = 0; i < n; ++i) {
    if (data[i])
      continue;
    llvm::SmallDenseSet<int> segments;
    std::vector<int> stack{i};
    llvm::DenseSet<int> seen;
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      for (int y : succ[x]) {
        if (data[y])
          segments.insert(segment[y]);
        else if (seen.insert(y).second)
          stack.push_back(y);
      }
    }
    if (segments.size() > 1)
      group[i] = cuts + 1;
  }
  return group;
}

void PlanBuilder::explainReplicated() {
  for (const Axis &axis : axes) {
    std::map<int64_t, int64_t> opsBySize;
    for (const PlannedOp &p : plan.ops) {
      if (p.strategy != "replicated" || p.computeTime == 0)
        continue;
      FailureOr<ShardingRule> rule = getShardingRule(p.op, nullptr);
      if (failed(rule) || rule->viewLike)
        continue;
      std::set<int64_t> sizes;
      for (const Factor &f : rule->factors)
        if (f.kind != FactorKind::Opaque && f.size > 1 && f.size % axis.size)
          sizes.insert(f.size);
      // Only where no factor could be split evenly: the op is replicated
      // for lack of a divisible factor, not by choice.
      bool anyEven = llvm::any_of(rule->factors, [&](const Factor &f) {
        return f.kind != FactorKind::Opaque && f.size > 1 &&
               f.size % axis.size == 0;
      });
      for (int64_t size : sizes)
        if (!anyEven || size < axis.size * 4)
          ++opsBySize[size];
    }
    if (opsBySize.empty())
      continue;
    SmallVector<std::string> parts;
    for (auto [size, count] : opsBySize)
      parts.push_back(llvm::formatv("{0} ({1} ops)", size, count));
    std::string remark = llvm::formatv(
        "mesh axis \"{0}\" ({1}) does not divide factors of size {2} "
        "(heads, kv heads, ...): the ops they index run replicated",
        axis.name.getValue(), axis.size, llvm::join(parts, ", "));
    emitRemark(func.getLoc()) << remark;
    plan.remarks.push_back(remark);
  }
}

//===----------------------------------------------------------------------===//
// Phases 2-5
//===----------------------------------------------------------------------===//

double PlanBuilder::memoryBudget() {
  if (options.unconstrained)
    return kInf;
  if (options.absoluteBudget)
    return *options.absoluteBudget;
  // Parameters may be split over every axis not used to pin a non-parameter
  // argument (those are data axes).
  DenseSet<StringAttr> dataAxes;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (func.getArgAttr(i, TPDialect::getParamAttrName()))
      continue;
    if (auto pinned = func.getArgAttrOfType<LayoutAttr>(
            i, TPDialect::getLayoutAttrName()))
      for (StringAttr a : pinned.getUsedAxes())
        dataAxes.insert(a);
  }
  paramDevices = 1;
  for (const Axis &axis : axes)
    if (!dataAxes.contains(axis.name))
      paramDevices *= axis.size;
  if (totalParamBytes == 0)
    return kInf;
  return options.paramShareFactor * totalParamBytes / paramDevices;
}

FailureOr<Plan> PlanBuilder::run() {
  auto start = std::chrono::steady_clock::now();
  plan.mesh = mesh;
  plan.func = func;
  if (func.getBody().hasOneBlock()) {
    // Phase 0: results nobody reads are dropped (torch-mlir's max is an
    // argmax whose index output a cross-entropy never uses, and a reduction
    // with such an output has no plain combiner to split by); cheap values
    // shared by several consumers get one copy each.
    SmallVector<Operation *> partlyDead;
    for (auto generic : func.getBody().front().getOps<linalg::GenericOp>())
      if (generic->getNumResults() > 1 &&
          llvm::any_of(generic->getResults(),
                       [](Value r) { return r.use_empty(); }))
        partlyDead.push_back(generic);
    if (!partlyDead.empty()) {
      RewritePatternSet patterns(func.getContext());
      linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
      GreedyRewriteConfig config;
      config.enableFolding(false);
      config.setStrictness(GreedyRewriteStrictness::ExistingOps);
      (void)applyOpPatternsGreedily(partlyDead, std::move(patterns), config);
    }
    int64_t numOps = func.getBody().front().getOperations().size();
    RematerializeStats remat = rematerializeSharedValues(
        func, options.largeConstantBytes, 4 * numOps + 1000);
    plan.rematerialized = remat.clones;
    if (remat.leftShared)
      plan.remarks.push_back(llvm::formatv(
          "{0} cheap shared values stay shared (clone limit reached)",
          remat.leftShared));
    if (options.splitFusedParams) {
      FusedParamStats fused = splitFusedParameters(func);
      plan.fusedParamsSplit = fused.paramsSplit;
      if (fused.paramsSplit)
        plan.remarks.push_back(llvm::formatv(
            "{0} fused weights split into {1} pieces (tp.source)",
            fused.paramsSplit, fused.pieces));
    }
    computeTokenClasses();
    computeResidualStream();
  }
  if (failed(buildNodes()) || failed(checkPins()))
    return failure();

  AssignmentProblem problem;
  double budget = memoryBudget();
  problem.memoryBudget = budget;
  bool countActivations = options.absoluteBudget.has_value();
  for (const Node &node : nodes) {
    std::vector<double> cost, memory;
    for (const Strategy &s : node.strategies) {
      cost.push_back(s.compute);
      memory.push_back(s.paramBytes +
                       (countActivations ? s.activationBytes : 0));
    }
    problem.addNode(cost, memory);
    plan.numStrategies += node.strategies.size();
  }
  plan.numNodes = nodes.size();

  // Edges. A value with one use joins producer and consumer directly. A
  // value with several uses goes through a fan-out node whose choice is a
  // pair (P, L): the producer gives P, and one resharding to L is shared by
  // every consumer that wants L; consumers wanting P read it as is, any
  // other pays its own resharding from P. (The partitioner inserts one
  // collective per use and CSE merges identical ones, which matches.)
  llvm::MapVector<Value, SmallVector<std::pair<int, Input>>> uses;
  for (int v = 0, e = nodes.size(); v < e; ++v)
    for (const Input &in : nodes[v].inputs)
      if (producer.count(in.value))
        uses[in.value].push_back({v, in});
  std::map<std::pair<int, int>, std::vector<double>> edgeCosts;
  std::vector<std::pair<int, int>> dataflow; // producer -> consumer
  auto addToEdge = [&](int a, int b, size_t rows, size_t cols,
                       llvm::function_ref<double(size_t, size_t)> cost) {
    dataflow.push_back({a, b});
    std::vector<double> &table = edgeCosts[{a, b}];
    if (table.empty())
      table.assign(rows * cols, 0);
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < cols; ++j)
        table[i * cols + j] += cost(i, j);
  };
  for (auto &entry : uses) {
    Value value = entry.first;
    SmallVector<std::pair<int, Input>> &valueUses = entry.second;
    auto [u, result] = producer.lookup(value);
    const Node &prod = nodes[u];
    // Parameters are consumed as stored unless asked otherwise.
    bool paramExact = !options.reshardParams && paramNodes.contains(u);
    unsigned resultIndex = result;
    auto resultOf = [&](size_t a) {
      return prod.strategies[a].results[resultIndex];
    };
    auto price = [&](LayoutAttr from, LayoutAttr to, bool exact) {
      if (from == to)
        return 0.0;
      return exact ? kInf : reshardTime(from, to, value);
    };
    llvm::SetVector<LayoutAttr> produced, wanted;
    for (size_t a = 0; a < prod.strategies.size(); ++a)
      produced.insert(resultOf(a));
    for (auto &[v, in] : valueUses)
      for (const Strategy &st : nodes[v].strategies)
        wanted.insert(st.inputs[in.slot]);
    // One use, or one produced layout from which every wanted layout is a
    // free slice (a replicated input read by every layer): nothing to share,
    // each use gets its own edge (a fan-out node would join the consumers).
    bool freeFromOne =
        produced.size() == 1 && llvm::all_of(wanted, [&](LayoutAttr l) {
          return price(produced.front(), l, paramExact) == 0.0;
        });
    if (valueUses.size() == 1 || freeFromOne) {
      for (auto &[v, in] : valueUses) {
        const Node &consumer = nodes[v];
        addToEdge(u, v, prod.strategies.size(), consumer.strategies.size(),
                  [&, in = in](size_t a, size_t b) {
                    return price(resultOf(a),
                                 consumer.strategies[b].inputs[in.slot],
                                 in.exact || paramExact);
                  });
      }
      continue;
    }
    FanOut fan;
    fan.value = value;
    for (LayoutAttr p : produced) {
      fan.choices.push_back({p, p});
      for (LayoutAttr l : wanted)
        if (l != p && !paramExact)
          fan.choices.push_back({p, l});
    }
    std::vector<double> zero(fan.choices.size(), 0.0);
    int f = problem.addNode(zero, zero);
    fan.node = f;
    addToEdge(u, f, prod.strategies.size(), fan.choices.size(),
              [&](size_t a, size_t c) {
                auto [p, l] = fan.choices[c];
                return resultOf(a) == p ? price(p, l, false) : kInf;
              });
    for (auto &[v, in] : valueUses) {
      const Node &consumer = nodes[v];
      bool exact = in.exact || paramExact;
      addToEdge(f, v, fan.choices.size(), consumer.strategies.size(),
                [&, in = in](size_t c, size_t b) {
                  auto [p, l] = fan.choices[c];
                  LayoutAttr want = consumer.strategies[b].inputs[in.slot];
                  if (want == p || want == l)
                    return want == p || !exact ? 0.0 : kInf;
                  return price(p, want, exact);
                });
    }
    fanOuts.push_back(std::move(fan));
  }
  for (auto &[pair, table] : edgeCosts)
    problem.addEdge(pair.first, pair.second, std::move(table));

  SolverOptions solverOptions;
  solverOptions.eliminationGroup = eliminationGroups(problem, dataflow);
  AssignmentSolution solution = solveExact(problem, solverOptions);
  plan.exact = solution.exact;
  plan.solverWidth = solution.width;
  plan.largestFront = solution.largestFront;
  if (!solution.feasible) {
    InFlightDiagnostic diag = emitError(func.getLoc())
                              << "no layout assignment of '"
                              << func.getSymName() << "' satisfies the pins";
    if (budget != kInf)
      diag << " within the memory budget of " << llvm::formatv("{0:F0}", budget)
           << " bytes per device (parameters need "
           << llvm::formatv("{0:F0}", totalParamBytes) << " bytes in all)";
    if (!solution.exact)
      diag << "; the search gave up (elimination width too large)";
    if (budget != kInf) {
      // The least the parameters can take per device, each in its
      // smallest layout (pins and shapes permitting): what a budget must
      // at least allow.
      double least = 0;
      for (int i : paramNodes) {
        double smallest = kInf;
        for (const Strategy &s : nodes[i].strategies)
          smallest = std::min(smallest, s.paramBytes);
        if (smallest != kInf)
          least += smallest;
      }
      diag.attachNote(func.getLoc())
          << "the parameters take at least "
          << llvm::formatv("{0:F0}", least)
          << " bytes per device in their smallest layouts; allow more with "
             "param-share=F, memory-budget=BYTES or memory-budget=none";
    }
    return diag;
  }

  // Phase 5: the plan.
  plan.argLayouts.assign(func.getNumArguments(), nullptr);
  plan.resultLayouts.assign(func.getNumResults(), nullptr);
  PlanTotals &totals = plan.totals;
  totals.memoryBudget = budget == kInf ? 0 : budget;
  totals.paramBytesTotal = totalParamBytes;
  for (int n = 0, e = nodes.size(); n < e; ++n) {
    const Node &node = nodes[n];
    const Strategy &s = node.strategies[solution.choice[n]];
    totals.computeTime += s.compute;
    totals.paramBytesPerDevice += s.paramBytes;
    totals.activationBytesAllPerDevice += s.activationBytes;
    switch (node.kind) {
    case NodeKind::Argument:
      plan.argLayouts[node.index] = s.results[0];
      if (s.padded)
        plan.remarks.push_back(llvm::formatv(
            "argument #{0} is split unevenly and padded", node.index));
      break;
    case NodeKind::Result:
      plan.resultLayouts[node.index] = s.inputs[0];
      break;
    case NodeKind::Op: {
      PlannedOp planned;
      planned.op = node.op;
      planned.operandLayouts.assign(node.op->getNumOperands(), nullptr);
      for (unsigned i = 0; i < node.op->getNumOperands(); ++i)
        if (i < s.inputs.size())
          planned.operandLayouts[i] = s.inputs[i];
      for (unsigned i = node.op->getNumOperands(); i < s.inputs.size(); ++i)
        planned.capturedLayouts.push_back(s.inputs[i]);
      planned.resultLayouts = s.results;
      planned.strategy = s.description;
      planned.computeTime = s.compute;
      planned.padded = s.padded;
      plan.ops.push_back(std::move(planned));
      break;
    }
    }
  }

  // Reshardings, in the order of the uses.
  DenseMap<Value, const FanOut *> fanOf;
  for (const FanOut &fan : fanOuts)
    fanOf[fan.value] = &fan;
  DenseSet<std::pair<Value, LayoutAttr>> shared;
  for (int n = 0, e = nodes.size(); n < e; ++n) {
    const Node &node = nodes[n];
    const Strategy &s = node.strategies[solution.choice[n]];
    for (const Input &in : node.inputs) {
      auto [u, result] = producer.lookup(in.value);
      LayoutAttr from =
          nodes[u].strategies[solution.choice[u]].results[result];
      LayoutAttr to = s.inputs[in.slot];
      if (from == to)
        continue;
      if (const FanOut *fan = fanOf.lookup(in.value)) {
        // The shared resharding is counted once.
        LayoutAttr sharedTarget = fan->choices[solution.choice[fan->node]].second;
        if (to == sharedTarget && !shared.insert({in.value, to}).second)
          continue;
      }
      auto type = cast<RankedTensorType>(in.value.getType());
      PlannedReshard r;
      r.consumer = node.op;
      r.operandNumber = node.kind == NodeKind::Result ? node.index : in.slot;
      r.value = in.value;
      r.from = from;
      r.to = to;
      r.steps = *planReshard(from, to, type.getShape(), mesh);
      int64_t elementBytes = getElementBytes(type.getElementType());
      for (const CollectiveStep &step : r.steps) {
        r.time += costModel.collectiveTime(step, elementBytes);
        r.wireBytes += costModel.collectiveWireBytes(step, elementBytes);
        r.messageBytes += costModel.collectiveMessageBytes(step, elementBytes);
        if (step.kind != CollectiveKind::Slice &&
            step.kind != CollectiveKind::MakePartial)
          ++totals.numCollectives;
      }
      totals.communicationTime += r.time;
      totals.wireBytes += r.wireBytes;
      totals.messageBytes += r.messageBytes;
      plan.reshards.push_back(std::move(r));
    }
  }
  totals.stepTime = totals.computeTime + totals.communicationTime;
  explainReplicated();

  // A result that updates an argument in another layout cannot replace it
  // on the next step without a collective (tp-runner refuses the model).
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    auto index = func.getResultAttrOfType<IntegerAttr>(
        r, TPDialect::getUpdatesAttrName());
    if (!index || index.getInt() < 0 ||
        index.getInt() >= int64_t(plan.argLayouts.size()))
      continue;
    LayoutAttr argLayout = plan.argLayouts[index.getInt()];
    if (plan.resultLayouts[r] && argLayout && plan.resultLayouts[r] != argLayout)
      plan.remarks.push_back(llvm::formatv(
          "result #{0} updates argument #{1} but is produced in another "
          "layout than the argument's",
          r, index.getInt()));
  }

  // Peak activation bytes per device along program order: a value lives
  // from its definition to its last use; reshapes alias their operand.
  {
    DenseMap<Value, double> liveBytes;
    DenseMap<Operation *, SmallVector<Value>> dies;
    DenseMap<Operation *, const PlannedOp *> planned;
    for (const PlannedOp &p : plan.ops)
      planned[p.op] = &p;
    Block &block = func.getBody().front();
    for (Operation &op : block)
      for (Value r : op.getResults()) {
        Operation *last = nullptr;
        for (Operation *user : r.getUsers()) {
          Operation *top = block.findAncestorOpInBlock(*user);
          if (top && (!last || last->isBeforeInBlock(top)))
            last = top;
        }
        if (last)
          dies[last].push_back(r);
      }
    double live = 0, peak = 0;
    for (Operation &op : block) {
      auto it = planned.find(&op);
      if (it != planned.end()) {
        std::string reason;
        FailureOr<ShardingRule> rule = getShardingRule(&op, nullptr);
        bool aliasing = succeeded(rule) && rule->viewLike;
        if (!aliasing && !isa<AnnotateOp>(op))
          for (auto [r, result] : llvm::enumerate(op.getResults())) {
            double b = localBytes(result.getType(), it->second->resultLayouts[r]);
            liveBytes[result] = b;
            live += b;
          }
      }
      peak = std::max(peak, live);
      for (Value v : dies.lookup(&op)) {
        live -= liveBytes.lookup(v);
        liveBytes.erase(v);
      }
    }
    totals.activationBytesPerDevice = peak;
  }

  plan.planSeconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return plan;
}

FailureOr<Plan> mlir::tp::planFunction(func::FuncOp func, MeshOp mesh,
                                       const PlannerOptions &options) {
  return PlanBuilder(func, mesh, options).run();
}

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
  report["solver"] = Object{{"exact", plan.exact},
                            {"rematerialized", plan.rematerialized},
                            {"fused_params_split", plan.fusedParamsSplit},
                            {"nodes", plan.numNodes},
                            {"strategies", plan.numStrategies},
                            {"width", plan.solverWidth},
                            {"largest_front", plan.largestFront},
                            {"seconds", plan.planSeconds}};
  return report;
}
