//===- TPAttrs.cpp - tp dialect attributes ----------------------*- C++ -*-===//
//
// `#tp.layout` has a hand-written parser and printer: its compact form
// (`-` for an unsplit dimension, a bare string for one axis, a list for
// several) cannot be expressed with a declarative attribute format. The
// rationale is in docs/RationaleTP.md ("Why a custom layout syntax").
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/IR/TPAttrs.h"
#include "tp/Dialect/TP/IR/TPDialect.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tp;

#include "tp/Dialect/TP/IR/TPEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tp/Dialect/TP/IR/TPAttrs.cpp.inc"

void TPDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tp/Dialect/TP/IR/TPAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// LayoutAttr: construction and queries
//===----------------------------------------------------------------------===//

static ArrayAttr toArrayAttr(MLIRContext *ctx, ArrayRef<StringAttr> axes) {
  return ArrayAttr::get(ctx, SmallVector<Attribute>(axes.begin(), axes.end()));
}

LayoutAttr LayoutAttr::get(MLIRContext *ctx, FlatSymbolRefAttr mesh,
                           ArrayRef<SmallVector<StringAttr>> dims,
                           ArrayRef<StringAttr> partialAxes,
                           ReductionKind partialKind) {
  SmallVector<Attribute> dimAttrs;
  for (const SmallVector<StringAttr> &axes : dims)
    dimAttrs.push_back(toArrayAttr(ctx, axes));
  if (partialAxes.empty())
    partialKind = ReductionKind::Sum;
  return get(ctx, mesh, ArrayAttr::get(ctx, dimAttrs),
             toArrayAttr(ctx, partialAxes), partialKind);
}

LayoutAttr LayoutAttr::getReplicated(FlatSymbolRefAttr mesh, int64_t rank) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<SmallVector<StringAttr>> dims(rank);
  return get(ctx, mesh, dims);
}

static SmallVector<StringAttr> toStrings(ArrayAttr attr) {
  return llvm::map_to_vector(attr.getValue(), [](Attribute a) {
    return cast<StringAttr>(a);
  });
}

SmallVector<StringAttr> LayoutAttr::getDimAxes(int64_t dim) const {
  return toStrings(cast<ArrayAttr>(getDims()[dim]));
}

SmallVector<StringAttr> LayoutAttr::getPartialAxesList() const {
  return toStrings(getPartialAxes());
}

bool LayoutAttr::isSplit(int64_t dim) const {
  return !cast<ArrayAttr>(getDims()[dim]).empty();
}

bool LayoutAttr::isReplicated() const {
  if (isPartial())
    return false;
  return llvm::none_of(llvm::seq<int64_t>(0, getRank()),
                       [&](int64_t d) { return isSplit(d); });
}

SmallVector<StringAttr> LayoutAttr::getUsedAxes() const {
  SmallVector<StringAttr> axes;
  for (int64_t d = 0; d < getRank(); ++d)
    llvm::append_range(axes, getDimAxes(d));
  llvm::append_range(axes, getPartialAxesList());
  return axes;
}

int64_t LayoutAttr::getDimOfAxis(StringRef axis) const {
  for (int64_t d = 0; d < getRank(); ++d)
    for (StringAttr a : getDimAxes(d))
      if (a.getValue() == axis)
        return d;
  return -1;
}

LayoutAttr LayoutAttr::withDimAxes(int64_t dim, ArrayRef<StringAttr> axes) const {
  SmallVector<Attribute> dims(getDims().begin(), getDims().end());
  dims[dim] = toArrayAttr(getContext(), axes);
  return get(getContext(), getMesh(), ArrayAttr::get(getContext(), dims),
             getPartialAxes(), getPartialKind());
}

LayoutAttr LayoutAttr::withPartial(ArrayRef<StringAttr> axes,
                                   ReductionKind kind) const {
  if (axes.empty())
    kind = ReductionKind::Sum;
  return get(getContext(), getMesh(), getDims(),
             toArrayAttr(getContext(), axes), kind);
}

LayoutAttr LayoutAttr::withoutPartial() const {
  return withPartial({}, ReductionKind::Sum);
}

