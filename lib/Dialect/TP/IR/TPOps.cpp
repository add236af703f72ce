//===- TPOps.cpp - tp dialect operations ------------------------*- C++ -*-===//
//
// Verification is split in two: `verify()` checks what an op says about
// itself (ranks, dimension indices), `verifySymbolUses()` what needs the mesh
// (axes exist, the shape arithmetic of each collective against the group
// size).
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::tp;

//===----------------------------------------------------------------------===//
// Helpers shared with passes
//===----------------------------------------------------------------------===//

MeshOp mlir::tp::lookupMesh(Operation *from, FlatSymbolRefAttr meshRef,
                            SymbolTableCollection *symbolTable) {
  if (!meshRef)
    return {};
  if (symbolTable)
    return symbolTable->lookupNearestSymbolFrom<MeshOp>(from, meshRef);
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, meshRef);
}

LogicalResult mlir::tp::verifyLayoutForType(
    LayoutAttr layout, Type type, Operation *from,
    llvm::function_ref<InFlightDiagnostic()> emitError,
    SymbolTableCollection *symbolTable) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emitError() << "a layout needs a ranked tensor, got " << type;
  if (layout.getRank() != tensor.getRank())
    return emitError() << "layout has rank " << layout.getRank()
                       << " but the type " << type << " has rank "
                       << tensor.getRank();
  MeshOp mesh = lookupMesh(from, layout.getMesh(), symbolTable);
  if (!mesh)
    return emitError() << "layout refers to " << layout.getMesh()
                       << ", which is not a tp.mesh in scope";
  for (StringAttr axis : layout.getUsedAxes()) {
    if (!mesh.getAxisSize(axis.getValue())) {
      InFlightDiagnostic diag = emitError()
                                << "mesh axis \"" << axis.getValue()
                                << "\" in the layout does not exist in "
                                << layout.getMesh();
      diag.attachNote(mesh.getLoc()) << "mesh declared here";
      return diag;
    }
  }
  for (int64_t d = 0; d < tensor.getRank(); ++d)
    if (layout.isSplit(d) && tensor.isDynamicDim(d))
      return emitError() << "dynamic dimension " << d
                         << " cannot be split over mesh axes";
  return success();
}

SmallVector<int64_t> mlir::tp::getLocalShape(ArrayRef<int64_t> globalShape,
                                             LayoutAttr layout, MeshOp mesh) {
  SmallVector<int64_t> local(globalShape);
  for (int64_t d = 0, e = local.size(); d < e; ++d) {
    if (ShapedType::isDynamic(local[d]) || !layout.isSplit(d))
      continue;
    int64_t group = mesh.getGroupSize(layout.getDimAxes(d)).value_or(1);
    local[d] = llvm::divideCeil(local[d], group);
  }
  return local;
}

SmallVector<Value> mlir::tp::getCapturedTensors(Operation *op) {
  llvm::SetVector<Value> captured;
  for (Region &region : op->getRegions())
    region.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (isa<RankedTensorType>(v.getType()) &&
            !op->isAncestor(v.getParentRegion()->getParentOp()))
          captured.insert(v);
    });
  return captured.takeVector();
}

std::string mlir::tp::getArgumentName(FunctionOpInterface fn,
                                     unsigned index) {
  if (auto name = fn.getArgAttrOfType<StringAttr>(
          index, TPDialect::getNameAttrName()))
    return name.getValue().str();
  if (!fn.isExternal())
    if (auto loc = dyn_cast<NameLoc>(fn.getArgument(index).getLoc()))
      return loc.getName().str();
  return "arg" + std::to_string(index);
}

void mlir::tp::nameArguments(FunctionOpInterface fn) {
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    if (!fn.getArgAttr(i, TPDialect::getNameAttrName()))
      fn.setArgAttr(i, TPDialect::getNameAttrName(),
                    StringAttr::get(fn->getContext(), getArgumentName(fn, i)));
}

