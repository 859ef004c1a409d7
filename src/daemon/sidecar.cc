#include "src/daemon/sidecar.h"

#include <chrono>
#include <cstdio>
#include <string_view>
#include <utility>

#include "mxlimit/matrix_response.h"
#include "mxlimit/ratelimit_headers.h"
#include "mxlimit/stats.h"
#include "src/daemon/request_inputs.h"
#include "src/daemon/token_key.h"

namespace mxlimit::daemon {
namespace {

constexpr std::string_view kAuthRequest = "/_mxlimit/auth_request";
constexpr std::string_view kForwardAuth = "/_mxlimit/forward_auth";
constexpr std::string_view kMetricsPath = "/_mxlimit/metrics";
constexpr std::string_view kHealth = "/_mxlimit/health";
// On an answer whose request's completion mxlimitd wants on the feed, so a
// proxy can log to the feed only those (nginx: `access_log ... if=`).
constexpr std::string_view kFeedField = "X-Mxlimit-Feed";

void PlainText(int status, std::string_view text, http::HttpResponse& out) {
  out.status = status;
  out.content_type = "text/plain; charset=utf-8";
  out.body = text;
}

}  // namespace

Sidecar::Sidecar(SharedLimiter& limiter, SidecarOptions options,
                 const internal::SipKey& secret,
                 const AppserviceRegistry& appservices, WhoamiCache* whoami,
                 DaemonMetrics& metrics)
    : limiter_(limiter),
      options_(std::move(options)),
      secret_(secret),
      appservices_(appservices),
      whoami_(whoami),
      metrics_(metrics) {}

void Sidecar::Handle(const http::HttpRequestHead& head, const IpAddress& peer,
                     http::HttpResponse& out) {
  // RFC 9112 section 3.2.2: a server accepts the absolute form too.
  const std::string_view target = OriginForm(head.target);
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == kAuthRequest) {
    metrics_.CountRequest(Endpoint::kAuthRequest);
    Decide(head, peer, CheckProtocol::kAuthRequest, {}, out);
    return;
  }
  if (path == kForwardAuth) {
    metrics_.CountRequest(Endpoint::kForwardAuth);
    Decide(head, peer, CheckProtocol::kForwardAuth, {}, out);
    return;
  }
  // Envoy's HTTP ext_authz appends the original path (and query) to the
  // configured prefix and checks with the original method.
  if (path.size() > kForwardAuth.size() + 1 &&
      path.substr(0, kForwardAuth.size()) == kForwardAuth &&
      path[kForwardAuth.size()] == '/') {
    metrics_.CountRequest(Endpoint::kForwardAuth);
    Decide(head, peer, CheckProtocol::kEnvoy,
           target.substr(kForwardAuth.size()), out);
    return;
  }
  const bool metrics = path == kMetricsPath;
  const bool health = path == kHealth;
  metrics_.CountRequest(metrics  ? Endpoint::kMetrics
                        : health ? Endpoint::kHealth
                                 : Endpoint::kOther);
  if (!metrics && !health) {
    PlainText(404, "mxlimitd: no such endpoint\n", out);
    return;
  }
  if (head.method != "GET") {
    PlainText(405, "mxlimitd: use GET\n", out);
    out.AddHeader("Allow", "GET");
    return;
  }
  if (health) {
    PlainText(200, "ok\n", out);
  } else {
    Metrics(out);
  }
}

