//===- Propagate.cpp - the tp-propagate pass --------------------*- C++ -*-===//
//
// Resolves the mesh and the planner options, runs the planner (Planner.cpp)
// on every function with a body, writes the plan into the IR and the JSON
// report. All the planning logic lives in lib/Analysis.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/Passes.h"

#include "tp/Analysis/Planner.h"
#include "tp/Analysis/ShardingRules.h"
#include "tp/Dialect/TP/IR/InputChecks.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"
#include <cmath>

#define DEBUG_TYPE "tp-propagate"

namespace mlir::tp {
#define GEN_PASS_DEF_PROPAGATEPASS
#include "tp/Dialect/TP/Transforms/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

/// A number as printf's %g writes it ("0", "1e-310", "-5").
static std::string shortNumber(double value) {
  return llvm::formatv("{0}", llvm::format("%g", value)).str();
}

/// Parses "123", "1.5G", "80Gi", ... into bytes.
static std::optional<double> parseBytes(StringRef text) {
  text = text.trim();
  static const std::pair<StringRef, double> suffixes[] = {
      {"Ki", 1024.0}, {"Mi", 1024.0 * 1024}, {"Gi", 1024.0 * 1024 * 1024},
      {"K", 1e3},     {"M", 1e6},            {"G", 1e9}};
  double scale = 1;
  for (auto [suffix, factor] : suffixes)
    if (text.consume_back(suffix)) {
      scale = factor;
      break;
    }
  double value;
  if (text.empty() || text.getAsDouble(value) || value <= 0)
    return std::nullopt;
  return value * scale;
}

namespace {
struct PropagatePass : public tp::impl::PropagatePassBase<PropagatePass> {
  using Base::Base;
  PropagatePass(const PropagatePassOptions &options,
                PlanReportCallback onReport)
      : Base(options), onReport(std::move(onReport)) {}

  /// The op rules are registry extensions (ShardingRules.h): attach them
  /// here too, so that the planner has them in any host that loaded the
  /// passes without registerTPDialects (mlir-opt with the pass plugin only).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerShardingRuleExternalModels(registry);
  }

  /// Receives the report in memory (createPropagatePass(options, onReport)).
  PlanReportCallback onReport;