bool mlir::tp::isEvenlyDivisible(ArrayRef<int64_t> globalShape,
                                 LayoutAttr layout, MeshOp mesh) {
  for (int64_t d = 0, e = globalShape.size(); d < e; ++d) {
    if (ShapedType::isDynamic(globalShape[d]) || !layout.isSplit(d))
      continue;
    int64_t group = mesh.getGroupSize(layout.getDimAxes(d)).value_or(1);
    if (globalShape[d] % group != 0)
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// custom<ReductionKind>: the combiner as a bare keyword (`sum`), which reads
// better in front of the operand than the attribute's own `#tp<reduction sum>`.
//===----------------------------------------------------------------------===//

static ParseResult parseReductionKind(OpAsmParser &parser,
                                      ReductionKindAttr &kind) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<ReductionKind> parsed = symbolizeReductionKind(keyword);
  if (!parsed)
    return parser.emitError(loc) << "unknown reduction kind '" << keyword
                                 << "'; expected 'sum', 'max' or 'min'";
  kind = ReductionKindAttr::get(parser.getContext(), *parsed);
  return success();
}

static void printReductionKind(OpAsmPrinter &printer, Operation *,
                               ReductionKindAttr kind) {
  printer << stringifyReductionKind(kind.getValue());
}

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &axisNames,
                                 DenseI64ArrayAttr &shape) {
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  if (parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
            std::string name;
            int64_t size;
            if (parser.parseString(&name) || parser.parseEqual() ||
                parser.parseInteger(size))
              return failure();
            names.push_back(parser.getBuilder().getStringAttr(name));
            sizes.push_back(size);
            return success();
          }))
    return failure();
  axisNames = parser.getBuilder().getArrayAttr(names);
  shape = parser.getBuilder().getDenseI64ArrayAttr(sizes);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, MeshOp, ArrayAttr axisNames,
                          DenseI64ArrayAttr shape) {
  printer << "[";
  llvm::interleaveComma(llvm::zip(axisNames, shape.asArrayRef()), printer,
                        [&](auto pair) {
                          auto [name, size] = pair;
                          printer.printString(cast<StringAttr>(name).getValue());
                          printer << " = " << size;
                        });
  printer << "]";
}

LogicalResult MeshOp::verify() {
  ArrayAttr names = getAxisNames();
  ArrayRef<int64_t> shape = getShape();
  if (names.empty())
    return emitOpError() << "needs at least one axis";
  if (names.size() != shape.size())
    return emitOpError() << "has " << names.size() << " axis names but "
                         << shape.size() << " axis sizes";
  llvm::SmallDenseSet<StringAttr> seen;
  for (auto [nameAttr, size] : llvm::zip(names, shape)) {
    StringRef name = cast<StringAttr>(nameAttr).getValue();
    if (name.empty())
      return emitOpError() << "axis names must not be empty";
    if (!seen.insert(cast<StringAttr>(nameAttr)).second)
      return emitOpError() << "axis \"" << name << "\" is declared twice";
    if (size < 1)
      return emitOpError() << "axis \"" << name << "\" has size " << size
                           << "; sizes must be at least 1";
  }
  // Each size is checked before it multiplies: no overflow.
  int64_t devices = 1;
  for (auto [nameAttr, size] : llvm::zip(names, shape)) {
    StringRef name = cast<StringAttr>(nameAttr).getValue();
    if (size > kMaxDevices)
      return emitOpError() << "axis \"" << name << "\" has size " << size
                           << "; a mesh has at most " << kMaxDevices
                           << " devices";
    devices *= size;
    if (devices > kMaxDevices)
      return emitOpError() << "has " << devices << " devices up to axis \""
                           << name << "\"; a mesh has at most "
                           << kMaxDevices;
  }
  return success();
}

