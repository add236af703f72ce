//===- MpiBackend.cpp - The Open MPI backend ------------------------------===//
//
// "mpi": one rank per process. The context works on a duplicate of
// MPI_COMM_WORLD; a group is an MPI communicator made by
// MPI_Comm_create_group, which only the group's members call. Errors come
// back as return codes (MPI_ERRORS_RETURN) and become TPRT_ERROR_BACKEND.
//
// f32, f64, i32 and i64 reduce with MPI's own types and operations. MPI has
// no 16-bit floats, so f16 and bf16 are widened to f32, reduced as f32 and
// rounded once to nearest-even: exact MAX/MIN, and a SUM rounded once rather
// than once per hop; the price is twice the bytes on the wire. All-reduces
// run in chunks so that counts fit MPI's int and the f32 copy stays small.
//
// MPI is initialised by the first context unless the program did it, and
// finalised with the last context if this library initialised it.
//
//===----------------------------------------------------------------------===//

#include "common/Backend.h"
#include "common/DType.h"
#include "common/Error.h"
#include "mpi/MpiError.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <map>
#include <vector>

using namespace tprt;

namespace {

/// Live MPI contexts, and whether this library called MPI_Init.
int liveContexts = 0;
bool initialisedByUs = false;

/// Elements per MPI call of an all-reduce.
constexpr size_t kChunk = size_t(1) << 30;
/// Elements per chunk of a 16-bit all-reduce (a 16 MiB f32 copy).
constexpr size_t kHalfChunk = size_t(1) << 22;

MPI_Datatype mpiType(tprt_dtype dtype) {
  switch (dtype) {
  case TPRT_F32:
  case TPRT_F16: // reduced as f32
  case TPRT_BF16:
    return MPI_FLOAT;
  case TPRT_F64:
    return MPI_DOUBLE;
  case TPRT_I32:
    return MPI_INT32_T;
  case TPRT_I64:
    return MPI_INT64_T;
  case TPRT_DTYPE_FORCE_32BIT:
    break;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpiOp(tprt_reduction op) {
  switch (op) {
  case TPRT_SUM:
    return MPI_SUM;
  case TPRT_MAX:
    return MPI_MAX;
  case TPRT_MIN:
    return MPI_MIN;
  case TPRT_REDUCTION_FORCE_32BIT:
    break;
  }
  return MPI_OP_NULL;
}

class MpiCommunicator final : public Communicator {
public:
  explicit MpiCommunicator(MPI_Comm comm) : comm(comm) {}
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  }

  MPI_Comm comm;
};

MPI_Comm commOf(Communicator &comm) {
  return static_cast<MpiCommunicator &>(comm).comm;
}

class MpiBackend final : public Backend {
public:
  ~MpiBackend() override;

  tprt_status initialize();

  const char *name() const override { return "mpi"; }
  int rank() const override { return worldRank; }
  int size() const override { return worldSize; }

  tprt_status createCommunicator(const std::vector<int> &ranks,
                                 std::unique_ptr<Communicator> &out) override;
  tprt_status allReduce(Communicator &comm, tprt_dtype dtype, tprt_reduction op,
                        const void *in, void *out, size_t count) override;
  tprt_status allGather(Communicator &comm, const void *in, void *out,
                        size_t bytes) override;
  tprt_status reduceScatter(Communicator &comm, tprt_dtype dtype,
                            tprt_reduction op, const void *in, void *out,
                            size_t count) override;
  tprt_status allToAll(Communicator &comm, const void *in, void *out,
                       size_t bytes) override;
  tprt_status barrier(Communicator &comm) override;

private:
  /// A datatype and count that describe `bytes` contiguous bytes with an
  /// int count: MPI_BYTE, or a contiguous block of a power-of-two size.
  tprt_status byteType(size_t bytes, MPI_Datatype &type, int &count);

  MPI_Comm world = MPI_COMM_NULL;
  int worldRank = 0;
  int worldSize = 1;
  bool counted = false;
  std::map<size_t, MPI_Datatype> blockTypes;
  std::vector<float> wide;
  std::vector<float> wideOut;
};

tprt_status MpiBackend::initialize() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return fail(TPRT_ERROR_BACKEND,
                "mpi was finalised already and cannot be initialised again "
                "in this process");
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Init_thread");
    initialisedByUs = true;
  }
  ++liveContexts;
  counted = true;
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &world);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Comm_dup");
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world, &worldRank);
  MPI_Comm_size(world, &worldSize);
  return TPRT_OK;
}

MpiBackend::~MpiBackend() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    for (auto &entry : blockTypes)
      MPI_Type_free(&entry.second);
    if (world != MPI_COMM_NULL)
      MPI_Comm_free(&world);
  }
  if (counted && --liveContexts == 0 && initialisedByUs && !finalized) {
    MPI_Finalize();
    initialisedByUs = false;
  }
}

