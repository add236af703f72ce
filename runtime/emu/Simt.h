//===- Simt.h - Running a decoded kernel with CUDA's semantics --*- C++ -*-===//
//
// The emulator's execution model (docs/gpu.md, "The emulator"):
//
//  - A launch runs its blocks one after the other; nothing in CUDA lets
//    blocks of one grid wait for each other, so any order is a valid one.
//  - A block's threads are warps of 32 lanes. Each lane has its own
//    program counter (independent thread scheduling, as on sm_70 and
//    later). A warp executes the lanes that share the lowest program
//    counter together, one instruction for all of them, until they branch
//    apart, exit, or reach a synchronising instruction; then it picks the
//    lowest program counter again. Lanes that branched apart run
//    separately and meet again where their paths join.
//  - bar.sync is a rendezvous of the block: every thread that has not
//    exited must reach the same barrier instruction, and no thread may
//    exit while others wait at one.
//  - shfl.sync, vote.sync, bar.warp.sync, redux.sync, match.sync and the
//    `.aligned` tensor-core instructions are rendezvous of the lanes they
//    name: every named lane must reach the same instruction with the same
//    membermask (and the same width, for shfl), and none may have exited.
//  - Every load and store is checked (OpsMemory.cpp).
//
// A violation stops the launch with a message naming the kernel, the
// block, the thread, the PTX line and what went wrong.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_EMU_SIMT_H
#define TPRT_EMU_SIMT_H

#include "Ptx.h"

#include <cstdint>
#include <string>

namespace tprt::emu {

struct LaunchConfig {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamicShared = 0;
  /// cuLaunchKernel's kernelParams: one pointer per parameter.
  void **params = nullptr;
  /// The opt-in maximum of dynamic shared memory
  /// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 0 if never set.
  uint32_t maxDynamicShared = 0;
};

/// The limits of the emulated device (an H100/H200, sm_90).
struct DeviceLimits {
  static constexpr uint32_t maxThreadsPerBlock = 1024;
  static constexpr uint32_t maxBlockDim[3] = {1024, 1024, 64};
  static constexpr uint32_t maxGridDim[3] = {2147483647u, 65535, 65535};
  static constexpr uint32_t maxStaticShared = 48 * 1024;
  static constexpr uint32_t maxSharedPerBlock = 227 * 1024;
  static constexpr uint32_t registersPerSM = 65536;
};

struct LaunchStats {
  uint64_t warpInstructions = 0;
  uint64_t blocks = 0;
};

/// Runs `kernel` of `module`; returns the empty string on success, else
/// the error.
std::string runKernel(const Module &module, const Kernel &kernel,
                      const LaunchConfig &config, LaunchStats *stats = nullptr);

} // namespace tprt::emu

#endif // TPRT_EMU_SIMT_H
