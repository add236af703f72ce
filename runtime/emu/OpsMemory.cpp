//===- OpsMemory.cpp - Loads, stores, address spaces, atomics, cp.async ---===//
//
// Every access goes through access(), which maps an address of a state
// space to host memory and checks it, for every lane, before a byte moves:
//  - global: the whole range in one live buffer of the emulated driver
//    (Memory.h: device allocations, managed memory, module globals); an
//    access past a buffer's end, between buffers or into a freed buffer is
//    an error naming the buffer and the offset;
//  - shared: within the block's window (static + dynamic shared memory);
//  - local: within the lane's own window;
//  - param: within the kernel's parameters (read-only);
//  - generic: whichever of the above the address falls in (shared and
//    local windows are host memory too, so `cvta` is address arithmetic).
// An access must also be aligned to its size (a vector access to the
// vector's size; cp.async's global source and shared destination to its
// cp-size; each ldmatrix row address to 16 bytes), as the PTX ISA's
// "Addresses as Operands" requires and the hardware enforces ("misaligned
// address").
//
// cp.async copies are read when issued and written when waited for
// (cp.async.wait_group / wait_all), so a kernel that reads shared memory
// before waiting sees the old bytes, as it could on a device.
//
//===----------------------------------------------------------------------===//

#include "Decode.h"
#include "Exec.h"
#include "Memory.h"

#include <cstdio>
#include <cstring>

using namespace tprt::emu;

