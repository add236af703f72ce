//===- tprt-bench.cpp - Collective bandwidth of a libtprt backend ---------===//
//
// tprt-bench BACKEND [-c COLLECTIVE] [-d DTYPE] [-b MIN] [-e MAX] [-f FACTOR]
//                    [-w WARMUP] [-n ITERS]
//
// Times the collectives on the world group the way nccl-tests does and
// prints one row per size on rank 0:
//
//   size   the data size in bytes (all_gather: the output; the others: the
//          input buffer)
//   time   microseconds per call, the slowest rank's average over ITERS
//   algbw  size / time
//   busbw  algbw x 2(n-1)/n for all_reduce, x (n-1)/n for all_gather,
//          reduce_scatter and all_to_all: what each rank's link carries
//
// COLLECTIVE is all_reduce (default), all_gather, reduce_scatter,
// all_to_all or all. Sizes go from MIN to MAX bytes (default 8 to 64M),
// multiplied by FACTOR (default 8); K, M and G suffixes are accepted.
// Asserts nothing; bench/collectives.sh runs it under mpirun.
//
//===----------------------------------------------------------------------===//

#include "common/DType.h"
#include "tprt/tprt.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string backend;
  std::string collective = "all_reduce";
  tprt_dtype dtype = TPRT_F32;
  size_t minBytes = 8;
  size_t maxBytes = size_t(64) << 20;
  size_t factor = 8;
  int warmup = 3;
  int iterations = 10;
};

size_t parseSize(const char *text) {
  char *end = nullptr;
  double value = std::strtod(text, &end);
  switch (end && *end ? *end : ' ') {
  case 'K':
  case 'k':
    value *= 1024;
    break;
  case 'M':
  case 'm':
    value *= 1024 * 1024;
    break;
  case 'G':
  case 'g':
    value *= 1024.0 * 1024 * 1024;
    break;
  }
  return size_t(value);
}

bool parseDType(const char *text, tprt_dtype &out) {
  for (int dtype = TPRT_F32; tprt::isValidDType(dtype); ++dtype)
    if (std::strcmp(text, tprt::dtypeName(tprt_dtype(dtype))) == 0) {
      out = tprt_dtype(dtype);
      return true;
    }
  return false;
}

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "tprt-bench: %s: %s\n", what, tprt_last_error());
  std::exit(1);
}

/// Runs one collective on an input of `count` elements.
void runOnce(tprt_context *ctx, tprt_group *world, const Options &options,
             const std::string &collective, size_t count, void *in, void *out) {
  int64_t shape[1] = {int64_t(count)};
  tprt_status status = TPRT_OK;
  if (collective == "all_reduce")
    status = tprt_all_reduce(ctx, world, options.dtype, TPRT_SUM, in, out, 1,
                             shape, nullptr);
  else if (collective == "all_gather")
    status = tprt_all_gather(ctx, world, options.dtype, in, out, 1, shape, 0,
                             nullptr);
  else if (collective == "reduce_scatter")
    status = tprt_reduce_scatter(ctx, world, options.dtype, TPRT_SUM, in, out,
                                 1, shape, 0, nullptr);
  else
    status = tprt_all_to_all(ctx, world, options.dtype, in, out, 1, shape, 0, 0,
                             nullptr);
  if (status != TPRT_OK)
    die(collective.c_str());
}

/// The largest `seconds` over the ranks. On the GPU backends (`device`)
/// collectives take device memory, so the value travels through tprt_alloc
/// buffers.
double slowestRank(tprt_context *ctx, tprt_group *world, bool device,
                   double seconds) {
  double slowest = 0;
  if (!device) {
    if (tprt_all_reduce(ctx, world, TPRT_F64, TPRT_MAX, &seconds, &slowest, 0,
                        nullptr, nullptr) != TPRT_OK)
      die("tprt_all_reduce");
    return slowest;
  }
  void *in = nullptr, *out = nullptr;
  if (tprt_alloc(ctx, sizeof(double), &in) != TPRT_OK ||
      tprt_alloc(ctx, sizeof(double), &out) != TPRT_OK ||
      tprt_memcpy(ctx, in, &seconds, sizeof(double)) != TPRT_OK ||
      tprt_all_reduce(ctx, world, TPRT_F64, TPRT_MAX, in, out, 0, nullptr,
                      nullptr) != TPRT_OK ||
      tprt_memcpy(ctx, &slowest, out, sizeof(double)) != TPRT_OK)
    die("tprt_all_reduce of the times");
  tprt_free(ctx, in);
  tprt_free(ctx, out);
  return slowest;
}

