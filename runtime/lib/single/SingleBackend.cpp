//===- SingleBackend.cpp - The one-rank, in-process backend ---------------===//
//
// "single": a world of one rank, no communication library. Every group is
// {0}, so each collective is a copy of its input (the reduction of one value
// is that value). Lets compiled programs and the conformance suite run
// without mpirun.
//
//===----------------------------------------------------------------------===//

#include "common/Backend.h"
#include "common/DType.h"

#include <cstring>

using namespace tprt;

namespace {

void copy(const void *in, void *out, size_t bytes) {
  if (bytes && in != out)
    std::memcpy(out, in, bytes);
}

class SingleBackend final : public Backend {
public:
  const char *name() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }

  tprt_status createCommunicator(const std::vector<int> &,
                                 std::unique_ptr<Communicator> &out) override {
    out = std::make_unique<Communicator>();
    return TPRT_OK;
  }

  tprt_status allReduce(Communicator &, tprt_dtype dtype, tprt_reduction,
                        const void *in, void *out, size_t count) override {
    copy(in, out, count * dtypeSize(dtype));
    return TPRT_OK;
  }

  tprt_status allGather(Communicator &, const void *in, void *out,
                        size_t bytes) override {
    copy(in, out, bytes);
    return TPRT_OK;
  }

  tprt_status reduceScatter(Communicator &, tprt_dtype dtype, tprt_reduction,
                            const void *in, void *out, size_t count) override {
    copy(in, out, count * dtypeSize(dtype));
    return TPRT_OK;
  }

  tprt_status allToAll(Communicator &, const void *in, void *out,
                       size_t bytes) override {
    copy(in, out, bytes);
    return TPRT_OK;
  }

  tprt_status barrier(Communicator &) override { return TPRT_OK; }
};

} // namespace

std::unique_ptr<Backend> tprt::createSingleBackend() {
  return std::make_unique<SingleBackend>();
}
