//===- Exec.h - The state of a running launch, for instruction handlers ---===//
//
// A launch runs its blocks one after the other (Simt.cpp). Within a block,
// every warp has 32 lanes with a register file of `Kernel::registers`
// 64-bit registers each, stored register-major (`r[reg * 32 + lane]`), so
// that a handler walks the lanes of one register contiguously. Handlers
// read and write registers through the helpers below, reach memory through
// `access()` (which checks every byte against the space it addresses), and
// report a violation with `fail()`, which throws: the launch stops at the
// first error, and the driver call that ran it returns it.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_EMU_EXEC_H
#define TPRT_EMU_EXEC_H

#include "Ptx.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tprt::emu {

/// A violation, with its full message (kernel, block, thread, line).
struct EmuError {
  std::string message;
};

enum class LaneState : uint8_t { Running, AtBarrier, AtWarpSync, Exited };

/// An asynchronous copy (cp.async) waiting for its group's wait.
struct PendingCopy {
  uint8_t *dst;
  uint64_t sharedOffset;
  std::vector<uint8_t> data;
  uint32_t group;
};

struct Launch;

struct Warp {
  Launch *launch = nullptr;
  uint64_t *r = nullptr;
  uint32_t index = 0;  // warp in its block
  uint32_t exists = 0; // lanes that are threads of the block
  uint32_t carry = 0;  // the carry flag, one bit per lane
  uint32_t pc[32];
  LaneState state[32];
  /// The lanes executing together (activemask).
  uint32_t group = 0;
  /// cp.async: copies not yet waited for, and each lane's committed groups.
  std::vector<PendingCopy> pending[32];
  uint32_t committed[32];

  uint64_t *reg(int32_t index) { return r + size_t(index) * 32; }
};

struct Launch {
  const Module *module = nullptr;
  const Kernel *kernel = nullptr;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t ctaid[3] = {0, 0, 0};
  uint32_t dynamicShared = 0;
  uint32_t threads = 0; // per block
  std::vector<uint8_t> params;
  std::vector<uint8_t> shared;
  std::vector<uint8_t> local; // threads * kernel->localBytes
  std::vector<Warp> warps;
  std::vector<uint64_t> registers;
  /// Per instruction, the device buffer its last global access fell in
  /// (an instruction mostly reads or writes one buffer), in device
  /// addresses: [base, end).
  std::vector<std::pair<uintptr_t, uintptr_t>> lastBuffer;
  /// A cp.async is pending somewhere (the block's end must land it).
  bool asyncCopies = false;
  uint64_t instructions = 0;
  /// The registers each block refills (ctaid, clocks).
  std::vector<RegisterInit> perBlock;
};

/// Throws an EmuError naming the kernel, the block, the thread of `lane`,
/// the instruction and `what`.
[[noreturn]] void fail(Warp &warp, const Inst &inst, int lane,
                       const std::string &what);

/// The host address of `bytes` bytes at `address` of `space`, for `lane`;
/// fails (throws) unless the whole range lies in one buffer of that space
/// and is aligned to `align` bytes (a power of two).
uint8_t *accessSlow(Warp &warp, const Inst &inst, int lane, Space space,
                    uint64_t address, size_t bytes, size_t align, bool write);

/// accessSlow, with the common case inline: an aligned access to a device
/// buffer among the launch's recently used ones.
inline uint8_t *access(Warp &warp, const Inst &inst, int lane, Space space,
                       uint64_t address, size_t bytes, size_t align,
                       bool write) {
  constexpr uintptr_t tag = uintptr_t(1) << 62; // Memory.h's kDeviceTag
  if ((space == Space::Global || space == Space::Generic) &&
      address >= tag && !(address & (align - 1))) {
    const auto &last = warp.launch->lastBuffer[inst.index];
    if (address >= last.first && address + bytes <= last.second)
      return reinterpret_cast<uint8_t *>(uintptr_t(address) - tag);
  } else if (space == Space::Param && !write &&
             address + bytes <= warp.launch->params.size() &&
             !(address & (align - 1))) {
    return warp.launch->params.data() + address;
  }
  return accessSlow(warp, inst, lane, space, address, bytes, align, write);
}

/// Calls f(lane) for each lane set in `mask`.
template <class F> inline void forLanes(uint32_t mask, F f) {
  if (mask == 0xffffffffu) {
    for (int lane = 0; lane < 32; ++lane)
      f(lane);
    return;
  }
  while (mask) {
    int lane = __builtin_ctz(mask);
    mask &= mask - 1;
    f(lane);
  }
}

/// setp's combination with its predicate operand c (BoolOp: 0 none, 1
/// and, 2 or, 3 xor).
template <int BoolOp> inline bool combinePredicate(bool v, bool c) {
  switch (BoolOp) {
  case 1: return v && c;
  case 2: return v || c;
  case 3: return v != c;
  default: return v;
  }
}

/// Bit patterns in 64-bit registers.
template <class T> inline T get(uint64_t bits) {
  if constexpr (sizeof(T) == 8) {
    T v;
    std::memcpy(&v, &bits, 8);
    return v;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t low = uint32_t(bits);
    T v;
    std::memcpy(&v, &low, 4);
    return v;
  } else if constexpr (sizeof(T) == 2) {
    uint16_t low = uint16_t(bits);
    T v;
    std::memcpy(&v, &low, 2);
    return v;
  } else {
    uint8_t low = uint8_t(bits);
    T v;
    std::memcpy(&v, &low, 1);
    return v;
  }
}

template <class T> inline uint64_t put(T value) {
  if constexpr (sizeof(T) == 8) {
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    return bits;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    return bits;
  } else if constexpr (sizeof(T) == 2) {
    uint16_t bits;
    std::memcpy(&bits, &value, 2);
    return bits;
  } else {
    uint8_t bits;
    std::memcpy(&bits, &value, 1);
    return bits;
  }
}

/// The 16-bit float formats, as bit patterns; arithmetic converts to f32.
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};

float toFloat(Half h);
float toFloat(BFloat b);
/// Round to nearest even (the `.rn` conversions).
Half toHalf(float f);
BFloat toBFloat(float f);
/// From f64 with one rounding.
Half toHalf(double d);
BFloat toBFloat(double d);

} // namespace tprt::emu

#endif // TPRT_EMU_EXEC_H
