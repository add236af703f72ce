/*===- embed-shard-c.c - embed-shard, in C on the C API ----------*- C -*-===*\
|*                                                                            *|
|* embed-shard-c INPUT.mlir ["tp=4 sequence-parallel=off"]: embed-shard.cpp   *|
|* through include/tp-c; prints the program each device runs.                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "tp-c/Dialects.h"
#include "tp-c/Passes.h"

#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <stdlib.h>

static void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: embed-shard-c INPUT.mlir [OPTIONS]\n");
    return 2;
  }

  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  tpRegisterDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);

  MlirModule module = mlirModuleCreateParseFromFile(
      context, mlirStringRefCreateFromCString(argv[1]));
  if (mlirModuleIsNull(module))
    return 1;

  const char *options = argc == 3 ? argv[2] : "";
  if (mlirLogicalResultIsFailure(tpRunShardPipeline(
          module, mlirStringRefCreateFromCString(options), NULL, NULL)))
    return 1;

  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return 0;
}