void benchmark(tprt_context *ctx, const Options &options,
               const std::string &collective) {
  int rank = 0, n = 1, device = 0;
  tprt_rank(ctx, &rank);
  tprt_size(ctx, &n);
  tprt_memory_is_device(ctx, &device);
  tprt_group *world = nullptr;
  tprt_group_world(ctx, &world);
  size_t elementSize = tprt::dtypeSize(options.dtype);
  bool gather = collective == "all_gather";
  double busFactor =
      collective == "all_reduce" ? 2.0 * (n - 1) / n : double(n - 1) / n;
  // The library reads TPRT_CHECK the same way (docs/runtime.md).
  const char *check = std::getenv("TPRT_CHECK");
  bool checked = !(check && std::strcmp(check, "0") == 0);
  if (rank == 0)
    std::printf("# %s, %s, %s, %d ranks, %d iterations after %d warm-up, "
                "mismatch check %s\n"
                "# %12s %12s %12s %10s %10s\n",
                collective.c_str(), tprt::dtypeName(options.dtype),
                options.backend.c_str(), n, options.iterations, options.warmup,
                checked ? "on" : "off", "size(B)", "count", "time(us)", "algbw",
                "busbw");

  for (size_t bytes = options.minBytes; bytes <= options.maxBytes;
       bytes *= options.factor) {
    // Elements per rank's input, rounded so that the data size is a whole
    // number of elements and splits evenly over the ranks.
    size_t unit = elementSize * size_t(n);
    size_t dataBytes = bytes < unit ? unit : bytes / unit * unit;
    size_t count =
        gather ? dataBytes / n / elementSize : dataBytes / elementSize;
    size_t inBytes = count * elementSize;
    size_t outBytes = gather                           ? inBytes * n
                      : collective == "reduce_scatter" ? inBytes / n
                                                       : inBytes;
    void *in = nullptr, *out = nullptr;
    if (tprt_alloc(ctx, inBytes, &in) != TPRT_OK ||
        tprt_alloc(ctx, outBytes, &out) != TPRT_OK)
      die("tprt_alloc");
    // Zeros in: device memory on the GPU backends takes a copy, not a
    // memset (which faults).
    if (device) {
      std::vector<char> zeros(inBytes);
      if (tprt_memcpy(ctx, in, zeros.data(), inBytes) != TPRT_OK)
        die("tprt_memcpy");
    } else {
      std::memset(in, 0, inBytes);
    }

    for (int i = 0; i < options.warmup; ++i)
      runOnce(ctx, world, options, collective, count, in, out);
    tprt_barrier(ctx, world);
    tprt_timer_start(ctx);
    for (int i = 0; i < options.iterations; ++i)
      runOnce(ctx, world, options, collective, count, in, out);
    double seconds = 0;
    tprt_timer_elapsed(ctx, &seconds);
    double slowest =
        slowestRank(ctx, world, device, seconds / options.iterations);
    double algbw = double(dataBytes) / slowest / 1e9;
    if (rank == 0)
      std::printf("  %12zu %12zu %12.1f %10.3f %10.3f\n", dataBytes,
                  dataBytes / elementSize, slowest * 1e6, algbw,
                  algbw * busFactor);
    tprt_free(ctx, in);
    tprt_free(ctx, out);
    if (options.factor < 2)
      break;
  }
  if (rank == 0)
    std::printf("# algbw and busbw in GB/s (1e9 bytes per second)\n");
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool hasValue = i + 1 < argc;
    if (arg == "-c" && hasValue)
      options.collective = argv[++i];
    else if (arg == "-d" && hasValue) {
      if (!parseDType(argv[++i], options.dtype)) {
        std::fprintf(stderr, "tprt-bench: unknown dtype %s\n", argv[i]);
        return 2;
      }
    } else if (arg == "-b" && hasValue)
      options.minBytes = parseSize(argv[++i]);
    else if (arg == "-e" && hasValue)
      options.maxBytes = parseSize(argv[++i]);
    else if (arg == "-f" && hasValue)
      options.factor = parseSize(argv[++i]);
    else if (arg == "-w" && hasValue)
      options.warmup = std::atoi(argv[++i]);
    else if (arg == "-n" && hasValue)
      options.iterations = std::atoi(argv[++i]);
    else if (options.backend.empty() && arg[0] != '-')
      options.backend = arg;
    else {
      std::fprintf(stderr,
                   "usage: tprt-bench BACKEND [-c COLLECTIVE] [-d DTYPE] "
                   "[-b MIN] [-e MAX] [-f FACTOR] [-w WARMUP] [-n ITERS]\n");
      return 2;
    }
  }
  if (options.backend.empty() || options.iterations < 1 ||
      options.minBytes < 1) {
    std::fprintf(stderr, "tprt-bench: a backend, -n >= 1 and -b >= 1 are "
                         "needed\n");
    return 2;
  }
  std::vector<std::string> collectives;
  if (options.collective == "all")
    collectives = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  else if (options.collective == "all_reduce" ||
           options.collective == "all_gather" ||
           options.collective == "reduce_scatter" ||
           options.collective == "all_to_all")
    collectives = {options.collective};
  else {
    std::fprintf(stderr, "tprt-bench: unknown collective %s\n",
                 options.collective.c_str());
    return 2;
  }

  tprt_context *ctx = nullptr;
  if (tprt_init(options.backend.c_str(), &ctx) != TPRT_OK)
    die("tprt_init");
  for (const std::string &collective : collectives)
    benchmark(ctx, options, collective);
  tprt_finalize(ctx);
  return 0;
}
