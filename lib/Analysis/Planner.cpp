//===- Planner.cpp - choose a layout for every value ------------*- C++ -*-===//
//
// The planner in six phases. Their code lives in files by concept
// (PlanBuilder.h lists them); this file has phase 0 and phases 3-5.
//
// 0. Front-end clean-up, on the IR itself, meaning unchanged: results of
//    linalg ops that nobody reads are dropped (an argmax's unused index);
//    cheap values shared by several consumers (fills, empties, masks, small
//    constants: Rematerialize.h) get one copy per consumer; the pieces of
//    fused weights that the program slices apart become arguments of their
//    own (FusedParams.h).
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
//        op linear in some inputs that may be pending sums of contractions
//        (isSumLinear: `a + b`, a gradient sum, `x * w` in `x`, a sum over
//        a loop with its init, a reshape) may also read those as partial
//        sums and produce the partial sum;
//        ops whose rule allows any layout (tensor.empty) list every layout;
//      - ops without a rule: one replicated strategy, and a remark;
//      - `tp.annotate`: one strategy with the pinned layout, and the value
//        it pins must be *produced* in that layout;
//      - results: pinned or replicated, or (a `tp.param` result, or one
//        with `tp.updates`, a training step's next state) free.
//    Constants that are weights (ConstantWeights.h) behave like
//    parameters, others are replicated (a split of a replicated value is a
//    free slice).
// 2. Edges. Every use of a value joins the producer's node and the
//    consumer's node with a table: for each pair of strategies, the modelled
//    time of the collectives (planReshard) that take the produced layout to
//    the consumed one, or infinity when none can; a value with several uses
//    goes through a fan-out node (PlannerEdges.cpp). Parameters, and values
//    computed from weights alone element by element (a transposed table),
//    are consumed as produced or sliced, never moved (unless
//    reshard-params).
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
//    A plan whose parameters and peak of live activations exceed the
//    device's memory gets a warning naming its largest live activation
//    (PlannerMemory.cpp).
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::detail;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

bool mlir::tp::detail::isSixteenBit(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  Type element = shaped ? shaped.getElementType() : type;
  return element.isIntOrFloat() && element.getIntOrFloatBitWidth() <= 16;
}

bool mlir::tp::detail::computesInSixteenBit(Operation *op) {
  if (op->getNumResults() && isSixteenBit(op->getResult(0).getType()))
    return true;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumDpsInputs() == 2 &&
         linalg::isaContractionOpInterface(linalgOp) &&
         llvm::all_of(linalgOp.getDpsInputs(), [](Value v) {
           Type element = getElementTypeOrSelf(v.getType());
           return isa<FloatType>(element) && isSixteenBit(element);
         });
}

double mlir::tp::detail::globalBytes(Type type) {
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

std::string mlir::tp::detail::describeValue(Value value) {
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
          llvm::append_range(dims[choice[i]], axes[i].members);
      for (SmallVector<StringAttr> &d : dims)
        sortByMesh(d);
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

bool PlanBuilder::isLocalReshard(LayoutAttr from, LayoutAttr to, Value value) {
  if (from == to)
    return true;
  FailureOr<SmallVector<CollectiveStep>> steps = planReshard(
      from, to, cast<RankedTensorType>(value.getType()).getShape(), mesh);
  return succeeded(steps) &&
         llvm::all_of(*steps, [](const CollectiveStep &step) {
           return step.kind == CollectiveKind::Slice;
         });
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
        "mesh {0} ({1}) does not divide factors of size {2} "
        "(heads, kv heads, ...): the ops they index run replicated",
        axisLabel(axis), axis.size, llvm::join(parts, ", "));
    emitRemark(func.getLoc()) << remark;
    plan.remarks.push_back(remark);
  }
}

DenseSet<StringAttr> PlanBuilder::getDataAxes() {
  DenseSet<StringAttr> dataAxes;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (func.getArgAttr(i, TPDialect::getParamAttrName()))
      continue;
    if (auto pinned = func.getArgAttrOfType<LayoutAttr>(
            i, TPDialect::getLayoutAttrName()))
      for (StringAttr a : pinned.getUsedAxes())
        dataAxes.insert(a);
  }
  return dataAxes;
}

std::string PlanBuilder::axisLabel(const Axis &axis) const {
  SmallVector<std::string> names;
  for (StringAttr member : axis.members)
    names.push_back(("\"" + member.getValue() + "\"").str());
  return (axis.members.size() > 1 ? "axes " : "axis ") +
         llvm::join(names, " x ");
}

