//===- Collectives.cpp - C entry points of the collectives ----------------===//
//
// Every collective runs in four steps:
//
//  1. Check the arguments locally (dtype, reduction, shape, dimensions,
//     divisibility by the group size, pointers, overlap). A failure is not
//     returned yet: it is recorded in the call header.
//  2. The mismatch check (on by default except on nccl, where it is a debug
//     mode: TPRT_CHECK_COLLECTIVES=1; TPRT_CHECK=0 or TPRT_CHECK_COLLECTIVES=0
//     turns it off everywhere, see Api.cpp): the members allgather their
//     fixed-size CallHeader (kind, dtype, reduction, shape, dimensions,
//     argument-check status). A rank whose own check failed returns its
//     error; the others return TPRT_ERROR_MISMATCH naming it; if the calls
//     differ, every rank returns TPRT_ERROR_MISMATCH naming the first pair
//     that differs. So all members fail together and no data moves. With
//     the check off a local failure returns at once (its peers then wait in
//     the collective) and mismatched calls are undefined behaviour.
//  3. Pack for non-leading dimensions (Layout.h), call the backend on
//     contiguous blocks, unpack. Packing runs through the backend's copy2D()
//     into its scratch memory, so device buffers stay on the device.
//  4. Count the call, its bytes and its time in the context's tprt_stats
//     (on GPU backends the time is measured with events on the stream and
//     added at the next synchronization, see Backend::timerEnd).
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "DType.h"
#include "Error.h"
#include "Layout.h"

#include <cstring>
#include <string>

using namespace tprt;

#define TPRT_EXPORT extern "C" TPRT_API

namespace {

/// What one member asks for; exchanged by the mismatch check.
struct CallHeader {
  int32_t kind;
  int32_t dtype;
  int32_t op; // tprt_reduction, or -1
  int32_t rank;
  int32_t dim;    // dim or split_dim, or -1
  int32_t dim2;   // concat_dim, or -1
  int32_t status; // the result of this member's argument check
  int32_t worldRank;
  int64_t shape[TPRT_MAX_RANK];
};

const char *kindName(int32_t kind) {
  switch (kind) {
  case TPRT_ALL_REDUCE:
    return "all_reduce";
  case TPRT_ALL_GATHER:
    return "all_gather";
  case TPRT_REDUCE_SCATTER:
    return "reduce_scatter";
  case TPRT_ALL_TO_ALL:
    return "all_to_all";
  }
  return "?";
}

const char *reductionName(int32_t op) {
  switch (op) {
  case TPRT_SUM:
    return "sum";
  case TPRT_MAX:
    return "max";
  case TPRT_MIN:
    return "min";
  }
  return "?";
}

std::string shapeText(int rank, const int64_t *shape) {
  std::string text = "[";
  for (int i = 0; i < rank; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// "reduce_scatter(sum, bf16, [4, 8], dim 1)"
std::string describe(const CallHeader &h) {
  std::string text = std::string(kindName(h.kind)) + "(";
  if (h.op >= 0)
    text += std::string(reductionName(h.op)) + ", ";
  text += std::string(dtypeName(tprt_dtype(h.dtype))) + ", " +
          shapeText(h.rank, h.shape);
  if (h.kind == TPRT_ALL_TO_ALL)
    text += ", split " + std::to_string(h.dim) + ", concat " +
            std::to_string(h.dim2);
  else if (h.dim >= 0)
    text += ", dim " + std::to_string(h.dim);
  return text + ")";
}

bool sameCall(const CallHeader &a, const CallHeader &b) {
  if (a.kind != b.kind || a.dtype != b.dtype || a.op != b.op ||
      a.rank != b.rank || a.dim != b.dim || a.dim2 != b.dim2)
    return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != b.shape[i])
      return false;
  return true;
}

bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes && bBytes && x < y + bBytes && y < x + aBytes;
}

/// One collective call: its header, the sizes derived from it, and the
/// buffers.
struct Call {
  CallHeader header = {};
  const int64_t *shape = nullptr;
  const void *in = nullptr;
  void *out = nullptr;
  size_t elementSize = 0;
  size_t inBytes = 0;
  size_t outBytes = 0;

