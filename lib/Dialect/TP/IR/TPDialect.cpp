//===- TPDialect.cpp - tp dialect -------------------------------*- C++ -*-===//

#include "tp/Dialect/TP/IR/TPDialect.h"
#include "tp/Dialect/TP/IR/TPAttrs.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tp;

#include "tp/Dialect/TP/IR/TPDialect.cpp.inc"

void TPDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "tp/Dialect/TP/IR/TPOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Discardable attributes on function arguments and results
//===----------------------------------------------------------------------===//

/// Verifies a `tp.init` descriptor: a dictionary with a `kind` and the
/// fields that kind needs (docs/models.md gives the generator).
static LogicalResult
verifyInitAttribute(Attribute value, Type type,
                    llvm::function_ref<InFlightDiagnostic()> emitError) {
  auto dict = dyn_cast<DictionaryAttr>(value);
  if (!dict)
    return emitError() << "'tp.init' must be a dictionary, got " << value;
  if (!isa<RankedTensorType>(type))
    return emitError() << "'tp.init' needs a ranked tensor, got " << type;
  auto kind = dict.getAs<StringAttr>("kind");
  if (!kind)
    return emitError() << "'tp.init' needs a string 'kind'";
  auto needInt = [&](StringRef field) -> LogicalResult {
    if (!dict.getAs<IntegerAttr>(field))
      return emitError() << "'tp.init' of kind '" << kind.getValue()
                         << "' needs an integer '" << field << "'";
    return success();
  };
  auto needFloat = [&](StringRef field) -> LogicalResult {
    auto f = dict.getAs<FloatAttr>(field);
    if (!f)
      return emitError() << "'tp.init' of kind '" << kind.getValue()
                         << "' needs a float '" << field << "'";
    double v = f.getValueAsDouble();
    if (!std::isfinite(v))
      return emitError() << "'tp.init' field '" << field
                         << "' must be a finite number, got " << f;
    if (v < 0)
      return emitError() << "'tp.init' field '" << field
                         << "' must not be negative";
    return success();
  };
  StringRef k = kind.getValue();
  if (k == "normal")
    return failure(failed(needInt("seed")) || failed(needFloat("std")));
  if (k == "uniform") {
    if (failed(needInt("seed")) || failed(needFloat("scale")))
      return failure();
    // Draws in [-scale, scale]: past the element type's largest finite
    // value they would be inf.
    auto floatType =
        dyn_cast<FloatType>(cast<RankedTensorType>(type).getElementType());
    if (floatType) {
      double scale = dict.getAs<FloatAttr>("scale").getValueAsDouble();
      double largest =
          llvm::APFloat::getLargest(floatType.getFloatSemantics())
              .convertToDouble();
      if (scale > largest)
        return emitError() << "'tp.init' of kind 'uniform' draws up to "
                           << scale << ", past " << floatType
                           << "'s largest finite value " << largest;
    }
    return success();
  }
  if (k == "zeros" || k == "ones")
    return success();
  if (k == "integers") {
    if (failed(needInt("seed")) || failed(needInt("high")))
      return failure();
    if (dict.getAs<IntegerAttr>("high").getInt() < 1)
      return emitError() << "'tp.init' of kind 'integers' needs 'high' >= 1";
    return success();
  }
  return emitError() << "'tp.init' has unknown kind '" << k
                     << "'; expected 'normal', 'uniform', 'zeros', 'ones' or "
                        "'integers'";
}

