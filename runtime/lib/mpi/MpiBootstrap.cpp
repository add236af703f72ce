//===- MpiBootstrap.cpp - The world bootstrap under mpirun ----------------===//
//
// Under mpirun the GPU backend exchanges its host names and NCCL unique ids
// over MPI, as nccl-tests does. The bootstrap owns an mpi backend (which
// initialises MPI unless the program did, and finalises it with the last
// context) and its own duplicate of MPI_COMM_WORLD for point-to-point
// messages; tags are folded into MPI's guaranteed tag range.
//
//===----------------------------------------------------------------------===//

#include "common/Backend.h"
#include "common/Bootstrap.h"
#include "common/Error.h"
#include "mpi/MpiError.h"

#include <mpi.h>

#include <climits>

using namespace tprt;

namespace {

class MpiBootstrap final : public Bootstrap {
public:
  ~MpiBootstrap() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  }

  tprt_status initialize() {
    if (tprt_status status = createMpiBackend(owner))
      return status;
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &mySize);
    return TPRT_OK;
  }

  const char *name() const override { return "mpi"; }
  int rank() const override { return myRank; }
  int size() const override { return mySize; }

  tprt_status allGather(const void *in, void *out, size_t bytes) override {
    if (bytes > size_t(INT_MAX))
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "bootstrap allgather of %zu bytes is too large", bytes);
    int rc = MPI_Allgather(in, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE,
                           comm);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Allgather");
    return TPRT_OK;
  }

  tprt_status send(int peer, uint32_t tag, const void *data,
                   size_t bytes) override {
    int rc =
        MPI_Send(data, int(bytes), MPI_BYTE, peer, int(tag % 32767u), comm);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Send");
    return TPRT_OK;
  }

  tprt_status recv(int peer, uint32_t tag, void *data, size_t bytes) override {
    int rc = MPI_Recv(data, int(bytes), MPI_BYTE, peer, int(tag % 32767u), comm,
                      MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Recv");
    return TPRT_OK;
  }

private:
  // Destroyed after `comm` is freed (members are destroyed in reverse).
  std::unique_ptr<Backend> owner;
  MPI_Comm comm = MPI_COMM_NULL;
  int myRank = 0;
  int mySize = 1;
};

} // namespace

tprt_status tprt::createMpiBootstrap(std::unique_ptr<Bootstrap> &out) {
  auto bootstrap = std::make_unique<MpiBootstrap>();
  if (tprt_status status = bootstrap->initialize())
    return status;
  out = std::move(bootstrap);
  return TPRT_OK;
}
