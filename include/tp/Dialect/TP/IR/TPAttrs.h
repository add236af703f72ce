//===- TPAttrs.h - tp dialect attributes ------------------------*- C++ -*-===//

#ifndef TP_DIALECT_TP_IR_TPATTRS_H
#define TP_DIALECT_TP_IR_TPATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"

#include "tp/Dialect/TP/IR/TPEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tp/Dialect/TP/IR/TPAttrs.h.inc"

#endif // TP_DIALECT_TP_IR_TPATTRS_H
