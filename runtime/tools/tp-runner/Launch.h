//===- Launch.h - tp-runner --nproc: local ranks, torchrun style -*- C++ -*-===//
//
// `tp-runner MODEL_DIR --nproc N [--timeout S] ...` starts N local ranks
// itself, as torchrun does: it forks and execs itself N times with the rest
// of its command line and the variables
//
//   RANK=r  WORLD_SIZE=N  LOCAL_RANK=r  LOCAL_WORLD_SIZE=N
//   MASTER_ADDR=127.0.0.1  MASTER_PORT=<a free port>  TP_RUNNER_NPROC=N
//
// from which the nccl backend bootstraps (a TCP rendezvous at
// MASTER_ADDR:MASTER_PORT, docs/runtime.md). It waits for every rank; when
// one fails (non-zero exit, or a signal) it stops the others (SIGTERM, then
// SIGKILL 5 s later) and exits with the first failure's status (128 + the
// signal number for a signal). With --timeout S a launch still running
// after S seconds is stopped the same way and exits 124. SIGINT and SIGTERM
// to the launcher are passed on to the ranks. Every rank dies with the
// launcher (PR_SET_PDEATHSIG).
//
// For tests, TP_RUNNER_LAUNCH_FAULT, a comma-separated list: exit:R:CODE
// makes rank R exit with CODE as soon as it starts, hang:R makes it sleep
// until it is killed (e.g. "hang:0,exit:1:7").
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_LAUNCH_H
#define TP_RUNNER_LAUNCH_H

#include <string>
#include <vector>

namespace tprun {

/// Starts `nproc` ranks running this executable with `rankArgs` (the
/// command line without --nproc and --timeout) and returns the launch's
/// exit status. `timeoutSeconds` 0: no limit.
int launchLocalRanks(const std::vector<std::string> &rankArgs, long nproc,
                     long timeoutSeconds);

/// In a rank started by --nproc (TP_RUNNER_NPROC set): applies
/// TP_RUNNER_LAUNCH_FAULT. Returns -1 to go on, else the exit status (2 for
/// a malformed value); hang:R never returns.
int applyLaunchFault();

/// The number of ranks the launcher started (WORLD_SIZE of a torchrun-style
/// launch: TP_RUNNER_NPROC, or RANK and WORLD_SIZE outside mpirun); 0 when
/// this process was not started that way.
long launchedWorldSize();

/// The backend of a run without --backend and TPRT_BACKEND, outside
/// mpirun: "nccl" in a torchrun-style launch of several ranks, else
/// "single".
std::string launchDefaultBackend();

} // namespace tprun

#endif // TP_RUNNER_LAUNCH_H
