//===- PlannerNodes.cpp - phase 1: nodes and their strategies -------------===//
//
// Every tensor argument, op and result becomes a node with its strategies
// (Planner.cpp, phase 1): arguments by their pin or parameter freedom, ops
// by every assignment of mesh axes to the factors of their sharding rule
// (with the partial variants of identity fills and sum-linear ops), results
// by their pin or freedom; pins are checked against what can be produced.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "tp/Analysis/RoutedContraction.h"

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::detail;

//===----------------------------------------------------------------------===//
// Phase 1: nodes
//===----------------------------------------------------------------------===//

/// Whether the lowerings fuse the producer of `use` into its consumer
/// (tp-fuse-elementwise, on both the CPU and the GPU path: upstream's
/// elementwise fusion of a producer with one use), so that the value is
/// never written to memory nor read back: the op's compute is priced on
/// the bytes of the fused kernel, not of each op alone. Otherwise a
/// spelling with more elementwise ops (IREE's broadcasts as their own
/// generics, a LayerNorm in six ops) would make replicated elementwise work
/// look dearer than the same computation spelled in fewer ops. Whether the
/// plan leaves producer and consumer in the same layout is not asked: a
/// reshard between them costs a collective, which dominates the bytes.
static bool isFusedIntoConsumer(OpOperand &use) {
  Operation *producer = use.get().getDefiningOp();
  return producer && producer->hasOneUse() &&
         linalg::areElementwiseOpsFusable(&use);
}

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
              "mesh {3} ({4}); {5}",
              d, size, i, axisLabel(axis), axis.size,
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

void PlanBuilder::markWeightView(const Node &node) {
  Operation *op = node.op;
  if (isa<AnnotateOp>(op) || op->getNumResults() == 0)
    return;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (linalgOp && linalgOp.getNumReductionLoops() != 0)
    return;
  bool anyWeight = false;
  for (const Input &in : node.inputs) {
    // An init a linalg body does not read gives only the shape. Other
    // destination-style ops (scf.forall's shared_outs, tensor.insert_slice's
    // dest) count as reading theirs.
    if (linalgOp && in.slot < op->getNumOperands() &&
        linalgOp.isDpsInit(&op->getOpOperand(in.slot)) &&
        !linalgOp.payloadUsesValueFromOperand(&op->getOpOperand(in.slot)))
      continue;
    auto it = producer.find(in.value);
    if (it == producer.end())
      return;
    int p = it->second.first;
    if (paramNodes.contains(p) || weightViewNodes.contains(p)) {
      anyWeight = true;
      continue;
    }
    // Data-free producers: constants, fills, empty tensors.
    Operation *def = in.value.getDefiningOp();
    if (!def || !isa<arith::ConstantOp, linalg::FillOp, tensor::EmptyOp>(def))
      return;
  }
  if (anyWeight)
    weightViewNodes.insert(nodes.size());
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
    markWeightView(node);
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
      if (isWeightConstant(constant, options.constantWeights)) {
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
            llvm::append_range(all, axis.members);
          sortByMesh(all);
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
      node.noRule = true;
    }
    addReplicatedStrategy(node, failed(rule) ? "replicated (no rule)"
                                             : "replicated");
  }
  for (Strategy &s : node.strategies)
    expand(s);
  finish();
}