void PlanBuilder::sortByMesh(SmallVectorImpl<StringAttr> &names) const {
  llvm::sort(names, [&](StringAttr a, StringAttr b) {
    return meshIndex.lookup(a) < meshIndex.lookup(b);
  });
}

void PlanBuilder::groupAxes() {
  DenseSet<StringAttr> data = getDataAxes();
  SmallVector<Axis> kept, free;
  for (const Axis &axis : axes)
    (data.contains(axis.name) ? kept : free).push_back(axis);
  if (options.maxSearchAxes == 0 ||
      axes.size() <= size_t(options.maxSearchAxes) || free.size() < 2)
    return;
  size_t meshAxes = axes.size();
  // The free axes in mesh order, cut into contiguous groups of sizes as
  // even as the order allows: an axis joins the group while its middle
  // stays within the group's share of the (logarithmic) total.
  size_t groups = std::max<int64_t>(
      1, std::min<int64_t>(free.size(),
                           options.maxSearchAxes - int64_t(kept.size())));
  double logTotal = 0, logDone = 0;
  for (const Axis &axis : free)
    logTotal += std::log(double(axis.size));
  size_t next = 0;
  for (size_t g = 0; g < groups; ++g) {
    Axis group = free[next];
    logDone += std::log(double(free[next++].size));
    size_t groupsAfter = groups - g - 1;
    double share = logTotal * (g + 1) / groups;
    while (next < free.size() && free.size() - next > groupsAfter &&
           (groupsAfter == 0 ||
            logDone + std::log(double(free[next].size)) / 2 <= share + 1e-9)) {
      group.size *= free[next].size;
      group.members.push_back(free[next].name);
      logDone += std::log(double(free[next++].size));
    }
    axisGroups.push_back(group.members);
    if (group.members.size() > 1)
      plan.axisGroups.push_back(llvm::to_vector(llvm::map_range(
          group.members, [](StringAttr a) { return a.getValue().str(); })));
    kept.push_back(std::move(group));
  }
  llvm::sort(kept, [&](const Axis &a, const Axis &b) {
    return meshIndex.lookup(a.name) < meshIndex.lookup(b.name);
  });
  axes = std::move(kept);
  SmallVector<std::string> labels;
  for (const Axis &axis : axes)
    if (axis.members.size() > 1)
      labels.push_back(axisLabel(axis));
  std::string remark = llvm::formatv(
      "mesh @{0} has {1} axes of more than one device: the search splits {2} together (search-axes="
      "{3}); the plan is optimal over that space, search-axes=0 searches "
      "every axis on its own",
      mesh.getSymName(), meshAxes, llvm::join(labels, " and "),
      options.maxSearchAxes);
  emitRemark(func.getLoc()) << remark;
  plan.remarks.push_back(remark);
}

