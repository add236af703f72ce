//===- Passes.h - tp dialect passes -----------------------------*- C++ -*-===//

#ifndef TP_DIALECT_TP_TRANSFORMS_PASSES_H
#define TP_DIALECT_TP_TRANSFORMS_PASSES_H

#include "tp/Dialect/TP/IR/TPDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassManager.h"

#include <functional>

namespace llvm::json {
class Value;
} // namespace llvm::json

namespace mlir::tp {

#define GEN_PASS_DECL
#include "tp/Dialect/TP/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tp/Dialect/TP/Transforms/Passes.h.inc"

/// Receives the plan report of one tp-propagate run: the JSON document that
/// `report=FILE` writes (`{"functions": [...]}`, docs/passes/propagate.md).
using PlanReportCallback = std::function<void(const llvm::json::Value &)>;

/// tp-propagate that hands its plan report to `onReport` once per run, after
/// planning every function (and writes `options.report` too when set).
std::unique_ptr<Pass> createPropagatePass(const PropagatePassOptions &options,
                                          PlanReportCallback onReport);

/// Options of the `tp-shard` pipeline: every `tp-propagate` option plus the
/// collective optimiser's.
struct ShardPipelineOptions : public PassPipelineOptions<ShardPipelineOptions> {
  Option<int64_t> tp{*this, "tp", llvm::cl::desc("Devices on a 1-D mesh axis \"tp\""),
                     llvm::cl::init(-1)};
  Option<std::string> mesh{*this, "mesh",
                           llvm::cl::desc("The tp.mesh to plan for"),
                           llvm::cl::init("")};
  Option<std::string> meshAxes{
      *this, "mesh-axes",
      llvm::cl::desc("A mesh from the command line, e.g. dp=8,tp=8"),
      llvm::cl::init("")};
  Option<std::string> batchAxis{
      *this, "batch-axis",
      llvm::cl::desc("Split non-parameter inputs' first dimension over this "
                     "axis"),
      llvm::cl::init("")};
  Option<std::string> device{*this, "device",
                             llvm::cl::desc("Device profile"),
                             llvm::cl::init("h100-nvlink")};
  Option<double> linkBandwidth{*this, "link-bandwidth",
                               llvm::cl::desc("Override: link bytes/s"),
                               llvm::cl::init(-1)};
  Option<double> linkLatency{*this, "link-latency",
                             llvm::cl::desc("Override: seconds per ring step"),
                             llvm::cl::init(-1)};
  Option<double> peakFlops{*this, "peak-flops",
                           llvm::cl::desc("Override: 16-bit FLOP/s"),
                           llvm::cl::init(-1)};
  Option<double> memoryBandwidth{*this, "memory-bandwidth",
                                 llvm::cl::desc("Override: memory bytes/s"),
                                 llvm::cl::init(-1)};
  Option<std::string> deviceMemory{
      *this, "device-memory",
      llvm::cl::desc("Override: bytes of device memory"), llvm::cl::init("")};
  Option<std::string> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Per-device budget in bytes, or 'none'"),
      llvm::cl::init("")};
  Option<double> paramShare{
      *this, "param-share",
      llvm::cl::desc("Parameter bytes per device <= this x share"),
      llvm::cl::init(1.1)};
  Option<std::string> sequenceParallel{
      *this, "sequence-parallel", llvm::cl::desc("auto, on or off"),
      llvm::cl::init("auto")};
  Option<bool> allowPadding{*this, "allow-padding",
                            llvm::cl::desc("Allow padded splits"),
                            llvm::cl::init(true)};
  Option<bool> reshardParams{*this, "reshard-params",
                             llvm::cl::desc("Allow collectives on parameters"),
                             llvm::cl::init(false)};
  Option<int64_t> largeConstantBytes{
      *this, "large-constant-bytes",
      llvm::cl::desc("Constants this large are planned like parameters"),
      llvm::cl::init(1 << 20)};
  Option<int64_t> weightConstantBytes{
      *this, "weight-constant-bytes",
      llvm::cl::desc("Constants used as weights and this large are planned "
                     "like parameters"),
      llvm::cl::init(4096)};
  Option<bool> rematerialize{
      *this, "rematerialize",
      llvm::cl::desc("Copy cheap shared values per consumer before planning"),
      llvm::cl::init(true)};
  Option<bool> dataAxesOnBatch{
      *this, "data-axes-on-batch",
      llvm::cl::desc("A data axis splits only the batch factors of the ops "
                     "that have one"),
      llvm::cl::init(true)};
  Option<int64_t> searchAxes{
      *this, "search-axes",
      llvm::cl::desc("Independent mesh axes of the search (0: all)"),
      llvm::cl::init(2)};
  Option<bool> splitFusedParams{
      *this, "split-fused-params",
      llvm::cl::desc("Split fused weights into their pieces (tp.source)"),
      llvm::cl::init(true)};
  Option<std::string> hoistConstants{
      *this, "hoist-constants",
      llvm::cl::desc("First turn the weights baked in as constants into "
                     "tp.param arguments, their values written to this "
                     "safetensors file (tp-hoist-constants)"),
      llvm::cl::init("")};
  Option<std::string> report{*this, "report",
                             llvm::cl::desc("JSON plan report file"),
                             llvm::cl::init("")};
  Option<int64_t> mergeBytes{
      *this, "merge-bytes",
      llvm::cl::desc("Merge independent all-reduces up to this size"),
      llvm::cl::init(1 << 20)};

  /// C++ only, no textual form: receives the plan report in memory
  /// (createPropagatePass(options, onReport)).
  PlanReportCallback reportCallback;
};

/// import-shard (upstream `shard` annotations become pins) + propagate +
/// partition + optimize-collectives + canonicalize + cse +
/// verify-partitioned, on a module.
void buildShardPipeline(OpPassManager &pm, const ShardPipelineOptions &options);

/// Registers `tp-shard` with the global pipeline registry.
void registerShardPipeline();

} // namespace mlir::tp

#endif // TP_DIALECT_TP_TRANSFORMS_PASSES_H
