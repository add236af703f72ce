//===- Cpu.cpp - tp-run's CPU target: --cpu, --threads-per-rank -------===//
//
// See Cpu.h. The features checked are those LLVM may use on its own in
// compiled loops (vector extensions and the scalar extensions of the same
// generations); what the target enables of them is read off LLVM's
// MCSubtargetInfo for --cpu, or the host's CPU and features for native, as
// clang's -march=native reads them.
//
//===----------------------------------------------------------------------===//

#include "Cpu.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <memory>

namespace cl = llvm::cl;

namespace tprun {

cl::OptionCategory &cpuCategory() {
  static cl::OptionCategory category("tp-run CPU options (--backend cpu)");
  return category;
}

namespace {

cl::opt<std::string> cpuOption(
    "cpu",
    cl::desc("The CPU model.so is compiled for (clang's -march): native (the "
             "machine tp-run runs on, default), a level (x86-64-v3: AVX2, "
             "x86-64-v4: AVX-512) or a CPU (sapphirerapids, znver4, ...) "
             "for a model run elsewhere"),
    cl::init("native"), cl::cat(cpuCategory()));
cl::opt<std::string> threadsOption(
    "threads-per-rank",
    cl::desc("BLAS threads per rank (TPRT_THREADS; default 1: the ranks fill "
             "the cores)"),
    cl::init(""), cl::cat(cpuCategory()));

/// x86 features compiled code may use without intrinsics, as LLVM and
/// __builtin_cpu_supports name them.
const char *const kCheckedFeatures[] = {
    "sse3",       "ssse3",       "sse4.1",       "sse4.2",
    "sse4a",      "popcnt",      "avx",          "avx2",
    "fma",        "fma4",        "xop",          "f16c",
    "bmi",        "bmi2",        "lzcnt",        "movbe",
    "avx512f",    "avx512bw",    "avx512dq",     "avx512vl",
    "avx512cd",   "avx512bf16",  "avx512fp16",   "avx512vnni",
    "avx512vbmi", "avx512vbmi2", "avx512bitalg", "avx512vpopcntdq",
    "avx512ifma", "gfni",        "vpclmulqdq",   "avxvnni"};

} // namespace

bool resolveCpuTarget(CpuTarget &target, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string lookupError;
  const llvm::Target *backend =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!backend) {
    error = "this LLVM has no backend for " + triple.str() + ": " + lookupError;
    return false;
  }
  bool native = cpuOption == "native";
  std::string cpu =
      native ? llvm::sys::getHostCPUName().str() : std::string(cpuOption);
  std::string features;
  if (native)
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += (feature.second ? "+" : "-") + feature.first().str() + ",";
  std::unique_ptr<llvm::MCSubtargetInfo> generic(
      backend->createMCSubtargetInfo(triple, "", ""));
  if (!generic || (!native && !generic->isCPUStringValid(cpu))) {
    error = llvm::formatv("--cpu {0} is not a CPU LLVM's {1} backend knows "
                          "(native, x86-64-v3, x86-64-v4, sapphirerapids, "
                          "znver4, ... on x86-64)",
                          cpu, triple.getArchName())
                .str();
    return false;
  }
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      backend->createMCSubtargetInfo(triple, cpu, features));
  target.march = cpuOption;
  target.cpu = cpu;
  target.features.clear();
  if (triple.isX86())
    for (const char *feature : kCheckedFeatures)
      if (subtarget->checkFeatures(std::string("+") + feature))
        target.features.push_back(feature);
  return true;
}

bool applyThreads(std::string &error) {
  if (threadsOption.empty())
    return true;
  int threads = 0;
  if (llvm::StringRef(threadsOption).getAsInteger(10, threads) || threads < 1 ||
      threads > 4096) {
    error = "--threads-per-rank " + threadsOption +
            " is not a number of threads from 1 to 4096";
    return false;
  }
  setenv("TPRT_THREADS", std::to_string(threads).c_str(), 1);
  return true;
}

std::string cpuGluePrelude(const CpuTarget *target) {
  std::string none = "#define TP_MODEL_RUN_ATTRIBUTES\n"
                     "#define TP_CPU_CHECK() do { } while (0)\n";
  if (!target || target->features.empty())
    return none;
  // The entry point and its check in baseline x86-64 code, whatever
  // -march says: nothing runs an instruction the CPU may lack before the
  // check has passed.
  std::string code =
      "#include <stdio.h>\n"
      "#define TP_MODEL_RUN_ATTRIBUTES __attribute__((target(\"arch=x86-64,"
      "no-sse3,no-popcnt,no-bmi,no-bmi2,no-lzcnt,no-movbe\")))\n"
      "/* model.so was compiled for --cpu " +
      target->march + " (" + target->cpu +
      "); its features that compiled code may use: */\n"
      "TP_MODEL_RUN_ATTRIBUTES static int tp_cpu_check(void) {\n"
      "  static int checked = 0;\n"
      "  if (checked)\n"
      "    return 1;\n"
      "  __builtin_cpu_init();\n"
      "  int missing = 0;\n";
  for (const std::string &feature : target->features)
    code += "  if (!__builtin_cpu_supports(\"" + feature +
            "\"))\n"
            "    fprintf(stderr, \"%s" +
            feature +
            "\", missing++ ? \", \" : \"model.so: this CPU lacks \");\n";
  code += "  if (missing) {\n"
          "    fprintf(stderr, \", which model.so was compiled for (tp-run "
          "--cpu " +
          target->march + ": " + target->cpu +
          "); compile the model again with a --cpu this CPU has (--cpu "
          "native on this machine, or a level such as x86-64-v3)\\n\");\n"
          "    return 0;\n"
          "  }\n"
          "  checked = 1;\n"
          "  return 1;\n"
          "}\n"
          "#define TP_CPU_CHECK() do { if (!tp_cpu_check()) return 3; } "
          "while (0)\n";
  return "#if defined(__x86_64__)\n" + code + "#else\n" + none + "#endif\n";
}

} // namespace tprun