LogicalResult
PlanBuilder::reportInfeasible(const AssignmentProblem &problem,
                              const AssignmentSolution &solution,
                              const SolverOptions &solverOptions) {
  double budget = problem.memoryBudget;
  // Proven infeasible under a budget: if no assignment satisfies the pins
  // even without it, the pins (or the shapes) are the cause, not the budget.
  bool pinsAlone = false;
  if (budget != kInf && solution.exact) {
    AssignmentProblem unbounded = problem;
    unbounded.memoryBudget = kInf;
    AssignmentSolution free = solveExact(unbounded, solverOptions);
    pinsAlone = !free.feasible && free.exact;
  }
  InFlightDiagnostic diag = emitError(func.getLoc())
                            << "no layout assignment of '"
                            << func.getSymName() << "' satisfies the pins";
  if (pinsAlone)
    diag << ", with or without the memory budget";
  else if (budget != kInf)
    diag << " within the memory budget of " << llvm::formatv("{0:F0}", budget)
         << " bytes per device (parameters need "
         << llvm::formatv("{0:F0}", totalParamBytes) << " bytes in all)";
  if (!solution.exact)
    diag << "; the search found none within its budget of solves ("
         << solution.relaxedNodes
         << " nodes conditioned) and could not prove that none exists";
  // The pins, and the ops that read everything whole.
  constexpr unsigned kMaxNotes = 8;
  unsigned pins = 0;
  auto notePin = [&](Location loc, const Twine &what, LayoutAttr layout) {
    if (++pins <= kMaxNotes)
      diag.attachNote(loc) << what << " is pinned to " << layout;
  };
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto pin = func.getArgAttrOfType<LayoutAttr>(
            i, TPDialect::getLayoutAttrName())) {
      // A parameter is read in the layout it is stored in (never resharded
      // each step), and no op reads a pending sum as an operand.
      bool partialParam =
          pin.isPartial() && !options.reshardParams &&
          func.getArgAttr(i, TPDialect::getParamAttrName()) != nullptr;
      notePin(func.getLoc(),
              "argument #" + Twine(i) +
                  (partialParam ? " (a parameter, read in the layout it is "
                                  "stored in, and no op reads a pending sum: "
                                  "pin it whole or split instead)"
                                : ""),
              pin);
    }
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto pin = func.getResultAttrOfType<LayoutAttr>(
            i, TPDialect::getLayoutAttrName()))
      notePin(func.getLoc(), "result #" + Twine(i), pin);
  for (AnnotateOp annotate : func.getOps<AnnotateOp>())
    notePin(annotate.getLoc(), "this value", annotate.getLayout());
  if (pins > kMaxNotes)
    diag.attachNote(func.getLoc()) << "and " << pins - kMaxNotes
                                   << " more pins";
  unsigned ruleless = 0;
  for (const Node &node : nodes)
    if (node.noRule && ++ruleless <= kMaxNotes)
      diag.attachNote(node.op->getLoc())
          << "'" << node.op->getName()
          << "' has no sharding rule: it runs replicated, on whole values";
  if (budget != kInf && !pinsAlone) {
    // The least the parameters can take per device, each in its smallest
    // layout (pins and shapes permitting): what a budget must allow.
    double least = 0;
    for (int i : paramNodes) {
      double smallest = kInf;
      for (const Strategy &s : nodes[i].strategies)
        smallest = std::min(smallest, s.paramBytes);
      if (smallest != kInf)
        least += smallest;
    }
    diag.attachNote(func.getLoc())
        << "the parameters take at least " << llvm::formatv("{0:F0}", least)
        << " bytes per device in their smallest layouts; allow more with "
           "param-share=F, memory-budget=BYTES or memory-budget=none";
  }
  return diag;
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
  DenseSet<StringAttr> dataAxes = getDataAxes();
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
    // Dead code inside linalg bodies (what the dropped results computed:
    // a comparison still reading the accumulator hides the combiner).
    for (auto linalgOp : func.getBody().front().getOps<linalg::LinalgOp>())
      if (Block *body = linalgOp.getBlock())
        for (Operation &inner :
             llvm::make_early_inc_range(llvm::reverse(*body)))
          if (isOpTriviallyDead(&inner))
            inner.erase();
    if (options.rematerialize) {
      int64_t numOps = func.getBody().front().getOperations().size();
      RematerializeStats remat = rematerializeSharedValues(
          func, options.constantWeights, 4 * numOps + 1000);
      plan.rematerialized = remat.clones;
      if (remat.leftShared)
        plan.remarks.push_back(llvm::formatv(
            "{0} cheap shared values stay shared (clone limit reached)",
            remat.leftShared));
    }
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
    groupAxes();
  }
  if (failed(buildNodes()) || failed(checkPins()))
    return failure();

  AssignmentProblem problem;
  double budget = memoryBudget();
  problem.memoryBudget = budget;
  for (const Node &node : nodes) {
    std::vector<double> cost, memory;
    for (const Strategy &s : node.strategies) {
      cost.push_back(s.compute);
      memory.push_back(s.paramBytes);
    }
    problem.addNode(cost, memory);
    plan.numStrategies += node.strategies.size();
  }
  plan.numNodes = nodes.size();

  std::vector<std::pair<int, int>> dataflow = buildEdges(problem);
  if (tableEntries > kMaxTableEntries)
    return emitError(func.getLoc())
           << "tp-propagate: the search over the strategies of '"
           << func.getSymName() << "' on mesh @" << mesh.getSymName()
           << " needs more than " << llvm::formatv("{0:F0}", kMaxTableEntries)
           << " table entries (" << plan.numStrategies
           << " strategies); search fewer independent axes (search-axes=2)";

  SolverOptions solverOptions;
  solverOptions.eliminationGroup = eliminationGroups(problem, dataflow);
  computeLiveIntervals();
  bool liveness = options.absoluteBudget.has_value() && budget != kInf;
  AssignmentSolution solution =
      liveness ? solveWithLiveness(problem, solverOptions, budget)
               : solveExact(problem, solverOptions);
  if (solution.feasible)
    tieUpdatedResults(problem, solution);
  if (!relaxedFanOuts.empty() && solution.feasible) {
    // The search priced the relaxed fan-outs below what the partitioner
    // emits: the plan costs the merged reshardings, the search's bound
    // stays a bound.
    auto [charged, real] = relaxedFanOutCosts(solution.choice);
    solution.cost += real - charged;
    if (solution.exact)
      solution.lowerBound = solution.cost - real + charged;
    solution.exact = solution.cost <= solution.lowerBound * (1 + 1e-10);
    detail::finishBounds(solution);
  }
  plan.memoryConstraint =
      budget == kInf ? "none" : (liveness ? "liveness" : "parameters");
  plan.livenessPoints = livenessPoints;
  plan.livenessRounds = livenessRounds;
  plan.livenessConservative = livenessConservative;
  plan.exact = solution.exact;
  plan.solverWidth = solution.width;
  plan.largestFront = solution.largestFront;
  plan.relaxedNodes = solution.relaxedNodes;
  plan.relaxedFanOuts = relaxedFanOuts.size();
  plan.prunedStrategies = solution.prunedChoices;
  plan.solves = solution.solves;
  if (!solution.feasible)
    return reportInfeasible(problem, solution, solverOptions);

  // A plan the search could not prove optimal says how far from the
  // optimum it may be.
  plan.lowerBound = solution.lowerBound;
  plan.gap = solution.exact ? 0 : solution.gap;
  if (!solution.exact) {
    std::string how =
        solution.relaxedNodes
            ? llvm::formatv("{0} hub nodes conditioned, {1} solves",
                            solution.relaxedNodes, solution.solves)
                  .str()
        : relaxedFanOuts.empty()
            ? llvm::formatv("Lagrangian bound of the memory budget, {0} "
                            "solves",
                            solution.solves)
                  .str()
            : std::string();
    if (!relaxedFanOuts.empty())
      how += llvm::formatv("{0}{1} values with several uses priced by their "
                           "shares",
                           how.empty() ? "" : "; ", relaxedFanOuts.size())
                 .str();
    std::string warning = llvm::formatv(
        "the plan of '{0}' is not proven optimal: modelled step time {1:e3} "
        "s, lower bound {2:e3} s, relative gap {3:e2} ({4})",
        func.getSymName(), solution.cost, solution.lowerBound, solution.gap,
        how);
    emitWarning(func.getLoc()) << warning;
    plan.remarks.push_back(warning);
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
  DenseSet<Value> relaxed;
  for (const RelaxedFanOut &fan : relaxedFanOuts)
    relaxed.insert(fan.value);
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
      // The partitioner emits each distinct resharding of a relaxed
      // fan-out once (CSE), as relaxedFanOutCosts priced it.
      if (relaxed.contains(in.value) && !shared.insert({in.value, to}).second)
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
  // on the next step without a collective (tp-runner refuses the model);
  // tieUpdatedResults moved every one it could.
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

  // Peak activation bytes per device along program order (what an
  // absolute budget bounds, PlannerMemory.cpp).
  auto [peak, peakPoint] = activationPeak(solution.choice);
  totals.activationBytesPerDevice = peak;
  checkDeviceMemory(solution.choice, peakPoint);

  plan.planSeconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return plan;
}

