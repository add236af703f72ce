//===- Dialects.cpp - C API: the tp dialect ---------------------*- C++ -*-===//

#include "tp-c/Dialects.h"

#include "tp/Dialect/TP/IR/TPDialect.h"
#include "tp/InitTP.h"

#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(TP, tp, mlir::tp::TPDialect)

void tpRegisterDialects(MlirDialectRegistry registry) {
  mlir::tp::registerTPDialects(*unwrap(registry));
}
