//===- PlanBuilder.h - the planner's state, shared by its files -*- C++ -*-===//
//
// The planner (Planner.cpp opens with its phases) is one class whose methods
// live in files by concept: Planner.cpp (phase 0, the helpers, phases 3-5),
// PlannerNodes.cpp (phase 1: nodes and their strategies), PlannerEdges.cpp
// (phase 2: edge tables, reshard costs, fan-outs), PlannerSequence.cpp
// (token factors and the residual stream, for sequence parallelism),
// PlannerOrder.cpp (the elimination order) and PlanReport.cpp (writing the
// plan into the IR, and the JSON report). Internal to lib/Analysis.
//
//===----------------------------------------------------------------------===//

#ifndef TP_LIB_ANALYSIS_PLANBUILDER_H
#define TP_LIB_ANALYSIS_PLANBUILDER_H

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
#include "mlir/Interfaces/CallInterfaces.h"
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

namespace mlir::tp::detail {

constexpr double kInf = AssignmentProblem::kInfinity;
/// Fan-out nodes are pairs (produced layout, shared target): beyond this
/// many the search relaxes them (PlanBuilder::RelaxedFanOut). Meshes of one
/// and two axes stay below it (576 pairs at most on tp-gen's models).
constexpr size_t kMaxFanOutChoices = 1024;
/// The edge tables of one function may hold at most this many entries
/// (8 bytes each): beyond it the planner refuses with the number rather
/// than exhaust memory (search-axes=0 on a mesh of four axes or more).
constexpr double kMaxTableEntries = double(int64_t(1) << 24);

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
  /// An op without a sharding rule: it reads its inputs whole, parameters
  /// included (gathered when they are stored split).
  bool noRule = false;
};

/// Union-find over tensor dimensions (value, dim), to find token factors.
using DimKey = std::pair<void *, int64_t>;

class PlanBuilder {
public:
  PlanBuilder(func::FuncOp func, MeshOp mesh, const PlannerOptions &options)
      : func(func), mesh(mesh), options(options),
        costModel(options.device), meshRef(FlatSymbolRefAttr::get(
                                       mesh.getSymNameAttr())) {
    for (auto [index, entry] : llvm::enumerate(
             llvm::zip(mesh.getAxisNames(), mesh.getShape()))) {
      auto [name, size] = entry;
      meshIndex[cast<StringAttr>(name)] = index;
      if (size > 1)
        axes.push_back({cast<StringAttr>(name), size, {cast<StringAttr>(name)}});
    }
  }

  FailureOr<Plan> run();

private:
  /// A mesh axis of the search: one mesh axis, or a group of mesh axes
  /// that always split the same factor (groupAxes), of their product size.
  /// `name` is the first member.
  struct Axis {
    StringAttr name;
    int64_t size;
    SmallVector<StringAttr, 1> members;
  };
  /// `axis "tp"`, or `axes "tp" x "x"` for a group.
  std::string axisLabel(const Axis &axis) const;
  /// Sorts mesh axis names into mesh order.
  void sortByMesh(SmallVectorImpl<StringAttr> &names) const;
  /// On a mesh of more than maxSearchAxes axes (of size > 1), the axes that
  /// pin no input are grouped so that the search has at most that many
  /// (data axes stay on their own): a restriction of the space, stated in
  /// a remark.
  void groupAxes();
  /// Axes that pin a non-parameter argument (data axes).
  DenseSet<StringAttr> getDataAxes();

  LogicalResult buildNodes();
  void addArgumentNode(BlockArgument arg);
  void addOpNode(Operation *op);
  void addResultNodes(func::ReturnOp ret);
  /// Adds the op node about to be `nodes.size()` to weightViewNodes when
  /// it computes from weights alone without reducing.
  void markWeightView(const Node &node);
  LogicalResult checkPins();
  /// A call to a function whose boundary is planned (not whole values).
  LogicalResult checkCall(Operation *op);
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
  /// Whether `from` -> `to` needs no communication (slices only).
  bool isLocalReshard(LayoutAttr from, LayoutAttr to, Value value);
  double memoryBudget();
  std::vector<std::pair<int, int>> buildEdges(AssignmentProblem &problem);
  std::vector<int>
  eliminationGroups(const AssignmentProblem &problem,
                    ArrayRef<std::pair<int, int>> dataflow);
  LayoutAttr producedLayout(Value value, int node, int strategy);
  /// Program-order live intervals of the op nodes' results, and the peak
  /// of live activation bytes under a choice (its bytes and point).
  void computeLiveIntervals();
  std::pair<double, int> activationPeak(const std::vector<int> &choice) const;
  /// A warning (and a remark) when the plan's parameters and peak of live
  /// activations per device exceed the device's memory, naming the largest
  /// activation live at the peak `point` and its size.
  void checkDeviceMemory(const std::vector<int> &choice, int point);
  /// solveExact under an absolute budget on parameters plus the liveness
  /// peak, by constraint generation (PlannerMemory.cpp).
  AssignmentSolution solveWithLiveness(AssignmentProblem &problem,
                                       const SolverOptions &options,
                                       double budget);
  /// The error for a problem without a feasible assignment: the budget or
  /// the pins to blame, the pins and the ops without a rule as notes.
  LogicalResult reportInfeasible(const AssignmentProblem &problem,
                                 const AssignmentSolution &solution,
                                 const SolverOptions &solverOptions);
  /// A remark naming the factor sizes that kept ops replicated because a
  /// mesh axis does not divide them (12 heads over 8 devices).
  void explainReplicated();

