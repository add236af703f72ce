//===- Gpu.h - tp-run --backend cuda|cuda-shared ----------------*- C++ -*-===//
//
// The GPU side of tp-run (docs/gpu.md): the model is lowered with
// `tp-lower-gpu` (tp::buildLowerGPUPipeline) instead of `tp-lower-cpu`, its
// kernels embedded in model.so, which links libtprt_cuda and libtprt; the
// ranks run tp-runner on the nccl backend (one GPU per rank, started by
// `tp-runner --nproc N`) or on cuda-shared (ranks that share one GPU,
// collectives staged through host memory over MPI, started by mpirun).
// `--check` compares with the unsharded program compiled for the CPU.
//
// `--compile-only` stops after compiling (the models can be carried to a
// GPU machine without LLVM, scripts/gpu-check.sh).
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUN_GPU_H
#define TP_RUN_GPU_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>
#include <vector>

namespace tprun {

/// The options of this file (--chip, --gpu-format, --compile-only).
llvm::cl::OptionCategory &gpuCategory();

/// tp-run's --backend values.
/// cpu: ranks are processes; cuda: one GPU per rank (NCCL); cuda-shared:
/// ranks share one GPU; cuda-emu: the cuda build, run on CPU ranks by the
/// emulated driver, cuBLAS and NCCL (docs/gpu.md, "The emulator").
enum class Target { Cpu, Cuda, CudaShared, CudaEmu };

/// Parses --backend ("cpu", "cuda" or "nccl", "cuda-shared"); false if it is
/// none of them.
bool parseTarget(llvm::StringRef name, Target &target);
inline bool isGpu(Target target) { return target != Target::Cpu; }

/// --compile-only: compile (and with --check the CPU reference), then stop.
bool compileOnly();

/// Registers what translating tp-lower-gpu's output needs.
void registerGpu(mlir::DialectRegistry &registry);

/// Adds tp-lower-gpu with --chip and --gpu-format; false with `error` set
/// for bad options.
bool buildGpuLowering(mlir::OpPassManager &pm, std::string &error);

/// The folder of libtprt.so and libtprt_cuda.so for a tp-run in `binDir`
/// (its ../lib); empty with `error` set when libtprt_cuda.so is not there
/// (a build without TP_ENABLE_CUDA).
std::string gpuLibraryDir(llvm::StringRef binDir, std::string &error);

/// The clang arguments after the sources that link a GPU model.so: the
/// runtime libraries (-ltprt_cuda -ltprt) with an rpath to their folder,
/// and libm. No MLIR runner utilities: model.so must load where there is
/// no LLVM.
std::vector<std::string> gpuLinkArgs(llvm::StringRef libraryDir);

/// The runtime backend tp-runner gets: "nccl" or "cuda-shared".
const char *runnerBackend(Target target);

/// How the ranks are started: the program, its arguments and whether it is
/// mpirun (the caller adds the root permissions Open MPI wants).
struct GpuLaunch {
  std::string program;
  std::vector<std::string> args;
  bool mpirun = false;
  /// Variables to add to the environment of the launch (cuda-emu: the
  /// emulated libraries first on LD_LIBRARY_PATH, one device per rank).
  std::vector<std::string> environment;
};

/// The launch of `devices` ranks of `runner` with `runnerArgs`: nccl runs
/// one rank directly, or `tp-runner --nproc N`; cuda-shared runs one rank
/// directly, or `mpirun -np N` (`mpirunPath`, empty when absent: then an
/// error in `error`).
bool gpuLaunch(Target target, int devices, llvm::StringRef runner,
               const std::vector<std::string> &runnerArgs,
               llvm::StringRef mpirunPath, llvm::StringRef libraryDir,
               int timeoutSeconds, GpuLaunch &launch, std::string &error);

} // namespace tprun

#endif // TP_RUN_GPU_H
