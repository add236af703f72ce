//===- Init.h - Initial values and element conversions ----------*- C++ -*-===//
//
// The generators of docs/models.md ("Parameter initialisation") and
// docs/model-abi.md (`integers`), and the stores and loads of one element
// of each dtype. Floating-point values are produced in double and rounded
// once to the storage type, to nearest-even: f32 and f16 from the double,
// bf16 from the f32 (the f32 bit pattern rounded to its top 16 bits). And
// the copies of a device's block out of a stored tensor (a checkpoint's),
// converting another floating-point dtype with one rounding.
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_INIT_H
#define TP_RUNNER_INIT_H

#include "Model.h"

#include <cstdint>

namespace tprun {

uint64_t splitmix64(uint64_t x);
double initNormal(uint64_t seed, double std, uint64_t i);
double initUniform(uint64_t seed, double scale, uint64_t i);
uint64_t initInteger(uint64_t seed, uint64_t high, uint64_t i);

uint16_t doubleToHalf(double value);
float halfToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);
/// One rounding to nearest-even from the double (not through the f32).
uint16_t doubleToBFloat16(double value);
float bfloat16ToFloat(uint16_t bits);

/// Stores `value` as element `index` of an array of `dtype`. Integer dtypes
/// truncate towards zero (i1: non-zero is 1).
void storeDouble(DType dtype, void *data, int64_t index, double value);
/// Stores an integer (i1: non-zero is 1; floats: rounded as a double).
void storeInteger(DType dtype, void *data, int64_t index, int64_t value);
/// Element `index` of an array of `dtype`, as a double.
double loadDouble(DType dtype, const void *data, int64_t index);

// The copies below index the stored tensor, the one a checkpoint holds and
// the generators draw (docs/model-abi.md, "source"): the buffer's global
// element at position p is the stored tensor's element at p +
// `buffer.sourceOffsets`, flat row-major index in `buffer.sourceShape`
// (without a source: p itself in `buffer.globalShape`). `offsets` is the
// local block's position in the buffer's global value.

/// Fills a local block: element l of the local array (row-major over
/// `buffer.localShape`) is the global element at `offsets + l`, generated
/// by `buffer.init` at its stored index, or zero where that position is
/// past the global shape.
void fillLocal(const Buffer &buffer, const std::vector<int64_t> &offsets,
               void *data);

/// Fills a local block from the stored tensor `stored` (row-major, elements
/// of `buffer.dtype`): element l of the local array is the global element
/// at `offsets + l`, or zero where that position is past the global shape.
void copyLocal(const Buffer &buffer, const std::vector<int64_t> &offsets,
               const void *stored, void *data);

/// As copyLocal, from a stored tensor of `from`, another floating-point
/// dtype than `buffer.dtype`: each element converted with one rounding to
/// nearest-even (exact when the buffer's dtype is wider).
void copyLocalConverted(const Buffer &buffer,
                        const std::vector<int64_t> &offsets, DType from,
                        const void *stored, void *data);

/// The position in the stored tensor (one index per dimension) of element
/// `local` of a local block at `offsets`: its global position plus the
/// source offsets.
std::vector<int64_t> storedPosition(const Buffer &buffer,
                                    const std::vector<int64_t> &offsets,
                                    int64_t local);

} // namespace tprun

#endif // TP_RUNNER_INIT_H
