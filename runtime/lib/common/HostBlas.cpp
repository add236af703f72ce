//===- HostBlas.cpp - The BLAS behind the host GEMM -----------------------===//
//
// Loading, once per process, on the first product or report:
//  1. Threads: TPRT_THREADS (a positive integer; default 1) becomes
//     OPENBLAS_NUM_THREADS while the library starts, so that OpenBLAS's
//     pool has that many threads, and openblas_set_num_threads after (the
//     environment is put back as it was).
//  2. The library (TPRT_BLAS_LIBRARY, else libopenblas.so.0) is opened with
//     dlopen. Without it every product runs the reference loop, and the
//     report says so.
//  3. The kernel: OpenBLAS's DYNAMIC_ARCH build picks its kernel table in a
//     constructor, from the CPU's family and model numbers, and takes a CPU
//     it does not know for an older one (0.3.21 on a Sapphire Rapids Xeon:
//     Prescott or SkylakeX, 27 or 134 GFLOP/s where Cooperlake's kernels run
//     159). So tprt asks the library which kernel it picked
//     (openblas_get_corename) and compares its instruction-set level with
//     that of the best kernel the CPU's features allow (cpuid, and xgetbv
//     for the OS's register state). When the library's is lower, the
//     library is closed and reopened with OPENBLAS_CORETYPE naming the
//     better kernel (only while it opens). Never when the user set
//     OPENBLAS_CORETYPE, when the library was already loaded by someone else
//     (it cannot be reopened then), or when the library's kernel is one
//     this table does not know (a newer OpenBLAS that knows the CPU).
//
//===----------------------------------------------------------------------===//

#include "HostBlas.h"

#include "Error.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

using namespace tprt;

CpuFeatures tprt::hostCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return f;
  bool osxsave = c & (1u << 27);
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  // SSE and AVX state; then opmask, upper ZMM halves and ZMM16-31.
  bool ymm = (xcr0 & 0x6) == 0x6;
  bool zmm = ymm && (xcr0 & 0xE0) == 0xE0;
  f.avx = ymm && (c & (1u << 28));
  f.fma = ymm && (c & (1u << 12));
  if (__get_cpuid_max(0, nullptr) < 7)
    return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm && (b & (1u << 5));
  f.avx512f = zmm && (b & (1u << 16));
  f.avx512dq = zmm && (b & (1u << 17));
  f.avx512cd = zmm && (b & (1u << 28));
  f.avx512bw = zmm && (b & (1u << 30));
  f.avx512vl = zmm && (b & (1u << 31));
  __cpuid_count(7, 1, a, b, c, d);
  f.avx512bf16 = zmm && (a & (1u << 5));
#endif
  return f;
}

const char *tprt::openblasCoreFor(const CpuFeatures &f) {
  bool skylakeX =
      f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.avx512cd;
  if (skylakeX && f.avx512bf16)
    return "Cooperlake";
  if (skylakeX)
    return "SkylakeX";
  if (f.avx2 && f.fma)
    return "Haswell";
  if (f.avx)
    return "Sandybridge";
  return "";
}

int tprt::openblasCoreLevel(const std::string &name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  struct Level {
    const char *name;
    int level;
  };
  // OpenBLAS 0.3.21's x86-64 DYNAMIC_ARCH cores (driver/others/dynamic.c).
  static const Level table[] = {
      {"cooperlake", 4}, {"skylakex", 3},   {"haswell", 2},
      {"zen", 2},        {"excavator", 2},  {"sandybridge", 1},
      {"bulldozer", 1},  {"piledriver", 1}, {"steamroller", 1},
      {"prescott", 0},   {"core2", 0},      {"penryn", 0},
      {"dunnington", 0}, {"nehalem", 0},    {"atom", 0},
      {"nano", 0},       {"opteron", 0},    {"opteron_sse3", 0},
      {"barcelona", 0},  {"bobcat", 0},     {"katmai", 0},
      {"coppermine", 0}, {"northwood", 0},  {"banias", 0},
      {"athlon", 0}};
  for (const Level &entry : table)
    if (lower == entry.name)
      return entry.level;
  return -1;
}

namespace {

const char *kDefaultLibrary = "libopenblas.so.0";

std::string corename(void *handle) {
  using Fn = char *(*)();
  auto fn = reinterpret_cast<Fn>(dlsym(handle, "openblas_get_corename"));
  const char *name = fn ? fn() : nullptr;
  return name ? name : "";
}

/// "OpenBLAS 0.3.21" from openblas_get_config(), or "" for another library.
std::string version(void *handle) {
  using Fn = char *(*)();
  auto fn = reinterpret_cast<Fn>(dlsym(handle, "openblas_get_config"));
  const char *config = fn ? fn() : nullptr;
  if (!config)
    return "";
  std::string text = config;
  size_t first = text.find(' ');
  size_t second =
      first == std::string::npos ? first : text.find(' ', first + 1);
  return text.substr(0, second);
}

/// Whether the process has the library loaded (a probe that leaves the
/// reference count as it was).
bool isLoaded(const std::string &path) {
  void *probe = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (probe)
    dlclose(probe);
  return probe != nullptr;
}

} // namespace

