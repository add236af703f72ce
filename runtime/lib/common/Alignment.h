//===- Alignment.h - How a pointer is aligned ------------------*- C++ -*-===//
//
// The alignment cuBLASLt's MIN_ALIGNMENT_*_BYTES preferences describe: the
// largest power of two dividing an address, capped at 256 bytes (their
// default). Shared by the runtime (runtime/lib/cuda/CublasGemm.cpp) and the
// emulator's cuBLASLt (runtime/emu/CublasLt.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_ALIGNMENT_H
#define TPRT_COMMON_ALIGNMENT_H

#include <cstdint>

namespace tprt {

/// The largest power of two dividing `p`'s address, at most 256; 256 for
/// null.
inline uint32_t pointerAlignment(const void *p) {
  uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 1;
  while (align < 256 && !(address & align))
    align <<= 1;
  return address ? align : 256;
}

} // namespace tprt

#endif // TPRT_COMMON_ALIGNMENT_H
