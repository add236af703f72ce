//===- Rendezvous.cpp - The TCP bootstrap of torchrun launches ------------===//
//
// See Rendezvous.h for the protocol.
//
//===----------------------------------------------------------------------===//

#include "Rendezvous.h"

#include "Error.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace tprt;

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x54505254; // "TPRT"

struct Hello {
  uint32_t magic;
  int32_t rank;
  int32_t worldSize;
  uint32_t port;
};

struct Reply {
  uint32_t magic;
  int32_t status; // 0 ok, 1 WORLD_SIZE differs, 2 rank taken, 3 bad rank
  int32_t worldSize;
  int32_t other;
};

struct Address {
  uint32_t ip;   // network order
  uint32_t port; // host order
};

struct MessageHeader {
  uint32_t magic;
  int32_t sender;
  uint32_t tag;
  uint32_t pad;
  uint64_t bytes;
};

class Socket {
public:
  Socket() = default;
  explicit Socket(int fd) : fd(fd) {}
  Socket(Socket &&other) noexcept : fd(other.fd) { other.fd = -1; }
  Socket &operator=(Socket &&other) noexcept {
    if (this != &other) {
      reset();
      fd = other.fd;
      other.fd = -1;
    }
    return *this;
  }
  ~Socket() { reset(); }
  void reset() {
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }
  int get() const { return fd; }
  explicit operator bool() const { return fd >= 0; }

private:
  int fd = -1;
};

double secondsLeft(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

/// Waits until `fd` is ready for `events`; false on timeout.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    double left = secondsLeft(deadline);
    if (left <= 0)
      return false;
    pollfd p = {fd, events, 0};
    int ms = left > 1e6 ? INT_MAX : int(left * 1000) + 1;
    int rc = ::poll(&p, 1, ms);
    if (rc > 0)
      return true;
    if (rc < 0 && errno != EINTR)
      return true; // let the following call report the error
  }
}

/// Moves exactly `bytes` through `step(offset, left)`, one send or recv call
/// that returns what it moved, each time `fd` is ready for `events`; a
/// message in `error` otherwise (`timedOut` past the deadline).
template <typename Step>
bool transferAll(int fd, short events, size_t bytes, Clock::time_point deadline,
                 const char *timedOut, std::string &error, Step step) {
  size_t done = 0;
  while (done < bytes) {
    if (!waitFor(fd, events, deadline)) {
      error = timedOut;
      return false;
    }
    ssize_t n = step(done, bytes - done);
    if (n == 0) {
      // Only a receive moves nothing (the peer closed): a send of at least
      // one byte either moves some or fails.
      error = "the connection was closed (did that rank exit?)";
      return false;
    }
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      error = std::strerror(errno);
      return false;
    }
    done += size_t(n);
  }
  return true;
}

/// Sends or receives exactly `bytes`; a message in `error` otherwise.
bool sendAll(int fd, const void *data, size_t bytes, Clock::time_point deadline,
             std::string &error) {
  const char *p = static_cast<const char *>(data);
  return transferAll(fd, POLLOUT, bytes, deadline, "timed out sending", error,
                     [&](size_t offset, size_t left) {
                       return ::send(fd, p + offset, left, MSG_NOSIGNAL);
                     });
}

bool recvAll(int fd, void *data, size_t bytes, Clock::time_point deadline,
             std::string &error) {
  char *p = static_cast<char *>(data);
  return transferAll(fd, POLLIN, bytes, deadline, "timed out", error,
                     [&](size_t offset, size_t left) {
                       return ::recv(fd, p + offset, left, 0);
                     });
}

void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/// A listening socket on `port` (0: ephemeral); its port in `bound`.
tprt_status listenOn(int port, Socket &out, int &bound, const char *what) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s)
    return fail(TPRT_ERROR_BACKEND, "cannot create a socket: %s",
                std::strerror(errno));
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(uint16_t(port));
  if (::bind(s.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
    return fail(TPRT_ERROR_BACKEND, "cannot listen on port %d (%s): %s", port,
                what, std::strerror(errno));
  if (::listen(s.get(), 128) != 0)
    return fail(TPRT_ERROR_BACKEND, "cannot listen on port %d (%s): %s", port,
                what, std::strerror(errno));
  socklen_t length = sizeof(addr);
  ::getsockname(s.get(), reinterpret_cast<sockaddr *>(&addr), &length);
  bound = ntohs(addr.sin_port);
  out = std::move(s);
  return TPRT_OK;
}

/// Resolves an IPv4 host name or address.
tprt_status resolve(const std::string &host, uint32_t &ip) {
  addrinfo hints = {};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *result = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || !result)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "cannot resolve MASTER_ADDR \"%s\": %s", host.c_str(),
                gai_strerror(rc));
  ip = reinterpret_cast<sockaddr_in *>(result->ai_addr)->sin_addr.s_addr;
  ::freeaddrinfo(result);
  return TPRT_OK;
}

