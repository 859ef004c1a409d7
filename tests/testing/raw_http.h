// -----------------------------------------------------------------------------
// File: tests/testing/raw_http.h
// -----------------------------------------------------------------------------
//
// A blocking loopback TCP client for the daemon's tests: sends exactly the
// bytes a test gives (malformed ones included) and reads responses, so the
// tests see the server as a proxy or an attacker would.
//
//   mxlimit::testing::RawConnection c(port);
//   c.Send("GET /_mxlimit/health HTTP/1.1\r\nHost: x\r\n\r\n");
//   mxlimit::testing::RawResponse r = c.ReadResponse();  // r.status == 200

#ifndef MXLIMIT_TESTS_TESTING_RAW_HTTP_H_
#define MXLIMIT_TESTS_TESTING_RAW_HTTP_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mxlimit::testing {

struct RawResponse {
  int status = 0;  // 0: the connection closed (or timed out) before one came
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first header called `name` (exact case as sent), or "".
  std::string Header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return "";
  }
  bool Has(std::string_view name) const {
    for (const auto& h : headers) {
      if (h.first == name) return true;
    }
    return false;
  }
};

class RawConnection {
 public:
  // Connects to 127.0.0.1:port, from `source` when given (e.g. "127.0.0.2").
  explicit RawConnection(uint16_t port, const char* source = nullptr) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, source, &local.sin_addr);
      bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    connected_ =
        connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // True when the server closed the connection within `timeout` (every
  // byte still buffered is read and dropped).
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (true) {
      const int got = Read(until);
      if (got == 0) return true;
      if (got < 0) return false;
      buffer_.clear();
    }
  }

  // Reads one response (status line, headers, Content-Length body).
  RawResponse ReadResponse(
      std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    RawResponse r;
    size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(until)) return r;
    }
    const std::string head = buffer_.substr(0, end + 2);
    buffer_.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    if (status_line.size() >= 12) r.status = std::atoi(status_line.c_str() + 9);
    size_t content_length = 0;
    for (size_t at = line_end + 2; at < head.size();) {
      const size_t next = head.find("\r\n", at);
      const std::string line = head.substr(at, next - at);
      at = next + 2;
      const size_t colon = line.find(": ");
      if (colon == std::string::npos) continue;
      r.headers.emplace_back(line.substr(0, colon), line.substr(colon + 2));
      if (line.substr(0, colon) == "Content-Length") {
        content_length = std::strtoul(line.c_str() + colon + 2, nullptr, 10);
      }
    }
    while (buffer_.size() < content_length) {
      if (!Fill(until)) break;
    }
    r.body = buffer_.substr(0, content_length);
    buffer_.erase(0, std::min(content_length, buffer_.size()));
    return r;
  }

 private:
  // Reads what is there: 1 when bytes came, 0 when the peer closed (or
  // reset), -1 on timeout.
  int Read(std::chrono::steady_clock::time_point until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -1;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return -1;
    char chunk[65536];
    const ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return 0;
    buffer_.append(chunk, static_cast<size_t>(n));
    return 1;
  }
  bool Fill(std::chrono::steady_clock::time_point until) {
    return Read(until) == 1;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_RAW_HTTP_H_
