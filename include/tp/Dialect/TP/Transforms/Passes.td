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
    Option<"tp", "tp", "int64_t", /*default=*/"-1",
           "Plan for a 1-D mesh of this many devices on axis \"tp\" "
           "(creates tp.mesh @tp; -1, the default: the module's mesh)">,
    Option<"meshName", "mesh", "std::string", /*default=*/"\"\"",
           "The tp.mesh to plan for when the module declares several">,
    Option<"meshAxes", "mesh-axes", "std::string", /*default=*/"\"\"",
           "A mesh from the command line: named axes and sizes, major first, "
           "e.g. \"dp=8,tp=8\" (creates tp.mesh @mesh; not with tp=N or a "
           "mesh in the module)">,
    Option<"batchAxis", "batch-axis", "std::string", /*default=*/"\"\"",
           "Split the first dimension of every tensor argument that is not "
           "a parameter and has no tp.layout over this mesh axis (data "
           "parallelism: the batch)">,
    Option<"device", "device", "std::string", /*default=*/"\"h100-nvlink\"",
           "Device profile: h100-nvlink, h200-nvlink, a100-nvlink, h100-pcie">,
    Option<"linkBandwidth", "link-bandwidth", "double", /*default=*/"-1",
           "Override: bytes/s each device sends over the interconnect (-1: "
           "the device's)">,
    Option<"linkLatency", "link-latency", "double", /*default=*/"-1",
           "Override: seconds per step of a ring collective">,
    Option<"peakFlops", "peak-flops", "double", /*default=*/"-1",
           "Override: FLOP/s (16-bit; f32 is scaled by the profile's ratio; "
           "-1: the device's)">,
    Option<"memoryBandwidth", "memory-bandwidth", "double", /*default=*/"-1",
           "Override: bytes/s of device memory (-1: the device's)">,
    Option<"deviceMemory", "device-memory", "std::string", /*default=*/"\"\"",
           "Override: bytes of device memory (suffixes K, M, G, Ki, Mi, Gi); "
           "a plan needing more gets a warning naming its largest activation">,
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
           "in by a front end: planned like parameters (each device slices "
           "its block at run time)">,
    Option<"weightConstantBytes", "weight-constant-bytes", "int64_t",
           /*default=*/"4096",
           "Non-splat constants of at least this many bytes that the program "
           "uses as weights (read along a contraction, or gathered from by "
           "data) are planned like parameters; smaller ones stay replicated">,
    Option<"rematerialize", "rematerialize", "bool", /*default=*/"true",
           "Give each consumer of a cheap shared value (a fill, an empty "
           "tensor, a mask) its own copy before planning">,
    Option<"dataAxesOnBatch", "data-axes-on-batch", "bool",
           /*default=*/"true",
           "On a mesh with data axes (axes pinning a non-parameter input) "
           "and other axes, a data axis splits only the batch factors of "
           "the ops that have one">,
    Option<"searchAxes", "search-axes", "int64_t", /*default=*/"2",
           "Independent mesh axes the search splits factors over: on a mesh "
           "of more axes (of size > 1) the axes that pin no input are "
           "grouped, each group splitting one factor together (0: every "
           "axis on its own, the whole space)">,
    Option<"splitFusedParams", "split-fused-params", "bool",
           /*default=*/"true",
           "Give each piece of a fused weight that the program slices apart "
           "(GPT-2's c_attn, Phi-3's qkv_proj) an argument of its own, with "
           "tp.source naming its block of the stored tensor">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the JSON plan report to this file ('-': stdout)">
  ];
}