/// Verifies one `tp.*` attribute attached to a value of type `type` (an
/// argument or result of `op`). `emitError` opens a diagnostic that already
/// names the argument or result.
static LogicalResult
verifyValueAttribute(Operation *op, NamedAttribute attr, Type type,
                     llvm::function_ref<InFlightDiagnostic()> emitError) {
  StringRef name = attr.getName().getValue();
  if (name == TPDialect::getLayoutAttrName()) {
    auto layout = dyn_cast<LayoutAttr>(attr.getValue());
    if (!layout)
      return emitError() << "'" << name << "' must be a #tp.layout, got "
                         << attr.getValue();
    return verifyLayoutForType(layout, type, op, emitError);
  }
  if (name == TPDialect::getParamAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return emitError() << "'" << name << "' must be a unit attribute, got "
                         << attr.getValue();
    if (!isa<RankedTensorType>(type))
      return emitError() << "'" << name
                         << "' needs a ranked tensor, got " << type;
    return success();
  }
  if (name == TPDialect::getGlobalShapeAttrName()) {
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!shape)
      return emitError() << "'" << name
                         << "' must be an array<i64>, got " << attr.getValue();
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return emitError() << "'" << name << "' needs a ranked tensor, got "
                         << type;
    if (static_cast<int64_t>(shape.size()) != tensor.getRank())
      return emitError() << "'" << name << "' has " << shape.size()
                         << " dimensions but the type " << type << " has "
                         << tensor.getRank();
    for (auto [i, size] : llvm::enumerate(shape.asArrayRef()))
      if (size < 0)
        return emitError() << "'" << name << "' dimension " << i
                           << " has negative size " << size;
    return success();
  }
  if (name == TPDialect::getInitAttrName())
    return verifyInitAttribute(attr.getValue(), type, emitError);
  if (name == TPDialect::getNameAttrName()) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text)
      return emitError() << "'" << name << "' must be a string, got "
                         << attr.getValue();
    if (text.getValue().empty())
      return emitError() << "'" << name << "' must not be empty";
    return success();
  }
  if (name == TPDialect::getStateAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return emitError() << "'" << name << "' must be a unit attribute, got "
                         << attr.getValue();
    return success();
  }
  if (name == TPDialect::getSourceAttrName()) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto offsets = dict ? dict.getAs<DenseI64ArrayAttr>("offsets") : nullptr;
    auto shape = dict ? dict.getAs<DenseI64ArrayAttr>("shape") : nullptr;
    if (!offsets || !shape || dict.size() != 2)
      return emitError() << "'" << name
                         << "' must be {offsets = array<i64>, shape = "
                            "array<i64>}, got "
                         << attr.getValue();
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return emitError() << "'" << name
                         << "' needs a statically shaped tensor, got " << type;
    if (offsets.size() != tensor.getRank() || shape.size() != tensor.getRank())
      return emitError() << "'" << name << "' has " << offsets.size()
                         << " offsets and " << shape.size()
                         << " dimensions for a tensor of rank "
                         << tensor.getRank();
    for (int64_t d = 0; d < tensor.getRank(); ++d)
      if (offsets[d] < 0 || offsets[d] + tensor.getDimSize(d) > shape[d])
        return emitError() << "'" << name << "': dimension " << d
                           << " of size " << tensor.getDimSize(d)
                           << " at offset " << offsets[d]
                           << " does not fit the stored size " << shape[d];
    return success();
  }
  if (name == TPDialect::getUpdatesAttrName())
    return emitError() << "'" << name
                       << "' belongs on function results, not arguments";
  return emitError() << "unknown attribute '" << name
                     << "'; the tp dialect defines '"
                     << TPDialect::getLayoutAttrName() << "', '"
                     << TPDialect::getParamAttrName() << "', '"
                     << TPDialect::getGlobalShapeAttrName() << "', '"
                     << TPDialect::getInitAttrName() << "', '"
                     << TPDialect::getNameAttrName() << "', '"
                     << TPDialect::getSourceAttrName() << "', '"
                     << TPDialect::getStateAttrName() << "' and '"
                     << TPDialect::getUpdatesAttrName() << "'";
}

LogicalResult TPDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  Type type;
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    type = fn.getArgumentTypes()[argIndex];
  else
    type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  return verifyValueAttribute(op, attr, type, [&]() {
    return op->emitOpError() << "argument " << argIndex << ": ";
  });
}