  Call(tprt_collective kind, tprt_dtype dtype, int op, int rank,
       const int64_t *shape, int dim, int dim2, const void *in, void *out)
      : shape(shape), in(in), out(out) {
    header.kind = kind;
    header.dtype = dtype;
    header.op = op;
    header.rank = rank;
    header.dim = dim;
    header.dim2 = dim2;
    if (shape)
      for (int i = 0; i < rank && i < TPRT_MAX_RANK; ++i)
        header.shape[i] = shape[i];
  }

  tprt_dtype dtype() const { return tprt_dtype(header.dtype); }
  tprt_reduction op() const { return tprt_reduction(header.op); }
  int rank() const { return header.rank; }
  int dim() const { return header.dim; }

  /// Checks the arguments for a group of `groupSize` and fills in the sizes.
  tprt_status check(int groupSize);

private:
  tprt_status checkDimension(const char *name, int value) const;
  tprt_status checkDivisible(int value, int groupSize) const;
};

tprt_status Call::checkDimension(const char *name, int value) const {
  if (value < 0 || value >= rank())
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "%s %d is out of range for a tensor of rank %d", name, value,
                rank());
  return TPRT_OK;
}

tprt_status Call::checkDivisible(int value, int groupSize) const {
  if (shape[value] % groupSize != 0)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "dimension %d of size %lld is not divisible by the group "
                "size %d",
                value, static_cast<long long>(shape[value]), groupSize);
  return TPRT_OK;
}

tprt_status Call::check(int groupSize) {
  if (!isValidDType(header.dtype))
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "dtype %d is not a tprt_dtype",
                header.dtype);
  bool reduces =
      header.kind == TPRT_ALL_REDUCE || header.kind == TPRT_REDUCE_SCATTER;
  if (reduces && (header.op < TPRT_SUM || header.op > TPRT_MIN))
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "reduction %d is not a tprt_reduction", header.op);
  if (rank() < 0 || rank() > TPRT_MAX_RANK)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "rank %d is out of range [0, %d]",
                rank(), TPRT_MAX_RANK);
  if (rank() > 0 && !shape)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "shape is null for rank %d",
                rank());
  elementSize = dtypeSize(dtype());
  size_t bytes = elementSize;
  for (int i = 0; i < rank(); ++i) {
    if (shape[i] < 0)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "dimension %d of the shape %s is negative", i,
                  shapeText(rank(), shape).c_str());
    if (__builtin_mul_overflow(bytes, size_t(shape[i]), &bytes))
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "the shape %s overflows the address space",
                  shapeText(rank(), shape).c_str());
  }
  inBytes = outBytes = bytes;

  switch (header.kind) {
  case TPRT_ALL_REDUCE:
    break;
  case TPRT_ALL_GATHER:
    if (tprt_status status = checkDimension("dimension", dim()))
      return status;
    if (__builtin_mul_overflow(bytes, size_t(groupSize), &outBytes))
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "the gathered shape overflows the address space");
    break;
  case TPRT_REDUCE_SCATTER:
    if (tprt_status status = checkDimension("dimension", dim()))
      return status;
    if (tprt_status status = checkDivisible(dim(), groupSize))
      return status;
    outBytes = bytes / size_t(groupSize);
    break;
  case TPRT_ALL_TO_ALL:
    if (tprt_status status = checkDimension("split_dim", header.dim))
      return status;
    if (tprt_status status = checkDimension("concat_dim", header.dim2))
      return status;
    if (tprt_status status = checkDivisible(header.dim, groupSize))
      return status;
    break;
  }

  if (!in && inBytes)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "in is null");
  if (!out && outBytes)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "out is null");
  bool inPlaceAllowed = header.kind == TPRT_ALL_REDUCE && in == out;
  if (!inPlaceAllowed && overlaps(in, inBytes, out, outBytes))
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                header.kind == TPRT_ALL_REDUCE
                    ? "in and out overlap without being equal"
                    : "in and out overlap");
  return TPRT_OK;
}

tprt_status checkHandles(tprt_context *ctx, tprt_group *group) {
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"group", group}}))
    return status;
  if (group->ctx != ctx)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "the group belongs to another context");
  return TPRT_OK;
}