def PartitionPass : Pass<"tp-partition", "::mlir::ModuleOp"> {
  let summary = "Rewrite a planned program into the program each device runs";
  let description = [{
    Takes the output of `--tp-propagate` (global shapes, a layout for every
    value) and produces the SPMD program: every op on local shapes, and
    `tp.*` collectives wherever a value's layout changes between its producer
    and a consumer (replicated to split: `tp.slice`; split to whole:
    `tp.all_gather`; partial to whole: `tp.all_reduce`; partial to split:
    `tp.reduce_scatter`; one split dimension to another: `tp.all_to_all`), in
    exactly the sequence the planner priced. Rank-dependent bodies are made
    correct: `linalg.index` of a split loop is offset by
    `tp.axis_index * local size`, lookups into a row-split table are masked,
    reductions over padded splits skip the padding.

    Function arguments and results take local types and keep their global
    meaning in `tp.layout` and `tp.global_shape`, from which the runtime
    slices global weights and inputs for each device.

    ```mlir
    // before (planned, tp=4)
    %y = linalg.matmul {tp.operand_layouts = [#tp.layout<@tp, [-, "tp"]>, ...],
                        tp.result_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>]}
        ins(%g, %w2 : tensor<4096x4096xbf16>, tensor<4096x1024xbf16>) ...
    return {tp.operand_layouts = [#tp.layout<@tp, [-, -]>]} %y : tensor<4096x1024xbf16>
    // after
    %y = linalg.matmul ins(%g, %w2 : tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) ...
    %r = tp.all_reduce sum %y over @tp ["tp"] : tensor<4096x1024xbf16>
    return %r : tensor<4096x1024xbf16>
    ```

    Precondition: every function was planned (its layouts name a `tp.mesh`).
    docs/passes/partition.md shows every resharding case.
  }];
  let dependentDialects = [
    "::mlir::tp::TPDialect", "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect", "::mlir::linalg::LinalgDialect"
  ];
}

