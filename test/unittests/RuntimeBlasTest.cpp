//===- RuntimeBlasTest.cpp - libtprt's choice of BLAS kernel ----*- C++ -*-===//
//
// runtime/lib/common/HostBlas: the OpenBLAS kernel the CPU's features
// allow, the instruction-set levels of OpenBLAS's kernel names, and the
// loader: the kernel it ends up with is never below what the features allow
// (unless it is one the table does not know), threads from TPRT_THREADS,
// and the messages for a bad TPRT_THREADS or a missing library. Nothing
// here depends on the CPU it runs on.
//
//===----------------------------------------------------------------------===//

#include "common/HostBlas.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <regex>
#include <string>

using namespace tprt;

namespace {

TEST(RuntimeBlas, CoreForFeatures) {
  CpuFeatures none;
  EXPECT_STREQ(openblasCoreFor(none), "");
  CpuFeatures avx;
  avx.avx = true;
  EXPECT_STREQ(openblasCoreFor(avx), "Sandybridge");
  CpuFeatures avx2 = avx;
  avx2.avx2 = true;
  EXPECT_STREQ(openblasCoreFor(avx2), "Sandybridge"); // no FMA
  avx2.fma = true;
  EXPECT_STREQ(openblasCoreFor(avx2), "Haswell");
  CpuFeatures skx = avx2;
  skx.avx512f = skx.avx512bw = skx.avx512dq = skx.avx512vl = true;
  EXPECT_STREQ(openblasCoreFor(skx), "Haswell"); // no AVX512CD
  skx.avx512cd = true;
  EXPECT_STREQ(openblasCoreFor(skx), "SkylakeX");
  CpuFeatures cpx = skx;
  cpx.avx512bf16 = true;
  EXPECT_STREQ(openblasCoreFor(cpx), "Cooperlake");
  // BF16 without the rest of AVX-512 is no Cooperlake.
  CpuFeatures odd = avx2;
  odd.avx512bf16 = true;
  EXPECT_STREQ(openblasCoreFor(odd), "Haswell");
}

TEST(RuntimeBlas, CoreLevels) {
  EXPECT_LT(openblasCoreLevel("Prescott"), openblasCoreLevel("Sandybridge"));
  EXPECT_LT(openblasCoreLevel("Sandybridge"), openblasCoreLevel("Haswell"));
  EXPECT_LT(openblasCoreLevel("Haswell"), openblasCoreLevel("SkylakeX"));
  EXPECT_LT(openblasCoreLevel("SkylakeX"), openblasCoreLevel("Cooperlake"));
  EXPECT_EQ(openblasCoreLevel("Zen"), openblasCoreLevel("Haswell"));
  EXPECT_EQ(openblasCoreLevel("cooperlake"), openblasCoreLevel("Cooperlake"));
  EXPECT_EQ(openblasCoreLevel("SKYLAKEX"), openblasCoreLevel("SkylakeX"));
  EXPECT_EQ(openblasCoreLevel("Prescott"), 0);
  EXPECT_EQ(openblasCoreLevel("SapphireRapids"), -1); // newer than the table
  EXPECT_EQ(openblasCoreLevel("ARMV8"), -1);
  EXPECT_EQ(openblasCoreLevel(""), -1);
  // Every kernel openblasCoreFor names has a level.
  for (const char *name : {"Sandybridge", "Haswell", "SkylakeX", "Cooperlake"})
    EXPECT_GE(openblasCoreLevel(name), 1) << name;
}

// The loader with OpenBLAS (a dependency of the project): a kernel at least
// as good as the CPU's features allow, or one the table does not know (a
// newer OpenBLAS that knows the CPU), and one thread.
TEST(RuntimeBlas, LoadsOpenBlasWithTheBestKernel) {
  ScopedEnv threads("TPRT_THREADS", nullptr);
  ScopedEnv core("OPENBLAS_CORETYPE", nullptr);
  ScopedEnv library("TPRT_BLAS_LIBRARY", nullptr);
  HostBlas blas = loadHostBlas();
  ASSERT_NE(blas.sgemm, nullptr) << blas.description;
  ASSERT_NE(blas.dgemm, nullptr) << blas.description;
  EXPECT_TRUE(blas.error.empty());
  EXPECT_EQ(blas.threads, 1);
  std::smatch match;
  ASSERT_TRUE(
      std::regex_search(blas.description, match,
                        std::regex("^OpenBLAS [0-9.]+, core ([A-Za-z0-9_]+) "
                                   "\\(.*\\), 1 thread$")))
      << blas.description;
  int level = openblasCoreLevel(match[1].str());
  int best = openblasCoreLevel(openblasCoreFor(hostCpuFeatures()));
  EXPECT_TRUE(level == -1 || level >= best)
      << blas.description << " (the CPU allows level " << best << ")";
  // Its products are right.
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c[4] = {};
  blas.sgemm(101, 111, 111, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
  EXPECT_EQ(c[0], 4.0f);  // 1*1 + 2*0 + 3*1
  EXPECT_EQ(c[1], 5.0f);  // 1*0 + 2*1 + 3*1
  EXPECT_EQ(c[2], 10.0f); // 4 + 0 + 6
  EXPECT_EQ(c[3], 11.0f); // 0 + 5 + 6
}

TEST(RuntimeBlas, ThreadsFromTheEnvironment) {
  ScopedEnv threads("TPRT_THREADS", "2");
  ScopedEnv library("TPRT_BLAS_LIBRARY", nullptr);
  HostBlas blas = loadHostBlas();
  EXPECT_EQ(blas.threads, 2);
  EXPECT_NE(blas.description.find(", 2 threads"), std::string::npos)
      << blas.description;
}

TEST(RuntimeBlas, BadThreads) {
  for (const char *value : {"0", "-1", "two", "3x", "5000"}) {
    ScopedEnv threads("TPRT_THREADS", value);
    HostBlas blas = loadHostBlas();
    EXPECT_EQ(blas.error, std::string("TPRT_THREADS is \"") + value +
                              "\", expected a number of threads from 1 to "
                              "4096");
    EXPECT_EQ(blas.sgemm, nullptr);
  }
}

TEST(RuntimeBlas, MissingLibrary) {
  ScopedEnv threads("TPRT_THREADS", nullptr);
  ScopedEnv library("TPRT_BLAS_LIBRARY", "/nonexistent/libnoblas.so");
  HostBlas blas = loadHostBlas();
  EXPECT_EQ(blas.sgemm, nullptr);
  EXPECT_TRUE(blas.error.empty()); // the reference loop computes products
  EXPECT_EQ(blas.description.rfind("none (/nonexistent/libnoblas.so", 0), 0u)
      << blas.description;
  EXPECT_NE(blas.description.find("products run a reference loop"),
            std::string::npos)
      << blas.description;
}

} // namespace
