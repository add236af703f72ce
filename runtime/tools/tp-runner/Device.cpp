//===- Device.cpp - Buffers on GPU backends and the node topology ---------===//
//
// See Device.h. Only tprt.h calls: the runner stays free of CUDA, and the
// same code serves host memory (CPU backends), where every copy is a
// tprt_memcpy between host arrays and every collective runs in place.
//
//===----------------------------------------------------------------------===//

#include "Device.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace tprun {

DeviceMemory::DeviceMemory(tprt_context *ctx, DeviceFailure &failure)
    : ctx(ctx) {
  int isDevice = 0;
  tprt_status status = tprt_memory_is_device(ctx, &isDevice);
  if (status != TPRT_OK) {
    failure = {status, "tprt_memory_is_device"};
    return;
  }
  device = isDevice != 0;
}

tprt_status DeviceMemory::copy(void *dst, const void *src,
                               size_t bytes) const {
  if (bytes == 0)
    return TPRT_OK;
  if (!device) {
    std::memcpy(dst, src, bytes);
    return TPRT_OK;
  }
  return tprt_memcpy(ctx, dst, src, bytes);
}

tprt_status DeviceMemory::upload(void *buffer, const void *host,
                                 size_t bytes) const {
  return copy(buffer, host, bytes);
}

tprt_status DeviceMemory::download(void *host, const void *buffer,
                                   size_t bytes) const {
  return copy(host, buffer, bytes);
}

tprt_status DeviceMemory::synchronize() const {
  return device ? tprt_synchronize(ctx) : TPRT_OK;
}

namespace {

/// Device scratch buffers, freed on every path.
struct Scratch {
  tprt_context *ctx;
  void *in = nullptr, *out = nullptr;
  ~Scratch() {
    tprt_free(ctx, in);
    tprt_free(ctx, out);
  }
};

} // namespace

tprt_status DeviceMemory::allReduce(tprt_group *group, tprt_dtype dtype,
                                    tprt_reduction op, const void *in,
                                    void *out, int rank, const int64_t *shape,
                                    size_t inBytes, const char *&call) const {
  call = "tprt_all_reduce";
  if (!device || inBytes == 0)
    return tprt_all_reduce(ctx, group, dtype, op, in, out, rank, shape,
                           nullptr);
  Scratch scratch{ctx};
  tprt_status status = tprt_alloc(ctx, inBytes, &scratch.in);
  if (status != TPRT_OK)
    return call = "tprt_alloc", status;
  if ((status = tprt_memcpy(ctx, scratch.in, in, inBytes)) != TPRT_OK)
    return call = "tprt_memcpy", status;
  // In place: all_reduce accepts in == out.
  if ((status = tprt_all_reduce(ctx, group, dtype, op, scratch.in, scratch.in,
                                rank, shape, nullptr)) != TPRT_OK)
    return status;
  if ((status = tprt_memcpy(ctx, out, scratch.in, inBytes)) != TPRT_OK)
    return call = "tprt_memcpy", status;
  return TPRT_OK;
}

tprt_status DeviceMemory::allGather(tprt_group *group, tprt_dtype dtype,
                                    const void *in, void *out, int rank,
                                    const int64_t *shape, int dim,
                                    size_t inBytes, size_t outBytes,
                                    const char *&call) const {
  call = "tprt_all_gather";
  if (!device || inBytes == 0)
    return tprt_all_gather(ctx, group, dtype, in, out, rank, shape, dim,
                           nullptr);
  Scratch scratch{ctx};
  tprt_status status = tprt_alloc(ctx, inBytes, &scratch.in);
  if (status == TPRT_OK)
    status = tprt_alloc(ctx, outBytes, &scratch.out);
  if (status != TPRT_OK)
    return call = "tprt_alloc", status;
  if ((status = tprt_memcpy(ctx, scratch.in, in, inBytes)) != TPRT_OK)
    return call = "tprt_memcpy", status;
  if ((status = tprt_all_gather(ctx, group, dtype, scratch.in, scratch.out,
                                rank, shape, dim, nullptr)) != TPRT_OK)
    return status;
  if ((status = tprt_memcpy(ctx, out, scratch.out, outBytes)) != TPRT_OK)
    return call = "tprt_memcpy", status;
  return TPRT_OK;
}

bool checkTopology(tprt_context *ctx, const Model &model, int worldSize,
                   TopologyProblem &problem, DeviceFailure &failure) {
  problem = TopologyProblem();
  if (model.axisSizes.empty() || worldSize <= 1)
    return true;
  int nodeCount = 1;
  if (tprt_status status = tprt_node_count(ctx, &nodeCount);
      status != TPRT_OK) {
    failure = {status, "tprt_node_count"};
    return false;
  }
  if (nodeCount <= 1)
    return true;
  std::vector<int> nodes(size_t(worldSize), 0);
  for (int r = 0; r < worldSize; ++r)
    if (tprt_status status = tprt_node_of(ctx, r, &nodes[size_t(r)]);
        status != TPRT_OK) {
      failure = {status, "tprt_node_of"};
      return false;
    }
  // The groups of the last axis: runs of `width` consecutive ranks.
  int64_t width = model.axisSizes.back();
  if (width <= 1)
    return true;
  for (int64_t first = 0; first + width <= worldSize; first += width) {
    std::set<int> distinct;
    for (int64_t r = first; r < first + width; ++r)
      distinct.insert(nodes[size_t(r)]);
    if (distinct.size() <= 1)
      continue;
    problem.axis = model.axisNames.empty() ? "tp" : model.axisNames.back();
    for (int64_t r = first; r < first + width; ++r)
      problem.ranks.push_back(int(r));
    problem.nodes.assign(distinct.begin(), distinct.end());
    int home = nodes[size_t(first)];
    problem.ranksPerNode =
        int(std::count(nodes.begin(), nodes.end(), home));
    return true;
  }
  return true;
}

std::string topologyMessage(const TopologyProblem &problem) {
  std::string ranks;
  for (size_t i = 0; i < problem.ranks.size(); ++i)
    ranks += (i ? "," : "") + std::to_string(problem.ranks[i]);
  std::string nodes;
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    if (i)
      nodes += i + 1 == problem.nodes.size() ? " and " : ", ";
    nodes += std::to_string(problem.nodes[i]);
  }
  const std::string &axis = problem.axis;
  return axis + " group {" + ranks + "} spans nodes " + nodes +
         ": keep the " + axis + " axis inside a node (ranks per node " +
         std::to_string(problem.ranksPerNode) + "); order the mesh so that " +
         axis + " is the last axis or use a smaller " + axis;
}

} // namespace tprun
