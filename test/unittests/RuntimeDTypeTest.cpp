//===- RuntimeDTypeTest.cpp - libtprt's f16/bf16 conversions ----*- C++ -*-===//
//
// Round-to-nearest-even, ties, overflow, subnormals, infinities and NaN of
// the f32 <-> f16 and f32 <-> bf16 conversions in runtime/lib/common/DType,
// plus sampled sweeps over the f32 bit patterns against independent
// references (_Float16 of the compiler; a bf16 rounding done in double).
//
//===----------------------------------------------------------------------===//

#include "common/DType.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace tprt;

namespace {

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

bool isHalfNaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
bool isBFloat16NaN(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

/// bf16 rounding done differently: pick the nearer of the two bf16 values
/// around `value` in double arithmetic, ties to the even one.
uint16_t referenceBFloat16(float value) {
  uint32_t bits = bitsOf(value);
  uint32_t low = bits & 0xffff0000u; // towards zero
  uint32_t high = low + 0x10000u;    // away from zero
  double x = std::fabs(double(value));
  double below = std::fabs(double(floatOf(low)));
  // `high` may be past the largest finite f32: its distance is then that of
  // the would-be next binade, 2^128.
  double above = (high & 0x7f800000u) == 0x7f800000u
                     ? std::ldexp(1.0, 128)
                     : std::fabs(double(floatOf(high)));
  double downError = x - below, upError = above - x;
  if (downError < upError || (downError == upError && !(low & 0x10000u)))
    return uint16_t(low >> 16);
  return uint16_t(high >> 16);
}

TEST(RuntimeDType, SizesAndNames) {
  EXPECT_EQ(dtypeSize(TPRT_F32), 4u);
  EXPECT_EQ(dtypeSize(TPRT_F16), 2u);
  EXPECT_EQ(dtypeSize(TPRT_BF16), 2u);
  EXPECT_EQ(dtypeSize(TPRT_F64), 8u);
  EXPECT_EQ(dtypeSize(TPRT_I32), 4u);
  EXPECT_EQ(dtypeSize(TPRT_I64), 8u);
  EXPECT_EQ(dtypeSize(tprt_dtype(42)), 0u);
  EXPECT_STREQ(dtypeName(TPRT_BF16), "bf16");
  EXPECT_TRUE(isValidDType(TPRT_I64));
  EXPECT_FALSE(isValidDType(-1));
  EXPECT_FALSE(isValidDType(6));
}

TEST(RuntimeDType, HalfExactValues) {
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(0.333251953125f), 0x3555);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff); // largest finite
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
}

TEST(RuntimeDType, HalfRoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 (even) and 1 + 2^-10 (odd).
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between 0x3c01 (odd) and 0x3c02 (even).
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above the tie rounds up.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)),
            0x3c01);
  // Just below 2 rounds up into the next binade.
  EXPECT_EQ(floatToHalf(std::nextafter(2.0f, 0.0f)), 0x4000);
}

TEST(RuntimeDType, HalfOverflowAndInfinity) {
  // 65520 is halfway between 65504 (odd mantissa) and 65536: infinity.
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
}

TEST(RuntimeDType, HalfNaN) {
  EXPECT_TRUE(isHalfNaN(floatToHalf(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lives in bits f16 drops must not become infinity.
  EXPECT_TRUE(isHalfNaN(floatToHalf(floatOf(0x7f800001u))));
  EXPECT_TRUE(isHalfNaN(floatToHalf(floatOf(0xff800001u))));
  EXPECT_EQ(floatToHalf(floatOf(0xff800001u)) & 0x8000, 0x8000);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7c01)));
  EXPECT_TRUE(std::isnan(halfToFloat(0xfe00)));
}

TEST(RuntimeDType, HalfSubnormals) {
  float smallest = std::ldexp(1.0f, -24); // 0x0001
  EXPECT_EQ(floatToHalf(smallest), 0x0001);
  EXPECT_EQ(halfToFloat(0x0001), smallest);
  EXPECT_EQ(halfToFloat(0x03ff), 1023 * smallest); // largest subnormal
  EXPECT_EQ(halfToFloat(0x8001), -smallest);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  // Ties between subnormals go to even: 2^-25 -> 0, 3 * 2^-25 -> 2.
  EXPECT_EQ(floatToHalf(smallest / 2), 0x0000);
  EXPECT_EQ(floatToHalf(-smallest / 2), 0x8000);
  EXPECT_EQ(floatToHalf(3 * smallest / 2), 0x0002);
  EXPECT_EQ(floatToHalf(5 * smallest / 2), 0x0002);
  EXPECT_EQ(floatToHalf(std::nextafter(smallest / 2, 1.0f)), 0x0001);
  // f32 subnormals are far below f16's range.
  EXPECT_EQ(floatToHalf(floatOf(0x00000001u)), 0x0000);
  // Largest subnormal + half a unit is a tie with the smallest normal.
  EXPECT_EQ(floatToHalf(1023.5f * smallest), 0x0400);
}

