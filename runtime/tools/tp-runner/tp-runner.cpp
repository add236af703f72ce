//===- tp-runner.cpp - Runs a compiled model on libtprt -------------------===//
//
// tp-runner MODEL_DIR [--backend mpi|single|nccl|cuda-shared] [--nproc N]
//                     [--timeout S] [--output FILE] [--warmup N]
//                     [--steps N] [--print] [--checkpoint PATH]
//                     [--require-all] [--reference PATH [--reference-tol R]]
//                     [--peer-timeout S]
//
// Runs a model compiled to the ABI of docs/model-abi.md (MODEL_DIR/model.json
// and MODEL_DIR/model.so) on one rank of a libtprt context:
//
//   1. creates the context (default backend: mpi under Open MPI's mpirun,
//      single otherwise), checks that every rank runs the same plan (a hash
//      of model.json and model.so's size, gathered over the world) and that
//      there are as many ranks as the mesh has devices, and that every tp
//      group (the last mesh axis) lies inside one node (Device.h);
//   2. loads model.so (only now: a GPU model loads its kernels when it is
//      loaded, on the context's device), checks that model.json describes
//      the buffers the library was compiled for (the copy it carries,
//      tp_model_json), binds the runtime to the mesh (tprt_model_bind);
//   3. allocates every buffer with its local shape (device memory on the
//      GPU backends, filled on the host and copied in) and fills inputs and
//      params with this device's block of the global value (from the
//      --checkpoint when it holds the buffer's name, else from `init`;
//      Sources.h; a buffer with a `source` is a block of the stored tensor,
//      Init.h), zero padding past the global shape, integer indices
//      checked against their `index_bound`; outputs start as zeros;
//   4. calls the entry --warmup times, then --steps times under the
//      context's timer and counters;
//   5. assembles each output's global value (all_reduce of partial terms,
//      then all_gather of the blocks of every split dimension, padding
//      dropped) and, on rank 0, writes them to --output (format in
//      docs/model-abi.md, "tp-runner output") and prints them (--print);
//   6. prints a report on rank 0: time per step, collectives per step
//      against the plan in model.json, time in communication; with
//      --reference, each output compared with the file's (Reference.h).
//
// Exit status: 0; 1 when the runtime, the model library or a file fails,
// when the ranks run different plans, the checkpoint does not fit or an
// output does not match the reference; 2 for
// a bad command line, model.json or TP_RUNNER_FAULT.
//
// --nproc N starts N local ranks itself, torchrun-style (Launch.h).
//
// Fault injection, for tests only: TP_RUNNER_FAULT=crash:R makes rank R
// abort() right before the first call of the entry, hang:R makes it sleep
// until it is killed, stop:R stops it (SIGSTOP: every thread, as `kill -STOP`
// would), perturb:R makes it change every f32/f64 value of its
// inputs and params (x -> x * (1 + 2^-6) + 2^-6), so that a run differs
// from the unsharded one by construction (docs/model-abi.md).
//
// Links only libtprt, libdl and the C++ standard library: no LLVM.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "Device.h"
#include "Init.h"
#include "Launch.h"
#include "Model.h"
#include "Reference.h"
#include "Sources.h"
#include "Train.h"
#include "Watchdog.h"

#include "tprt/tprt.h"
#include "tprt/tprt_model.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace tprun;

