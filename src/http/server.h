// -----------------------------------------------------------------------------
// File: http/server.h
// -----------------------------------------------------------------------------
//
// mxlimitd's HTTP/1.1 server: a fixed number of worker threads, each with its
// own epoll loop and its own preallocated connection slots, accepting from
// one listening socket. It serves exactly what an authorization sidecar
// needs (small GET requests on keepalive connections from a local proxy) and
// bounds everything a client controls:
//   - connections: `max_connections` open in all, whichever worker accepted
//     them; one more is answered 503 and closed;
//   - the request head: target up to `kMaxTargetBytes` (else 414), header
//     fields up to `max_header_bytes` (else 431), `kMaxHeaderFields`;
//   - time: a head must arrive within `request_timeout` of its first byte
//     (else 408), and a new connection must send a first byte within it
//     (else it is closed); an idle keepalive connection is closed after
//     `idle_timeout`; a peer that stops reading its response is dropped after
//     `request_timeout`;
//   - bodies: up to `kMaxBodyBytes` are read and discarded (else 413).
// Reading, parsing and answering an ordinary request allocates nothing: a
// connection takes its buffers when it is accepted, sized at start and reused
// by later connections.
//
// Example:
//   class Hello : public mxlimit::http::HttpHandler {
//    public:
//     void Handle(const mxlimit::http::HttpRequestHead&,
//                 const mxlimit::IpAddress&,
//                 mxlimit::http::HttpResponse& out) override {
//       out.status = 204;
//     }
//   };
//   absl::Status Serve(Hello& hello) {
//     mxlimit::http::ServerOptions options;  // 127.0.0.1, an ephemeral port
//     absl::StatusOr<std::unique_ptr<mxlimit::http::HttpServer>> server =
//         mxlimit::http::HttpServer::Start(options, hello);
//     if (!server.ok()) return server.status();
//     (*server)->Drain();  // stop accepting, finish what is in flight
//     return absl::OkStatus();
//   }

#ifndef MXLIMIT_HTTP_SERVER_H_
#define MXLIMIT_HTTP_SERVER_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "mxlimit/ip.h"
#include "src/http/request_head.h"
#include "src/http/response.h"

namespace mxlimit::http {

// Largest request body read (and discarded); authorization subrequests carry
// none.
inline constexpr int64_t kMaxBodyBytes = 64 * 1024;

struct ServerOptions {
  // A numeric IPv4 or IPv6 address ("::1", not "[::1]") and a port; port 0
  // binds an ephemeral one (see `HttpServer::port()`).
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int threads = 1;
  // Open connections in all, over every worker.
  size_t max_connections = 1024;
  // Caddy forwards every client header; Go's own servers accept 1 MiB,
  // nginx 32 KiB by default.
  size_t max_header_bytes = size_t{64} * 1024;
  std::chrono::milliseconds request_timeout{10'000};
  // Answers each worker holds at most (`HttpResponse::hold`); one more is
  // sent at once. Its queue is allocated up front.
  size_t max_held_per_worker = 10'000;
  std::chrono::milliseconds idle_timeout{120'000};
  // How long `Drain` waits for requests under way before closing anyway.
  std::chrono::milliseconds drain_timeout{10'000};
};

// What the server calls for each complete request head. Called from every
// worker thread at once: implementations must be thread-safe.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  virtual void Handle(const HttpRequestHead& head, const IpAddress& peer,
                      HttpResponse& out) = 0;
  // An answer `Handle` asked to hold (`HttpResponse::hold`) has been sent,
  // or its connection closed first, or the server could hold no more and
  // sent it at once: called exactly once per held answer, from the worker
  // that held it.
  virtual void OnHeldAnswerDone() {}
};

// Counters, summed over the workers. Read at any time from any thread.
struct ServerCounters {
  uint64_t accepted = 0;
  uint64_t refused_over_limit = 0;  // answered 503: no free slot
  uint64_t open = 0;
  uint64_t timed_out = 0;  // heads answered 408, slow readers dropped
  uint64_t malformed = 0;  // heads answered 4xx/5xx by the server
  uint64_t held = 0;       // answers held now (HttpResponse::hold)
};

class HttpServer {
 public:
  // Binds, listens and starts `options.threads` workers.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const ServerOptions& options, HttpHandler& handler);

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Drains if `Drain` has not run.
  ~HttpServer();

  // The bound port (the ephemeral one when options.port was 0).
  uint16_t port() const { return port_; }

  // Stops accepting, closes idle connections, lets requests under way finish
  // (their responses say "Connection: close") for up to `drain_timeout`, then
  // closes the rest and joins the workers. Idempotent.
  void Drain();

  ServerCounters Counters() const;

 private:
  class ConnectionPool;
  class Worker;
  HttpServer() = default;

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  // Outlives the workers, which borrow it.
  std::unique_ptr<ConnectionPool> pool_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  bool drained_ = false;
};

}  // namespace mxlimit::http

#endif  // MXLIMIT_HTTP_SERVER_H_
