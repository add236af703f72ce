//===- FunctionEquivalence.cpp - functions equal but for their names ------===//
//
// See FunctionEquivalence.h.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/FunctionEquivalence.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

/// The function's attributes (inherent ones included) without its name.
static DictionaryAttr attributesButName(FunctionOpInterface fn) {
  NamedAttrList attrs(fn->getAttrDictionary());
  attrs.erase(SymbolTable::getSymbolAttrName());
  return attrs.getDictionary(fn->getContext());
}

llvm::hash_code mlir::tp::structuralHash(FunctionOpInterface fn) {
  llvm::hash_code hash =
      llvm::hash_combine(fn->getName(), attributesButName(fn));
  fn.getFunctionBody().walk([&](Operation *op) {
    hash = llvm::hash_combine(
        hash, OperationEquivalence::computeHash(
                  op, OperationEquivalence::ignoreHashValue,
                  OperationEquivalence::ignoreHashValue,
                  OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

bool mlir::tp::areIdenticalFunctions(FunctionOpInterface a,
                                     FunctionOpInterface b) {
  return a->getName() == b->getName() &&
         attributesButName(a) == attributesButName(b) &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getFunctionBody(), &b.getFunctionBody(),
             OperationEquivalence::IgnoreLocations);
}
