//===- Simt.cpp - The scheduler of blocks, warps and lanes ----------------===//
//
// See Simt.h for the model. The work of one block:
//
//   repeat
//     for each warp: run it (runWarp) until every lane is blocked at a
//       rendezvous (barrier or warp-synchronous instruction) or exited;
//     complete every warp-synchronous rendezvous whose lanes all arrived
//       (resolveWarpSyncs), or fail naming the lane that cannot arrive;
//     if one did, start over; else every live thread waits at a barrier:
//       release it (resolveBarrier), or fail if they wait at different
//       barriers or some exited while others wait;
//   until every thread exited.
//
// runWarp picks the lowest program counter among the lanes that can run
// and executes that group's instructions until the group changes (a branch
// taken by some lanes, an exit, a rendezvous), then picks again.
//
//===----------------------------------------------------------------------===//

#include "Simt.h"

#include "Exec.h"
#include "Memory.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tprt::emu;

namespace {

uint64_t instructionLimit() {
  static const uint64_t limit = [] {
    const char *env = std::getenv("TPRT_EMU_INSTRUCTION_LIMIT");
    return env && *env ? std::strtoull(env, nullptr, 10) : uint64_t(1) << 36;
  }();
  return limit;
}

std::string threadText(const Launch &L, uint32_t thread) {
  uint32_t bx = L.block[0], by = L.block[1];
  return "(" + std::to_string(thread % bx) + "," +
         std::to_string((thread / bx) % by) + "," +
         std::to_string(thread / (bx * by)) + ")";
}

std::string where(const Launch &L, const Inst &in) {
  std::string text = "line " + std::to_string(in.line);
  if (in.line >= 1 && in.line <= L.module->lines.size())
    text += " `" + L.module->lines[in.line - 1] + "`";
  return text;
}

uint32_t guardMask(Warp &w, const Inst &in, uint32_t mask) {
  if (in.guard < 0)
    return mask;
  const uint64_t *p = w.reg(in.guard);
  uint32_t out = 0;
  forLanes(mask, [&](int l) {
    if ((p[l] != 0) != in.guardNegated)
      out |= 1u << l;
  });
  return out;
}

/// The message of a trap or a failed assert.
std::string trapText(Warp &w, const Inst &in, int lane) {
  if (in.mode != 1)
    return "the kernel executed trap";
  auto text = [&](int32_t reg) -> std::string {
    if (reg < 0)
      return "?";
    uintptr_t p = uintptr_t(w.reg(reg)[lane]);
    Allocation a;
    if (!p || !Registry::instance().containing(p, a))
      return "?";
    const char *s = reinterpret_cast<const char *>(hostAddress(p));
    size_t n = 0;
    while (p + n < a.base + a.bytes && s[n])
      ++n;
    return std::string(s, n);
  };
  std::string message = text(in.s[0]), file = text(in.s[1]);
  uint64_t line = in.s[2] >= 0 ? uint32_t(w.reg(in.s[2])[lane]) : 0;
  return "assertion failed: " + message + " (" + file + ":" +
         std::to_string(line) + ", " + text(in.s[3]) + ")";
}

class BlockRunner {
public:
  explicit BlockRunner(Launch &L)
      : L(L), code(L.kernel->code), limit(instructionLimit()) {}

  void run() {
    for (;;) {
      for (Warp &w : L.warps)
        runWarp(w);
      bool progressed = false;
      for (Warp &w : L.warps)
        progressed |= resolveWarpSyncs(w);
      if (progressed)
        continue;
      if (!resolveBarrier())
        break;
    }
    // cp.async copies never waited for land when the kernel ends.
    if (L.asyncCopies)
      for (Warp &w : L.warps)
        for (int l = 0; l < 32; ++l) {
          for (PendingCopy &c : w.pending[l])
            std::memcpy(c.dst, c.data.data(), c.data.size());
          w.pending[l].clear();
        }
  }

private:
  Launch &L;
  const std::vector<Inst> &code;
  uint64_t limit;

