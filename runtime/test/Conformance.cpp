//===- Conformance.cpp - The conformance suite of libtprt's backends ------===//
//
// tprt-conformance BACKEND [-v] [--no-gemm]
//
// --no-gemm skips the matrix products (for a GPU backend on the mock
// driver of test/runtime/cuda-mock.test, which has no cuBLAS).
//
// Written once against the public C ABI and run against every backend
// ("single" in process; "mpi" under mpirun with any number of ranks). Each
// rank fills its inputs from a formula of its world rank and the element
// index, runs a collective, and compares the result with the values it
// computes locally from the same formula for the other members:
//
//  - all_reduce, all_gather, reduce_scatter and all_to_all for f32, f16 and
//    bf16 (plus i32, i64 and f64 sums) on several shapes, along leading and
//    non-leading dimensions, on the world, on a reversed world, and on the
//    groups of the axes of 2-D meshes;
//  - f32 and integer inputs are small integers, so results must be exact;
//    f16 and bf16 inputs are fractions and sums must be within half an ulp
//    of the exact sum of the rounded inputs (reduced once, in f32);
//  - error cases: non-divisible and out-of-range dimensions, bad dtypes and
//    null pointers (TPRT_ERROR_INVALID_ARGUMENT on every member); members
//    passing different shapes or calling different collectives, or one
//    member failing its argument check (TPRT_ERROR_MISMATCH on the others,
//    with the output untouched); the group must keep working afterwards;
//  - group numbering, group caching, counters, timers, tprt_gemm,
//    tprt_gemm_strided_batched, tprt_gemm_mixed (f16 and bf16 operands
//    into f32, batched and strided, against the double reference within
//    f32's rounding: never rounded to 16 bits) and tprt_gemm_shared_a (against plain
//    tprt_gemm calls), tprt_gemm_grouped (uneven and empty groups, row
//    counts in the context's memory, against the double reference, rows
//    past the counts untouched), tprt_gemm_epilogue (against the formula in
//    double: every activation, with and without bias and addend, the
//    addend in C itself), the topology queries (TPRT_RANKS_PER_NODE
//    when set) and tprt_memcpy.
//
// On backends whose tprt_alloc returns device memory (tprt_memory_is_device:
// nccl, cuda-shared) every buffer a collective or GEMM touches is allocated
// with tprt_alloc and filled and read back with tprt_memcpy (class Buffer);
// argument errors are caught before any data moves, so those tests keep
// host pointers.
//
// Group memberships are computed here by filtering and sorting all ranks,
// independently of the library's construction. Rank 0 prints one summary
// line "tprt-conformance: <backend>, <n> ranks: <c> checks, <f> failures";
// every rank exits with 1 if any rank saw a failure.
//
//===----------------------------------------------------------------------===//

#include "common/DType.h"
#include "tprt/tprt.h"

#include <numeric>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

using Shape = std::vector<int64_t>;
using Index = std::vector<int64_t>;

int64_t numel(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Index unravel(int64_t linear, const Shape &shape) {
  Index index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = linear % shape[i];
    linear /= shape[i];
  }
  return index;
}

int64_t ravel(const Index &index, const Shape &shape) {
  int64_t linear = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    linear = linear * shape[i] + index[i];
  return linear;
}

int rankOf(const Shape &shape) { return static_cast<int>(shape.size()); }

const char *name(tprt_dtype dtype) { return tprt::dtypeName(dtype); }

const char *name(tprt_reduction op) {
  return op == TPRT_SUM ? "sum" : op == TPRT_MAX ? "max" : "min";
}

bool isHalf(tprt_dtype dtype) { return tprt::isHalfType(dtype); }

void store(tprt_dtype dtype, void *buffer, int64_t i, double value) {
  switch (dtype) {
  case TPRT_F32:
    static_cast<float *>(buffer)[i] = float(value);
    return;
  case TPRT_F16:
    static_cast<uint16_t *>(buffer)[i] = tprt::floatToHalf(float(value));
    return;
  case TPRT_BF16:
    static_cast<uint16_t *>(buffer)[i] = tprt::floatToBFloat16(float(value));
    return;
  case TPRT_F64:
    static_cast<double *>(buffer)[i] = value;
    return;
  case TPRT_I32:
    static_cast<int32_t *>(buffer)[i] = int32_t(std::llround(value));
    return;
  case TPRT_I64:
    static_cast<int64_t *>(buffer)[i] = int64_t(std::llround(value));
    return;
  case TPRT_DTYPE_FORCE_32BIT:
    return;
  }
}

double load(tprt_dtype dtype, const void *buffer, int64_t i) {
  switch (dtype) {
  case TPRT_F32:
    return static_cast<const float *>(buffer)[i];
  case TPRT_F16:
    return tprt::halfToFloat(static_cast<const uint16_t *>(buffer)[i]);
  case TPRT_BF16:
    return tprt::bfloat16ToFloat(static_cast<const uint16_t *>(buffer)[i]);
  case TPRT_F64:
    return static_cast<const double *>(buffer)[i];
  case TPRT_I32:
    return static_cast<const int32_t *>(buffer)[i];
  case TPRT_I64:
    return double(static_cast<const int64_t *>(buffer)[i]);
  case TPRT_DTYPE_FORCE_32BIT:
    break;
  }
  return NAN;
}

/// The value `value` has once stored as `dtype`.
double roundTo(tprt_dtype dtype, double value) {
  char buffer[8];
  store(dtype, buffer, 0, value);
  return load(dtype, buffer, 0);
}

/// The input of world rank `rank` at element `i`: small integers, exact in
/// every dtype and in sums; fractions for the 16-bit floats.
double inputValue(tprt_dtype dtype, int rank, int64_t i) {
  if (isHalf(dtype))
    return roundTo(dtype, 0.37 * (rank + 1) + 0.0113 * double(i % 37) - 0.25);
  return double((rank * 7 + i * 3) % 11 - 5);
}

std::vector<char> makeInput(tprt_dtype dtype, int rank, const Shape &shape) {
  std::vector<char> buffer(size_t(numel(shape)) * tprt::dtypeSize(dtype) + 1);
  for (int64_t i = 0; i < numel(shape); ++i)
    store(dtype, buffer.data(), i, inputValue(dtype, rank, i));
  return buffer;
}

/// Half an ulp of `value` in a 16-bit float, relative: sums of f16/bf16
/// must be rounded once from the exact sum.
double relativeTolerance(tprt_dtype dtype) {
  return dtype == TPRT_BF16  ? std::ldexp(1.0, -8)
         : dtype == TPRT_F16 ? std::ldexp(1.0, -11)
                             : 0.0;
}

/// A group under test and the members it must have.
struct TestGroup {
  tprt_group *handle = nullptr;
  std::vector<int> members; // world ranks in group order
  int index = 0;            // the calling rank's position
  std::string name;
  int size() const { return static_cast<int>(members.size()); }
};

/// The reduction over the group's members of their inputs at element `i`.
double reduceInputs(const TestGroup &g, tprt_dtype dtype, tprt_reduction op,
                    int64_t i) {
  double value = inputValue(dtype, g.members[0], i);
  for (int m = 1; m < g.size(); ++m) {
    double next = inputValue(dtype, g.members[m], i);
    value = op == TPRT_SUM   ? value + next
            : op == TPRT_MAX ? std::max(value, next)
                             : std::min(value, next);
  }
  return value;
}

/// A buffer handed to the library: the host vector itself on CPU backends,
/// a tprt_alloc copy of it on device backends. data() is the pointer to pass;
/// host() copies the device contents back first.
class Buffer {
public:
  Buffer(tprt_context *ctx, std::vector<char> contents)
      : ctx(ctx), contents(std::move(contents)) {
    int isDevice = 0;
    tprt_memory_is_device(ctx, &isDevice);
    if (isDevice && !this->contents.empty()) {
      if (tprt_alloc(ctx, this->contents.size(), &device) != TPRT_OK ||
          tprt_memcpy(ctx, device, this->contents.data(),
                      this->contents.size()) != TPRT_OK) {
        std::fprintf(stderr, "tprt-conformance: device buffer: %s\n",
                     tprt_last_error());
        std::exit(2);
      }
    }
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() {
    if (device)
      tprt_free(ctx, device);
  }
  void *data() { return device ? device : contents.data(); }
  const char *host() {
    if (device &&
        tprt_memcpy(ctx, contents.data(), device, contents.size()) != TPRT_OK) {
      std::fprintf(stderr, "tprt-conformance: reading a device buffer: %s\n",
                   tprt_last_error());
      std::exit(2);
    }
    return contents.data();
  }

private:
  tprt_context *ctx;
  std::vector<char> contents;
  void *device = nullptr;
};

class Suite {
public:
  Suite(tprt_context *ctx, bool verbose) : ctx(ctx), verbose(verbose) {
    tprt_rank(ctx, &rank);
    tprt_size(ctx, &size);
    // The library's rule (docs/runtime.md, "The mismatch check"):
    // TPRT_CHECK_COLLECTIVES forces it, TPRT_CHECK=0 turns it off, and the
    // default is on except on nccl.
    const char *backendName = "";
    tprt_backend_name(ctx, &backendName);
    const char *forced = std::getenv("TPRT_CHECK_COLLECTIVES");
    const char *env = std::getenv("TPRT_CHECK");
    if (forced && *forced)
      checkEnabled = std::strcmp(forced, "0") != 0;
    else
      checkEnabled = !(env && std::strcmp(env, "0") == 0) &&
                     std::strcmp(backendName, "nccl") != 0;
  }

  void run();

  int checks = 0;
  int failures = 0;
  bool withGemm = true;
  int rank = 0;
  int size = 1;

private:
  void check(bool ok, const std::string &what, const std::string &detail = "");
  void expectStatus(tprt_status got, tprt_status expected,
                    const std::string &what, const char *messagePart);
  void compare(const std::string &what, tprt_dtype dtype, bool approximate,
               const void *out, const Shape &shape,
               const std::function<double(const Index &)> &expected);

