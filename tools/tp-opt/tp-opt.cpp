//===- tp-opt.cpp - the tp-opt driver ---------------------------*- C++ -*-===//
//
// An mlir-opt-style driver: every upstream dialect, extension and pass, plus
// the tp dialect and the tp- passes.
//
//===----------------------------------------------------------------------===//

#include "tp/InitTP.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tp::registerTPPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::tp::registerTPDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "tp-opt: tensor-parallel compiler driver\n", registry));
}