  void runWarp(Warp &w) {
    for (;;) {
      uint32_t running = 0, pcMin = ~0u;
      for (int l = 0; l < 32; ++l)
        if (w.state[l] == LaneState::Running) {
          running |= 1u << l;
          if (w.pc[l] < pcMin)
            pcMin = w.pc[l];
        }
      if (!running)
        return;
      uint32_t mask = 0;
      forLanes(running, [&](int l) {
        if (w.pc[l] == pcMin)
          mask |= 1u << l;
      });
      w.group = mask;
      uint32_t pc = pcMin;
      // Execute the group until it changes.
      for (;;) {
        const Inst &in = code[pc];
        if (++L.instructions > limit)
          fail(w, in, __builtin_ctz(mask),
               "the kernel did not finish within " + std::to_string(limit) +
                   " warp instructions (TPRT_EMU_INSTRUCTION_LIMIT)");
        uint32_t active = guardMask(w, in, mask);
        if (in.flow == Flow::Next) {
          if (active)
            in.run(w, in, active);
          ++pc;
          continue;
        }
        if (in.flow == Flow::Branch) {
          uint32_t target = uint32_t(in.target);
          forLanes(mask, [&](int l) {
            w.pc[l] = (active >> l) & 1 ? target : pc + 1;
          });
          break;
        }
        if (in.flow == Flow::Trap && active)
          fail(w, in, __builtin_ctz(active), trapText(w, in, __builtin_ctz(active)));
        forLanes(mask, [&](int l) {
          bool on = (active >> l) & 1;
          w.pc[l] = on ? pc : pc + 1;
          if (!on)
            return;
          switch (in.flow) {
          case Flow::Exit: w.state[l] = LaneState::Exited; break;
          case Flow::Barrier: w.state[l] = LaneState::AtBarrier; break;
          case Flow::WarpSync: w.state[l] = LaneState::AtWarpSync; break;
          default: break;
          }
        });
        break;
      }
    }
  }

  uint32_t membermask(Warp &w, const Inst &in, int lane) {
    if (in.aligned || in.membermaskOperand < 0)
      return w.exists;
    return uint32_t(w.reg(in.s[int(in.membermaskOperand)])[lane]);
  }

  std::string describeLanes(uint32_t mask) {
    char text[16];
    std::snprintf(text, sizeof(text), "0x%08x", mask);
    return text;
  }

  bool resolveWarpSyncs(Warp &w) {
    bool progressed = false;
    uint32_t waiting = 0;
    for (int l = 0; l < 32; ++l)
      if (w.state[l] == LaneState::AtWarpSync)
        waiting |= 1u << l;
    while (waiting) {
      int l = __builtin_ctz(waiting);
      const Inst &in = code[w.pc[l]];
      uint32_t M = membermask(w, in, l);
      if (!(M & (1u << l)))
        fail(w, in, l,
             "the membermask " + describeLanes(M) +
                 " does not name the executing lane " + std::to_string(l));
      if (M & ~w.exists)
        fail(w, in, l,
             "the membermask " + describeLanes(M) + " names lane " +
                 std::to_string(__builtin_ctz(M & ~w.exists)) +
                 ", which is not a thread of the block (the block has " +
                 std::to_string(L.threads) + " threads)");
      forLanes(M, [&](int j) {
        if (w.state[j] == LaneState::Exited)
          fail(w, in, l,
               "lane " + std::to_string(j) + " of the membermask " +
                   describeLanes(M) +
                   " has exited while this lane waits for it here");
        if (w.state[j] == LaneState::AtBarrier)
          fail(w, in, l,
               "lane " + std::to_string(j) + " of the membermask waits at " +
                   where(L, code[w.pc[j]]) +
                   " instead: divergent lanes at a warp-synchronous "
                   "instruction");
        if (w.pc[j] != w.pc[l])
          fail(w, in, l,
               "lane " + std::to_string(j) + " of the membermask " +
                   describeLanes(M) + " waits at " + where(L, code[w.pc[j]]) +
                   " instead: the lanes of a warp-synchronous instruction "
                   "must reach the same instruction");
        uint32_t other = membermask(w, in, j);
        if (other != M)
          fail(w, in, l,
               "lanes disagree on the membermask: lane " + std::to_string(l) +
                   " passes " + describeLanes(M) + ", lane " +
                   std::to_string(j) + " passes " + describeLanes(other));
      });
      w.group = M;
      in.exchange(w, in, M);
      forLanes(M, [&](int j) {
        w.state[j] = LaneState::Running;
        w.pc[j] += 1;
      });
      waiting &= ~M;
      progressed = true;
    }
    return progressed;
  }

