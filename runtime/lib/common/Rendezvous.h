//===- Rendezvous.h - The TCP bootstrap of torchrun launches ----*- C++ -*-===//
//
// Without mpirun, ranks find each other the way torchrun (and
// torch.distributed's env:// init) arranges it: every rank knows RANK and
// WORLD_SIZE, and rank 0 listens on MASTER_ADDR:MASTER_PORT. The protocol,
// plain POSIX sockets over IPv4:
//
//  1. Every rank opens its own listening socket on an ephemeral port (for
//     point-to-point messages).
//  2. Rank 0 listens on MASTER_PORT; the others connect to
//     MASTER_ADDR:MASTER_PORT, retrying refused connections every 100 ms,
//     and send a hello (rank, WORLD_SIZE, their port). Rank 0 checks that
//     every WORLD_SIZE agrees and no rank comes twice, then sends everybody
//     the table of addresses (each rank's address as rank 0 saw it).
//  3. allGather: every rank sends its blob to rank 0 over the connection of
//     step 2; rank 0 sends back the concatenation.
//  4. send(peer): one short connection to the peer's listening socket
//     carrying (sender, tag, size, data); recv() accepts connections until
//     the message of that sender and tag arrived, keeping the others.
//
// Every wait is bounded by TPRT_INIT_TIMEOUT (default 60 s); the messages
// name the address and the ranks that did not show up.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_RENDEZVOUS_H
#define TPRT_COMMON_RENDEZVOUS_H

#include "Bootstrap.h"

#include <string>

namespace tprt {

/// What the torchrun variables say.
struct RendezvousConfig {
  int rank = 0;
  int worldSize = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  double timeoutSeconds = 60.0;
};

/// Reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and TPRT_INIT_TIMEOUT.
tprt_status readRendezvousConfig(RendezvousConfig &out);

/// Runs steps 1 and 2 of the file comment.
tprt_status connectTcpBootstrap(const RendezvousConfig &config,
                                std::unique_ptr<Bootstrap> &out);

} // namespace tprt

#endif // TPRT_COMMON_RENDEZVOUS_H