namespace {

const char *const kUsage =
    "usage: tp-runner MODEL_DIR [--backend mpi|single|nccl|cuda-shared]\n"
    "                 [--output FILE] [--nproc N [--timeout S]]\n"
    "                 [--warmup N] [--steps N] [--threads N] [--print]\n"
    "                 [--checkpoint PATH [--require-all]]\n"
    "                 [--reference PATH [--reference-tol R]]\n"
    "                 [--loss-file FILE]\n"
    "\n"
    "Runs the compiled model in MODEL_DIR (model.json, model.so; see\n"
    "docs/model-abi.md) on libtprt, one process per mesh device.\n"
    "\n"
    "  --backend NAME  libtprt backend (default: mpi under mpirun, else\n"
    "                  single; TPRT_BACKEND overrides the default)\n"
    "  --output FILE   rank 0 writes the outputs' global values to FILE\n"
    "  --warmup N      untimed calls of the entry first (default 0)\n"
    "  --steps N       timed calls of the entry (default 1)\n"
    "  --threads N     BLAS threads per rank (TPRT_THREADS; default 1)\n"
    "  --print         rank 0 prints each output's shape, first values, sum\n"
    "  --checkpoint PATH  fill the inputs and params named in PATH from it:\n"
    "                  a .safetensors file of global tensors, a\n"
    "                  model.safetensors.index.json and its shards, or a\n"
    "                  folder holding either; the others from their init\n"
    "  --require-all   with --checkpoint: every input and param must be in\n"
    "                  PATH\n"
    "  --reference PATH  compare every output with the tensor of its name in\n"
    "                  PATH (as --checkpoint); inputs the checkpoint lacks\n"
    "                  are read from PATH too\n"
    "  --reference-tol R  the largest relative error that matches (default\n"
    "                  1e-5, 2e-2 for bf16 and f16 outputs)\n"
    "  --loss-file FILE  a training step (outputs with \"updates\"): rank 0\n"
    "                  writes each step's loss to FILE, one line a step\n"
    "  --peer-timeout S  a rank of this host whose heartbeat is S seconds\n"
    "                  old (stopped: SIGSTOP, a debugger) is named and the\n"
    "                  run ended (default 30; 0: not watched)\n"
    "\n"
    "A model whose outputs update its arguments is a training step: each of\n"
    "the --warmup and --steps calls is one step, fed the previous step's\n"
    "updated outputs, and rank 0 prints `step N loss X` after each.\n"
    "\n"
    "  --nproc N       start N local ranks of this command (torchrun-style\n"
    "                  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,\n"
    "                  MASTER_PORT; default backend nccl for N > 1), wait\n"
    "                  for them, stop them all when one fails\n"
    "  --timeout S     with --nproc: stop the ranks after S seconds (exit\n"
    "                  124)\n"
    "\n"
    "On a GPU backend (nccl, cuda, cuda-shared) the buffers are device\n"
    "memory: filled on the host, copied in, outputs copied back (docs/gpu.md).\n"
    "\n"
    "TP_RUNNER_FAULT=crash:R, hang:R or stop:R (tests only): rank R aborts,\n"
    "sleeps until killed, or stops (SIGSTOP), right before the first call\n"
    "of the entry.\n";

struct Options {
  std::string dir;
  std::string backend;
  std::string output;
  long warmup = 0;
  long steps = 1;
  long threads = 0; // --threads: TPRT_THREADS (0: as the environment says)
  bool print = false;
  std::string checkpoint;
  bool requireAll = false;
  std::string reference;
  double referenceTolerance = -1; // -1: the default
  /// --nproc N: the launcher of N local ranks (Launch.h); rankArgs is the
  /// command line each rank gets (without --nproc and --timeout).
  long nproc = 0;
  long timeout = 0;
  long peerTimeout = 30; // --peer-timeout S (Watchdog.h; 0: off)
  std::vector<std::string> rankArgs;
  std::string lossFile; // training steps (Train.h)
};

/// TP_RUNNER_FAULT: a fault injected into one rank, for tests.
struct Fault {
  enum class Kind { None, Crash, Hang, Stop, Perturb };
  Kind kind = Kind::None;
  long rank = -1;
};

[[noreturn]] void usageError(const std::string &message) {
  std::fprintf(stderr, "tp-runner: error: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

long parseCount(const std::string &flag, const std::string &text,
                long minimum) {
  errno = 0;
  char *end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno || !end || *end || value < minimum ||
      value > 1000000000L)
    usageError(flag + " expects an integer of at least " +
               std::to_string(minimum) + ", got \"" + text + "\"");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    int first = i; // for rankArgs
    std::string arg = argv[i];
    std::string value;
    bool hasValue = false;
    size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      hasValue = true;
    }
    auto takeValue = [&]() -> std::string {
      if (hasValue)
        return value;
      if (i + 1 >= argc)
        usageError(arg + " expects a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--backend") {
      options.backend = takeValue();
      if (options.backend.empty())
        usageError("--backend expects a backend name");
    } else if (arg == "--output" || arg == "-o") {
      options.output = takeValue();
      if (options.output.empty())
        usageError(arg + " expects a file name");
    } else if (arg == "--warmup") {
      options.warmup = parseCount(arg, takeValue(), 0);
    } else if (arg == "--steps") {
      options.steps = parseCount(arg, takeValue(), 1);
    } else if (arg == "--threads") {
      options.threads = parseCount(arg, takeValue(), 1);
    } else if (arg == "--peer-timeout") {
      options.peerTimeout = parseCount(arg, takeValue(), 0);
    } else if (arg == "--print") {
      if (hasValue)
        usageError("--print takes no value");
      options.print = true;
    } else if (arg == "--checkpoint") {
      options.checkpoint = takeValue();
      if (options.checkpoint.empty())
        usageError("--checkpoint expects a file name");
    } else if (arg == "--reference") {
      options.reference = takeValue();
      if (options.reference.empty())
        usageError("--reference expects a file name");
    } else if (arg == "--reference-tol") {
      std::string text = takeValue();
      errno = 0;
      char *end = nullptr;
      options.referenceTolerance = std::strtod(text.c_str(), &end);
      if (text.empty() || errno || !end || *end ||
          !(options.referenceTolerance >= 0) ||
          std::isinf(options.referenceTolerance))
        usageError("--reference-tol expects a non-negative number, got \"" +
                   text + "\"");
    } else if (arg == "--require-all") {
      if (hasValue)
        usageError("--require-all takes no value");
      options.requireAll = true;
    } else if (arg == "--loss-file") {
      options.lossFile = takeValue();
      if (options.lossFile.empty())
        usageError("--loss-file expects a file name");
    } else if (arg == "--nproc") {
      options.nproc = parseCount(arg, takeValue(), 1);
      continue;
    } else if (arg == "--timeout") {
      options.timeout = parseCount(arg, takeValue(), 1);
      continue;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      usageError("unknown option " + arg);
    } else if (options.dir.empty()) {
      options.dir = arg;
    } else {
      usageError("more than one model directory: " + options.dir + ", " + arg);
    }
    for (int k = first; k <= i; ++k)
      options.rankArgs.push_back(argv[k]);
  }
  if (options.dir.empty())
    usageError("no model directory");
  if (options.timeout && !options.nproc)
    usageError("--timeout needs --nproc");
  if (options.requireAll && options.checkpoint.empty())
    usageError("--require-all needs --checkpoint");
  if (options.referenceTolerance >= 0 && options.reference.empty())
    usageError("--reference-tol needs --reference");
  return options;
}

/// Reads TP_RUNNER_FAULT ("crash:R", "hang:R", "stop:R", "perturb:R"; unset or
/// empty: none).
bool parseFault(Fault &fault, std::string &error) {
  const char *text = std::getenv("TP_RUNNER_FAULT");
  if (!text || !*text)
    return true;
  std::string value = text;
  size_t colon = value.find(':');
  std::string kind = value.substr(0, colon);
  if (kind == "crash")
    fault.kind = Fault::Kind::Crash;
  else if (kind == "hang")
    fault.kind = Fault::Kind::Hang;
  else if (kind == "stop")
    fault.kind = Fault::Kind::Stop;
  else if (kind == "perturb")
    fault.kind = Fault::Kind::Perturb;
  char *end = nullptr;
  const char *number =
      colon == std::string::npos ? "" : value.c_str() + colon + 1;
  errno = 0;
  fault.rank = std::strtol(number, &end, 10);
  if (fault.kind == Fault::Kind::None || !*number || errno || *end ||
      fault.rank < 0) {
    error = "TP_RUNNER_FAULT is \"" + value +
            "\", expected crash:RANK, hang:RANK, stop:RANK or perturb:RANK";
    return false;
  }
  return true;
}

/// The plan's identity: 64-bit FNV-1a of model.json's bytes, then of
/// model.so's size (8 bytes, little-endian; all ones when it is missing).
uint64_t planHash(const std::string &dir) {
  uint64_t hash = 0xcbf29ce484222325u;
  auto mix = [&](unsigned char byte) {
    hash ^= byte;
    hash *= 0x100000001b3u;
  };
  std::ifstream json(dir + "/model.json", std::ios::binary);
  for (std::istreambuf_iterator<char> it(json), end; it != end; ++it)
    mix(static_cast<unsigned char>(*it));
  struct stat info;
  uint64_t librarySize = stat((dir + "/model.so").c_str(), &info) == 0
                             ? uint64_t(info.st_size)
                             : ~uint64_t(0);
  for (int i = 0; i < 8; ++i)
    mix(static_cast<unsigned char>(librarySize >> (8 * i)));
  return hash;
}

std::string hexText(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%016" PRIx64, value);
  return text;
}

/// Before the context exists: is this process the first rank (or alone)?
bool firstRankByEnvironment() {
  for (const char *name :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK"}) {
    const char *value = std::getenv(name);
    if (value && *value)
      return std::strcmp(value, "0") == 0;
  }
  return true;
}

std::string countPerStep(uint64_t total, long steps) {
  char text[64];
  if (total % uint64_t(steps) == 0)
    std::snprintf(text, sizeof(text), "%" PRIu64, total / uint64_t(steps));
  else
    std::snprintf(text, sizeof(text), "%.2f", double(total) / double(steps));
  return text;
}

class Runner {
public:
  Runner(const Options &options, const Model &model, uint64_t plan,
         Fault fault)
      : options(options), model(model), plan(plan), fault(fault) {}

