//===- tp-opt.cpp - the tp-opt driver ---------------------------*- C++ -*-===//
//
// An mlir-opt-style driver: every upstream dialect, extension and pass, plus
// the tp dialect and the tp- passes. Before MLIR parses an input file, its
// text is checked for what MLIR 22's parser and verifiers crash on
// (tp::findUpstreamParserCrash): those are an error at their place.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/IR/InputChecks.h"
#include "tp/InitTP.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tp::registerTPPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::tp::registerTPDialects(registry);

  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "tp-opt: tensor-parallel compiler driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, input, output, registry));

  // The input is read once (a file or stdin), checked, then parsed from the
  // same buffer: stdin cannot be read twice, and is checked like a file.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      mlir::openInputFile(input, &error);
  if (!buffer) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (std::optional<mlir::tp::UpstreamCrash> crash =
          mlir::tp::findUpstreamParserCrash(buffer->getBuffer())) {
    llvm::SourceMgr sourceMgr;
    const char *start = buffer->getBufferStart();
    sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(start + crash->offset),
                           llvm::SourceMgr::DK_Error, crash->message);
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> out =
      mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(out->os(), std::move(buffer), registry, config)))
    return 1;
  out->keep();
  return 0;
}