  void testAllReduce(const TestGroup &g, tprt_dtype dtype, tprt_reduction op,
                     const Shape &shape, bool inPlace);
  void testAllGather(const TestGroup &g, tprt_dtype dtype, const Shape &shape,
                     int dim);
  void testReduceScatter(const TestGroup &g, tprt_dtype dtype,
                         tprt_reduction op, const Shape &shape, int dim);
  void testAllToAll(const TestGroup &g, tprt_dtype dtype, const Shape &shape,
                    int splitDim, int concatDim);
  void testCollectives(const TestGroup &g);
  void testErrors(const TestGroup &g);
  void testMismatches(const TestGroup &g);
  void testMeshGroup(const Shape &mesh, const std::vector<int> &axes);
  void testStats(const TestGroup &world);
  void testGemm(tprt_dtype dtype, bool transA, bool transB, float beta);
  void testGemmErrors();
  void testBatchedGemm(tprt_dtype dtype, bool transA, bool transB);
  void testBatchedGemmErrors();
  void testMixedGemm(tprt_dtype abType, bool transA, bool transB, float beta,
                     int64_t batch);
  void testMixedGemmErrors();
  void testSharedAGemm(tprt_dtype dtype, bool transA, bool transB,
                       bool interleaved);
  void testSharedAGemmErrors();
  void testGroupedGemm(tprt_dtype dtype, bool transB,
                       const std::vector<int64_t> &counts, float beta);
  void testGroupedGemmErrors();
  void testGemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                        int activation, bool withBias, int addend,
                        int shift = 0);
  void testGemmEpilogueErrors();
  void testTopology();
  void testMemcpy();

  tprt_context *ctx;
  bool verbose;
  bool checkEnabled = true;
};

void Suite::check(bool ok, const std::string &what, const std::string &detail) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAIL [rank %d]: %s%s%s\n", rank, what.c_str(),
                 detail.empty() ? "" : ": ", detail.c_str());
  } else if (verbose && rank == 0) {
    std::printf("ok: %s\n", what.c_str());
  }
}

void Suite::expectStatus(tprt_status got, tprt_status expected,
                         const std::string &what, const char *messagePart) {
  std::string message = got == TPRT_OK ? "" : tprt_last_error();
  bool ok = got == expected &&
            (!messagePart || message.find(messagePart) != std::string::npos);
  check(ok, what,
        std::string("got ") + tprt_status_name(got) + " (\"" + message +
            "\"), expected " + tprt_status_name(expected) +
            (messagePart ? std::string(" with \"") + messagePart + "\"" : ""));
}