  int run();

private:
  const Options &options;
  const Model &model;
  uint64_t plan;
  Fault fault;
  tprt_context *ctx = nullptr;
  tprt_group *world = nullptr;
  int rank = 0;
  int size = 1;
  std::vector<int64_t> coords;
  std::map<std::vector<int>, tprt_group *> groups;
  /// Host or device memory (set right after tprt_init; Device.h).
  std::unique_ptr<DeviceMemory> memory;
  /// Names a peer that stops answering (Watchdog.h).
  Watchdog watchdog;

  std::string prefix() const {
    return size > 1 ? "tp-runner: rank " + std::to_string(rank) + ": "
                    : std::string("tp-runner: ");
  }

  /// A failing tprt call: fatal, naming the call and the runtime's message.
  void check(tprt_status status, const char *call) {
    if (status == TPRT_OK)
      return;
    std::fprintf(stderr, "%s%s failed: %s: %s\n", prefix().c_str(), call,
                 tprt_status_name(status), tprt_last_error());
    std::fflush(stderr);
    std::exit(1);
  }

  /// Collectives on host arrays, staged through device memory on GPU
  /// backends (Device.h); fatal on failure like check().
  void hostAllReduce(tprt_group *group, tprt_dtype dtype, tprt_reduction op,
                     const void *in, void *out, int rank,
                     const int64_t *shape, size_t bytes) {
    const char *call = "tprt_all_reduce";
    tprt_status status =
        memory ? memory->allReduce(group, dtype, op, in, out, rank, shape,
                                   bytes, call)
               : tprt_all_reduce(ctx, group, dtype, op, in, out, rank, shape,
                                 nullptr);
    check(status, call);
  }
  void hostAllGather(tprt_group *group, tprt_dtype dtype, const void *in,
                     void *out, int rank, const int64_t *shape, int dim,
                     size_t inBytes, size_t outBytes) {
    const char *call = "tprt_all_gather";
    tprt_status status =
        memory ? memory->allGather(group, dtype, in, out, rank, shape, dim,
                                   inBytes, outBytes, call)
               : tprt_all_gather(ctx, group, dtype, in, out, rank, shape, dim,
                                 nullptr);
    check(status, call);
  }

  /// True on every rank iff `ok` on every rank (a max all_reduce of the
  /// failure flag over the world, made before any counted step).
  bool agree(bool ok) {
    int32_t failed = ok ? 0 : 1, any = 0;
    int64_t one = 1;
    hostAllReduce(world, TPRT_I32, TPRT_MAX, &failed, &any, 1, &one,
                  sizeof(failed));
    return any == 0;
  }

