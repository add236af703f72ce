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
// Backends: mpi/ (Open MPI, CPU ranks), single/ (one rank, in process) and
// nccl/ (one rank per GPU, in libtprt_cuda.so, loaded by CudaLoader.cpp).
//
// Device backends keep their buffers in GPU memory, so common/ never touches
// collective data itself: packing goes through copy2D(), scratch buffers
// through allocate(), the mismatch check through allGatherHost(), and the
// time of asynchronous work through timerBegin()/timerEnd() (events on the
// GPU, flushed by synchronize()). The defaults are the host versions.
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_COMMON_BACKEND_H
#define TPRT_COMMON_BACKEND_H

#include "tprt/tprt.h"

#include <chrono>
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

  /// `batch` row-major GEMMs, the i-th on a + i * strideA, b + i * strideB,
  /// c + i * strideC (strides in elements). The default loops over gemm().
  virtual tprt_status batchedGemm(tprt_dtype dtype, bool transA, bool transB,
                                  int64_t m, int64_t n, int64_t k, float alpha,
                                  const void *a, int64_t lda, int64_t strideA,
                                  const void *b, int64_t ldb, int64_t strideB,
                                  float beta, void *c, int64_t ldc,
                                  int64_t strideC, int64_t batch);

  /// `batch` row-major GEMMs with A and B in `abType` and C in `cType`, the
  /// products summed in f32 (see tprt_gemm_mixed), arguments already
  /// checked, abType != cType, m and n > 0. The default widens panels of
  /// A and B on the host (hostGemmWidened); GPU backends run one cuBLAS
  /// call with 16-bit inputs and an f32 output.
  virtual tprt_status gemmMixed(tprt_dtype abType, tprt_dtype cType,
                                bool transA, bool transB, int64_t m,
                                int64_t n, int64_t k, float alpha,
                                const void *a, int64_t lda, int64_t strideA,
                                const void *b, int64_t ldb, int64_t strideB,
                                float beta, void *c, int64_t ldc,
                                int64_t strideC, int64_t batch);

  /// `count` row-major GEMMs sharing A: c[i] = alpha op(A) op(b[i]) +
  /// beta c[i] (see tprt_gemm_shared_a), arguments already checked, count
  /// >= 1, m and n > 0. `b` and `c` are host arrays of pointers into the
  /// backend's memory. The default loops over gemm().
  virtual tprt_status sharedAGemm(tprt_dtype dtype, bool transA, bool transB,
                                  int64_t m, int64_t n, int64_t k, float alpha,
                                  const void *a, int64_t lda,
                                  const void *const *b, int64_t ldb, float beta,
                                  void *const *c, int64_t ldc, int count);

  /// Grouped row-major GEMMs (see tprt_gemm_grouped), arguments already
  /// checked: group g multiplies the rows[g] rows of A (and writes those of
  /// C) that follow the earlier groups' by B_g = b + g * strideB. `rows` is
  /// a host array of `groups` counts >= 0; n > 0. The default loops over
  /// gemm(), skipping empty groups.
  virtual tprt_status groupedGemm(tprt_dtype dtype, bool transB, int groups,
                                  const int64_t *rows, int64_t n, int64_t k,
                                  float alpha, const void *a, int64_t lda,
                                  const void *b, int64_t ldb, int64_t strideB,
                                  float beta, void *c, int64_t ldc);

  /// Row-major C = act(op(A) op(B) + addend + bias) (see
  /// tprt_gemm_epilogue), arguments already checked, m and n > 0; addend
  /// and bias may be null. The default multiplies on the host in f32 (f64)
  /// and makes one pass over C (hostGemmEpilogue); GPU backends run one
  /// cuBLASLt matmul with a fused epilogue.
  virtual tprt_status gemmEpilogue(tprt_dtype dtype, bool transA, bool transB,
                                   int64_t m, int64_t n, int64_t k,
                                   const void *a, int64_t lda, const void *b,
                                   int64_t ldb, const void *addend,
                                   int64_t ldAddend, const void *bias,
                                   int activation, void *c, int64_t ldc);

  /// Buffers for collectives; the defaults use 64-byte aligned host memory.
  virtual tprt_status allocate(size_t bytes, void **out);
  virtual void release(void *ptr);

  /// True when allocate() returns device memory (tprt_memory_is_device).
  virtual bool deviceMemory() const { return false; }
  /// Copies `bytes` between any two buffers (host or device), ordered after
  /// the work already issued and complete on return.
  virtual tprt_status copyBytes(void *dst, const void *src, size_t bytes);
  /// `height` rows of `width` bytes from src (rows `srcPitch` bytes apart) to
  /// dst (rows `dstPitch` apart); buffers of collectives, so device memory
  /// on device backends. Stream-ordered: may return before it completes.
  virtual tprt_status copy2D(void *dst, size_t dstPitch, const void *src,
                             size_t srcPitch, size_t width, size_t height);
  /// allGather of host memory (the mismatch check, the hostname exchange);
  /// complete on return. The default is allGather().
  virtual tprt_status allGatherHost(Communicator &comm, const void *in,
                                    void *out, size_t bytes);
  /// Waits for the work issued so far and adds the times of the finished
  /// timerEnd() intervals to their accumulators.
  virtual tprt_status synchronize() { return TPRT_OK; }

  /// One timed interval; the default measures the host clock.
  struct TimerMark {
    std::chrono::steady_clock::time_point host;
    int slot = -1; // a device backend's event pair, or -1
  };
  virtual void timerBegin(TimerMark &mark);
  /// Adds the interval's seconds to *accumulator, at once or, for device
  /// backends, at the next synchronize(); *accumulator must stay valid.
  virtual void timerEnd(TimerMark &mark, double *accumulator);
  /// Drops an interval whose call failed.
  virtual void timerCancel(TimerMark &mark) { mark.slot = -1; }

  /// The host name this rank reports for the topology (Topology.h).
  virtual std::string hostName() const;
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
/// "nccl", "cuda" or "cuda-shared": loads libtprt_cuda.so (CudaLoader.cpp).
tprt_status createCudaBackend(const std::string &name,
                              std::unique_ptr<Backend> &out);

/// Views `src` as rows x cols blocks of blockBytes bytes and writes the
/// transpose to `dst` through backend.copy2D(): min(rows, cols) 2-D copies.
tprt_status transposeBlocks(Backend &backend, const void *src, void *dst,
                            size_t rows, size_t cols, size_t blockBytes);

} // namespace tprt

#endif // TPRT_COMMON_BACKEND_H