std::string ipText(uint32_t ip) {
  char text[INET_ADDRSTRLEN] = "?";
  in_addr addr;
  addr.s_addr = ip;
  ::inet_ntop(AF_INET, &addr, text, sizeof(text));
  return text;
}

/// Connects to ip:port, retrying refused connections until the deadline.
bool connectTo(uint32_t ip, int port, Clock::time_point deadline, Socket &out,
               std::string &error) {
  for (;;) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s) {
      error = std::strerror(errno);
      return false;
    }
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = ip;
    addr.sin_port = htons(uint16_t(port));
    if (::connect(s.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) ==
        0) {
      setNoDelay(s.get());
      out = std::move(s);
      return true;
    }
    int err = errno;
    error = std::strerror(err);
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != EINTR &&
        err != ENETUNREACH && err != EHOSTUNREACH && err != ECONNRESET)
      return false;
    if (secondsLeft(deadline) <= 0)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

class TcpBootstrap final : public Bootstrap {
public:
  TcpBootstrap(const RendezvousConfig &config) : config(config) {}

  tprt_status connect();

  const char *name() const override { return "tcp"; }
  int rank() const override { return config.rank; }
  int size() const override { return config.worldSize; }
  tprt_status allGather(const void *in, void *out, size_t bytes) override;
  tprt_status send(int peer, uint32_t tag, const void *data,
                   size_t bytes) override;
  tprt_status recv(int peer, uint32_t tag, void *data, size_t bytes) override;

private:
  Clock::time_point deadline() const {
    return Clock::now() +
           std::chrono::duration_cast<Clock::duration>(
               std::chrono::duration<double>(config.timeoutSeconds));
  }
  std::string masterText() const {
    return config.masterAddr + ":" + std::to_string(config.masterPort);
  }
  tprt_status acceptPeers(Clock::time_point until);
  tprt_status joinMaster(Clock::time_point until);

  RendezvousConfig config;
  uint32_t masterIp = 0;
  Socket listener; // point-to-point messages to this rank
  int listenPort = 0;
  Socket master;              // ranks > 0: the connection to rank 0
  std::vector<Socket> peers;  // rank 0: the connection of each rank
  std::vector<Address> table; // every rank's listening address
  std::map<std::pair<int, uint32_t>, std::vector<std::vector<char>>> mailbox;
};

tprt_status TcpBootstrap::connect() {
  if (tprt_status status = resolve(config.masterAddr, masterIp))
    return status;
  if (config.worldSize == 1) {
    table.assign(1, Address{masterIp, 0});
    return TPRT_OK;
  }
  if (tprt_status status = listenOn(0, listener, listenPort, "messages"))
    return status;
  Clock::time_point until = deadline();
  return config.rank == 0 ? acceptPeers(until) : joinMaster(until);
}

tprt_status TcpBootstrap::acceptPeers(Clock::time_point until) {
  Socket server;
  int bound = 0;
  if (tprt_status status = listenOn(config.masterPort, server, bound,
                                    "MASTER_PORT, rank 0 of the rendezvous"))
    return status;
  int n = config.worldSize;
  peers.resize(size_t(n));
  table.assign(size_t(n), Address{0, 0});
  table[0] = Address{masterIp, uint32_t(listenPort)};
  int joined = 1;
  while (joined < n) {
    if (!waitFor(server.get(), POLLIN, until)) {
      std::string missing;
      int count = 0;
      for (int r = 1; r < n; ++r)
        if (!peers[size_t(r)]) {
          if (count < 16)
            missing += (count ? ", " : "") + std::to_string(r);
          ++count;
        }
      if (count > 16)
        missing += ", ...";
      return fail(TPRT_ERROR_TIMEOUT,
                  "timed out after %g s waiting for rank%s %s to connect to "
                  "rank 0 at %s (%d of %d ranks joined; TPRT_INIT_TIMEOUT)",
                  config.timeoutSeconds, count == 1 ? "" : "s", missing.c_str(),
                  masterText().c_str(), joined, n);
    }
    sockaddr_in addr = {};
    socklen_t length = sizeof(addr);
    Socket peer(::accept4(server.get(), reinterpret_cast<sockaddr *>(&addr),
                          &length, SOCK_CLOEXEC));
    if (!peer)
      continue;
    setNoDelay(peer.get());
    Hello hello = {};
    std::string error;
    if (!recvAll(peer.get(), &hello, sizeof(hello), until, error) ||
        hello.magic != kMagic)
      continue; // not one of ours
    Reply reply = {kMagic, 0, n, 0};
    if (hello.worldSize != n)
      reply.status = 1;
    else if (hello.rank <= 0 || hello.rank >= n)
      reply.status = 3;
    else if (peers[size_t(hello.rank)])
      reply.status = 2;
    reply.other = hello.rank;
    sendAll(peer.get(), &reply, sizeof(reply), until, error);
    if (reply.status == 1)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "rank %d has WORLD_SIZE=%d but rank 0 has WORLD_SIZE=%d "
                  "(every rank must be started with the same WORLD_SIZE)",
                  hello.rank, hello.worldSize, n);
    if (reply.status == 3)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "a rank joined with RANK=%d, out of range for "
                  "WORLD_SIZE=%d",
                  hello.rank, n);
    if (reply.status == 2)
      return fail(TPRT_ERROR_INVALID_ARGUMENT,
                  "two processes joined the rendezvous at %s with RANK=%d",
                  masterText().c_str(), hello.rank);
    table[size_t(hello.rank)] = Address{addr.sin_addr.s_addr, hello.port};
    peers[size_t(hello.rank)] = std::move(peer);
    ++joined;
  }
  for (int r = 1; r < n; ++r) {
    std::string error;
    if (!sendAll(peers[size_t(r)].get(), table.data(),
                 table.size() * sizeof(Address), until, error))
      return fail(TPRT_ERROR_BACKEND, "rendezvous: sending to rank %d: %s", r,
                  error.c_str());
  }
  return TPRT_OK;
}

