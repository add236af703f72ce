//===- TPDialectPlugin.cpp - the tp dialect for stock mlir-opt --*- C++ -*-===//
//
// `mlir-opt --load-dialect-plugin=TPDialectPlugin.so`: adds the tp dialect
// and the registry extensions that attach the planner's sharding rules to
// the upstream linalg, tensor, arith and math ops (registerTPDialects).
// Without these extensions tp-propagate would see every upstream op as
// unknown and keep it replicated.
//
//===----------------------------------------------------------------------===//

#include "tp/InitTP.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_VISIBILITY_DEFAULT ::mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TPDialect", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::tp::registerTPDialects(*registry);
          }};
}
