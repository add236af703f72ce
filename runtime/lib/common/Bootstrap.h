//===- Bootstrap.h - Out-of-band exchange among the world ranks -*- C++ -*-===//
//
// A Bootstrap moves small host blobs among the ranks of a world before (and
// besides) the communication library: the GPU backend exchanges host names
// and NCCL unique ids through it. Implementations:
//
//   MpiBootstrap   under mpirun (mpi/MpiBootstrap.cpp, when built with MPI)
//   TcpBootstrap   torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//                  (Rendezvous.cpp; plain POSIX sockets)
//   SelfBootstrap  a world of one rank
//
// createWorldBootstrap() picks one from the environment.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_BOOTSTRAP_H
#define TPRT_COMMON_BOOTSTRAP_H

#include "tprt/tprt.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tprt {

class Bootstrap {
public:
  virtual ~Bootstrap();

  virtual const char *name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Collective over the world: out holds every rank's `bytes` in rank order.
  virtual tprt_status allGather(const void *in, void *out, size_t bytes) = 0;
  /// Point to point: messages between one pair of ranks are matched by
  /// `tag`; a receive blocks until the matching send arrived (or the init
  /// timeout passed).
  virtual tprt_status send(int peer, uint32_t tag, const void *data,
                           size_t bytes) = 0;
  virtual tprt_status recv(int peer, uint32_t tag, void *data,
                           size_t bytes) = 0;
};

/// A world of one rank: allGather copies, send and recv fail.
std::unique_ptr<Bootstrap> createSelfBootstrap();

/// The world bootstrap of this process: MPI under mpirun (Open MPI's
/// OMPI_COMM_WORLD_SIZE, or PMI_SIZE / PMIX_RANK, when built with MPI), TCP
/// when WORLD_SIZE is set (torchrun), else a world of one rank.
tprt_status createWorldBootstrap(std::unique_ptr<Bootstrap> &out);

#ifdef TPRT_HAVE_MPI
tprt_status createMpiBootstrap(std::unique_ptr<Bootstrap> &out);
#endif

/// The TCP rendezvous of Rendezvous.cpp, from the torchrun variables.
tprt_status createTcpBootstrap(std::unique_ptr<Bootstrap> &out);

/// Seconds to wait for the other ranks at init: TPRT_INIT_TIMEOUT, default
/// 60.
double initTimeoutSeconds();

/// A tag for the messages that set up the group `ranks` (FNV-1a of the
/// list), the same on every member.
uint32_t groupTag(const std::vector<int> &ranks);

/// "[0, 2, 3]"
std::string rankListText(const std::vector<int> &ranks);

} // namespace tprt

#endif // TPRT_COMMON_BOOTSTRAP_H