/// Step 2 of the file comment: the members compare their call headers.
tprt_status exchangeHeaders(tprt_context *ctx, tprt_group *group,
                            const CallHeader &mine) {
  Clock::time_point start = Clock::now();
  std::vector<CallHeader> all(size_t(group->size()));
  tprt_status status = ctx->backend->allGatherHost(
      *group->comm, &mine, all.data(), sizeof(CallHeader));
  ctx->stats.checks += 1;
  ctx->stats.check_seconds += secondsSince(start);
  if (status)
    return status;
  if (mine.status != TPRT_OK)
    return tprt_status(mine.status); // its message is already set
  for (const CallHeader &other : all)
    if (other.status != TPRT_OK)
      return fail(TPRT_ERROR_MISMATCH,
                  "rank %d failed its argument check with %s; no data was "
                  "exchanged",
                  other.worldRank, tprt_status_name(tprt_status(other.status)));
  for (const CallHeader &other : all)
    if (!sameCall(all[0], other))
      return fail(TPRT_ERROR_MISMATCH,
                  "group members disagree: rank %d called %s but rank %d "
                  "called %s",
                  all[0].worldRank, describe(all[0]).c_str(), other.worldRank,
                  describe(other).c_str());
  return TPRT_OK;
}

/// Runs steps 1 to 4 of the file comment; `body` moves the data.
template <typename Body>
tprt_status runCollective(tprt_context *ctx, tprt_group *group, Call &call,
                          Body &&body) {
  if (tprt_status status = checkHandles(ctx, group))
    return status;
  Backend::TimerMark mark;
  ctx->backend->timerBegin(mark);
  call.header.worldRank = ctx->backend->rank();
  call.header.status = call.check(group->size());
  if (ctx->check) {
    if (tprt_status status = exchangeHeaders(ctx, group, call.header)) {
      ctx->backend->timerCancel(mark);
      return status;
    }
  } else if (call.header.status != TPRT_OK) {
    ctx->backend->timerCancel(mark);
    return tprt_status(call.header.status);
  }

  if (tprt_status status = body()) {
    ctx->backend->timerCancel(mark);
    return status;
  }

  // nccl-tests' sizes: the buffer of all_reduce, the (larger) output of
  // all_gather, the input of the others.
  int kind = call.header.kind;
  uint64_t bytes = kind == TPRT_ALL_GATHER ? call.outBytes : call.inBytes;
  double n = group->size();
  double busFactor = kind == TPRT_ALL_REDUCE ? 2 * (n - 1) / n : (n - 1) / n;
  tprt_stats &stats = ctx->stats;
  stats.calls[kind] += 1;
  stats.bytes[kind] += bytes;
  stats.bytes_sent[kind] += uint64_t(double(bytes) * busFactor);
  ctx->backend->timerEnd(mark, &stats.seconds[kind]);
  return TPRT_OK;
}

} // namespace

TPRT_EXPORT tprt_status tprt_all_reduce(tprt_context *ctx, tprt_group *group,
                                        tprt_dtype dtype, tprt_reduction op,
                                        const void *in, void *out, int rank,
                                        const int64_t *shape, void *stream) {
  ApiScope scope("tprt_all_reduce");
  (void)stream;
  return guard([&]() -> tprt_status {
    Call call(TPRT_ALL_REDUCE, dtype, op, rank, shape, -1, -1, in, out);
    return runCollective(ctx, group, call, [&] {
      return ctx->backend->allReduce(*group->comm, dtype, op, in, out,
                                     call.inBytes / call.elementSize);
    });
  });
}

TPRT_EXPORT tprt_status tprt_all_gather(tprt_context *ctx, tprt_group *group,
                                        tprt_dtype dtype, const void *in,
                                        void *out, int rank,
                                        const int64_t *in_shape, int dim,
                                        void *stream) {
  ApiScope scope("tprt_all_gather");
  (void)stream;
  return guard([&]() -> tprt_status {
    Call call(TPRT_ALL_GATHER, dtype, -1, rank, in_shape, dim, -1, in, out);
    return runCollective(ctx, group, call, [&]() -> tprt_status {
      // The input is [outer][block]; the gathered blocks arrive as
      // [p][outer][block] and out is [outer][p][block].
      size_t outer = size_t(shapeProduct(in_shape, 0, dim));
      if (outer <= 1)
        return ctx->backend->allGather(*group->comm, in, out, call.inBytes);
      void *gathered = nullptr;
      if (tprt_status status = ctx->scratch[0].get(call.outBytes, gathered))
        return status;
      if (tprt_status status =
              ctx->backend->allGather(*group->comm, in, gathered, call.inBytes))
        return status;
      return transposeBlocks(*ctx->backend, gathered, out,
                             size_t(group->size()), outer,
                             call.inBytes / outer);
    });
  });
}

