//===- tp-run.cpp - shard, compile and run a model on N ranks ---*- C++ -*-===//
//
//   tp-run model.mlir | --preset P [tp-gen options]
//          --tp N [--dp D] [--backend cpu|cuda|cuda-shared] [--check]
//          [--steps K] [--compile-only] [--chip sm_NN]
//          [--timeout S] [--checkpoint PATH]
//          [--reference PATH [--reference-tol R]]
//          [--work-dir DIR] [--mlir-timing] [shard options]
//
// 1. Gets the model (a file, or tp-gen with the given options). A model
//    that declares its mesh (tp.mesh, shard.grid) runs on it; --tp, when
//    given, must agree.
// 2. Compiles it for N devices: --tp-shard, then records the function
//    boundary (model.json, docs/model-abi.md; integer inputs that index
//    tensors get their bound, IndexBounds.h), then --tp-lower-cpu, LLVM
//    IR, a small C glue (the entry point, and the model.json text that
//    tp-runner checks model.json against) and clang-22 make model.so.
//    --mlir-timing prints the time of each stage (and of each pass of the
//    two pipelines) to stderr after the compile.
// 3. Runs tp-runner on N ranks with mpirun (one process per rank;
//    TP_RUN_MPIRUN overrides the launcher; its files go into a folder
//    tp-run removes, TP_RUN_SHM_DIR or /dev/shm). A run still going after
//    --timeout seconds is stopped: mpirun gets SIGTERM and stops every rank.
// 4. With --check, compiles and runs the unsharded program (tp=1) the same
//    way and compares every output; for a training step (results with
//    tp.updates; --train generates one, Train.h) --steps K are K training
//    steps and the two loss curves are compared step by step instead.
//    --dp D makes the N devices a [D, N/D] mesh with the inputs split over
//    "dp" by rows; what that does to a training step (gradients summed
//    over "dp", optimizer state sharded over it) is the plan's decision.
// 5. Prints the plan summary, the runner's report and the comparison.
//
// Buffers are named (model.json "name", the tensor a --checkpoint or
// --reference file holds) by the argument's or result's tp.name, else the
// argument's NameLoc, else argN / resultN; an argument with tp.source (a
// piece of a fused weight) gets "source", the block of that tensor it is.
// --reference passes the file to every tp-runner run, which compares each
// output with it and reads the inputs the checkpoint lacks from it
// (docs/model-abi.md).
//
// --backend cuda|cuda-shared lowers with --tp-lower-gpu instead, links
// model.so with libtprt_cuda, and starts the ranks on a GPU backend (Gpu.h,
// docs/gpu.md); --check's reference is then the CPU tp=1 program.
//
// The work folder is --work-dir, or a temporary folder removed at exit
// (unless --keep-work-dir). Every child process dies with tp-run, errors
// name the file or option (Process.h).
//
// The compile step links MLIR; running needs only tp-runner and libtprt.
//
//===----------------------------------------------------------------------===//

#include "Cpu.h"
#include "Gpu.h"
#include "IndexBounds.h"
#include "Preflight.h"
#include "Process.h"
#include "Shard.h"
#include "Train.h"

#include "tp/Conversion/Passes.h"
#include "tp/Conversion/RuntimeSymbols.h"
#include "tp/Dialect/TP/IR/InputChecks.h"
#include "tp/Dialect/TP/IR/TPOps.h"
#include "tp/Dialect/TP/Transforms/Passes.h"
#include "tp/InitTP.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

extern char **environ;

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("tp-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("[model.mlir]"),
                                      cl::init(""), cl::cat(category));
static cl::opt<std::string>
    tpOption("tp",
             cl::desc("Number of devices (ranks), or 'auto': the smallest "
                      "degree that fits --device (docs/preflight.md)"),
             cl::init("2"), cl::cat(category));
/// --tp as a number (0 with --tp auto).
static int devices = 2;
static cl::opt<int> dp(
    "dp",
    cl::desc("Data-parallel degree: the --tp devices form a [dp, tp/dp] "
             "mesh (--tp 4 --dp 2: 2 x 2) and every input that is not a "
             "parameter is split over \"dp\" on its first dimension; a "
             "training step's weight gradients are then summed over \"dp\" "
             "by the plan (docs/training.md). Default 1: a 1-D tp mesh"),
    cl::init(1), cl::cat(category));
static cl::opt<std::string> backend(
    "backend",
    cl::desc("Execution backend: cpu (ranks are processes), cuda (one GPU "
             "per rank, NCCL), cuda-shared (ranks share one GPU), cuda-emu "
             "(the cuda build run on CPU ranks by the GPU emulator; "
             "docs/gpu.md)"),
    cl::init("cpu"), cl::cat(category));
/// --backend, parsed (Gpu.h), and the folder of the GPU runtime libraries.
static tprun::Target target = tprun::Target::Cpu;
static std::string gpuLibraryDir;
/// --cpu, resolved (Cpu.h): what CPU model.so files are compiled for.
static tprun::CpuTarget cpuTarget;
static cl::opt<bool> check("check",
                           cl::desc("Also run the unsharded program (tp=1) "
                                    "and compare every output"),
                           cl::cat(category));
static cl::opt<long> tokensOption(
    "tokens",
    cl::desc("Tokens one step processes, for the tokens/s of the report "
             "(default: batch x seq of a tp-gen model)"),
    cl::init(0), cl::cat(category));
/// The tokens per step written to model.json ("tokens"; 0: unknown).
static int64_t tokensPerStep = 0;

static cl::opt<int> steps("steps", cl::desc("Steps to run"), cl::init(1),
                          cl::cat(category));
static cl::opt<int> timeoutSeconds(
    "timeout",
    cl::desc("Seconds before a run (or a compile step) is stopped; 0: no "
             "limit"),
    cl::init(300), cl::cat(category));
static cl::opt<int> peerTimeout(
    "peer-timeout",
    cl::desc("Seconds after which a rank whose peer on its host stopped "
             "answering (SIGSTOP, a debugger) names it and ends the run "
             "(tp-runner's heartbeat; 0: not watched)"),
    cl::init(30), cl::cat(category));
static cl::opt<std::string> checkpointFile(
    "checkpoint",
    cl::desc("Global tensors (a .safetensors file, a "
             "model.safetensors.index.json and its shards, or a folder "
             "holding either): the inputs and params it names are read from "
             "it (every run, --check's too)"),
    cl::init(""), cl::cat(category));
static cl::opt<std::string> referenceFile(
    "reference",
    cl::desc("Expected outputs (safetensors, as --checkpoint): every output "
             "is compared with the tensor of its name; inputs the checkpoint "
             "lacks are read from it"),
    cl::init(""), cl::cat(category));
static cl::opt<double> referenceTolerance(
    "reference-tol",
    cl::desc("--reference fails above this relative error (default: 1e-5 "
             "for f32 outputs, 2e-2 for 16-bit ones, as --check)"),
    cl::init(-1), cl::cat(category));
static cl::opt<std::string> workDir(
    "work-dir", cl::desc("Where compiled models and outputs go (default: a "
                         "temporary folder)"),
    cl::init(""), cl::cat(category));
