//===- Memory.h - What "device memory" is live, for the emulator's checks -===//
//
// The emulated driver keeps device memory in host mappings (Driver.cpp),
// addressed through tagged, non-canonical pointers (kDeviceTag below);
// this registry records every live allocation with its requested size
// (not the page-rounded mapping), and the most recently freed ones, so
// that a kernel's access, a GEMM operand or a copy can be checked against
// the buffer it falls in: past the end of a buffer, between buffers, in a
// freed buffer (a use after free). Module globals (`.global` variables of
// loaded PTX) and managed memory are registered too.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_EMU_MEMORY_H
#define TPRT_EMU_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

namespace tprt::emu {

/// Device memory lives at non-canonical addresses: a device pointer is the
/// host address of its mapping plus this tag, so that host code that
/// dereferences one faults (SIGSEGV) at no cost, while the emulator, the
/// driver's copies and the emulated libraries translate it (hostAddress).
constexpr uintptr_t kDeviceTag = uintptr_t(1) << 62;

/// The host address behind a device address (others are host addresses).
inline uintptr_t hostAddress(uintptr_t address) {
  return address >= kDeviceTag && address - kDeviceTag < (uintptr_t(1) << 48)
             ? address - kDeviceTag
             : address;
}

struct Allocation {
  uintptr_t base = 0;
  size_t bytes = 0;
  /// "device", "managed", "module global NAME".
  std::string kind;
};

class Registry {
public:
  static Registry &instance();

  void add(uintptr_t base, size_t bytes, std::string kind);
  /// Forgets a live allocation (remembered as freed); false if unknown.
  bool remove(uintptr_t base);

  /// The live allocation holding [address, address + bytes), if any.
  bool find(uintptr_t address, size_t bytes, Allocation &out);
  /// The live allocation holding `address` (the access may run past it).
  bool containing(uintptr_t address, Allocation &out);
  /// A freed allocation that held `address`.
  bool freed(uintptr_t address, Allocation &out);
  /// The live allocations nearest below and above `address`.
  void neighbours(uintptr_t address, Allocation &below, Allocation &above);

  /// Explains why [address, address + bytes) is not in one live buffer:
  /// "N bytes past the end of the device buffer of M bytes at 0x...",
  /// "in a device buffer of M bytes freed before", ...
  std::string explain(uintptr_t address, size_t bytes);

  /// Calls f(base, bytes) for every live allocation (under the lock).
  template <class F> void forEach(F f) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &entry : live)
      f(entry.second.base, entry.second.bytes);
  }

private:
  std::mutex mutex;
  std::map<uintptr_t, Allocation> live;
  std::deque<Allocation> recentlyFreed; // newest first, bounded
};

} // namespace tprt::emu

#endif // TPRT_EMU_MEMORY_H
