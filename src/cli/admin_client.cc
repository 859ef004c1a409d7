#include "src/cli/admin_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/util/await_fd.h"

namespace mxlimit::cli {
namespace {

using Clock = std::chrono::steady_clock;
using internal::ToAbsl;

// A connected, non-blocking socket, or -1 with `error` set.
int Connect(std::string_view address, std::string& error) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (address.substr(0, 5) == "unix:") {
    auto* un = reinterpret_cast<sockaddr_un*>(&ss);
    const std::string_view path = address.substr(5);
    if (path.empty() || path.size() >= sizeof(un->sun_path)) {
      error = "a unix socket path of 1 to 107 bytes";
      return -1;
    }
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, path.data(), path.size());
    len = sizeof(*un);
  } else {
    std::string_view host;
    std::string_view port;
    if (!address.empty() && address[0] == '[') {
      const size_t close = address.find("]:");
      if (close != std::string_view::npos) {
        host = address.substr(1, close - 1);
        port = address.substr(close + 2);
      }
    } else if (const size_t colon = address.rfind(':');
               colon != std::string_view::npos) {
      host = address.substr(0, colon);
      port = address.substr(colon + 1);
    }
    uint16_t p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    const std::string h(host);
    auto* in4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size()) {
      error = "expected unix:PATH or HOST:PORT with a numeric host";
      return -1;
    }
    if (inet_pton(AF_INET, h.c_str(), &in4->sin_addr) == 1) {
      in4->sin_family = AF_INET;
      in4->sin_port = htons(p);
      len = sizeof(*in4);
    } else if (inet_pton(AF_INET6, h.c_str(), &in6->sin6_addr) == 1) {
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons(p);
      len = sizeof(*in6);
    } else {
      error = "expected unix:PATH or HOST:PORT with a numeric host";
      return -1;
    }
  }
  const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    error = absl::StrCat("cannot connect to ", ToAbsl(address), ": ",
                         std::strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<AdminAnswer> CallAdmin(std::string_view address,
                                      std::string_view token,
                                      std::string_view method,
                                      std::string_view target,
                                      std::string_view body,
                                      std::chrono::milliseconds deadline) {
  const Clock::time_point until = Clock::now() + deadline;
  std::string error;
  const int fd = Connect(address, error);
  if (fd < 0) {
    return error.rfind("cannot connect", 0) == 0
               ? absl::UnavailableError(error)
               : absl::InvalidArgumentError(
                     absl::StrCat("--address ", ToAbsl(address), ": ", error));
  }
  const std::string request = absl::StrCat(
      ToAbsl(method), " ", ToAbsl(target),
      " HTTP/1.1\r\nHost: mxlimitd\r\nAuthorization: Bearer ", ToAbsl(token),
      "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
      "\r\nConnection: close\r\n\r\n", ToAbsl(body));
  size_t sent = 0;
  while (sent < request.size()) {
    if (!internal::AwaitFd(fd, POLLOUT, until)) {
      close(fd);
      return absl::DeadlineExceededError("mxlimitd did not take the request");
    }
    const ssize_t n =
        send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return absl::UnavailableError(
          absl::StrCat("cannot send: ", std::strerror(errno)));
    }
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  char chunk[4096];
  while (true) {
    if (!internal::AwaitFd(fd, POLLIN, until)) {
      close(fd);
      return absl::DeadlineExceededError("mxlimitd did not answer in time");
    }
    const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return absl::UnavailableError(
          absl::StrCat("cannot read the answer: ", std::strerror(errno)));
    }
    if (n == 0) break;
    answer.append(chunk, static_cast<size_t>(n));
    if (answer.size() > (size_t{64} << 20)) break;  // not mxlimitd's
  }
  close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nBODY"; the server closes after it.
  const size_t head_end = answer.find("\r\n\r\n");
  AdminAnswer out;
  if (answer.size() < 12 || answer.compare(0, 5, "HTTP/") != 0 ||
      head_end == std::string::npos) {
    return absl::DataLossError(
        "the answer is not HTTP; is --address mxlimitd's "
        "--admin-listen?");
  }
  const size_t space = answer.find(' ');
  auto [end, ec] = std::from_chars(answer.data() + space + 1,
                                   answer.data() + answer.size(), out.status);
  if (ec != std::errc()) {
    return absl::DataLossError("the answer has no status code");
  }
  out.body = answer.substr(head_end + 4);
  return out;
}

}  // namespace mxlimit::cli