def OptimizeCollectivesPass
    : Pass<"tp-optimize-collectives", "::mlir::ModuleOp"> {
  let summary = "Simplify and merge the collectives of a partitioned program";
  let description = [{
    Rewrites that never change numerics beyond the order of a reduction:

    * `tp.slice(tp.all_reduce(x))` over the same axes, when the slice is the
      only user: `tp.reduce_scatter(x)` (half the bytes);
    * `tp.slice(tp.all_gather(x, d), d)` over the same axes: `x`;
    * `tp.all_gather(tp.slice(x, d), d)` over the same axes: `x`;
    * `tp.all_to_all(tp.all_to_all(x, s, c), c, s)` over the same axes: `x`;
    * independent all-reduces of the same kind, axes and element type, each
      at most `merge-bytes`, whose results are used only after the later one:
      flattened, concatenated, reduced once and split again (one launch
      instead of several; the cross-entropy's sums).

    ```mlir
    // before
    %r = tp.all_reduce sum %x over @m ["tp"] : tensor<16x8xf32>
    %s = tp.slice %r over @m ["tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
    // after
    %s = tp.reduce_scatter sum %x over @m ["tp"] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let options = [
    Option<"mergeBytes", "merge-bytes", "int64_t", /*default=*/"1048576",
           "Merge independent all-reduces of at most this many bytes each "
           "(0: never merge)">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def HoistConstantsPass : Pass<"tp-hoist-constants", "::mlir::ModuleOp"> {
  let summary = "Turn weights baked in as constants into parameters";
  let description = [{
    Front ends that bake the weights into the program (torch-mlir's ONNX
    importer, TF imports: `dense` and `dense_resource` constants) give a
    model that every device holds whole. This pass turns each constant that
    is a weight (the planner's test, `include/tp/Analysis/ConstantWeights.h`:
    any non-splat constant of at least `large-constant-bytes`, or one of at
    least `weight-constant-bytes` that the program reads along a
    contraction or gathers from by data) into a `tp.param` argument,
    appended after the function's arguments, and writes the values to the
    safetensors file `file` under the argument's `tp.name`: the resource's
    name for a `dense_resource`, else the constant's location when it is a
    name, else `constant<K>` (K counting the hoisted constants); names are
    made unique with a `.<K>` suffix. Equal constants become one argument.
    The function's own arguments first get the names a user addresses them
    by (`tp.name`, NameLoc, `arg<N>`). Then `tp-run model.mlir --checkpoint
    FILE` runs the model with its weights sliced per device like any other.

    ```mlir
    // before
    func.func @main(%x: tensor<8x64xf32>) -> tensor<8x192xf32> {
      %w = arith.constant dense_resource<c_attn_weight> : tensor<64x192xf32>
      %y = linalg.matmul ins(%x, %w : ...) outs(...)
    // after (file holds "c_attn_weight")
    func.func @main(%x: tensor<8x64xf32> {tp.name = "arg0"},
                    %w: tensor<64x192xf32> {tp.name = "c_attn_weight", tp.param})
    ```

    Functions that are called in the module (their signature is not the
    model's boundary) are left alone. An elided resource (`dense_resource<
    __elided__>`) is an error naming the constant.
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "The safetensors file the hoisted values are written to "
           "(required)">,
    Option<"largeConstantBytes", "large-constant-bytes", "int64_t",
           /*default=*/"1048576",
           "Non-splat constants of at least this many bytes are hoisted">,
    Option<"weightConstantBytes", "weight-constant-bytes", "int64_t",
           /*default=*/"4096",
           "Constants used as weights and of at least this many bytes are "
           "hoisted">
  ];
  let dependentDialects = ["::mlir::tp::TPDialect"];
}

def VerifyPartitionedPass : Pass<"tp-verify-partitioned", "::mlir::ModuleOp"> {
  let summary = "Check the partitioned-program contract";
  let description = [{
    Fails unless the module is a partitioned program: no `tp.annotate` and no
    planner attribute (`tp.operand_layouts`, `tp.result_layouts`,
    `tp.captured_layouts`) is left; every tensor argument and result of a
    function that uses a mesh carries `tp.layout` and `tp.global_shape`, and
    its type is the local shape of that global shape under that layout. The
    collectives' own verifiers check their shapes. `--tp-shard` ends with it.
  }];
}

def ImportShardPass : Pass<"tp-import-shard", "::mlir::ModuleOp"> {
  let summary = "Turn upstream shard annotations into tp pins";
  let description = [{
    Accepts IR annotated with upstream MLIR's `shard` dialect and rewrites
    the annotations into the planner's input vocabulary:

    * `shard.grid @g(shape = 2x4)` becomes `tp.mesh @g ["axis0" = 2,
      "axis1" = 4]` (same symbol and sizes; upstream axes are indexed, axis
      `i` is named `"axisI"`);
    * `shard.shard %arg to %s` of a function argument becomes the argument's
      `tp.layout`; a `shard.shard` whose result is returned gives that
      function result its `tp.layout`; any other `shard.shard` (with or
      without `annotate_for_users`) becomes a `tp.annotate` pin;
    * `split_axes = [[], [0, 1]]` becomes `#tp.layout<@g, [-, ["axis0",
      "axis1"]]>` (MLIR 22 shardings have no partial axes);
    * every `shard.shard`, `shard.sharding` and `shard.grid` is erased.

    ```mlir
    // before
    shard.grid @grid(shape = 4)
    func.func @f(%w: tensor<16x64xf32>) -> tensor<8x64xf32> {
      %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
      %ws = shard.shard %w to %s : tensor<16x64xf32>
    // after
    tp.mesh @grid ["axis0" = 4]
    func.func @f(%w: tensor<16x64xf32> {tp.layout = #tp.layout<@grid, [-, "axis0"]>})
    ```

    Halo sizes, sharded dims offsets, dynamic grids, shardings not defined
    by `shard.sharding` and every other `shard` op are errors naming the op;
    nothing is rewritten then. A module without `shard` ops is unchanged, so
    `--tp-shard` runs this pass first.
  }];
  let dependentDialects = ["::mlir::tp::TPDialect"];
}

def ExportShardPass : Pass<"tp-export-shard", "::mlir::ModuleOp"> {
  let summary = "Write a tp plan as fully annotated upstream shard IR";
  let description = [{
    Takes the output of `--tp-propagate` and writes the plan in upstream
    MLIR's `shard` dialect, annotated the way upstream
    `sharding-propagation` leaves a program, so that upstream
    `shard-partition` partitions it: `tp.mesh @m ["dp" = 2, "tp" = 4]`
    becomes `shard.grid @m(shape = 2x4)` (axis names become their
    positions); an argument's `tp.layout` a `shard.shard` of the argument;
    each op's `tp.result_layouts` a `shard.shard` of its results and its
    `tp.operand_layouts` a `shard.shard ... annotate_for_users` of its
    operands. Partial layouts are written without their partial axes
    (upstream shardings have none; upstream reduces a split contraction
    right after the op). `tp.annotate` pins are dropped and every `tp.`
    attribute is removed, so the output needs no `tp` dialect.

    ```mlir
    // before (planned)
    %2 = linalg.matmul {tp.operand_layouts = [#tp.layout<@tp, [-, -]>, #tp.layout<@tp, [-, "tp"]>, ...],
                        tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]} ins(%x, %w1 : ...)
    // after
    %s = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
    %w1u = shard.shard %w1a to %s annotate_for_users : tensor<16x64xf32>
    %2 = linalg.matmul ins(%xu, %w1u : ...) outs(...)
    %r = shard.shard %2 to %s2 : tensor<8x64xf32>
    ```

    Precondition: planned and not partitioned (a `tp` collective is an
    error); the module has a `tp.mesh`.
  }];
  let dependentDialects = [
    "::mlir::tp::TPDialect", "::mlir::shard::ShardDialect"
  ];
}

#endif // TP_DIALECT_TP_TRANSFORMS_PASSES_TD
