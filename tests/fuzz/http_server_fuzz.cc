// Fuzz target: mxlimitd's HTTP server with its real handler (the sidecar,
// built-in policies on), driven over loopback connections.
//
// The input is a list of chunks, each a control byte, a 16-bit length and
// that many bytes sent on a connection: a new one or the last one still
// open (control bit 0), then half-closed or kept open (bit 1). A half-closed
// connection must be answered and closed by the server; the others are
// reset by the client at the end. Invariants, after any input:
//   * the open-connection count returns to zero once the client has closed
//     everything (no slot is freed twice or lost);
//   * then `kMaxConnections` connections at once are each answered (no two
//     connections share a slot, the bound still holds), and one more is
//     refused with 503;
//   * in debug builds the server also checks its slot bookkeeping after
//     every event batch and aborts when it breaks.
// The server is small (4 connections, 1 KiB of header fields) so that every
// limit it answers for is reachable with short inputs.

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "mxlimit/config.h"
#include "mxlimit/ip.h"
#include "mxlimit/shared_limiter.h"
#include "src/daemon/appservice.h"
#include "src/daemon/daemon_metrics.h"
#include "src/daemon/sidecar.h"
#include "src/http/server.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_input.h"

namespace mxlimit::fuzz {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kMaxConnections = 4;
constexpr char kValidCheck[] =
    "GET /_mxlimit/auth_request HTTP/1.1\r\nHost: mxlimitd\r\n"
    "X-Original-Method: GET\r\nX-Original-URI: /_matrix/client/versions\r\n"
    "X-Forwarded-For: 192.0.2.1, 127.0.0.1\r\n\r\n";

struct Daemon {
  Daemon() {
    absl::StatusOr<LimiterConfig> config = ParseConfig("", "fuzz.yaml");
    MXLIMIT_FUZZ_CHECK(config.ok() && config->builtin_policies);
    limiter = *SharedLimiter::Create(*config);
    daemon::SidecarOptions options;
    // Every client is on loopback, so every client is a trusted proxy: the
    // forwarded headers are always read.
    options.trusted_proxies.push_back(*ParseCidr("127.0.0.0/8"));
    sidecar = std::make_unique<daemon::Sidecar>(*limiter, options, secret,
                                                registry, nullptr, metrics);
    http::ServerOptions server_options;
    server_options.threads = 2;
    server_options.max_connections = kMaxConnections;
    server_options.max_header_bytes = 1024;
    server_options.request_timeout = milliseconds(5000);
    server = *http::HttpServer::Start(server_options, *sidecar);
    sidecar->set_server(server.get());
  }

  internal::SipKey secret{};
  daemon::AppserviceRegistry registry;
  daemon::DaemonMetrics metrics;
  std::unique_ptr<SharedLimiter> limiter;
  std::unique_ptr<daemon::Sidecar> sidecar;
  std::unique_ptr<http::HttpServer> server;
};

// Connections made to the server, over the whole run.
uint64_t connects = 0;

int Connect(uint16_t port) {
  ++connects;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  MXLIMIT_FUZZ_CHECK(fd >= 0);
  timeval tv{2, 0};  // no read or write blocks the target for long
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  // Each connection from its own loopback address: a closing client leaves
  // a TIME_WAIT per connection, and one address's ports run out within
  // seconds at the fuzzer's pace.
  sockaddr_in source{};
  source.sin_family = AF_INET;
  source.sin_addr.s_addr = htonl(0x7F010000u | (connects & 0xFFFF));
  const int one = 1;  // the port is picked by connect, per address
  setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
  MXLIMIT_FUZZ_CHECK(
      bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof(source)) == 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // libFuzzer's timeout alarm interrupts system calls: an interrupted
  // connect goes on, and is waited for.
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    MXLIMIT_FUZZ_CHECK(errno == EINTR);
    pollfd p{fd, POLLOUT, 0};
    while (poll(&p, 1, 2000) < 0) MXLIMIT_FUZZ_CHECK(errno == EINTR);
    int error = 0;
    socklen_t len = sizeof(error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    MXLIMIT_FUZZ_CHECK(error == 0);
  }
  return fd;
}

// Closes a connection the server may still hold, with a reset (a hostile
// client's way, and one TIME_WAIT fewer).
void Abort(int fd) {
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  close(fd);
}

void SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the server closed, or stopped reading: both fine
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Reads until the server closes; false when it has not within the receive
// timeout (a reset counts as closed).
bool ReadUntilClosed(int fd, std::string& got) {
  char buf[4096];
  const Clock::time_point until = Clock::now() + milliseconds(3000);
  while (true) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR && Clock::now() < until) continue;
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
    got.append(buf, static_cast<size_t>(n));
  }
}