LogicalResult TPDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  // MLIR only attaches result attributes to function-like ops.
  auto fn = cast<FunctionOpInterface>(op);
  if (attr.getName() == getUpdatesAttrName()) {
    // The argument this result replaces on the next call: same type.
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || !index.getType().isInteger(64))
      return op->emitOpError()
             << "result " << resultIndex << ": '" << getUpdatesAttrName()
             << "' must be an i64 argument index, got " << attr.getValue();
    int64_t arg = index.getInt();
    ArrayRef<Type> argTypes = fn.getArgumentTypes();
    if (arg < 0 || arg >= static_cast<int64_t>(argTypes.size()))
      return op->emitOpError()
             << "result " << resultIndex << ": '" << getUpdatesAttrName()
             << "' names argument " << arg << " but the function has "
             << argTypes.size() << " arguments";
    // After partitioning both sides have local types: compare the global
    // ones (tp.global_shape) where they are recorded.
    auto globalType = [&](Type type, DictionaryAttr attrs) -> Type {
      auto tensor = dyn_cast<RankedTensorType>(type);
      auto shape = attrs ? attrs.getAs<DenseI64ArrayAttr>(
                               getGlobalShapeAttrName())
                         : DenseI64ArrayAttr();
      if (!tensor || !shape)
        return type;
      return RankedTensorType::get(shape.asArrayRef(),
                                   tensor.getElementType());
    };
    Type argType = globalType(argTypes[arg], fn.getArgAttrDict(arg));
    Type resultType = globalType(fn.getResultTypes()[resultIndex],
                                 fn.getResultAttrDict(resultIndex));
    if (argType != resultType)
      return op->emitOpError()
             << "result " << resultIndex << ": '" << getUpdatesAttrName()
             << "' names argument " << arg << " of type " << argType
             << " but the result has type " << resultType;
    return success();
  }
  return verifyValueAttribute(op, attr, fn.getResultTypes()[resultIndex], [&]() {
    return op->emitOpError() << "result " << resultIndex << ": ";
  });
}

//===----------------------------------------------------------------------===//
// Discardable attributes on operations: the planner's per-op decisions
//===----------------------------------------------------------------------===//

LogicalResult TPDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  bool operands = name == getOperandLayoutsAttrName();
  bool captured = name == getCapturedLayoutsAttrName();
  if (!operands && !captured && name != getResultLayoutsAttrName()) {
    // tp.* attributes of function arguments/results are verified there.
    if (name == getLayoutAttrName() || name == getParamAttrName() ||
        name == getGlobalShapeAttrName() || name == getInitAttrName() ||
        name == getNameAttrName() || name == getSourceAttrName())
      return op->emitOpError()
             << "'" << name
             << "' belongs on function arguments and results, not on ops";
    return op->emitOpError() << "unknown attribute '" << name
                             << "'; ops carry only '"
                             << getOperandLayoutsAttrName() << "', '"
                             << getResultLayoutsAttrName() << "' and '"
                             << getCapturedLayoutsAttrName() << "'";
  }
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!array)
    return op->emitOpError() << "'" << name << "' must be an array, got "
                             << attr.getValue();
  SmallVector<Value> capturedValues;
  SmallVector<Type> capturedTypes;
  if (captured) {
    capturedValues = getCapturedTensors(op);
    for (Value v : capturedValues)
      capturedTypes.push_back(v.getType());
  }
  TypeRange types = operands   ? TypeRange(op->getOperandTypes())
                    : captured ? TypeRange(capturedTypes)
                               : TypeRange(op->getResultTypes());
  if (array.size() != types.size())
    return op->emitOpError() << "'" << name << "' has " << array.size()
                             << " entries for " << types.size()
                             << (operands   ? " operands"
                                 : captured ? " captured tensors"
                                            : " results");
  for (auto [index, entry, type] : llvm::enumerate(array, types)) {
    size_t i = index;
    if (isa<UnitAttr>(entry)) {
      if (isa<RankedTensorType>(type))
        return op->emitOpError() << "'" << name << "' entry " << i
                                 << " must be a #tp.layout for " << type;
      continue;
    }
    auto layout = dyn_cast<LayoutAttr>(entry);
    if (!layout)
      return op->emitOpError() << "'" << name << "' entry " << i
                               << " must be a #tp.layout or unit, got "
                               << entry;
    if (failed(verifyLayoutForType(layout, type, op, [&]() {
          return op->emitOpError() << "'" << name << "' entry " << i << ": ";
        })))
      return failure();
  }
  return success();
}
