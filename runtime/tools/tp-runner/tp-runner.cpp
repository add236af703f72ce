//===- tp-runner.cpp - Runs a compiled model on libtprt -------------------===//
//
// tp-runner MODEL_DIR [--backend mpi|single] [--output FILE] [--warmup N]
//                     [--steps N] [--print]
//
// Runs a model compiled to the ABI of docs/model-abi.md (MODEL_DIR/model.json
// and MODEL_DIR/model.so) on one rank of a libtprt context:
//
//   1. creates the context (default backend: mpi under Open MPI's mpirun,
//      single otherwise) and checks that there are as many ranks as the
//      mesh has devices;
//   2. loads model.so, binds the runtime to the mesh (tprt_model_bind);
//   3. allocates every buffer with its local shape and fills inputs and
//      params with this device's block of the global value (`init`), zero
//      padding past the global shape; outputs start as zeros;
//   4. calls the entry --warmup times, then --steps times under the
//      context's timer and counters;
//   5. assembles each output's global value (all_reduce of partial terms,
//      then all_gather of the blocks of every split dimension, padding
//      dropped) and, on rank 0, writes them to --output (format in
//      docs/model-abi.md, "tp-runner output") and prints them (--print);
//   6. prints a report on rank 0: time per step, collectives per step
//      against the plan in model.json, time in communication.
//
// Exit status: 0; 1 when the runtime, the model library or a file fails;
// 2 for a bad command line or model.json.
//
// Links only libtprt, libdl and the C++ standard library: no LLVM.
//
//===----------------------------------------------------------------------===//

#include "Init.h"
#include "Model.h"

#include "tprt/tprt.h"
#include "tprt/tprt_model.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tprun;

namespace {

const char *const kUsage =
    "usage: tp-runner MODEL_DIR [--backend mpi|single] [--output FILE]\n"
    "                 [--warmup N] [--steps N] [--print]\n"
    "\n"
    "Runs the compiled model in MODEL_DIR (model.json, model.so; see\n"
    "docs/model-abi.md) on libtprt, one process per mesh device.\n"
    "\n"
    "  --backend NAME  libtprt backend (default: mpi under mpirun, else\n"
    "                  single; TPRT_BACKEND overrides the default)\n"
    "  --output FILE   rank 0 writes the outputs' global values to FILE\n"
    "  --warmup N      untimed calls of the entry first (default 0)\n"
    "  --steps N       timed calls of the entry (default 1)\n"
    "  --print         rank 0 prints each output's shape, first values, sum\n";

struct Options {
  std::string dir;
  std::string backend;
  std::string output;
  long warmup = 0;
  long steps = 1;
  bool print = false;
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
    } else if (arg == "--print") {
      if (hasValue)
        usageError("--print takes no value");
      options.print = true;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      usageError("unknown option " + arg);
    } else if (options.dir.empty()) {
      options.dir = arg;
    } else {
      usageError("more than one model directory: " + options.dir + ", " + arg);
    }
  }
  if (options.dir.empty())
    usageError("no model directory");
  return options;
}

/// Before the context exists: is this process the first rank (or alone)?
bool firstRankByEnvironment() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char *value = std::getenv(name);
    if (value && *value)
      return std::strcmp(value, "0") == 0;
  }
  return true;
}

const char *const kCollectiveNames[TPRT_NUM_COLLECTIVES] = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all"};

tprt_dtype commDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return TPRT_F32;
  case DType::F16:
    return TPRT_F16;
  case DType::BF16:
    return TPRT_BF16;
  case DType::F64:
    return TPRT_F64;
  case DType::I64:
    return TPRT_I64;
  case DType::I32:
  case DType::I8: // widened to i32 for the collectives
  case DType::I1:
    return TPRT_I32;
  }
  return TPRT_I32;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
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
  Runner(const Options &options, const Model &model)
      : options(options), model(model) {}

  int run();

