//===- Api.cpp - C entry points: contexts, groups, GEMM, counters ---------===//
//
// The collectives are in Collectives.cpp. Every entry point names itself
// with an ApiScope, checks its arguments, and runs under guard() so that no
// exception crosses the C boundary.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "DType.h"
#include "Error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

using namespace tprt;

#define TPRT_EXPORT extern "C" TPRT_API

namespace {

/// Returns the cached group of `ranks` or creates it (collective over
/// `ranks`); `ranks` has been checked and contains the caller.
tprt_status getGroup(tprt_context *ctx, const std::vector<int> &ranks,
                     tprt_group **out) {
  auto it = ctx->groups.find(ranks);
  if (it == ctx->groups.end()) {
    auto group = std::make_unique<tprt_group>();
    group->ctx = ctx;
    group->ranks = ranks;
    group->index = static_cast<int>(
        std::find(ranks.begin(), ranks.end(), ctx->backend->rank()) -
        ranks.begin());
    if (tprt_status status =
            ctx->backend->createCommunicator(ranks, group->comm))
      return status;
    it = ctx->groups.emplace(ranks, std::move(group)).first;
  }
  *out = it->second.get();
  return TPRT_OK;
}

/// Checks a user-supplied rank list and returns its group with one more
/// reference.
tprt_status createGroup(tprt_context *ctx, const std::vector<int> &ranks,
                        tprt_group **out) {
  int size = ctx->backend->size();
  int self = ctx->backend->rank();
  std::vector<bool> seen(size_t(size), false);
  for (size_t i = 0; i < ranks.size(); ++i) {
    int rank = ranks[i];
    if (rank < 0 || rank >= size)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "ranks[%zu] is %d, out of range for %d ranks", i, rank, size);
    if (seen[size_t(rank)])
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "rank %d appears twice", rank);
    seen[size_t(rank)] = true;
  }
  if (!seen[size_t(self)])
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "the calling rank %d is not in the group", self);
  tprt_group *group;
  if (tprt_status status = getGroup(ctx, ranks, &group))
    return status;
  ++group->references;
  *out = group;
  return TPRT_OK;
}

tprt_status checkLeadingDimension(const char *name, int64_t ld, int64_t columns,
                                  const char *matrix) {
  if (ld < std::max<int64_t>(1, columns))
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "%s is %lld, smaller than the %lld columns of %s as stored",
                name, static_cast<long long>(ld),
                static_cast<long long>(columns), matrix);
  return TPRT_OK;
}

/// Whether collectives run the mismatch check (docs/runtime.md, "The
/// mismatch check"): TPRT_CHECK_COLLECTIVES=1/0 forces it on/off; otherwise
/// TPRT_CHECK=0 turns it off; otherwise it is on for the CPU backends and
/// cuda-shared (a small host allgather) and off for nccl, where the header
/// exchange is an extra NCCL all-gather and a stream synchronization per
/// collective.
bool checkCollectivesByDefault(const char *backendName) {
  auto flag = [](const char *name) -> int {
    const char *value = std::getenv(name);
    if (!value || !*value)
      return -1;
    return std::strcmp(value, "0") == 0 ? 0 : 1;
  };
  int forced = flag("TPRT_CHECK_COLLECTIVES");
  if (forced >= 0)
    return forced == 1;
  if (flag("TPRT_CHECK") == 0)
    return false;
  return std::strcmp(backendName, "nccl") != 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// Contexts
//===----------------------------------------------------------------------===//

TPRT_EXPORT tprt_status tprt_init(const char *backend, tprt_context **out) {
  ApiScope scope("tprt_init");
  return guard([&]() -> tprt_status {
    if (!out)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "out is null");
    std::string name = backend ? backend : "";
    if (name.empty()) {
      const char *fromEnv = std::getenv("TPRT_BACKEND");
      if (!fromEnv || !*fromEnv)
        return fail(TPRT_ERROR_INVALID_ARGUMENT,
                    "no backend given and TPRT_BACKEND is not set");
      name = fromEnv;
    }
    auto ctx = std::make_unique<tprt_context>();
    if (tprt_status status = createBackend(name, ctx->backend))
      return status;
    ctx->check = checkCollectivesByDefault(ctx->backend->name());
    ctx->timerStart = Clock::now();

    for (Scratch &scratch : ctx->scratch)
      scratch.bind(ctx->backend.get());

    std::vector<int> all(size_t(ctx->backend->size()));
    std::iota(all.begin(), all.end(), 0);
    if (tprt_status status = getGroup(ctx.get(), all, &ctx->world))
      return status;
    ctx->world->isWorld = true;

    // The topology: every rank's host name (Topology.h).
    char mine[HostNameBytes];
    hostNameBlock(ctx->backend->hostName(), mine);
    std::vector<char> names(HostNameBytes * all.size());
    if (tprt_status status = ctx->backend->allGatherHost(
            *ctx->world->comm, mine, names.data(), HostNameBytes))
      return status;
    if (tprt_status status =
            computeTopology(names.data(), int(all.size()), ctx->topology))
      return status;
    *out = ctx.release();
    return TPRT_OK;
  });
}