  /// Prints the messages of failing ranks and tells whether every rank
  /// succeeded (the same answer on every rank). Each rank's failure flag is
  /// gathered over the world: when rank 0 failed only rank 0 prints (the
  /// ranks read the same files and fail alike), else every failing rank
  /// prints, naming itself.
  bool report(const std::vector<std::string> &messages) {
    int64_t failed = messages.empty() ? 0 : 1;
    std::vector<int64_t> all(size_t(size), 0);
    int64_t one = 1;
    hostAllGather(world, TPRT_I64, &failed, all.data(), 1, &one, 0,
                  sizeof(failed), all.size() * sizeof(int64_t));
    bool anyFailed = false;
    for (int64_t flag : all)
      anyFailed |= flag != 0;
    if (failed && (rank == 0 || all[0] == 0)) {
      // Rank 0 speaks for every rank: no rank in its messages.
      std::string from = rank == 0 ? "tp-runner: " : prefix();
      for (const std::string &message : messages)
        std::fprintf(stderr, "%s%s\n", from.c_str(), message.c_str());
      std::fflush(stderr);
    }
    return !anyFailed;
  }

  /// Every rank's plan hash, gathered over the world: true on every rank
  /// iff they are all equal; else rank 0 prints the first differing pair.
  bool samePlan() {
    std::vector<int64_t> plans(size_t(size), 0);
    int64_t mine = int64_t(plan), one = 1;
    hostAllGather(world, TPRT_I64, &mine, plans.data(), 1, &one, 0,
                  sizeof(mine), plans.size() * sizeof(int64_t));
    for (int r = 1; r < size; ++r) {
      if (plans[size_t(r)] == plans[0])
        continue;
      if (rank == 0) {
        std::fprintf(stderr,
                     "tp-runner: ranks run different plans: rank 0 has plan "
                     "%s but rank %d has plan %s (model.json and model.so "
                     "must be the same on every rank)\n",
                     hexText(uint64_t(plans[0])).c_str(), r,
                     hexText(uint64_t(plans[size_t(r)])).c_str());
        std::fflush(stderr);
      }
      return false;
    }
    return true;
  }

  /// TP_RUNNER_FAULT=perturb:R, on rank R: every f32/f64 value of a
  /// filled input or param block becomes x * (1 + 2^-6) + 2^-6 (zeros
  /// change too), once, before it reaches the device.
  void perturb(const Buffer &buffer, void *data, size_t bytes) {
    if (fault.kind != Fault::Kind::Perturb || fault.rank != rank ||
        buffer.role == Role::Output)
      return;
    auto apply = [&](auto *values) {
      for (size_t i = 0; i < bytes / sizeof(*values); ++i)
        values[i] = values[i] * (1 + 0x1p-6) + 0x1p-6;
    };
    if (buffer.dtype == DType::F32)
      apply(static_cast<float *>(data));
    else if (buffer.dtype == DType::F64)
      apply(static_cast<double *>(data));
  }

  /// TP_RUNNER_FAULT, on its rank: abort, or sleep until killed (a
  /// perturbation is applied while the buffers are filled).
  void injectFault() {
    if (fault.kind == Fault::Kind::None ||
        fault.kind == Fault::Kind::Perturb || fault.rank != rank)
      return;
    bool crash = fault.kind == Fault::Kind::Crash;
    bool stopped = fault.kind == Fault::Kind::Stop;
    std::fprintf(stderr,
                 "tp-runner: rank %d: injected %s (TP_RUNNER_FAULT)\n", rank,
                 crash ? "crash" : stopped ? "stop" : "hang");
    std::fflush(stderr);
    std::fflush(stdout);
    if (crash)
      std::abort();
    if (stopped) // as `kill -STOP`: every thread, the heartbeat's too
      raise(SIGSTOP);
    for (;;)
      pause();
  }

  /// Ends every rank the same way after a failure they all agreed on.
  [[noreturn]] void stop() {
    watchdog.finish();
    tprt_finalize(ctx);
    std::exit(1);
  }

  tprt_group *groupFor(const std::vector<int> &axes) {
    auto it = groups.find(axes);
    if (it != groups.end())
      return it->second;
    tprt_group *group = nullptr;
    static const int64_t kNoMesh = 1;
    check(tprt_group_for_axes(
              ctx, int(model.axisSizes.size()),
              model.axisSizes.empty() ? &kNoMesh : model.axisSizes.data(),
              int(axes.size()), axes.data(), &group),
          "tprt_group_for_axes");
    groups[axes] = group;
    return group;
  }

  /// This device's index in the group of `axes`, first axis most
  /// significant.
  int64_t groupIndex(const std::vector<int> &axes) const {
    int64_t index = 0;
    for (int a : axes)
      index = index * model.axisSizes[size_t(a)] + coords[size_t(a)];
    return index;
  }