static cl::opt<bool> keepWorkDir(
    "keep-work-dir",
    cl::desc("Keep the temporary work folder (default: removed at exit; a "
             "--work-dir is always kept)"),
    cl::cat(category));
/// The temporary work folder removed at exit ("" if none).
static std::string temporaryWork;
static cl::opt<std::string> shardOptions(
    "shard-options",
    cl::desc("Extra --tp-shard options, e.g. \"sequence-parallel=off\""),
    cl::init(""), cl::cat(category));
static cl::opt<double> tolerance(
    "tolerance",
    cl::desc("--check fails above this relative error (default: 1e-5 for "
             "f32, 2e-2 for 16-bit outputs)"),
    cl::init(-1), cl::cat(category));
static cl::opt<int64_t> inputHigh(
    "input-high",
    cl::desc("Integer inputs without tp.init that no --checkpoint or "
             "--reference provides are drawn from [0, this) (default: the "
             "vocabulary of a tp-gen model)"),
    cl::init(0), cl::cat(category));
// tp-gen passthrough.
static cl::opt<std::string> preset("preset", cl::desc("tp-gen preset"),
                                   cl::init(""), cl::cat(category));
static cl::list<std::string>
    genOptions("gen", cl::desc("A tp-gen option, e.g. --gen=--layers=2"),
               cl::cat(category));

using tprun::die;
using tprun::makeFolder;
using tprun::runProgram;
using tprun::writeFile;

namespace {

std::string dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isF64())
    return "f64";
  if (type.isSignlessInteger(64))
    return "i64";
  if (type.isSignlessInteger(32))
    return "i32";
  if (type.isSignlessInteger(8))
    return "i8";
  if (type.isSignlessInteger(1))
    return "i1";
  return "";
}

llvm::json::Array shapeJson(ArrayRef<int64_t> shape) {
  llvm::json::Array a;
  for (int64_t s : shape)
    a.push_back(s);
  return a;
}

llvm::json::Object layoutJson(tp::LayoutAttr layout, int64_t rank) {
  llvm::json::Array dims;
  for (int64_t d = 0; d < rank; ++d) {
    llvm::json::Array axes;
    if (layout)
      for (StringAttr a : layout.getDimAxes(d))
        axes.push_back(a.str());
    dims.push_back(std::move(axes));
  }
  llvm::json::Value partial = nullptr;
  if (layout && layout.isPartial()) {
    llvm::json::Array axes;
    for (StringAttr a : layout.getPartialAxesList())
      axes.push_back(a.str());
    partial = llvm::json::Object{
        {"kind", tp::stringifyReductionKind(layout.getPartialKind()).str()},
        {"axes", std::move(axes)}};
  }
  return llvm::json::Object{{"dims", std::move(dims)},
                            {"partial", std::move(partial)}};
}

llvm::json::Value initJson(DictionaryAttr init) {
  if (!init)
    return nullptr;
  llvm::json::Object o;
  for (NamedAttribute a : init) {
    if (auto s = dyn_cast<StringAttr>(a.getValue()))
      o[a.getName().str()] = s.str();
    else if (auto i = dyn_cast<IntegerAttr>(a.getValue()))
      o[a.getName().str()] = i.getInt();
    else if (auto f = dyn_cast<FloatAttr>(a.getValue()))
      o[a.getName().str()] = f.getValueAsDouble();
  }
  return std::move(o);
}

/// The function the model runs: the only public function with a body.
func::FuncOp getEntry(ModuleOp module) {
  func::FuncOp entry;
  for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || fn.isPrivate())
      continue;
    if (entry)
      die("the module has several public functions ('" + entry.getSymName() +
          "', '" + fn.getSymName() + "'); tp-run runs exactly one");
    entry = fn;
  }
  if (!entry)
    die("the module has no public function with a body");
  return entry;
}

