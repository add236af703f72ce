//===- Preflight.cpp - tp-run --preflight and --tp auto ----------*- C++ -*-===//
//
// docs/preflight.md describes every check and the memory arithmetic. The
// modelled numbers (step time, communication, parameter bytes and peak
// activations per device) are the planner's own (the --tp-shard report),
// not a second cost model; the smoke run is tp-run itself, run on a 2-layer
// copy of the model with --check.
//
//===----------------------------------------------------------------------===//

#include "Preflight.h"
#include "Process.h"
#include "Shard.h"

#include "tp/Analysis/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;
using llvm::formatv;
using llvm::StringRef;

llvm::cl::OptionCategory &tprun::preflightCategory() {
  static cl::OptionCategory category("tp-run preflight and --tp auto");
  return category;
}

static cl::opt<bool> preflight(
    "preflight",
    cl::desc("Run the pre-launch checklist for --tp N on --device instead of "
             "the model (docs/preflight.md); exit code 1 on any failure"),
    cl::cat(tprun::preflightCategory()));
static cl::opt<std::string> deviceName(
    "device",
    cl::desc("Device profile of the target (h100-nvlink, h200-nvlink, "
             "a100-nvlink, h100-pcie) for --preflight and --tp auto"),
    cl::init("h100-nvlink"), cl::cat(tprun::preflightCategory()));
static cl::opt<std::string> memoryOption(
    "memory-per-device",
    cl::desc("Device memory in bytes (suffixes GB, GiB accepted; default: "
             "the profile's)"),
    cl::init(""), cl::cat(tprun::preflightCategory()));
static cl::opt<bool> training(
    "training",
    cl::desc("Count gradients, optimizer state and the activations kept for "
             "the backward pass (--preflight, --tp auto)"),
    cl::cat(tprun::preflightCategory()));
static cl::opt<std::string> optimizer(
    "optimizer",
    cl::desc("Optimizer of --training: adam (default) or sgd; implies "
             "--training"),
    cl::init(""), cl::cat(tprun::preflightCategory()));
static cl::opt<int> optimizerShards(
    "optimizer-shards",
    cl::desc("Data-parallel replicas the fp32 master weights and optimizer "
             "moments are sharded over (ZeRO-1, a distributed optimizer; "
             "default 1: none)"),
    cl::init(1), cl::cat(tprun::preflightCategory()));
static cl::opt<int> maxTP(
    "max-tp",
    cl::desc("Largest degree --tp auto tries (default: the profile's devices "
             "per node)"),
    cl::init(0), cl::cat(tprun::preflightCategory()));

bool tprun::preflightRequested() { return preflight; }

std::string tprun::preflightOptionGiven() {
  for (cl::Option *option :
       {static_cast<cl::Option *>(&deviceName),
        static_cast<cl::Option *>(&memoryOption),
        static_cast<cl::Option *>(&training),
        static_cast<cl::Option *>(&optimizer),
        static_cast<cl::Option *>(&optimizerShards),
        static_cast<cl::Option *>(&maxTP)})
    if (option->getNumOccurrences())
      return ("--" + option->ArgStr).str();
  return "";
}

namespace {

using tprun::die;

std::string gb(double bytes) {
  if (bytes == 0)
    return "0";
  if (bytes < 1e3)
    return formatv("{0} B", int64_t(bytes)).str();
  if (bytes < 1e5)
    return formatv("{0:f1} kB", bytes / 1e3).str();
  if (bytes < 1e9)
    return formatv("{0:f1} MB", bytes / 1e6).str();
  return formatv("{0:f2} GB", bytes / 1e9).str();
}

/// The first line of a tp-gen output: its command, every size spelled out.
struct GenHeader {
  bool present = false;
  std::vector<std::string> args; ///< after "tp-gen", up to the constants
  std::map<std::string, std::string> values;

  int64_t get(StringRef flag) const {
    auto it = values.find(flag.str());
    int64_t v = 0;
    if (it == values.end() || StringRef(it->second).getAsInteger(10, v))
      return 0;
    return v;
  }
  std::string str(StringRef flag) const {
    auto it = values.find(flag.str());
    return it == values.end() ? "" : it->second;
  }

  static GenHeader parse(StringRef source) {
    GenHeader h;
    StringRef first = source.split('\n').first;
    if (!first.consume_front("// tp-gen "))
      return h;
    h.present = true;
    SmallVector<StringRef> tokens;
    first.split(tokens, ' ', -1, /*KeepEmpty=*/false);
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i].starts_with("("))
        break;
      h.args.push_back(tokens[i].str());
      if (tokens[i].starts_with("--") && i + 1 < tokens.size() &&
          !tokens[i + 1].starts_with("--") && !tokens[i + 1].starts_with("("))
        h.values[tokens[i].str()] = tokens[i + 1].str();
    }
    return h;
  }
};

