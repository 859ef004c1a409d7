// -----------------------------------------------------------------------------
// File: stats.h
// -----------------------------------------------------------------------------
//
// Counters a `Limiter` keeps, as a plain snapshot, and a writer for the
// Prometheus text exposition format so an embedder can serve them on its
// metrics endpoint.
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

// Per-policy request counts. A request that passes counts as `allowed` for
// each policy that applied to it; a denial counts for the policy (or both
// policies) that denied it.
struct PolicyCounters {
  uint64_t allowed = 0;
  uint64_t denied = 0;
  // A shadow-mode policy would have denied; the request went through.
  uint64_t shadow_denied = 0;
};

struct PolicyStats {
  std::string name;
  Scope scope = Scope::kIp;
  bool builtin = false;
  PolicyCounters counters;
};

struct LimiterStats {
  TableStats ip_table;
  TableStats user_table;
  // Requests that were exempt (neither checked nor charged).
  uint64_t exempt = 0;
  std::vector<PolicyStats> policies;
};

// Prometheus text format (version 0.0.4): `mxlimit_table_*{table="ip"}` and
// `mxlimit_policy_requests_total{policy="…",scope="…",result="…"}`.
std::string FormatPrometheus(const LimiterStats& stats);

}  // namespace mxlimit

#endif  // MXLIMIT_STATS_H_