void Sidecar::Decide(const http::HttpRequestHead& head, const IpAddress& peer,
                     CheckProtocol protocol, std::string_view envoy_target,
                     http::HttpResponse& out) {
  const auto started = std::chrono::steady_clock::now();
  const bool for_nginx = protocol == CheckProtocol::kAuthRequest;
  OriginalRequest original;
  std::string_view error;
  if (!ReadOriginalRequest(head, protocol, peer, options_.trusted_proxies,
                           original, error, envoy_target)) {
    // Only what the proxy sets can be missing or malformed here: a
    // misconfigured proxy, reported in Matrix's own error shape.
    metrics_.CountBadRequest();
    out.status = 400;
    out.content_type = "application/json";
    char json[256];
    const int n =
        std::snprintf(json, sizeof(json),
                      R"({"errcode":"M_UNKNOWN","error":"mxlimitd: %.*s"})",
                      static_cast<int>(error.size()), error.data());
    out.body = out.Keep(std::string_view(json, static_cast<size_t>(n)));
    out.AddHeader("X-Mxlimit-Body", out.body);
    return;
  }

  Request request;
  request.method = original.method;
  request.target = original.target;
  request.client = original.client;
  request.origin = original.origin;
  request.request_bytes = original.request_bytes;
  // mxlimitd never sees a request end: a long-poll's leases last its
  // timeout and a second, when that is shorter than the policy's lease.
  request.max_lease = LeaseForTimeout(original.target);
  // A delayed admission holds its answer on the worker's timer; past
  // --max-held, such requests are denied instead.
  request.may_delay = held_.load(std::memory_order_relaxed) <
                      static_cast<int64_t>(options_.max_held);
  TokenUserId hashed;
  char resolved[kMaxUserIdBytes];
  if (!original.access_token.empty()) {
    const Appservice* as = appservices_.Find(original.access_token);
    if (as != nullptr) {
      // The appservice's sender is exempt; its users are too unless the
      // registration says they are rate limited.
      if (original.masquerade_user_id.empty() || !as->rate_limited) {
        request.exempt = true;
      } else {
        request.user_id = original.masquerade_user_id;
      }
    } else {
      size_t n = 0;
      if (whoami_ != nullptr) {
        n = whoami_->Lookup(original.access_token,
                            MonotonicTime::FromSteadyClock(started), resolved);
      }
      if (n > 0) {
        request.user_id = std::string_view(resolved, n);
      } else {
        hashed = TokenHashUserId(secret_, original.access_token);
        request.user_id = hashed.view();
      }
    }
  }

  const Decision d =
      limiter_.Check(request, MonotonicTime::FromSteadyClock(started));
  Outcome outcome = Outcome::kAllowed;
  if (request.exempt) {
    outcome = Outcome::kExempt;
  } else if (!d.allowed) {
    outcome = d.never ? Outcome::kNever : Outcome::kLimited;
  } else if (d.delay.count() > 0) {
    outcome = Outcome::kDelayed;
    out.hold = d.delay;
    held_.fetch_add(1, std::memory_order_relaxed);
  }

  if (KeepForCompletion(original.request_id, request, d, started)) {
    out.AddHeader(kFeedField, "1");
  }
  if (ratelimit_headers_.load(std::memory_order_relaxed)) {
    AddRateLimitFields(d, out);
  }

  if (d.allowed) {
    out.status = for_nginx ? 204 : 200;
  } else {
    // The policy's own errcode (MSC4335's M_USER_LIMIT_EXCEEDED for a
    // quota) when it names one.
    char body[kLimitBodyMaxBytes];
    const std::string_view json(
        body, WriteLimitBody(d.error != nullptr ? *d.error : LimitError{},
                             d.retry_after, d.never, body));
    char retry[kRetryAfterValueMaxBytes];
    const std::string_view retry_after(
        retry, WriteRetryAfterValue(d.retry_after, d.never, retry));
    if (!retry_after.empty()) {
      out.AddHeader("Retry-After", out.Keep(retry_after));
    }
    out.content_type = "application/json";
    out.body = out.Keep(json);
    if (for_nginx) {
      // auth_request passes only 2xx, 401 and 403: the deny is a 403 whose
      // headers carry what nginx needs to answer 429 itself.
      out.status = 403;
      out.AddHeader("X-Mxlimit-Body", out.body);
      out.AddHeader("X-Mxlimit-Policy", out.Keep(d.policy));
    } else {
      out.status = 429;
    }
  }
  metrics_.CountDecision(outcome, std::chrono::steady_clock::now() - started);
}

bool Sidecar::KeepForCompletion(std::string_view request_id,
                                const Request& request, const Decision& d,
                                std::chrono::steady_clock::time_point now) {
  if (options_.pending == nullptr || !PendingTable::Keeps(request_id)) {
    return false;
  }
  if (!d.allowed || request.exempt || (d.leases.count == 0 && !d.settles)) {
    return options_.pending->Contains(request_id);
  }
  // A second check of one request (an internal redirect into another
  // checked location) replaces the first; its leases were that request's.
  const Leases displaced =
      options_.pending->Put(request_id, PendingRequest::Of(request, d));
  if (displaced.count > 0) {
    limiter_.Release(displaced, MonotonicTime::FromSteadyClock(now));
  }
  return true;
}

void Sidecar::AddRateLimitFields(const Decision& d, http::HttpResponse& out) {
  char policy[kRateLimitPolicyValueMaxBytes];
  char limit[kRateLimitValueMaxBytes];
  const RateLimitHeaderLengths n = FormatRateLimitHeaders(d, policy, limit);
  if (n.policy > 0 && n.ratelimit > 0) {
    out.AddHeader(kRateLimitPolicyField,
                  out.Keep(std::string_view(policy, n.policy)));
    out.AddHeader(kRateLimitField,
                  out.Keep(std::string_view(limit, n.ratelimit)));
  }
}

void Sidecar::Metrics(http::HttpResponse& out) {
  out.owned = FormatPrometheus(limiter_.Stats());
  if (limiter_.has_store())
    out.owned += FormatStorePrometheus(limiter_.StoreStats());
  const http::HttpServer* server = server_.load(std::memory_order_acquire);
  metrics_.AppendPrometheus(
      server != nullptr ? server->Counters() : http::ServerCounters{}, whoami_,
      out.owned);
  if (options_.pending != nullptr && options_.feed_sink != nullptr &&
      options_.feed_receiver != nullptr) {
    FeedCounters c;
    for (size_t i = 0; i < c.lines.size(); ++i) {
      c.lines[i] = options_.feed_sink->lines(static_cast<FeedLineResult>(i));
    }
    const FeedReceiver& r = *options_.feed_receiver;
    c.datagrams = r.datagrams();
    c.oversized = r.oversized();
    c.dropped = r.dropped();
    const PendingTable::Counters p = options_.pending->counters();
    c.pending = p.entries;
    c.pending_capacity = p.capacity;
    c.pending_evicted = p.evicted;
    c.pending_replaced = p.replaced;
    c.pending_too_long = p.too_long;
    AppendFeedPrometheus(c, out.owned);
  }
  out.status = 200;
  out.content_type = "text/plain; version=0.0.4; charset=utf-8";
  out.body = out.owned;
}

}  // namespace mxlimit::daemon
