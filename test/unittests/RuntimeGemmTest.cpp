//===- RuntimeGemmTest.cpp - The host's 16-bit and mixed GEMMs --*- C++ -*-===//
//
// runtime/lib/common/HostGemm: f16 and bf16 operands widened to f32 by
// panels and multiplied by sgemm, C in f32 (the mixed-precision GEMM,
// unrounded) or rounded to the operands' type once. Against a double
// reference, in every transpose form, with alpha and beta, on shapes small
// enough to be one block and large enough to be cut into panels (an operand
// of more than 8M elements; the last panel partial).
//
//===----------------------------------------------------------------------===//

#include "common/DType.h"
#include "common/HostGemm.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace tprt;

namespace {

/// A row-major rows x cols matrix of 16-bit values, stored with row stride
/// ld >= cols, and its values as doubles.
struct Matrix {
  tprt_dtype dtype;
  int64_t rows, cols, ld;
  std::vector<uint16_t> bits;
  std::vector<double> values;

  Matrix(tprt_dtype dtype, int64_t rows, int64_t cols, int64_t ld,
         uint32_t seed)
      : dtype(dtype), rows(rows), cols(cols), ld(ld),
        bits(size_t(rows * ld), 0x7fc0), values(size_t(rows * cols)) {
    uint32_t state = seed;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        state = state * 1664525u + 1013904223u;
        // Values in [-2, 2) with all of bf16's 8 significant bits in use.
        float v = float(int32_t(state >> 8) % 4096) / 1024.0f;
        uint16_t b = dtype == TPRT_BF16 ? floatToBFloat16(v) : floatToHalf(v);
        bits[size_t(r * ld + c)] = b;
        values[size_t(r * cols + c)] =
            dtype == TPRT_BF16 ? bfloat16ToFloat(b) : halfToFloat(b);
      }
  }
  double at(int64_t r, int64_t c) const { return values[size_t(r * cols + c)]; }
};

/// Runs C = alpha op(A) op(B) + beta C with C in `cType` and checks every
/// element against the double reference: within f32's rounding of k sums
/// (relative to the sum of magnitudes) for an f32 C, within half an ulp of
/// the type plus that for a 16-bit one.
void checkProduct(tprt_dtype abType, tprt_dtype cType, bool transA,
                  bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                  float beta) {
  SCOPED_TRACE(std::string(dtypeName(abType)) + " into " + dtypeName(cType) +
               (transA ? " A^T" : " A") + (transB ? " B^T" : " B") + " " +
               std::to_string(m) + "x" + std::to_string(n) + "x" +
               std::to_string(k) + " beta " + std::to_string(beta));
  Matrix a(abType, transA ? k : m, transA ? m : k, (transA ? m : k) + 3, 1);
  Matrix b(abType, transB ? n : k, transB ? k : n, (transB ? k : n) + 1, 2);
  int64_t ldc = n + 2;
  size_t cBytes = dtypeSize(cType);
  std::vector<char> c(size_t(m * ldc) * cBytes);
  std::vector<float> before(size_t(m * ldc));
  for (int64_t i = 0; i < m * ldc; ++i)
    before[size_t(i)] = float((i * 7) % 5) - 2.0f;
  fromFloat(cType, before.data(), c.data(), before.size());
  ASSERT_EQ(hostGemmWidened(abType, cType, transA, transB, m, n, k, alpha,
                            a.bits.data(), a.ld, b.bits.data(), b.ld, beta,
                            c.data(), ldc),
            TPRT_OK)
      << tprt_last_error();
  std::vector<float> after(size_t(m * ldc));
  toFloat(cType, c.data(), after.data(), after.size());
  double half = cType == TPRT_BF16  ? std::ldexp(1.0, -8)
                : cType == TPRT_F16 ? std::ldexp(1.0, -11)
                                    : 0.0;
  int bad = 0;
  for (int64_t i = 0; i < m && bad < 5; ++i)
    for (int64_t j = 0; j < ldc && bad < 5; ++j) {
      double got = after[size_t(i * ldc + j)];
      if (j >= n) { // the padding is not written
        EXPECT_EQ(got, before[size_t(i * ldc + j)]);
        continue;
      }
      double sum = 0, magnitude = 0;
      for (int64_t l = 0; l < k; ++l) {
        double p = (transA ? a.at(l, i) : a.at(i, l)) *
                   (transB ? b.at(j, l) : b.at(l, j));
        sum += p;
        magnitude += std::fabs(p);
      }
      double c0 = beta == 0.0f ? 0.0 : double(before[size_t(i * ldc + j)]);
      // Stored C was rounded to cType before the call.
      if (cType != TPRT_F32 && beta != 0.0f) {
        uint16_t stored = cType == TPRT_BF16 ? floatToBFloat16(float(c0))
                                             : floatToHalf(float(c0));
        c0 = cType == TPRT_BF16 ? bfloat16ToFloat(stored)
                                : halfToFloat(stored);
      }
      double want = alpha * sum + beta * c0;
      // f32 sums of k terms: at most k rounding errors of 2^-24 each.
      double tolerance = (double(k) + 2) * std::ldexp(1.0, -24) *
                             (std::fabs(alpha) * magnitude +
                              std::fabs(beta * c0)) +
                         half * std::fabs(want);
      if (!(std::fabs(got - want) <= tolerance)) {
        ++bad;
        ADD_FAILURE() << "C[" << i << "][" << j << "] is " << got
                      << ", expected " << want;
      }
    }
}

