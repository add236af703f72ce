//===- TPOps.td - tp dialect operations --------------------*- tablegen -*-===//

#ifndef TP_DIALECT_TP_IR_TPOPS_TD
#define TP_DIALECT_TP_IR_TPOPS_TD

include "tp/Dialect/TP/IR/TPDialect.td"
include "tp/Dialect/TP/IR/TPAttrs.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// tp.mesh
//===----------------------------------------------------------------------===//

def TP_MeshOp : TP_Op<"mesh", [Symbol]> {
  let summary = "a named N-D grid of devices with named axes";
  let description = [{
    Declares a device mesh. Each axis has a name and a size; the number of
    devices is the product of the sizes. Devices are numbered row-major:
    the last axis varies fastest, so on `["dp" = 2, "tp" = 4]` the devices
    0..3 form the first "tp" group. Tensor parallelism wants its axis inside
    one fast-interconnect domain, which this numbering gives when the last
    axis is the one inside a node.

    ```mlir
    tp.mesh @m ["dp" = 2, "tp" = 4]
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    StrArrayAttr:$axis_names,
    DenseI64ArrayAttr:$shape
  );
  let assemblyFormat = [{
    $sym_name custom<MeshAxes>($axis_names, $shape) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of axes.
    int64_t getRank() { return getShape().size(); }
    /// Index of `axis`, or std::nullopt when the mesh has no such axis.
    std::optional<int64_t> getAxisIndex(::llvm::StringRef axis);
    /// Size of `axis`, or std::nullopt when the mesh has no such axis.
    std::optional<int64_t> getAxisSize(::llvm::StringRef axis);
    /// Product of the sizes of `axes` (1 for none); nullopt on an unknown axis.
    std::optional<int64_t> getGroupSize(::llvm::ArrayRef<::mlir::StringAttr> axes);
    /// Number of devices in the mesh.
    int64_t getNumDevices();
    /// The most devices a mesh may have: no machine has more, and products
    /// of mesh sizes and per-device byte counts stay far from overflow.
    static constexpr int64_t kMaxDevices = int64_t(1) << 20;
  }];
}

//===----------------------------------------------------------------------===//
// tp.annotate
//===----------------------------------------------------------------------===//

def TP_AnnotateOp : TP_Op<"annotate", [
    Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "pins the layout of a value with a global shape";
  let description = [{
    Says that `input`, a tensor with its global shape, has the given layout at
    this point of the program. Before planning it is a user's pin that the
    planner must respect; after planning the planner writes one for every
    value it decides. Partitioning removes all of them.

    ```mlir
    %1 = tp.annotate %0 layout <@m, [-, "tp"]> : tensor<8x16xf32>
    ```

    The layout must name an existing mesh and axes, have the tensor's rank,
    and leave dynamic dimensions unsplit.
  }];
  let arguments = (ins AnyRankedTensor:$input, TP_LayoutAttr:$layout);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `layout` $layout attr-dict `:` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

class TP_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : TP_Op<mnemonic, !listconcat(traits, [
        Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  code extraCollectiveDeclaration = [{
    /// Product of the sizes of the mesh axes this collective spans; fails
    /// (with a diagnostic) when the mesh or an axis does not exist.
    ::mlir::FailureOr<int64_t> getGroupSize(
        ::mlir::SymbolTableCollection &symbolTable);
  }];
  let extraClassDeclaration = extraCollectiveDeclaration;
}

def TP_AllReduceOp : TP_CollectiveOp<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "combines the pieces of a partial tensor on every device";
  let description = [{
    Every device in a group along `axes` holds a tensor of the same local
    shape; afterwards each holds their elementwise sum (max, min). Turns a
    value partial over `axes` into one that is not.

    ```mlir
    %r = tp.all_reduce sum %x over @m ["tp"] : tensor<16x1024xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TP_ReductionKindAttr:$kind,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    custom<ReductionKind>($kind) $input `over` $mesh $axes attr-dict `:` type($result)
  }];
}

def TP_AllGatherOp : TP_CollectiveOp<"all_gather",
    [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "concatenates the blocks of a split dimension on every device";
  let description = [{
    Each device in a group along `axes` holds one block of dimension `dim`;
    afterwards each holds the concatenation of all blocks in group order.
    The result's `dim` is the input's times the group size.

    ```mlir
    %g = tp.all_gather %x over @m ["tp"] dim = 1
        : tensor<16x256xf32> -> tensor<16x1024xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` `=` $dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def TP_ReduceScatterOp : TP_CollectiveOp<"reduce_scatter",
    [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "combines partial tensors and leaves each device one block";
  let description = [{
    Like `tp.all_reduce`, but device `i` of the group keeps only block `i` of
    dimension `dim` of the combined tensor. The input's `dim` must be
    divisible by the group size.

    ```mlir
    %s = tp.reduce_scatter sum %x over @m ["tp"] dim = 0
        : tensor<16x1024xf32> -> tensor<4x1024xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, TP_ReductionKindAttr:$kind,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    custom<ReductionKind>($kind) $input `over` $mesh $axes `dim` `=` $dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def TP_AllToAllOp : TP_CollectiveOp<"all_to_all",
    [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "moves a split from one dimension to another";
  let description = [{
    Each device splits its block along `split_dim` into group-size pieces,
    sends piece `j` to device `j`, and concatenates what it receives along
    `concat_dim`. A tensor split on `concat_dim` becomes split on
    `split_dim`. `split_dim` must be divisible by the group size.

    ```mlir
    %t = tp.all_to_all %x over @m ["tp"] split_dim = 1 concat_dim = 0
        : tensor<4x1024xf32> -> tensor<16x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->` type($result)
  }];
}

def TP_SliceOp : TP_CollectiveOp<"slice",
    [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "keeps this device's block of a replicated tensor";
  let description = [{
    Every device holds the same tensor; afterwards device `i` of the group
    along `axes` keeps block `i` of dimension `dim`. No communication. The
    input's `dim` must be divisible by the group size.

    ```mlir
    %b = tp.slice %x over @m ["tp"] dim = 1
        : tensor<16x1024xf32> -> tensor<16x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` `=` $dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def TP_AxisIndexOp : TP_CollectiveOp<"axis_index"> {
  let summary = "this device's coordinate along mesh axes";
  let description = [{
    Returns the index of the executing device within its group along `axes`,
    linearised major-first (for `["dp", "tp"]`: dp * size(tp) + tp). Used by
    rank-dependent code, e.g. the row offset of a vocabulary shard.

    ```mlir
    %i = tp.axis_index @m ["tp"] : index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs Index:$result);
  let assemblyFormat = "$mesh $axes attr-dict `:` type($result)";
}

#endif // TP_DIALECT_TP_IR_TPOPS_TD