  /// The mesh to plan for, created from `tp=N` when asked.
  FailureOr<MeshOp> resolveMesh(ModuleOp module) {
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    // -1, the default: no tp=, the mesh comes from mesh-axes= or the module.
    if (tp < 1 && tp != -1)
      return emitError(module.getLoc())
             << "tp-propagate: tp=" << int64_t(tp) << " must be at least 1";
    constexpr int64_t kMaxDevices = MeshOp::kMaxDevices;
    if (tp > kMaxDevices)
      return emitError(module.getLoc())
             << "tp-propagate: tp=" << int64_t(tp) << " is more than "
             << kMaxDevices << " devices";
    if (!meshAxes.empty()) {
      if (tp > 0)
        return emitError(module.getLoc())
               << "tp-propagate: tp=" << int64_t(tp) << " and mesh-axes="
               << meshAxes << " both give a mesh; drop one";
      if (!meshes.empty())
        return meshes.front().emitError()
               << "tp-propagate: mesh-axes=" << meshAxes
               << " given but the module declares mesh @"
               << meshes.front().getSymName() << "; drop one of the two";
      SmallVector<StringRef> names;
      SmallVector<int64_t> sizes;
      SmallVector<StringRef> items;
      StringRef(meshAxes).split(items, ',');
      for (StringRef item : items) {
        auto [name, size] = item.trim().split('=');
        name = name.trim();
        int64_t n = 0;
        if (name.empty() || size.trim().getAsInteger(10, n) || n < 1 ||
            n > kMaxDevices)
          return emitError(module.getLoc())
                 << "tp-propagate: mesh-axes='" << meshAxes
                 << "': '" << item.trim()
                 << "' is not NAME=SIZE with a size from 1 to " << kMaxDevices;
        if (llvm::is_contained(names, name))
          return emitError(module.getLoc())
                 << "tp-propagate: mesh-axes='" << meshAxes << "' names axis \""
                 << name << "\" twice";
        names.push_back(name);
        sizes.push_back(n);
      }
      int64_t devices = 1;
      for (int64_t n : sizes)
        devices *= n;
      if (devices > kMaxDevices)
        return emitError(module.getLoc())
               << "tp-propagate: mesh-axes='" << meshAxes << "' has " << devices
               << " devices, more than " << kMaxDevices;
      if (module.lookupSymbol("mesh"))
        return emitError(module.getLoc())
               << "tp-propagate: mesh-axes needs the symbol @mesh for its "
                  "mesh, which is taken";
      OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
      return MeshOp::create(builder, module.getLoc(),
                            builder.getStringAttr("mesh"),
                            builder.getStrArrayAttr(names),
                            builder.getDenseI64ArrayAttr(sizes));
    }
    if (tp > 0) {
      // A module that already declares the same mesh (e.g. for its pins).
      if (meshes.size() == 1 && meshes.front().getSymName() == "tp" &&
          meshes.front().getRank() == 1 &&
          meshes.front().getAxisSize("tp") == tp)
        return meshes.front();
      if (!meshes.empty())
        return meshes.front().emitError()
               << "tp-propagate: tp=" << int64_t(tp) << " given but the module declares "
               << "mesh @" << meshes.front().getSymName()
               << "; drop one of the two";
      OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
      if (module.lookupSymbol("tp"))
        return emitError(module.getLoc())
               << "tp-propagate: tp=" << int64_t(tp)
               << " needs the symbol @tp for its mesh, which is taken";
      return MeshOp::create(
          builder, module.getLoc(), builder.getStringAttr("tp"),
          builder.getStrArrayAttr({"tp"}),
          builder.getDenseI64ArrayAttr({int64_t(tp)}));
    }
    if (!meshName.empty()) {
      for (MeshOp mesh : meshes)
        if (mesh.getSymName() == meshName)
          return mesh;
      return emitError(module.getLoc())
             << "tp-propagate: mesh=" << meshName << " names no tp.mesh";
    }
    if (meshes.empty())
      return emitError(module.getLoc())
             << "tp-propagate: no mesh; declare a tp.mesh or pass tp=N";
    if (meshes.size() > 1)
      return emitError(module.getLoc())
             << "tp-propagate: the module declares " << meshes.size()
             << " meshes; choose one with mesh=NAME";
    return meshes.front();
  }

  /// batch-axis=AXIS: every tensor argument that is not a parameter and
  /// has no tp.layout gets its first dimension split over AXIS.
  LogicalResult pinBatchAxis(ModuleOp module, MeshOp mesh) {
    if (batchAxis.empty())
      return success();
    std::optional<int64_t> size = mesh.getAxisSize(batchAxis);
    if (!size)
      return emitError(module.getLoc())
             << "tp-propagate: batch-axis=" << batchAxis << " is not an axis of mesh @"
             << mesh.getSymName();
    FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    StringAttr axis = StringAttr::get(module.getContext(), batchAxis);
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      for (unsigned i = 0; i < func.getNumArguments(); ++i) {
        auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
        if (!type || type.getRank() == 0 ||
            func.getArgAttr(i, TPDialect::getParamAttrName()) ||
            func.getArgAttr(i, TPDialect::getLayoutAttrName()))
          continue;
        int64_t batch = type.getDimSize(0);
        if (ShapedType::isDynamic(batch) || batch % *size != 0)
          return emitError(func.getLoc())
                 << "tp-propagate: batch-axis=" << batchAxis
                 << ": dimension 0 of argument #" << i << " of '"
                 << func.getSymName() << "' has size "
                 << (ShapedType::isDynamic(batch) ? std::string("?")
                                                  : std::to_string(batch))
                 << ", which mesh axis \"" << batchAxis << "\" (" << *size
                 << ") does not divide";
        SmallVector<SmallVector<StringAttr>> dims(type.getRank());
        dims[0].push_back(axis);
        func.setArgAttr(i, TPDialect::getLayoutAttrName(),
                        LayoutAttr::get(module.getContext(), meshRef, dims));
      }
    }
    return success();
  }