// Waits until the server has taken every connection made so far (the kernel
// completes a connect before the server accepts it) and `n` are open.
void WaitSettled(const http::HttpServer& server, uint64_t n) {
  const Clock::time_point until = Clock::now() + milliseconds(3000);
  while (true) {
    const http::ServerCounters c = server.Counters();
    if (c.accepted + c.refused_over_limit == connects && c.open == n) return;
    if (Clock::now() >= until) {
      std::fprintf(
          stderr, "open %llu, want %llu; connects %llu, taken %llu\n",
          static_cast<unsigned long long>(c.open),
          static_cast<unsigned long long>(n),
          static_cast<unsigned long long>(connects),
          static_cast<unsigned long long>(c.accepted + c.refused_over_limit));
    }
    MXLIMIT_FUZZ_CHECK(Clock::now() < until);
    std::this_thread::yield();  // the workers are a few microseconds away
  }
}

}  // namespace
}  // namespace mxlimit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxlimit::fuzz;
  static Daemon* const d = new Daemon();  // lives for the process
  const uint16_t port = d->server->port();
  FuzzInput in(data, size);
  std::vector<int> open;
  for (int chunk = 0; chunk < 16 && !in.empty(); ++chunk) {
    const uint8_t control = in.Byte();
    const std::string_view bytes = in.Bytes(in.Int<uint16_t>());
    if ((control & 1) != 0 || open.empty()) {
      // Room for the client's own connections; the check at the end needs
      // the rest.
      if (open.size() == kMaxConnections - 1) {
        Abort(open.front());
        open.erase(open.begin());
      }
      open.push_back(Connect(port));
    }
    const int fd = open.back();
    SendAll(fd, bytes);
    if ((control & 2) != 0) {
      shutdown(fd, SHUT_WR);
      std::string got;
      MXLIMIT_FUZZ_CHECK(ReadUntilClosed(fd, got));
      close(fd);
      open.pop_back();
    }
  }
  for (int fd : open) Abort(fd);
  WaitSettled(*d->server, 0);

  // Every slot serves exactly one connection, and the bound holds.
  int fds[kMaxConnections];
  for (int& fd : fds) {
    fd = Connect(port);
    SendAll(fd, kValidCheck);
  }
  WaitSettled(*d->server, kMaxConnections);
  const int over = Connect(port);
  std::string refused;
  MXLIMIT_FUZZ_CHECK(ReadUntilClosed(over, refused));
  MXLIMIT_FUZZ_CHECK(refused.rfind("HTTP/1.1 503 ", 0) == 0);
  close(over);
  for (int fd : fds) {
    shutdown(fd, SHUT_WR);
    std::string got;
    MXLIMIT_FUZZ_CHECK(ReadUntilClosed(fd, got));
    MXLIMIT_FUZZ_CHECK(got.rfind("HTTP/1.1 204 ", 0) == 0 ||
                       got.rfind("HTTP/1.1 403 ", 0) == 0);
    close(fd);
  }
  WaitSettled(*d->server, 0);
  return 0;
}