  std::vector<char> assemble(const Buffer &buffer, const void *local);
  void printOutput(size_t number, const Buffer &buffer,
                   const std::vector<char> &data) const;
  bool writeOutput(std::FILE *file, const Buffer &buffer,
                   const std::vector<char> &data) const;
};

std::vector<char> Runner::assemble(const Buffer &buffer, const void *local) {
  size_t elementSize = dtypeSize(buffer.dtype);
  bool widen = elementSize == 1; // i8, i1: no 1-byte tprt dtype
  size_t commSize = widen ? 4 : elementSize;
  tprt_dtype dtype = commDType(buffer.dtype);
  std::vector<int64_t> shape = buffer.localShape;
  int64_t count = buffer.localElements();

  // On device memory: the local block's host copy (Device.h).
  std::vector<char> hostCopy;
  if (memory && memory->onDevice() && count > 0) {
    hostCopy.resize(size_t(count) * elementSize);
    check(memory->download(hostCopy.data(), local, hostCopy.size()),
          "tprt_memcpy");
    local = hostCopy.data();
  }

  std::vector<char> current(size_t(count) * commSize);
  if (widen) {
    for (int64_t i = 0; i < count; ++i) {
      int32_t value = int32_t(loadDouble(buffer.dtype, local, i));
      std::memcpy(current.data() + size_t(i) * 4, &value, 4);
    }
  } else if (count) {
    std::memcpy(current.data(), local, current.size());
  }
  int64_t shapeArray[TPRT_MAX_RANK + 1] = {0};

  if (buffer.partial && !buffer.partialAxes.empty() && count > 0) {
    std::copy(shape.begin(), shape.end(), shapeArray);
    hostAllReduce(groupFor(buffer.partialAxes), dtype, buffer.partialKind,
                  current.data(), current.data(), int(shape.size()),
                  shapeArray, current.size());
  }

  for (size_t d = 0; d < shape.size(); ++d) {
    const std::vector<int> &axes = buffer.dimAxes[d];
    if (axes.empty() || count == 0)
      continue;
    tprt_group *group = groupFor(axes);
    int64_t members = model.groupSize(axes);
    std::copy(shape.begin(), shape.end(), shapeArray);
    std::vector<int64_t> gathered = shape;
    gathered[d] *= members;
    std::vector<char> next(size_t(count * members) * commSize);
    hostAllGather(group, dtype, current.data(), next.data(),
                  int(shape.size()), shapeArray, int(d), current.size(),
                  next.size());
    int64_t n = buffer.globalShape[d];
    if (gathered[d] > n) {
      // Drop the padding: keep the first n of every run along dimension d.
      int64_t outer = 1, inner = 1;
      for (size_t k = 0; k < d; ++k)
        outer *= gathered[k];
      for (size_t k = d + 1; k < gathered.size(); ++k)
        inner *= gathered[k];
      size_t keep = size_t(n * inner) * commSize;
      size_t stride = size_t(gathered[d] * inner) * commSize;
      for (int64_t o = 0; o < outer; ++o)
        std::memmove(next.data() + size_t(o) * keep,
                     next.data() + size_t(o) * stride, keep);
      gathered[d] = n;
      next.resize(size_t(outer) * keep);
    }
    shape = gathered;
    count = int64_t(next.size() / commSize);
    current.swap(next);
  }

  if (!widen)
    return current;
  std::vector<char> narrow(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int32_t value;
    std::memcpy(&value, current.data() + size_t(i) * 4, 4);
    // i8 wraps; i1 keeps the low bit (sums of i1 are taken modulo 2).
    narrow[size_t(i)] = buffer.dtype == DType::I1 ? char(value & 1)
                                                  : char(int8_t(value));
  }
  return narrow;
}

void Runner::printOutput(size_t number, const Buffer &buffer,
                         const std::vector<char> &data) const {
  int64_t count = buffer.globalElements();
  auto format = [&](double value) {
    char text[64];
    if (!isFloat(buffer.dtype))
      std::snprintf(text, sizeof(text), "%.0f", value);
    else if (buffer.dtype == DType::F64)
      std::snprintf(text, sizeof(text), "%.17g", value);
    else
      std::snprintf(text, sizeof(text), "%.9g", value);
    return std::string(text);
  };
  std::printf("output %zu \"%s\": %s %s", number, buffer.name.c_str(),
              dtypeName(buffer.dtype), shapeText(buffer.globalShape).c_str());
  if (buffer.globalShape.empty()) {
    std::printf(": value %s\n", format(loadDouble(buffer.dtype, data.data(), 0)).c_str());
    return;
  }
  double sum = 0;
  for (int64_t i = 0; i < count; ++i)
    sum += loadDouble(buffer.dtype, data.data(), i);
  std::printf(":");
  const int64_t shown = 8;
  for (int64_t i = 0; i < count && i < shown; ++i)
    std::printf(" %s", format(loadDouble(buffer.dtype, data.data(), i)).c_str());
  if (count > shown)
    std::printf(" ...");
  char sumText[64];
  std::snprintf(sumText, sizeof(sumText), "%.10g", sum);
  std::printf(" (sum %s)\n", sumText);
}

bool Runner::writeOutput(std::FILE *file, const Buffer &buffer,
                         const std::vector<char> &data) const {
  uint32_t header[3] = {0x54504F55u, dtypeCode(buffer.dtype),
                        uint32_t(buffer.globalShape.size())};
  if (std::fwrite(header, sizeof(header), 1, file) != 1)
    return false;
  if (!buffer.globalShape.empty() &&
      std::fwrite(buffer.globalShape.data(), sizeof(int64_t),
                  buffer.globalShape.size(),
                  file) != buffer.globalShape.size())
    return false;
  return data.empty() ||
         std::fwrite(data.data(), 1, data.size(), file) == data.size();
}

int Runner::run() {
  // 1. The context, and as many ranks as devices.
  std::string backend = options.backend;
  if (backend.empty()) {
    const char *fromEnv = std::getenv("TPRT_BACKEND");
    const char *ompi = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (fromEnv && *fromEnv)
      backend = fromEnv;
    else
      backend = ompi && *ompi ? "mpi" : launchDefaultBackend();
  }
  std::string initCall = "tprt_init(\"" + backend + "\")";
  check(tprt_init(backend.c_str(), &ctx), initCall.c_str());
  check(tprt_rank(ctx, &rank), "tprt_rank");
  check(tprt_size(ctx, &size), "tprt_size");
  check(tprt_group_world(ctx, &world), "tprt_group_world");
  // A torchrun-style launch (--nproc, Launch.h) on a backend that ignores
  // its variables would run WORLD_SIZE unrelated copies.
  if (long launched = launchedWorldSize(); launched > 0 && launched != size) {
    if (firstRankByEnvironment())
      std::fprintf(stderr,
                   "tp-runner: %ld ranks were launched (WORLD_SIZE) but the "
                   "%s backend has %d rank%s: use a backend that reads the "
                   "torchrun variables (nccl), or mpirun\n",
                   launched, backend.c_str(), size, size == 1 ? "" : "s");
    stop();
  }
  {
    // Host or device buffers (Device.h).
    DeviceFailure failure;
    memory = std::make_unique<DeviceMemory>(ctx, failure);
    check(failure.status, failure.call);
  }
  if (!samePlan())
    stop();
  if (int64_t(size) != model.devices()) {
    if (rank == 0)
      std::fprintf(stderr,
                   "tp-runner: the model is built for %" PRId64
                   " device%s but %d rank%s started\n",
                   model.devices(), model.devices() == 1 ? "" : "s", size,
                   size == 1 ? " was" : "s were");
    stop();
  }
  {
    // Every tp group inside one node, before any work (Device.h).
    TopologyProblem problem;
    DeviceFailure failure;
    if (!checkTopology(ctx, model, size, problem, failure))
      check(failure.status, failure.call);
    if (!problem.ranks.empty()) {
      if (rank == 0)
        std::fprintf(stderr, "tp-runner: %s\n",
                     topologyMessage(problem).c_str());
      stop();
    }
  }
  {
    std::string error;
    if (!watchdog.start(options.dir, rank, size, options.peerTimeout, error))
      std::fprintf(stderr, "%swarning: %s; ranks that stop answering are "
                           "not watched\n", prefix().c_str(), error.c_str());
  }
  coords.assign(model.axisSizes.size(), 0);
  for (size_t a = model.axisSizes.size(), rest = size_t(rank); a-- > 0;) {
    coords[a] = int64_t(rest % size_t(model.axisSizes[a]));
    rest /= size_t(model.axisSizes[a]);
  }

  // 2. The model library.
  std::string libraryPath = options.dir + "/model.so";
  void *library = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_GLOBAL);
  using EntryFn = int (*)(void *const *);
  EntryFn entry = nullptr;
  if (!library) {
    // dlerror() names the file in the cases glibc reports.
    const char *why = dlerror();
    if (why && std::strstr(why, libraryPath.c_str()))
      std::fprintf(stderr, "%scannot load the model library: %s\n",
                   prefix().c_str(), why);
    else
      std::fprintf(stderr, "%scannot load the model library %s: %s\n",
                   prefix().c_str(), libraryPath.c_str(), why ? why : "?");
  } else {
    dlerror();
    entry = reinterpret_cast<EntryFn>(dlsym(library, model.entry.c_str()));
    if (!entry) {
      const char *why = dlerror();
      std::fprintf(stderr, "%s%s has no entry point \"%s\" (model.json "
                   "\"entry\"): %s\n",
                   prefix().c_str(), libraryPath.c_str(), model.entry.c_str(),
                   why ? why : "null symbol");
    }
  }
  if (!agree(entry != nullptr))
    stop();
  {
    // The model.json the library was compiled with (tp-run embeds it): the
    // buffers model.json describes must be the ones the code was compiled
    // for, or the entry reads and writes past them.
    std::vector<std::string> errors;
    if (const char *compiled = static_cast<const char *>(
            dlsym(library, kCompiledModelSymbol))) {
      std::string jsonPath = options.dir + "/model.json";
      try {
        std::string mismatch =
            compareCompiledModel(model, parseModel(compiled));
        if (!mismatch.empty())
          errors.push_back(jsonPath + " does not match " + libraryPath +
                           ": " + mismatch +
                           " (rebuild the model, or use the model.json it "
                           "was built with)");
      } catch (const ModelError &error) {
        errors.push_back(libraryPath + ": its model.json (" +
                         kCompiledModelSymbol + ") is invalid: " +
                         error.what());
      }
    }
    if (!report(errors))
      stop();
  }