/// The planner's report of one degree (totals of its only function).
struct Plan {
  int tp = 0;
  double stepSeconds = 0, commSeconds = 0, computeSeconds = 0;
  double paramBytesPerDevice = 0, paramBytesTotal = 0;
  double peakActivationBytes = 0, allActivationBytes = 0;
  int64_t collectives = 0;
  bool sequenceParallel = false; ///< the plan has reduce-scatters
  std::vector<std::string> remarks;
  std::vector<std::string> argumentLayouts;
};

struct Target {
  tp::DeviceProfile profile;
  double memory;
};

Target getTarget() {
  auto profile = tp::DeviceProfile::lookup(deviceName);
  if (!profile)
    die("unknown --device '" + deviceName + "' (known: " +
        llvm::join(tp::DeviceProfile::names(), ", ") + ")");
  double memory = profile->memoryCapacity;
  if (!memoryOption.empty()) {
    StringRef text = memoryOption;
    double scale = 1;
    if (text.consume_back_insensitive("gib"))
      scale = 1024.0 * 1024 * 1024;
    else if (text.consume_back_insensitive("gb"))
      scale = 1e9;
    double value;
    if (text.trim().getAsDouble(value) || !(value > 0) ||
        !std::isfinite(value * scale))
      die("--memory-per-device '" + memoryOption +
          "' is not a positive number of bytes");
    memory = value * scale;
  }
  if (!optimizer.empty() && optimizer != "adam" && optimizer != "sgd")
    die("--optimizer '" + optimizer + "' is not adam or sgd");
  if (optimizerShards < 1)
    die("--optimizer-shards must be at least 1");
  if (maxTP.getNumOccurrences() && maxTP < 1)
    die(formatv("--max-tp {0} must be at least 1", int(maxTP)));
  return {*profile, memory};
}

/// Runs --tp-shard on a copy of `module` for `tp` devices on the profile and
/// reads its report; nullopt when the planner fails, with its errors in
/// `errors` (one line each).
std::optional<Plan> tryPlan(ModuleOp module, int tp, StringRef dir,
                            StringRef extraOptions, std::string &errors) {
  MLIRContext *context = module.getContext();
  OwningOpRef<ModuleOp> copy = module.clone();
  std::string report = (dir + "/plan-tp" + llvm::Twine(tp) + ".json").str();
  auto pm = PassManager::on<ModuleOp>(context);
  tprun::addShardPipeline(
      pm,
      formatv("tp={0} device={1} device-memory={2:F0} {3}", tp,
              deviceName.getValue(), getTarget().memory, extraOptions)
          .str(),
      report);
  errors.clear();
  {
    // Planner remarks go to the report; errors are kept for the message.
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error)
        errors += "\n  " + d.str();
      return success();
    });
    if (failed(pm.run(*copy)))
      return std::nullopt;
  }
  auto buffer = llvm::MemoryBuffer::getFile(report);
  if (!buffer)
    die("cannot read the plan report '" + report + "'");
  auto json = llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    die("the plan report '" + report + "' is not JSON: " +
        llvm::toString(json.takeError()));
  Plan p;
  p.tp = tp;
  const llvm::json::Array *functions =
      json->getAsObject() ? json->getAsObject()->getArray("functions")
                          : nullptr;
  if (!functions || functions->empty() || !(*functions)[0].getAsObject())
    die("the plan report '" + report + "' has no function");
  const llvm::json::Object &fn = *(*functions)[0].getAsObject();
  if (const llvm::json::Object *t = fn.getObject("totals")) {
    p.stepSeconds = t->getNumber("step_seconds").value_or(0);
    p.commSeconds = t->getNumber("communication_seconds").value_or(0);
    p.computeSeconds = t->getNumber("compute_seconds").value_or(0);
    p.paramBytesPerDevice = t->getNumber("param_bytes_per_device").value_or(0);
    p.paramBytesTotal = t->getNumber("param_bytes_total").value_or(0);
    p.peakActivationBytes =
        t->getNumber("peak_activation_bytes_per_device").value_or(0);
    p.allActivationBytes =
        t->getNumber("activation_bytes_all_per_device").value_or(0);
    p.collectives = t->getInteger("collectives").value_or(0);
  }
  if (const llvm::json::Array *r = fn.getArray("remarks"))
    for (const llvm::json::Value &v : *r)
      if (auto s = v.getAsString())
        p.remarks.push_back(s->str());
  if (const llvm::json::Array *a = fn.getArray("arguments"))
    for (const llvm::json::Value &v : *a)
      if (const llvm::json::Object *o = v.getAsObject())
        p.argumentLayouts.push_back(
            o->getString("layout").value_or("").str());
  if (const llvm::json::Array *r = fn.getArray("reshards"))
    for (const llvm::json::Value &v : *r)
      if (const llvm::json::Object *o = v.getAsObject())
        if (const llvm::json::Array *steps = o->getArray("steps"))
          for (const llvm::json::Value &s : *steps)
            if (s.getAsObject() &&
                s.getAsObject()->getString("collective") == "reduce_scatter")
              p.sequenceParallel = true;
  return p;
}

