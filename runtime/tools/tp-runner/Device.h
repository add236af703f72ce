//===- Device.h - Buffers on GPU backends and the node topology -*- C++ -*-===//
//
// What tp-runner does differently when the context's memory is device
// memory (the nccl / cuda-shared backends, tprt_memory_is_device), and the
// check that every tp group lies inside one node (docs/gpu.md).
//
// Buffers: the runner keeps filling inputs and params on the host (init,
// checkpoint) and copies each filled block to its tprt_alloc'ed buffer with
// tprt_memcpy; outputs are copied back after tprt_synchronize. The
// runner's own collectives (the plan check, the failure agreement, the
// assembly of outputs) work on host arrays: on device memory they are
// staged through scratch buffers of tprt_alloc, since NCCL reads and writes
// device memory only.
//
// Topology: devices are numbered row-major over the mesh, last axis
// fastest, and the last axis is the tensor-parallel one (tp-run builds
// [dp, tp] meshes): its groups are consecutive world ranks. A group whose
// ranks lie on different nodes (tprt_node_of) would run its per-layer
// collectives over the inter-node network; the runner refuses it before
// any work, naming the group and the nodes.
//
//===----------------------------------------------------------------------===//

#ifndef TP_RUNNER_DEVICE_H
#define TP_RUNNER_DEVICE_H

#include "Model.h"

#include "tprt/tprt.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tprun {

/// A tprt call that failed: the call's name (the status and the runtime's
/// message come from tprt_last_error()).
struct DeviceFailure {
  tprt_status status = TPRT_OK;
  const char *call = "";
};

/// The memory of one context: host or device, and the copies and
/// host-staged collectives the runner needs on it.
class DeviceMemory {
public:
  /// Asks the context (tprt_memory_is_device). On failure `failure` names
  /// the call and the memory is taken as host memory.
  DeviceMemory(tprt_context *ctx, DeviceFailure &failure);

  bool onDevice() const { return device; }

  /// Copies `bytes` from host memory to a tprt_alloc'ed buffer.
  tprt_status upload(void *buffer, const void *host, size_t bytes) const;
  /// Copies `bytes` from a tprt_alloc'ed buffer to host memory (the rank's
  /// stream is drained first on device memory).
  tprt_status download(void *host, const void *buffer, size_t bytes) const;
  /// Waits for the rank's stream (a no-op on host memory).
  tprt_status synchronize() const;

  /// tprt_all_reduce on host arrays, staged through device scratch
  /// buffers when the context's memory is device memory. `call` names the
  /// failing tprt function.
  tprt_status allReduce(tprt_group *group, tprt_dtype dtype,
                        tprt_reduction op, const void *in, void *out,
                        int rank, const int64_t *shape, size_t inBytes,
                        const char *&call) const;
  /// tprt_all_gather on host arrays (staged likewise); `outBytes` is the
  /// size of the gathered result.
  tprt_status allGather(tprt_group *group, tprt_dtype dtype, const void *in,
                        void *out, int rank, const int64_t *shape, int dim,
                        size_t inBytes, size_t outBytes,
                        const char *&call) const;

private:
  /// Host memcpy for host buffers, else tprt_memcpy (either direction).
  tprt_status copy(void *dst, const void *src, size_t bytes) const;

  tprt_context *ctx;
  bool device = false;
};

/// One group of the last mesh axis that spans several nodes.
struct TopologyProblem {
  std::string axis;             // the last mesh axis's name ("tp")
  std::vector<int> ranks;       // the group, in group order
  std::vector<int> nodes;       // the distinct nodes, ascending
  int ranksPerNode = 0;         // ranks on the first rank's node
};

/// Checks that every group along the last mesh axis lies inside one node.
/// Returns false (with `failure` set) when a tprt query fails; else fills
/// `problem` with the first group that spans nodes, or leaves its `ranks`
/// empty. Every rank computes the same answer (tprt_node_of is global).
bool checkTopology(tprt_context *ctx, const Model &model, int worldSize,
                   TopologyProblem &problem, DeviceFailure &failure);

/// "tp group {0,1,2,3} spans nodes 0 and 1: keep the tp axis inside a node
/// (ranks per node 2); order the mesh so that tp is the last axis or use a
/// smaller tp".
std::string topologyMessage(const TopologyProblem &problem);

} // namespace tprun

#endif // TP_RUNNER_DEVICE_H