TPRT_EXPORT tprt_status tprt_finalize(tprt_context *ctx) {
  ApiScope scope("tprt_finalize");
  return guard([&]() -> tprt_status {
    delete ctx;
    return TPRT_OK;
  });
}

TPRT_EXPORT tprt_status tprt_rank(tprt_context *ctx, int *out) {
  ApiScope scope("tprt_rank");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  *out = ctx->backend->rank();
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_size(tprt_context *ctx, int *out) {
  ApiScope scope("tprt_size");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  *out = ctx->backend->size();
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_backend_name(tprt_context *ctx, const char **out) {
  ApiScope scope("tprt_backend_name");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  *out = ctx->backend->name();
  return TPRT_OK;
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

TPRT_EXPORT tprt_status tprt_group_world(tprt_context *ctx, tprt_group **out) {
  ApiScope scope("tprt_group_world");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  *out = ctx->world;
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_group_create(tprt_context *ctx,
                                          int num_ranks_in_group,
                                          const int *ranks, tprt_group **out) {
  ApiScope scope("tprt_group_create");
  return guard([&]() -> tprt_status {
    if (tprt_status status =
            checkNotNull({{"ctx", ctx}, {"ranks", ranks}, {"out", out}}))
      return status;
    if (num_ranks_in_group < 1 || num_ranks_in_group > ctx->backend->size())
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "num_ranks_in_group is %d, expected 1 to %d",
                  num_ranks_in_group, ctx->backend->size());
    return createGroup(ctx, std::vector<int>(ranks, ranks + num_ranks_in_group),
                       out);
  });
}

TPRT_EXPORT tprt_status tprt_group_for_axes(tprt_context *ctx, int mesh_rank,
                                            const int64_t *mesh_shape,
                                            int num_axes, const int *axes,
                                            tprt_group **out) {
  ApiScope scope("tprt_group_for_axes");
  return guard([&]() -> tprt_status {
    if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
      return status;
    if (mesh_rank < 0 || mesh_rank > TPRT_MAX_RANK)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "mesh_rank is %d, expected 0 to %d", mesh_rank,
                  TPRT_MAX_RANK);
    if (mesh_rank > 0 && !mesh_shape)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "mesh_shape is null");
    int64_t devices = 1;
    bool overflow = false;
    std::string meshText;
    for (int i = 0; i < mesh_rank; ++i) {
      if (mesh_shape[i] < 1)
        return fail(TPRT_ERROR_INVALID_ARGUMENT,
                    "mesh_shape[%d] is %lld, expected a size >= 1", i,
                    static_cast<long long>(mesh_shape[i]));
      overflow |= __builtin_mul_overflow(devices, mesh_shape[i], &devices);
      meshText += (i ? ", " : "") + std::to_string(mesh_shape[i]);
    }
    if (overflow || devices != ctx->backend->size())
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "the mesh [%s] has %s devices but the context has %d ranks",
                  meshText.c_str(),
                  overflow ? "too many" : std::to_string(devices).c_str(),
                  ctx->backend->size());
    if (num_axes < 0 || num_axes > mesh_rank)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "num_axes is %d, expected 0 to %d for the mesh [%s]",
                  num_axes, mesh_rank, meshText.c_str());
    if (num_axes > 0 && !axes)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "axes is null");
    std::vector<bool> listed(size_t(mesh_rank), false);
    for (int i = 0; i < num_axes; ++i) {
      if (axes[i] < 0 || axes[i] >= mesh_rank)
        return fail(TPRT_ERROR_INVALID_ARGUMENT,
                    "axes[%d] is %d, out of range for the mesh [%s]", i,
                    axes[i], meshText.c_str());
      if (listed[size_t(axes[i])])
        return fail(TPRT_ERROR_INVALID_ARGUMENT, "axis %d appears twice",
                    axes[i]);
      listed[size_t(axes[i])] = true;
    }

    // The calling device's coordinates, last axis fastest.
    std::vector<int64_t> coords(static_cast<size_t>(mesh_rank));
    int64_t rest = ctx->backend->rank();
    for (int i = mesh_rank - 1; i >= 0; --i) {
      coords[size_t(i)] = rest % mesh_shape[i];
      rest /= mesh_shape[i];
    }
    // Walk the listed axes, the last listed one fastest.
    int64_t groupSize = 1;
    for (int i = 0; i < num_axes; ++i)
      groupSize *= mesh_shape[axes[i]];
    std::vector<int> ranks;
    ranks.reserve(size_t(groupSize));
    for (int64_t index = 0; index < groupSize; ++index) {
      int64_t remaining = index;
      for (int i = num_axes - 1; i >= 0; --i) {
        coords[size_t(axes[i])] = remaining % mesh_shape[axes[i]];
        remaining /= mesh_shape[axes[i]];
      }
      int64_t linear = 0;
      for (int i = 0; i < mesh_rank; ++i)
        linear = linear * mesh_shape[i] + coords[size_t(i)];
      ranks.push_back(static_cast<int>(linear));
    }
    return createGroup(ctx, ranks, out);
  });
}

