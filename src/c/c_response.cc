// The pieces of the Matrix 429 answer, written into the caller's buffer with
// the snprintf contract (length always reported, written only when it fits,
// NUL-terminated) but never truncated: half a header value is worse than
// none.

#include <chrono>
#include <cstring>
#include <span>
#include <string_view>

#include "mxlimit/c.h"
#include "mxlimit/decision.h"
#include "mxlimit/limit_error.h"
#include "mxlimit/matrix_response.h"
#include "mxlimit/policy.h"
#include "mxlimit/ratelimit_headers.h"
#include "src/c/c_handle.h"

namespace mxlimit::c_api {
namespace {

static_assert(MXLIMIT_BODY_MAX == kLimitExceededBodyMaxBytes + 1);
static_assert(MXLIMIT_LIMIT_BODY_MAX == kLimitBodyMaxBytes + 1);
static_assert(kLimitBodyMaxBytes ==
              LimitBodyMaxBytes(kMaxErrcodeBytes, kMaxInfoUriBytes));
static_assert(MXLIMIT_RETRY_AFTER_MAX == kRetryAfterValueMaxBytes + 1);
static_assert(MXLIMIT_RATELIMIT_POLICY_MAX ==
              kRateLimitPolicyValueMaxBytes + 1);
static_assert(MXLIMIT_RATELIMIT_MAX == kRateLimitValueMaxBytes + 1);

// Writes `n` bytes of `piece` and a NUL into the caller's buffer if they fit.
int Deliver(const char* piece, size_t n, char* buf, size_t cap, size_t* len) {
  if (len != nullptr) *len = n;
  if (cap < n + 1) return MXLIMIT_ERANGE;
  std::memcpy(buf, piece, n);
  buf[n] = '\0';
  return MXLIMIT_OK;
}

bool ArgumentsOk(const mxlimit_decision* decision, const char* buf,
                 size_t cap) {
  return decision != nullptr && decision->struct_size >= kFirstDecisionSize &&
         (buf != nullptr || cap == 0);
}

// A (pointer, length) string of a decision as WriteLimitBody may put it in a
// JSON string: at most `max` bytes, none a quote, backslash or control byte
// (what the policy loader accepts, and so what the library hands out; a
// caller may have written anything into its struct).
bool ReadBodyString(const char* data, size_t len, size_t max,
                    std::string_view& out) {
  if (data == nullptr) {
    out = std::string_view();
    return len == 0;
  }
  if (len > max) return false;
  out = std::string_view(data, len);
  for (const char c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F || c == '"' || c == '\\') return false;
  }
  return true;
}

// The Matrix error of a fourth-version decision; false for one the body
// cannot carry. An earlier caller's decision has none: M_LIMIT_EXCEEDED.
bool ReadLimitError(const mxlimit_decision& d, LimitError& error) {
  if (d.struct_size < kFourthDecisionSize) return true;
  if (d.can_upgrade > MXLIMIT_CAN_UPGRADE_YES) return false;
  error.can_upgrade = static_cast<LimitError::Upgrade>(d.can_upgrade);
  return ReadBodyString(d.errcode, d.errcode_len, kMaxErrcodeBytes,
                        error.errcode) &&
         ReadBodyString(d.info_uri, d.info_uri_len, kMaxInfoUriBytes,
                        error.info_uri);
}

// What FormatRateLimitHeaders reads of a decision, from the caller's struct.
Decision ReadQuota(const mxlimit_decision& c) {
  Decision d;
  d.allowed = c.allowed != 0;
  d.never = c.never != 0;
  d.exempt = c.exempt != 0;
  d.retry_after = std::chrono::nanoseconds(c.retry_after_ns);
  d.remaining = c.remaining;
  d.quota.policy = std::string_view(
      c.quota_policy != nullptr ? c.quota_policy : "", c.quota_policy_len);
  d.quota.unit = c.quota_unit == MXLIMIT_QUOTA_CONTENT_BYTES
                     ? QuotaUnit::kContentBytes
                 : c.quota_unit == MXLIMIT_QUOTA_CONCURRENT_REQUESTS
                     ? QuotaUnit::kConcurrentRequests
                     : QuotaUnit::kRequests;
  d.quota.burst = c.quota_burst;
  d.quota.interval = std::chrono::nanoseconds(c.quota_interval_ns);
  d.quota.next = std::chrono::nanoseconds(c.quota_next_ns);
  return d;
}

}  // namespace
}  // namespace mxlimit::c_api

extern "C" {

int mxlimit_format_retry_after(const mxlimit_decision* decision, char* buf,
                               size_t cap, size_t* len) noexcept {
  if (!mxlimit::c_api::ArgumentsOk(decision, buf, cap)) return MXLIMIT_EINVAL;
  char piece[mxlimit::kRetryAfterValueMaxBytes];
  const size_t n = mxlimit::WriteRetryAfterValue(
      std::chrono::nanoseconds(decision->retry_after_ns), decision->never != 0,
      piece);
  return mxlimit::c_api::Deliver(piece, n, buf, cap, len);
}

int mxlimit_format_body(const mxlimit_decision* decision, char* buf, size_t cap,
                        size_t* len) noexcept {
  if (!mxlimit::c_api::ArgumentsOk(decision, buf, cap)) return MXLIMIT_EINVAL;
  mxlimit::LimitError error;
  if (!mxlimit::c_api::ReadLimitError(*decision, error)) return MXLIMIT_EINVAL;
  char piece[mxlimit::kLimitBodyMaxBytes];
  const size_t n = mxlimit::WriteLimitBody(
      error, std::chrono::nanoseconds(decision->retry_after_ns),
      decision->never != 0, piece);
  return mxlimit::c_api::Deliver(piece, n, buf, cap, len);
}

int mxlimit_format_ratelimit_headers(const mxlimit_decision* decision,
                                     char* policy_buf, size_t policy_cap,
                                     size_t* policy_len, char* ratelimit_buf,
                                     size_t ratelimit_cap,
                                     size_t* ratelimit_len) noexcept {
  if (decision == nullptr ||
      decision->struct_size < mxlimit::c_api::kFourthDecisionSize ||
      (policy_buf == nullptr && policy_cap != 0) ||
      (ratelimit_buf == nullptr && ratelimit_cap != 0) ||
      (decision->quota_policy == nullptr && decision->quota_policy_len != 0)) {
    return MXLIMIT_EINVAL;
  }
  char policy[mxlimit::kRateLimitPolicyValueMaxBytes];
  char limit[mxlimit::kRateLimitValueMaxBytes];
  const mxlimit::RateLimitHeaderLengths n = mxlimit::FormatRateLimitHeaders(
      mxlimit::c_api::ReadQuota(*decision), policy, limit);
  if (policy_len != nullptr) *policy_len = n.policy;
  if (ratelimit_len != nullptr) *ratelimit_len = n.ratelimit;
  // Both or neither: half of the pair would describe nothing.
  if (policy_cap < n.policy + 1 || ratelimit_cap < n.ratelimit + 1) {
    return MXLIMIT_ERANGE;
  }
  mxlimit::c_api::Deliver(policy, n.policy, policy_buf, policy_cap, nullptr);
  mxlimit::c_api::Deliver(limit, n.ratelimit, ratelimit_buf, ratelimit_cap,
                          nullptr);
  return MXLIMIT_OK;
}

}  // extern "C"
