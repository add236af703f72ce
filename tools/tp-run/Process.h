//===- Process.h - tp-run's errors, files and child processes ---*- C++ -*-===//
//
// Errors end tp-run through die(), which names what failed; files are
// written through writeFile(), which names the file when the disk is full.
//
// Every program tp-run starts (tp-gen, clang-22, mpirun, tp-runner, the
// smoke run's tp-run) dies with tp-run: the child asks Linux for SIGTERM
// when its parent dies (PR_SET_PDEATHSIG, set between fork and exec), so
// that a `kill -9` of tp-run still stops mpirun, which stops its ranks
// (each rank has its own PDEATHSIG on mpirun, tp-runner.cpp), and tp-runner
// --nproc, which stops its own. SIGINT and SIGTERM of tp-run are passed on
// to the running child, and a child past its time limit gets SIGTERM, then
// SIGKILL 10 s later; a second interrupt meanwhile kills the child at once.
// An interrupt while no program runs, or a second one, ends tp-run at once
// (exit 130), its temporary work folder removed.
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUN_PROCESS_H
#define TP_RUN_PROCESS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <string>

namespace tprun {

/// Prints "tp-run: error: MESSAGE" after what was printed so far, and exits
/// with `code`.
[[noreturn]] void die(const llvm::Twine &message, int code = 1);

/// Writes `text` to `path`; dies naming the file and the cause (a missing
/// folder, a full disk) otherwise.
void writeFile(llvm::StringRef path, llvm::StringRef text);

/// Creates the folder `path` and its parents; dies naming it otherwise.
void makeFolder(llvm::StringRef path);

/// Removes the folder `path` and everything in it when tp-run exits, dies,
/// or is interrupted (SIGINT, SIGTERM) while it compiles or waits for a
/// program: tp-run's temporary work folder, mpirun's files (up to 4).
void removeAtExit(llvm::StringRef path);

/// Removes the file or folder `path` and everything in it (FIFOs too;
/// symbolic links removed, never followed).
void removeTree(llvm::StringRef path);

/// Runs `program` with `args` and returns its exit code. `env`: the child's
/// environment (default: tp-run's); `outputFile`: where its stdout and
/// stderr go (default: tp-run's); `what` names the run in messages ("the
/// run on 2 ranks"; default: the command line). A program still running
/// after `timeoutSeconds` (0: no limit) gets SIGTERM, SIGKILL 10 s later,
/// and tp-run dies with an error; so it does when the program cannot start,
/// dies of a signal, or tp-run is interrupted meanwhile.
int runProgram(llvm::StringRef program, llvm::ArrayRef<std::string> args,
               int timeoutSeconds,
               std::optional<llvm::ArrayRef<llvm::StringRef>> env = std::nullopt,
               llvm::StringRef outputFile = "", llvm::StringRef what = "");

} // namespace tprun

#endif // TP_RUN_PROCESS_H
