/*===- shard.c - the tp C API from a C program ------------------*- C -*-===*\
|*                                                                            *|
|* Compiled as C99 (test/CAPI/CMakeLists.txt): parses a two-matmul MLP from a *|
|* string, shards it for 4 devices with tpRunShardPipeline, counts the        *|
|* tp.all_reduce ops and prints the plan report; then the same through a      *|
|* textual pipeline, and the error path.                                      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

// RUN: tp-capi-test 2>&1 | FileCheck %s

#include "tp-c/Dialects.h"
#include "tp-c/Passes.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kMlp =
    "func.func @mlp(%x: tensor<8x1024xf32>,\n"
    "    %w1: tensor<1024x4096xf32> {tp.param},\n"
    "    %w2: tensor<4096x1024xf32> {tp.param}) -> tensor<8x1024xf32> {\n"
    "  %z = arith.constant dense<0.0> : tensor<8x4096xf32>\n"
    "  %h = linalg.matmul\n"
    "      ins(%x, %w1 : tensor<8x1024xf32>, tensor<1024x4096xf32>)\n"
    "      outs(%z : tensor<8x4096xf32>) -> tensor<8x4096xf32>\n"
    "  %r = linalg.max ins(%h, %z : tensor<8x4096xf32>, tensor<8x4096xf32>)\n"
    "      outs(%z : tensor<8x4096xf32>) -> tensor<8x4096xf32>\n"
    "  %z2 = arith.constant dense<0.0> : tensor<8x1024xf32>\n"
    "  %y = linalg.matmul\n"
    "      ins(%r, %w2 : tensor<8x4096xf32>, tensor<4096x1024xf32>)\n"
    "      outs(%z2 : tensor<8x1024xf32>) -> tensor<8x1024xf32>\n"
    "  return %y : tensor<8x1024xf32>\n"
    "}\n";

/* The report arrives in pieces: append them to a growing buffer. */
struct Buffer {
  char *data;
  size_t size;
};

static void appendToBuffer(MlirStringRef piece, void *userData) {
  struct Buffer *buffer = (struct Buffer *)userData;
  buffer->data = (char *)realloc(buffer->data, buffer->size + piece.length + 1);
  memcpy(buffer->data + buffer->size, piece.data, piece.length);
  buffer->size += piece.length;
  buffer->data[buffer->size] = '\0';
}

static void printToStdout(MlirStringRef piece, void *userData) {
  (void)userData;
  fwrite(piece.data, 1, piece.length, stdout);
}

static MlirWalkResult countAllReduces(MlirOperation op, void *userData) {
  MlirIdentifier name = mlirOperationGetName(op);
  if (mlirStringRefEqual(mlirIdentifierStr(name),
                         mlirStringRefCreateFromCString("tp.all_reduce")))
    ++*(int *)userData;
  return MlirWalkResultAdvance;
}

static MlirLogicalResult printDiagnostic(MlirDiagnostic diagnostic,
                                         void *userData) {
  (void)userData;
  printf("diagnostic: ");
  mlirDiagnosticPrint(diagnostic, printToStdout, NULL);
  printf("\n");
  return mlirLogicalResultSuccess();
}

int main(void) {
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  tpRegisterDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  tpRegisterPasses();
  mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);

  /* 1. tpRunShardPipeline, with the plan report in memory. */
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kMlp));
  if (mlirModuleIsNull(module))
    return 1;
  struct Buffer report = {NULL, 0};
  MlirLogicalResult result = tpRunShardPipeline(
      module, mlirStringRefCreateFromCString("tp=4 sequence-parallel=off"),
      appendToBuffer, &report);
  if (mlirLogicalResultIsFailure(result))
    return 1;
  int allReduces = 0;
  mlirOperationWalk(mlirModuleGetOperation(module), countAllReduces,
                    &allReduces, MlirWalkPostOrder);
  printf("tp.all_reduce ops: %d\n", allReduces);
  printf("report: %s", report.data);
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");
  free(report.data);
  mlirModuleDestroy(module);
  // CHECK: tp.all_reduce ops: 1
  // CHECK: report: {
  // CHECK:   "functions": [
  // CHECK:       "function": "mlp",
  // CHECK:           "collective": "all_reduce",
  // CHECK:         "collectives": 1,
  // CHECK: tp.mesh @tp ["tp" = 4]
  // CHECK: func.func @mlp(
  // CHECK-SAME: tensor<1024x1024xf32> {tp.global_shape = array<i64: 1024, 4096>, tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.param}
  // CHECK: linalg.matmul
  // CHECK: linalg.matmul
  // CHECK: tp.all_reduce sum %{{.*}} over @tp ["tp"] : tensor<8x1024xf32>

  /* 2. The same pipeline by name, in a pass manager of the host's. */
  module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kMlp));
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString("builtin.module(tp-shard{tp=2})"),
      printToStdout, NULL);
  if (mlirLogicalResultIsFailure(parsed))
    return 1;
  result = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  allReduces = 0;
  mlirOperationWalk(mlirModuleGetOperation(module), countAllReduces,
                    &allReduces, MlirWalkPostOrder);
  printf("pipeline: %s, tp.all_reduce ops: %d\n",
         mlirLogicalResultIsSuccess(result) ? "success" : "failure",
         allReduces);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  // CHECK: pipeline: success, tp.all_reduce ops: 1

  /* 3. Bad options: a diagnostic and a failure, the module untouched. */
  module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kMlp));
  result = tpRunShardPipeline(
      module, mlirStringRefCreateFromCString("tp=4 sequence-parallel=maybe"),
      NULL, NULL);
  printf("bad option value: %s\n",
         mlirLogicalResultIsFailure(result) ? "failure" : "success");
  result = tpRunShardPipeline(
      module, mlirStringRefCreateFromCString("tp=4 no-such-option=1"), NULL,
      NULL);
  printf("unknown option: %s\n",
         mlirLogicalResultIsFailure(result) ? "failure" : "success");
  mlirModuleDestroy(module);
  // CHECK: diagnostic: tp-propagate: sequence-parallel='maybe' must be auto, on or off
  // CHECK: bad option value: failure
  // CHECK: diagnostic: tp-shard: bad options 'tp=4 no-such-option=1': no such option no-such-option
  // CHECK: unknown option: failure

  mlirContextDestroy(ctx);
  return 0;
}