  std::FILE *outputFile = nullptr;
  bool outputOk = true;
  if (rank == 0 && !options.output.empty()) {
    outputFile = std::fopen(options.output.c_str(), "wb");
    if (!outputFile) {
      std::fprintf(stderr, "tp-runner: cannot open %s for writing: %s\n",
                   options.output.c_str(), std::strerror(errno));
      outputOk = false;
    }
  }
  // A training step: the loss file, opened by rank 0 (Train.h).
  TrainingLoop training(model);
  if (rank == 0 && !options.lossFile.empty()) {
    std::string error;
    if (!training.openLossFile(options.lossFile, error)) {
      std::fprintf(stderr, "tp-runner: %s\n", error.c_str());
      outputOk = false;
    }
  }
  if (!agree(outputOk))
    stop();

  static const int64_t kNoMesh = 1;
  const int64_t *meshShape =
      model.axisSizes.empty() ? &kNoMesh : model.axisSizes.data();
  check(tprt_model_bind(ctx, int(model.axisSizes.size()), meshShape),
        "tprt_model_bind");
  // The BLAS behind the host's products (CPU backends): loaded now, so that
  // a bad TPRT_THREADS stops every rank before any work.
  const char *blas = nullptr;
  if (!memory->onDevice())
    check(tprt_host_blas(&blas), "tprt_host_blas");