/// tryPlan, fatal on failure.
Plan plan(ModuleOp module, int tp, StringRef dir, StringRef extraOptions) {
  std::string errors;
  std::optional<Plan> p = tryPlan(module, tp, dir, extraOptions, errors);
  if (!p)
    die(formatv("planning for tp={0} on {1} failed{2}", tp,
                deviceName.getValue(), errors));
  return *p;
}

/// Memory per device of one plan: what --tp auto and the memory check add.
struct Memory {
  double weights = 0, grads = 0, optimizer = 0, activations = 0;
  double total() const { return weights + grads + optimizer + activations; }
};

bool isTraining() { return training || !optimizer.empty(); }

/// docs/preflight.md, "Memory": parameters per device are the planner's
/// (padded, with what it replicates); training adds gradients in the
/// storage type, fp32 master weights when that type has 16 bits, Adam's two
/// fp32 moments (divided by --optimizer-shards), and the activations of full
/// recomputation.
Memory memoryOf(const Plan &p, double bytesPerParam, const GenHeader &h) {
  Memory m;
  m.weights = p.paramBytesPerDevice;
  if (!isTraining()) {
    m.activations = p.peakActivationBytes;
    return m;
  }
  double params = p.paramBytesPerDevice / bytesPerParam;
  m.grads = p.paramBytesPerDevice;
  double state = (bytesPerParam < 4 ? 4 : 0) + (optimizer == "sgd" ? 0 : 8);
  m.optimizer = state * params / optimizerShards;
  int64_t layers = h.get("--layers"), hidden = h.get("--hidden");
  int64_t tokens = h.get("--seq") * std::max<int64_t>(1, h.get("--batch"));
  if (layers > 0 && hidden > 0 && tokens > 0)
    // Each layer's input kept (split by tokens under sequence
    // parallelism), plus one recomputed layer and its gradients.
    m.activations = double(layers) * tokens * hidden * bytesPerParam /
                        (p.sequenceParallel ? p.tp : 1) +
                    2 * p.peakActivationBytes;
  else
    // A hand-written module: every value the forward produces is kept.
    m.activations = p.allActivationBytes;
  return m;
}

/// The model dimensions the checklist divides by tp, from the tp-gen header.
struct Dim {
  const char *name;
  const char *flag;
  const char *why;
};
constexpr Dim kDims[] = {
    {"hidden", "--hidden", "the residual stream and every projection"},
    {"heads", "--heads", "every rank must hold whole attention heads"},
    {"kv-heads", "--kv-heads", "every rank must hold whole key/value heads"},
    {"ffn", "--ffn", "the MLP's inner dimension"},
};

/// Degrees up to `limit` that divide hidden, heads, kv-heads and ffn.
std::vector<int64_t> validDegrees(const GenHeader &h, int64_t limit) {
  int64_t g = 0;
  for (const Dim &d : kDims)
    if (int64_t v = h.get(d.flag))
      g = std::gcd(g, v);
  std::vector<int64_t> out;
  for (int64_t t = 1; t <= std::min(g, limit); ++t)
    if (g % t == 0)
      out.push_back(t);
  return out;
}

/// The parameter bytes of one element, from the module's tp.param arguments.
double bytesPerParameter(ModuleOp module) {
  double elements = 0, bytes = 0;
  for (func::FuncOp fn : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      if (!type || !type.hasStaticShape() || !fn.getArgAttr(i, "tp.param"))
        continue;
      elements += type.getNumElements();
      bytes += double(type.getNumElements()) *
               tp::getElementBytes(type.getElementType());
    }
  return elements > 0 ? bytes / elements : 4;
}

