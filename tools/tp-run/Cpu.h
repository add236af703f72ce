//===- Cpu.h - tp-run's CPU target: --cpu, --threads-per-rank --*- C++ -*-===//
//
// The machine a CPU model.so is compiled for, and the threads of its ranks
// (docs/passes/lower-cpu.md, "The instruction set").
//
// --cpu NAME (default native) is clang's -march: `native` is the CPU tp-run
// runs on, which is where tp-run runs the model it compiles; a model meant
// for other machines names their CPU or a level (x86-64-v3: AVX2 and FMA,
// x86-64-v4: AVX-512). The generated entry point (the glue) is compiled for
// the x86-64 baseline and first checks, with __builtin_cpu_supports, that
// the CPU running it has every vector feature the target enables that
// compiled code can use: on a CPU that lacks one, tp_model_run prints which
// and returns 3 instead of dying of an illegal instruction.
//
// --threads-per-rank N sets TPRT_THREADS for the ranks: the BLAS threads of
// each rank (default 1; docs/runtime.md, "The host BLAS").
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUN_CPU_H
#define TP_RUN_CPU_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>
#include <vector>

namespace tprun {

/// The options of this file (--cpu, --threads-per-rank).
llvm::cl::OptionCategory &cpuCategory();

/// The target of --cpu: its name for clang and the features to check.
struct CpuTarget {
  std::string march;                 // clang's -march value
  std::string cpu;                   // the CPU LLVM resolves it to
  std::vector<std::string> features; // checked by the glue (x86 only)
};

/// Resolves --cpu against LLVM's backend of the host's architecture; false
/// with `error` set for a name it does not know.
bool resolveCpuTarget(CpuTarget &target, std::string &error);

/// Applies --threads-per-rank (TPRT_THREADS in the environment the ranks
/// inherit); false with `error` set when it is not a positive number.
bool applyThreads(std::string &error);

/// C code that goes before the glue's entry point: TP_MODEL_RUN_ATTRIBUTES
/// (the baseline target for the entry point) and TP_CPU_CHECK(), a
/// statement that returns 3 from the entry point on a CPU without the
/// target's features. `target` null: both empty (the GPU build).
std::string cpuGluePrelude(const CpuTarget *target);

} // namespace tprun

#endif // TP_RUN_CPU_H
