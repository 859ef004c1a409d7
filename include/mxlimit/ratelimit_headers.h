// -----------------------------------------------------------------------------
// File: ratelimit_headers.h
// -----------------------------------------------------------------------------
//
// The `RateLimit-Policy` and `RateLimit` header fields of the IETF httpapi
// draft "RateLimit header fields for HTTP"
// (draft-ietf-httpapi-ratelimit-headers-10), written from a `Decision`, so a
// client can see how close it is to being limited before it is:
//
//   RateLimit-Policy: "send-per-user";q=10;w=20
//   RateLimit: "send-per-user";r=7;t=0
//
// Both are Structured Field Lists (RFC 9651) of one Item: the policy's name
// as an sf-string, with Integer parameters. The policy is the one
// `Decision::quota` names: on a denial the denying policy, otherwise the
// enforcing policy with the smallest remaining (the bucket the client runs
// out of first). For a policy of `n` requests per `unit` with burst `b`
// (emission interval `T = unit / n`, docs/rate.md):
//
//   q  = b, the quota: what a full bucket lets through at once;
//   w  = ceil(b * T) in seconds: how long an empty bucket takes to refill;
//   qu = "content-bytes" for a byte-cost policy, "concurrent-requests" for an
//        in-flight one (then without `w`); left out for requests, the
//        draft's default unit;
//   r  = `Decision::remaining`: requests of cost 1 that would pass right
//        now (0 on a denial);
//   t  = seconds until a request of cost 1 fits, rounded up: 0 while `r` is
//        at least 1; on a denial the `Retry-After` value exactly (the same
//        rounding as WriteRetryAfterValue, matrix_response.h), so `t` never
//        undercuts `Retry-After` and `Retry-After` never points earlier
//        than `t`, as the draft asks.
//
// Nothing is written (both lengths 0: send neither field) when no limited
// policy applied (`remaining` is `kUnlimitedRemaining`), when the request was
// exempt, and on a `never` denial (the request can never pass, as no
// Retry-After is sent either).
//
// docs/rate.md has the mapping from GCRA with a worked example. The fields
// are opt-in: `response_headers: ratelimit` in the policy file
// (`LimiterConfig::response_headers`); the limiter never writes a header
// itself.
//
// Example:
//   struct Response {  // the embedder's
//     void SetHeader(std::string_view name, std::string_view value);
//   };
//
//   // On allowed and denied answers alike; allocates nothing.
//   void AddRateLimitFields(Response& response, const mxlimit::Decision& d) {
//     char policy[mxlimit::kRateLimitPolicyValueMaxBytes];
//     char limit[mxlimit::kRateLimitValueMaxBytes];
//     const mxlimit::RateLimitHeaderLengths n =
//         mxlimit::FormatRateLimitHeaders(d, policy, limit);
//     if (n.policy == 0) return;
//     response.SetHeader(mxlimit::kRateLimitPolicyField,
//                        std::string_view(policy, n.policy));
//     response.SetHeader(mxlimit::kRateLimitField,
//                        std::string_view(limit, n.ratelimit));
//   }

#ifndef MXLIMIT_RATELIMIT_HEADERS_H_
#define MXLIMIT_RATELIMIT_HEADERS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "mxlimit/decision.h"
#include "mxlimit/matrix_response.h"
#include "mxlimit/policy.h"

