#include "src/daemon/admin_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/daemon/flags.h"
#include "src/daemon/local_socket.h"
#include "src/daemon/log.h"
#include "src/http/request_head.h"
#include "src/http/response.h"
#include "src/util/await_fd.h"

namespace mxlimit::daemon {
namespace {

using Clock = std::chrono::steady_clock;

void Send(int fd, const AdminReply& reply, Clock::time_point deadline) {
  const std::string out = absl::StrCat(
      "HTTP/1.1 ", reply.status, " ",
      internal::ToAbsl(http::ReasonPhrase(reply.status)),
      "\r\nContent-Type: application/json\r\nContent-Length: ",
      reply.body.size(), "\r\nCache-Control: no-store\r\nConnection: close",
      reply.status == 401 ? "\r\nWWW-Authenticate: Bearer" : "", "\r\n\r\n",
      reply.body);
  size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n =
        send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!internal::AwaitFd(fd, POLLOUT, deadline)) return;
    } else {
      return;
    }
  }
}

// After an early answer (413, 431, a malformed head), what the client is
// still sending is read and dropped for a moment, so that it gets to read
// the answer instead of a broken pipe or a reset.
void Linger(int fd, Clock::time_point deadline) {
  (void)shutdown(fd, SHUT_WR);
  const Clock::time_point until =
      std::min(deadline, Clock::now() + std::chrono::milliseconds(1'000));
  char sink[4096];
  size_t dropped = 0;
  while (dropped < (size_t{256} << 10) &&
         internal::AwaitFd(fd, POLLIN, until)) {
    const ssize_t n = recv(fd, sink, sizeof(sink), 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return;
    if (n > 0) dropped += static_cast<size_t>(n);
  }
}

absl::StatusOr<int> BindTcp(const AdminListenAddress& a, uint16_t& port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* in4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, a.host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(a.port);
    len = sizeof(*in4);
  } else {
    (void)inet_pton(AF_INET6, a.host.c_str(), &in6->sin6_addr);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(a.port);
    len = sizeof(*in6);
  }
  const int fd =
      socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("cannot create the admin socket", a.host);
  const int on = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    absl::Status error = ErrnoStatus("cannot bind the admin socket", a.host);
    close(fd);
    return error;
  }
  (void)getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
  return fd;
}

std::string PeerOf(const sockaddr_storage& ss, bool tcp) {
  if (!tcp) return "unix";
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr,
              buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr,
              buf, sizeof(buf));
  }
  return buf;
}

}  // namespace

absl::StatusOr<AdminListenAddress> ParseAdminListen(std::string_view text) {
  AdminListenAddress a;
  if (text.substr(0, 5) == "unix:") {
    a.unix_socket = true;
    a.path = std::string(text.substr(5));
    if (a.path.empty()) {
      return absl::InvalidArgumentError("expected unix:PATH with a path");
    }
    return a;
  }
  if (!ParseListenAddress(text, a.host, a.port) || !IsLoopbackHost(a.host)) {
    return absl::InvalidArgumentError(
        "expected unix:PATH or a loopback HOST:PORT such as 127.0.0.1:8090 "
        "or [::1]:8090 (the admin API is never served on a routable "
        "address)");
  }
  return a;
}

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(
    const AdminListenAddress& address, AdminApi& api) {
  std::unique_ptr<AdminServer> s(new AdminServer(api));
  if (address.unix_socket) {
    absl::StatusOr<int> fd =
        BindUnixSocket(address.path, SOCK_STREAM, 0600, "admin", s->inode_);
    if (!fd.ok()) return fd.status();
    s->listen_fd_ = *fd;
    s->unlink_path_ = address.path;
    s->bound_ = "unix:" + address.path;
  } else {
    uint16_t port = 0;
    absl::StatusOr<int> fd = BindTcp(address, port);
    if (!fd.ok()) return fd.status();
    s->listen_fd_ = *fd;
    s->tcp_ = true;
    const bool v6 = address.host.find(':') != std::string::npos;
    s->bound_ = (v6 ? "[" + address.host + "]" : address.host) + ":" +
                std::to_string(port);
  }
  if (listen(s->listen_fd_, 16) != 0) {
    return ErrnoStatus("cannot listen on the admin socket", s->bound_);
  }
  s->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->stop_fd_ < 0) {
    return ErrnoStatus("cannot create", "the admin server's eventfd");
  }
  s->thread_ = std::thread([p = s.get()] { p->Serve(); });
  return s;
}

AdminServer::~AdminServer() { Stop(); }

void AdminServer::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    UnlinkIfOurs(unlink_path_, inode_);
  }
  if (stop_fd_ >= 0) {
    close(stop_fd_);
    stop_fd_ = -1;
  }
}

void AdminServer::Serve() {
  while (true) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;  // EAGAIN, or a connection gone before accept
    ServeConnection(fd, PeerOf(ss, tcp_));
    close(fd);
  }
}

void AdminServer::ServeConnection(int fd, std::string_view peer) {
  const Clock::time_point deadline = Clock::now() + kAdminDeadline;
  std::string buf;
  buf.reserve(1024);
  size_t head_end = 0;
  http::HttpRequestHead head;
  size_t want = 0;  // head plus body, once the head is parsed
  char chunk[4096];
  while (want == 0 || buf.size() < want) {
    if (!internal::AwaitFd(fd, POLLIN, deadline)) {
      if (want == 0 && buf.empty()) return;  // connected and said nothing
      Send(fd,
           AdminError(408, "M_UNKNOWN", "the request did not arrive in time"),
           deadline);
      return;
    }
    const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n == 0) return;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return;
    }
    const size_t searched = buf.size() >= 3 ? buf.size() - 3 : 0;
    buf.append(chunk, static_cast<size_t>(n));
    if (want != 0) continue;
    head_end = http::FindHeadEnd(buf, searched);
    if (head_end == 0) {
      if (buf.size() > kMaxAdminHeadBytes) {
        Send(fd, AdminError(431, "M_UNKNOWN", "the request head is too large"),
             deadline);
        Linger(fd, deadline);
        return;
      }
      continue;
    }
    const http::HeadParse parsed =
        http::ParseRequestHead(std::string_view(buf).substr(0, head_end), head);
    if (parsed.state != http::HeadParse::kComplete) {
      Send(fd,
           AdminError(
               parsed.status != 0 ? parsed.status : 400, "M_UNKNOWN",
               parsed.reason.empty() ? "a malformed request" : parsed.reason),
           deadline);
      Linger(fd, deadline);
      return;
    }
    const int64_t body = head.content_length < 0 ? 0 : head.content_length;
    if (body > static_cast<int64_t>(kMaxAdminBodyBytes)) {
      Send(fd, AdminError(413, "M_TOO_LARGE", "the request body is too large"),
           deadline);
      Linger(fd, deadline);
      return;
    }
    want = head_end + static_cast<size_t>(body);
    if (want == head_end && buf.size() >= want) break;
  }
  // ParseRequestHead's views point into `buf`, which no longer grows.
  http::ParseRequestHead(std::string_view(buf).substr(0, head_end), head);
  AdminRequest request;
  request.method = head.method;
  request.target = head.target;
  request.authorization = head.Field("Authorization");
  request.body = std::string_view(buf).substr(head_end, want - head_end);
  request.peer = peer;
  Send(fd, api_.Handle(request, MonotonicTime::FromSteadyClock()), deadline);
}

}  // namespace mxlimit::daemon