  FailureOr<PlannerOptions> resolveOptions(ModuleOp module) {
    PlannerOptions options;
    std::optional<DeviceProfile> profile = DeviceProfile::lookup(device);
    if (!profile)
      return emitError(module.getLoc())
             << "tp-propagate: unknown device profile '" << device
             << "'; known: " << llvm::join(DeviceProfile::names(), ", ");
    for (auto [name, value] :
         {std::pair<StringRef, double>{"link-bandwidth", linkBandwidth},
          {"link-latency", linkLatency},
          {"peak-flops", peakFlops},
          {"memory-bandwidth", memoryBandwidth},
          {"param-share", paramShare}})
      if (!std::isfinite(value))
        return emitError(module.getLoc())
               << "tp-propagate: " << name << "=" << value
               << " is not a finite number";
    // Rates replace the device's (-1, the default, keeps it) and must keep
    // every modelled time finite and positive: a rate of 0 or a denormal
    // one would make every cost infinite.
    for (auto [name, value, unit] :
         {std::tuple<StringRef, double, StringRef>{"link-bandwidth",
                                                   linkBandwidth, "bytes/s"},
          {"peak-flops", peakFlops, "FLOP/s"},
          {"memory-bandwidth", memoryBandwidth, "bytes/s"}})
      if (value != -1 && !(value >= 1 && value <= 1e30))
        return emitError(module.getLoc())
               << "tp-propagate: " << name << "=" << shortNumber(value)
               << " must be from 1 to 1e30 " << unit
               << " (-1, the default, keeps the device's)";
    if (linkLatency < 0 && linkLatency != -1)
      return emitError(module.getLoc())
             << "tp-propagate: link-latency=" << double(linkLatency)
             << " must not be negative (-1, the default, keeps the device's)";
    if (linkLatency > 1e6)
      return emitError(module.getLoc())
             << "tp-propagate: link-latency=" << shortNumber(linkLatency)
             << " must be at most 1e6 seconds";
    if (linkBandwidth != -1)
      profile->linkBandwidth = linkBandwidth;
    if (linkLatency >= 0)
      profile->linkLatency = linkLatency;
    if (peakFlops != -1) {
      profile->flops32 *= peakFlops / profile->flops16;
      profile->flops16 = peakFlops;
    }
    if (memoryBandwidth != -1)
      profile->memoryBandwidth = memoryBandwidth;
    if (!deviceMemory.empty()) {
      std::optional<double> bytes = parseBytes(deviceMemory);
      if (!bytes)
        return emitError(module.getLoc())
               << "tp-propagate: device-memory='" << deviceMemory
               << "' is not a positive number of bytes";
      profile->memoryCapacity = *bytes;
    }
    options.device = *profile;

    if (paramShare < 1.0)
      return emitError(module.getLoc())
             << "tp-propagate: param-share=" << llvm::formatv("{0}", double(paramShare)).str()
             << " must be at least 1 (parameters cannot take less than their "
                "share)";
    options.paramShareFactor = paramShare;
    if (memoryBudget == "none") {
      options.unconstrained = true;
    } else if (!memoryBudget.empty()) {
      std::optional<double> bytes = parseBytes(memoryBudget);
      if (!bytes || !std::isfinite(*bytes))
        return emitError(module.getLoc())
               << "tp-propagate: memory-budget='" << memoryBudget
               << "' is neither 'none' nor a positive number of bytes";
      options.absoluteBudget = *bytes;
    }

    if (sequenceParallel == "auto")
      options.sequenceParallel = SequenceParallelMode::Auto;
    else if (sequenceParallel == "on")
      options.sequenceParallel = SequenceParallelMode::On;
    else if (sequenceParallel == "off")
      options.sequenceParallel = SequenceParallelMode::Off;
    else
      return emitError(module.getLoc())
             << "tp-propagate: sequence-parallel='" << sequenceParallel
             << "' must be auto, on or off";
    options.allowPadding = allowPadding;
    options.reshardParams = reshardParams;
    if (largeConstantBytes < 1)
      return emitError(module.getLoc()) << "tp-propagate: large-constant-bytes="
                                << int64_t(largeConstantBytes)
                                << " must be at least 1";
    if (weightConstantBytes < 1)
      return emitError(module.getLoc())
             << "tp-propagate: weight-constant-bytes="
             << int64_t(weightConstantBytes) << " must be at least 1";
    options.constantWeights.largeBytes = largeConstantBytes;
    options.constantWeights.weightBytes = weightConstantBytes;
    options.splitFusedParams = splitFusedParams;
    options.rematerialize = rematerialize;
    options.dataAxesOnBatch = dataAxesOnBatch;
    if (searchAxes < 0)
      return emitError(module.getLoc())
             << "tp-propagate: search-axes=" << int64_t(searchAxes)
             << " must not be negative (0: every axis on its own)";
    options.maxSearchAxes = searchAxes;
    return options;
  }

