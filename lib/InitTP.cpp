//===- InitTP.cpp - register everything tp-opt provides ---------*- C++ -*-===//

#include "tp/InitTP.h"

#include "tp/Dialect/TP/IR/TPDialect.h"

#include "mlir/IR/DialectRegistry.h"

void mlir::tp::registerTPDialects(DialectRegistry &registry) {
  registry.insert<TPDialect>();
}

void mlir::tp::registerTPPasses() {
  // The tp- passes register here as they land (include/tp/Dialect/TP/Transforms).
}
