// -----------------------------------------------------------------------------
// File: decision.h
// -----------------------------------------------------------------------------
//
// `mxlimit::Decision` is what `Limiter::Check` answers for one request. A
// denial is a normal result, not an error: the embedder turns it into a 429
// `M_LIMIT_EXCEEDED` response (see matrix_response.h).
//
// Example:
//   #include "mxlimit/matrix_response.h"
//
//   // The embedder's: pass the request on, or answer it (an empty
//   // `retry_after` means no Retry-After header).
//   void Forward();
//   void Reply(int status, std::string_view retry_after,
//              std::string_view body);
//   void Log(std::string_view policy, std::string_view layer);
//
//   void Answer(const mxlimit::Decision& d) {
//     if (d.allowed) return Forward();
//     Log(d.policy, d.layer);
//     Reply(429, mxlimit::RetryAfterValue(d.retry_after, d.never),
//           mxlimit::LimitExceededBody(d.retry_after, d.never));
//   }

#ifndef MXLIMIT_DECISION_H_
#define MXLIMIT_DECISION_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "mxlimit/limit_error.h"
#include "mxlimit/policy.h"
#include "mxlimit/route.h"

namespace mxlimit {

// Which table a decision came from.
enum class LimitScope : uint8_t { kNone, kIp, kUser, kOrigin, kRoom, kTarget };

constexpr LimitScope LimitScopeOf(Scope scope) {
  return static_cast<LimitScope>(static_cast<uint8_t>(scope) + 1);
}

constexpr std::string_view LimitScopeName(LimitScope scope) {
  switch (scope) {
    case LimitScope::kIp:
      return "ip";
    case LimitScope::kUser:
      return "user";
    case LimitScope::kOrigin:
      return "origin";
    case LimitScope::kRoom:
      return "room";
    case LimitScope::kTarget:
      return "target";
    case LimitScope::kNone:
      break;
  }
  return "none";
}

// One lease of an in-flight limit (`Policy::concurrency`); 0 is none.
using LeaseId = uint64_t;

// Most leases one request takes: a set holds at most this many groups of
// in-flight policies (`PolicySet::Compile` rejects more).
inline constexpr size_t kMaxLeases = 4;

// The leases an admitted request holds, one per in-flight policy that
// applied. Give them back with `Limiter::Release` when the request is done.
struct Leases {
  uint8_t count = 0;
  std::array<LeaseId, kMaxLeases> ids{};
  const LeaseId* begin() const { return ids.data(); }
  const LeaseId* end() const { return ids.data() + count; }
};

// What a quota is counted in, as the RateLimit-Policy field's `qu` parameter
// names it (ratelimit_headers.h).
enum class QuotaUnit : uint8_t {
  kRequests,            // A rate of requests (the default unit).
  kContentBytes,        // A rate of bytes (`cost: request_bytes` or
                        // `response_bytes`).
  kConcurrentRequests,  // An in-flight limit (`Policy::concurrency`).
};

// One enforcing policy's quota and where the client's bucket stands: what
// the RateLimit header fields describe (`FormatRateLimitHeaders`,
// ratelimit_headers.h). The policy is the denying one on a denial (the same
// as `Decision::policy`), and otherwise the enforcing policy that gave
// `Decision::remaining`: the smallest remaining over the checks counted in
// it, i.e. the bucket the client will run out of first.
struct DecisionQuota {
  // The policy's name; empty when none applies: no limited policy applied
  // (`remaining` is `kUnlimitedRemaining`), or the request was exempt. From
  // a ShardedLimiter, a view of its interned copy (valid for its life, as
  // `Decision::policy`).
  std::string_view policy;
  QuotaUnit unit = QuotaUnit::kRequests;
  // The policy's burst b (an in-flight policy: its limit), in `unit`s.
  int64_t burst = 0;
  // Its emission interval T: one unit comes back every T. 0 for an
  // in-flight policy, whose units come back when requests end.
  std::chrono::nanoseconds interval{0};
  // How long until a request of cost 1 fits this policy's bucket: 0 while
  // `remaining` is at least 1, T - slack when it is 0, and on a denial the
  // denial's wait (`Decision::retry_after`).
  std::chrono::nanoseconds next{0};
  // The id of `policy` in the policy set of the engine that checked it
  // (0xFFFF if none).
  PolicyId policy_id = 0xFFFF;
};

struct Decision {
  bool allowed = true;
  // Denied, and no wait helps: the cost exceeds the policy's burst, or the
  // policy blocks the route outright (`requests_per_unit: 0`).
  bool never = false;
  // Exact wait until the same request would pass; 0 when allowed or `never`.
  std::chrono::nanoseconds retry_after{0};
  // Allowed, but only after this wait: an `on_limit: delay` policy admitted
  // the request late rather than deny it, and charged it as if it arrived
  // now + delay. Hold the request that long, then pass it on. `policy`,
  // `layer` and `limited_by` then name the policy with the longest wait. 0
  // for every other decision.
  std::chrono::nanoseconds delay{0};
  // Requests of cost 1 left right after this one, the smallest over every
  // enforcing policy that applied; `kUnlimitedRemaining` when no limited
  // policy applied. 0 on a denial.
  int64_t remaining = 0;
  // The policy `remaining` comes from (on a denial, the denying one), with
  // its quota: what the RateLimit header fields report.
  DecisionQuota quota;

  // The scope, policy and layer that denied the request (`kNone`/empty if
  // allowed). When several policies deny, the one with the longest wait is
  // reported (the first in resolution order on a tie).
  LimitScope limited_by = LimitScope::kNone;
  std::string_view policy;
  std::string_view layer;
  // The id of `policy` in the limiter's current policy set (0xFFFF if none).
  PolicyId denied_policy = 0xFFFF;
  // The error `policy` names for its denials (`Policy::errcode`; answer it
  // with WriteLimitBody, matrix_response.h); null: M_LIMIT_EXCEEDED.
  const LimitError* error = nullptr;

  // A shadow-mode policy would have denied this request. Shadow policies are
  // counted and reported but never deny, so `allowed` stays true for them.
  // The first such policy in resolution order is named.
  bool shadow_denied = false;
  std::string_view shadow_policy;
  std::string_view shadow_layer;
  PolicyId shadow_policy_id = 0xFFFF;

  // The request was exempt (flag, IP allowlist, exempt user or exempt
  // tier): nothing was checked or charged.
  bool exempt = false;

  // The normalized route.
  RouteId route_id = kFallbackRouteId;
  std::string_view route_key = kFallbackRouteKey;

  // The enforcing policies of the default layer (`route`) per scope
  // (kNoPolicy-like 0xFFFF when none).
  PolicyId ip_policy = 0xFFFF;
  PolicyId user_policy = 0xFFFF;

  // Allowed: the leases taken for the request's in-flight policies (shadow
  // ones included); release them when the request ends. Empty otherwise.
  Leases leases;
  // A policy that applied is charged on the response (`charge: response`,
  // `cost: response_bytes`): only then can `Limiter::Settle` charge
  // anything for this request, so an embedder that must keep the request
  // until it completes (mxlimitd's feed) keeps only these and those with
  // `leases`. Set on denials too.
  bool settles = false;
  // The tier the request's user or address is in (`tiers:`,
  // `Limiter::SetTier`), whose rates it was checked against; empty: none.
  // Valid as long as the limiter (tier names are kept).
  std::string_view tier;
};

// NOTE: the string views in a Decision point into the Limiter (policy names,
// route keys). They stay valid until the next `Limiter::Reload`.

}  // namespace mxlimit

#endif  // MXLIMIT_DECISION_H_
