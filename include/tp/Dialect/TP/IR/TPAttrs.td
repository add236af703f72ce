//===- TPAttrs.td - tp dialect attributes ------------------*- tablegen -*-===//

#ifndef TP_DIALECT_TP_IR_TPATTRS_TD
#define TP_DIALECT_TP_IR_TPATTRS_TD

include "tp/Dialect/TP/IR/TPDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def TP_ReductionKind : I32EnumAttr<"ReductionKind",
    "how the pieces of a partial value combine", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Max", 1, "max">,
  I32EnumAttrCase<"Min", 2, "min">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tp";
}

def TP_ReductionKindAttr
    : EnumAttr<TP_Dialect, TP_ReductionKind, "reduction"> {
  let assemblyFormat = "$value";
}

def TP_LayoutAttr : AttrDef<TP_Dialect, "Layout"> {
  let mnemonic = "layout";
  let summary = "how a tensor with a global shape is laid out over a mesh";
  let description = [{
    A layout names a `tp.mesh` and gives, for each tensor dimension, the mesh
    axes it is split over (none: the dimension is whole on every device; one
    or more: split into contiguous blocks, major axis first). It may also name
    *partial* axes with a reduction kind: along those axes every device holds
    a term, and the value is their sum (max, min).

    ```mlir
    #tp.layout<@m, [-, -]>                         // replicated
    #tp.layout<@m, [-, "tp"]>                      // columns split over "tp"
    #tp.layout<@m, [["dp", "tp"], -]>              // rows split over dp x tp
    #tp.layout<@m, [-, -], partial = sum("tp")>    // pending sum over "tp"
    #tp.layout<@m, [], partial = max("tp")>        // a partial scalar
    ```

    An axis may appear at most once in a layout. Whether the axes exist in the
    mesh, and whether the rank matches the tensor, is checked where the layout
    is used (`tp.annotate`, function argument and result attributes), since
    an attribute cannot see the symbol table.
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    "::mlir::ArrayAttr":$dims,
    "::mlir::ArrayAttr":$partialAxes,
    EnumParameter<TP_ReductionKind>:$partialKind
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::mlir::FlatSymbolRefAttr":$mesh,
                     "::llvm::ArrayRef<::llvm::SmallVector<::mlir::StringAttr>>":$dims,
                     CArg<"::llvm::ArrayRef<::mlir::StringAttr>", "{}">:$partialAxes,
                     CArg<"::mlir::tp::ReductionKind",
                          "::mlir::tp::ReductionKind::Sum">:$partialKind)>
  ];
  let extraClassDeclaration = [{
    /// A layout of the given rank with nothing split and nothing partial.
    static LayoutAttr getReplicated(::mlir::FlatSymbolRefAttr mesh,
                                    int64_t rank);

    /// Number of tensor dimensions this layout describes.
    int64_t getRank() const { return getDims().size(); }
    /// The mesh axes dimension `dim` is split over, major first.
    ::llvm::SmallVector<::mlir::StringAttr> getDimAxes(int64_t dim) const;
    /// The partial axes as strings.
    ::llvm::SmallVector<::mlir::StringAttr> getPartialAxesList() const;
    /// True when dimension `dim` is split over at least one axis.
    bool isSplit(int64_t dim) const;
    /// True when some axis is partial.
    bool isPartial() const { return !getPartialAxes().empty(); }
    /// True when nothing is split and nothing is partial.
    bool isReplicated() const;
    /// Every axis the layout uses (split or partial), in order of appearance.
    ::llvm::SmallVector<::mlir::StringAttr> getUsedAxes() const;
    /// The dimension split over `axis`, or -1 when the axis splits nothing.
    int64_t getDimOfAxis(::llvm::StringRef axis) const;

    /// The same layout with dimension `dim` split over `axes`.
    LayoutAttr withDimAxes(int64_t dim,
                           ::llvm::ArrayRef<::mlir::StringAttr> axes) const;
    /// The same layout with the given partial axes and kind (none: not partial).
    LayoutAttr withPartial(::llvm::ArrayRef<::mlir::StringAttr> axes,
                           ::mlir::tp::ReductionKind kind) const;
    /// The same layout without partial axes.
    LayoutAttr withoutPartial() const;
  }];
}

#endif // TP_DIALECT_TP_IR_TPATTRS_TD
