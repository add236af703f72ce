//===- Ptx.h - PTX modules decoded for the SIMT emulator --------*- C++ -*-===//
//
// The emulator behind `--backend cuda-emu` (docs/gpu.md, "The emulator")
// executes the PTX that a GPU build embeds in model.so: the same text the
// driver would JIT-compile, so what runs here is exactly what a device
// would be given, after LLVM's NVPTX code generation and libdevice.
//
// A module is parsed once, at cuModuleLoadData, into kernels whose
// instructions are decoded for execution:
//
//  - every operand becomes a register index. Registers are the kernel's
//    declared ones (`.reg .b32 %r<45>`), then one register per distinct
//    immediate (a constant, the same in every lane), per special register
//    read (%tid.x, %ctaid.y, %laneid, ...) and per symbol whose address an
//    instruction takes (a param's offset in the param space, a shared
//    variable's offset in the block's shared window, a local depot's offset
//    in the thread's local window, a module global's host address). Each
//    warp fills the constant and special registers when it starts, so that
//    an instruction only ever reads registers.
//  - each instruction gets a handler (a function specialised at decode
//    time for its operation, types and modifiers: `add.rn.f32` is one
//    handler, `add.s64` another) and a flow kind that tells the scheduler
//    (Simt.cpp) what happens after it: the next instruction, a branch, a
//    block barrier, a warp-synchronous exchange, an exit.
//
// Registers hold 64 bits per lane; a value narrower than 64 bits is kept
// zero-extended, and each instruction reads the width its type names
// (PTX's rule for wider registers: `ld.global.b32 %rd1` zero-extends).
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_EMU_PTX_H
#define TPRT_EMU_PTX_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tprt::emu {

struct Warp;
struct Inst;

/// Executes one instruction for the lanes in `mask` of a warp.
using Handler = void (*)(Warp &warp, const Inst &inst, uint32_t mask);

/// What the scheduler does after an instruction.
enum class Flow : uint8_t {
  Next,     // the handler did everything; go on with the next instruction
  Branch,   // bra: to `target` for the lanes whose guard holds
  Exit,     // ret/exit from the kernel
  Barrier,  // bar.sync / barrier.sync: a rendezvous of the block
  WarpSync, // shfl.sync, vote.sync, mma.sync, ...: a rendezvous of lanes
  Trap,     // trap, or a call of __assertfail
};

/// PTX state spaces.
enum class Space : uint8_t { Generic, Global, Shared, Local, Param, Const };

/// A decoded instruction.
struct Inst {
  Handler run = nullptr;
  /// For WarpSync: the exchange, run once for the whole group of lanes
  /// that met (`mask`), after every lane of the group arrived.
  Handler exchange = nullptr;
  Flow flow = Flow::Next;
  Space space = Space::Generic;
  /// Bytes of one element of a memory access.
  uint8_t bytes = 0;
  /// Elements of a vector access (ld.v4), or registers of a fragment.
  uint8_t count = 1;
  /// Operation-specific: the shfl mode, the vote mode, the barrier kind.
  uint8_t mode = 0;
  /// `.aligned` warp instructions need the whole warp; others name their
  /// lanes in a membermask operand (`s[membermaskOperand]`).
  bool aligned = false;
  bool guardNegated = false;
  int8_t membermaskOperand = -1;
  int32_t guard = -1;
  int32_t d[4] = {-1, -1, -1, -1};
  int32_t s[12] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  /// The displacement of an address operand (`[%rd1+8]`).
  int64_t imm = 0;
  /// Branch target (an instruction index), or a second address operand's
  /// displacement (cp.async's source).
  int64_t target = -1;
  /// The line of the PTX text, for messages.
  uint32_t line = 0;
  /// The instruction's index in its kernel (per-instruction launch state).
  uint32_t index = 0;
};

/// A kernel parameter of the `.param` space.
struct Param {
  std::string name;
  uint32_t offset = 0; // in the launch's param buffer
  uint32_t bytes = 0;
  bool pointer = false; // declared `.ptr`: checked at launch
};

/// A register whose lanes a warp fills when it starts.
struct RegisterInit {
  enum class Kind : uint8_t {
    Constant,
    TidX, TidY, TidZ, NtidX, NtidY, NtidZ,
    CtaidX, CtaidY, CtaidZ, NctaidX, NctaidY, NctaidZ,
    LaneId, WarpId, NwarpId, LanemaskEq, LanemaskLt, LanemaskLe,
    LanemaskGt, LanemaskGe, Clock, Clock64, GlobalTimer, SmId, NsmId,
    GridId, DynamicSmemSize, TotalSmemSize,
    SharedBase, // a shared variable: its offset (constant)
    LocalBase,  // a local depot: its offset in the thread's window
  };
  int32_t reg = 0;
  Kind kind = Kind::Constant;
  uint64_t value = 0;
};

struct Kernel {
  std::string name;
  std::vector<Param> params;
  uint32_t paramBytes = 0;
  std::vector<Inst> code;
  /// Registers per lane (declared, constants, specials, symbols).
  int32_t registers = 0;
  std::vector<RegisterInit> inits;
  /// Static shared memory of the kernel (function-scope and module-scope
  /// `.shared` variables it uses); dynamic shared memory (`.extern
  /// .shared`) starts at `dynamicSharedOffset`.
  uint32_t staticShared = 0;
  uint32_t dynamicSharedOffset = 0;
  /// Bytes of `.local` memory per thread.
  uint32_t localBytes = 0;
  /// `.maxntid` / `.reqntid` (0: none).
  uint32_t maxThreads = 0;
  uint32_t requiredThreads[3] = {0, 0, 0};
  /// Line of the `.entry` directive.
  uint32_t line = 0;
};

/// A module-scope `.global` / `.const` variable (host memory standing in
/// for device memory, registered for bounds checks).
struct GlobalVariable {
  std::string name;
  std::vector<uint8_t> bytes;
};

struct Module {
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
  /// Globals live as long as the module; kernels hold their addresses.
  std::vector<std::unique_ptr<GlobalVariable>> globals;
  std::string target; // "sm_90"
  /// The PTX text's lines, for messages that quote an instruction.
  std::vector<std::string> lines;
};

/// Parses and decodes PTX text. On failure returns null and sets `error`
/// to a message naming the line and what was not understood.
std::unique_ptr<Module> parsePtx(const std::string &text, std::string &error);

/// Extracts the PTX text of a CUDA fatbinary (the embedded `.nv_fatbin`
/// container MLIR's `format=fatbin` produces) for `chip` (or any PTX when
/// no entry matches); empty with `error` set when it carries none, or only
/// compressed PTX.
std::string ptxOfFatbin(const void *image, std::string &error);

} // namespace tprt::emu

#endif // TPRT_EMU_PTX_H
