// -----------------------------------------------------------------------------
// File: daemon/sidecar.h
// -----------------------------------------------------------------------------
//
// The request handler of mxlimitd: reads what the proxy forwarded, decides
// with the limiter and answers in the form the proxy's authorization hook
// understands. Endpoints (their names are what operators' proxy configs
// say, so they never change):
//   /_mxlimit/auth_request   nginx auth_request: 204 allow; deny: 403 with
//                            Retry-After (not for `never`), X-Mxlimit-Body
//                            (the Matrix 429 body) and X-Mxlimit-Policy
//   /_mxlimit/forward_auth   Caddy forward_auth, Traefik ForwardAuth: 200
//                            allow; deny: 429 with Retry-After and the
//                            Matrix body. Envoy's HTTP ext_authz, which
//                            sends the original method to
//                            /_mxlimit/forward_auth<original target>, alike
// With `response_headers: ratelimit`, both decision endpoints add the
// RateLimit and RateLimit-Policy fields (mxlimit/ratelimit_headers.h) to
// allows and denials alike, for the proxy to copy onto its answer.
//   /_mxlimit/metrics        Prometheus text (GET); the store's families
//                            too when the limiter has a store
//   /_mxlimit/health         200 "ok" (GET)
// The two decision endpoints take any method: nginx sends its subrequest
// with the original request's method.
//
// Example:
//   mxlimit::daemon::Sidecar sidecar(limiter, options, secret, registry,
//                                    /*whoami=*/nullptr, metrics);
//   absl::StatusOr<std::unique_ptr<mxlimit::http::HttpServer>> server =
//       mxlimit::http::HttpServer::Start(server_options, sidecar);

#ifndef MXLIMIT_DAEMON_SIDECAR_H_
#define MXLIMIT_DAEMON_SIDECAR_H_

#include <atomic>
#include <chrono>
#include <string_view>
#include <vector>

#include "mxlimit/ip.h"
#include "mxlimit/options.h"
#include "mxlimit/shared_limiter.h"
#include "src/daemon/appservice.h"
#include "src/daemon/daemon_metrics.h"
#include "src/daemon/feed_receiver.h"
#include "src/daemon/feed_sink.h"
#include "src/daemon/pending_table.h"
#include "src/daemon/request_inputs.h"
#include "src/daemon/whoami_cache.h"
#include "src/http/server.h"
#include "src/util/siphash.h"

namespace mxlimit::daemon {

struct SidecarOptions {
  // Peers whose X-Forwarded-For (and, on the nginx endpoint, X-Real-IP) is
  // believed.
  std::vector<Cidr> trusted_proxies;
  // Answers held at once for delayed admissions (`on_limit: delay`); at the
  // limit a request the policy would delay is denied instead.
  size_t max_held = 10'000;
  // The completion feed, when on (all three set; borrowed): admitted
  // requests with leases or charged on their response are kept in `pending`
  // under their X-Request-Id until their completion line comes.
  PendingTable* pending = nullptr;
  const FeedSink* feed_sink = nullptr;
  const FeedReceiver* feed_receiver = nullptr;
};

class Sidecar : public http::HttpHandler {
 public:
  // Everything is borrowed and must outlive the Sidecar; `whoami` may be
  // null (token-hash user keys).
  Sidecar(SharedLimiter& limiter, SidecarOptions options,
          const internal::SipKey& secret, const AppserviceRegistry& appservices,
          WhoamiCache* whoami, DaemonMetrics& metrics);

  void Handle(const http::HttpRequestHead& head, const IpAddress& peer,
              http::HttpResponse& out) override;
  void OnHeldAnswerDone() override {
    held_.fetch_sub(1, std::memory_order_relaxed);
  }

  // Whether answers carry the RateLimit header fields (the policy file's
  // `response_headers`); set at start and after each reload.
  void set_response_headers(ResponseHeaders headers) {
    ratelimit_headers_.store(headers == ResponseHeaders::kRateLimit,
                             std::memory_order_relaxed);
  }

  // The server whose counters the metrics endpoint reports (set once it is
  // started).
  void set_server(const http::HttpServer* server) {
    server_.store(server, std::memory_order_release);
  }

 private:
  // `envoy_target`: the original target the endpoint's path carries
  // (kEnvoy only).
  void Decide(const http::HttpRequestHead& head, const IpAddress& peer,
              CheckProtocol protocol, std::string_view envoy_target,
              http::HttpResponse& out);
  // Keeps an admitted request for its completion on the feed, when it has
  // leases or a charge on its response and the proxy named it. True when
  // its completion is wanted: it is kept now, or an earlier check of the
  // same request (an internal redirect) is.
  bool KeepForCompletion(std::string_view request_id, const Request& request,
                         const Decision& d,
                         std::chrono::steady_clock::time_point now);
  void AddRateLimitFields(const Decision& d, http::HttpResponse& out);
  void Metrics(http::HttpResponse& out);

  SharedLimiter& limiter_;
  const SidecarOptions options_;
  const internal::SipKey secret_;
  const AppserviceRegistry& appservices_;
  WhoamiCache* const whoami_;
  DaemonMetrics& metrics_;
  std::atomic<const http::HttpServer*> server_{nullptr};
  std::atomic<bool> ratelimit_headers_{false};
  // Held answers, counted from the decision to OnHeldAnswerDone.
  std::atomic<int64_t> held_{0};
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_SIDECAR_H_