struct Row {
  std::string check, result, numbers;
};

void printTable(llvm::raw_ostream &os, ArrayRef<Row> rows) {
  size_t w = 5;
  for (const Row &r : rows)
    w = std::max(w, r.check.size());
  os << llvm::left_justify("check", w) << "  result  numbers\n";
  for (const Row &r : rows)
    os << llvm::left_justify(r.check, w) << "  "
       << llvm::left_justify(r.result, 6) << "  " << r.numbers << "\n";
}

std::string degreeList(ArrayRef<int64_t> degrees) {
  return llvm::join(llvm::map_range(degrees,
                                    [](int64_t t) { return std::to_string(t); }),
                    ", ");
}

//===----------------------------------------------------------------------===//
// --tp auto
//===----------------------------------------------------------------------===//

int chooseDegree(ModuleOp module, const GenHeader &h, const Target &target,
                 StringRef dir, StringRef shardOptions) {
  int64_t limit = maxTP > 0 ? int64_t(maxTP) : target.profile.devicesPerNode;
  double bpp = bytesPerParameter(module);
  llvm::outs() << formatv(
      "tp-run: --tp auto on {0}: {1} per device, {2} devices per node\n",
      target.profile.name, gb(target.memory), target.profile.devicesPerNode);
  if (isTraining())
    llvm::outs() << formatv(
        "memory: training with {0}: {1} B weights + {1} B gradients + {2} B "
        "optimizer state per parameter{3}, plus the activations of full "
        "recomputation\n",
        optimizer.empty() ? "adam" : optimizer.getValue(), bpp,
        (bpp < 4 ? 4 : 0) + (optimizer == "sgd" ? 0 : 8),
        optimizerShards > 1
            ? formatv(" (state over {0} replicas)", int(optimizerShards)).str()
            : std::string());
  else
    llvm::outs() << "memory: inference: weights plus the plan's peak of live "
                    "activations\n";
  llvm::outs() << formatv("{0,4}  {1,-3}  {2,10}  {3,10}  {4,10}  {5,11}  "
                          "{6,10}  {7,10}  {8,6}  {9}\n",
                          "tp", "sp", "weights", "grads", "optimizer",
                          "activations", "total", "step (s)", "comm", "fits");
  int chosen = 0;
  bool chosenSP = false;
  double smallestTotal = 0;
  int smallestAt = 0;
  for (int64_t t = 1; t <= limit; t *= 2) {
    std::string bad;
    for (const Dim &d : kDims)
      if (int64_t v = h.get(d.flag); v > 0 && v % t != 0) {
        bad = formatv("{0} {1} % {2} != 0", d.name, v, t).str();
        break;
      }
    if (!bad.empty()) {
      llvm::outs() << formatv("{0,4}  skipped: {1}\n", t, bad);
      continue;
    }
    // A degree the planner cannot plan (more devices than the model has
    // rows to split) is a row of the table, not the end of the search.
    std::string errors;
    std::optional<Plan> planned =
        tryPlan(module, int(t), dir, shardOptions, errors);
    if (!planned) {
      StringRef first = StringRef(errors).ltrim().split('\n').first;
      llvm::outs() << formatv("{0,4}  no plan: {1}\n", t, first);
      continue;
    }
    const Plan &p = *planned;
    Memory m = memoryOf(p, bpp, h);
    bool fits = m.total() <= target.memory;
    std::string note = fits ? "yes" : "no";
    if (t > target.profile.devicesPerNode)
      note += " (crosses nodes)";
    llvm::outs() << formatv(
        "{0,4}  {1,-3}  {2,10}  {3,10}  {4,10}  {5,11}  {6,10}  {7,10}  "
        "{8,6}  {9}\n",
        t, p.sequenceParallel ? "on" : "off", gb(m.weights), gb(m.grads),
        gb(m.optimizer), gb(m.activations), gb(m.total()),
        formatv("{0:e3}", p.stepSeconds).str(),
        formatv("{0:f1}%", p.stepSeconds > 0
                                ? 100 * p.commSeconds / p.stepSeconds
                                : 0.0)
            .str(),
        note);
    if (fits && !chosen) {
      chosen = int(t);
      chosenSP = p.sequenceParallel;
    }
    if (!smallestAt || m.total() < smallestTotal) {
      smallestTotal = m.total();
      smallestAt = int(t);
    }
  }
  if (!chosen) {
    llvm::outs().flush();
    llvm::errs() << formatv(
        "tp-run: error: no tensor-parallel degree up to {0} fits {1} per "
        "device{2}; {3}add pipeline parallelism, or use a larger device\n",
        limit, gb(target.memory),
        smallestAt ? formatv(" (the least is {0} at tp={1})",
                             gb(smallestTotal), smallestAt)
                         .str()
                   : std::string(),
        isTraining() ? "shard the optimizer state over data-parallel "
                       "replicas (--optimizer-shards), "
                     : "");
    return 0;
  }
  llvm::outs() << formatv("chosen: --tp {0} (sequence parallelism {1}): the "
                          "smallest degree that fits\n",
                          chosen, chosenSP ? "on" : "off");
  return chosen;
}

