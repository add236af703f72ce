/*===-- tp-c/Passes.h - C API: the tp- passes and tp-shard --------*- C -*-===*\
|*                                                                            *|
|* The tp- passes for C hosts, in the style of MLIR's C API (mlir-c/Pass.h).  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TP_C_PASSES_H
#define TP_C_PASSES_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Registers every tp- pass and pipeline with MLIR's global registry, so that
/// textual pipelines name them (mlirParsePassPipeline,
/// mlirOpPassManagerAddPipeline: "builtin.module(tp-shard{tp=4})").
MLIR_CAPI_EXPORTED void tpRegisterPasses(void);

/// Runs the tp-shard pipeline (tp-propagate, tp-partition,
/// tp-optimize-collectives, canonicalize, cse, tp-verify-partitioned) on
/// `module`, in place. `options` is what `--tp-shard=` takes, e.g.
/// "tp=4 sequence-parallel=off" (docs/passes/shard.md); empty plans for the
/// module's tp.mesh. When `reportCallback` is not NULL it receives the JSON
/// plan report (the text `report=FILE` writes, docs/passes/propagate.md),
/// with `userData`, possibly in several pieces to be concatenated, before
/// this function returns. Errors, bad options included, are diagnostics of
/// the module's context (mlirContextAttachDiagnosticHandler); the result is
/// a failure then, and the module may be partly transformed.
MLIR_CAPI_EXPORTED MlirLogicalResult
tpRunShardPipeline(MlirModule module, MlirStringRef options,
                   MlirStringCallback reportCallback, void *userData);

#ifdef __cplusplus
}
#endif

#endif // TP_C_PASSES_H
