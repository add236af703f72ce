//===- Memory.cpp - The registry of live emulated device memory -----------===//
//
// See Memory.h.
//
//===----------------------------------------------------------------------===//

#include "Memory.h"

#include <cstdio>

using namespace tprt::emu;

namespace {

constexpr size_t kFreedRemembered = 4096;

std::string hex(uintptr_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

std::string describe(const Allocation &a) {
  return "the " + a.kind + " buffer of " + std::to_string(a.bytes) +
         " bytes at " + hex(a.base);
}

/// "offset 1024, element 256 of 256" for accesses of `bytes` bytes.
std::string position(const Allocation &a, uintptr_t address, size_t bytes) {
  if (address < a.base)
    return "offset -" + std::to_string(a.base - address);
  size_t offset = address - a.base;
  std::string text = "offset " + std::to_string(offset);
  if (bytes && offset % bytes == 0 && a.bytes % bytes == 0)
    text += ", element " + std::to_string(offset / bytes) + " of " +
            std::to_string(a.bytes / bytes);
  return text;
}

} // namespace

Registry &Registry::instance() {
  static Registry *registry = new Registry(); // outlives static destructors
  return *registry;
}

void Registry::add(uintptr_t base, size_t bytes, std::string kind) {
  std::lock_guard<std::mutex> lock(mutex);
  live[base] = Allocation{base, bytes, std::move(kind)};
}

bool Registry::remove(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live.find(base);
  if (it == live.end())
    return false;
  recentlyFreed.push_front(it->second);
  if (recentlyFreed.size() > kFreedRemembered)
    recentlyFreed.pop_back();
  live.erase(it);
  return true;
}

bool Registry::find(uintptr_t address, size_t bytes, Allocation &out) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live.upper_bound(address);
  if (it == live.begin())
    return false;
  --it;
  const Allocation &a = it->second;
  if (address < a.base || address + bytes > a.base + a.bytes ||
      address + bytes < address)
    return false;
  out = a;
  return true;
}

bool Registry::containing(uintptr_t address, Allocation &out) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live.upper_bound(address);
  if (it == live.begin())
    return false;
  --it;
  if (address >= it->second.base + it->second.bytes)
    return false;
  out = it->second;
  return true;
}

bool Registry::freed(uintptr_t address, Allocation &out) {
  std::lock_guard<std::mutex> lock(mutex);
  for (const Allocation &a : recentlyFreed)
    if (address >= a.base && address < a.base + (a.bytes ? a.bytes : 1)) {
      out = a;
      return true;
    }
  return false;
}

void Registry::neighbours(uintptr_t address, Allocation &below,
                          Allocation &above) {
  std::lock_guard<std::mutex> lock(mutex);
  below = above = Allocation();
  auto it = live.upper_bound(address);
  if (it != live.end())
    above = it->second;
  if (it != live.begin())
    below = std::prev(it)->second;
}

std::string Registry::explain(uintptr_t address, size_t bytes) {
  Allocation a;
  if (containing(address, a)) {
    size_t past = address + bytes - (a.base + a.bytes);
    return "it runs " + std::to_string(past) + " bytes past the end of " +
           describe(a) + " (" + position(a, address, bytes) + ")";
  }
  if (freed(address, a))
    return "it is in " + describe(a) + ", which was freed (a use after free, " +
           position(a, address, bytes) + ")";
  Allocation below, above;
  neighbours(address, below, above);
  if (below.bytes && address >= below.base + below.bytes &&
      address - (below.base + below.bytes) < (size_t(1) << 20))
    return "it is " + std::to_string(address - (below.base + below.bytes)) +
           " bytes past the end of " + describe(below) + " (" +
           position(below, address, bytes) + ")";
  if (above.bytes && above.base > address &&
      above.base - address < (size_t(1) << 20))
    return "it is " + std::to_string(above.base - address) +
           " bytes before the start of " + describe(above);
  return "no device buffer holds it";
}