  /// Releases the block's barrier; false when every thread has exited.
  bool resolveBarrier() {
    const Inst *at = nullptr;
    Warp *atWarp = nullptr;
    int atLane = -1;
    Warp *exitedWarp = nullptr;
    int exitedLane = -1;
    uint32_t waitingThreads = 0;
    for (Warp &w : L.warps)
      forLanes(w.exists, [&](int l) {
        if (w.state[l] == LaneState::Exited) {
          if (!exitedWarp) {
            exitedWarp = &w;
            exitedLane = l;
          }
          return;
        }
        const Inst &in = code[w.pc[l]];
        if (w.state[l] != LaneState::AtBarrier)
          fail(w, in, l, "internal error: a lane neither runs nor waits");
        ++waitingThreads;
        if (!at) {
          at = &in;
          atWarp = &w;
          atLane = l;
        } else if (&in != at) {
          fail(w, in, l,
               "threads wait at different barriers: thread " +
                   threadText(L, atWarp->index * 32 + uint32_t(atLane)) +
                   " at " + where(L, *at) + ", this one here");
        }
      });
    if (!at)
      return false;
    if (exitedWarp)
      fail(*exitedWarp, *at, exitedLane,
           "this thread exited while " + std::to_string(waitingThreads) +
               " threads of its block wait at the barrier here (every "
               "thread must reach a bar.sync)");
    if (at->s[1] >= 0) {
      uint32_t count = uint32_t(atWarp->reg(at->s[1])[atLane]);
      uint32_t needed = (L.threads + 31) / 32 * 32;
      if (count != needed && count != L.threads)
        fail(*atWarp, *at, atLane,
             "a barrier for " + std::to_string(count) +
                 " threads in a block of " + std::to_string(L.threads) +
                 " (partial barriers are not supported by the emulator)");
    }
    for (Warp &w : L.warps)
      forLanes(w.exists, [&](int l) {
        if (w.state[l] == LaneState::AtBarrier) {
          w.state[l] = LaneState::Running;
          w.pc[l] += 1;
        }
      });
    return true;
  }
};

bool changesPerBlock(const RegisterInit &init) {
  using Kind = RegisterInit::Kind;
  return init.kind == Kind::CtaidX || init.kind == Kind::CtaidY ||
         init.kind == Kind::CtaidZ || init.kind == Kind::Clock ||
         init.kind == Kind::Clock64 || init.kind == Kind::GlobalTimer;
}

/// Fills `inits` in every lane of `w`.
void fillRegisters(Launch &L, Warp &w, const std::vector<RegisterInit> &inits) {
  for (const RegisterInit &init : inits) {
    using Kind = RegisterInit::Kind;
    uint64_t *r = w.reg(init.reg);
    for (int l = 0; l < 32; ++l) {
      uint32_t t = w.index * 32 + uint32_t(l);
      uint32_t bx = L.block[0], by = L.block[1];
      uint64_t v = 0;
      switch (init.kind) {
      case Kind::Constant: case Kind::SharedBase: case Kind::LocalBase:
        v = init.value; break;
      case Kind::TidX: v = t % bx; break;
      case Kind::TidY: v = (t / bx) % by; break;
      case Kind::TidZ: v = t / (bx * by); break;
      case Kind::NtidX: v = L.block[0]; break;
      case Kind::NtidY: v = L.block[1]; break;
      case Kind::NtidZ: v = L.block[2]; break;
      case Kind::CtaidX: v = L.ctaid[0]; break;
      case Kind::CtaidY: v = L.ctaid[1]; break;
      case Kind::CtaidZ: v = L.ctaid[2]; break;
      case Kind::NctaidX: v = L.grid[0]; break;
      case Kind::NctaidY: v = L.grid[1]; break;
      case Kind::NctaidZ: v = L.grid[2]; break;
      case Kind::LaneId: v = uint32_t(l); break;
      case Kind::WarpId: v = w.index; break;
      case Kind::NwarpId: v = 64; break;
      case Kind::LanemaskEq: v = 1u << l; break;
      case Kind::LanemaskLt: v = (1u << l) - 1; break;
      case Kind::LanemaskLe: v = l == 31 ? 0xffffffffu : (2u << l) - 1; break;
      case Kind::LanemaskGt: v = l == 31 ? 0 : ~((2u << l) - 1); break;
      case Kind::LanemaskGe: v = ~((1u << l) - 1); break;
      case Kind::Clock: case Kind::Clock64: case Kind::GlobalTimer:
        v = L.instructions; break;
      case Kind::SmId: v = 0; break;
      case Kind::NsmId: v = 132; break;
      case Kind::GridId: v = 0; break;
      case Kind::DynamicSmemSize: v = L.dynamicShared; break;
      case Kind::TotalSmemSize: v = L.shared.size(); break;
      }
      r[l] = v;
    }
  }
}

std::string checkConfig(const Kernel &K, const LaunchConfig &c) {
  auto dims = [](const uint32_t *d) {
    return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " +
           std::to_string(d[2]) + ")";
  };
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (c.block[i] == 0 || c.block[i] > DeviceLimits::maxBlockDim[i])
      return "block " + dims(c.block) + " is outside the device's limits " +
             dims(DeviceLimits::maxBlockDim);
    if (c.grid[i] == 0 || c.grid[i] > DeviceLimits::maxGridDim[i])
      return "grid " + dims(c.grid) + " is outside the device's limits " +
             dims(DeviceLimits::maxGridDim);
    threads *= c.block[i];
  }
  if (threads > DeviceLimits::maxThreadsPerBlock)
    return "block " + dims(c.block) + " has " + std::to_string(threads) +
           " threads, more than the device's 1024";
  if (K.maxThreads && threads > K.maxThreads)
    return "block " + dims(c.block) + " has " + std::to_string(threads) +
           " threads, more than the kernel's .maxntid of " +
           std::to_string(K.maxThreads);
  if (K.requiredThreads[0] &&
      (c.block[0] != K.requiredThreads[0] ||
       c.block[1] != (K.requiredThreads[1] ? K.requiredThreads[1] : 1) ||
       c.block[2] != (K.requiredThreads[2] ? K.requiredThreads[2] : 1)))
    return "block " + dims(c.block) + " differs from the kernel's .reqntid";
  if (K.staticShared > DeviceLimits::maxStaticShared)
    return "the kernel declares " + std::to_string(K.staticShared) +
           " bytes of static shared memory, more than 48 KiB";
  uint64_t shared = uint64_t(K.dynamicSharedOffset) + c.dynamicShared;
  if (shared > DeviceLimits::maxSharedPerBlock)
    return std::to_string(shared) + " bytes of shared memory per block, more "
           "than the device's 227 KiB";
  if (c.dynamicShared > 48 * 1024 && c.dynamicShared > c.maxDynamicShared)
    return std::to_string(c.dynamicShared) +
           " bytes of dynamic shared memory without the opt-in "
           "(cuFuncSetAttribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES "
           "allows " + std::to_string(c.maxDynamicShared) + ")";
  if (!K.params.empty() && !c.params)
    return "no kernel parameters were passed (the kernel takes " +
           std::to_string(K.params.size()) + ")";
  return "";
}