//===----------------------------------------------------------------------===//
// --preflight
//===----------------------------------------------------------------------===//

/// The 2-layer smoke run: tp-run itself with --check on a small copy of the
/// model; fills the smoke and comparison rows and prints the shard shapes.
void smokeRun(const tprun::PreflightInputs &in, const GenHeader &h, int tp,
              std::vector<Row> &rows, std::string &shapes) {
  std::string smokeName = "smoke run";
  std::string compareName = formatv("tp=1 vs tp={0}", tp).str();
  std::string dir = in.work + "/smoke";
  tprun::makeFolder(dir);
  std::string model = in.inputFile;
  if (h.present) {
    // The same tp-gen command with 2 layers and at most 64 tokens a sequence.
    int64_t layers = std::min<int64_t>(2, h.get("--layers"));
    int64_t seq = std::min<int64_t>(64, h.get("--seq"));
    int64_t hidden = h.get("--hidden"), ffn = h.get("--ffn"),
            vocab = h.get("--vocab");
    double params = double(layers) * (4.0 * hidden * hidden + 3.0 * hidden * ffn) +
                    2.0 * vocab * hidden;
    smokeName = formatv("smoke run ({0} layers, seq {1})", layers, seq).str();
    if (params > 3e8) {
      rows.push_back({smokeName, "skip",
                      formatv("about {0:e2} parameters in {1} layers: more "
                              "than a CPU smoke run takes (3e8); run it with "
                              "smaller --gen=--hidden, or on the target",
                              params, layers)
                          .str()});
      rows.push_back({compareName, "skip", "needs the smoke run"});
      return;
    }
    model = dir + "/model.mlir";
    std::vector<std::string> args;
    for (size_t i = 0; i < h.args.size(); ++i) {
      args.push_back(h.args[i]);
      if ((h.args[i] == "--layers" || h.args[i] == "--seq") &&
          i + 1 < h.args.size()) {
        args.push_back(std::to_string(h.args[i] == "--layers" ? layers : seq));
        ++i;
      }
    }
    // Locations name every argument in model.json.
    args.insert(args.end(), {"--mlir-print-debuginfo", "-o", model});
    std::string gen = in.binDir + "/tp-gen";
    std::string log = dir + "/tp-gen.log";
    if (tprun::runProgram(gen, args, in.timeoutSeconds, std::nullopt, log) !=
        0) {
      auto text = llvm::MemoryBuffer::getFile(log);
      rows.push_back({smokeName, "FAIL",
                      "tp-gen failed: " +
                          (text ? (*text)->getBuffer().trim().str() : "")});
      rows.push_back({compareName, "skip", "needs the smoke run"});
      return;
    }
  } else {
    smokeName = "smoke run (the module as given)";
  }

  std::string work = dir + "/run";
  std::string shard = ("device=" + deviceName + " " + in.shardOptions);
  std::vector<std::string> args = {model,
                                   "--tp",
                                   std::to_string(tp),
                                   "--check",
                                   "--work-dir",
                                   work,
                                   "--timeout",
                                   std::to_string(in.timeoutSeconds),
                                   "--shard-options",
                                   shard};
  std::string log = dir + "/tp-run.log";
  // The smoke run stops itself after --timeout; its compile steps too.
  int rc = tprun::runProgram(in.self, args, /*timeoutSeconds=*/0, std::nullopt,
                             log, "the smoke run");
  auto logText = llvm::MemoryBuffer::getFile(log);
  StringRef text = logText ? (*logText)->getBuffer() : "";
  SmallVector<StringRef> lines;
  text.split(lines, '\n');

  // The shard shapes of every rank: model.json (the partitioned function's
  // types) against the plan report's layouts.
  std::string dirN = work + "/tp" + std::to_string(tp);
  auto modelJson = llvm::MemoryBuffer::getFile(dirN + "/model.json");
  auto planJson = llvm::MemoryBuffer::getFile(dirN + "/plan.json");
  int checked = 0, mismatches = 0;
  std::string mismatch;
  if (modelJson && planJson) {
    auto m = llvm::json::parse((*modelJson)->getBuffer());
    auto p = llvm::json::parse((*planJson)->getBuffer());
    if (!m || !p)
      die("the smoke run's model.json or plan.json is not JSON");
    std::vector<std::string> layouts;
    if (auto *fns = p->getAsObject()->getArray("functions"))
      if (!fns->empty())
        if (auto *a = (*fns)[0].getAsObject()->getArray("arguments"))
          for (const llvm::json::Value &v : *a)
            layouts.push_back(
                v.getAsObject()->getString("layout").value_or("").str());
    llvm::raw_string_ostream os(shapes);
    os << formatv("shard shapes per rank (smoke run, tp={0}; global -> "
                  "local, valid extent of split dimensions on ranks 0..{1}):\n",
                  tp, tp - 1);
    if (auto *buffers = m->getAsObject()->getArray("buffers"))
      for (const llvm::json::Value &v : *buffers) {
        const llvm::json::Object &b = *v.getAsObject();
        StringRef role = b.getString("role").value_or("");
        if (role == "output")
          continue;
        int64_t index = b.getInteger("index").value_or(-1);
        std::vector<int64_t> global, local;
        for (auto &x : *b.getArray("global_shape"))
          global.push_back(*x.getAsInteger());
        for (auto &x : *b.getArray("local_shape"))
          local.push_back(*x.getAsInteger());
        // The plan's layout of this argument: which dimensions are split.
        std::vector<bool> split(global.size(), false);
        if (index >= 0 && size_t(index) < layouts.size()) {
          StringRef l = layouts[index];
          size_t open = l.find('['), close = l.rfind(']');
          SmallVector<StringRef> dims;
          if (open != StringRef::npos && close != StringRef::npos &&
              close > open)
            l.slice(open + 1, close).split(dims, ", ");
          for (size_t d = 0; d < dims.size() && d < split.size(); ++d)
            split[d] = dims[d].contains("\"tp\"");
        }
        bool ok = true;
        std::string valid;
        for (size_t d = 0; d < global.size(); ++d) {
          int64_t expect =
              split[d] ? (global[d] + tp - 1) / tp : global[d];
          ok &= d < local.size() && local[d] == expect;
          if (split[d]) {
            std::vector<int64_t> perRank;
            for (int r = 0; r < tp; ++r)
              perRank.push_back(std::clamp<int64_t>(global[d] - r * expect, 0,
                                                    expect));
            valid += formatv("; dim {0}: {1}", d, degreeList(perRank)).str();
          }
        }
        ok &= local.size() == global.size();
        ++checked;
        if (!ok) {
          ++mismatches;
          if (mismatch.empty())
            mismatch = b.getString("name").value_or("").str();
        }
        auto shape = [](ArrayRef<int64_t> s) {
          return "[" + degreeList(s) + "]";
        };
        os << formatv("  {0,-6} {1,-32} {2} -> {3}{4}{5}\n", role,
                      b.getString("name").value_or(""), shape(global),
                      shape(local), valid.empty() ? "  (replicated)" : valid,
                      ok ? "" : "  MISMATCH with the plan");
      }
  }

  if (rc != 0) {
    std::string last;
    for (StringRef l : lines)
      if (l.starts_with("tp-run: error:") || l.contains("error"))
        last = l.str();
    bool compareFailed = StringRef(last).contains("does not match");
    rows.push_back({smokeName, compareFailed ? "pass" : "FAIL",
                    compareFailed ? formatv("{0} ranks ran", tp).str()
                                  : "tp-run failed: " + last + " (log: " +
                                        log + ")"});
    std::string worst;
    for (StringRef l : lines)
      if (l.starts_with("check:") && l.ends_with("FAIL"))
        worst = l.drop_front(7).str();
    rows.push_back({compareName, compareFailed ? "FAIL" : "skip",
                    compareFailed ? worst : "needs the smoke run"});
    return;
  }
  // The first run's report is the tp=N one (tp=1 follows for --check).
  std::string comm, collectives;
  for (StringRef l : lines) {
    if (l.starts_with("communication:") && comm.empty())
      comm = l.drop_front(15).str();
    if (l.starts_with("collectives:") && collectives.empty())
      collectives = l.drop_front(13).str();
  }
  // "N per step (plan: M)": the runner counted what the plan has.
  StringRef counted = StringRef(collectives).split(' ').first;
  StringRef planned =
      StringRef(collectives).split("(plan: ").second.split(')').first;
  if (counted != planned)
    ++mismatches, mismatch = "collectives " + collectives;
  rows.push_back(
      {smokeName, mismatches ? "FAIL" : "pass",
       mismatches
           ? formatv("{0} mismatch(es) with the plan among {1} inputs and "
                     "params and the collective count (first: {2})",
                     mismatches, checked, mismatch)
                 .str()
           : formatv("{0} ranks ran; local shapes of {1} inputs and params "
                     "match the plan (listed below); collectives {2}; "
                     "measured on the CPU: communication {3}",
                     tp, checked, collectives, comm)
                 .str()});
  // tp-run --check: every output compared; the worst relative error.
  double worstRel = 0, limit = 0;
  int outputs = 0;
  for (StringRef l : lines) {
    if (!l.starts_with("check: output"))
      continue;
    ++outputs;
    size_t at = l.find("relative ");
    double rel = 0, lim = 0;
    if (at != StringRef::npos)
      l.drop_front(at + 9).split(' ').first.getAsDouble(rel);
    at = l.find("(limit ");
    if (at != StringRef::npos)
      l.drop_front(at + 7).split(')').first.getAsDouble(lim);
    if (rel >= worstRel) {
      worstRel = rel;
      limit = lim;
    }
  }
  rows.push_back({compareName, outputs ? "pass" : "FAIL",
                  outputs ? formatv("{0} output(s) on fixed seeds: largest "
                                    "relative error {1:e2} (limit {2:e1})",
                                    outputs, worstRel, limit)
                                .str()
                          : "tp-run printed no comparison"});
}

