//===- RoutedContraction.h - contractions over per-row expert weights -*- C++ -*-//
//
// A mixture of experts as Hugging Face's `batched_mm` experts write it
// gathers, for every (token, choice) row p, its expert's whole weight
// matrix out of the stack of experts and multiplies the row by its own
// copy:
//
//   %w = linalg.generic ins(%ids : tensor<Pxi64>) outs(tensor<PxOxK>) {
//          %e = <index computed from the id alone>
//          tensor.extract %stack[%e, linalg.index 1, linalg.index 2]  }
//   %y = linalg.batch_matmul ins(%w, %x : tensor<PxOxK>, tensor<PxKx1>)
//
// i.e. y[p, t, o] = sum_k x[p, t, k] * stack[e(p), o, k]: a routed GEMM.
// The rows can be bucketed by expert and each expert's weight read once by
// one GEMM over its rows (tp-route-experts), and the [P, O, K] copy need
// never exist (the planner's memory accounting).
//
// The match is by value, not by op name: any contraction
// (linalg::isaContractionOpInterface with an `acc + x * y` body) one of
// whose inputs is an all-parallel linalg.generic that yields a
// tensor.extract from a tensor defined outside it, where exactly one index
// of the extract is computed from the generic's inputs alone (the expert
// id: casts, the negative-index wrap, any pure arithmetic) and the others
// are loop indices (linalg.index, also through index arithmetic that
// cancels: the partitioner's `(i + offset) - offset`), the inputs reading
// only the loop that no loop index names (the rows). Mapped onto the contraction: the rows
// are its one batch dimension, the two loop indices are its reduction
// dimension and the weight's free dimension, the other input reads the
// rows, the reduction and at most one free dimension of its own (tokens
// per row).
//
//===----------------------------------------------------------------------===//

#ifndef TP_ANALYSIS_ROUTEDCONTRACTION_H
#define TP_ANALYSIS_ROUTEDCONTRACTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

#include <optional>
#include <string>

namespace mlir::tp {

/// A contraction whose weight operand is gathered per row from a stack of
/// experts. Loop dimensions are the contraction's.
struct RoutedContraction {
  linalg::LinalgOp contraction;
  /// The generic that gathers the weights, and its extract.
  linalg::GenericOp gather;
  tensor::ExtractOp extract;
  /// Which input of the contraction the gather is (0 or 1).
  unsigned weightInput = 0;
  /// The stack [experts, a, b] the gather reads, expert dimension first.
  Value stack;
  /// The gather's expert index (a value in its body), the ops of the body
  /// it is computed from, in order, and the gather's row loop.
  Value expertIndex;
  llvm::SetVector<Operation *> expertSlice;
  unsigned gatherRowLoop = 0;
  /// The contraction's loops: rows (its batch dimension), the reduction,
  /// the weight's free dimension (outputs) and the other input's free
  /// dimension (tokens per row), if any.
  unsigned rowLoop = 0, kLoop = 0, outLoop = 0;
  std::optional<unsigned> tokenLoop;
  /// Stack dimension 1 is the outputs (B_g = stack[g] is outputs x K, the
  /// GEMM's transposed B) or the reduction.
  bool transB = false;
  int64_t rows = 0, tokens = 1, outs = 0, k = 0, experts = 0;
  /// A 16-bit product into f32 from a zero fill whose only use rounds it
  /// back (torch-mlir's bf16 exports): that rounding generic, which the
  /// 16-bit grouped GEMM replaces; null when the types are one.
  linalg::GenericOp narrowing;
};

/// The routed form of `op`, or nullopt. `why` is left empty when `op` does
/// not read a gathered operand at all (nothing to say), and otherwise
/// names what keeps a contraction that reads a gather from being routed
/// (for a remark).
std::optional<RoutedContraction> matchRoutedContraction(linalg::LinalgOp op,
                                                        std::string &why);

/// Whether `gather` is the weight operand of a routed contraction and has
/// no other users: the routed program never materialises it.
bool isRoutedGatherOnly(Operation *gather);

/// The elementwise linalg.generic that is the only use of `result` and
/// rounds it to `narrow` (arith.truncf to nearest even; identity maps, its
/// init not read), or null: torch-mlir's 16-bit product, summed in f32 and
/// rounded back, which is the 16-bit GEMM's meaning. Shared with
/// tp-gemm-to-runtime, which folds the rounding into the GEMM.
linalg::GenericOp narrowingConsumer(Value result, Type narrow);

} // namespace mlir::tp

#endif // TP_ANALYSIS_ROUTEDCONTRACTION_H
