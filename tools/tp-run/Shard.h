//===- Shard.h - tp-run's --tp-shard ----------------------------*- C++ -*-===//
//
// tp-run shards through the same pipeline as `tp-opt --tp-shard`, built from
// its options struct rather than a textual pipeline: the plan report's path
// (in the work folder, under $TMPDIR) may hold spaces or braces, which the
// textual form of a pass option cannot carry.
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUN_SHARD_H
#define TP_RUN_SHARD_H

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

namespace tprun {

/// Adds --tp-shard to `pm`: the options `options` as tp-opt spells them
/// ("tp=2 sequence-parallel=off"; a --shard-options text), the plan report
/// written to `report`. Dies naming the options when they do not parse.
void addShardPipeline(mlir::OpPassManager &pm, llvm::StringRef options,
                      llvm::StringRef report);

} // namespace tprun

#endif // TP_RUN_SHARD_H