  /// A call has no sharding rule: it runs replicated and passes whole
  /// values. Each function the module calls therefore takes and returns
  /// whole values: its tensor arguments and results without a pin get a
  /// replicated tp.layout (a remark says so), and the planner refuses a
  /// callee whose boundary is pinned split (PlanBuilder::checkCall).
  void pinCalleeBoundaries(ModuleOp module, MeshOp mesh) {
    FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    StringAttr layoutName =
        StringAttr::get(module.getContext(), TPDialect::getLayoutAttrName());
    llvm::SetVector<func::FuncOp> callees;
    module.walk([&](CallOpInterface call) {
      auto symbol =
          dyn_cast_if_present<SymbolRefAttr>(call.getCallableForCallee());
      if (auto callee = symbol ? SymbolTable::lookupNearestSymbolFrom<
                                     func::FuncOp>(call, symbol)
                               : func::FuncOp())
        if (!callee.isExternal())
          callees.insert(callee);
    });
    for (func::FuncOp callee : callees) {
      auto replicated = [&](Type type) -> LayoutAttr {
        auto ranked = dyn_cast<RankedTensorType>(type);
        return ranked ? LayoutAttr::getReplicated(meshRef, ranked.getRank())
                      : LayoutAttr();
      };
      bool pinned = false;
      for (unsigned i = 0; i < callee.getNumArguments(); ++i)
        if (LayoutAttr layout = replicated(callee.getArgumentTypes()[i]);
            layout && !callee.getArgAttr(i, layoutName) &&
            !callee.getArgAttr(i, TPDialect::getParamAttrName())) {
          callee.setArgAttr(i, layoutName, layout);
          pinned = true;
        }
      for (unsigned i = 0; i < callee.getNumResults(); ++i)
        if (LayoutAttr layout = replicated(callee.getResultTypes()[i]);
            layout && !callee.getResultAttr(i, layoutName) &&
            !callee.getResultAttr(i, TPDialect::getUpdatesAttrName())) {
          callee.setResultAttr(i, layoutName, layout);
          pinned = true;
        }
      if (pinned)
        callee.emitRemark()
            << "@" << callee.getSymName()
            << " is called (func.call has no sharding rule and passes whole "
               "values): its tensor arguments and results stay whole";
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<PlannerOptions> options = resolveOptions(module);
    if (failed(options))
      return signalPassFailure();
    FailureOr<MeshOp> mesh = resolveMesh(module);
    if (failed(mesh))
      return signalPassFailure();

    if (failed(pinBatchAxis(module, *mesh)))
      return signalPassFailure();

    if (failed(checkResourceBlobs(module, getArgument())))
      return signalPassFailure();
    pinCalleeBoundaries(module, *mesh);
    CostModel costModel(options->device);
    llvm::json::Array functions;
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(checkGlobalProgram(func, getArgument())))
        return signalPassFailure();
      FailureOr<Plan> plan = planFunction(func, *mesh, *options);
      if (failed(plan))
        return signalPassFailure();
      annotateFunction(*plan);
      if (!report.empty() || onReport)
        functions.push_back(getPlanReport(*plan, costModel));
    }
    llvm::json::Value root =
        llvm::json::Object{{"functions", std::move(functions)}};
    if (onReport)
      onReport(root);
    if (report.empty())
      return;
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(report, &error);
    if (!file) {
      module.emitError() << "tp-propagate: cannot write report '" << report
                         << "': " << error;
      return signalPassFailure();
    }
    file->os() << llvm::formatv("{0:2}", root) << "\n";
    file->keep();
  }
};
} // namespace

std::unique_ptr<Pass>
mlir::tp::createPropagatePass(const PropagatePassOptions &options,
                              PlanReportCallback onReport) {
  return std::make_unique<PropagatePass>(options, std::move(onReport));
}