/// Whether `op` computes a linear function, with no constant term, of the
/// operands marked in `linear` (operand numbers), the other operands held
/// fixed: sums and differences of linear terms, each scaled by values that
/// do not depend on them (`a + b`, `0.5 * (a - b)`, `x * w` in `x`), and
/// sums over a reduction loop of such terms (`out + x * w` with its init
/// counted linear). The sum over devices of such an op's results on
/// per-device terms of the linear operands (and of a read init) is then the
/// op applied to the summed terms, so partial sums may flow through it:
/// Megatron's backward adds the partial input gradients of q, k and v, or
/// gate and up, before one all-reduce; a mixture of experts weights each
/// expert's partial output and sums over the experts a token chose before
/// one all-reduce of [tokens, hidden]. Reshapes are linear in their source.
static bool isSumLinear(Operation *op, ArrayRef<bool> linear) {
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
    return linear[0];
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || op->getNumRegions() != 1 || !linalgOp.getBlock() ||
      linalgOp.getNumDpsInputs() == 0)
    return false;
  Block *body = linalgOp.getBlock();
  DenseSet<Value> terms;
  for (OpOperand *input : linalgOp.getDpsInputOperands()) {
    if (!isa<RankedTensorType>(input->get().getType()))
      return false;
    if (linear[input->getOperandNumber()])
      terms.insert(linalgOp.getMatchingBlockArgument(input));
  }
  if (terms.empty())
    return false;
  // A read init accumulates: it is a term of the sum (a reduction's
  // `out + ...`), read as a partial sum itself.
  for (OpOperand &init : linalgOp.getDpsInitsMutable())
    if (!linalgOp.getMatchingBlockArgument(&init).use_empty()) {
      if (!linear[init.getOperandNumber()])
        return false;
      terms.insert(linalgOp.getMatchingBlockArgument(&init));
    }
  if (linalgOp.getNumReductionLoops() != 0 &&
      llvm::any_of(linalgOp.getDpsInitsMutable(), [&](OpOperand &init) {
        return linalgOp.getMatchingBlockArgument(&init).use_empty();
      }))
    return false; // a reduction that overwrites: not a sum
  for (Operation &inner : body->without_terminator()) {
    unsigned numLinear = llvm::count_if(
        inner.getOperands(), [&](Value v) { return terms.contains(v); });
    if (numLinear == 0) {
      // Depends on no term: a scale factor, if anything.
      if (inner.getNumRegions() != 0)
        return false;
      continue;
    }
    bool ok = false;
    if (isa<arith::AddFOp, arith::SubFOp>(inner))
      ok = numLinear == 2;
    else if (isa<arith::NegFOp, arith::ExtFOp>(inner))
      ok = true;
    else if (isa<arith::MulFOp>(inner))
      ok = numLinear == 1;
    else if (auto div = dyn_cast<arith::DivFOp>(inner))
      ok = numLinear == 1 && terms.contains(div.getLhs());
    if (!ok)
      return false;
    terms.insert(inner.getResult(0));
  }
  Operation *yield = body->getTerminator();
  return yield->getNumOperands() > 0 &&
         llvm::all_of(yield->getOperands(),
                      [&](Value v) { return terms.contains(v); });
}