/// model.json for a partitioned module, and the C glue of the entry.
std::pair<llvm::json::Object, std::string>
describe(ModuleOp module, int64_t high, StringRef gluePrelude) {
  func::FuncOp fn = getEntry(module);
  llvm::json::Array buffers;
  std::string glueArgs;
  int bufferIndex = 0;
  auto addBuffer = [&](StringRef role, unsigned index, std::string name,
                       Type type, DictionaryAttr attrs) {
    if (auto named = attrs ? attrs.getAs<StringAttr>(
                                 tp::TPDialect::getNameAttrName())
                           : StringAttr())
      name = named.str();
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      die(llvm::formatv("{0} #{1} \"{2}\" of '{3}' has type {4}, which is "
                        "not a statically shaped tensor",
                        role, index, name, fn.getSymName(), type));
    std::string dtype = dtypeName(tensor.getElementType());
    if (dtype.empty())
      die(llvm::formatv("{0} #{1} \"{2}\" has element type {3}, which "
                        "tp-run cannot feed (f32, f16, bf16, f64, i64, i32, "
                        "i8, i1)",
                        role, index, name, tensor.getElementType()));
    auto layout = attrs ? attrs.getAs<tp::LayoutAttr>("tp.layout")
                        : tp::LayoutAttr();
    auto global =
        attrs ? attrs.getAs<DenseI64ArrayAttr>("tp.global_shape") : nullptr;
    SmallVector<int64_t> globalShape =
        global ? SmallVector<int64_t>(global.asArrayRef())
               : SmallVector<int64_t>(tensor.getShape());
    DictionaryAttr init =
        attrs ? attrs.getAs<DictionaryAttr>("tp.init") : DictionaryAttr();
    llvm::json::Value initValue = initJson(init);
    // The values index a tensor dimension of this size (IndexBounds.h).
    auto bound = attrs ? attrs.getAs<IntegerAttr>(tprun::kIndexBoundAttr)
                       : IntegerAttr();
    if (!init && role == "input") {
      int64_t range = high > 0 ? high : bound ? bound.getInt() : 0;
      if (isa<FloatType>(tensor.getElementType()))
        initValue = llvm::json::Object{
            {"kind", "normal"}, {"seed", int64_t(1000 + index)}, {"std", 1.0}};
      else if (range > 0)
        initValue = llvm::json::Object{{"kind", "integers"},
                                       {"seed", int64_t(1000 + index)},
                                       {"high", range}};
      else if (checkpointFile.empty() && referenceFile.empty() &&
               !tprun::compileOnly())
        die(llvm::formatv("input #{0} \"{1}\" holds integers and has no "
                          "tp.init; pass --input-high=N (their range), or a "
                          "--checkpoint or --reference holding \"{1}\"",
                          index, name));
      // else null: tp-runner reads it from the checkpoint or the reference
      // (compiling needs no values).
    }
    llvm::json::Object buffer{
        {"role", role.str()},
        {"index", int64_t(index)},
        {"name", name},
        {"dtype", dtype},
        {"global_shape", shapeJson(globalShape)},
        {"local_shape", shapeJson(tensor.getShape())},
        {"layout", layoutJson(layout, tensor.getRank())},
        {"init", std::move(initValue)}};
    // A piece of a fused weight (tp.source, kept by --tp-shard): the block
    // at `offsets` of the stored tensor of `shape` that --checkpoint holds
    // under the buffer's name.
    if (auto source = attrs ? attrs.getAs<DictionaryAttr>(
                                  tp::TPDialect::getSourceAttrName())
                            : DictionaryAttr()) {
      auto offsets = source.getAs<DenseI64ArrayAttr>("offsets");
      auto shape = source.getAs<DenseI64ArrayAttr>("shape");
      if (offsets && shape)
        buffer["source"] =
            llvm::json::Object{{"offsets", shapeJson(offsets.asArrayRef())},
                               {"shape", shapeJson(shape.asArrayRef())}};
    }
    if (bound && role != "output")
      buffer["index_bound"] = bound.getInt();
    if (role == "output")
      tprun::addUpdatesField(buffer, attrs); // training steps (Train.h)
    buffers.push_back(std::move(buffer));
    // The memref descriptor of the lowered entry: allocated and aligned
    // pointers, offset, sizes, strides.
    std::string b = llvm::formatv("b[{0}]", bufferIndex++).str();
    glueArgs += (glueArgs.empty() ? "" : ", ") + b + ", " + b + ", 0";
    int64_t stride = 1;
    SmallVector<int64_t> strides(tensor.getRank());
    for (int64_t d = tensor.getRank() - 1; d >= 0; --d) {
      strides[d] = stride;
      stride *= tensor.getDimSize(d);
    }
    for (int64_t s : tensor.getShape())
      glueArgs += ", " + std::to_string(s);
    for (int64_t s : strides)
      glueArgs += ", " + std::to_string(s);
  };
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    DictionaryAttr attrs = fn.getArgAttrDict(i);
    bool param = attrs && attrs.get("tp.param");
    std::string name = ("arg" + Twine(i)).str();
    if (auto loc = dyn_cast<NameLoc>(fn.getArgument(i).getLoc()))
      name = loc.getName().str();
    addBuffer(param ? "param" : "input", i, name, fn.getArgumentTypes()[i],
              attrs);
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    addBuffer("output", i, ("result" + Twine(i)).str(),
              fn.getResultTypes()[i], fn.getResultAttrDict(i));

  std::map<std::string, int64_t> counts = {{"all_reduce", 0},
                                           {"all_gather", 0},
                                           {"reduce_scatter", 0},
                                           {"all_to_all", 0}};
  fn.walk([&](Operation *op) {
    if (isa<tp::AllReduceOp>(op))
      ++counts["all_reduce"];
    else if (isa<tp::AllGatherOp>(op))
      ++counts["all_gather"];
    else if (isa<tp::ReduceScatterOp>(op))
      ++counts["reduce_scatter"];
    else if (isa<tp::AllToAllOp>(op))
      ++counts["all_to_all"];
  });
  llvm::json::Object collectives;
  for (auto &[k, v] : counts)
    collectives[k] = v;

  llvm::json::Array axes;
  for (tp::MeshOp mesh : module.getOps<tp::MeshOp>())
    for (auto [name, size] : llvm::zip(mesh.getAxisNames(), mesh.getShape()))
      axes.push_back(llvm::json::Object{
          {"name", cast<StringAttr>(name).str()}, {"size", size}});
  llvm::json::Object model{
      {"format", "tp-model/1"},
      {"entry", tp::runtime::kModelEntry.str()},
      {"mesh", llvm::json::Object{{"axes", std::move(axes)}}},
      {"buffers", std::move(buffers)},
      {"collectives", std::move(collectives)}};
  if (tokensPerStep > 0)
    model["tokens"] = tokensPerStep;

  // The glue: every memref argument expanded as the default calling
  // convention passes it. Prototype with the same argument kinds.
  std::string proto;
  for (StringRef part : llvm::split(StringRef(glueArgs), ", ")) {
    bool pointer = part.starts_with("b[");
    proto += (proto.empty() ? "" : ", ") +
             std::string(pointer ? "void *" : "int64_t");
  }
  std::string glue =
      "/* Generated by tp-run: the entry point of docs/model-abi.md. */\n"
      "#include <stdint.h>\n" +
      gluePrelude.str() + "extern void " + fn.getSymName().str() + "(" +
      proto +
      ");\n"
      "TP_MODEL_RUN_ATTRIBUTES int " +
      tp::runtime::kModelEntry.str() +
      "(void *const *b) {\n  TP_CPU_CHECK();\n  " +
      fn.getSymName().str() + "(" + glueArgs +
      ");\n  return 0;\n}\n";
  return {std::move(model), glue};
}

/// `text` as a C string literal: printable ASCII as it is, quotes,
/// backslashes and every other byte escaped (octal, which cannot swallow
/// the characters after it as a hexadecimal escape would).
std::string cStringLiteral(StringRef text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\')
      out += std::string("\\") + char(c);
    else if (c == '\n')
      out += "\\n\"\n  \""; // one source line per line of text
    else if (c >= 0x20 && c < 0x7f && c != '?') // '?': no trigraphs
      out += char(c);
    else {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\%03o", unsigned(c));
      out += escape;
    }
  }
  return out + "\"";
}

/// The folder temporary work folders go to ($TMPDIR, else /tmp).
std::string temporaryRoot() {
  SmallString<128> root;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, root);
  return std::string(root);
}

/// Two tp-run on one --work-dir would overwrite each other's model.so and
/// outputs (one then reported "does not match the unsharded program"): the
/// folder is locked (flock on its .tp-run.lock, held until tp-run exits),
/// and a second tp-run names the first and stops.
static void lockWorkFolder(StringRef work) {
  std::string path = (work + "/.tp-run.lock").str();
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    die("cannot create '" + path + "': " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {0};
    ssize_t n = ::pread(fd, holder, sizeof(holder) - 1, 0);
    std::string pid = n > 0 ? StringRef(holder, size_t(n)).trim().str() : "";
    die("the work folder '" + work + "' is in use by another tp-run" +
        (pid.empty() ? std::string() : " (pid " + pid + ")") +
        ": give each run its own --work-dir");
  }
  std::string self = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, self.data(), self.size(), 0) != ssize_t(self.size()))
    die("cannot write '" + path + "': " + std::strerror(errno));
  // fd stays open (not inherited: O_CLOEXEC) and the lock with it.
}