tprt_status TcpBootstrap::joinMaster(Clock::time_point until) {
  std::string error;
  if (!connectTo(masterIp, config.masterPort, until, master, error))
    return fail(secondsLeft(until) <= 0 ? TPRT_ERROR_TIMEOUT
                                        : TPRT_ERROR_BACKEND,
                "rank %d could not connect to rank 0 at %s within %g s "
                "(TPRT_INIT_TIMEOUT): %s",
                config.rank, masterText().c_str(), config.timeoutSeconds,
                error.c_str());
  Hello hello = {kMagic, config.rank, config.worldSize, uint32_t(listenPort)};
  Reply reply = {};
  if (!sendAll(master.get(), &hello, sizeof(hello), until, error) ||
      !recvAll(master.get(), &reply, sizeof(reply), until, error))
    return fail(TPRT_ERROR_BACKEND, "rendezvous with rank 0 at %s failed: %s",
                masterText().c_str(), error.c_str());
  if (reply.magic != kMagic)
    return fail(TPRT_ERROR_BACKEND,
                "%s is not a tprt rendezvous (wrong MASTER_PORT?)",
                masterText().c_str());
  if (reply.status == 1)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "rank 0 at %s has WORLD_SIZE=%d but this rank %d has "
                "WORLD_SIZE=%d",
                masterText().c_str(), reply.worldSize, config.rank,
                config.worldSize);
  if (reply.status != 0)
    return fail(
        TPRT_ERROR_INVALID_ARGUMENT, "rank 0 at %s refused RANK=%d (%s)",
        masterText().c_str(), config.rank,
        reply.status == 2 ? "another process has that rank" : "out of range");
  table.resize(size_t(config.worldSize));
  if (!recvAll(master.get(), table.data(), table.size() * sizeof(Address),
               until, error))
    return fail(TPRT_ERROR_BACKEND, "rendezvous with rank 0 at %s failed: %s",
                masterText().c_str(), error.c_str());
  return TPRT_OK;
}

tprt_status TcpBootstrap::allGather(const void *in, void *out, size_t bytes) {
  char *result = static_cast<char *>(out);
  int n = config.worldSize;
  Clock::time_point until = deadline();
  std::string error;
  if (n == 1) {
    if (bytes && in != out)
      std::memmove(out, in, bytes);
    return TPRT_OK;
  }
  if (config.rank != 0) {
    if (!sendAll(master.get(), in, bytes, until, error) ||
        !recvAll(master.get(), result, bytes * size_t(n), until, error))
      return fail(TPRT_ERROR_BACKEND,
                  "allgather through rank 0 at %s failed: %s",
                  masterText().c_str(), error.c_str());
    return TPRT_OK;
  }
  std::memmove(result, in, bytes);
  for (int r = 1; r < n; ++r)
    if (!recvAll(peers[size_t(r)].get(), result + size_t(r) * bytes, bytes,
                 until, error))
      return fail(TPRT_ERROR_BACKEND, "allgather: receiving from rank %d: %s",
                  r, error.c_str());
  for (int r = 1; r < n; ++r)
    if (!sendAll(peers[size_t(r)].get(), result, bytes * size_t(n), until,
                 error))
      return fail(TPRT_ERROR_BACKEND, "allgather: sending to rank %d: %s", r,
                  error.c_str());
  return TPRT_OK;
}