void PlanBuilder::addRuleStrategies(Node &node, const ShardingRule &rule) {
  Operation *op = node.op;
  MLIRContext *ctx = op->getContext();
  int64_t numFactors = rule.factors.size();

  // A mixture of experts' per-row copy of its experts' weights, which the
  // lowering computes as a routed GEMM (tp-route-experts), is never formed:
  // the gather holds and writes nothing, and the contraction reading it
  // reads each expert's weight once (the copy's bytes scaled by experts /
  // rows) and holds the rows sorted by expert and their products.
  // Per strategy, only where the experts stay whole: a stack split by
  // experts is read through a masked gather (expert parallelism), which
  // the lowering does not route, and its result is a pending sum.
  // A 16-bit product rounded back by its only use is routed only while
  // that use reads it directly: a stack split by the reduction makes the
  // product a pending sum, reduced in f32 before the rounding.
  bool routedGather = isRoutedGatherOnly(op);
  Value routedStack;
  int64_t narrowedReductionDim = -1; // of the stack
  if (routedGather) {
    if (auto extract = op->getRegion(0)
                           .front()
                           .getTerminator()
                           ->getOperand(0)
                           .getDefiningOp<tensor::ExtractOp>())
      routedStack = extract.getTensor();
    for (Operation *user : op->getResult(0).getUsers()) {
      std::string why;
      std::optional<RoutedContraction> r =
          matchRoutedContraction(cast<linalg::LinalgOp>(user), why);
      if (r && r->narrowing)
        narrowedReductionDim = r->transB ? 2 : 1;
    }
  }
  std::optional<RoutedContraction> routed;
  if (auto contraction = dyn_cast<linalg::LinalgOp>(op)) {
    std::string why;
    routed = matchRoutedContraction(contraction, why);
    if (routed && !isRoutedGatherOnly(routed->gather))
      routed.reset();
  }
  // A transpose that only contractions read is folded into their GEMM
  // calls' transpose flags (tp-gemm-to-runtime): it holds nothing.
  bool foldedTranspose =
      isa<linalg::TransposeOp>(op) && !op->use_empty() &&
      llvm::all_of(op->getUsers(), [](Operation *user) {
        auto contraction = dyn_cast<linalg::LinalgOp>(user);
        return contraction && linalg::isaContractionOpInterface(contraction);
      });

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

  // Per data axis, the factors of the pinned data dimensions (the batch):
  // when the op has one, the axis goes to such a factor only
  // (PlannerOptions::dataAxesOnBatch).
  SmallVector<SmallVector<bool>> dataFactors(axes.size());
  for (auto [a, axis] : llvm::enumerate(axes)) {
    auto it = dataLeaders.find(axis.name);
    if (it == dataLeaders.end())
      continue;
    SmallVector<bool> isData(numFactors, false);
    bool any = false;
    auto mark = [&](Value v, const TensorFactors &dims) {
      for (auto [d, fs] : llvm::enumerate(dims))
        for (int64_t f : fs) {
          if (rule.factors[f].size <= 1)
            continue;
          DimKey key{v.getAsOpaquePointer(), int64_t(d)};
          if (dimClasses.contains(key) &&
              it->second.contains(dimClasses.getLeaderValue(key)) &&
              rule.factors[f].kind != FactorKind::Opaque) {
            isData[f] = true;
            any = true;
          }
          break; // the major factor only
        }
    };
    for (auto [i, mapping] : llvm::enumerate(rule.operands))
      if (mapping)
        mark(op->getOperand(i), *mapping);
    for (auto [i, mapping] : llvm::enumerate(rule.results))
      if (mapping)
        mark(op->getResult(i), *mapping);
    if (any)
      dataFactors[a] = std::move(isData);
  }

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

  // Which inputs may be read as pending sums (isSumLinear): those that may
  // be one (results of contractions and of linear ops on them), all
  // together when the op is linear in all of them (a sum of partial
  // gradients), else each alone where the op is linear in it (a weighting
  // `x * w` of a partial `x`); a read init goes with them. Only where
  // some input may be a pending sum, which keeps the extra strategies,
  // and the search, small.
  SmallVector<SmallVector<bool>> linearSets;
  if (rule.captured.empty() && op->getNumResults() > 0) {
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    SmallVector<bool> candidates(op->getNumOperands(), false);
    SmallVector<bool> inits(op->getNumOperands(), false);
    bool any = false;
    for (const Input &in : node.inputs) {
      if (in.slot >= op->getNumOperands())
        continue;
      if (dps && dps.isDpsInit(&op->getOpOperand(in.slot))) {
        inits[in.slot] = true;
        continue;
      }
      if (reducedValues.contains(in.value))
        candidates[in.slot] = any = true;
    }
    auto withInits = [&](SmallVector<bool> set) {
      for (auto [i, init] : llvm::enumerate(inits))
        set[i] = set[i] || init;
      return set;
    };
    if (any && isSumLinear(op, withInits(candidates))) {
      linearSets.push_back(withInits(candidates));
    } else if (any) {
      for (unsigned i = 0; i < candidates.size(); ++i) {
        if (!candidates[i])
          continue;
        SmallVector<bool> one(candidates.size(), false);
        one[i] = true;
        if (isSumLinear(op, withInits(one)))
          linearSets.push_back(withInits(one));
      }
    }
  }
  if (!linearSets.empty() ||
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
        if (!dataFactors[a].empty() && (f < 0 || !dataFactors[a][f]))
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
        llvm::append_range(unusedAxes, axes[i].members);
        continue;
      }
      llvm::append_range(factorAxes[f], axes[i].members);
      factorGroup[f] *= axes[i].size;
      if (rule.factors[f].kind == FactorKind::Reduction) {
        if (combiner && *combiner != rule.factors[f].combiner)
          return;
        combiner = rule.factors[f].combiner;
        llvm::append_range(reductionAxes, axes[i].members);
      }
    }
    if (!axisGroups.empty()) {
      // Groups and data axes interleave in the mesh: list them in its order.
      for (SmallVector<StringAttr> &fa : factorAxes)
        sortByMesh(fa);
      sortByMesh(unusedAxes);
      sortByMesh(reductionAxes);
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
    size_t firstLinear = partialVariants.size();
    if (reductionAxes.empty() && !unusedAxes.empty())
      for (size_t k = 0; k < linearSets.size(); ++k)
        partialVariants.push_back(unusedAxes);

    for (auto [variant, extraPartialAxes] : llvm::enumerate(partialVariants)) {
      ArrayRef<StringAttr> extraPartial = extraPartialAxes;
      bool linear = variant >= firstLinear;
      ArrayRef<bool> linearSet =
          linear ? ArrayRef<bool>(linearSets[variant - firstLinear])
                 : ArrayRef<bool>();
      Strategy s;
      SmallVector<StringAttr> partial(reductionAxes);
      llvm::append_range(partial, extraPartial);
      ReductionKind kind =
          combiner ? *combiner : rule.identityOf.value_or(ReductionKind::Sum);
      // (A linear variant splits no reduction factor: no combiner.)
      if (!extraPartial.empty() && !linear && combiner &&
          *combiner != *rule.identityOf)
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
      bool gatherRouted = routedGather, contractionRouted = routed.has_value();
      double gatheredBytes = 0, rowBytes = 0;
      for (Input &in : node.inputs) {
        LayoutAttr layout;
        if (in.slot < rule.operands.size() && rule.operands[in.slot]) {
          int64_t init = rule.initOf[in.slot];
          // A read init takes the results' partial state (a linear op's
          // init is in its linear set, or not read).
          bool partialInit = init >= 0 && !rule.identityOf;
          bool partialInput = linear && init < 0 && linearSet[in.slot];
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
        // An init is written, not read: one the body does not read gives
        // only the shape, and fills fuse into their consumer (beta = 0);
        // the result's bytes below count the write.
        auto dps = dyn_cast<DestinationStyleOpInterface>(op);
        bool isInit = dps && in.slot < op->getNumOperands() &&
                      dps.isDpsInit(&op->getOpOperand(in.slot));
        // An elementwise producer fused into this op (tp-fuse-elementwise)
        // is never written to memory, nor read back here.
        bool fused = in.slot < op->getNumOperands() &&
                     isFusedIntoConsumer(op->getOpOperand(in.slot));
        if (gatherRouted && in.value == routedStack && layout &&
            (layout.isSplit(0) ||
             (narrowedReductionDim > 0 && layout.isSplit(narrowedReductionDim))))
          gatherRouted = false;
        if (routed && in.value == routed->gather->getResult(0) && layout &&
            layout.isPartial())
          contractionRouted = false;
        if (!isInit && !fused) {
          double inBytes = localBytes(in.value.getType(), layout);
          if (routed && in.value == routed->gather->getResult(0))
            gatheredBytes = inBytes;
          else if (routed && in.slot < op->getNumOperands())
            rowBytes = inBytes;
          bytes += inBytes;
        }
      }
      if (contractionRouted && routed->narrowing &&
          llvm::any_of(s.results, [](LayoutAttr l) {
            return l && l.isPartial();
          }))
        contractionRouted = false;
      if (gatherRouted)
        bytes = 0; // the routed program has no gather
      if (contractionRouted) {
        // Each expert's weight read once instead of the per-row copy; the
        // rows sorted by expert held.
        bytes -= gatheredBytes * (1.0 - std::min(1.0, double(routed->experts) /
                                                          double(routed->rows)));
        s.activationBytes += rowBytes;
      }
      for (auto [r, result] : llvm::enumerate(op->getResults())) {
        double b = gatherRouted ? 0.0 : localBytes(result.getType(), s.results[r]);
        if (!result.hasOneUse() || !isFusedIntoConsumer(*result.use_begin()))
          bytes += b;
        if (!rule.viewLike && !foldedTranspose)
          s.activationBytes += contractionRouted ? 2 * b : b; // + the products
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
                            computesInSixteenBit(op));
      s.padded = padded;
      // Description: "replicated" or "tp=f1(parallel 3072)" etc.
      SmallVector<std::string> parts;
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t f = choice[i];
        if (f < 0)
          continue;
        const Factor &factor = rule.factors[f];
        parts.push_back(llvm::formatv(
            "{0}=f{1}({2} {3})",
            llvm::join(llvm::map_range(axes[i].members,
                                       [](StringAttr a) { return a.getValue(); }),
                       "*"),
            f,
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
    if (failed(checkCall(&op)))
      return failure();
    addOpNode(&op);
  }
  return success();
}

/// A call has no sharding rule: it runs replicated and passes whole values.
/// That is only right when the callee takes and returns whole values, which
/// the planner gives every argument and result that is neither a parameter
/// nor pinned nor a training step's update.
LogicalResult PlanBuilder::checkCall(Operation *op) {
  auto call = dyn_cast<CallOpInterface>(op);
  auto symbol = call ? dyn_cast_if_present<SymbolRefAttr>(
                           call.getCallableForCallee())
                     : SymbolRefAttr();
  auto callee = symbol ? SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                             op, symbol)
                       : func::FuncOp();
  if (!callee || callee.isExternal())
    return success();
  // tp-propagate pins a callee's boundary replicated (pinCalleeBoundaries);
  // a parameter, an update or a split pin there would take parts.
  auto planned = [](DictionaryAttr attrs) -> StringRef {
    if (!attrs)
      return "";
    for (StringRef name :
         {TPDialect::getParamAttrName(), TPDialect::getUpdatesAttrName()})
      if (attrs.get(name))
        return name;
    auto layout = attrs.getAs<LayoutAttr>(TPDialect::getLayoutAttrName());
    return layout && !layout.isReplicated() ? TPDialect::getLayoutAttrName()
                                            : StringRef();
  };
  auto fail = [&](StringRef what, unsigned i, StringRef attr) {
    InFlightDiagnostic diag =
        op->emitError() << "tp-propagate: '" << op->getName() << "' to @"
                        << callee.getSymName()
                        << (callee == func ? " (a recursive call)" : "")
                        << " runs replicated and passes whole values, but "
                        << what << " #" << i << " of @" << callee.getSymName()
                        << " has " << attr
                        << ", so its planned boundary takes parts; keep "
                           "tp.param, tp.updates and split tp.layout pins "
                           "off a callee";
    diag.attachNote(callee.getLoc()) << "the callee";
    return diag;
  };
  for (unsigned i = 0; i < callee.getNumArguments(); ++i)
    if (StringRef attr = planned(callee.getArgAttrDict(i)); !attr.empty())
      return fail("argument", i, attr);
  for (unsigned i = 0; i < callee.getNumResults(); ++i)
    if (StringRef attr = planned(callee.getResultAttrDict(i)); !attr.empty())
      return fail("result", i, attr);
  return success();
}

/// Contradicting pins: a value pinned twice with different layouts, or an
/// argument pinned by `tp.layout` and a `tp.annotate` that disagree.
LogicalResult PlanBuilder::checkPins() {
  // A pin that splits a dimension its devices cannot share: fewer elements
  // than devices, or a remainder without padding (or over several axes);
  // or a pin on another mesh than the one planned for.
  auto checkSplit = [&](LayoutAttr layout, RankedTensorType type,
                        auto emit) -> LogicalResult {
    if (!layout || !type)
      return success();
    if (layout.getMesh() != meshRef)
      return emit() << "pinned layout " << layout << " is on mesh "
                    << layout.getMesh() << ", but '" << func.getSymName()
                    << "' is planned on mesh " << meshRef;
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
      if (isa<BlockArgument>(annotate.getInput()))
        diag << ", which arrives whole (it is not a tp.param); an argument's "
                "layout is pinned with tp.layout on the argument: {tp.layout = "
             << annotate.getLayout() << "}";
      if (Operation *def = annotate.getInput().getDefiningOp())
        diag.attachNote(def->getLoc()) << "produced here";
      return diag;
    }
  }
  return success();
}
