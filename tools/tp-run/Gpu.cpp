//===- Gpu.cpp - tp-run --backend cuda|cuda-shared|cuda-emu ---------------===//
//
// See Gpu.h. tp-run.cpp keeps the flow (shard, describe, lower, link, run,
// compare); this file supplies the GPU variants of the lowering, the link
// line and the launch. cuda-emu compiles exactly as cuda does and launches
// the same way (tp-runner --backend nccl, --nproc N), with the emulator's
// libcuda.so.1, libnccl.so.2 and libcublas.so.13 (build folder lib/mock-*)
// first on LD_LIBRARY_PATH.
//
//===----------------------------------------------------------------------===//

#include "Gpu.h"

#include "tp/Conversion/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace mlir;
namespace cl = llvm::cl;

namespace tprun {

cl::OptionCategory &gpuCategory() {
  static cl::OptionCategory category("tp-run GPU options (--backend cuda)");
  return category;
}

namespace {

cl::opt<std::string> chip("chip",
                          cl::desc("GPU of --backend cuda: sm_<NN>, e.g. "
                                   "sm_90 (H100/H200), sm_80 (A100)"),
                          cl::init("sm_90"), cl::cat(gpuCategory()));
cl::opt<std::string>
    gpuFormat("gpu-format",
              cl::desc("Embedded kernels: isa (PTX, JIT-compiled by the "
                       "driver), bin (cubin), fatbin (cubin + PTX); default: "
                       "fatbin when ptxas is found, else isa"),
              cl::init(""), cl::cat(gpuCategory()));
cl::opt<bool> compileOnlyFlag(
    "compile-only",
    cl::desc("Compile the models into --work-dir (tpN/, and tp1/ for the "
             "CPU reference with --check) and stop: nothing runs"),
    cl::cat(gpuCategory()));
cl::opt<std::string> lowerGpuOptions(
    "lower-gpu-options",
    cl::desc("More tp-lower-gpu options, spelled as in "
             "--tp-lower-gpu=\"...\", applied after --chip and --gpu-format "
             "(e.g. \"fuse-attention=false\": attention as two GEMMs "
             "around the materialised scores)"),
    cl::init(""), cl::cat(gpuCategory()));

} // namespace

bool compileOnly() { return compileOnlyFlag; }

bool parseTarget(llvm::StringRef name, Target &target) {
  if (name == "cpu")
    target = Target::Cpu;
  else if (name == "cuda" || name == "nccl")
    target = Target::Cuda;
  else if (name == "cuda-shared")
    target = Target::CudaShared;
  else if (name == "cuda-emu")
    target = Target::CudaEmu;
  else
    return false;
  return true;
}

void registerGpu(DialectRegistry &registry) {
  tp::registerGPUTranslations(registry);
}

bool buildGpuLowering(OpPassManager &pm, std::string &error) {
  tp::LowerGPUOptions options;
  options.chip = chip;
  options.format = gpuFormat;
  if (!lowerGpuOptions.empty()) {
    if (failed(options.parseFromString(lowerGpuOptions))) {
      error = "--lower-gpu-options '" + lowerGpuOptions +
              "': not tp-lower-gpu options (see tp-opt --help, "
              "--tp-lower-gpu)";
      return false;
    }
    if (!options.stopAfter.empty()) {
      error = "--lower-gpu-options '" + lowerGpuOptions +
              "': stop-after would stop before model.so (tp-run needs the "
              "whole pipeline; use tp-opt to inspect)";
      return false;
    }
  }
  if (failed(tp::checkLowerGPUOptions(options, error))) {
    error = "--chip " + chip + " --gpu-format '" + gpuFormat + "'" +
            (lowerGpuOptions.empty() ? ""
                                     : " --lower-gpu-options '" +
                                           lowerGpuOptions + "'") +
            ": " + error;
    return false;
  }
  tp::buildLowerGPUPipeline(pm, options);
  return true;
}

std::string gpuLibraryDir(llvm::StringRef binDir, std::string &error) {
  llvm::SmallString<256> dir(binDir);
  llvm::sys::path::append(dir, "..", "lib");
  llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
  for (const char *name : {"libtprt.so", "libtprt_cuda.so"}) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    if (!llvm::sys::fs::exists(path)) {
      error = ("the GPU runtime " + llvm::Twine(name) + " is not in " + dir +
               " (build tp-opt with the CUDA toolkit, NCCL and "
               "TP_ENABLE_CUDA=AUTO or ON)")
                  .str();
      return "";
    }
  }
  return std::string(dir);
}

