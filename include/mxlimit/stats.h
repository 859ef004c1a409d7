// -----------------------------------------------------------------------------
// File: stats.h
// -----------------------------------------------------------------------------
//
// Counters a `Limiter` keeps, as a plain snapshot, and writers for the
// Prometheus text exposition format (version 0.0.4) and for OpenMetrics 1.0,
// so an embedder can serve them on its metrics endpoint.
//
// Each family is written whole (HELP, TYPE, then every sample), as both
// formats require; Python's `prometheus_client` parsers (text and OpenMetrics)
// and `promtool check metrics` accept the output (tests/engine/exposition/).
//
// Example:
//   #include "mxlimit/limiter.h"
//
//   // The body of GET /metrics; under the lock that guards `Check`.
//   std::string Metrics(const mxlimit::Limiter& limiter) {
//     return mxlimit::FormatPrometheus(limiter.Stats());
//   }

#ifndef MXLIMIT_STATS_H_
#define MXLIMIT_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "mxlimit/policy.h"
#include "mxlimit/rate.h"
#include "mxlimit/route.h"

namespace mxlimit {

struct TableStats {
  uint64_t size = 0;
  uint64_t capacity = 0;
  // Buckets created for a key that had none.
  uint64_t admissions = 0;
  // Buckets dropped to make room (least recently used first).
  uint64_t evictions = 0;
  // Lookups that found an existing bucket.
  uint64_t hits = 0;
};

// Per-policy request counts. Every checked (not exempt) request a policy
// applied to counts exactly once for it, in one of four results, so
// allowed + denied + shadow_denied + denied_by_other is the number of
// requests the policy applied to.
struct PolicyCounters {
  // The request was charged to this policy's bucket (it went through, and
  // for a shadow policy no shadow policy of the request would have denied).
  uint64_t allowed = 0;
  // This enforcing policy denied the request (each enforcing policy that
  // denied one request counts it).
  uint64_t denied = 0;
  // Of `denied`: denials no wait would lift (the cost exceeds the burst, or
  // the policy blocks the route outright); the client got no Retry-After.
  uint64_t never = 0;
  // This shadow-mode policy would have denied; the request went through.
  uint64_t shadow_denied = 0;
  // This policy did not deny, but another did: an enforcing policy for
  // real, or, for a shadow policy, another shadow policy of the request
  // would have. The policy was not charged.
  uint64_t denied_by_other = 0;
};

struct PolicyStats {
  std::string name;
  Scope scope = Scope::kIp;
  bool builtin = false;
  // The policy as it is in force, for the info family: its layer, whether it
  // only observes (its own `shadow_mode` or the file's), and its rate.
  std::string layer = std::string(kDefaultLayer);
  bool shadow = false;
  Rate rate = Rate::Unlimited();
  PolicyCounters counters;
};

// Denials of one route key. Only routes with at least one denial are listed,
// so the list (and the metric family) is bounded by the route table, not by
// traffic.
struct RouteDenials {
  RouteId route_id = kFallbackRouteId;
  std::string route;  // The route key, e.g. "/_matrix/client/v3/login".
  uint64_t denied = 0;
};

struct LimiterStats {
  TableStats ip_table;
  TableStats user_table;
  TableStats origin_table;
  TableStats room_table;
  TableStats target_table;
  // The leases of in-flight limits: `size` held now, `admissions` taken,
  // `evictions` ended early because all were held (`hits` unused).
  TableStats lease_table;
  uint64_t leases_released = 0;
  uint64_t leases_expired = 0;
  // Requests that were exempt (neither checked nor charged).
  uint64_t exempt = 0;
  std::vector<PolicyStats> policies;
  // Denied requests per route key, by route id.
  std::vector<RouteDenials> route_denials;
  // Decisions on requests whose target matched no known route (the shared
  // `<fallback>` key), exempt requests aside.
  uint64_t fallback_allowed = 0;
  uint64_t fallback_denied = 0;
};

// FormatPrometheus()
//
// The Prometheus text format (version 0.0.4; serve it as
// `text/plain; version=0.0.4`). Families, each whole:
//
//   mxlimit_table_{size,capacity}{table}              gauges
//   mxlimit_table_{admissions,evictions,hits}_total{table}
//   mxlimit_exempt_requests_total
//   mxlimit_policy_info{policy,layer,scope,mode,builtin,rate[,burst]} 1
//   mxlimit_policy_requests_total{policy,scope,result}
//       result: allowed, denied, shadow_denied, denied_by_other (each
//       request a policy applied to counts in exactly one)
//   mxlimit_policy_never_denials_total{policy,scope}
//   mxlimit_route_denials_total{route}
//   mxlimit_fallback_decisions_total{result}   result: allowed, denied
//
// Ends with a newline and holds no `# EOF`, so a server may append families
// of its own (mxlimitd does).
std::string FormatPrometheus(const LimiterStats& stats);

// FormatOpenMetrics()
//
// The same families in OpenMetrics 1.0 (serve it as
// `application/openmetrics-text; version=1.0.0`): counter families are named
// without `_total` (their samples keep it), `mxlimit_policy` is of type
// `info`, and the text ends with `# EOF`, so nothing may be appended.
std::string FormatOpenMetrics(const LimiterStats& stats);

}  // namespace mxlimit

#endif  // MXLIMIT_STATS_H_