namespace mxlimit {

// The header field names.
inline constexpr std::string_view kRateLimitPolicyField = "RateLimit-Policy";
inline constexpr std::string_view kRateLimitField = "RateLimit";

namespace ratelimit_headers_internal {

// A policy name as an sf-string: quoted, '"' and '\' escaped. Policy names
// never hold either (1 to 100 of [A-Za-z0-9._:-]); the escapes keep the
// output a valid field for any name a caller puts in a Decision.
inline constexpr size_t kMaxNameBytes = 2 + 2 * kMaxPolicyNameBytes;
// RFC 9651 Integers have at most 15 digits; larger values are written as
// the largest (no compiled rate comes near it: its numbers stay below 2^62
// nanoseconds, about 4.6e9 seconds).
inline constexpr int64_t kMaxSfInteger = 999'999'999'999'999;
inline constexpr size_t kMaxIntegerBytes = 15;
inline constexpr std::string_view kUnitBytes = R"(;qu="content-bytes")";
inline constexpr std::string_view kUnitConcurrent =
    R"(;qu="concurrent-requests")";

// Writes `name` as an sf-string at `p` (room for kMaxNameBytes); returns the
// end, or null when a byte is outside the printable ASCII an sf-string may
// hold or the name is longer than a policy name may be.
inline char* WriteSfString(std::string_view name, char* p) {
  if (name.size() > kMaxPolicyNameBytes) return nullptr;
  *p++ = '"';
  for (const char c : name) {
    if (c < 0x20 || c > 0x7E) return nullptr;
    if (c == '"' || c == '\\') *p++ = '\\';
    *p++ = c;
  }
  *p++ = '"';
  return p;
}

// Writes ";KEY=VALUE" at `p`, VALUE a decimal clamped to [0,
// kMaxSfInteger] (every parameter the draft defines is non-negative).
inline char* WriteParameter(std::string_view key, int64_t value, char* p,
                            char* last) {
  *p++ = ';';
  std::memcpy(p, key.data(), key.size());
  p += key.size();
  *p++ = '=';
  const int64_t v =
      value < 0 ? 0 : (value > kMaxSfInteger ? kMaxSfInteger : value);
  return p + matrix_response_internal::WriteDecimal(v, p, last);
}

// ceil(burst * interval) in seconds; 0 when either is 0. A compiled rate's
// burst * interval (its tolerance) is at most 2^61 ns, so the product fits;
// absurd values a caller wrote into a Decision saturate (WriteParameter
// clamps them anyway).
constexpr int64_t WindowSeconds(int64_t burst,
                                std::chrono::nanoseconds interval) {
  const int64_t t = interval.count();
  if (burst <= 0 || t <= 0) return 0;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (burst > kMax / t) return kMaxSfInteger;
  return RetryAfterSeconds(std::chrono::nanoseconds(burst * t));
}

}  // namespace ratelimit_headers_internal

// Largest `RateLimit-Policy` and `RateLimit` values FormatRateLimitHeaders
// writes: the quoted name, then two Integer parameters and a unit.
inline constexpr size_t kRateLimitPolicyValueMaxBytes =
    ratelimit_headers_internal::kMaxNameBytes +
    2 * (sizeof(";q=") - 1 + ratelimit_headers_internal::kMaxIntegerBytes) +
    ratelimit_headers_internal::kUnitConcurrent.size();
inline constexpr size_t kRateLimitValueMaxBytes =
    ratelimit_headers_internal::kMaxNameBytes +
    2 * (sizeof(";r=") - 1 + ratelimit_headers_internal::kMaxIntegerBytes);

// The lengths FormatRateLimitHeaders wrote. Either both are positive or both
// are 0 (send neither field).
struct RateLimitHeaderLengths {
  size_t policy = 0;     // of the `RateLimit-Policy` value
  size_t ratelimit = 0;  // of the `RateLimit` value
};

// Writes the `RateLimit-Policy` value into `policy_value` and the `RateLimit`
// value into `ratelimit_value` and returns their lengths. Writes nothing and
// returns zeros when the decision has no quota to report (no limited policy
// applied, exempt, or `never`; see the top of this file) and when a buffer is
// too short (`kRateLimitPolicyValueMaxBytes` and `kRateLimitValueMaxBytes`
// always suffice). Never allocates.
inline RateLimitHeaderLengths FormatRateLimitHeaders(
    const Decision& d, std::span<char> policy_value,
    std::span<char> ratelimit_value) {
  using namespace ratelimit_headers_internal;
  const DecisionQuota& quota = d.quota;
  if (d.exempt || d.never || quota.policy.empty() || quota.burst <= 0) {
    return {};
  }
  char name[kMaxNameBytes];
  const char* name_end = WriteSfString(quota.policy, name);
  if (name_end == nullptr) return {};
  const std::string_view quoted(name, static_cast<size_t>(name_end - name));

  char policy[kRateLimitPolicyValueMaxBytes];
  char* p = policy;
  char* const policy_last = policy + sizeof(policy);
  std::memcpy(p, quoted.data(), quoted.size());
  p += quoted.size();
  p = WriteParameter("q", quota.burst, p, policy_last);
  if (quota.unit == QuotaUnit::kContentBytes) {
    std::memcpy(p, kUnitBytes.data(), kUnitBytes.size());
    p += kUnitBytes.size();
  } else if (quota.unit == QuotaUnit::kConcurrentRequests) {
    std::memcpy(p, kUnitConcurrent.data(), kUnitConcurrent.size());
    p += kUnitConcurrent.size();
  }
  // The draft's `w` is a non-zero Integer: an in-flight quota has no
  // window, so it has no `w`.
  if (const int64_t w = WindowSeconds(quota.burst, quota.interval); w > 0) {
    p = WriteParameter("w", w, p, policy_last);
  }
  const size_t policy_size = static_cast<size_t>(p - policy);

  char limit[kRateLimitValueMaxBytes];
  char* q = limit;
  char* const limit_last = limit + sizeof(limit);
  std::memcpy(q, quoted.data(), quoted.size());
  q += quoted.size();
  const int64_t remaining = d.allowed && d.remaining > 0 ? d.remaining : 0;
  q = WriteParameter("r", remaining, q, limit_last);
  // On a denial, the very seconds Retry-After carries (RetryAfterSeconds is
  // WriteRetryAfterValue's rounding).
  q = WriteParameter("t",
                     RetryAfterSeconds(d.allowed ? quota.next : d.retry_after),
                     q, limit_last);
  const size_t limit_size = static_cast<size_t>(q - limit);

  if (policy_value.size() < policy_size ||
      ratelimit_value.size() < limit_size) {
    return {};
  }
  std::memcpy(policy_value.data(), policy, policy_size);
  std::memcpy(ratelimit_value.data(), limit, limit_size);
  return {policy_size, limit_size};
}

// The two values as strings, for callers that do not mind allocating; both
// empty when FormatRateLimitHeaders writes nothing.
struct RateLimitHeaderValues {
  std::string policy;     // `RateLimit-Policy`
  std::string ratelimit;  // `RateLimit`
};
inline RateLimitHeaderValues RateLimitHeaders(const Decision& d) {
  char policy[kRateLimitPolicyValueMaxBytes];
  char limit[kRateLimitValueMaxBytes];
  const RateLimitHeaderLengths n = FormatRateLimitHeaders(d, policy, limit);
  return {std::string(policy, n.policy), std::string(limit, n.ratelimit)};
}

}  // namespace mxlimit

#endif  // MXLIMIT_RATELIMIT_HEADERS_H_