std::string hex(uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

} // namespace

void tprt::emu::fail(Warp &w, const Inst &in, int lane, const std::string &what) {
  const Launch &L = *w.launch;
  uint32_t thread = w.index * 32 + uint32_t(lane);
  throw EmuError{"kernel " + L.kernel->name + ": block (" +
                 std::to_string(L.ctaid[0]) + "," + std::to_string(L.ctaid[1]) +
                 "," + std::to_string(L.ctaid[2]) + "), thread " +
                 threadText(L, thread) + ": " + where(L, in) + ": " + what};
}

std::string tprt::emu::runKernel(const Module &module, const Kernel &K,
                                 const LaunchConfig &config, LaunchStats *stats) {
  if (std::string problem = checkConfig(K, config); !problem.empty())
    return "kernel " + K.name + ": " + problem;
  Launch L;
  L.module = &module;
  L.kernel = &K;
  for (int i = 0; i < 3; ++i) {
    L.grid[i] = config.grid[i];
    L.block[i] = config.block[i];
  }
  L.dynamicShared = config.dynamicShared;
  L.threads = config.block[0] * config.block[1] * config.block[2];
  // Parameters, and the pointers among them.
  L.params.assign(K.paramBytes, 0);
  for (size_t i = 0; i < K.params.size(); ++i) {
    const Param &p = K.params[i];
    if (!config.params[i])
      return "kernel " + K.name + ": parameter " + std::to_string(i) + " (" +
             p.name + ") was passed as a null pointer";
    std::memcpy(L.params.data() + p.offset, config.params[i], p.bytes);
    if (p.pointer && p.bytes == 8) {
      uint64_t value;
      std::memcpy(&value, L.params.data() + p.offset, 8);
      Allocation a;
      if (value && !Registry::instance().containing(uintptr_t(value), a))
        return "kernel " + K.name + ": pointer parameter " +
               std::to_string(i) + " (" + p.name + ") is " + hex(value) +
               ", which is not in live device memory: " +
               Registry::instance().explain(uintptr_t(value), 1);
    }
  }
  L.lastBuffer.assign(K.code.size(), {0, 0});
  L.shared.assign(size_t(K.dynamicSharedOffset) + config.dynamicShared, 0);
  L.local.assign(size_t(L.threads) * K.localBytes, 0);
  uint32_t warps = (L.threads + 31) / 32;
  L.warps.resize(warps);
  L.registers.assign(size_t(warps) * size_t(K.registers) * 32, 0);
  for (uint32_t i = 0; i < warps; ++i) {
    Warp &w = L.warps[i];
    w.launch = &L;
    w.index = i;
    w.r = L.registers.data() + size_t(i) * size_t(K.registers) * 32;
    uint32_t lanes = std::min<uint32_t>(32, L.threads - i * 32);
    w.exists = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    fillRegisters(L, w, K.inits);
  }
  for (const RegisterInit &init : K.inits)
    if (changesPerBlock(init))
      L.perBlock.push_back(init);
  try {
    for (uint32_t z = 0; z < L.grid[2]; ++z)
      for (uint32_t y = 0; y < L.grid[1]; ++y)
        for (uint32_t x = 0; x < L.grid[0]; ++x) {
          L.ctaid[0] = x;
          L.ctaid[1] = y;
          L.ctaid[2] = z;
          // Shared and local memory start as garbage on a device: a
          // pattern (all ones: NaN as a float, -1 as an integer) makes a
          // read before a write visible.
          if (!L.shared.empty())
            std::memset(L.shared.data(), 0xff, L.shared.size());
          if (!L.local.empty())
            std::memset(L.local.data(), 0xff, L.local.size());
          for (Warp &w : L.warps) {
            fillRegisters(L, w, L.perBlock);
            for (int l = 0; l < 32; ++l) {
              w.pc[l] = 0;
              w.state[l] = (w.exists >> l) & 1 ? LaneState::Running
                                               : LaneState::Exited;
              w.committed[l] = 0;
            }
            w.carry = 0;
          }
          BlockRunner(L).run();
          if (stats)
            ++stats->blocks;
        }
  } catch (const EmuError &e) {
    if (stats)
      stats->warpInstructions = L.instructions;
    return e.message;
  }
  if (stats)
    stats->warpInstructions = L.instructions;
  return "";
}
