//===- Backend.h - The interface every tprt backend implements --*- C++ -*-===//
//
// A Backend moves contiguous buffers among the members of a Communicator, in
// group order. Everything shape-related (argument checks, the mismatch
// check, packing for non-leading dimensions, counters) lives in common/ and
// runs before a backend is called, so a backend only sees:
//
//   allReduce      out[i] = op over members of in[i], count elements
//   allGather      out = member 0's bytes, member 1's bytes, ...
//   reduceScatter  in holds group-size blocks of count elements; member j
//                  gets the reduction of everybody's block j
//   allToAll       in holds group-size blocks of bytes; block j goes to
//                  member j, out holds the block from member i at i
//
// Backends: mpi/ (Open MPI, CPU ranks), single/ (one rank, in process) and,
// later, nccl/ (one rank per GPU, bootstrapped through MPI).
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_BACKEND_H
#define TPRT_COMMON_BACKEND_H

#include "tprt/tprt.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace tprt {

/// The backend's state for one group (an MPI or NCCL communicator).
class Communicator {
public:
  virtual ~Communicator();
};

class Backend {
public:
  virtual ~Backend();

  virtual const char *name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Creates the communicator of the world ranks `ranks`, in group order;
  /// the caller is one of them. Collective over those ranks only.
  virtual tprt_status
  createCommunicator(const std::vector<int> &ranks,
                     std::unique_ptr<Communicator> &out) = 0;

  /// `in` may equal `out`.
  virtual tprt_status allReduce(Communicator &comm, tprt_dtype dtype,
                                tprt_reduction op, const void *in, void *out,
                                size_t count) = 0;
  virtual tprt_status allGather(Communicator &comm, const void *in, void *out,
                                size_t bytes) = 0;
  /// `count` is the number of elements each member receives.
  virtual tprt_status reduceScatter(Communicator &comm, tprt_dtype dtype,
                                    tprt_reduction op, const void *in,
                                    void *out, size_t count) = 0;
  /// `bytes` is the size of one block (what one member sends to one member).
  virtual tprt_status allToAll(Communicator &comm, const void *in, void *out,
                               size_t bytes) = 0;
  virtual tprt_status barrier(Communicator &comm) = 0;

  /// Row-major GEMM, arguments already checked (see tprt_gemm). The default
  /// runs on the host through CBLAS.
  virtual tprt_status gemm(tprt_dtype dtype, bool transA, bool transB,
                           int64_t m, int64_t n, int64_t k, float alpha,
                           const void *a, int64_t lda, const void *b,
                           int64_t ldb, float beta, void *c, int64_t ldc);

  /// Buffers for collectives; the defaults use 64-byte aligned host memory.
  virtual tprt_status allocate(size_t bytes, void **out);
  virtual void release(void *ptr);
};

/// Creates the backend called `name` ("mpi", "single", "nccl"), or fails
/// with TPRT_ERROR_UNAVAILABLE or TPRT_ERROR_INVALID_ARGUMENT.
tprt_status createBackend(const std::string &name,
                          std::unique_ptr<Backend> &out);

// Factories of the individual backends, each in its own folder.
std::unique_ptr<Backend> createSingleBackend();
#ifdef TPRT_HAVE_MPI
tprt_status createMpiBackend(std::unique_ptr<Backend> &out);
#endif

} // namespace tprt

#endif // TPRT_COMMON_BACKEND_H
