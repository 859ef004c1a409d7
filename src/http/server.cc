#include "src/http/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/http/worker.h"

namespace mxlimit::http {

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const ServerOptions& options, HttpHandler& handler) {
  if (options.threads < 1 || options.threads > 256) {
    return absl::InvalidArgumentError("threads must be 1 to 256");
  }
  if (options.max_connections < static_cast<size_t>(options.threads)) {
    return absl::InvalidArgumentError(
        "max connections must be at least the thread count");
  }
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* in4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, options.host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(options.port);
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, options.host.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(options.port);
    len = sizeof(sockaddr_in6);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("not a numeric address: '", options.host, "'"));
  }
  const int fd =
      socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      listen(fd, 1024) != 0) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen on ",
                                               options.host, ":", options.port,
                                               ": ", strerror(err)));
  }
  socklen_t got = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &got);
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->listen_fd_ = fd;
  server->port_ =
      ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
  server->pool_ = std::make_unique<ConnectionPool>(options.max_connections,
                                                   InputCapacity(options));
  for (int t = 0; t < options.threads; ++t) {
    auto worker =
        std::make_unique<Worker>(options, handler, fd, *server->pool_);
    if (absl::Status s = worker->Init(); !s.ok()) return s;
    server->workers_.push_back(std::move(worker));
  }
  for (auto& worker : server->workers_) {
    server->threads_.emplace_back([w = worker.get()] { w->Run(); });
  }
  return server;
}

void HttpServer::Drain() {
  if (drained_) return;
  drained_ = true;
  for (auto& worker : workers_) worker->RequestDrain();
  for (std::thread& t : threads_) t.join();
  close(listen_fd_);
}

HttpServer::~HttpServer() { Drain(); }

ServerCounters HttpServer::Counters() const {
  ServerCounters c;
  for (const auto& worker : workers_) worker->AddCounters(c);
  return c;
}

}  // namespace mxlimit::http