std::optional<int64_t> MeshOp::getAxisIndex(StringRef axis) {
  for (auto [i, name] : llvm::enumerate(getAxisNames()))
    if (cast<StringAttr>(name).getValue() == axis)
      return i;
  return std::nullopt;
}

std::optional<int64_t> MeshOp::getAxisSize(StringRef axis) {
  if (std::optional<int64_t> index = getAxisIndex(axis))
    return getShape()[*index];
  return std::nullopt;
}

std::optional<int64_t> MeshOp::getGroupSize(ArrayRef<StringAttr> axes) {
  int64_t size = 1;
  for (StringAttr axis : axes) {
    std::optional<int64_t> axisSize = getAxisSize(axis.getValue());
    if (!axisSize)
      return std::nullopt;
    size *= *axisSize;
  }
  return size;
}

int64_t MeshOp::getNumDevices() {
  int64_t n = 1;
  for (int64_t size : getShape())
    n *= size;
  return n;
}

//===----------------------------------------------------------------------===//
// AnnotateOp
//===----------------------------------------------------------------------===//

LogicalResult
AnnotateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyLayoutForType(
      getLayout(), getInput().getType(), *this,
      [&]() { return emitOpError(); }, &symbolTable);
}

//===----------------------------------------------------------------------===//
// Collectives: shared checks
//===----------------------------------------------------------------------===//

/// Resolves `meshRef` and `axes` for `op` and returns the group size (the
/// product of the axis sizes), or emits a diagnostic.
static FailureOr<int64_t> resolveGroup(Operation *op,
                                       SymbolTableCollection &symbolTable,
                                       FlatSymbolRefAttr meshRef,
                                       ArrayAttr axes) {
  MeshOp mesh = lookupMesh(op, meshRef, &symbolTable);
  if (!mesh)
    return op->emitOpError() << "refers to " << meshRef
                             << ", which is not a tp.mesh in scope";
  if (axes.empty())
    return op->emitOpError() << "needs at least one mesh axis";
  llvm::SmallDenseSet<StringAttr> seen;
  int64_t group = 1;
  for (Attribute a : axes) {
    auto axis = cast<StringAttr>(a);
    if (!seen.insert(axis).second)
      return op->emitOpError() << "mesh axis \"" << axis.getValue()
                               << "\" appears more than once";
    std::optional<int64_t> size = mesh.getAxisSize(axis.getValue());
    if (!size) {
      InFlightDiagnostic diag = op->emitOpError()
                                << "mesh axis \"" << axis.getValue()
                                << "\" does not exist in " << meshRef;
      diag.attachNote(mesh.getLoc()) << "mesh declared here";
      return diag;
    }
    group *= *size;
  }
  return group;
}

/// Prints a list of axis names as `["a", "b"]` into a diagnostic.
static std::string formatAxes(ArrayAttr axes) {
  std::string s = "[";
  llvm::interleave(
      axes, [&](Attribute a) { s += "\"" + cast<StringAttr>(a).str() + "\""; },
      [&] { s += ", "; });
  return s + "]";
}

static LogicalResult verifyDimInRange(Operation *op, StringRef name,
                                      int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError() << name << " " << dim
                             << " is out of range for a tensor of rank "
                             << rank;
  return success();
}

static LogicalResult verifySameRank(Operation *op, RankedTensorType in,
                                    RankedTensorType out) {
  if (in.getRank() != out.getRank())
    return op->emitOpError() << "result rank " << out.getRank()
                             << " differs from input rank " << in.getRank();
  return success();
}

namespace {
/// How a collective changes one dimension: the result size is the input size
/// multiplied (gather, concat) or divided (scatter, slice, split) by the
/// group size.
enum class DimChange { Keep, Multiply, Divide };
} // namespace