TEST(RuntimeGemm, MixedIsUnroundedF32) {
  // 1 + 2^-10 is exact in f32 and not in bf16 (8 significant bits): the
  // mixed GEMM writes it, the 16-bit one rounds it to 1.
  uint16_t a[2] = {floatToBFloat16(1.0f), floatToBFloat16(0.0009765625f)};
  uint16_t b[2] = {floatToBFloat16(1.0f), floatToBFloat16(1.0f)};
  float c = -1;
  ASSERT_EQ(hostGemmWidened(TPRT_BF16, TPRT_F32, false, false, 1, 1, 2, 1.0f,
                            a, 2, b, 1, 0.0f, &c, 1),
            TPRT_OK);
  EXPECT_EQ(c, 1.0009765625f);
  uint16_t rounded = 0;
  ASSERT_EQ(hostGemmWidened(TPRT_BF16, TPRT_BF16, false, false, 1, 1, 2, 1.0f,
                            a, 2, b, 1, 0.0f, &rounded, 1),
            TPRT_OK);
  EXPECT_EQ(bfloat16ToFloat(rounded), 1.0f);
}

TEST(RuntimeGemm, SmallInEveryForm) {
  for (tprt_dtype ab : {TPRT_BF16, TPRT_F16})
    for (tprt_dtype cType : {TPRT_F32, ab})
      for (bool transA : {false, true})
        for (bool transB : {false, true})
          for (float beta : {0.0f, 0.5f})
            checkProduct(ab, cType, transA, transB, 5, 7, 33, 1.5f, beta);
}

TEST(RuntimeGemm, EmptyK) {
  // k = 0: C = beta C.
  checkProduct(TPRT_BF16, TPRT_F32, false, true, 3, 4, 0, 1.0f, 0.5f);
  checkProduct(TPRT_BF16, TPRT_BF16, true, false, 3, 4, 0, 1.0f, 0.0f);
}

TEST(RuntimeGemm, PanelsOfB) {
  // op(B) has 1025 x 8200 > 8M elements: panels of 1023 columns, the last
  // one partial; A is one block.
  checkProduct(TPRT_BF16, TPRT_F32, false, true, 3, 8200, 1025, 1.0f, 0.0f);
  checkProduct(TPRT_BF16, TPRT_BF16, false, false, 2, 8200, 1025, 1.0f, 1.0f);
}

TEST(RuntimeGemm, PanelsOfA) {
  // op(A) has 8200 x 1025 elements, B is one block widened once.
  checkProduct(TPRT_F16, TPRT_F32, true, false, 8200, 3, 1025, 0.5f, 0.0f);
}

TEST(RuntimeGemm, RefusesOtherTypes) {
  float a[4] = {}, b[4] = {}, c[4] = {};
  EXPECT_EQ(hostGemmWidened(TPRT_F32, TPRT_F32, false, false, 2, 2, 2, 1.0f,
                            a, 2, b, 2, 0.0f, c, 2),
            TPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tprt_last_error()).find("f16 and bf16 are"),
            std::string::npos)
      << tprt_last_error();
  EXPECT_EQ(hostGemmWidened(TPRT_BF16, TPRT_F16, false, false, 2, 2, 2, 1.0f,
                            a, 2, b, 2, 0.0f, c, 2),
            TPRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tprt_last_error()).find("bf16 operands into f16 are not supported"),
            std::string::npos)
      << tprt_last_error();
}

} // namespace