void Suite::compare(const std::string &what, tprt_dtype dtype, bool approximate,
                    const void *out, const Shape &shape,
                    const std::function<double(const Index &)> &expected) {
  for (int64_t i = 0; i < numel(shape); ++i) {
    Index index = unravel(i, shape);
    double want = expected(index);
    double got = load(dtype, out, i);
    double tolerance =
        approximate ? relativeTolerance(dtype) * std::fabs(want) + 1e-6 : 0.0;
    if (!(std::fabs(got - want) <= tolerance)) {
      char detail[160];
      std::snprintf(
          detail, sizeof(detail), "element %lld %s is %.9g, expected %.9g",
          static_cast<long long>(i), shapeText(index).c_str(), got, want);
      check(false, what, detail);
      return;
    }
  }
  check(true, what);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

void Suite::testAllReduce(const TestGroup &g, tprt_dtype dtype,
                          tprt_reduction op, const Shape &shape, bool inPlace) {
  std::string what = std::string("all_reduce ") + name(op) + " " + name(dtype) +
                     " " + shapeText(shape) + (inPlace ? " in place" : "") +
                     " on " + g.name;
  Buffer in(ctx, makeInput(dtype, rank, shape));
  Buffer out(ctx, std::vector<char>(
                      size_t(numel(shape)) * tprt::dtypeSize(dtype) + 1));
  Buffer &target = inPlace ? in : out;
  tprt_status status =
      tprt_all_reduce(ctx, g.handle, dtype, op, in.data(), target.data(),
                      rankOf(shape), shape.data(), nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  compare(what, dtype, isHalf(dtype) && op == TPRT_SUM, target.host(), shape,
          [&](const Index &index) {
            return reduceInputs(g, dtype, op, ravel(index, shape));
          });
}

void Suite::testAllGather(const TestGroup &g, tprt_dtype dtype,
                          const Shape &shape, int dim) {
  std::string what = std::string("all_gather ") + name(dtype) + " " +
                     shapeText(shape) + " dim " + std::to_string(dim) + " on " +
                     g.name;
  Shape outShape = shape;
  outShape[dim] *= g.size();
  Buffer in(ctx, makeInput(dtype, rank, shape));
  Buffer out(ctx, std::vector<char>(
                      size_t(numel(outShape)) * tprt::dtypeSize(dtype) + 1));
  tprt_status status =
      tprt_all_gather(ctx, g.handle, dtype, in.data(), out.data(),
                      rankOf(shape), shape.data(), dim, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  compare(what, dtype, false, out.host(), outShape, [&](const Index &index) {
    Index source = index;
    int member = int(index[dim] / shape[dim]);
    source[dim] = index[dim] % shape[dim];
    return inputValue(dtype, g.members[member], ravel(source, shape));
  });
}

void Suite::testReduceScatter(const TestGroup &g, tprt_dtype dtype,
                              tprt_reduction op, const Shape &shape, int dim) {
  std::string what = std::string("reduce_scatter ") + name(op) + " " +
                     name(dtype) + " " + shapeText(shape) + " dim " +
                     std::to_string(dim) + " on " + g.name;
  Shape outShape = shape;
  outShape[dim] /= g.size();
  Buffer in(ctx, makeInput(dtype, rank, shape));
  Buffer out(ctx, std::vector<char>(
                      size_t(numel(outShape)) * tprt::dtypeSize(dtype) + 1));
  tprt_status status =
      tprt_reduce_scatter(ctx, g.handle, dtype, op, in.data(), out.data(),
                          rankOf(shape), shape.data(), dim, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  compare(what, dtype, isHalf(dtype) && op == TPRT_SUM, out.host(), outShape,
          [&](const Index &index) {
            Index source = index;
            source[dim] += g.index * outShape[dim];
            return reduceInputs(g, dtype, op, ravel(source, shape));
          });
}

void Suite::testAllToAll(const TestGroup &g, tprt_dtype dtype,
                         const Shape &shape, int splitDim, int concatDim) {
  std::string what = std::string("all_to_all ") + name(dtype) + " " +
                     shapeText(shape) + " split " + std::to_string(splitDim) +
                     " concat " + std::to_string(concatDim) + " on " + g.name;
  Shape piece = shape;
  piece[splitDim] /= g.size();
  Shape outShape = piece;
  outShape[concatDim] *= g.size();
  Buffer in(ctx, makeInput(dtype, rank, shape));
  Buffer out(ctx, std::vector<char>(
                      size_t(numel(shape)) * tprt::dtypeSize(dtype) + 1));
  tprt_status status = tprt_all_to_all(ctx, g.handle, dtype, in.data(),
                                       out.data(), rankOf(shape), shape.data(),
                                       splitDim, concatDim, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  compare(what, dtype, false, out.host(), outShape, [&](const Index &index) {
    // The element came from the member at index[concatDim] / piece, out of
    // its piece number g.index.
    int sender = int(index[concatDim] / piece[concatDim]);
    Index source = index;
    source[concatDim] = index[concatDim] % piece[concatDim];
    source[splitDim] += g.index * piece[splitDim];
    return inputValue(dtype, g.members[sender], ravel(source, shape));
  });
}

void Suite::testCollectives(const TestGroup &g) {
  int64_t p = g.size();
  for (tprt_dtype dtype : {TPRT_F32, TPRT_F16, TPRT_BF16}) {
    for (const Shape &shape : {Shape{}, Shape{7}, Shape{4, 6}, Shape{3, 8, 5}})
      testAllReduce(g, dtype, TPRT_SUM, shape, false);
    testAllReduce(g, dtype, TPRT_SUM, {5, 3}, true);
    testAllReduce(g, dtype, TPRT_MAX, {4, 6}, false);
    testAllReduce(g, dtype, TPRT_MIN, {4, 6}, false);

    testAllGather(g, dtype, {7}, 0);
    for (int dim = 0; dim < 3; ++dim)
      testAllGather(g, dtype, {3, 8, 5}, dim);

    testReduceScatter(g, dtype, TPRT_SUM, {2 * p, 3}, 0);
    testReduceScatter(g, dtype, TPRT_SUM, {3, 2 * p, 5}, 1);
    testReduceScatter(g, dtype, TPRT_SUM, {3, 5, p}, 2);
    testReduceScatter(g, dtype, TPRT_MAX, {3, 2 * p, 5}, 1);
    testReduceScatter(g, dtype, TPRT_MIN, {4 * p}, 0);

    testAllToAll(g, dtype, {2 * p, 3, p}, 0, 2);
    testAllToAll(g, dtype, {2 * p, 3, p}, 2, 0);
    testAllToAll(g, dtype, {2 * p, 3, p}, 0, 0);
    testAllToAll(g, dtype, {3, 2 * p, 5}, 1, 1);
    testAllToAll(g, dtype, {3, 2 * p, 5}, 1, 2);
    testAllToAll(g, dtype, {3, 5, 2 * p}, 2, 1);
  }
  for (tprt_dtype dtype : {TPRT_I32, TPRT_I64, TPRT_F64}) {
    testAllReduce(g, dtype, TPRT_SUM, {3, 8, 5}, false);
    testReduceScatter(g, dtype, TPRT_SUM, {3, 2 * p}, 1);
  }
  testAllReduce(g, TPRT_I32, TPRT_MAX, {9}, false);
  testAllGather(g, TPRT_I64, {2, 3}, 1);
  testAllToAll(g, TPRT_F64, {p, 2}, 0, 1);
  // Empty tensors along non-leading dimensions: nothing moves, nothing
  // fails.
  testAllGather(g, TPRT_F32, {3, 0, 5}, 1);
  testAllGather(g, TPRT_BF16, {2, 4, 0}, 1);
  testReduceScatter(g, TPRT_F32, TPRT_SUM, {0, 2 * p}, 1);
  testAllToAll(g, TPRT_F16, {3, 2 * p, 0}, 1, 2);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

void Suite::testErrors(const TestGroup &g) {
  std::string on = " on " + g.name;
  int p = g.size();
  std::vector<char> in(4096), out(4096);
  Shape shape34 = {3, 4};

  if (p >= 2) {
    Shape bad = {3, p + 1};
    expectStatus(tprt_reduce_scatter(ctx, g.handle, TPRT_F32, TPRT_SUM,
                                     in.data(), out.data(), 2, bad.data(), 1,
                                     nullptr),
                 TPRT_ERROR_INVALID_ARGUMENT,
                 "reduce_scatter rejects a non-divisible dimension" + on,
                 ("dimension 1 of size " + std::to_string(p + 1) +
                  " is not divisible by the group size " + std::to_string(p))
                     .c_str());
    expectStatus(tprt_all_to_all(ctx, g.handle, TPRT_BF16, in.data(),
                                 out.data(), 2, bad.data(), 1, 0, nullptr),
                 TPRT_ERROR_INVALID_ARGUMENT,
                 "all_to_all rejects a non-divisible split dimension" + on,
                 "is not divisible by the group size");
  }
  expectStatus(tprt_all_gather(ctx, g.handle, TPRT_F32, in.data(), out.data(),
                               2, shape34.data(), 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "all_gather rejects an out-of-range dimension" + on,
               "dimension 2 is out of range for a tensor of rank 2");
  expectStatus(
      tprt_all_reduce(ctx, g.handle, tprt_dtype(99), TPRT_SUM, in.data(),
                      out.data(), 2, shape34.data(), nullptr),
      TPRT_ERROR_INVALID_ARGUMENT, "all_reduce rejects an unknown dtype" + on,
      "dtype 99 is not a tprt_dtype");
  expectStatus(tprt_all_reduce(ctx, g.handle, TPRT_F32, tprt_reduction(7),
                               in.data(), out.data(), 2, shape34.data(),
                               nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "all_reduce rejects an unknown reduction" + on,
               "reduction 7 is not a tprt_reduction");
  expectStatus(tprt_all_reduce(ctx, g.handle, TPRT_F32, TPRT_SUM, nullptr,
                               out.data(), 2, shape34.data(), nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "all_reduce rejects a null input" + on, "in is null");
  expectStatus(tprt_all_gather(ctx, g.handle, TPRT_F32, in.data(), in.data(), 2,
                               shape34.data(), 0, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "all_gather rejects overlapping buffers" + on,
               "in and out overlap");
  expectStatus(tprt_all_reduce(ctx, nullptr, TPRT_F32, TPRT_SUM, in.data(),
                               out.data(), 2, shape34.data(), nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "all_reduce rejects a null group",
               "group is null");

  if (p >= 2 && checkEnabled)
    testMismatches(g);

  // The group still works after all of the above.
  testAllReduce(g, TPRT_F32, TPRT_SUM, {2, 5}, false);
}

void Suite::testMismatches(const TestGroup &g) {
  std::string on = " on " + g.name;
  bool first = g.index == 0;
  Buffer in(ctx, makeInput(TPRT_F32, rank, {4, 9}));
  const float sentinel = -12345.0f;
  std::vector<float> initial(64, sentinel);
  Buffer out(ctx, std::vector<char>(
                      reinterpret_cast<const char *>(initial.data()),
                      reinterpret_cast<const char *>(initial.data() + 64)));
  auto untouched = [&] {
    const float *values = reinterpret_cast<const float *>(out.host());
    return std::all_of(values, values + 64,
                       [&](float v) { return v == sentinel; });
  };

  // Member 0 passes [4, 9], the others [4, 8].
  Shape shape = {4, first ? 9 : 8};
  expectStatus(tprt_all_reduce(ctx, g.handle, TPRT_F32, TPRT_SUM, in.data(),
                               out.data(), 2, shape.data(), nullptr),
               TPRT_ERROR_MISMATCH,
               "all_reduce with different shapes fails everywhere" + on,
               "group members disagree: rank");
  check(untouched(), "a mismatched all_reduce leaves out untouched" + on);

  // Member 0 calls all_gather, the others all_reduce.
  Shape vector = {4};
  tprt_status status =
      first ? tprt_all_gather(ctx, g.handle, TPRT_F32, in.data(), out.data(), 1,
                              vector.data(), 0, nullptr)
            : tprt_all_reduce(ctx, g.handle, TPRT_F32, TPRT_SUM, in.data(),
                              out.data(), 1, vector.data(), nullptr);
  expectStatus(status, TPRT_ERROR_MISMATCH,
               "different collectives fail everywhere" + on,
               first ? "but rank" : "called all_gather(f32, [4], dim 0)");
  check(untouched(), "mismatched collectives leave out untouched" + on);

  // Member 0 fails its argument check; the others must not wait for it.
  Shape good = {2, 3};
  status = tprt_all_gather(ctx, g.handle, TPRT_F32, in.data(), out.data(), 2,
                           good.data(), first ? 5 : 1, nullptr);
  if (first)
    expectStatus(status, TPRT_ERROR_INVALID_ARGUMENT,
                 "a member with a bad dimension gets its own error" + on,
                 "dimension 5 is out of range");
  else
    expectStatus(status, TPRT_ERROR_MISMATCH,
                 "the others learn that a member failed" + on,
                 ("rank " + std::to_string(g.members[0]) +
                  " failed its argument check with "
                  "TPRT_ERROR_INVALID_ARGUMENT")
                     .c_str());
  check(untouched(), "a failed all_gather leaves out untouched" + on);
}

//===----------------------------------------------------------------------===//
// Groups, counters, GEMM
//===----------------------------------------------------------------------===//

/// Builds the expected members of the group of `axes` by filtering the ranks
/// that agree with the caller elsewhere and sorting them by the listed axes.
std::vector<int> expectedMembers(int rank, int size, const Shape &mesh,
                                 const std::vector<int> &axes) {
  Index mine = unravel(rank, mesh);
  std::vector<std::pair<Index, int>> keyed;
  for (int other = 0; other < size; ++other) {
    Index coords = unravel(other, mesh);
    bool same = true;
    for (size_t a = 0; a < mesh.size(); ++a)
      if (std::find(axes.begin(), axes.end(), int(a)) == axes.end() &&
          coords[a] != mine[a])
        same = false;
    if (!same)
      continue;
    Index key;
    for (int axis : axes)
      key.push_back(coords[size_t(axis)]);
    keyed.emplace_back(key, other);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> members;
  for (auto &entry : keyed)
    members.push_back(entry.second);
  return members;
}

void Suite::testMeshGroup(const Shape &mesh, const std::vector<int> &axes) {
  TestGroup g;
  g.members = expectedMembers(rank, size, mesh, axes);
  g.index = int(std::find(g.members.begin(), g.members.end(), rank) -
                g.members.begin());
  g.name = "mesh " + shapeText(mesh) + " axes {";
  for (size_t i = 0; i < axes.size(); ++i)
    g.name += (i ? ", " : "") + std::to_string(axes[i]);
  g.name += "}";

  tprt_status status = tprt_group_for_axes(
      ctx, rankOf(mesh), mesh.data(), int(axes.size()), axes.data(), &g.handle);
  if (status != TPRT_OK)
    return check(false, "tprt_group_for_axes " + g.name, tprt_last_error());
  int index = -1, groupSize = -1;
  tprt_group_rank(g.handle, &index);
  tprt_group_size(g.handle, &groupSize);
  check(index == g.index && groupSize == g.size(),
        "group numbering of " + g.name,
        "got index " + std::to_string(index) + " of " +
            std::to_string(groupSize) + ", expected " +
            std::to_string(g.index) + " of " + std::to_string(g.size()));

  tprt_group *again = nullptr;
  tprt_group_for_axes(ctx, rankOf(mesh), mesh.data(), int(axes.size()),
                      axes.data(), &again);
  check(again == g.handle, "the group of " + g.name + " is cached");
  tprt_group_destroy(again);

  testCollectives(g);
  testErrors(g);
  check(tprt_group_destroy(g.handle) == TPRT_OK,
        "tprt_group_destroy " + g.name);
}

void Suite::testStats(const TestGroup &world) {
  tprt_stats_reset(ctx);
  Buffer in(ctx, makeInput(TPRT_F32, rank, {4, 8}));
  Buffer out(ctx, std::vector<char>(4 * 8 * sizeof(float)));
  Shape shape = {4, 8};
  tprt_timer_start(ctx);
  tprt_all_reduce(ctx, world.handle, TPRT_F32, TPRT_SUM, in.data(), out.data(),
                  2, shape.data(), nullptr);
  double elapsed = -1;
  tprt_timer_elapsed(ctx, &elapsed);
  tprt_stats stats;
  tprt_stats_get(ctx, &stats);
  double n = size;
  check(stats.calls[TPRT_ALL_REDUCE] == 1 &&
            stats.calls[TPRT_ALL_GATHER] == 0 &&
            stats.bytes[TPRT_ALL_REDUCE] == 128 &&
            stats.bytes_sent[TPRT_ALL_REDUCE] ==
                uint64_t(128 * 2 * (n - 1) / n) &&
            stats.seconds[TPRT_ALL_REDUCE] >= 0 &&
            stats.checks == (checkEnabled ? 1u : 0u) && elapsed >= 0,
        "stats count one all_reduce of 128 bytes",
        "calls " + std::to_string(stats.calls[TPRT_ALL_REDUCE]) + ", bytes " +
            std::to_string(stats.bytes[TPRT_ALL_REDUCE]) + ", bytes_sent " +
            std::to_string(stats.bytes_sent[TPRT_ALL_REDUCE]) + ", checks " +
            std::to_string(stats.checks));
  tprt_stats_reset(ctx);
  tprt_stats_get(ctx, &stats);
  check(stats.calls[TPRT_ALL_REDUCE] == 0 && stats.checks == 0,
        "tprt_stats_reset clears the counters");
}

void Suite::testGemm(tprt_dtype dtype, bool transA, bool transB, float beta) {
  const int64_t m = 5, n = 4, k = 3;
  // Stored shapes, with one element of padding per row to test the strides.
  int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
  int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
  int64_t lda = colsA + 1, ldb = colsB + 1, ldc = n + 1;
  size_t es = tprt::dtypeSize(dtype);
  std::vector<char> a(size_t(rowsA * lda) * es), b(size_t(rowsB * ldb) * es),
      c(size_t(m * ldc) * es);
  auto valueA = [&](int64_t i, int64_t l) {
    return roundTo(dtype, double((i * 3 + l * 5) % 7 - 3));
  };
  auto valueB = [&](int64_t l, int64_t j) {
    return roundTo(dtype, double((l * 2 + j * 7) % 5 - 2));
  };
  auto valueC = [&](int64_t i, int64_t j) {
    return roundTo(dtype, double((i + j * 3) % 4) - 1);
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t l = 0; l < k; ++l)
      store(dtype, a.data(), transA ? l * lda + i : i * lda + l, valueA(i, l));
  for (int64_t l = 0; l < k; ++l)
    for (int64_t j = 0; j < n; ++j)
      store(dtype, b.data(), transB ? j * ldb + l : l * ldb + j, valueB(l, j));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      store(dtype, c.data(), i * ldc + j,
            j < n ? (beta == 0.0f ? NAN : valueC(i, j)) : 77.0);

  const float alpha = 2.0f;
  std::string what = std::string("gemm ") + name(dtype) +
                     (transA ? " A^T" : " A") + (transB ? " B^T" : " B") +
                     " beta " + std::to_string(beta);
  Buffer da(ctx, a), db(ctx, b), dc(ctx, c);
  tprt_status status =
      tprt_gemm(ctx, dtype, transA, transB, m, n, k, alpha, da.data(), lda,
                db.data(), ldb, beta, dc.data(), ldc, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  Shape padded = {m, ldc};
  compare(what, dtype, isHalf(dtype), dc.host(), padded, [&](const Index &ij) {
    if (ij[1] >= n)
      return 77.0; // the padding is not written
    double sum = 0;
    for (int64_t l = 0; l < k; ++l)
      sum += valueA(ij[0], l) * valueB(l, ij[1]);
    return alpha * sum + (beta == 0.0f ? 0.0 : beta * valueC(ij[0], ij[1]));
  });
}

void Suite::testGemmErrors() {
  float a[16] = {0}, b[16] = {0}, c[16] = {0};
  expectStatus(tprt_gemm(ctx, TPRT_F32, 0, 0, 2, 2, 3, 1.0f, a, 2, b, 2, 0.0f,
                         c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "gemm rejects a short lda",
               "lda is 2, smaller than the 3 columns of A as stored");
  expectStatus(tprt_gemm(ctx, TPRT_I32, 0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f,
                         c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "gemm rejects i32",
               "dtype i32 is not supported");
  expectStatus(tprt_gemm(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, nullptr, 2, b, 2,
                         0.0f, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "gemm rejects a null a",
               "a is null");
}

void Suite::testBatchedGemm(tprt_dtype dtype, bool transA, bool transB) {
  // 3 products of 4x5 by 5x6, each matrix followed by a gap of 7 elements
  // (the strides), and C's rows padded by one element.
  const int64_t batch = 3, m = 4, n = 6, k = 5, gap = 7;
  int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
  int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
  int64_t lda = colsA, ldb = colsB, ldc = n + 1;
  int64_t strideA = rowsA * lda + gap, strideB = rowsB * ldb + gap,
          strideC = m * ldc + gap;
  size_t es = tprt::dtypeSize(dtype);
  std::vector<char> a(size_t(batch * strideA) * es),
      b(size_t(batch * strideB) * es), c(size_t(batch * strideC) * es);
  auto valueA = [&](int64_t p, int64_t i, int64_t l) {
    return roundTo(dtype, double((p * 5 + i * 3 + l * 2) % 7 - 3));
  };
  auto valueB = [&](int64_t p, int64_t l, int64_t j) {
    return roundTo(dtype, double((p * 3 + l * 4 + j) % 5 - 2));
  };
  for (int64_t i = 0; i < batch * strideC; ++i)
    store(dtype, c.data(), i, 55.0);
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t l = 0; l < k; ++l)
        store(dtype, a.data(),
              p * strideA + (transA ? l * lda + i : i * lda + l),
              valueA(p, i, l));
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < n; ++j)
        store(dtype, b.data(),
              p * strideB + (transB ? j * ldb + l : l * ldb + j),
              valueB(p, l, j));
  }
  std::string what = std::string("batched gemm ") + name(dtype) +
                     (transA ? " A^T" : " A") + (transB ? " B^T" : " B");
  Buffer da(ctx, a), db(ctx, b), dc(ctx, c);
  tprt_stats before = {}, after = {};
  tprt_stats_get(ctx, &before);
  tprt_status status = tprt_gemm_strided_batched(
      ctx, dtype, transA, transB, m, n, k, 1.0f, da.data(), lda, strideA,
      db.data(), ldb, strideB, 0.0f, dc.data(), ldc, strideC, batch, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  tprt_stats_get(ctx, &after);
  check(after.gemm_calls == before.gemm_calls + uint64_t(batch) &&
            after.gemm_flops == before.gemm_flops + 2.0 * batch * m * n * k,
        what + " counts " + std::to_string(batch) + " GEMMs");
  Shape whole = {batch * strideC};
  compare(what, dtype, isHalf(dtype), dc.host(), whole, [&](const Index &x) {
    int64_t p = x[0] / strideC, rest = x[0] % strideC;
    int64_t i = rest / ldc, j = rest % ldc;
    if (i >= m || j >= n)
      return 55.0; // the gaps and the padding are not written
    double sum = 0;
    for (int64_t l = 0; l < k; ++l)
      sum += valueA(p, i, l) * valueB(p, l, j);
    return sum;
  });
}

void Suite::testBatchedGemmErrors() {
  float a[64] = {0}, b[64] = {0}, c[64] = {0};
  expectStatus(
      tprt_gemm_strided_batched(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a, 2, 4, b,
                                2, 4, 0.0f, c, 2, 3, 2, nullptr),
      TPRT_ERROR_INVALID_ARGUMENT, "batched gemm rejects overlapping outputs",
      "stride_c is 3, smaller than one 2x2 C matrix");
  expectStatus(tprt_gemm_strided_batched(ctx, TPRT_BF16, 1, 0, 2, 2, 3, 1.0f, a,
                                         1, 6, b, 2, 6, 0.0f, c, 2, 4, 2,
                                         nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "batched gemm rejects a short lda",
               "lda is 1, smaller than the 2 columns of A as stored");
  expectStatus(
      tprt_gemm_strided_batched(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a, 2, -4, b,
                                2, 4, 0.0f, c, 2, 4, 2, nullptr),
      TPRT_ERROR_INVALID_ARGUMENT, "batched gemm rejects a negative stride",
      "stride_a is -4, expected >= 0");
  expectStatus(tprt_gemm_strided_batched(ctx, TPRT_I64, 0, 0, 2, 2, 2, 1.0f, a,
                                         2, 4, b, 2, 4, 0.0f, c, 2, 4, 2,
                                         nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "batched gemm rejects i64",
               "dtype i64 is not supported");
  expectStatus(tprt_gemm_strided_batched(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a,
                                         2, 4, b, 2, 4, 0.0f, nullptr, 2, 4, 2,
                                         nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "batched gemm rejects a null c",
               "c is null");
  expectStatus(tprt_gemm_strided_batched(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a,
                                         2, 4, b, 2, 4, 0.0f, c, 2, 4, 0,
                                         nullptr),
               TPRT_OK, "batched gemm of an empty batch does nothing", nullptr);
}

void Suite::testMixedGemm(tprt_dtype abType, bool transA, bool transB,
                          float beta, int64_t batch) {
  // `batch` products of 4x6 by 6x5 with A and B in abType and C in f32,
  // each matrix followed by a gap (the strides), C's rows padded. The
  // operands are fractions exact in abType whose products need more than
  // its bits: C must be the f32 sum, not the sum rounded to 16 bits.
  const int64_t m = 4, n = 5, k = 6, gap = 3;
  int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
  int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
  int64_t lda = colsA + 1, ldb = colsB, ldc = n + 2;
  int64_t strideA = rowsA * lda + gap, strideB = rowsB * ldb + gap,
          strideC = m * ldc + gap;
  size_t es = tprt::dtypeSize(abType);
  std::vector<char> a(size_t(batch * strideA) * es),
      b(size_t(batch * strideB) * es),
      c(size_t(batch * strideC) * sizeof(float));
  auto valueA = [&](int64_t p, int64_t i, int64_t l) {
    return roundTo(abType, 1.0 + double((p * 5 + i * 3 + l * 2) % 7) / 64.0);
  };
  auto valueB = [&](int64_t p, int64_t l, int64_t j) {
    return roundTo(abType,
                   double((p * 3 + l * 4 + j) % 5 - 2) * (1.0 + 1.0 / 128));
  };
  auto valueC = [&](int64_t i, int64_t j) {
    return double((i * 5 + j) % 9) / 256.0 - 0.5;
  };
  for (int64_t i = 0; i < batch * strideC; ++i)
    store(TPRT_F32, c.data(), i, 55.0);
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t l = 0; l < k; ++l)
        store(abType, a.data(),
              p * strideA + (transA ? l * lda + i : i * lda + l),
              valueA(p, i, l));
      for (int64_t j = 0; j < n; ++j)
        store(TPRT_F32, c.data(), p * strideC + i * ldc + j,
              beta == 0.0f ? NAN : valueC(i, j));
    }
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < n; ++j)
        store(abType, b.data(),
              p * strideB + (transB ? j * ldb + l : l * ldb + j),
              valueB(p, l, j));
  }
  const float alpha = 0.75f;
  std::string what = std::string("mixed gemm ") + name(abType) + " into f32" +
                     (transA ? " A^T" : " A") + (transB ? " B^T" : " B") +
                     " beta " + std::to_string(beta) + " batch " +
                     std::to_string(batch);
  Buffer da(ctx, a), db(ctx, b), dc(ctx, c);
  tprt_stats before = {}, after = {};
  tprt_stats_get(ctx, &before);
  tprt_status status = tprt_gemm_mixed(
      ctx, abType, TPRT_F32, transA, transB, m, n, k, alpha, da.data(), lda,
      batch == 1 ? 0 : strideA, db.data(), ldb, batch == 1 ? 0 : strideB, beta,
      dc.data(), ldc, batch == 1 ? 0 : strideC, batch, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  tprt_stats_get(ctx, &after);
  check(after.gemm_calls == before.gemm_calls + uint64_t(batch) &&
            after.gemm_flops == before.gemm_flops + 2.0 * batch * m * n * k,
        what + " counts " + std::to_string(batch) + " GEMMs");
  // f32 sums of six exact products: within a few f32 ulps of the exact
  // value, far below bf16's or f16's half ulp.
  const float *out = reinterpret_cast<const float *>(dc.host());
  int wrong = 0;
  std::string detail;
  for (int64_t x = 0; x < batch * strideC; ++x) {
    int64_t p = x / strideC, rest = x % strideC;
    int64_t i = rest / ldc, j = rest % ldc;
    double want = 55.0; // the gaps and the padding are not written
    double bound = 0;
    if (i < m && j < n) {
      double sum = 0, magnitude = 0;
      for (int64_t l = 0; l < k; ++l) {
        double product = valueA(p, i, l) * valueB(p, l, j);
        sum += product;
        magnitude += std::fabs(product);
      }
      want = alpha * sum + (beta == 0.0f ? 0.0 : beta * valueC(i, j));
      bound = std::ldexp(1.0, -21) * (magnitude + 1.0);
    }
    if (!(std::fabs(double(out[x]) - want) <= bound) && wrong++ == 0)
      detail = "element " + std::to_string(x) + " is " +
               std::to_string(out[x]) + ", expected " + std::to_string(want);
  }
  check(wrong == 0, what, detail);
}

void Suite::testMixedGemmErrors() {
  float a[64] = {0}, b[64] = {0}, c[64] = {0};
  expectStatus(tprt_gemm_mixed(ctx, TPRT_F32, TPRT_F64, 0, 0, 2, 2, 2, 1.0f, a,
                               2, 0, b, 2, 0, 0.0f, c, 2, 0, 1, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "mixed gemm rejects f32 operands into f64",
               "f32 operands into f64 are not supported");
  expectStatus(tprt_gemm_mixed(ctx, TPRT_BF16, TPRT_F16, 0, 0, 2, 2, 2, 1.0f,
                               a, 2, 0, b, 2, 0, 0.0f, c, 2, 0, 1, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "mixed gemm rejects bf16 operands into f16",
               "bf16 operands into f16 are not supported");
  expectStatus(tprt_gemm_mixed(ctx, TPRT_BF16, static_cast<tprt_dtype>(42), 0,
                               0, 2, 2, 2, 1.0f, a, 2, 0, b, 2, 0, 0.0f, c, 2,
                               0, 1, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "mixed gemm rejects a c_dtype that is not a tprt_dtype",
               "c_dtype 42 is not a tprt_dtype");
  expectStatus(tprt_gemm_mixed(ctx, TPRT_BF16, TPRT_F32, 0, 0, 2, 2, 2, 1.0f,
                               a, 2, 4, b, 2, 4, 0.0f, c, 2, 2, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "mixed gemm rejects overlapping outputs",
               "the outputs of the batch overlap");
  expectStatus(tprt_gemm_mixed(ctx, TPRT_F16, TPRT_F32, 1, 0, 2, 2, 3, 1.0f, a,
                               1, 0, b, 2, 0, 0.0f, c, 2, 0, 1, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "mixed gemm rejects a short lda",
               "lda is 1, smaller than the 2 columns of A as stored");
  expectStatus(tprt_gemm_mixed(ctx, TPRT_BF16, TPRT_F32, 0, 0, 2, 2, 2, 1.0f,
                               a, 2, 0, b, 2, 0, 0.0f, nullptr, 2, 0, 1,
                               nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "mixed gemm rejects a null c",
               "c is null");
}

void Suite::testSharedAGemm(tprt_dtype dtype, bool transA, bool transB,
                            bool interleaved) {
  // 3 products of one 5x3 A by 3x4 B_i, alpha 2 and beta 0.5, against 3
  // plain tprt_gemm calls on copies of the same C_i. A and B_i have padded
  // rows; the C_i are either separate padded matrices or (interleaved) the
  // column blocks of one 5x12 matrix (ldc 3n), which do not overlap.
  const int count = 3;
  const int64_t m = 5, n = 4, k = 3;
  int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
  int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
  int64_t lda = colsA + 1, ldb = colsB + 2;
  int64_t ldc = interleaved ? count * n : n + 1;
  size_t es = tprt::dtypeSize(dtype);
  const float alpha = 2.0f, beta = 0.5f;
  std::vector<char> a(size_t(rowsA * lda) * es);
  for (int64_t i = 0; i < rowsA * lda; ++i)
    store(dtype, a.data(), i, double((i * 3) % 7 - 3));
  std::vector<std::vector<char>> bs, cs;
  for (int p = 0; p < count; ++p) {
    bs.emplace_back(size_t(rowsB * ldb) * es);
    for (int64_t i = 0; i < rowsB * ldb; ++i)
      store(dtype, bs.back().data(), i, double((i * 2 + p * 3) % 5 - 2));
  }
  // C: every element of the separate or shared storage, padding included.
  int64_t cElements = interleaved ? m * ldc : m * ldc * count;
  std::vector<char> c(size_t(cElements) * es);
  for (int64_t i = 0; i < cElements; ++i)
    store(dtype, c.data(), i, double((i * 5) % 4) - 1);
  // Element offset of C_p in the storage.
  auto offsetC = [&](int p) { return interleaved ? p * n : p * m * ldc; };

  std::string what = std::string("shared-A gemm ") + name(dtype) +
                     (transA ? " A^T" : " A") + (transB ? " B^T" : " B") +
                     (interleaved ? " interleaved C" : "");
  Buffer da(ctx, a), dc(ctx, c), reference(ctx, c);
  std::vector<std::unique_ptr<Buffer>> dbs;
  std::vector<const void *> bPointers;
  std::vector<void *> cPointers, refPointers;
  for (int p = 0; p < count; ++p) {
    dbs.push_back(std::make_unique<Buffer>(ctx, bs[size_t(p)]));
    bPointers.push_back(dbs.back()->data());
    cPointers.push_back(static_cast<char *>(dc.data()) + offsetC(p) * es);
    refPointers.push_back(static_cast<char *>(reference.data()) +
                          offsetC(p) * es);
  }
  for (int p = 0; p < count; ++p)
    if (tprt_gemm(ctx, dtype, transA, transB, m, n, k, alpha, da.data(), lda,
                  bPointers[size_t(p)], ldb, beta, refPointers[size_t(p)], ldc,
                  nullptr) != TPRT_OK)
      return check(false, what + " (reference)", tprt_last_error());
  tprt_stats before = {}, after = {};
  tprt_stats_get(ctx, &before);
  tprt_status status = tprt_gemm_shared_a(
      ctx, dtype, transA, transB, m, n, k, alpha, da.data(), lda,
      bPointers.data(), ldb, beta, cPointers.data(), ldc, count, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  tprt_stats_get(ctx, &after);
  check(after.gemm_calls == before.gemm_calls + uint64_t(count) &&
            after.gemm_flops == before.gemm_flops + 2.0 * count * m * n * k,
        what + " counts " + std::to_string(count) + " GEMMs");
  // Small integers and halves: exact in every dtype, so the results must
  // equal the plain products bit for bit (the padding is left as it was).
  const char *want = reference.host();
  Shape whole = {cElements};
  compare(what, dtype, false, dc.host(), whole,
          [&](const Index &x) { return load(dtype, want, x[0]); });
  // And the reference itself is the product (a sanity check of the test).
  double expected = 0, got = load(dtype, want, offsetC(count - 1) + ldc + 1);
  for (int64_t l = 0; l < k; ++l) {
    double valueA = load(dtype, a.data(), transA ? l * lda + 1 : lda + l);
    double valueB = load(dtype, bs[size_t(count - 1)].data(),
                         transB ? 1 * ldb + l : l * ldb + 1);
    expected += valueA * valueB;
  }
  expected = alpha * expected +
             beta * load(dtype, c.data(), offsetC(count - 1) + ldc + 1);
  check(got == expected, what + " reference element (1, 1) of C_2",
        std::to_string(got) + " vs " + std::to_string(expected));
}

void Suite::testSharedAGemmErrors() {
  float a[64] = {0}, b0[64] = {0}, b1[64] = {0}, c0[64] = {0}, c1[64] = {0};
  const void *bs[2] = {b0, b1};
  void *cs[2] = {c0, c1};
  expectStatus(tprt_gemm_shared_a(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a, 2, bs,
                                  2, 0.0f, cs, 2, 0, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "shared-A gemm rejects count 0",
               "count is 0, expected >= 1");
  const void *missingB[2] = {b0, nullptr};
  expectStatus(tprt_gemm_shared_a(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a, 2,
                                  missingB, 2, 0.0f, cs, 2, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "shared-A gemm rejects a null b[1]",
               "b[1] is null");
  void *missingC[2] = {nullptr, c1};
  expectStatus(tprt_gemm_shared_a(ctx, TPRT_BF16, 0, 0, 2, 2, 2, 1.0f, a, 2, bs,
                                  2, 0.0f, missingC, 2, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "shared-A gemm rejects a null c[0]",
               "c[0] is null");
  expectStatus(tprt_gemm_shared_a(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a, 2,
                                  nullptr, 2, 0.0f, cs, 2, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "shared-A gemm rejects a null array of B", "b is null");
  expectStatus(tprt_gemm_shared_a(ctx, TPRT_BF16, 0, 1, 2, 3, 2, 1.0f, a, 2, bs,
                                  1, 0.0f, cs, 3, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "shared-A gemm rejects a short ldb",
               "ldb is 1, smaller than the 2 columns of B as stored");
  expectStatus(tprt_gemm_shared_a(ctx, TPRT_I32, 0, 0, 2, 2, 2, 1.0f, a, 2, bs,
                                  2, 0.0f, cs, 2, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "shared-A gemm rejects i32",
               "dtype i32 is not supported");
  // c[1] starts inside c[0]'s second row; column blocks of one matrix
  // (testSharedAGemm's interleaved case) are accepted.
  void *overlapping[2] = {c0, c0 + 3};
  expectStatus(tprt_gemm_shared_a(ctx, TPRT_F32, 0, 0, 2, 2, 2, 1.0f, a, 2, bs,
                                  2, 0.0f, overlapping, 2, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "shared-A gemm rejects overlapping outputs",
               "c[1] overlaps c[0]");
  void *empty[2] = {nullptr, nullptr};
  expectStatus(tprt_gemm_shared_a(ctx, TPRT_F32, 0, 0, 0, 2, 2, 1.0f, a, 2, bs,
                                  2, 0.0f, empty, 2, 2, nullptr),
               TPRT_OK, "shared-A gemm with m = 0 does nothing", nullptr);
}

void Suite::testGroupedGemm(tprt_dtype dtype, bool transB,
                            const std::vector<int64_t> &counts, float beta) {
  // A [rows, k] (rows padded by one element) in groups of counts[g] rows,
  // B [groups, k, n] ([groups, n, k] with trans_b) with a gap of 3 elements
  // between the groups' matrices, C [rows, n] with padded rows; two spare
  // rows past the counts' sum, which must stay untouched.
  const int64_t n = 5, k = 4, gap = 3;
  int groups = int(counts.size());
  int64_t used = 0;
  for (int64_t c : counts)
    used += c;
  int64_t rows = used + 2, lda = k + 1, ldc = n + 1;
  int64_t rowsB = transB ? n : k, ldb = transB ? k : n;
  int64_t strideB = rowsB * ldb + gap;
  size_t es = tprt::dtypeSize(dtype);
  std::vector<char> a(size_t(rows * lda) * es),
      b(size_t(groups * strideB) * es), c(size_t(rows * ldc) * es);
  std::vector<int64_t> groupOf(size_t(rows), -1);
  for (int64_t g = 0, r = 0; g < groups; ++g)
    for (int64_t i = 0; i < counts[size_t(g)]; ++i)
      groupOf[size_t(r++)] = g;
  auto valueA = [&](int64_t i, int64_t l) {
    return roundTo(dtype, double((i * 3 + l * 5) % 7 - 3));
  };
  auto valueB = [&](int64_t g, int64_t l, int64_t j) {
    return roundTo(dtype, double((g * 4 + l * 2 + j * 3) % 5 - 2));
  };
  auto valueC = [&](int64_t i, int64_t j) {
    return roundTo(dtype, double((i + j * 3) % 4) - 1);
  };
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t l = 0; l < lda; ++l)
      store(dtype, a.data(), i * lda + l, l < k ? valueA(i, l) : 99.0);
  for (int64_t x = 0; x < groups * strideB; ++x)
    store(dtype, b.data(), x, 99.0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < n; ++j)
        store(dtype, b.data(),
              g * strideB + (transB ? j * ldb + l : l * ldb + j),
              valueB(g, l, j));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      store(dtype, c.data(), i * ldc + j,
            j < n && i < used ? (beta == 0.0f ? NAN : valueC(i, j)) : 77.0);
  std::vector<char> countBytes(counts.size() * sizeof(int64_t));
  if (!counts.empty())
    std::memcpy(countBytes.data(), counts.data(), countBytes.size());

  const float alpha = 0.5f;
  std::string what = std::string("grouped gemm ") + name(dtype) +
                     (transB ? " B^T" : " B") + " groups " +
                     shapeText(counts) + " beta " + std::to_string(beta);
  Buffer da(ctx, a), db(ctx, b), dc(ctx, c), dcounts(ctx, countBytes);
  tprt_stats before = {}, after = {};
  tprt_stats_get(ctx, &before);
  tprt_status status = tprt_gemm_grouped(
      ctx, dtype, transB, groups,
      static_cast<const int64_t *>(dcounts.data()), rows, n, k, alpha,
      da.data(), lda, db.data(), ldb, strideB, beta, dc.data(), ldc, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  tprt_stats_get(ctx, &after);
  uint64_t products = 0;
  for (int64_t count : counts)
    products += count > 0 ? 1 : 0;
  check(after.gemm_calls == before.gemm_calls + products &&
            after.gemm_flops == before.gemm_flops + 2.0 * used * n * k,
        what + " counts " + std::to_string(products) + " GEMMs");
  Shape padded = {rows, ldc};
  compare(what, dtype, isHalf(dtype), dc.host(), padded, [&](const Index &ij) {
    int64_t i = ij[0], j = ij[1];
    if (j >= n || i >= used)
      return 77.0; // the padding and the rows past the counts
    int64_t g = groupOf[size_t(i)];
    double sum = 0;
    for (int64_t l = 0; l < k; ++l)
      sum += valueA(i, l) * valueB(g, l, j);
    return alpha * sum + (beta == 0.0f ? 0.0 : beta * valueC(i, j));
  });
}

void Suite::testGroupedGemmErrors() {
  float a[64] = {0}, b[64] = {0}, c[64] = {0};
  int64_t counts[3] = {2, 1, 1}, negative[2] = {2, -1}, many[2] = {3, 2};
  expectStatus(tprt_gemm_grouped(ctx, TPRT_F32, 0, 3, counts, 4, 2, 2, 1.0f, a,
                                 1, b, 2, 4, 0.0f, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "grouped gemm rejects a short lda",
               "lda is 1, smaller than the 2 columns of A as stored");
  expectStatus(tprt_gemm_grouped(ctx, TPRT_F32, 0, -1, counts, 4, 2, 2, 1.0f,
                                 a, 2, b, 2, 4, 0.0f, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "grouped gemm rejects a negative group count",
               "groups is -1, expected >= 0");
  expectStatus(tprt_gemm_grouped(ctx, TPRT_F32, 0, 3, nullptr, 4, 2, 2, 1.0f,
                                 a, 2, b, 2, 4, 0.0f, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "grouped gemm rejects null row counts", "group_rows is null");
  expectStatus(tprt_gemm_grouped(ctx, TPRT_I64, 0, 3, counts, 4, 2, 2, 1.0f, a,
                                 2, b, 2, 4, 0.0f, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "grouped gemm rejects i64",
               "dtype i64 is not supported");
  expectStatus(tprt_gemm_grouped(ctx, TPRT_F32, 1, 3, counts, 4, 2, 2, 1.0f, a,
                                 2, b, 2, -4, 0.0f, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "grouped gemm rejects a negative stride_b",
               "stride_b is -4, expected >= 0");
  expectStatus(tprt_gemm_grouped(ctx, TPRT_F32, 0, 0, nullptr, 4, 2, 2, 1.0f,
                                 a, 2, b, 2, 4, 0.0f, c, 2, nullptr),
               TPRT_OK, "grouped gemm of no groups does nothing", nullptr);
  // Counts are read where the library reads them: the context's memory.
  Buffer badCounts(ctx, std::vector<char>(reinterpret_cast<char *>(negative),
                                          reinterpret_cast<char *>(negative) +
                                              sizeof(negative)));
  Buffer tooMany(ctx, std::vector<char>(reinterpret_cast<char *>(many),
                                        reinterpret_cast<char *>(many) +
                                            sizeof(many)));
  Buffer da(ctx, std::vector<char>(sizeof(a))),
      db(ctx, std::vector<char>(sizeof(b))),
      dc(ctx, std::vector<char>(sizeof(c)));
  expectStatus(tprt_gemm_grouped(
                   ctx, TPRT_F32, 0, 2,
                   static_cast<const int64_t *>(badCounts.data()), 4, 2, 2,
                   1.0f, da.data(), 2, db.data(), 2, 4, 0.0f, dc.data(), 2,
                   nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "grouped gemm rejects a negative row count",
               "group_rows[1] is -1, expected >= 0");
  expectStatus(tprt_gemm_grouped(
                   ctx, TPRT_F32, 0, 2,
                   static_cast<const int64_t *>(tooMany.data()), 4, 2, 2, 1.0f,
                   da.data(), 2, db.data(), 2, 4, 0.0f, dc.data(), 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "grouped gemm rejects counts past the rows",
               "the group rows sum to more than the 4 rows of A and C");
}

void Suite::testGemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                             int activation, bool withBias, int addend,
                             int shift) {
  // C (5x4) = act(op(A) op(B) + addend + bias) with padded rows, against
  // the formula in double. Inputs are multiples of 1/4 (exact in every
  // dtype) in about [-1.5, 1.5], so the activations see both signs. With
  // `shift`, every operand is a view `shift` elements into its buffer
  // (aligned to the element size only: on GPU backends cuBLASLt may find no
  // algorithm, and the runtime's fallback runs it).
  const int64_t m = 5, n = 4, k = 3;
  int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
  int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
  int64_t lda = colsA + 1, ldb = colsB + 2, ldc = n + 1;
  int64_t ldAddend = addend == 2 ? ldc : n + 3;
  size_t es = tprt::dtypeSize(dtype);
  std::vector<char> a(size_t(rowsA * lda) * es), b(size_t(rowsB * ldb) * es),
      c(size_t(m * ldc) * es), add(size_t(m * ldAddend) * es),
      bias(size_t(n) * es);
  for (int64_t i = 0; i < rowsA * lda; ++i)
    store(dtype, a.data(), i, 0.5 * double((i * 3) % 7 - 3));
  for (int64_t i = 0; i < rowsB * ldb; ++i)
    store(dtype, b.data(), i, 0.25 * double((i * 2) % 5 - 2));
  for (int64_t i = 0; i < m * ldAddend; ++i)
    store(dtype, add.data(), i, 0.25 * double((i * 5) % 4) - 0.375);
  for (int64_t j = 0; j < n; ++j)
    store(dtype, bias.data(), j, 0.5 * double(j % 3 - 1));
  for (int64_t i = 0; i < m * ldc; ++i)
    store(dtype, c.data(), i, addend == 2 ? load(dtype, add.data(), i) : 9.0);
  static const char *const acts[] = {"none", "relu", "gelu_tanh"};
  std::string what = std::string("gemm epilogue ") + name(dtype) +
                     (transA ? " A^T" : " A") + (transB ? " B^T" : " B") +
                     " " + acts[activation] + (withBias ? " +bias" : "") +
                     (addend == 1 ? " +addend" : addend == 2 ? " +C" : "") +
                     (shift ? " at element offset " + std::to_string(shift)
                            : std::string());
  size_t offset = size_t(shift) * es;
  auto shifted = [&](const std::vector<char> &v) {
    std::vector<char> out(offset, 0);
    out.insert(out.end(), v.begin(), v.end());
    return out;
  };
  Buffer da(ctx, shifted(a)), db(ctx, shifted(b)), dc(ctx, shifted(c)),
      dadd(ctx, shifted(add)), dbias(ctx, shifted(bias));
  auto at = [&](Buffer &buffer) {
    return static_cast<char *>(buffer.data()) + offset;
  };
  const void *addendPointer = addend == 1   ? at(dadd)
                              : addend == 2 ? at(dc)
                                            : nullptr;
  tprt_stats before = {}, after = {};
  tprt_stats_get(ctx, &before);
  tprt_status status = tprt_gemm_epilogue(
      ctx, dtype, transA, transB, m, n, k, at(da), lda, at(db), ldb,
      addendPointer, ldAddend, withBias ? at(dbias) : nullptr, activation,
      at(dc), ldc, nullptr);
  if (status != TPRT_OK)
    return check(false, what, tprt_last_error());
  tprt_stats_get(ctx, &after);
  check(after.gemm_calls == before.gemm_calls + 1 &&
            after.gemm_flops == before.gemm_flops + 2.0 * m * n * k,
        what + " counts one GEMM");
  const char *out = dc.host() + offset;
  double tolerance = isHalf(dtype) ? 2 * relativeTolerance(dtype) : 1e-6;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      double got = load(dtype, out, i * ldc + j);
      double want;
      if (j >= n) {
        want = load(dtype, c.data(), i * ldc + j); // padding untouched
      } else {
        double v = 0;
        for (int64_t l = 0; l < k; ++l)
          v += load(dtype, a.data(), transA ? l * lda + i : i * lda + l) *
               load(dtype, b.data(), transB ? j * ldb + l : l * ldb + j);
        if (addend)
          v += load(dtype, add.data(), i * ldAddend + j);
        if (withBias)
          v += load(dtype, bias.data(), j);
        if (activation == TPRT_ACTIVATION_RELU)
          v = v > 0 ? v : 0;
        if (activation == TPRT_ACTIVATION_GELU_TANH)
          v = 0.5 * v *
              (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        want = v;
      }
      if (!(std::fabs(got - want) <= tolerance * std::fabs(want) + 1e-6)) {
        char detail[160];
        std::snprintf(detail, sizeof(detail),
                      "element (%lld, %lld) is %.9g, expected %.9g",
                      static_cast<long long>(i), static_cast<long long>(j),
                      got, want);
        return check(false, what, detail);
      }
    }
  check(true, what);
}

void Suite::testGemmEpilogueErrors() {
  float a[64] = {0}, b[64] = {0}, c[64] = {0}, add[64] = {0}, bias[8] = {0};
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_F32, 0, 0, 2, 2, 2, a, 2, b, 2,
                                  nullptr, 0, nullptr, 3, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "gemm epilogue rejects activation 3",
               "activation 3 is not a tprt_activation");
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_I32, 0, 0, 2, 2, 2, a, 2, b, 2,
                                  nullptr, 0, nullptr, 0, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "gemm epilogue rejects i32",
               "dtype i32 is not supported");
  expectStatus(tprt_gemm_epilogue(nullptr, TPRT_F32, 0, 0, 2, 2, 2, a, 2, b,
                                  2, nullptr, 0, nullptr, 0, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "gemm epilogue rejects a null ctx",
               "ctx is null");
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_BF16, 0, 1, 2, 3, 2, a, 2, b, 1,
                                  nullptr, 0, nullptr, 0, c, 3, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "gemm epilogue rejects a short ldb",
               "ldb is 1, smaller than the 2 columns of B as stored");
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_F32, 0, 0, 2, 3, 2, a, 2, b, 3,
                                  add, 2, nullptr, 0, c, 3, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "gemm epilogue rejects a short ld_addend",
               "ld_addend is 2, smaller than the 3 columns of the addend");
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_F32, 0, 0, 2, 2, 2, a, 2, b, 2,
                                  nullptr, 0, nullptr, 0, nullptr, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT, "gemm epilogue rejects a null c",
               "c is null");
  // The addend may be C itself (same ld), not a shifted or restrided C.
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_F32, 0, 0, 2, 2, 2, a, 2, b, 2,
                                  c + 1, 2, nullptr, 0, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "gemm epilogue rejects an addend overlapping C",
               "the addend overlaps C without being C");
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_F32, 0, 0, 2, 2, 2, a, 2, b, 2, c,
                                  3, nullptr, 0, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "gemm epilogue rejects C as addend with another ld",
               "the addend overlaps C without being C");
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_F32, 0, 0, 2, 2, 2, a, 2, b, 2,
                                  nullptr, 0, c + 2, 0, c, 2, nullptr),
               TPRT_ERROR_INVALID_ARGUMENT,
               "gemm epilogue rejects a bias overlapping C",
               "the bias overlaps C");
  expectStatus(tprt_gemm_epilogue(ctx, TPRT_F32, 0, 0, 0, 2, 2, a, 2, b, 2,
                                  add, 2, bias, 1, nullptr, 2, nullptr),
               TPRT_OK, "gemm epilogue with m = 0 does nothing", nullptr);
}

void Suite::testTopology() {
  int local = -1, nodes = -1;
  tprt_local_rank(ctx, &local);
  tprt_node_count(ctx, &nodes);
  std::vector<int> nodeOf(size_t(size), -1);
  bool allOk = true;
  for (int r = 0; r < size; ++r)
    allOk &= tprt_node_of(ctx, r, &nodeOf[size_t(r)]) == TPRT_OK;
  check(allOk, "tprt_node_of answers for every rank");
  const char *perNode = std::getenv("TPRT_RANKS_PER_NODE");
  if (perNode && *perNode) {
    int k = std::atoi(perNode);
    bool right = local == rank % k && nodes == (size + k - 1) / k;
    for (int r = 0; r < size; ++r)
      right &= nodeOf[size_t(r)] == r / k;
    check(right,
          "TPRT_RANKS_PER_NODE=" + std::string(perNode) + " gives node " +
              std::to_string(rank / k) + " and local rank " +
              std::to_string(rank % k),
          "got local rank " + std::to_string(local) + ", " +
              std::to_string(nodes) + " nodes, node " +
              std::to_string(nodeOf[size_t(rank)]));
  } else {
    // Nodes are numbered by first appearance, and local ranks count up
    // within a node: recompute both from the node ids.
    std::vector<int> seen;
    bool right = nodeOf[0] == 0;
    int mine = 0;
    for (int r = 0; r < size; ++r) {
      int node = nodeOf[size_t(r)];
      if (std::find(seen.begin(), seen.end(), node) == seen.end()) {
        right &= node == int(seen.size());
        seen.push_back(node);
      }
      if (r < rank && node == nodeOf[size_t(rank)])
        ++mine;
    }
    check(right && nodes == int(seen.size()) && local == mine,
          "topology from host names",
          "local rank " + std::to_string(local) + ", " + std::to_string(nodes) +
              " nodes");
  }
  int unused = 0;
  expectStatus(
      tprt_node_of(ctx, size, &unused), TPRT_ERROR_INVALID_ARGUMENT,
      "tprt_node_of rejects a rank out of range",
      ("world_rank " + std::to_string(size) + " is out of range").c_str());
}

void Suite::testMemcpy() {
  std::vector<char> pattern(1000);
  std::iota(pattern.begin(), pattern.end(), char(rank));
  Buffer first(ctx, pattern), second(ctx, std::vector<char>(1000, 0));
  // Buffer to buffer (device to device on GPU backends), then back to host.
  tprt_status status =
      tprt_memcpy(ctx, second.data(), first.data(), pattern.size());
  check(status == TPRT_OK &&
            std::memcmp(second.host(), pattern.data(), pattern.size()) == 0,
        "tprt_memcpy between tprt_alloc buffers",
        status ? tprt_last_error() : "");
  check(tprt_synchronize(ctx) == TPRT_OK, "tprt_synchronize");
  expectStatus(tprt_memcpy(ctx, nullptr, pattern.data(), 4),
               TPRT_ERROR_INVALID_ARGUMENT, "tprt_memcpy rejects a null dst",
               "dst is null");
}

void Suite::run() {
  // The whole world, in rank order and reversed.
  TestGroup world;
  tprt_group_world(ctx, &world.handle);
  for (int r = 0; r < size; ++r)
    world.members.push_back(r);
  world.index = rank;
  world.name = "world";
  testStats(world);
  testCollectives(world);
  testErrors(world);

  TestGroup reversed;
  reversed.members.assign(world.members.rbegin(), world.members.rend());
  reversed.index = size - 1 - rank;
  reversed.name = "reversed world";
  if (tprt_group_create(ctx, size, reversed.members.data(), &reversed.handle) !=
      TPRT_OK) {
    check(false, "tprt_group_create reversed world", tprt_last_error());
  } else {
    int index = -1;
    tprt_group_rank(reversed.handle, &index);
    check(index == reversed.index, "reversed world numbering");
    testCollectives(reversed);
    tprt_group_destroy(reversed.handle);
  }

  // The groups of the axes of meshes: one axis, the other, both in either
  // order, none. 2-D meshes are [2, size/2] for even sizes and [1, size]
  // otherwise.
  Shape mesh2 = size % 2 == 0 ? Shape{2, size / 2} : Shape{1, size};
  testMeshGroup({size}, {0});
  testMeshGroup(mesh2, {1});
  testMeshGroup(mesh2, {0});
  testMeshGroup(mesh2, {1, 0});
  testMeshGroup(mesh2, {});
  if (size == 8) {
    // The example of tprt.h: mesh [dp=2, tp=4], rank 5 is in {4, 5, 6, 7}
    // at index 1 for axis tp, in {1, 5} at index 1 for axis dp.
    std::vector<int> tp = expectedMembers(5, 8, {2, 4}, {1});
    std::vector<int> dp = expectedMembers(5, 8, {2, 4}, {0});
    check(tp == std::vector<int>{4, 5, 6, 7} && dp == std::vector<int>{1, 5},
          "the mesh example of tprt.h");
  }

  std::vector<int> badAxes = {2};
  tprt_group *unused = nullptr;
  expectStatus(
      tprt_group_for_axes(ctx, 2, mesh2.data(), 1, badAxes.data(), &unused),
      TPRT_ERROR_INVALID_ARGUMENT, "group_for_axes rejects axis 2",
      "axes[0] is 2, out of range for the mesh");
  Shape wrongMesh = {size + 1};
  expectStatus(
      tprt_group_for_axes(ctx, 1, wrongMesh.data(), 0, nullptr, &unused),
      TPRT_ERROR_INVALID_ARGUMENT,
      "group_for_axes rejects a mesh of the wrong size", "but the context has");

  if (withGemm) {
    for (tprt_dtype dtype : {TPRT_F32, TPRT_F64, TPRT_F16, TPRT_BF16})
      for (bool transA : {false, true})
        for (bool transB : {false, true})
          testGemm(dtype, transA, transB, 0.5f);
    testGemm(TPRT_F32, false, false, 0.0f);
    testGemm(TPRT_BF16, true, false, 0.0f);
    for (tprt_dtype dtype : {TPRT_F32, TPRT_F64, TPRT_F16, TPRT_BF16})
      for (bool transA : {false, true})
        for (bool transB : {false, true})
          testBatchedGemm(dtype, transA, transB);
    for (tprt_dtype dtype : {TPRT_BF16, TPRT_F16})
      for (bool transA : {false, true})
        for (bool transB : {false, true})
          testMixedGemm(dtype, transA, transB, 0.0f, 1);
    testMixedGemm(TPRT_BF16, false, true, 0.5f, 1);
    testMixedGemm(TPRT_BF16, false, false, 0.0f, 3);
    testMixedGemm(TPRT_F16, true, true, 0.25f, 2);
    testSharedAGemm(TPRT_F32, false, false, false);
    testSharedAGemm(TPRT_BF16, false, true, true);
    testSharedAGemm(TPRT_F16, true, false, false);
    testSharedAGemm(TPRT_F64, true, true, true);
    // Uneven groups, an empty first and middle group, a single group.
    for (tprt_dtype dtype : {TPRT_F32, TPRT_F64, TPRT_F16, TPRT_BF16})
      for (bool transB : {false, true})
        testGroupedGemm(dtype, transB, {0, 3, 1, 0, 5}, 0.0f);
    testGroupedGemm(TPRT_F32, true, {4}, 0.0f);
    testGroupedGemm(TPRT_BF16, false, {2, 2, 7}, 0.5f);
    testGroupedGemm(TPRT_F32, false, {0, 0}, 0.0f);
    testGroupedGemmErrors();
    // addend: 0 none, 1 a matrix of its own, 2 C itself.
    for (tprt_dtype dtype : {TPRT_F32, TPRT_BF16})
      for (int activation : {TPRT_ACTIVATION_NONE, TPRT_ACTIVATION_RELU,
                             TPRT_ACTIVATION_GELU_TANH})
        for (bool withBias : {false, true})
          for (int addend : {0, 1})
            testGemmEpilogue(dtype, false, true, activation, withBias, addend);
    for (tprt_dtype dtype : {TPRT_F32, TPRT_BF16})
      for (bool transA : {false, true})
        for (bool transB : {false, true})
          testGemmEpilogue(dtype, transA, transB, TPRT_ACTIVATION_GELU_TANH,
                           true, 1);
    testGemmEpilogue(TPRT_F32, false, false, TPRT_ACTIVATION_RELU, true, 2);
    testGemmEpilogue(TPRT_BF16, false, true, TPRT_ACTIVATION_NONE, false, 2);
    testGemmEpilogue(TPRT_F16, true, false, TPRT_ACTIVATION_GELU_TANH, true,
                     1);
    testGemmEpilogue(TPRT_F64, false, true, TPRT_ACTIVATION_RELU, true, 1);
    // Views one element into their buffers (test/runtime/
    // cublaslt-fallback.test: on the emulator cuBLASLt has no algorithm for
    // them and the runtime's fallback runs).
    testGemmEpilogue(TPRT_F32, false, true, TPRT_ACTIVATION_GELU_TANH, true, 1,
                     1);
    testGemmEpilogue(TPRT_BF16, false, true, TPRT_ACTIVATION_GELU_TANH, true,
                     1, 1);
    testGemmEpilogue(TPRT_F16, true, false, TPRT_ACTIVATION_RELU, true, 2, 1);
    testGemmEpilogue(TPRT_BF16, true, true, TPRT_ACTIVATION_NONE, false, 2, 1);
    testGemmEpilogue(TPRT_F64, false, false, TPRT_ACTIVATION_GELU_TANH, true,
                     1, 1);
  }
  // Argument errors are caught before any product runs.
  testGemmErrors();
  testBatchedGemmErrors();
  testMixedGemmErrors();
  testSharedAGemmErrors();
  testGemmEpilogueErrors();
  testTopology();
  testMemcpy();
}

} // namespace

int main(int argc, char **argv) {
  bool verbose = false, withGemm = true, usage = argc < 2;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "-v") == 0)
      verbose = true;
    else if (std::strcmp(argv[i], "--no-gemm") == 0)
      withGemm = false;
    else
      usage = true;
  }
  if (usage) {
    std::fprintf(stderr, "usage: tprt-conformance BACKEND [-v] [--no-gemm]\n");
    return 2;
  }
  tprt_context *ctx = nullptr;
  if (tprt_init(argv[1], &ctx) != TPRT_OK) {
    std::fprintf(stderr, "tprt-conformance: %s\n", tprt_last_error());
    return 2;
  }
  Suite suite(ctx, verbose);
  suite.withGemm = withGemm;
  suite.run();

  // Everybody learns whether anybody failed.
  tprt_group *world = nullptr;
  tprt_group_world(ctx, &world);
  int32_t failures = suite.failures, total = -1;
  {
    Buffer in(ctx, std::vector<char>(reinterpret_cast<char *>(&failures),
                                     reinterpret_cast<char *>(&failures + 1)));
    Buffer out(ctx, std::vector<char>(sizeof(int32_t)));
    if (tprt_all_reduce(ctx, world, TPRT_I32, TPRT_SUM, in.data(), out.data(),
                        0, nullptr, nullptr) != TPRT_OK) {
      std::fprintf(stderr, "tprt-conformance: %s\n", tprt_last_error());
      total = failures + 1;
    } else {
      std::memcpy(&total, out.host(), sizeof(total));
    }
  }
  if (suite.rank == 0)
    std::printf("tprt-conformance: %s, %d ranks: %d checks, %d failures\n",
                argv[1], suite.size, suite.checks, total);
  std::fflush(stdout);
  tprt_finalize(ctx);
  return failures || total ? 1 : 0;
}