  // 3. The buffers: from the checkpoint when it names them, else from
  // their init (Sources.h). Every rank checks the whole model first.
  Sources sources;
  {
    std::vector<std::string> errors;
    sources.plan(model,
                 {options.checkpoint, options.reference, options.requireAll},
                 errors);
    if (!report(errors))
      stop();
  }
  std::vector<void *> pointers;
  std::vector<std::string> fillErrors;
  for (size_t k = 0; k < model.buffers.size(); ++k) {
    const Buffer &buffer = model.buffers[k];
    size_t bytes = size_t(buffer.localElements()) * dtypeSize(buffer.dtype);
    void *data = nullptr;
    check(tprt_alloc(ctx, bytes, &data), "tprt_alloc");
    // Device memory is filled on the host, then copied in (Device.h).
    std::vector<char> staging(memory->onDevice() ? bytes : 0);
    void *fill = memory->onDevice() ? staging.data() : data;
    if (buffer.role == Role::Output) {
      if (bytes)
        std::memset(fill, 0, bytes);
    } else {
      std::vector<int64_t> offsets;
      for (size_t d = 0; d < buffer.localShape.size(); ++d)
        offsets.push_back(groupIndex(buffer.dimAxes[d]) *
                          buffer.localShape[d]);
      sources.fill(k, offsets, fill, fillErrors);
      perturb(buffer, fill, bytes);
    }
    if (memory->onDevice())
      check(memory->upload(data, fill, bytes), "tprt_memcpy");
    pointers.push_back(data);
  }
  // A weight that is not finite in some rank's block stops every rank.
  if (!report(fillErrors))
    stop();

  // 4. The steps.
  int status = 0;
  auto call = [&](const char *phase, long step) {
    // Training: the previous step's updated outputs are this step's
    // arguments.
    if (training.active() && training.steps() > 0)
      training.advance(pointers);
    int status = entry(pointers.data());
    if (status != 0) {
      std::fprintf(stderr, "%s%s returned %d (%s call %ld)\n",
                   prefix().c_str(), model.entry.c_str(), status, phase,
                   step + 1);
      std::fflush(stderr);
      std::exit(1);
    }
    if (!training.active())
      return;
    // The loss, assembled off the books of the timed steps.
    tprt_stats lossBefore, lossAfter;
    check(tprt_stats_get(ctx, &lossBefore), "tprt_stats_get");
    auto start = std::chrono::steady_clock::now();
    size_t at = training.lossBuffer();
    std::vector<char> loss = assemble(model.buffers[at], pointers[at]);
    double spent = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    check(tprt_stats_get(ctx, &lossAfter), "tprt_stats_get");
    training.record(rank, loss, std::strcmp(phase, "step") == 0, lossBefore,
                    lossAfter, spent);
  };
  injectFault();
  for (long i = 0; i < options.warmup; ++i)
    call("warmup", i);
  tprt_stats before, after;
  // On a GPU the steps are queued on the rank's stream: drain it before the
  // timer starts and before it stops, so the times are the GPU's.
  check(memory->synchronize(), "tprt_synchronize");
  check(tprt_barrier(ctx, world), "tprt_barrier");
  check(tprt_stats_get(ctx, &before), "tprt_stats_get");
  check(tprt_timer_start(ctx), "tprt_timer_start");
  for (long i = 0; i < options.steps; ++i)
    call("step", i);
  check(memory->synchronize(), "tprt_synchronize");
  check(tprt_barrier(ctx, world), "tprt_barrier");
  double seconds = 0;
  check(tprt_timer_elapsed(ctx, &seconds), "tprt_timer_elapsed");
  check(tprt_stats_get(ctx, &after), "tprt_stats_get");
  training.discount(after, seconds);
  // Each rank's peak resident memory (Linux: KiB), and the largest.
  int64_t peakKiB = 0, largestKiB = 0, one = 1;
  {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) == 0)
      peakKiB = int64_t(usage.ru_maxrss);
  }
  hostAllReduce(world, TPRT_I64, TPRT_MAX, &peakKiB, &largestKiB, 1, &one,
                sizeof(peakKiB));
  {
    std::string error;
    if (!training.finish(error)) {
      std::fprintf(stderr, "tp-runner: %s\n", error.c_str());
      status = 1;
    }
  }

  // 5. The outputs' global values.
  std::vector<std::vector<char>> outputs;
  for (size_t k = 0; k < model.buffers.size(); ++k)
    if (model.buffers[k].role == Role::Output)
      outputs.push_back(assemble(model.buffers[k], pointers[k]));

  if (rank == 0) {
    // 6. The report.
    size_t inputs = 0, params = 0;
    for (const Buffer &buffer : model.buffers) {
      inputs += buffer.role == Role::Input;
      params += buffer.role == Role::Param;
    }
    const char *backendName = backend.c_str();
    check(tprt_backend_name(ctx, &backendName), "tprt_backend_name");
    double perStep = seconds / double(options.steps);
    std::printf("model: %s (entry %s): %zu inputs, %zu params, %zu outputs\n",
                options.dir.c_str(), model.entry.c_str(), inputs, params,
                outputs.size());
    std::printf("devices: %d (mesh %s), backend %s\n", size,
                model.meshText().c_str(), backendName);
    std::printf("steps: %ld (after %ld warmup)%s\n", options.steps,
                options.warmup,
                training.active() ? ", training: updated outputs feed the "
                                    "next step"
                                  : "");
    if (blas)
      std::printf("blas: %s\n", blas);
    sources.printReport();
    std::printf("time per step: %.6g s\n", perStep);
    if (size == 1)
      std::printf("memory: peak resident %.1f MiB\n", peakKiB / 1024.0);
    else
      std::printf("memory: peak resident %.1f MiB per rank (the largest of "
                  "%d ranks; rank 0: %.1f MiB)\n",
                  largestKiB / 1024.0, size, peakKiB / 1024.0);
    if (model.tokens > 0 && perStep > 0)
      std::printf("throughput: %" PRId64 " tokens per step, %.6g tokens/s\n",
                  model.tokens, double(model.tokens) / perStep);
    std::printf("collectives per step:\n");
    uint64_t totalCalls = 0;
    int64_t totalPlan = 0;
    double commSeconds = 0;
    for (int k = 0; k < TPRT_NUM_COLLECTIVES; ++k) {
      uint64_t calls = after.calls[k] - before.calls[k];
      uint64_t bytes = after.bytes[k] - before.bytes[k];
      double kindSeconds = after.seconds[k] - before.seconds[k];
      totalCalls += calls;
      totalPlan += model.collectives[k];
      commSeconds += kindSeconds;
      std::printf("  %s: %s (plan %" PRId64 "), %s bytes, %.6g s\n",
                  kCollectiveNames[k],
                  countPerStep(calls, options.steps).c_str(),
                  model.collectives[k],
                  countPerStep(bytes, options.steps).c_str(),
                  kindSeconds / double(options.steps));
    }
    std::printf("collectives: %s per step (plan: %" PRId64 ")\n",
                countPerStep(totalCalls, options.steps).c_str(), totalPlan);
    bool matches = true;
    for (int k = 0; k < TPRT_NUM_COLLECTIVES; ++k)
      matches &= after.calls[k] - before.calls[k] ==
                 uint64_t(model.collectives[k]) * uint64_t(options.steps);
    double commPerStep = commSeconds / double(options.steps);
    std::printf("communication: %.6g s per step (%.1f%% of the step time)\n",
                commPerStep, perStep > 0 ? 100.0 * commPerStep / perStep : 0.0);
    std::fflush(stdout);
    if (!matches)
      std::fprintf(stderr,
                   "tp-runner: warning: the runtime counted other collectives "
                   "than model.json plans (\"collectives\")\n");

    size_t number = 0;
    for (const Buffer &buffer : model.buffers) {
      if (buffer.role != Role::Output)
        continue;
      if (options.print)
        printOutput(number, buffer, outputs[number]);
      if (outputFile && !writeOutput(outputFile, buffer, outputs[number])) {
        std::fprintf(stderr, "tp-runner: cannot write %s: %s\n",
                     options.output.c_str(), std::strerror(errno));
        status = 1;
        break;
      }
      ++number;
    }
    // The reference's verdict, after the outputs are written.
    number = 0;
    for (size_t k = 0; k < model.buffers.size(); ++k) {
      if (model.buffers[k].role != Role::Output)
        continue;
      const CheckpointTensor *expected = sources.referenceFor(k);
      double limit = options.referenceTolerance >= 0
                         ? options.referenceTolerance
                         : defaultReferenceTolerance(model.buffers[k].dtype);
      std::string error;
      if (expected &&
          !compareWithReference(model.buffers[k], outputs[number],
                                sources.referenceFile(), *expected, limit,
                                error)) {
        std::fflush(stdout);
        std::fprintf(stderr, "tp-runner: %s\n", error.c_str());
        status = 1;
      }
      ++number;
    }
    std::fflush(stdout);
    if (outputFile && std::fclose(outputFile) != 0 && status == 0) {
      std::fprintf(stderr, "tp-runner: cannot write %s: %s\n",
                   options.output.c_str(), std::strerror(errno));
      status = 1;
    }
  }

  for (auto &entry : groups)
    check(tprt_group_destroy(entry.second), "tprt_group_destroy");
  groups.clear();
  for (void *pointer : pointers)
    check(tprt_free(ctx, pointer), "tprt_free");
  watchdog.finish();
  // The library stays loaded: its code may still be referenced (atexit
  // handlers, the runtime's cached function pointers).
  check(tprt_finalize(ctx), "tprt_finalize");
  ctx = nullptr;
  return status;
}

} // namespace