TEST(RuntimeDType, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t half = uint16_t(h);
    float value = halfToFloat(half);
    if (isHalfNaN(half)) {
      EXPECT_TRUE(std::isnan(value)) << std::hex << h;
      EXPECT_TRUE(isHalfNaN(floatToHalf(value))) << std::hex << h;
    } else {
      EXPECT_EQ(floatToHalf(value), half) << std::hex << h;
    }
  }
}

#if defined(__FLT16_MANT_DIG__)
TEST(RuntimeDType, HalfMatchesCompilerFloat16) {
  // Every 997th f32 bit pattern, and every pattern around f16's range.
  auto check = [](uint32_t bits) {
    float value = floatOf(bits);
    _Float16 reference = static_cast<_Float16>(value);
    uint16_t expected;
    std::memcpy(&expected, &reference, sizeof(expected));
    uint16_t got = floatToHalf(value);
    if (std::isnan(value))
      return isHalfNaN(got);
    return got == expected;
  };
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 997)
    ASSERT_TRUE(check(uint32_t(bits))) << std::hex << bits;
  for (uint32_t bits = 0x33000000u; bits < 0x47800000u; bits += 13)
    ASSERT_TRUE(check(bits)) << std::hex << bits;
}
#endif

TEST(RuntimeDType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBFloat16(-1.0f), 0xbf80);
  EXPECT_EQ(floatToBFloat16(floatOf(0x3f808000u)), 0x3f80); // tie, even below
  EXPECT_EQ(floatToBFloat16(floatOf(0x3f818000u)), 0x3f82); // tie, even above
  EXPECT_EQ(floatToBFloat16(floatOf(0x3f808001u)), 0x3f81); // above the tie
  EXPECT_EQ(floatToBFloat16(floatOf(0x3f807fffu)), 0x3f80); // below the tie
  EXPECT_EQ(floatToBFloat16(floatOf(0x3fffffffu)), 0x4000); // next binade
  EXPECT_EQ(bfloat16ToFloat(0x3f81), floatOf(0x3f810000u));
}

TEST(RuntimeDType, BFloat16OverflowInfinityNaN) {
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBFloat16(floatOf(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBFloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_TRUE(isBFloat16NaN(floatToBFloat16(floatOf(0x7f800001u))));
  EXPECT_TRUE(isBFloat16NaN(floatToBFloat16(floatOf(0x7fffffffu))));
  EXPECT_EQ(floatToBFloat16(floatOf(0xff800001u)) & 0x8000, 0x8000);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(0x7fc0)));
  EXPECT_EQ(bfloat16ToFloat(0xff80), -std::numeric_limits<float>::infinity());
}

TEST(RuntimeDType, BFloat16Subnormals) {
  EXPECT_EQ(floatToBFloat16(floatOf(0x00010000u)), 0x0001); // exact
  EXPECT_EQ(floatToBFloat16(floatOf(0x00000001u)), 0x0000);
  EXPECT_EQ(floatToBFloat16(floatOf(0x00008000u)), 0x0000); // tie, even
  EXPECT_EQ(floatToBFloat16(floatOf(0x00018000u)), 0x0002); // tie, even
  EXPECT_EQ(floatToBFloat16(floatOf(0x80008001u)), 0x8001);
  EXPECT_EQ(bfloat16ToFloat(0x0001), floatOf(0x00010000u));
}

TEST(RuntimeDType, BFloat16MatchesReference) {
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 991) {
    float value = floatOf(uint32_t(bits));
    uint16_t got = floatToBFloat16(value);
    if (std::isnan(value))
      ASSERT_TRUE(isBFloat16NaN(got)) << std::hex << bits;
    else
      ASSERT_EQ(got, referenceBFloat16(value)) << std::hex << bits;
  }
}

TEST(RuntimeDType, ArrayConversions) {
  const float values[] = {0.5f, -3.25f, 1e-6f, 70000.0f};
  uint16_t halves[4], bhalves[4];
  float back[4];
  fromFloat(TPRT_F16, values, halves, 4);
  fromFloat(TPRT_BF16, values, bhalves, 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(halves[i], floatToHalf(values[i]));
    EXPECT_EQ(bhalves[i], floatToBFloat16(values[i]));
  }
  toFloat(TPRT_F16, halves, back, 4);
  EXPECT_EQ(back[0], 0.5f);
  EXPECT_EQ(back[1], -3.25f);
  EXPECT_TRUE(std::isinf(back[3]));
  toFloat(TPRT_BF16, bhalves, back, 4);
  EXPECT_EQ(back[3], 70144.0f); // 70000 rounded to 8 significant bits
  float copy[4];
  toFloat(TPRT_F32, values, copy, 4);
  EXPECT_EQ(std::memcmp(copy, values, sizeof(copy)), 0);
}

} // namespace
