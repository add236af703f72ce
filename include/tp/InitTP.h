//===- InitTP.h - register everything tp-opt provides -----------*- C++ -*-===//
//
// Entry points for tools and for compilers that embed tp-opt's dialect and
// passes.
//
//===----------------------------------------------------------------------===//

#ifndef TP_INITTP_H
#define TP_INITTP_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::tp {

/// Adds the `tp` dialect (and the external models it attaches to upstream
/// ops) and upstream's `shard` dialect (the input of tp-import-shard) to
/// `registry`.
void registerTPDialects(DialectRegistry &registry);

/// Registers every `tp-` pass and pipeline with the global pass registry.
void registerTPPasses();

} // namespace mlir::tp

#endif // TP_INITTP_H