int runChecklist(ModuleOp module, const tprun::PreflightInputs &in,
                 const GenHeader &h, const Target &target, int tp) {
  std::vector<Row> rows;
  const tp::DeviceProfile &profile = target.profile;
  llvm::outs() << formatv(
      "tp-run: preflight of {0} at tp={1} on {2} ({3} per device, {4} "
      "devices per node){5}\n",
      in.inputFile, tp, profile.name, gb(target.memory),
      profile.devicesPerNode, isTraining() ? ", training" : ", inference");

  // 1. Divisibility.
  bool divisible = true;
  Plan full = plan(module, tp, in.work + "/plans", in.shardOptions);
  if (h.present) {
    std::vector<int64_t> degrees = validDegrees(h, 256);
    for (const Dim &d : kDims) {
      int64_t v = h.get(d.flag);
      if (v <= 0)
        continue;
      std::string check = std::string("divisible: ") + d.name;
      if (v % tp == 0) {
        rows.push_back({check, "pass", formatv("{0} = {1} / tp {2} = {3} "
                                               "per rank",
                                               d.name, v, tp, v / tp)
                                           .str()});
        continue;
      }
      divisible = false;
      rows.push_back(
          {check, "FAIL",
           formatv("{0} = {1} is not divisible by tp = {2} ({1} % {2} = {3}): "
                   "{4}; fix: choose tp among {5} (the degrees dividing "
                   "hidden, heads, kv-heads and ffn)",
                   d.name, v, tp, v % tp, d.why, degreeList(degrees))
               .str()});
    }
    if (int64_t v = h.get("--vocab"); v > 0) {
      int64_t multiple = 128 * int64_t(tp);
      int64_t padded = (v + multiple - 1) / multiple * multiple;
      if (v % tp == 0)
        rows.push_back({"divisible: vocab", "pass",
                        formatv("vocab = {0} / tp {1} = {2} per rank", v, tp,
                                v / tp)
                            .str()});
      else
        rows.push_back(
            {"divisible: vocab", "warn",
             formatv("vocab = {0} is not divisible by tp = {1} ({0} % {1} = "
                     "{2}): the planner pads and masks the vocabulary split; "
                     "fix: pad the vocabulary to a multiple of 128*tp = {3}: "
                     "--vocab {4} ({5} rows more)",
                     v, tp, v % tp, multiple, padded, padded - v)
                 .str()});
    }
  } else {
    // No tp-gen header: the planner's own record of uneven splits.
    int uneven = 0;
    std::string first;
    for (const std::string &r : full.remarks)
      if (StringRef(r).contains("is not divisible by mesh axis")) {
        if (!uneven++)
          first = r;
      }
    rows.push_back(
        {"divisible (from the plan)", uneven ? "warn" : "pass",
         uneven ? formatv("no tp-gen header, so the planner's splits were "
                          "checked: {0} split(s) need padding, e.g. {1}",
                          uneven, first)
                      .str()
                : "no tp-gen header, so the planner's splits were checked: "
                  "every split dimension divides by tp"});
  }

  // 2. The fast-interconnect domain.
  if (tp <= profile.devicesPerNode)
    rows.push_back({"interconnect domain", "pass",
                    formatv("tp = {0} <= {1} devices per node of {2}: the TP "
                            "group stays on {3:f0} GB/s links",
                            tp, profile.devicesPerNode, profile.name,
                            profile.linkBandwidth / 1e9)
                        .str()});
  else
    rows.push_back(
        {"interconnect domain", "FAIL",
         formatv("tp = {0} > {1} devices per node of {2}: the TP group would "
                 "cross the inter-node network, which every layer's "
                 "collectives then wait for; keep tp <= {1} and use data or "
                 "pipeline parallelism across nodes",
                 tp, profile.devicesPerNode, profile.name)
             .str()});

  // 3-4. The smoke run and the comparison with tp = 1.
  std::string shapes;
  if (!divisible) {
    rows.push_back({"smoke run", "skip", "a dimension does not divide"});
    rows.push_back({formatv("tp=1 vs tp={0}", tp).str(), "skip",
                    "a dimension does not divide"});
  } else if (tp > 256) {
    rows.push_back({"smoke run", "skip", "more ranks than the cpu backend "
                                         "starts (256)"});
  } else {
    smokeRun(in, h, tp, rows, shapes);
  }

  // 5. The communication share of a step (the planner's model).
  double share = full.stepSeconds > 0 ? full.commSeconds / full.stepSeconds : 0;
  rows.push_back(
      {"communication share", share > 0.30 ? "warn" : "pass",
       formatv("modelled on {0}: {1:e3} s of {2:e3} s per step = {3:f1}% "
               "({4} collectives){5}",
               profile.name, full.commSeconds, full.stepSeconds, 100 * share,
               full.collectives,
               share > 0.30 ? "; over 30%: look at the interconnect (or more "
                              "tokens per step) before adding devices"
                            : " <= 30%")
           .str()});

  // 6. Peak memory per device.
  double bpp = bytesPerParameter(module);
  Memory m = memoryOf(full, bpp, h);
  double used = m.total() / target.memory;
  std::string parts =
      isTraining()
          ? formatv("weights {0} + gradients {1} + optimizer {2} + "
                    "activations {3}",
                    gb(m.weights), gb(m.grads), gb(m.optimizer),
                    gb(m.activations))
                .str()
          : formatv("weights {0} + peak activations {1}", gb(m.weights),
                    gb(m.activations))
                .str();
  // The planner names the largest activation when the plan does not fit
  // the device's memory; worth repeating when the weights alone fit.
  std::string largest;
  for (const std::string &remark : full.remarks) {
    if (m.weights > target.memory)
      break;
    size_t at = remark.find("the largest activation live at the peak");
    if (at != std::string::npos)
      largest = "; " + remark.substr(at);
  }
  rows.push_back({"peak memory per device",
                  used > 1 ? "FAIL" : used > 0.9 ? "warn" : "pass",
                  formatv("{0} = {1} of {2} ({3:f1}%, {4} B per parameter "
                          "element){5}{6}",
                          parts, gb(m.total()), gb(target.memory), 100 * used,
                          bpp, used > 1 ? largest : "",
                          used > 1 ? "; try --tp auto" : "")
                      .str()});

  printTable(llvm::outs(), rows);
  if (!shapes.empty())
    llvm::outs() << shapes;
  int failures = 0, warnings = 0;
  for (const Row &r : rows) {
    failures += r.result == "FAIL";
    warnings += r.result == "warn";
  }
  llvm::outs() << formatv("preflight: {0} failure{1}, {2} warning{3}\n",
                          failures, failures == 1 ? "" : "s", warnings,
                          warnings == 1 ? "" : "s");
  return failures ? 1 : 0;
}

} // namespace

int tprun::runPreflight(MLIRContext &context, const PreflightInputs &in,
                        int tp) {
  Target target = getTarget();
  GenHeader h = GenHeader::parse(in.source);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(in.source, in.inputFile), SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    die("cannot parse the model");
  std::string dir = in.work + "/plans";
  tprun::makeFolder(dir);
  if (tp == 0) {
    tp = chooseDegree(*module, h, target, dir, in.shardOptions);
    if (!tp)
      return 1;
    if (!preflight)
      return 0;
  }
  return runChecklist(*module, in, h, target, tp);
}