//===----------------------------------------------------------------------===//
// LayoutAttr: verification
//===----------------------------------------------------------------------===//

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 FlatSymbolRefAttr mesh, ArrayAttr dims,
                                 ArrayAttr partialAxes,
                                 ReductionKind partialKind) {
  if (!mesh)
    return emitError() << "a layout needs a mesh symbol";
  llvm::SmallDenseSet<StringAttr> seen;
  auto checkAxis = [&](Attribute a) -> LogicalResult {
    auto name = dyn_cast<StringAttr>(a);
    if (!name)
      return emitError() << "mesh axes in a layout must be strings, got " << a;
    if (name.getValue().empty())
      return emitError() << "mesh axis names in a layout must not be empty";
    if (!seen.insert(name).second)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" appears more than once in the layout";
    return success();
  };
  for (auto [i, dim] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "dimension " << i
                         << " of a layout must be a list of mesh axes, got "
                         << dim;
    for (Attribute a : axes)
      if (failed(checkAxis(a)))
        return failure();
  }
  for (Attribute a : partialAxes)
    if (failed(checkAxis(a)))
      return failure();
  if (partialAxes.empty() && partialKind != ReductionKind::Sum)
    return emitError() << "reduction kind '"
                       << stringifyReductionKind(partialKind)
                       << "' given without partial axes";
  return success();
}

//===----------------------------------------------------------------------===//
// LayoutAttr: syntax
//
//   layout ::= `<` symbol-ref `,` `[` (dim (`,` dim)*)? `]`
//                 (`,` `partial` `=` kind `(` string (`,` string)* `)`)? `>`
//   dim    ::= `-` | string | `[` string (`,` string)* `]`
//===----------------------------------------------------------------------===//

/// Parses the `(` axis (`,` axis)* `)` list of a partial clause.
static ParseResult parsePartialAxes(AsmParser &parser,
                                    SmallVectorImpl<StringAttr> &axes) {
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Paren,
                                     [&]() -> ParseResult {
        std::string name;
        if (parser.parseString(&name))
          return failure();
        axes.push_back(parser.getBuilder().getStringAttr(name));
        return success();
      }))
    return failure();
  if (axes.empty())
    return parser.emitError(loc)
           << "expected at least one mesh axis in 'partial'";
  return success();
}

Attribute LayoutAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  FlatSymbolRefAttr mesh;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};

  SmallVector<SmallVector<StringAttr>> dims;
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            SmallVector<StringAttr> &axes = dims.emplace_back();
            if (succeeded(parser.parseOptionalMinus()))
              return success();
            std::string name;
            if (succeeded(parser.parseOptionalString(&name))) {
              axes.push_back(StringAttr::get(ctx, name));
              return success();
            }
            SMLoc dimLoc = parser.getCurrentLocation();
            if (parser.parseCommaSeparatedList(
                    AsmParser::Delimiter::OptionalSquare,
                    [&]() -> ParseResult {
                      if (parser.parseString(&name))
                        return failure();
                      axes.push_back(StringAttr::get(ctx, name));
                      return success();
                    }))
              return failure();
            if (axes.empty())
              return parser.emitError(dimLoc)
                     << "expected '-', a mesh axis name or a non-empty list "
                        "of mesh axis names for dimension "
                     << dims.size() - 1;
            return success();
          }))
    return {};

  SmallVector<StringAttr> partialAxes;
  ReductionKind kind = ReductionKind::Sum;
  if (succeeded(parser.parseOptionalComma())) {
    StringRef keyword;
    if (parser.parseKeyword("partial") || parser.parseEqual())
      return {};
    SMLoc kindLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&keyword))
      return {};
    std::optional<ReductionKind> parsed = symbolizeReductionKind(keyword);
    if (!parsed) {
      parser.emitError(kindLoc) << "unknown reduction kind '" << keyword
                                << "'; expected 'sum', 'max' or 'min'";
      return {};
    }
    kind = *parsed;
    if (parsePartialAxes(parser, partialAxes))
      return {};
  }
  if (parser.parseGreater())
    return {};

  SmallVector<Attribute> dimAttrs;
  for (ArrayRef<StringAttr> axes : dims)
    dimAttrs.push_back(toArrayAttr(ctx, axes));
  return LayoutAttr::getChecked(
      [&]() { return parser.emitError(loc); }, ctx, mesh,
      ArrayAttr::get(ctx, dimAttrs), toArrayAttr(ctx, partialAxes), kind);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getDims(), printer, [&](Attribute dim) {
    ArrayAttr axes = cast<ArrayAttr>(dim);
    if (axes.empty()) {
      printer << "-";
    } else if (axes.size() == 1) {
      printer.printString(cast<StringAttr>(axes[0]).getValue());
    } else {
      printer << "[";
      llvm::interleaveComma(axes, printer, [&](Attribute a) {
        printer.printString(cast<StringAttr>(a).getValue());
      });
      printer << "]";
    }
  });
  printer << "]";
  if (isPartial()) {
    printer << ", partial = " << stringifyReductionKind(getPartialKind())
            << "(";
    llvm::interleaveComma(getPartialAxes(), printer, [&](Attribute a) {
      printer.printString(cast<StringAttr>(a).getValue());
    });
    printer << ")";
  }
  printer << ">";
}