/// mpirun's own files: its session folder (orte_tmpdir_base, else in
/// $TMPDIR) and the shared memory of its vader transport (else
/// /dev/shm/vader_segment.*), both in one folder of /dev/shm (tmpfs, as
/// vader's default; $TP_RUN_SHM_DIR names another) that tp-run removes when
/// it exits, however mpirun ended: a killed mpirun leaves them behind
/// otherwise. The folder's name holds tp-run's pid
/// (tp-run-mpi-<pid>-<random>): the folders of a tp-run that was killed
/// itself (SIGKILL leaves it no time) are removed by the next tp-run.
static std::vector<std::string> mpiFileOptions() {
  static std::string folder;
  if (folder.empty()) {
    const char *given = std::getenv("TP_RUN_SHM_DIR");
    std::string base = given && *given ? std::string(given)
                       : ::access("/dev/shm", W_OK | X_OK) == 0
                           ? std::string("/dev/shm")
                           : temporaryRoot();
    std::error_code walk;
    for (llvm::sys::fs::directory_iterator it(base, walk), end;
         !walk && it != end; it.increment(walk)) {
      StringRef name = llvm::sys::path::filename(it->path());
      int pid = 0;
      if (!name.consume_front("tp-run-mpi-") ||
          name.split('-').first.getAsInteger(10, pid) || pid <= 0)
        continue;
      if (::kill(pid, 0) != 0 && errno == ESRCH)
        tprun::removeTree(it->path());
    }
    SmallString<256> path;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
            base + "/tp-run-mpi-" + std::to_string(::getpid()), path))
      die("cannot create a folder for mpirun's files in '" + base +
          "': " + ec.message());
    tprun::removeAtExit(path);
    folder = std::string(path);
  }
  return {"--mca", "orte_tmpdir_base", folder,
          "--mca", "btl_vader_backing_directory", folder};
}

/// "a FIFO", "a socket", ... for messages.
StringRef fileTypeName(llvm::sys::fs::file_type type) {
  using llvm::sys::fs::file_type;
  switch (type) {
  case file_type::fifo_file:
    return "a FIFO";
  case file_type::socket_file:
    return "a socket";
  case file_type::block_file:
  case file_type::character_file:
    return "a device";
  default:
    return "of an unknown type";
  }
}

std::string findTool(StringRef name, StringRef nextTo,
                     StringRef where = "next to tp-run") {
  SmallString<256> path(nextTo);
  llvm::sys::path::append(path, name);
  if (llvm::sys::fs::can_execute(path))
    return std::string(path);
  if (auto found = llvm::sys::findProgramByName(name))
    return *found;
  die("cannot find '" + name + "' (looked " + where + " and on PATH)");
}

/// The launcher of multi-rank runs: $TP_RUN_MPIRUN when set, else mpirun
/// from /usr/bin (Open MPI wants a real prefix, docs/runtime.md) or PATH.
std::string findMpirun() {
  if (const char *path = std::getenv("TP_RUN_MPIRUN"); path && *path) {
    if (!llvm::sys::fs::can_execute(path) ||
        llvm::sys::fs::is_directory(path))
      die(llvm::formatv("cannot find 'mpirun': TP_RUN_MPIRUN is '{0}', "
                        "which is not an executable file",
                        path));
    return path;
  }
  return findTool("mpirun", "/usr/bin",
                  "in /usr/bin; set TP_RUN_MPIRUN to the launcher's path");
}

/// A mesh the model declares: a tp.mesh, or an upstream shard.grid (which
/// --tp-shard imports as a tp.mesh of the same name).
struct DeclaredMesh {
  Operation *op;
  std::string name;
  SmallVector<int64_t> shape;

  int64_t devices() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n = ShapedType::isDynamic(s) || s < 1 ? 0 : n * s;
    return n;
  }
  /// `@m ["dp" = 2, "tp" = 2]` (a grid's axes are numbered).
  std::string text() const {
    std::string out = "@" + name + " [";
    auto names = isa<tp::MeshOp>(op) ? cast<tp::MeshOp>(op).getAxisNames()
                                     : ArrayAttr();
    for (size_t i = 0; i < shape.size(); ++i)
      out += (i ? ", " : "") +
             (names ? "\"" + cast<StringAttr>(names[i]).str() + "\" = "
                    : std::string()) +
             (ShapedType::isDynamic(shape[i]) ? std::string("?")
                                              : std::to_string(shape[i]));
    return out + "]";
  }
};

SmallVector<DeclaredMesh> declaredMeshes(ModuleOp module) {
  SmallVector<DeclaredMesh> meshes;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto mesh = dyn_cast<tp::MeshOp>(op))
      meshes.push_back({&op, mesh.getSymName().str(),
                        SmallVector<int64_t>(mesh.getShape())});
    else if (auto grid = dyn_cast<shard::GridOp>(op))
      meshes.push_back({&op, grid.getSymName().str(),
                        SmallVector<int64_t>(grid.getShape())});
  }
  return meshes;
}

/// The unsharded program of a model that declares its meshes (to pin
/// layouts on them, or a --dp model's [dp, tp] @mesh), for tp=1: upstream
/// shardings imported, then every pin dropped (a layout never changes a
/// value) and every mesh nothing else uses; a mesh the program still uses
/// (its own collectives) gets every axis of size 1. Returns whether a mesh
/// remains.
bool makeUnsharded(ModuleOp module) {
  MLIRContext *context = module.getContext();
  auto import = PassManager::on<ModuleOp>(context);
  import.addPass(tp::createImportShardPass());
  if (failed(import.run(module)))
    die("importing the model's shard.grid for tp=1 failed");
  auto pin = StringAttr::get(context, "tp.layout");
  for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.removeArgAttr(i, pin);
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.removeResultAttr(i, pin);
    fn.walk([&](tp::AnnotateOp pin) {
      pin.getResult().replaceAllUsesWith(pin.getInput());
      pin.erase();
    });
  }
  bool remains = false;
  for (tp::MeshOp mesh :
       llvm::make_early_inc_range(module.getOps<tp::MeshOp>())) {
    if (SymbolTable::symbolKnownUseEmpty(mesh, module)) {
      mesh.erase();
      continue;
    }
    Builder builder(context);
    mesh.setShapeAttr(builder.getDenseI64ArrayAttr(
        SmallVector<int64_t>(mesh.getShape().size(), 1)));
    remains = true;
  }
  return remains;
}

