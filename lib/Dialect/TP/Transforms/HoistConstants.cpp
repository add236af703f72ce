//===- HoistConstants.cpp - weights baked in become parameters ----*- C++ -*-===//
//
// --tp-hoist-constants (Passes.td has the contract). Per function that no
// op of the module calls: name the arguments, then for each top-level
// constant that is a weight (ConstantWeights.h), in program order, append
// one `tp.param` argument per distinct value and replace the constant; then
// write every hoisted value into one safetensors file: an 8-byte
// little-endian header length, the JSON header (name -> dtype, shape,
// data_offsets), the raw row-major bytes.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/Transforms/Passes.h"

#include "tp/Analysis/ConstantWeights.h"
#include "tp/Dialect/TP/IR/InputChecks.h"
#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tp {
#define GEN_PASS_DEF_HOISTCONSTANTSPASS
#include "tp/Dialect/TP/Transforms/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

namespace {
struct Hoisted {
  std::string name;
  RankedTensorType type;
  ArrayRef<char> data;
};
} // namespace

/// The safetensors dtype of `type`, or "" when it has none we write.
static StringRef safetensorsDtype(Type type) {
  if (type.isF32())
    return "F32";
  if (type.isF16())
    return "F16";
  if (type.isBF16())
    return "BF16";
  if (type.isF64())
    return "F64";
  if (type.isSignlessInteger(64) || type.isSignedInteger(64))
    return "I64";
  if (type.isSignlessInteger(32) || type.isSignedInteger(32))
    return "I32";
  if (type.isSignlessInteger(16) || type.isSignedInteger(16))
    return "I16";
  if (type.isSignlessInteger(8) || type.isSignedInteger(8))
    return "I8";
  if (type.isUnsignedInteger(8))
    return "U8";
  return "";
}

/// The row-major bytes of a constant's value, or failure (an elided or
/// missing resource, packed booleans).
static FailureOr<ArrayRef<char>> rawBytes(Attribute value,
                                          RankedTensorType type) {
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (dense.isSplat() || type.getElementType().isInteger(1))
      return failure();
    return dense.getRawData();
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return failure();
    return blob->getData();
  }
  return failure();
}

static LogicalResult writeSafetensors(StringRef path,
                                      ArrayRef<Hoisted> tensors,
                                      std::string &error) {
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const Hoisted &t : tensors) {
    llvm::json::Array shape;
    for (int64_t s : t.type.getShape())
      shape.push_back(s);
    header[t.name] = llvm::json::Object{
        {"dtype", safetensorsDtype(t.type.getElementType())},
        {"shape", std::move(shape)},
        {"data_offsets",
         llvm::json::Array{offset, offset + uint64_t(t.data.size())}}};
    offset += t.data.size();
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(header));
  while (text.size() % 8)
    text += ' ';
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = ec.message();
    return failure();
  }
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i)
    out << char((length >> (8 * i)) & 0xff);
  out << text;
  for (const Hoisted &t : tensors)
    out.write(t.data.data(), t.data.size());
  out.close();
  if (out.has_error()) {
    error = out.error().message();
    out.clear_error();
    return failure();
  }
  return success();
}

namespace {
struct HoistConstantsPass
    : public tp::impl::HoistConstantsPassBase<HoistConstantsPass> {
  using HoistConstantsPassBase::HoistConstantsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty()) {
      module.emitError() << "tp-hoist-constants needs file=PATH, the "
                            "safetensors file the values are written to";
      return signalPassFailure();
    }
    if (largeConstantBytes < 1 || weightConstantBytes < 1) {
      module.emitError() << "tp-hoist-constants: large-constant-bytes="
                         << int64_t(largeConstantBytes)
                         << " and weight-constant-bytes="
                         << int64_t(weightConstantBytes)
                         << " must be at least 1";
      return signalPassFailure();
    }
    // A blob of the wrong size would be copied into the file as it is
    // (MLIR accepts any blob): the runner would read past it or load it off
    // by the missing bytes.
    if (failed(checkResourceBlobs(module, getArgument())))
      return signalPassFailure();
    ConstantWeightOptions weights;
    weights.largeBytes = largeConstantBytes;
    weights.weightBytes = weightConstantBytes;

    SymbolTableCollection symbols;
    SymbolUserMap users(symbols, module);
    std::vector<Hoisted> hoisted;
    llvm::StringSet<> names;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock() ||
          !users.getUsers(func).empty())
        continue;
      SmallVector<arith::ConstantOp> constants;
      for (auto constant : func.getBody().front().getOps<arith::ConstantOp>())
        if (isWeightConstant(constant, weights))
          constants.push_back(constant);
      if (constants.empty())
        continue;
      nameArguments(cast<FunctionOpInterface>(func.getOperation()));
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        names.insert(tp::getArgumentName(func, i));
      DenseMap<Attribute, BlockArgument> byValue;
      for (arith::ConstantOp constant : constants) {
        Attribute value = constant.getValue();
        auto type = cast<RankedTensorType>(constant.getType());
        BlockArgument &arg = byValue[value];
        if (!arg) {
          FailureOr<ArrayRef<char>> data = rawBytes(value, type);
          if (failed(data) || safetensorsDtype(type.getElementType()).empty()) {
            constant.emitError()
                << "tp-hoist-constants: cannot write the value of this "
                << type << " constant to a safetensors file"
                << (failed(data) ? " (its data is elided or packed)"
                                 : " (no safetensors dtype)");
            return signalPassFailure();
          }
          std::string name;
          if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
            name = resource.getRawHandle().getKey().str();
          else if (auto loc = dyn_cast<NameLoc>(constant.getLoc()))
            name = loc.getName().str();
          else
            name = ("constant" + Twine(hoisted.size())).str();
          if (names.contains(name))
            name = (name + "." + Twine(hoisted.size())).str();
          names.insert(name);
          MLIRContext *ctx = &getContext();
          NamedAttrList attrs;
          attrs.set(TPDialect::getParamAttrName(), UnitAttr::get(ctx));
          attrs.set(TPDialect::getNameAttrName(), StringAttr::get(ctx, name));
          unsigned index = func.getNumArguments();
          if (failed(func.insertArgument(index, type,
                                         attrs.getDictionary(ctx),
                                         constant.getLoc())))
            return signalPassFailure();
          arg = func.getArgument(index);
          hoisted.push_back({name, type, *data});
        }
        constant.getResult().replaceAllUsesWith(arg);
      }
      // (The values live on in the context: attributes and resource
      // blobs are owned there.)
      for (arith::ConstantOp constant : constants)
        constant->erase();
    }
    std::string error;
    if (failed(writeSafetensors(file, hoisted, error))) {
      module.emitError() << "tp-hoist-constants: cannot write '" << file
                         << "': " << error;
      return signalPassFailure();
    }
  }
};
} // namespace
