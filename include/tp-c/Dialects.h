/*===-- tp-c/Dialects.h - C API: the tp dialect -------------------*- C -*-===*\
|*                                                                            *|
|* The tp dialect for C hosts, in the style of MLIR's C API (mlir-c/IR.h).    *|
|* Link TP::TPCAPI (libTPCAPI.so), which also carries MLIR's core C API:      *|
|* Debian's libMLIR.so does not export it (docs/embedding.md).                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TP_C_DIALECTS_H
#define TP_C_DIALECTS_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The tp dialect's handle (mlirDialectHandleInsertDialect,
/// mlirDialectHandleLoadDialect, ...): the dialect alone, without the
/// sharding rules of the upstream ops.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(TP, tp);

/// Adds the tp dialect and the registry extensions that attach the planner's
/// sharding rules to the upstream linalg, tensor, arith and math ops
/// (mlir::tp::registerTPDialects). Register the upstream dialects too, e.g.
/// with mlirRegisterAllDialects.
MLIR_CAPI_EXPORTED void tpRegisterDialects(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif // TP_C_DIALECTS_H