void PlanBuilder::tieUpdatedResults(const AssignmentProblem &problem,
                                    AssignmentSolution &solution) {
  DenseMap<unsigned, int> argumentNode;
  for (int n = 0, e = nodes.size(); n < e; ++n)
    if (nodes[n].kind == NodeKind::Argument)
      argumentNode[nodes[n].index] = n;
  std::vector<int> choice = solution.choice;
  bool moved = false;
  for (int n = 0, e = nodes.size(); n < e; ++n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Result)
      continue;
    auto index = func.getResultAttrOfType<IntegerAttr>(
        node.index, TPDialect::getUpdatesAttrName());
    if (!index || !argumentNode.count(index.getInt()))
      continue;
    int a = argumentNode.lookup(index.getInt());
    LayoutAttr stored = nodes[a].strategies[choice[a]].results[0];
    if (node.strategies[choice[n]].inputs[0] == stored)
      continue;
    for (size_t j = 0; j < node.strategies.size(); ++j)
      if (node.strategies[j].inputs[0] == stored) {
        choice[n] = j;
        moved = true;
        break;
      }
  }
  if (!moved)
    return;
  auto [cost, memory] = problem.evaluate(choice);
  if (cost == kInf || memory > problem.memoryBudget)
    return; // run() remarks on what stays untied
  // The tied plan costs more than the search's answer; the search's bound
  // still bounds it (tying only restricts the space).
  solution.choice = std::move(choice);
  solution.cost = cost;
  solution.memory = memory;
  solution.exact = cost <= solution.lowerBound * (1 + 1e-10);
  detail::finishBounds(solution);
}

FailureOr<Plan> mlir::tp::planFunction(func::FuncOp func, MeshOp mesh,
                                       const PlannerOptions &options) {
  return PlanBuilder(func, mesh, options).run();
}