namespace {

const char *spaceName(Space s) {
  switch (s) {
  case Space::Global: return "global";
  case Space::Shared: return "shared";
  case Space::Local: return "local";
  case Space::Param: return "param";
  case Space::Const: return "const";
  default: return "generic";
  }
}

std::string hex(uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

} // namespace

uint8_t *tprt::emu::accessSlow(Warp &w, const Inst &in, int lane, Space space,
                               uint64_t address, size_t bytes, size_t align,
                               bool write) {
  static_assert(kDeviceTag == uintptr_t(1) << 62, "access() in Exec.h");
  Launch &L = *w.launch;
  const char *verb = write ? "store" : "load";
  if (align > 1 && (address & (align - 1))) {
    fail(w, in, lane,
         std::string("misaligned ") + verb + " of " + std::to_string(bytes) +
             " bytes at " + spaceName(space) + " address " + hex(address) +
             " (needs " + std::to_string(align) + "-byte alignment)");
  }
  uint8_t *sharedBase = L.shared.data();
  uint64_t sharedSize = L.shared.size();
  uint32_t localBytes = L.kernel->localBytes;
  if (space == Space::Generic) {
    uintptr_t a = uintptr_t(address);
    uintptr_t s = reinterpret_cast<uintptr_t>(sharedBase);
    uintptr_t lo = reinterpret_cast<uintptr_t>(L.local.data());
    if (sharedSize && a >= s && a < s + sharedSize) {
      space = Space::Shared;
      address = a - s;
    } else if (localBytes && a >= lo && a < lo + L.local.size()) {
      uint64_t thread = w.index * 32 + uint32_t(lane);
      uint64_t mine = lo + thread * localBytes;
      if (a < mine || a >= mine + localBytes)
        fail(w, in, lane,
             std::string("generic ") + verb + " at " + hex(address) +
                 " falls in another thread's local memory");
      space = Space::Local;
      address = a - mine;
    } else {
      space = Space::Global;
    }
  }
  switch (space) {
  case Space::Global:
  case Space::Const: {
    uintptr_t a = uintptr_t(address);
    Allocation found;
    if (Registry::instance().find(a, bytes, found)) {
      L.lastBuffer[in.index] = {found.base, found.base + found.bytes};
      return reinterpret_cast<uint8_t *>(hostAddress(a));
    }
    fail(w, in, lane,
         std::string("out-of-bounds global ") + verb + " of " +
             std::to_string(bytes) + " bytes at " + hex(address) + ": " +
             Registry::instance().explain(a, bytes));
  }
  case Space::Shared:
    if (address + bytes > sharedSize || address + bytes < address)
      fail(w, in, lane,
           std::string("out-of-bounds shared ") + verb + " of " +
               std::to_string(bytes) + " bytes at offset " +
               std::to_string(address) + " of the block's " +
               std::to_string(sharedSize) + " bytes of shared memory");
    return sharedBase + address;
  case Space::Local: {
    if (address + bytes > localBytes || address + bytes < address)
      fail(w, in, lane,
           std::string("out-of-bounds local ") + verb + " of " +
               std::to_string(bytes) + " bytes at offset " +
               std::to_string(address) + " of the thread's " +
               std::to_string(localBytes) + " bytes of local memory");
    uint64_t thread = w.index * 32 + uint32_t(lane);
    return L.local.data() + thread * localBytes + address;
  }
  case Space::Param:
    if (write)
      fail(w, in, lane, "store to the kernel's parameters");
    if (address + bytes > L.params.size() || address + bytes < address)
      fail(w, in, lane,
           "load of " + std::to_string(bytes) + " bytes at offset " +
               std::to_string(address) + " past the kernel's " +
               std::to_string(L.params.size()) + " bytes of parameters");
    return L.params.data() + address;
  default:
    fail(w, in, lane, "access to an unsupported state space");
  }
}

namespace {

/// ld: `count` elements of `bytes` each; in.mode bit 0: sign-extend.
void load(Warp &w, const Inst &in, uint32_t m) {
  const uint64_t *a = w.reg(in.s[0]);
  unsigned n = in.count, size = in.bytes;
  bool sign = in.mode & 1;
  forLanes(m, [&](int l) {
    uint8_t *p = access(w, in, l, in.space, a[l] + uint64_t(in.imm),
                        size_t(size) * n, size_t(size) * n, false);
    for (unsigned e = 0; e < n; ++e) {
      if (in.d[e] < 0)
        continue;
      uint64_t v = 0;
      std::memcpy(&v, p + size_t(e) * size, size);
      if (sign && size < 8) {
        unsigned shift = 64 - 8 * size;
        v = uint64_t(int64_t(v << shift) >> shift);
      }
      w.reg(in.d[e])[l] = v;
    }
  });
}

/// ld of one element of `Bytes` bytes (the common case, without the
/// vector loop and with a fixed-size copy).
template <unsigned Bytes, bool Sign>
void loadScalar(Warp &w, const Inst &in, uint32_t m) {
  const uint64_t *a = w.reg(in.s[0]);
  uint64_t *d = w.reg(in.d[0]);
  forLanes(m, [&](int l) {
    uint8_t *p = access(w, in, l, in.space, a[l] + uint64_t(in.imm), Bytes,
                        Bytes, false);
    uint64_t v = 0;
    std::memcpy(&v, p, Bytes);
    if (Sign && Bytes < 8) {
      constexpr unsigned shift = 64 - 8 * Bytes;
      v = uint64_t(int64_t(v << shift) >> shift);
    }
    d[l] = v;
  });
}

template <unsigned Bytes>
void storeScalar(Warp &w, const Inst &in, uint32_t m) {
  const uint64_t *a = w.reg(in.s[0]), *v = w.reg(in.s[1]);
  forLanes(m, [&](int l) {
    uint8_t *p = access(w, in, l, in.space, a[l] + uint64_t(in.imm), Bytes,
                        Bytes, true);
    std::memcpy(p, &v[l], Bytes);
  });
}

Handler scalarHandler(bool isStore, unsigned bytes, bool sign) {
  switch (bytes) {
  case 1: return isStore ? storeScalar<1> : sign ? loadScalar<1, true> : loadScalar<1, false>;
  case 2: return isStore ? storeScalar<2> : sign ? loadScalar<2, true> : loadScalar<2, false>;
  case 4: return isStore ? storeScalar<4> : sign ? loadScalar<4, true> : loadScalar<4, false>;
  case 8: return isStore ? storeScalar<8> : loadScalar<8, false>;
  default: return nullptr;
  }
}

void store(Warp &w, const Inst &in, uint32_t m) {
  const uint64_t *a = w.reg(in.s[0]);
  unsigned n = in.count, size = in.bytes;
  forLanes(m, [&](int l) {
    uint8_t *p = access(w, in, l, in.space, a[l] + uint64_t(in.imm),
                        size_t(size) * n, size_t(size) * n, true);
    for (unsigned e = 0; e < n; ++e) {
      uint64_t v = w.reg(in.s[1 + e])[l];
      std::memcpy(p + size_t(e) * size, &v, size);
    }
  });
}

/// ld.param / st.param on a call's parameter slot: a move.
void moveSlot(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  uint64_t mask = in.bytes >= 8 ? ~0ull : ((uint64_t(1) << (8 * in.bytes)) - 1);
  forLanes(m, [&](int l) { d[l] = a[l] & mask; });
}

/// cvta: mode 0 to generic, 1 from generic; space in in.space.
void cvta(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  Launch &L = *w.launch;
  bool toGeneric = in.mode == 0;
  uint64_t mask = in.bytes == 4 ? 0xffffffffull : ~0ull;
  forLanes(m, [&](int l) {
    uint64_t base = 0;
    if (in.space == Space::Shared)
      base = reinterpret_cast<uintptr_t>(L.shared.data());
    else if (in.space == Space::Local)
      base = reinterpret_cast<uintptr_t>(L.local.data()) +
             (w.index * 32 + uint32_t(l)) * uint64_t(L.kernel->localBytes);
    else if (in.space == Space::Param)
      base = reinterpret_cast<uintptr_t>(L.params.data());
    d[l] = (toGeneric ? a[l] + base : a[l] - base) & mask;
  });
}

void isspacep(Warp &w, const Inst &in, uint32_t m) {
  uint64_t *d = w.reg(in.d[0]);
  const uint64_t *a = w.reg(in.s[0]);
  Launch &L = *w.launch;
  uintptr_t s = reinterpret_cast<uintptr_t>(L.shared.data());
  uintptr_t lo = reinterpret_cast<uintptr_t>(L.local.data());
  forLanes(m, [&](int l) {
    uintptr_t x = uintptr_t(a[l]);
    bool shared = x >= s && x < s + L.shared.size();
    bool local = x >= lo && x < lo + L.local.size();
    bool r = in.space == Space::Shared ? shared
             : in.space == Space::Local ? local
                                        : !shared && !local;
    d[l] = r;
  });
}

enum AtomOp { AAdd, AMin, AMax, AInc, ADec, AAnd, AOr, AXor, AExch, ACas };

template <class T, int Op> void atom(Warp &w, const Inst &in, uint32_t m) {
  const uint64_t *a = w.reg(in.s[0]), *b = w.reg(in.s[1]);
  const uint64_t *c = Op == ACas ? w.reg(in.s[2]) : nullptr;
  uint64_t *d = in.d[0] >= 0 ? w.reg(in.d[0]) : nullptr;
  forLanes(m, [&](int l) {
    uint8_t *p = access(w, in, l, in.space, a[l] + uint64_t(in.imm), sizeof(T),
                        sizeof(T), true);
    T old;
    std::memcpy(&old, p, sizeof(T));
    T v = get<T>(b[l]), r = old;
    switch (Op) {
    case AAdd: r = T(old + v); break;
    case AMin: r = old < v ? old : v; break;
    case AMax: r = old > v ? old : v; break;
    case AInc:
      if constexpr (std::is_integral_v<T>) r = old >= v ? T(0) : T(old + 1);
      break;
    case ADec:
      if constexpr (std::is_integral_v<T>) r = (old == 0 || old > v) ? v : T(old - 1);
      break;
    case AAnd: if constexpr (std::is_integral_v<T>) r = T(old & v); break;
    case AOr: if constexpr (std::is_integral_v<T>) r = T(old | v); break;
    case AXor: if constexpr (std::is_integral_v<T>) r = T(old ^ v); break;
    case AExch: r = v; break;
    case ACas: r = old == v ? get<T>(c[l]) : old; break;
    }
    std::memcpy(p, &r, sizeof(T));
    if (d)
      d[l] = put<T>(old);
  });
}

template <class T> Handler atomHandler(int op) {
  switch (op) {
  case AAdd: return atom<T, AAdd>;
  case AMin: return atom<T, AMin>;
  case AMax: return atom<T, AMax>;
  case AInc: return atom<T, AInc>;
  case ADec: return atom<T, ADec>;
  case AAnd: return atom<T, AAnd>;
  case AOr: return atom<T, AOr>;
  case AXor: return atom<T, AXor>;
  case AExch: return atom<T, AExch>;
  default: return atom<T, ACas>;
  }
}

void cpAsync(Warp &w, const Inst &in, uint32_t m) {
  const uint64_t *dst = w.reg(in.s[0]), *src = w.reg(in.s[1]);
  const uint64_t *srcSize = in.s[2] >= 0 ? w.reg(in.s[2]) : nullptr;
  unsigned size = in.bytes;
  forLanes(m, [&](int l) {
    uint64_t shared = dst[l] + uint64_t(in.imm);
    uint8_t *p = access(w, in, l, Space::Shared, shared, size, size, true);
    uint64_t valid = srcSize ? srcSize[l] : size;
    if (valid > size)
      fail(w, in, l, "cp.async: source size " + std::to_string(valid) +
                         " is larger than the copy size " + std::to_string(size));
    PendingCopy copy;
    copy.dst = p;
    copy.sharedOffset = shared;
    copy.data.assign(size, 0);
    if (valid) {
      // PTX ISA, cp.async: "Supported alignment requirements ... for
      // operand src and dst are described in Addresses as Operands": both
      // naturally aligned to cp-size (src-size shortens the read, not the
      // alignment).
      uint8_t *q = access(w, in, l, Space::Global, src[l] + uint64_t(in.target),
                          size_t(valid), size, false);
      std::memcpy(copy.data.data(), q, size_t(valid));
    }
    copy.group = ~0u; // not committed yet
    w.pending[l].push_back(std::move(copy));
    w.launch->asyncCopies = true;
  });
}

void cpAsyncCommit(Warp &w, const Inst &, uint32_t m) {
  forLanes(m, [&](int l) {
    uint32_t group = ++w.committed[l];
    for (PendingCopy &c : w.pending[l])
      if (c.group == ~0u)
        c.group = group;
  });
}

/// wait_group N: in.imm = N; wait_all: in.imm = -1.
void cpAsyncWait(Warp &w, const Inst &in, uint32_t m) {
  forLanes(m, [&](int l) {
    uint32_t committed = w.committed[l];
    auto &list = w.pending[l];
    std::vector<PendingCopy> keep;
    for (PendingCopy &c : list) {
      bool done = in.imm < 0 ||
                  (c.group != ~0u && uint64_t(c.group) + uint64_t(in.imm) <= committed);
      if (done)
        std::memcpy(c.dst, c.data.data(), c.data.size());
      else
        keep.push_back(std::move(c));
    }
    list.swap(keep);
  });
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

/// The space among an opcode's modifiers (`shared::cta` is shared).
bool spaceOf(const Statement &st, Space &space, std::string &error) {
  space = Space::Generic;
  for (size_t i = 1; i < st.opcode.size(); ++i) {
    const std::string &m = st.opcode[i];
    if (m == "global") space = Space::Global;
    else if (m == "shared" || m == "shared::cta") space = Space::Shared;
    else if (m == "local") space = Space::Local;
    else if (m == "param" || m == "param::entry") space = Space::Param;
    else if (m == "const") space = Space::Const;
    else if (m == "shared::cluster" || m == "param::func") {
      error = "the ." + m + " space is not supported by the emulator";
      return false;
    }
  }
  return true;
}

/// Decodes `[base + offset]` into inst.s[slot] and inst.imm (or target).
bool address(const Operand &op, Inst &inst, int slot, DecodeContext &ctx,
             Space &space, std::string &error, bool second = false) {
  if (op.kind != Operand::Kind::Address) {
    error = "expected an address operand";
    return false;
  }
  Operand base;
  if (op.name.empty()) {
    base.kind = Operand::Kind::Immediate;
    base.bits = 0;
  } else if (op.name[0] == '%') {
    base.kind = Operand::Kind::Register;
    base.name = op.name;
  } else {
    base.kind = Operand::Kind::Symbol;
    base.name = op.name;
    Space symbolSpace = ctx.spaceOfSymbol(op.name);
    if (space == Space::Generic && symbolSpace != Space::Generic) {
      // A symbol in a generic access: its generic address. Globals are
      // host addresses already; others are not expected from a compiler.
      if (symbolSpace != Space::Global) {
        error = "a generic access to the " + op.name + " variable";
        return false;
      }
    }
  }
  inst.s[slot] = ctx.registerOf(base, Type::U64, error);
  if (inst.s[slot] < 0)
    return false;
  if (second)
    inst.target = op.offset;
  else
    inst.imm = op.offset;
  return true;
}

} // namespace

bool tprt::emu::decodeMemory(const Statement &st, Inst &inst, DecodeContext &ctx,
                             std::string &error, bool &known) {
  const std::string &op = st.opcode[0];
  known = true;
  if (op == "ld" || op == "ldu" || op == "st") {
    bool isStore = op == "st";
    Space space;
    if (!spaceOf(st, space, error))
      return false;
    std::vector<Type> types = typesOf(st);
    if (types.size() != 1) {
      error = opcodeText(st) + ": expected one type";
      return false;
    }
    unsigned count = hasModifier(st, "v2") ? 2 : hasModifier(st, "v4") ? 4
                     : hasModifier(st, "v8") ? 8 : 1;
    if (count > 4 || types[0] == Type::B128) {
      error = opcodeText(st) + " is not supported by the emulator";
      return false;
    }
    if (st.operands.size() != 2) {
      error = opcodeText(st) + " takes two operands";
      return false;
    }
    inst.space = space;
    inst.bytes = uint8_t(typeBytes(types[0]));
    inst.count = uint8_t(count);
    inst.mode = isSignedType(types[0]) ? 1 : 0;
    const Operand &addr = isStore ? st.operands[0] : st.operands[1];
    const Operand &value = isStore ? st.operands[1] : st.operands[0];
    // A call's parameter slot.
    if (space == Space::Param && addr.kind == Operand::Kind::Address &&
        !addr.name.empty() && ctx.callSlot(addr.name) >= 0) {
      int32_t slot = ctx.callSlot(addr.name);
      if (count != 1 || addr.offset != 0) {
        error = "a vector or offset access to a call parameter";
        return false;
      }
      inst.run = moveSlot;
      if (isStore) {
        inst.d[0] = slot;
        inst.s[0] = ctx.registerOf(value, types[0], error);
        return inst.s[0] >= 0;
      }
      inst.d[0] = ctx.registerOf(value, types[0], error);
      inst.s[0] = slot;
      return inst.d[0] >= 0;
    }
    if (!address(addr, inst, 0, ctx, space, error))
      return false;
    std::vector<Operand> values;
    if (value.kind == Operand::Kind::Vector)
      values = value.elements;
    else
      values.push_back(value);
    if (values.size() != count) {
      error = opcodeText(st) + ": " + std::to_string(values.size()) +
              " registers for " + std::to_string(count) + " elements";
      return false;
    }
    for (unsigned e = 0; e < count; ++e) {
      if (isStore) {
        if ((inst.s[1 + e] = ctx.registerOf(values[e], types[0], error)) < 0)
          return false;
      } else if (values[e].kind != Operand::Kind::Sink) {
        if ((inst.d[e] = ctx.registerOf(values[e], types[0], error)) < 0)
          return false;
      }
    }
    inst.run = isStore ? store : load;
    if (count == 1 && (!isStore ? inst.d[0] >= 0 : true))
      if (Handler h = scalarHandler(isStore, inst.bytes, inst.mode & 1))
        inst.run = h;
    return true;
  }
  if (op == "cvta" || op == "isspacep") {
    Space space;
    if (!spaceOf(st, space, error))
      return false;
    bool to = hasModifier(st, "to");
    std::vector<Type> types = typesOf(st);
    inst.space = space;
    inst.mode = to ? 1 : 0;
    inst.bytes = uint8_t(types.empty() ? 8 : typeBytes(types.back()));
    inst.run = op == "cvta" ? cvta : isspacep;
    if (st.operands.size() != 2) {
      error = op + " takes two operands";
      return false;
    }
    inst.d[0] = ctx.registerOf(st.operands[0], Type::U64, error);
    inst.s[0] = ctx.registerOf(st.operands[1], Type::U64, error);
    return inst.d[0] >= 0 && inst.s[0] >= 0;
  }
  if (op == "atom" || op == "red") {
    Space space;
    if (!spaceOf(st, space, error))
      return false;
    static const char *kOps[] = {"add", "min", "max", "inc", "dec",
                                 "and", "or",  "xor", "exch", "cas"};
    int which = -1;
    for (int i = 0; i < 10; ++i)
      if (hasModifier(st, kOps[i]))
        which = i;
    std::vector<Type> types = typesOf(st);
    if (which < 0 || types.size() != 1) {
      error = opcodeText(st) + " is not supported by the emulator";
      return false;
    }
    Type t = types[0];
    Handler h = nullptr;
    switch (t) {
    case Type::U32: case Type::B32: h = atomHandler<uint32_t>(which); break;
    case Type::S32: h = atomHandler<int32_t>(which); break;
    case Type::U64: case Type::B64: h = atomHandler<uint64_t>(which); break;
    case Type::S64: h = atomHandler<int64_t>(which); break;
    case Type::F32:
      if (which == AAdd || which == AExch || which == AMin || which == AMax)
        h = atomHandler<float>(which);
      break;
    case Type::F64:
      if (which == AAdd || which == AExch)
        h = atomHandler<double>(which);
      break;
    default: break;
    }
    if (!h) {
      error = opcodeText(st) + " is not supported by the emulator";
      return false;
    }
    inst.run = h;
    inst.space = space;
    inst.bytes = uint8_t(typeBytes(t));
    size_t first = op == "atom" ? 1 : 0;
    size_t needed = first + 2 + (which == ACas ? 1 : 0);
    if (st.operands.size() != needed) {
      error = opcodeText(st) + " takes " + std::to_string(needed) + " operands";
      return false;
    }
    if (first && (inst.d[0] = ctx.registerOf(st.operands[0], t, error)) < 0)
      return false;
    if (!address(st.operands[first], inst, 0, ctx, space, error))
      return false;
    for (size_t i = first + 1; i < needed; ++i)
      if ((inst.s[i - first] = ctx.registerOf(st.operands[i], t, error)) < 0)
        return false;
    return true;
  }
  if (op == "cp" && st.opcode.size() > 1 && st.opcode[1] == "async") {
    if (hasModifier(st, "commit_group")) {
      inst.run = cpAsyncCommit;
      return true;
    }
    if (hasModifier(st, "wait_group") || hasModifier(st, "wait_all")) {
      inst.run = cpAsyncWait;
      inst.imm = -1;
      if (hasModifier(st, "wait_group")) {
        if (st.operands.size() != 1 ||
            st.operands[0].kind != Operand::Kind::Immediate) {
          error = "cp.async.wait_group takes a constant";
          return false;
        }
        inst.imm = int64_t(st.operands[0].bits);
      }
      return true;
    }
    if (hasModifier(st, "bulk") || hasModifier(st, "mbarrier")) {
      error = opcodeText(st) + " is not supported by the emulator";
      return false;
    }
    if (st.operands.size() < 3 || st.operands.size() > 4 ||
        st.operands[2].kind != Operand::Kind::Immediate) {
      error = "cp.async takes [dst], [src], size[, src-size]";
      return false;
    }
    // PTX ISA, cp.async: cp-size is 4, 8 or 16, and .cg takes 16 only (its
    // syntax spells the operand `16`); ptxas refuses anything else.
    unsigned size = unsigned(st.operands[2].bits);
    if (size != 4 && size != 8 && size != 16) {
      error = opcodeText(st) + " of " + std::to_string(size) +
              " bytes: cp-size is 4, 8 or 16";
      return false;
    }
    if (hasModifier(st, "cg") && size != 16) {
      error = opcodeText(st) + " of " + std::to_string(size) +
              " bytes: .cg copies 16 bytes only";
      return false;
    }
    inst.bytes = uint8_t(size);
    inst.run = cpAsync;
    Space shared = Space::Shared, global = Space::Global;
    if (!address(st.operands[0], inst, 0, ctx, shared, error) ||
        !address(st.operands[1], inst, 1, ctx, global, error, true))
      return false;
    if (st.operands.size() == 4 &&
        (inst.s[2] = ctx.registerOf(st.operands[3], Type::U32, error)) < 0)
      return false;
    return true;
  }
  known = false;
  return false;
}