int main(int argc, char **argv) {
#if defined(__linux__)
  // A rank started by Open MPI's mpirun is its child: if mpirun is killed
  // (SIGKILL leaves it no time to stop the ranks), end this rank too rather
  // than leave it waiting in a collective.
  const char *ompiSize = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (ompiSize && *ompiSize)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  Options options = parseOptions(argc, argv);
  // The BLAS reads its threads when libtprt first loads it.
  if (options.threads > 0)
    setenv("TPRT_THREADS", std::to_string(options.threads).c_str(), 1);
  // A rank of --nproc: the launch fault of the tests (Launch.h).
  if (int code = applyLaunchFault(); code >= 0)
    return code;
  Fault fault;
  std::string faultError;
  if (!parseFault(fault, faultError)) {
    if (firstRankByEnvironment())
      std::fprintf(stderr, "tp-runner: error: %s\n", faultError.c_str());
    return 2;
  }
  Model model;
  std::string jsonPath = options.dir + "/model.json";
  try {
    model = loadModel(jsonPath);
  } catch (const ModelError &error) {
    if (firstRankByEnvironment())
      std::fprintf(stderr, "tp-runner: %s: %s\n", jsonPath.c_str(),
                   error.what());
    return 2;
  }
  if (!options.lossFile.empty() && !TrainingLoop(model).active()) {
    if (firstRankByEnvironment())
      std::fprintf(stderr, "tp-runner: error: --loss-file needs a training "
                           "step (outputs with \"updates\"; %s has none)\n",
                   jsonPath.c_str());
    return 2;
  }
  // --nproc: this process only starts and watches the ranks (Launch.h).
  if (options.nproc > 0)
    return launchLocalRanks(options.rankArgs, options.nproc, options.timeout);
  Runner runner(options, model, planHash(options.dir), fault);
  return runner.run();
}
