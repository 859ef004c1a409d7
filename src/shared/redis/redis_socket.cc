#include "src/shared/redis/redis_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace mxlimit::internal {

namespace {

ConnectAttempt Connect(int family, const sockaddr* addr, socklen_t len) {
  ConnectAttempt a;
  const int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    a.error = std::string("socket: ") + std::strerror(errno);
    return a;
  }
  if (family != AF_UNIX) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  }
  if (connect(fd, addr, len) == 0) {
    a.fd = fd;
    return a;
  }
  if (errno == EINPROGRESS || errno == EAGAIN) {
    a.fd = fd;
    a.in_progress = true;
    return a;
  }
  a.error = std::string("connect: ") + std::strerror(errno);
  close(fd);
  return a;
}

}  // namespace

ConnectAttempt StartConnect(const StoreEndpoint& endpoint, size_t attempt) {
  if (!endpoint.unix_path.empty()) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (endpoint.unix_path.size() >= sizeof addr.sun_path) {
      ConnectAttempt a;
      a.error = "unix socket path too long";
      return a;
    }
    std::memcpy(addr.sun_path, endpoint.unix_path.data(),
                endpoint.unix_path.size());
    return Connect(AF_UNIX, reinterpret_cast<const sockaddr*>(&addr),
                   sizeof addr);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(endpoint.port);
  if (const int rc =
          getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    ConnectAttempt a;
    a.error =
        std::string("resolving ") + endpoint.host + ": " + gai_strerror(rc);
    return a;
  }
  size_t count = 0;
  for (addrinfo* p = found; p != nullptr; p = p->ai_next) ++count;
  addrinfo* pick = found;
  for (size_t i = 0; i < attempt % count; ++i) pick = pick->ai_next;
  ConnectAttempt a = Connect(pick->ai_family, pick->ai_addr, pick->ai_addrlen);
  freeaddrinfo(found);
  return a;
}

int FinishConnect(int fd) {
  int error = 0;
  socklen_t len = sizeof error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return errno;
  return error;
}

}  // namespace mxlimit::internal
