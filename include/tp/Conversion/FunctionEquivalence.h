//===- FunctionEquivalence.h - functions equal but for their names -*- C++ -*-===//
//
// When two functions compute the same thing: the test tp-dedup-kernels
// merges functions by, and tp-fuse-attention reuses a kernel it built for
// an equal match by. A structural hash sorts candidates cheaply; the exact
// comparison decides.
//
//===----------------------------------------------------------------------===//

#ifndef TP_CONVERSION_FUNCTIONEQUIVALENCE_H
#define TP_CONVERSION_FUNCTIONEQUIVALENCE_H

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/Hashing.h"

namespace mlir::tp {

/// A hash equal for functions that areIdenticalFunctions: the operation
/// name, the attributes but the symbol name, then, for every operation of
/// the body in walk order, OperationEquivalence::computeHash with operands,
/// results and locations ignored (name, attributes, properties, result
/// types).
llvm::hash_code structuralHash(FunctionOpInterface fn);

/// Whether `a` and `b` are the same operation with the same attributes but
/// their symbol names (type, argument attributes, a kernel's sizes and
/// workgroup buffers) and bodies that OperationEquivalence finds
/// equivalent, locations ignored: calling one is calling the other.
bool areIdenticalFunctions(FunctionOpInterface a, FunctionOpInterface b);

} // namespace mlir::tp

#endif // TP_CONVERSION_FUNCTIONEQUIVALENCE_H