/// Shards, lowers and builds a copy of the parsed model `parsed` into
/// `dir`; returns model.json. Each stage is timed in a scope nested in
/// `time` (--mlir-timing: the passes of --tp-shard and of the lowering,
/// the translation to LLVM IR, writing model.ll, clang).
llvm::json::Object compile(MLIRContext &context, ModuleOp parsed, int devices,
                           StringRef dir, StringRef clang, int64_t high,
                           TimingScope &parentTime, bool gpu = false) {
  TimingScope time = parentTime.nest("compile tp=" + std::to_string(devices) +
                                     (gpu ? " (gpu)" : " (cpu)"));
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(parsed->clone()));

  // A model that declares its mesh runs on it (main() checked --tp against
  // it); its unsharded program has no pins (makeUnsharded).
  // With --dp, a [dp, tp] mesh and the inputs split over "dp" on their
  // first (batch) dimension; the planner does the rest.
  std::string meshOption = ("tp=" + Twine(devices)).str();
  int64_t dataDevices = devices == 1 ? 1 : dp;
  if (!declaredMeshes(*module).empty() && dataDevices == 1)
    meshOption = devices > 1 || makeUnsharded(*module) ? "" // the module's
                                                       : "tp=1";
  if (dataDevices > 1) {
    if (devices % dataDevices != 0)
      die(llvm::formatv("--dp {0} does not divide --tp {1} devices",
                        dataDevices, devices));
    OpBuilder builder = OpBuilder::atBlockBegin(module->getBody());
    SmallVector<int64_t> shape = {dataDevices, devices / dataDevices};
    // A model may declare the mesh itself, to pin layouts on it (as
    // `tp-opt --tp-propagate=mesh-axes=dp=D,tp=T` writes it).
    auto declared = SymbolTable::lookupSymbolIn(*module, "mesh");
    if (auto mesh = dyn_cast_or_null<tp::MeshOp>(declared)) {
      SmallVector<std::string> names;
      for (Attribute a : mesh.getAxisNames())
        names.push_back(cast<StringAttr>(a).str());
      if (names != SmallVector<std::string>{"dp", "tp"} ||
          SmallVector<int64_t>(mesh.getShape()) != shape)
        die(llvm::formatv("the model declares tp.mesh @mesh, which is not "
                          "the [\"dp\" = {0}, \"tp\" = {1}] mesh that "
                          "--tp {2} --dp {0} runs on",
                          shape[0], shape[1], devices));
    } else if (declared) {
      die("the model declares a symbol @mesh that is not a tp.mesh; --dp "
          "needs that name for its mesh");
    } else {
      tp::MeshOp::create(builder, module->getLoc(),
                         builder.getStringAttr("mesh"),
                         builder.getStrArrayAttr({"dp", "tp"}),
                         builder.getDenseI64ArrayAttr(shape));
    }
    func::FuncOp fn = getEntry(*module);
    auto meshRef = FlatSymbolRefAttr::get(&context, "mesh");
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      if (!type || fn.getArgAttr(i, "tp.param") || type.getRank() == 0 ||
          fn.getArgAttr(i, "tp.layout")) // pinned by the model
        continue;
      if (type.getDimSize(0) % dataDevices != 0) {
        // Still correct (the input is replicated), but not data parallel.
        llvm::errs() << llvm::formatv(
            "tp-run: warning: input #{0} has {1} rows (its first "
            "dimension), which --dp {2} does not divide: it stays "
            "replicated\n",
            i, type.getDimSize(0), dataDevices);
        continue;
      }
      SmallVector<SmallVector<StringAttr>> dims(type.getRank());
      dims[0].push_back(builder.getStringAttr("dp"));
      fn.setArgAttr(i, "tp.layout",
                    tp::LayoutAttr::get(&context, meshRef, dims));
    }
    meshOption = "mesh=mesh";
  }
  // Integer inputs that index tensors get their bound (IndexBounds.h).
  tprun::annotateIndexBounds(getEntry(*module));
  auto shard = PassManager::on<ModuleOp>(&context);
  tprun::addShardPipeline(shard, meshOption + " " + shardOptions,
                          (dir + "/plan.json").str());
  TimingScope shardTime = time.nest("shard (--tp-shard)");
  shard.enableTiming(shardTime);
  if (failed(shard.run(*module)))
    die(llvm::formatv("sharding for tp={0} failed", devices));
  shardTime.stop();
  TimingScope describeTime = time.nest("describe (model.json, glue.c)");
  {
    // The glue calls the entry from C: give it a name no C or runtime
    // symbol has ('main' would clash with the C entry point).
    func::FuncOp fn = getEntry(*module);
    if (failed(SymbolTable::replaceAllSymbolUses(
            fn, StringAttr::get(&context, "tp_model_entry"), *module)))
      die("cannot rename the entry function");
    fn.setSymName("tp_model_entry");
  }
  auto [model, glue] =
      describe(*module, high, tprun::cpuGluePrelude(gpu ? nullptr : &cpuTarget));
  {
    func::FuncOp fn = getEntry(*module);
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.removeArgAttr(i, tprun::kIndexBoundAttr);
  }
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    writeFile((dir + "/model.tp.mlir").str(), text);
  }
  describeTime.stop();

  auto lower = PassManager::on<ModuleOp>(&context);
  std::string gpuError;
  if (!gpu)
    tp::buildLowerCPUPipeline(lower);
  else if (!tprun::buildGpuLowering(lower, gpuError)) // Gpu.h
    die(gpuError, 2);
  TimingScope lowerTime =
      time.nest(gpu ? "lower (--tp-lower-gpu)" : "lower (--tp-lower-cpu)");
  lower.enableTiming(lowerTime);
  if (failed(lower.run(*module)))
    die(llvm::formatv("lowering for tp={0} failed", devices));
  lowerTime.stop();
  TimingScope translateTime = time.nest("translate to LLVM IR");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext);
  if (!llvmModule)
    die("translation to LLVM IR failed");
  translateTime.stop();
  TimingScope writeTime = time.nest("write model.ll");
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    writeFile((dir + "/model.ll").str(), text);
  }
  writeTime.stop();
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object(model)));
  writeFile((dir + "/model.json").str(), json);
  // The library carries the model.json it was compiled with: tp-runner
  // refuses a model.json that describes other buffers (docs/model-abi.md).
  glue += "const char " + tp::runtime::kModelJson.str() + "[] = " +
          cStringLiteral(json) + ";\n";
  writeFile((dir + "/glue.c").str(), glue);

  std::string log = (dir + "/clang.log").str();
  std::vector<std::string> linkArgs = {
      "-O2", "-shared", "-fPIC", "-Wno-override-module",
      (dir + "/model.ll").str(), (dir + "/glue.c").str(), "-o",
      (dir + "/model.so").str()};
  if (gpu) // libtprt_cuda and libtprt, no LLVM (Gpu.h)
    llvm::append_range(linkArgs, tprun::gpuLinkArgs(gpuLibraryDir));
  else {
    // The instruction set of --cpu (Cpu.h).
    linkArgs.insert(linkArgs.begin() + 1, "-march=" + cpuTarget.march);
    llvm::append_range(
        linkArgs,
        std::vector<std::string>{
            "-lm",
            // memrefCopy and friends, for strided copies.
            TP_MLIR_C_RUNNER_UTILS,
            "-Wl,-rpath," +
                llvm::sys::path::parent_path(TP_MLIR_C_RUNNER_UTILS).str()});
  }
  // clang's temporary objects go into the model's folder: an interrupted
  // compile leaves none in $TMPDIR.
  std::string clangTmp = ("TMPDIR=" + dir).str();
  std::vector<StringRef> clangEnv = {clangTmp};
  for (char **e = environ; *e; ++e)
    if (!StringRef(*e).starts_with("TMPDIR="))
      clangEnv.push_back(*e);
  TimingScope clangTime = time.nest("clang (model.so)");
  int rc = runProgram(clang, linkArgs, timeoutSeconds,
                      ArrayRef<StringRef>(clangEnv), log);
  clangTime.stop();
  if (rc != 0) {
    auto text = llvm::MemoryBuffer::getFile(log);
    die("clang failed building model.so" +
        (text ? ":\n" + (*text)->getBuffer() : Twine()));
  }
  return model;
}

