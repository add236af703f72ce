//===- DType.h - Element types and float conversions ------------*- C++ -*-===//
//
// Sizes and names of the tprt_dtype values, and the conversions between f32
// and the 16-bit floats (IEEE binary16 "f16" and bfloat16 "bf16"). Narrowing
// rounds to nearest, ties to even; NaN stays NaN (quiet), infinities stay
// infinite, values past the largest finite f16 become infinity and
// subnormals of both formats are kept.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_DTYPE_H
#define TPRT_COMMON_DTYPE_H

#include "tprt/tprt.h"

#include <cstddef>
#include <cstdint>

namespace tprt {

/// True for the six tprt_dtype values.
bool isValidDType(int dtype);
/// Bytes per element; 0 for an invalid dtype.
size_t dtypeSize(tprt_dtype dtype);
/// "f32", "bf16", ...; "?" for an invalid dtype.
const char *dtypeName(tprt_dtype dtype);
/// True for f16 and bf16.
inline bool isHalfType(tprt_dtype dtype) {
  return dtype == TPRT_F16 || dtype == TPRT_BF16;
}

uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);
float bfloat16ToFloat(uint16_t bits);

/// Widens `count` elements of f32, f16 or bf16 to f32.
void toFloat(tprt_dtype dtype, const void *src, float *dst, size_t count);
/// Narrows `count` f32 values to f32, f16 or bf16.
void fromFloat(tprt_dtype dtype, const float *src, void *dst, size_t count);

} // namespace tprt

#endif // TPRT_COMMON_DTYPE_H