TPRT_EXPORT tprt_status tprt_reduce_scatter(tprt_context *ctx,
                                            tprt_group *group, tprt_dtype dtype,
                                            tprt_reduction op, const void *in,
                                            void *out, int rank,
                                            const int64_t *in_shape, int dim,
                                            void *stream) {
  ApiScope scope("tprt_reduce_scatter");
  (void)stream;
  return guard([&]() -> tprt_status {
    Call call(TPRT_REDUCE_SCATTER, dtype, op, rank, in_shape, dim, -1, in, out);
    return runCollective(ctx, group, call, [&]() -> tprt_status {
      // The input is [outer][p][block]; the backend wants [p][outer][block].
      size_t outer = size_t(shapeProduct(in_shape, 0, dim));
      size_t count = call.outBytes / call.elementSize;
      if (outer <= 1)
        return ctx->backend->reduceScatter(*group->comm, dtype, op, in, out,
                                           count);
      void *packed = nullptr;
      if (tprt_status status = ctx->scratch[0].get(call.inBytes, packed))
        return status;
      if (tprt_status status =
              transposeBlocks(*ctx->backend, in, packed, outer,
                              size_t(group->size()), call.outBytes / outer))
        return status;
      return ctx->backend->reduceScatter(*group->comm, dtype, op, packed, out,
                                         count);
    });
  });
}

TPRT_EXPORT tprt_status tprt_all_to_all(tprt_context *ctx, tprt_group *group,
                                        tprt_dtype dtype, const void *in,
                                        void *out, int rank,
                                        const int64_t *in_shape, int split_dim,
                                        int concat_dim, void *stream) {
  ApiScope scope("tprt_all_to_all");
  (void)stream;
  return guard([&]() -> tprt_status {
    Call call(TPRT_ALL_TO_ALL, dtype, -1, rank, in_shape, split_dim, concat_dim,
              in, out);
    return runCollective(ctx, group, call, [&]() -> tprt_status {
      size_t p = size_t(group->size());
      size_t pieceBytes = call.inBytes / p;
      // The shape of one piece: in_shape with split_dim divided by p.
      int64_t piece[TPRT_MAX_RANK];
      std::memcpy(piece, in_shape, sizeof(int64_t) * size_t(rank));
      piece[split_dim] /= int64_t(p);

      // Send buffer [p][piece]: in is [outerSplit][p][block].
      const void *send = in;
      size_t outerSplit = size_t(shapeProduct(in_shape, 0, split_dim));
      if (outerSplit > 1) {
        void *packed = nullptr;
        if (tprt_status status = ctx->scratch[0].get(call.inBytes, packed))
          return status;
        if (tprt_status status =
                transposeBlocks(*ctx->backend, in, packed, outerSplit, p,
                                pieceBytes / outerSplit))
          return status;
        send = packed;
      }
      // Received [p][piece]; out is [outerConcat][p][block].
      size_t outerConcat = size_t(shapeProduct(piece, 0, concat_dim));
      void *received = out;
      if (outerConcat > 1)
        if (tprt_status status = ctx->scratch[1].get(call.outBytes, received))
          return status;
      if (tprt_status status =
              ctx->backend->allToAll(*group->comm, send, received, pieceBytes))
        return status;
      if (outerConcat > 1)
        return transposeBlocks(*ctx->backend, received, out, p, outerConcat,
                               pieceBytes / outerConcat);
      return TPRT_OK;
    });
  });
}

TPRT_EXPORT tprt_status tprt_barrier(tprt_context *ctx, tprt_group *group) {
  ApiScope scope("tprt_barrier");
  return guard([&]() -> tprt_status {
    if (tprt_status status = checkHandles(ctx, group))
      return status;
    return ctx->backend->barrier(*group->comm);
  });
}