tprt_status TcpBootstrap::send(int peer, uint32_t tag, const void *data,
                               size_t bytes) {
  if (peer < 0 || peer >= config.worldSize || peer == config.rank)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "cannot send to rank %d", peer);
  Clock::time_point until = deadline();
  const Address &address = table[size_t(peer)];
  Socket s;
  std::string error;
  if (!connectTo(address.ip, int(address.port), until, s, error))
    return fail(TPRT_ERROR_BACKEND, "cannot connect to rank %d at %s:%u: %s",
                peer, ipText(address.ip).c_str(), address.port, error.c_str());
  MessageHeader header = {kMagic, config.rank, tag, 0, bytes};
  if (!sendAll(s.get(), &header, sizeof(header), until, error) ||
      !sendAll(s.get(), data, bytes, until, error))
    return fail(TPRT_ERROR_BACKEND, "sending to rank %d: %s", peer,
                error.c_str());
  // The kernel delivers the buffered message after close; the receiver may
  // pick it up later (messages wait in the listen backlog).
  return TPRT_OK;
}

tprt_status TcpBootstrap::recv(int peer, uint32_t tag, void *data,
                               size_t bytes) {
  if (peer < 0 || peer >= config.worldSize || peer == config.rank)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "cannot receive from rank %d",
                peer);
  Clock::time_point until = deadline();
  auto key = std::make_pair(peer, tag);
  for (;;) {
    auto it = mailbox.find(key);
    if (it != mailbox.end() && !it->second.empty()) {
      std::vector<char> message = std::move(it->second.front());
      it->second.erase(it->second.begin());
      if (message.size() != bytes)
        return fail(TPRT_ERROR_MISMATCH,
                    "rank %d sent %zu bytes where %zu were expected", peer,
                    message.size(), bytes);
      std::memcpy(data, message.data(), bytes);
      return TPRT_OK;
    }
    if (!waitFor(listener.get(), POLLIN, until))
      return fail(TPRT_ERROR_TIMEOUT,
                  "timed out after %g s waiting for a message from rank %d "
                  "(TPRT_INIT_TIMEOUT)",
                  config.timeoutSeconds, peer);
    Socket s(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!s)
      continue;
    MessageHeader header = {};
    std::string error;
    if (!recvAll(s.get(), &header, sizeof(header), until, error) ||
        header.magic != kMagic || header.bytes > (size_t(1) << 30))
      continue;
    std::vector<char> message(header.bytes);
    if (!recvAll(s.get(), message.data(), message.size(), until, error))
      continue;
    mailbox[std::make_pair(int(header.sender), header.tag)].push_back(
        std::move(message));
  }
}

tprt_status parseInt(const char *name, long low, long high, long &value,
                     const char *hint) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "%s is not set (%s)", name, hint);
  char *end = nullptr;
  errno = 0;
  value = std::strtol(text, &end, 10);
  if (errno || end == text || *end || value < low || value > high)
    return fail(TPRT_ERROR_INVALID_ARGUMENT,
                "%s is \"%s\", expected an integer from %ld to %ld", name, text,
                low, high);
  return TPRT_OK;
}

} // namespace

tprt_status tprt::readRendezvousConfig(RendezvousConfig &out) {
  const char *hint =
      "a launch without mpirun needs RANK, WORLD_SIZE, MASTER_ADDR and "
      "MASTER_PORT, as torchrun sets them";
  long worldSize = 0, rank = 0, port = 0;
  if (tprt_status status = parseInt("WORLD_SIZE", 1, 1 << 20, worldSize, hint))
    return status;
  if (tprt_status status = parseInt("RANK", 0, worldSize - 1, rank, hint))
    return status;
  out.worldSize = int(worldSize);
  out.rank = int(rank);
  out.timeoutSeconds = initTimeoutSeconds();
  if (worldSize == 1)
    return TPRT_OK;
  const char *addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr)
    return fail(TPRT_ERROR_INVALID_ARGUMENT, "MASTER_ADDR is not set (%s)",
                hint);
  out.masterAddr = addr;
  if (tprt_status status = parseInt("MASTER_PORT", 1, 65535, port, hint))
    return status;
  out.masterPort = int(port);
  return TPRT_OK;
}

tprt_status tprt::connectTcpBootstrap(const RendezvousConfig &config,
                                      std::unique_ptr<Bootstrap> &out) {
  auto bootstrap = std::make_unique<TcpBootstrap>(config);
  if (tprt_status status = bootstrap->connect())
    return status;
  out = std::move(bootstrap);
  return TPRT_OK;
}

tprt_status tprt::createTcpBootstrap(std::unique_ptr<Bootstrap> &out) {
  RendezvousConfig config;
  if (tprt_status status = readRendezvousConfig(config))
    return status;
  return connectTcpBootstrap(config, out);
}
