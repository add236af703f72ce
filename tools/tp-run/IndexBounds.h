//===- IndexBounds.h - integer inputs that index tensors --------*- C++ -*-===//
//
// A token id past the vocabulary reads past the embedding table (tp=1), or
// makes every device mask the row away (a table split by rows): wrong
// either way, and torch-mlir's asserts on it end the ranks with a message
// on stdout that names neither the input nor the position. tp-run finds,
// before sharding, every integer argument whose elements are used as an
// index of a tensor dimension of static size N:
//
//   argument --(tensor.expand_shape / collapse_shape / cast / extract_slice,
//               linalg.transpose / broadcast)--> an input of a linalg.generic
//   block argument --(arith.index_cast[ui] / extsi / extui)--> index d of a
//   tensor.extract of a tensor whose dimension d has N elements
//
// (a scalar tensor.extract of the argument counts as a block argument). The
// bound is the smallest such N: every element must lie in [0, N). tp-run
// writes it into model.json ("index_bound"), where tp-runner checks every
// element of the input's values before the first call and names the
// input and the index of the first one outside (docs/model-abi.md).
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUN_INDEXBOUNDS_H
#define TP_RUN_INDEXBOUNDS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace tprun {

/// The argument attribute that carries the bound through --tp-shard.
constexpr const char *kIndexBoundAttr = "tp_run.index_bound";

/// Sets kIndexBoundAttr (an i64) on every integer argument of `fn` whose
/// elements index a tensor dimension; returns how many were bounded.
unsigned annotateIndexBounds(mlir::func::FuncOp fn);

} // namespace tprun

#endif // TP_RUN_INDEXBOUNDS_H