tprt::ScopedEnv::ScopedEnv(const char *name, const char *value) : name(name) {
  if (const char *old = std::getenv(name)) {
    previous = old;
    hadPrevious = true;
  }
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

tprt::ScopedEnv::~ScopedEnv() {
  if (hadPrevious)
    setenv(name, previous.c_str(), 1);
  else
    unsetenv(name);
}

HostBlas tprt::loadHostBlas() {
  HostBlas blas;
  // 1. Threads.
  const char *threadsText = std::getenv("TPRT_THREADS");
  if (threadsText && *threadsText) {
    char *end = nullptr;
    long value = std::strtol(threadsText, &end, 10);
    if (*end != '\0' || value < 1 || value > 4096) {
      blas.error = std::string("TPRT_THREADS is \"") + threadsText +
                   "\", expected a number of threads from 1 to 4096";
      blas.description = "none (" + blas.error + ")";
      return blas;
    }
    blas.threads = int(value);
  }
  std::string threadsNote = std::to_string(blas.threads) +
                            (blas.threads == 1 ? " thread" : " threads");
  ScopedEnv poolSize("OPENBLAS_NUM_THREADS",
                     std::to_string(blas.threads).c_str());

  // 2. The library.
  const char *chosen = std::getenv("TPRT_BLAS_LIBRARY");
  std::string path = chosen && *chosen ? chosen : kDefaultLibrary;
  bool loadedBefore = isLoaded(path);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    blas.description = std::string("none (") + (why ? why : path) +
                       "); products run a reference loop";
    return blas;
  }

  // 3. The kernel.
  const char *userCore = std::getenv("OPENBLAS_CORETYPE");
  std::string own = corename(handle);
  std::string core = own;
  std::string how;
  if (userCore && *userCore) {
    how = "OPENBLAS_CORETYPE";
  } else if (!own.empty()) {
    const char *best = openblasCoreFor(hostCpuFeatures());
    int ownLevel = openblasCoreLevel(own);
    if (*best && ownLevel >= 0 && ownLevel < openblasCoreLevel(best)) {
      if (loadedBefore) {
        how = std::string("OpenBLAS's own detection; the CPU's features "
                          "allow ") +
              best + ", but OpenBLAS was loaded before libtprt";
      } else {
        dlclose(handle);
        {
          ScopedEnv kernel("OPENBLAS_CORETYPE", best);
          handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        }
        if (!handle) {
          const char *why = dlerror();
          blas.description = std::string("none (") + (why ? why : path) +
                             "); products run a reference loop";
          return blas;
        }
        core = corename(handle);
        how = core == best
                  ? "picked by tprt from the CPU's features; OpenBLAS's own "
                    "detection picks " +
                        own
                  : "OpenBLAS's own detection; tprt could not switch to " +
                        std::string(best);
      }
    } else {
      how = "OpenBLAS's own detection";
    }
  }
  blas.sgemm = reinterpret_cast<SgemmFn>(dlsym(handle, "cblas_sgemm"));
  blas.dgemm = reinterpret_cast<DgemmFn>(dlsym(handle, "cblas_dgemm"));
  if (!blas.sgemm || !blas.dgemm) {
    blas.sgemm = nullptr;
    blas.dgemm = nullptr;
    blas.description = path + " has no cblas_sgemm and cblas_dgemm; "
                              "products run a reference loop";
    return blas;
  }
  using SetThreadsFn = void (*)(int);
  if (auto setThreads = reinterpret_cast<SetThreadsFn>(
          dlsym(handle, "openblas_set_num_threads")))
    setThreads(blas.threads);
  else
    threadsNote = "threads as the library sets them (TPRT_THREADS applies "
                  "to OpenBLAS only)";
  std::string name = version(handle);
  if (name.empty())
    name = path;
  blas.description = name;
  if (!core.empty())
    blas.description += ", core " + core + " (" + how + ")";
  blas.description += ", " + threadsNote;
  return blas;
}

const HostBlas &tprt::hostBlas() {
  static const HostBlas blas = loadHostBlas();
  return blas;
}

extern "C" TPRT_API tprt_status tprt_host_blas(const char **description) {
  ApiScope scope("tprt_host_blas");
  return guard([&]() -> tprt_status {
    if (tprt_status status = checkNotNull({{"description", description}}))
      return status;
    const HostBlas &blas = hostBlas();
    if (!blas.error.empty())
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "%s", blas.error.c_str());
    *description = blas.description.c_str();
    return TPRT_OK;
  });
}