  func::FuncOp func;
  MeshOp mesh;
  const PlannerOptions &options;
  CostModel costModel;
  FlatSymbolRefAttr meshRef;
  SmallVector<Axis> axes;
  DenseMap<StringAttr, unsigned> meshIndex;
  /// The groups groupAxes formed (empty: every axis searched on its own).
  SmallVector<SmallVector<StringAttr, 1>> axisGroups;

  std::vector<Node> nodes;
  DenseMap<Value, std::pair<int, unsigned>> producer; // value -> node, result
  Plan plan;

  llvm::EquivalenceClasses<DimKey> dimClasses;
  DenseSet<DimKey> tokenLeaders;
  /// Per data axis (one that pins a non-parameter argument, when the mesh
  /// also has other axes): the classes of the dimensions it pins.
  DenseMap<StringAttr, DenseSet<DimKey>> dataLeaders;
  DenseSet<Value> residualStream;
  std::map<std::tuple<const void *, const void *, const void *>, double>
      reshardCache;
  double totalParamBytes = 0;
  /// Per node: first and last program point its results live (-1 for
  /// nodes that are not ops); the number of points.
  std::vector<int> liveFirst, liveLast;
  int numPoints = 0;
  int livenessRounds = 0;
  size_t livenessPoints = 0;
  bool livenessConservative = false;
  int64_t paramDevices = 1;
  DenseSet<int> paramNodes; // nodes of parameters and constant weights
  /// Op nodes whose results are computed from weights alone, element by
  /// element (a transposed or reshaped weight, `1 + w`): by default they,
  /// like the weights, are never moved between devices (a gathered
  /// transposed table is a gathered weight), only sliced.
  DenseSet<int> weightViewNodes;
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
  /// A value with several uses whose fan-out node would have more than
  /// kMaxFanOutChoices choices: its uses are joined to the producer
  /// directly, each paying its resharding divided by the number of uses
  /// that can want the same layout (a lower bound on the merged
  /// reshardings the partitioner emits, which trueFanOutCost prices).
  struct RelaxedFanOut {
    Value value;
    int node;
    unsigned result;
    SmallVector<std::pair<int, unsigned>> uses; // consumer node, slot
    /// Per layout: the uses that can want it (exact uses excluded).
    DenseMap<LayoutAttr, int> wanters;
  };
  std::vector<RelaxedFanOut> relaxedFanOuts;
  /// Entries of the edge tables built so far (kMaxTableEntries).
  double tableEntries = 0;
  /// Under `choice`: what the relaxed fan-outs' edges charged, and what
  /// their reshardings cost once each distinct one is emitted once.
  std::pair<double, double> relaxedFanOutCosts(const std::vector<int> &choice);
  /// A result that updates argument A (`tp.updates`) leaves in A's stored
  /// layout, since the runner swaps the two buffers between steps. The
  /// search prices that layout at no cost and any other at a collective,
  /// without a hard tie (PlannerNodes.cpp), so a plan the search could not
  /// prove optimal may leave it elsewhere: such results (leaves, only their
  /// incoming resharding changes) are moved to A's layout, and the
  /// solution's cost, exactness and gap follow.
  void tieUpdatedResults(const AssignmentProblem &problem,
                         AssignmentSolution &solution);
};

bool isSixteenBit(Type type);
/// Whether `op` computes at a 16-bit peak: a 16-bit result, or a
/// contraction of 16-bit operands (bf16 x bf16 into an f32 accumulator is
/// a 16-bit GEMM with f32 accumulation, as cuBLAS runs it).
bool computesInSixteenBit(Operation *op);
double globalBytes(Type type);
std::string describeValue(Value value);

} // namespace mlir::tp::detail

#endif // TP_LIB_ANALYSIS_PLANBUILDER_H