tprt_status MpiBackend::createCommunicator(const std::vector<int> &ranks,
                                           std::unique_ptr<Communicator> &out) {
  MPI_Group worldGroup, group;
  int rc = MPI_Comm_group(world, &worldGroup);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Comm_group");
  rc = MPI_Group_incl(worldGroup, int(ranks.size()), ranks.data(), &group);
  MPI_Group_free(&worldGroup);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Group_incl");
  MPI_Comm comm = MPI_COMM_NULL;
  rc = MPI_Comm_create_group(world, group, /*tag=*/0, &comm);
  MPI_Group_free(&group);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Comm_create_group");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  out = std::make_unique<MpiCommunicator>(comm);
  return TPRT_OK;
}

tprt_status MpiBackend::byteType(size_t bytes, MPI_Datatype &type, int &count) {
  if (bytes <= size_t(INT_MAX)) {
    type = MPI_BYTE;
    count = int(bytes);
    return TPRT_OK;
  }
  for (size_t block = 2; block <= (size_t(1) << 20); block *= 2) {
    if (bytes % block != 0)
      break;
    if (bytes / block > size_t(INT_MAX))
      continue;
    auto it = blockTypes.find(block);
    if (it == blockTypes.end()) {
      MPI_Datatype blockType;
      MPI_Type_contiguous(int(block), MPI_BYTE, &blockType);
      MPI_Type_commit(&blockType);
      it = blockTypes.emplace(block, blockType).first;
    }
    type = it->second;
    count = int(bytes / block);
    return TPRT_OK;
  }
  return fail(TPRT_ERROR_INVALID_ARGUMENT,
              "%zu bytes per rank cannot be described to mpi with an int "
              "count",
              bytes);
}

tprt_status MpiBackend::allReduce(Communicator &comm, tprt_dtype dtype,
                                  tprt_reduction op, const void *in, void *out,
                                  size_t count) {
  MPI_Comm c = commOf(comm);
  if (isHalfType(dtype)) {
    const char *src = static_cast<const char *>(in);
    char *dst = static_cast<char *>(out);
    wide.resize(std::min(count, kHalfChunk));
    for (size_t done = 0; done < count; done += kHalfChunk) {
      size_t n = std::min(kHalfChunk, count - done);
      toFloat(dtype, src + done * 2, wide.data(), n);
      int rc = MPI_Allreduce(MPI_IN_PLACE, wide.data(), int(n), MPI_FLOAT,
                             mpiOp(op), c);
      if (rc != MPI_SUCCESS)
        return mpiError(rc, "MPI_Allreduce");
      fromFloat(dtype, wide.data(), dst + done * 2, n);
    }
    return TPRT_OK;
  }
  size_t elementSize = dtypeSize(dtype);
  for (size_t done = 0; done < count; done += kChunk) {
    size_t n = std::min(kChunk, count - done);
    const char *src = static_cast<const char *>(in) + done * elementSize;
    char *dst = static_cast<char *>(out) + done * elementSize;
    int rc = MPI_Allreduce(src == dst ? MPI_IN_PLACE : src, dst, int(n),
                           mpiType(dtype), mpiOp(op), c);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Allreduce");
  }
  return TPRT_OK;
}

tprt_status MpiBackend::allGather(Communicator &comm, const void *in, void *out,
                                  size_t bytes) {
  MPI_Datatype type = MPI_BYTE;
  int count = 0;
  if (tprt_status status = byteType(bytes, type, count))
    return status;
  int rc = MPI_Allgather(in, count, type, out, count, type, commOf(comm));
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Allgather");
  return TPRT_OK;
}

tprt_status MpiBackend::reduceScatter(Communicator &comm, tprt_dtype dtype,
                                      tprt_reduction op, const void *in,
                                      void *out, size_t count) {
  if (count > size_t(INT_MAX))
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "%zu elements per rank exceed the int count of "
                "MPI_Reduce_scatter_block",
                count);
  MPI_Comm c = commOf(comm);
  if (!isHalfType(dtype)) {
    int rc = MPI_Reduce_scatter_block(in, out, int(count), mpiType(dtype),
                                      mpiOp(op), c);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Reduce_scatter_block");
    return TPRT_OK;
  }
  int groupSize;
  MPI_Comm_size(c, &groupSize);
  wide.resize(count * size_t(groupSize));
  wideOut.resize(count);
  toFloat(dtype, in, wide.data(), wide.size());
  int rc = MPI_Reduce_scatter_block(wide.data(), wideOut.data(), int(count),
                                    MPI_FLOAT, mpiOp(op), c);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Reduce_scatter_block");
  fromFloat(dtype, wideOut.data(), out, count);
  return TPRT_OK;
}

tprt_status MpiBackend::allToAll(Communicator &comm, const void *in, void *out,
                                 size_t bytes) {
  MPI_Datatype type = MPI_BYTE;
  int count = 0;
  if (tprt_status status = byteType(bytes, type, count))
    return status;
  int rc = MPI_Alltoall(in, count, type, out, count, type, commOf(comm));
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Alltoall");
  return TPRT_OK;
}

tprt_status MpiBackend::barrier(Communicator &comm) {
  int rc = MPI_Barrier(commOf(comm));
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Barrier");
  return TPRT_OK;
}

} // namespace

tprt_status tprt::createMpiBackend(std::unique_ptr<Backend> &out) {
  auto backend = std::make_unique<MpiBackend>();
  if (tprt_status status = backend->initialize())
    return status;
  out = std::move(backend);
  return TPRT_OK;
}