TPRT_EXPORT tprt_status tprt_group_rank(tprt_group *group, int *out) {
  ApiScope scope("tprt_group_rank");
  if (tprt_status status = checkNotNull({{"group", group}, {"out", out}}))
    return status;
  *out = group->index;
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_group_size(tprt_group *group, int *out) {
  ApiScope scope("tprt_group_size");
  if (tprt_status status = checkNotNull({{"group", group}, {"out", out}}))
    return status;
  *out = group->size();
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_group_destroy(tprt_group *group) {
  ApiScope scope("tprt_group_destroy");
  if (!group || (group->isWorld && group->references == 0))
    return TPRT_OK;
  if (group->references == 0)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "the group of %d ranks was destroyed more often than created",
                group->size());
  --group->references;
  return TPRT_OK;
}

//===----------------------------------------------------------------------===//
// Matrix product
//===----------------------------------------------------------------------===//

TPRT_EXPORT tprt_status tprt_gemm(tprt_context *ctx, tprt_dtype dtype,
                                  int trans_a, int trans_b, int64_t m,
                                  int64_t n, int64_t k, float alpha,
                                  const void *a, int64_t lda, const void *b,
                                  int64_t ldb, float beta, void *c, int64_t ldc,
                                  void *stream) {
  ApiScope scope("tprt_gemm");
  (void)stream;
  return guard([&]() -> tprt_status {
    if (!ctx)
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "ctx is null");
    if (!isValidDType(dtype))
      return fail(TPRT_ERROR_INVALID_ARGUMENT, "dtype %d is not a tprt_dtype",
                  static_cast<int>(dtype));
    if (m < 0 || n < 0 || k < 0)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "m, n and k must be >= 0, got %lld, %lld and %lld",
                  static_cast<long long>(m), static_cast<long long>(n),
                  static_cast<long long>(k));
    if (tprt_status status =
            checkLeadingDimension("lda", lda, trans_a ? m : k, "A"))
      return status;
    if (tprt_status status =
            checkLeadingDimension("ldb", ldb, trans_b ? k : n, "B"))
      return status;
    if (tprt_status status = checkLeadingDimension("ldc", ldc, n, "C"))
      return status;
    if (tprt_status status = checkGemmOperands(a, b, c, m, n, k))
      return status;

    Backend::TimerMark mark;
    ctx->backend->timerBegin(mark);
    tprt_status status =
        ctx->backend->gemm(dtype, trans_a != 0, trans_b != 0, m, n, k, alpha, a,
                           lda, b, ldb, beta, c, ldc);
    if (status) {
      ctx->backend->timerCancel(mark);
      return status;
    }
    ctx->backend->timerEnd(mark, &ctx->stats.gemm_seconds);
    ctx->stats.gemm_calls += 1;
    ctx->stats.gemm_flops += 2.0 * double(m) * double(n) * double(k);
    return TPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Timers, counters and memory
//===----------------------------------------------------------------------===//

TPRT_EXPORT tprt_status tprt_timer_start(tprt_context *ctx) {
  ApiScope scope("tprt_timer_start");
  if (!ctx)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "ctx is null");
  ctx->timerStart = Clock::now();
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_timer_elapsed(tprt_context *ctx, double *out) {
  ApiScope scope("tprt_timer_elapsed");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  // GPU work issued before this call counts: wait for it.
  if (tprt_status status = ctx->backend->synchronize())
    return status;
  *out = secondsSince(ctx->timerStart);
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_stats_get(tprt_context *ctx, tprt_stats *out) {
  ApiScope scope("tprt_stats_get");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  // Adds the device-timed intervals still pending to the counters.
  if (tprt_status status = ctx->backend->synchronize())
    return status;
  *out = ctx->stats;
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_stats_reset(tprt_context *ctx) {
  ApiScope scope("tprt_stats_reset");
  if (!ctx)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "ctx is null");
  // Pending device-timed intervals land in the old counters, not the new.
  if (tprt_status status = ctx->backend->synchronize())
    return status;
  ctx->stats = tprt_stats{};
  return TPRT_OK;
}

TPRT_EXPORT tprt_status tprt_alloc(tprt_context *ctx, size_t bytes,
                                   void **out) {
  ApiScope scope("tprt_alloc");
  if (tprt_status status = checkNotNull({{"ctx", ctx}, {"out", out}}))
    return status;
  return ctx->backend->allocate(bytes, out);
}

TPRT_EXPORT tprt_status tprt_free(tprt_context *ctx, void *ptr) {
  ApiScope scope("tprt_free");
  if (!ctx)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "ctx is null");
  ctx->backend->release(ptr);
  return TPRT_OK;
}
