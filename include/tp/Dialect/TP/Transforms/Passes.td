//===- Passes.td - tp dialect passes -----------------------*- tablegen -*-===//

#ifndef TP_DIALECT_TP_TRANSFORMS_PASSES_TD
#define TP_DIALECT_TP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PropagatePass : Pass<"tp-propagate", "::mlir::ModuleOp"> {
  let summary = "Choose a layout for every value (the tensor-parallel planner)";
  let description = [{
    Plans every function of the module over a device mesh: for every op it
    chooses how the op is split (which mesh axis goes on which loop factor),
    and so the layout in which it consumes each operand and produces each
    result, minimising the modelled step time (compute plus the collectives
    implied wherever a consumer wants another layout than its producer
    gives) under a per-device memory constraint. The search is exact under
    the cost model. Nothing is pattern-matched: the Megatron split of an
    MLP, head-parallel attention, sequence parallelism and vocabulary-parallel
    cross-entropy all come out of the op rules and the costs.

    Preconditions: single-block `func.func` bodies on static tensor shapes
    written in `linalg`, `tensor`, `arith`, `math` (other ops are kept
    replicated with a remark). The mesh is the module's `tp.mesh` or, with
    `tp=N`, a new `tp.mesh @tp ["tp" = N]`. Arguments and results marked
    `tp.param` have a free layout; other arguments and results are
    replicated unless pinned with `tp.layout`; `tp.annotate` pins inner values.

    Result: `tp.layout` on every tensor argument and result, and on every op
    `tp.operand_layouts` / `tp.result_layouts` (global shapes). Example, a
    row-parallel matmul at tp=4:

    ```mlir
    // before
    func.func @f(%x: tensor<8x1024xf32>, %w: tensor<1024x512xf32> {tp.param})
    // after (excerpt)
    func.func @f(%x: tensor<8x1024xf32> {tp.layout = #tp.layout<@tp, [-, -]>},
                 %w: tensor<1024x512xf32> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.param})
      %m = linalg.matmul {tp.operand_layouts = [#tp.layout<@tp, [-, "tp"]>, ...],
                          tp.result_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>]} ...
    ```

    `report=FILE` writes the JSON plan report (docs/passes/propagate.md).
  }];
  let dependentDialects = ["::mlir::tp::TPDialect"];
  let options = [
    Option<"tp", "tp", "int64_t", /*default=*/"0",
           "Plan for a 1-D mesh of this many devices on axis \"tp\" "
           "(creates tp.mesh @tp; 0: use the module's mesh)">,
    Option<"meshName", "mesh", "std::string", /*default=*/"\"\"",
           "The tp.mesh to plan for when the module declares several">,
    Option<"device", "device", "std::string", /*default=*/"\"h100-nvlink\"",
           "Device profile: h100-nvlink, h200-nvlink, a100-nvlink, h100-pcie">,
    Option<"linkBandwidth", "link-bandwidth", "double", /*default=*/"0",
           "Override: bytes/s each device sends over the interconnect">,
    Option<"linkLatency", "link-latency", "double", /*default=*/"-1",
           "Override: seconds per step of a ring collective">,
    Option<"peakFlops", "peak-flops", "double", /*default=*/"0",
           "Override: FLOP/s (16-bit; f32 is scaled by the profile's ratio)">,
    Option<"memoryBandwidth", "memory-bandwidth", "double", /*default=*/"0",
           "Override: bytes/s of device memory">,
    Option<"memoryBudget", "memory-budget", "std::string", /*default=*/"\"\"",
           "Per-device memory budget over parameters and activations, in "
           "bytes (suffixes K, M, G, Ki, Mi, Gi allowed), or 'none'; default: "
           "parameter bytes per device at most 1.1 x total / devices">,
    Option<"paramShare", "param-share", "double", /*default=*/"1.1",
           "Default memory constraint: parameter bytes per device at most "
           "this many times (total parameter bytes / devices)">,
    Option<"sequenceParallel", "sequence-parallel", "std::string",
           /*default=*/"\"auto\"",
           "auto: by cost; on: split tokens wherever an op can; off: never "
           "split token dimensions">,
    Option<"allowPadding", "allow-padding", "bool", /*default=*/"true",
           "Allow splits of dimensions the axis does not divide (padded)">,
    Option<"reshardParams", "reshard-params", "bool", /*default=*/"false",
           "Allow collectives on parameters (weight gathering, as FSDP does); "
           "by default each parameter is consumed in its stored layout">,
    Option<"largeConstantBytes", "large-constant-bytes", "int64_t",
           /*default=*/"1048576",
           "Non-splat constants of at least this many bytes are weights baked "
           "in by a front end: planned like parameters (sliced at compile "
           "time)">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the JSON plan report to this file ('-': stdout)">
  ];
}

#endif // TP_DIALECT_TP_TRANSFORMS_PASSES_TD
