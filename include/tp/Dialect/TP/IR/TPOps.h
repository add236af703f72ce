//===- TPOps.h - tp dialect operations --------------------------*- C++ -*-===//

#ifndef TP_DIALECT_TP_IR_TPOPS_H
#define TP_DIALECT_TP_IR_TPOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tp/Dialect/TP/IR/TPAttrs.h"
#include "tp/Dialect/TP/IR/TPDialect.h"

#define GET_OP_CLASSES
#include "tp/Dialect/TP/IR/TPOps.h.inc"

namespace mlir::tp {

/// Finds the `tp.mesh` that `meshRef` names, looking up from `from`.
/// Returns null when there is none.
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr meshRef,
                  SymbolTableCollection *symbolTable = nullptr);

/// Checks that `layout` can describe a value of type `type` (a ranked
/// tensor with a global shape) in the scope of `from`: the mesh and every axis
/// exist, the ranks agree, and no dynamic dimension is split. `emitError`
/// opens the diagnostic, so that callers can point at an op, an argument or a
/// result.
LogicalResult verifyLayoutForType(LayoutAttr layout, Type type, Operation *from,
                                  llvm::function_ref<InFlightDiagnostic()> emitError,
                                  SymbolTableCollection *symbolTable = nullptr);

/// The shape one device holds of a tensor of `globalShape` with `layout` on
/// `mesh`: split dimensions are divided by their group size, rounded up (the
/// last blocks are padded when the size does not divide). Dynamic dimensions
/// stay dynamic.
SmallVector<int64_t> getLocalShape(ArrayRef<int64_t> globalShape,
                                   LayoutAttr layout, MeshOp mesh);

/// The ranked tensors that `op`'s regions use but that are defined outside
/// `op` (e.g. the table a linalg body gathers from), in first-use order.
/// The planner records their layouts in `tp.captured_layouts`.
SmallVector<Value> getCapturedTensors(Operation *op);

/// The name a user addresses argument `index` of `fn` by: its `tp.name`,
/// else its NameLoc, else `arg<index>` (docs/model-abi.md).
std::string getArgumentName(FunctionOpInterface fn, unsigned index);

/// Writes the name getArgumentName gives each argument today into its
/// `tp.name` where it has none, so that every argument keeps the name of
/// the user's signature when a transformation inserts, splits or removes
/// arguments before it (a fused weight's pieces, hoisted constants).
void nameArguments(FunctionOpInterface fn);

/// True when every split dimension of `globalShape` divides evenly.
bool isEvenlyDivisible(ArrayRef<int64_t> globalShape, LayoutAttr layout,
                       MeshOp mesh);

} // namespace mlir::tp

#endif // TP_DIALECT_TP_IR_TPOPS_H
