//===- DType.cpp - Element types and float conversions --------------------===//
//
// The f32 <-> f16 conversions follow F. Giesen's branch-light versions
// (float_to_half_fast3_rtne, half_to_float): normal values round by adding
// 0xfff plus the lowest kept bit before truncating, subnormal results let
// the FPU round by adding a magic power of two. They assume the default
// floating-point environment (round to nearest, no flush-to-zero).
//
//===----------------------------------------------------------------------===//

#include "DType.h"

#include <cassert>
#include <cstring>

using namespace tprt;

namespace {
uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
} // namespace

bool tprt::isValidDType(int dtype) {
  return dtype >= TPRT_F32 && dtype <= TPRT_I64;
}

size_t tprt::dtypeSize(tprt_dtype dtype) {
  switch (dtype) {
  case TPRT_F32:
  case TPRT_I32:
    return 4;
  case TPRT_F16:
  case TPRT_BF16:
    return 2;
  case TPRT_F64:
  case TPRT_I64:
    return 8;
  case TPRT_DTYPE_FORCE_32BIT:
    break;
  }
  return 0;
}

const char *tprt::dtypeName(tprt_dtype dtype) {
  switch (dtype) {
  case TPRT_F32:
    return "f32";
  case TPRT_F16:
    return "f16";
  case TPRT_BF16:
    return "bf16";
  case TPRT_F64:
    return "f64";
  case TPRT_I32:
    return "i32";
  case TPRT_I64:
    return "i64";
  case TPRT_DTYPE_FORCE_32BIT:
    break;
  }
  return "?";
}

uint16_t tprt::floatToHalf(float value) {
  const uint32_t f32Infinity = 255u << 23;
  // 2^16: from here on every value rounds to infinity.
  const uint32_t f16Overflow = (127u + 16) << 23;
  // 0.5 in the f16 subnormal unit: adding it makes the FPU round to 2^-24.
  const uint32_t denormMagic = ((127u - 15) + (23 - 10) + 1) << 23;

  uint32_t bits = bitsOf(value);
  uint32_t sign = bits & 0x80000000u;
  bits ^= sign;
  uint16_t result;
  if (bits >= f16Overflow) {
    // Infinity, NaN (made quiet) or overflow.
    result = bits > f32Infinity ? 0x7e00 : 0x7c00;
  } else if (bits < (113u << 23)) {
    // Below 2^-14, the smallest normal f16: a subnormal result or zero.
    float shifted = floatOf(bits) + floatOf(denormMagic);
    result = static_cast<uint16_t>(bitsOf(shifted) - denormMagic);
  } else {
    uint32_t lowestKept = (bits >> 13) & 1;
    bits += ((15u - 127) << 23) + 0xfff; // rebias; add half an ulp minus one
    bits += lowestKept;                  // ties go to even
    result = static_cast<uint16_t>(bits >> 13);
  }
  return static_cast<uint16_t>(result | (sign >> 16));
}

float tprt::halfToFloat(uint16_t half) {
  const uint32_t shiftedExponent = 0x7c00u << 13;
  uint32_t bits = (half & 0x7fffu) << 13;
  uint32_t exponent = bits & shiftedExponent;
  bits += (127u - 15) << 23; // rebias
  if (exponent == shiftedExponent) {
    bits += (128u - 16) << 23; // infinity or NaN: maximal exponent
  } else if (exponent == 0) {
    // Zero or subnormal: renormalise through the FPU.
    bits += 1u << 23;
    bits = bitsOf(floatOf(bits) - floatOf(113u << 23));
  }
  return floatOf(bits | (static_cast<uint32_t>(half & 0x8000u) << 16));
}

uint16_t tprt::floatToBFloat16(float value) {
  uint32_t bits = bitsOf(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    // NaN: keep the sign and the top payload bits, force the quiet bit so
    // that a payload living in the low bits cannot become an infinity.
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  }
  uint32_t lowestKept = (bits >> 16) & 1;
  bits += 0x7fff + lowestKept;
  return static_cast<uint16_t>(bits >> 16);
}

float tprt::bfloat16ToFloat(uint16_t bits) {
  return floatOf(static_cast<uint32_t>(bits) << 16);
}

void tprt::toFloat(tprt_dtype dtype, const void *src, float *dst,
                   size_t count) {
  switch (dtype) {
  case TPRT_F32:
    if (count)
      std::memmove(dst, src, count * sizeof(float));
    return;
  case TPRT_F16: {
    const uint16_t *in = static_cast<const uint16_t *>(src);
    for (size_t i = 0; i < count; ++i)
      dst[i] = halfToFloat(in[i]);
    return;
  }
  case TPRT_BF16: {
    // The shift of bfloat16ToFloat, written out so that the loop
    // vectorizes: the host GEMM widens every weight of a bf16 model with it
    // each step (HostGemm.cpp).
    const uint16_t *in = static_cast<const uint16_t *>(src);
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
      std::memcpy(dst + i, &bits, sizeof(bits));
    }
    return;
  }
  default:
    assert(false && "toFloat: not a floating-point dtype of 32 bits or less");
  }
}

void tprt::fromFloat(tprt_dtype dtype, const float *src, void *dst,
                     size_t count) {
  switch (dtype) {
  case TPRT_F32:
    if (count)
      std::memmove(dst, src, count * sizeof(float));
    return;
  case TPRT_F16: {
    uint16_t *out = static_cast<uint16_t *>(dst);
    for (size_t i = 0; i < count; ++i)
      out[i] = floatToHalf(src[i]);
    return;
  }
  case TPRT_BF16: {
    uint16_t *out = static_cast<uint16_t *>(dst);
    for (size_t i = 0; i < count; ++i)
      out[i] = floatToBFloat16(src[i]);
    return;
  }
  default:
    assert(false && "fromFloat: not a floating-point dtype of 32 bits or less");
  }
}