/// Checks the result shape of a collective: each dimension `d` changes as
/// `changes(d)` says. Dynamic sizes are accepted where they appear.
static LogicalResult
verifyCollectiveShape(Operation *op, RankedTensorType in, RankedTensorType out,
                      int64_t group, ArrayAttr axes,
                      llvm::function_ref<DimChange(int64_t)> changes) {
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t inSize = in.getDimSize(d), outSize = out.getDimSize(d);
    DimChange change = changes(d);
    if (change == DimChange::Divide && !ShapedType::isDynamic(inSize) &&
        inSize % group != 0)
      return op->emitOpError()
             << "dimension " << d << " of size " << inSize
             << " is not divisible by the group size " << group
             << " of mesh axes " << formatAxes(axes);
    if (ShapedType::isDynamic(inSize) || ShapedType::isDynamic(outSize))
      continue;
    int64_t expected = change == DimChange::Keep       ? inSize
                       : change == DimChange::Multiply ? inSize * group
                                                       : inSize / group;
    if (outSize == expected)
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << "result dimension " << d << " has size "
                              << outSize << ", expected " << expected;
    if (change == DimChange::Keep)
      diag << " (the input's size)";
    else
      diag << " (input size " << inSize
           << (change == DimChange::Multiply ? " times" : " divided by")
           << " group size " << group << ")";
    return diag;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

#define TP_DEFINE_GROUP_SIZE(OP)                                               \
  FailureOr<int64_t> OP::getGroupSize(SymbolTableCollection &symbolTable) {    \
    return resolveGroup(*this, symbolTable, getMeshAttr(), getAxes());         \
  }
TP_DEFINE_GROUP_SIZE(AllReduceOp)
TP_DEFINE_GROUP_SIZE(AllGatherOp)
TP_DEFINE_GROUP_SIZE(ReduceScatterOp)
TP_DEFINE_GROUP_SIZE(AllToAllOp)
TP_DEFINE_GROUP_SIZE(SliceOp)
TP_DEFINE_GROUP_SIZE(AxisIndexOp)
#undef TP_DEFINE_GROUP_SIZE

LogicalResult
AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return getGroupSize(symbolTable);
}

LogicalResult
AxisIndexOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return getGroupSize(symbolTable);
}

/// Verifies a collective that changes a single dimension `dim` of its input.
template <typename OpTy>
static LogicalResult verifyOneDimCollective(OpTy op,
                                            SymbolTableCollection &symbolTable,
                                            DimChange change) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getResult().getType());
  if (failed(verifySameRank(op, in, out)) ||
      failed(verifyDimInRange(op, "dim", op.getDim(), in.getRank())))
    return failure();
  FailureOr<int64_t> group = op.getGroupSize(symbolTable);
  if (failed(group))
    return failure();
  int64_t dim = op.getDim();
  return verifyCollectiveShape(op, in, out, *group, op.getAxes(),
                               [&](int64_t d) {
                                 return d == dim ? change : DimChange::Keep;
                               });
}

LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyOneDimCollective(*this, symbolTable, DimChange::Multiply);
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyOneDimCollective(*this, symbolTable, DimChange::Divide);
}

LogicalResult SliceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyOneDimCollective(*this, symbolTable, DimChange::Divide);
}

LogicalResult
AllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(verifySameRank(*this, in, out)) ||
      failed(verifyDimInRange(*this, "split_dim", split, in.getRank())) ||
      failed(verifyDimInRange(*this, "concat_dim", concat, in.getRank())))
    return failure();
  if (split == concat)
    return emitOpError() << "split_dim and concat_dim are both " << split
                         << "; an all_to_all must move the split to another "
                            "dimension";
  FailureOr<int64_t> group = getGroupSize(symbolTable);
  if (failed(group))
    return failure();
  return verifyCollectiveShape(*this, in, out, *group, getAxes(),
                               [&](int64_t d) {
                                 if (d == split)
                                   return DimChange::Divide;
                                 if (d == concat)
                                   return DimChange::Multiply;
                                 return DimChange::Keep;
                               });
}

#define GET_OP_CLASSES
#include "tp/Dialect/TP/IR/TPOps.cpp.inc"