/// One output of tp-runner's --output file.
struct Output {
  uint32_t dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

std::vector<Output> readOutputs(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    die("cannot read '" + path + "'");
  StringRef data = (*buffer)->getBuffer();
  std::vector<Output> outputs;
  size_t at = 0;
  auto take = [&](void *dst, size_t n) {
    if (at + n > data.size())
      die("'" + path + "' is truncated");
    std::memcpy(dst, data.data() + at, n);
    at += n;
  };
  while (at < data.size()) {
    uint32_t magic, dtype, rank;
    take(&magic, 4);
    if (magic != 0x54504F55)
      die("'" + path + "' is not a tp-runner output file");
    take(&dtype, 4);
    take(&rank, 4);
    Output out{dtype, std::vector<int64_t>(rank), {}};
    int64_t n = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      take(&out.shape[d], 8);
      n *= out.shape[d];
    }
    for (int64_t i = 0; i < n; ++i) {
      double v = 0;
      switch (dtype) {
      case 0: { float f; take(&f, 4); v = f; break; }
      case 3: { double d; take(&d, 8); v = d; break; }
      case 4: { int32_t x; take(&x, 4); v = x; break; }
      case 5: { int64_t x; take(&x, 8); v = double(x); break; }
      case 6: { int8_t x; take(&x, 1); v = x; break; }   // i8
      case 7: { uint8_t x; take(&x, 1); v = x; break; }  // i1, 0 or 1
      case 1: { // f16
        uint16_t h; take(&h, 2);
        uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 31, man = h & 1023;
        double m = exp ? (1 + man / 1024.0) * std::ldexp(1.0, int(exp) - 15)
                       : man / 1024.0 * std::ldexp(1.0, -14);
        if (exp == 31) m = man ? NAN : INFINITY;
        v = sign ? -m : m;
        break;
      }
      case 2: { // bf16
        uint16_t h; take(&h, 2);
        uint32_t bits = uint32_t(h) << 16; float f;
        std::memcpy(&f, &bits, 4); v = f;
        break;
      }
      default: die(llvm::formatv("'{0}': unknown dtype code {1}", path, dtype));
      }
      out.values.push_back(v);
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --mlir-timing (-display=list|tree): the compile's stages and passes.
  registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions({&category, &tprun::preflightCategory(),
                            &tprun::trainCategory(), &tprun::gpuCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "tp-run: shard a model for N devices, compile it and run it on N "
      "ranks\n\n  tp-run model.mlir --tp 4 --check\n"
      "  tp-run --preset gpt2-tiny --gen=--with-embedding --gen=--with-loss "
      "--tp 4 --check\n");
  bool autoTP = tpOption == "auto";
  if (autoTP)
    devices = 0;
  else if (StringRef(tpOption).getAsInteger(10, devices))
    die("--tp '" + tpOption + "' is not a number of devices or 'auto'");
  if (devices < 1 && !autoTP)
    die("--tp must be at least 1");
  // Each device is one process on this machine: a bound that keeps a typo
  // from starting thousands of ranks.
  constexpr int kMaxRanks = 256;
  if (devices > kMaxRanks)
    die(llvm::formatv("--tp {0} is more ranks than the cpu backend starts "
                      "(at most {1} processes on one machine)",
                      int(devices), kMaxRanks));
  if (dp < 1)
    die("--dp must be at least 1");
  if (!autoTP && devices % dp != 0)
    die(llvm::formatv("--dp {0} does not divide --tp {1} devices", int(dp),
                      devices));
  // tp-runner's cap, checked before minutes of compiling.
  if (steps < 1 || steps > 1000000000)
    die(llvm::formatv("--steps {0} must be from 1 to 1000000000", int(steps)));
  if (timeoutSeconds < 0)
    die(llvm::formatv("--timeout {0} must not be negative", int(timeoutSeconds)));
  if (peerTimeout < 0 || peerTimeout > 1000000000)
    die(llvm::formatv("--peer-timeout {0} must be from 0 to 1000000000",
                      int(peerTimeout)));
  // Options whose default is a sentinel: a value given is checked, never
  // replaced by the default.
  for (cl::opt<double> *limit : {&tolerance, &referenceTolerance})
    if (limit->getNumOccurrences() &&
        !(*limit >= 0 && std::isfinite(double(*limit)))) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", double(*limit));
      die(llvm::formatv("--{0} {1} is not a relative error (a finite number "
                        "at least 0)",
                        limit->ArgStr, text));
    }
  if (std::string given = tprun::preflightOptionGiven();
      !given.empty() && !autoTP && !tprun::preflightRequested())
    die(given + " is an option of --preflight and --tp auto, which this run "
                "does not use");
  if (inputHigh.getNumOccurrences() && inputHigh < 1)
    die(llvm::formatv("--input-high {0} must be at least 1 (integer inputs "
                      "are drawn from [0, N))",
                      int64_t(inputHigh)));
  if (tokensOption.getNumOccurrences() && tokensOption < 1)
    die(llvm::formatv("--tokens {0} must be at least 1", long(tokensOption)));
  if (!tprun::parseTarget(backend, target))
    die("--backend " + backend +
        " is not a backend (cpu, cuda, cuda-shared, cuda-emu)");
  if (tprun::isGpu(target)) {
    std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&main);
    std::string error;
    gpuLibraryDir = tprun::gpuLibraryDir(llvm::sys::path::parent_path(self),
                                         error);
    if (gpuLibraryDir.empty())
      die("--backend " + backend + ": " + error);
  }
  {
    std::string error;
    if (!tprun::resolveCpuTarget(cpuTarget, error) ||
        !tprun::applyThreads(error))
      die(error);
  }
  if (inputFile.empty() == preset.empty())
    die("give either a model file or --preset");

  // Before anything is compiled: a missing launcher or checkpoint fails at
  // once (tp-runner checks the checkpoint's contents).
  std::string launcher =
      devices > 1 && !autoTP && !tprun::compileOnly() &&
              target != tprun::Target::Cuda && target != tprun::Target::CudaEmu
          ? findMpirun()
          : "";
  // Every rank opens them: a FIFO or device would hold each rank in open().
  auto absoluteFile = [](StringRef given, StringRef what) {
    if (given.empty())
      return std::string();
    SmallString<256> path(given);
    llvm::sys::fs::make_absolute(path);
    llvm::sys::fs::file_status status;
    if (std::error_code ec = llvm::sys::fs::status(path, status))
      die("cannot read the " + what + " '" + given + "': " + ec.message());
    if (status.type() != llvm::sys::fs::file_type::regular_file &&
        status.type() != llvm::sys::fs::file_type::directory_file)
      die("cannot read the " + what + " '" + given + "': it is " +
          fileTypeName(status.type()) +
          ", not a regular file or a folder (every rank reads it)");
    return std::string(path);
  };
  std::string checkpoint = absoluteFile(checkpointFile, "checkpoint");
  std::string reference = absoluteFile(referenceFile, "reference");
  if (referenceTolerance >= 0 && reference.empty())
    die("--reference-tol needs --reference");
  // The files every tp-runner run reads (Sources.h in tp-runner).
  std::vector<std::string> fileArgs;
  if (!checkpoint.empty())
    fileArgs.insert(fileArgs.end(), {"--checkpoint", checkpoint});
  if (!reference.empty()) {
    fileArgs.insert(fileArgs.end(), {"--reference", reference});
    if (referenceTolerance >= 0) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.17g", double(referenceTolerance));
      fileArgs.insert(fileArgs.end(), {"--reference-tol", text});
    }
  }

  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&main);
  StringRef binDir = llvm::sys::path::parent_path(self);

  // The work folder: a temporary one is removed at exit (die() included)
  // unless --keep-work-dir.
  SmallString<256> work(workDir);
  if (work.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("tp-run", work))
      die("cannot create a temporary folder in '" + temporaryRoot() +
          "': " + ec.message());
    if (!keepWorkDir) {
      temporaryWork = std::string(work);
      tprun::removeAtExit(work);
    }
  } else {
    makeFolder(work);
  }
  // A folder we cannot write in fails now, not in the middle of a compile.
  if (::access(work.c_str(), W_OK | X_OK) != 0)
    die("cannot write in the work folder '" + work +
        "': " + std::strerror(errno));
  lockWorkFolder(work);

  // 1. The model.
  std::string source;
  int64_t high = inputHigh;
  if (!preset.empty()) {
    std::string genOut = (work + "/model.mlir").str();
    std::vector<std::string> args = {"--preset", preset, "-o", genOut};
    for (const std::string &o : genOptions)
      args.push_back(o);
    tprun::addTrainGenOptions(args);
    if (runProgram(findTool("tp-gen", binDir), args, timeoutSeconds) != 0)
      die("tp-gen failed");
    inputFile = genOut;
  }
  auto buffer = llvm::MemoryBuffer::getFile(inputFile);
  if (!buffer)
    die("cannot read '" + inputFile + "': " + buffer.getError().message());
  source = (*buffer)->getBuffer().str();
  // Text MLIR 22's parser would crash on (InputChecks.h): an error at its
  // place, before any parse.
  if (std::optional<tp::UpstreamCrash> crash =
          tp::findUpstreamParserCrash(source)) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(source, inputFile), SMLoc());
    sourceMgr.PrintMessage(
        SMLoc::getFromPointer(source.data() + crash->offset),
        llvm::SourceMgr::DK_Error, crash->message);
    die("cannot parse the model");
  }
  // tp-gen writes its full command on the first line: the vocabulary is the
  // range of token ids.
  // And batch x seq are the tokens of a step.
  auto headerValue = [&](StringRef flag) -> int64_t {
    StringRef first = StringRef(source).split('\n').first;
    size_t at = first.find(flag);
    int64_t value = 0;
    if (first.starts_with("// tp-gen") && at != StringRef::npos &&
        first.drop_front(at + flag.size()).split(' ').first.getAsInteger(10, value))
      return 0;
    return value;
  };
  if (high <= 0)
    high = headerValue("--vocab ");
  tokensPerStep = tokensOption > 0
                      ? int64_t(tokensOption)
                      : headerValue("--seq ") * headerValue("--batch ");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  tprun::registerGpu(registry); // tp-lower-gpu's output (Gpu.h)
  tp::registerTPDialects(registry);
  tp::registerTPPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Parsed once; every diagnostic of the compile steps names the model file.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, inputFile), SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> parsed = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!parsed)
    die("cannot parse the model");

  // A model that declares its mesh (tp.mesh, or an upstream shard.grid)
  // runs on it: --tp, when given, must be its number of devices. (--dp
  // builds the [dp, tp] mesh @mesh itself.)
  SmallVector<DeclaredMesh> meshes = declaredMeshes(*parsed);
  // --dp declares the mesh @mesh ["dp", "tp"] (a model may declare it too,
  // to pin layouts on it, compile() checks it); no other mesh fits.
  if (dp > 1) {
    for (const DeclaredMesh &mesh : meshes)
      if (mesh.name != "mesh")
        die(llvm::formatv("the model declares the mesh {0}, but --dp runs on "
                          "a [\"dp\", \"tp\"] mesh @mesh of its own: drop "
                          "--dp and --tp (the model's mesh says where it "
                          "runs), or declare that mesh @mesh",
                          mesh.text()));
  }
  if (!meshes.empty() && dp == 1) {
    if (meshes.size() > 1)
      die(llvm::formatv("the model declares {0} meshes ({1}, {2}{3}); tp-run "
                        "runs a model on one",
                        meshes.size(), meshes[0].text(), meshes[1].text(),
                        meshes.size() > 2 ? ", ..." : ""));
    const DeclaredMesh &mesh = meshes.front();
    int64_t meshDevices = mesh.devices();
    if (meshDevices < 1 || meshDevices > kMaxRanks)
      die(llvm::formatv("the model declares the mesh {0}, which tp-run "
                        "cannot run: it starts 1 to {1} ranks",
                        mesh.text(), kMaxRanks));
    if (autoTP || tprun::preflightRequested())
      die(llvm::formatv("the model declares the mesh {0} of {1} devices; "
                        "--preflight and --tp auto plan a 1-D tp mesh of "
                        "their own: run it with --tp {1}, or without the "
                        "mesh",
                        mesh.text(), meshDevices));
    if (tpOption.getNumOccurrences() && devices != meshDevices)
      die(llvm::formatv("the model declares the mesh {0} of {1} devices but "
                        "--tp is {2}: drop --tp, or pass --tp {1}",
                        mesh.text(), meshDevices, devices));
    devices = int(meshDevices);
    if (launcher.empty() && devices > 1 && !tprun::compileOnly() &&
        target != tprun::Target::Cuda && target != tprun::Target::CudaEmu)
      launcher = findMpirun();
  }

  // --preflight and --tp auto (Preflight.cpp) stop here.
  if (autoTP || tprun::preflightRequested()) {
    if (tprun::isGpu(target) || tprun::compileOnly())
      die("--preflight and --tp auto run on the cpu backend, without "
          "--compile-only");
    if (dp > 1)
      die("--preflight and --tp auto plan a 1-D tp mesh; drop --dp");
    return tprun::runPreflight(
        context,
        {self, binDir.str(), source, inputFile, std::string(work),
         shardOptions, int(timeoutSeconds)},
        devices);
  }

  std::string clang = findTool("clang-22", "/usr/lib/llvm-22/bin",
                               "in /usr/lib/llvm-22/bin");
  std::string runner = findTool("tp-runner", binDir);

  // 2. Compile for N (and 1).
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope compileTime = timing.getRootScope();
  std::string dirN = (work + "/tp" + Twine(int(devices))).str();
  makeFolder(dirN);
  llvm::json::Object model = compile(context, *parsed, devices, dirN, clang,
                                     high, compileTime, tprun::isGpu(target));
  // A training step (docs/training.md): the runner feeds the updated
  // results back and writes the loss curve.
  bool training = tprun::isTrainingStep(model);
  if (tprun::trainRequested() && !training)
    die("--train: the model is not a training step (no result carries "
        "tp.updates; generate it with tp-gen --train)");
  // The unsharded CPU reference; a GPU build on one device must not share
  // its folder (tpN is tp1 then).
  std::string dir1 =
      (work + (tprun::isGpu(target) && devices == 1 ? "/tp1-cpu" : "/tp1"))
          .str();
  if (check) {
    makeFolder(dir1);
    compile(context, *parsed, 1, dir1, clang, high, compileTime);
  }
  compileTime.stop();
  // With --mlir-timing, the report (stderr) now, before the run's output.
  timing.print();
  timing.setEnabled(false);

  // Plan summary.
  llvm::outs() << "tp-run: model " << inputFile << ", " << devices
               << " devices";
  if (dp > 1)
    llvm::outs() << llvm::formatv(" (mesh dp={0} x tp={1})", int(dp),
                                  devices / dp);
  llvm::outs() << ", work folder " << work
               << (temporaryWork.empty()
                       ? ""
                       : " (removed at exit; --keep-work-dir keeps it)")
               << "\n";
  if (auto *c = model.getObject("collectives"))
    llvm::outs() << llvm::formatv(
        "plan: {0} all-reduce, {1} all-gather, {2} reduce-scatter, {3} "
        "all-to-all per step\n",
        c->getInteger("all_reduce").value_or(0),
        c->getInteger("all_gather").value_or(0),
        c->getInteger("reduce_scatter").value_or(0),
        c->getInteger("all_to_all").value_or(0));
  if (tprun::compileOnly()) {
    llvm::outs() << "compiled: " << dirN << " (" << backend << ")"
                 << (check ? ", reference " + dir1 + " (cpu)" : "") << "\n";
    return 0;
  }

  // 3. Run on N ranks.
  std::string outN = dirN + "/outputs.bin";
  std::vector<std::string> runnerArgs = {dirN, "--output", outN, "--steps",
                                         std::to_string(steps),
                                         "--peer-timeout",
                                         std::to_string(int(peerTimeout))};
  llvm::append_range(runnerArgs, fileArgs);
  if (training) {
    runnerArgs.push_back("--loss-file");
    runnerArgs.push_back(tprun::lossFilePath(dirN));
  }
  std::string runName = llvm::formatv("the run on {0} rank{1}", int(devices),
                                      devices == 1 ? "" : "s");
  // The environment of mpirun (or tp-runner --nproc): ours, with Open MPI
  // allowed to run as root.
  std::vector<std::string> envStrings;
  for (char **e = environ; *e; ++e)
    envStrings.push_back(*e);
  envStrings.push_back("OMPI_ALLOW_RUN_AS_ROOT=1");
  envStrings.push_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  SmallVector<StringRef> env(envStrings.begin(), envStrings.end());
  int rc;
  if (tprun::isGpu(target)) { // tp-runner --nproc, or mpirun (Gpu.h)
    tprun::GpuLaunch gpuRun;
    std::string error;
    if (!tprun::gpuLaunch(target, devices, runner, runnerArgs, launcher,
                          gpuLibraryDir, timeoutSeconds, gpuRun, error))
      die(error);
    if (gpuRun.mpirun) { // cuda-shared: mpirun's files too
      std::vector<std::string> files = mpiFileOptions();
      gpuRun.args.insert(gpuRun.args.begin(), files.begin(), files.end());
    }
    // The launch's variables replace ours (getenv finds the first).
    for (const std::string &variable : gpuRun.environment) {
      std::string name = variable.substr(0, variable.find('=') + 1);
      llvm::erase_if(envStrings, [&](const std::string &e) {
        return StringRef(e).starts_with(name);
      });
      envStrings.push_back(variable);
    }
    env.assign(envStrings.begin(), envStrings.end());
    rc = runProgram(gpuRun.program, gpuRun.args, timeoutSeconds,
                    ArrayRef<StringRef>(env), "",
                    runName);
  } else if (devices == 1) {
    std::vector<std::string> args = runnerArgs;
    args.push_back("--backend");
    args.push_back("single");
    rc = runProgram(runner, args, timeoutSeconds, std::nullopt, "", runName);
  } else {
    std::vector<std::string> args = mpiFileOptions();
    args.insert(args.end(), {"--oversubscribe", "--mca", "btl", "self,vader",
                             "--mca", "pml", "ob1", "-np",
                             std::to_string(int(devices)), runner});
    args.insert(args.end(), runnerArgs.begin(), runnerArgs.end());
    rc = runProgram(launcher, args, timeoutSeconds, ArrayRef<StringRef>(env),
                    "", runName);
  }
  if (rc != 0)
    die(llvm::formatv("{0} failed (exit code {1})", runName, rc));
  if (training && !check)
    tprun::summarizeLossCurve(tprun::lossFilePath(dirN));

  // 4. Compare with the unsharded run.
  if (check) {
    std::string out1 = dir1 + "/outputs.bin";
    std::vector<std::string> args = {dir1, "--output", out1, "--backend",
                                     "single"};
    llvm::append_range(args, fileArgs);
    if (training) {
      // The same number of steps, and the loss curves compared.
      args.insert(args.end(), {"--steps", std::to_string(steps), "--loss-file",
                               tprun::lossFilePath(dir1)});
    }
    if (runProgram(runner, args, timeoutSeconds, std::nullopt, "",
                   "the unsharded run") != 0)
      die("the unsharded run failed");
    if (training)
      return tprun::compareLossCurves(tprun::lossFilePath(dirN),
                                      tprun::lossFilePath(dir1), devices,
                                      tolerance);
    std::vector<Output> a = readOutputs(outN), b = readOutputs(out1);
    if (a.size() != b.size())
      die("the sharded and unsharded runs have different outputs");
    bool ok = true;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].shape != b[i].shape)
        die(llvm::formatv("output #{0} has different shapes", i));
      // The relative error of docs/model-abi.md ("References"), as
      // tp-runner --reference computes it: max|a - b| / max|b| over the
      // finite b, equal values (infinities too) differ by 0, a NaN on
      // either side is a NaN error.
      double maxAbs = 0, maxRef = 0;
      for (size_t j = 0; j < a[i].values.size(); ++j) {
        double x = a[i].values[j], y = b[i].values[j];
        double diff = x == y ? 0.0 : std::fabs(x - y);
        maxAbs = std::isnan(diff) || std::isnan(maxAbs) ? NAN
                                                         : std::max(maxAbs, diff);
        if (std::isfinite(y))
          maxRef = std::max(maxRef, std::fabs(y));
      }
      double rel = maxRef > 0 ? maxAbs / maxRef : maxAbs;
      double limit = tolerance >= 0 ? double(tolerance)
                     : (a[i].dtype == 1 || a[i].dtype == 2) ? 2e-2
                                                             : 1e-5;
      bool pass = rel <= limit && std::isfinite(rel);
      ok &= pass;
      llvm::outs() << llvm::formatv(
          "check: output #{0} ({1} values): max abs error {2:e3}, relative "
          "{3:e3} (limit {4:e1}) {5}\n",
          i, a[i].values.size(), maxAbs, rel, limit, pass ? "ok" : "FAIL");
    }
    if (!ok)
      die("tp=" + Twine(int(devices)) + " does not match the unsharded program");
  }
  return 0;
}
