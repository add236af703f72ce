//===- Reference.h - Outputs compared with a reference file -----*- C++ -*-===//
//
// tp-runner --reference FILE: rank 0 compares each output's global value
// with the tensor of the output's name in FILE (any dtype tp-runner reads,
// compared as doubles). The relative error is the one of tp-run --check:
//
//   max_i |a_i - b_i| / max_i |b_i|     (a: the output, b: the reference;
//                                        max_i |a_i - b_i| when every b_i
//                                        is 0; the second max over the
//                                        finite b_i)
//
// where equal values (infinities of the same sign included) differ by 0 and
// a NaN on either side makes the error NaN. An output matches when the
// error is finite and at most the limit: --reference-tol, else the default
// of its element type, the one tp-run --check uses (1e-5; 2e-2 for bf16 and
// f16 outputs, whose rounding alone is ~4e-3 relative).
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_REFERENCE_H
#define TP_RUNNER_REFERENCE_H

#include "Checkpoint.h"
#include "Model.h"

#include <string>
#include <vector>

namespace tprun {

/// The default of --reference-tol for an output of element type `dtype`:
/// 2e-2 for the 16-bit floats, 1e-5 for the others.
double defaultReferenceTolerance(DType dtype);

/// Compares output `output` (`data`: its global value) with `tensor` of
/// `reference`: prints "logits: matches reference to 3.2e-07 (relative,
/// limit 1e-05)" (or "differs from reference by ...") and returns true on a
/// match; else also sets `error` to a message naming the output, the file,
/// the error and the worst index.
bool compareWithReference(const Buffer &output, const std::vector<char> &data,
                          const Checkpoint &reference,
                          const CheckpointTensor &tensor, double limit,
                          std::string &error);

} // namespace tprun

#endif // TP_RUNNER_REFERENCE_H