private:
  const Options &options;
  const Model &model;
  tprt_context *ctx = nullptr;
  tprt_group *world = nullptr;
  int rank = 0;
  int size = 1;
  std::vector<int64_t> coords;
  std::map<std::vector<int>, tprt_group *> groups;

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

  /// True on every rank iff `ok` on every rank (a max all_reduce of the
  /// failure flag over the world, made before any counted step).
  bool agree(bool ok) {
    int32_t failed = ok ? 0 : 1, any = 0;
    int64_t one = 1;
    check(tprt_all_reduce(ctx, world, TPRT_I32, TPRT_MAX, &failed, &any, 1,
                          &one, nullptr),
          "tprt_all_reduce");
    return any == 0;
  }

  /// Ends every rank the same way after a failure they all agreed on.
  [[noreturn]] void stop() {
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
    check(tprt_all_reduce(ctx, groupFor(buffer.partialAxes), dtype,
                          buffer.partialKind, current.data(), current.data(),
                          int(shape.size()), shapeArray, nullptr),
          "tprt_all_reduce");
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
    check(tprt_all_gather(ctx, group, dtype, current.data(), next.data(),
                          int(shape.size()), shapeArray, int(d), nullptr),
          "tprt_all_gather");
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
      backend = ompi && *ompi ? "mpi" : "single";
  }
  std::string initCall = "tprt_init(\"" + backend + "\")";
  check(tprt_init(backend.c_str(), &ctx), initCall.c_str());
  check(tprt_rank(ctx, &rank), "tprt_rank");
  check(tprt_size(ctx, &size), "tprt_size");
  check(tprt_group_world(ctx, &world), "tprt_group_world");
  if (int64_t(size) != model.devices()) {
    if (rank == 0)
      std::fprintf(stderr,
                   "tp-runner: the model is built for %" PRId64
                   " device%s but %d rank%s started\n",
                   model.devices(), model.devices() == 1 ? "" : "s", size,
                   size == 1 ? " was" : "s were");
    stop();
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
  if (!agree(outputOk))
    stop();

  static const int64_t kNoMesh = 1;
  const int64_t *meshShape =
      model.axisSizes.empty() ? &kNoMesh : model.axisSizes.data();
  check(tprt_model_bind(ctx, int(model.axisSizes.size()), meshShape),
        "tprt_model_bind");

  // 3. The buffers.
  std::vector<void *> pointers;
  for (const Buffer &buffer : model.buffers) {
    size_t bytes = size_t(buffer.localElements()) * dtypeSize(buffer.dtype);
    void *data = nullptr;
    check(tprt_alloc(ctx, bytes, &data), "tprt_alloc");
    if (buffer.role == Role::Output) {
      if (bytes)
        std::memset(data, 0, bytes);
    } else {
      std::vector<int64_t> offsets;
      for (size_t d = 0; d < buffer.localShape.size(); ++d)
        offsets.push_back(groupIndex(buffer.dimAxes[d]) *
                          buffer.localShape[d]);
      fillLocal(buffer, offsets, data);
    }
    pointers.push_back(data);
  }

  // 4. The steps.
  auto call = [&](const char *phase, long step) {
    int status = entry(pointers.data());
    if (status != 0) {
      std::fprintf(stderr, "%s%s returned %d (%s call %ld)\n",
                   prefix().c_str(), model.entry.c_str(), status, phase,
                   step + 1);
      std::fflush(stderr);
      std::exit(1);
    }
  };
  for (long i = 0; i < options.warmup; ++i)
    call("warmup", i);
  tprt_stats before, after;
  check(tprt_barrier(ctx, world), "tprt_barrier");
  check(tprt_stats_get(ctx, &before), "tprt_stats_get");
  check(tprt_timer_start(ctx), "tprt_timer_start");
  for (long i = 0; i < options.steps; ++i)
    call("step", i);
  check(tprt_barrier(ctx, world), "tprt_barrier");
  double seconds = 0;
  check(tprt_timer_elapsed(ctx, &seconds), "tprt_timer_elapsed");
  check(tprt_stats_get(ctx, &after), "tprt_stats_get");

  // 5. The outputs' global values.
  std::vector<std::vector<char>> outputs;
  for (size_t k = 0; k < model.buffers.size(); ++k)
    if (model.buffers[k].role == Role::Output)
      outputs.push_back(assemble(model.buffers[k], pointers[k]));

  int status = 0;
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
    std::printf("steps: %ld (after %ld warmup)\n", options.steps,
                options.warmup);
    std::printf("time per step: %.6g s\n", perStep);
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
  // The library stays loaded: its code may still be referenced (atexit
  // handlers, the runtime's cached function pointers).
  check(tprt_finalize(ctx), "tprt_finalize");
  ctx = nullptr;
  return status;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
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
  Runner runner(options, model);
  return runner.run();
}