std::vector<std::string> gpuLinkArgs(llvm::StringRef libraryDir) {
  return {"-L" + libraryDir.str(), "-ltprt_cuda", "-ltprt", "-lm",
          "-Wl,-rpath," + libraryDir.str()};
}

const char *runnerBackend(Target target) {
  return target == Target::CudaShared ? "cuda-shared" : "nccl";
}

bool gpuLaunch(Target target, int devices, llvm::StringRef runner,
               const std::vector<std::string> &runnerArgs,
               llvm::StringRef mpirunPath, llvm::StringRef libraryDir,
               int timeoutSeconds, GpuLaunch &launch, std::string &error) {
  launch = GpuLaunch();
  std::vector<std::string> args = runnerArgs;
  args.push_back("--backend");
  args.push_back(runnerBackend(target));
  if (target == Target::CudaEmu) {
    // The emulated libraries, found next to libtprt_cuda.so.
    llvm::SmallString<256> lib(libraryDir);
    std::string path;
    for (const char *folder : {"mock-cuda", "mock-nccl", "mock-cublas",
                               "mock-cublaslt"}) {
      llvm::SmallString<256> dir(lib);
      llvm::sys::path::append(dir, folder);
      if (!llvm::sys::fs::is_directory(dir)) {
        error = ("--backend cuda-emu: the emulated CUDA libraries are not in " +
                 dir + " (a build with TP_ENABLE_CUDA makes them)")
                    .str();
        return false;
      }
      path += (path.empty() ? "" : ":") + std::string(dir);
    }
    if (const char *old = std::getenv("LD_LIBRARY_PATH"); old && *old)
      path += ":" + std::string(old);
    launch.environment.push_back("LD_LIBRARY_PATH=" + path);
    launch.environment.push_back("MOCK_CUDA_DEVICES=" + std::to_string(devices));
    if (!std::getenv("MOCK_CUDA_MEMORY"))
      launch.environment.push_back("MOCK_CUDA_MEMORY=" +
                                   std::to_string(uint64_t(64) << 30));
  }
  if (devices == 1) {
    launch.program = runner.str();
    launch.args = std::move(args);
    return true;
  }
  if (target == Target::Cuda || target == Target::CudaEmu) {
    // One GPU per rank; tp-runner starts the ranks torchrun-style and the
    // nccl backend meets at MASTER_ADDR:MASTER_PORT (docs/gpu.md).
    launch.program = runner.str();
    launch.args = std::move(args);
    launch.args.push_back("--nproc");
    launch.args.push_back(std::to_string(devices));
    if (timeoutSeconds > 0) {
      launch.args.push_back("--timeout");
      launch.args.push_back(std::to_string(timeoutSeconds));
    }
    return true;
  }
  // cuda-shared stages its collectives through MPI.
  if (mpirunPath.empty()) {
    error = "--backend cuda-shared with more than one rank needs mpirun";
    return false;
  }
  launch.program = mpirunPath.str();
  launch.args = {"--oversubscribe", "--mca", "btl", "self,vader", "--mca",
                 "pml", "ob1", "-np", std::to_string(devices), runner.str()};
  launch.args.insert(launch.args.end(), args.begin(), args.end());
  launch.mpirun = true;
  return true;
}

} // namespace tprun
