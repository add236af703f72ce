//===- Bootstrap.cpp - Choosing the world bootstrap -----------------------===//
//
// See Bootstrap.h. The TCP implementation is Rendezvous.cpp, the MPI one
// mpi/MpiBootstrap.cpp.
//
//===----------------------------------------------------------------------===//

#include "Bootstrap.h"

#include "Error.h"

#include <cstdlib>
#include <cstring>

using namespace tprt;

Bootstrap::~Bootstrap() = default;

namespace {

class SelfBootstrap final : public Bootstrap {
public:
  const char *name() const override { return "self"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  tprt_status allGather(const void *in, void *out, size_t bytes) override {
    if (bytes && in != out)
      std::memmove(out, in, bytes);
    return TPRT_OK;
  }
  tprt_status send(int peer, uint32_t, const void *, size_t) override {
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "cannot send to rank %d in a world of one rank", peer);
  }
  tprt_status recv(int peer, uint32_t, void *, size_t) override {
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "cannot receive from rank %d in a world of one rank", peer);
  }
};

bool envSet(const char *name) {
  const char *value = std::getenv(name);
  return value && *value;
}

} // namespace

std::unique_ptr<Bootstrap> tprt::createSelfBootstrap() {
  return std::make_unique<SelfBootstrap>();
}

tprt_status tprt::createWorldBootstrap(std::unique_ptr<Bootstrap> &out) {
  bool underMpirun = envSet("OMPI_COMM_WORLD_SIZE") || envSet("PMI_SIZE") ||
                     envSet("PMIX_RANK");
  if (underMpirun) {
#ifdef TPRT_HAVE_MPI
    return createMpiBootstrap(out);
#else
    if (!envSet("WORLD_SIZE"))
      return fail(TPRT_ERROR_UNAVAILABLE,
                  "started by mpirun but libtprt was built without MPI; set "
                  "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT instead");
#endif
  }
  if (envSet("WORLD_SIZE"))
    return createTcpBootstrap(out);
  out = createSelfBootstrap();
  return TPRT_OK;
}

double tprt::initTimeoutSeconds() {
  const char *text = std::getenv("TPRT_INIT_TIMEOUT");
  if (!text || !*text)
    return 60.0;
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (end == text || *end || !(value > 0))
    return 60.0;
  return value;
}

uint32_t tprt::groupTag(const std::vector<int> &ranks) {
  uint32_t hash = 2166136261u;
  for (int rank : ranks) {
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= uint32_t(rank >> (8 * byte)) & 0xffu;
      hash *= 16777619u;
    }
  }
  return hash;
}

std::string tprt::rankListText(const std::vector<int> &ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}
