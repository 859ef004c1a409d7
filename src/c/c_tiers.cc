// The tier calls of the C ABI (include/mxlimit/c_tiers.h): set, clear and
// list the runtime tier assignments of the ShardedLimiter inside the handle.
// Cold paths: they allocate, and report failures with a message.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "mxlimit/c.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/tiers.h"
#include "mxlimit/time.h"
#include "src/c/c_handle.h"
#include "src/c/c_status.h"
#include "src/policy/tiers_json.h"

namespace mxlimit::c_api {
namespace {

// Clears the out-parameters first, so every failure leaves them NULL.
void ClearOutputs(char** out, char** errmsg) {
  if (out != nullptr) *out = nullptr;
  if (errmsg != nullptr) *errmsg = nullptr;
}

// `now` plus `ms` milliseconds, saturating at the clock's end (an expiry
// past it is never reached: "never" in effect).
MonotonicTime After(MonotonicTime now, int64_t ms) {
  constexpr int64_t kMaxMs = INT64_MAX / 1'000'000;
  const std::chrono::nanoseconds d(ms > kMaxMs ? INT64_MAX : ms * 1'000'000);
  return now + d;
}

}  // namespace
}  // namespace mxlimit::c_api

using mxlimit::c_api::Guarded;
using mxlimit::c_api::ReportInvalidArgument;
using mxlimit::c_api::ReportStatus;

extern "C" {

int mxlimit_set_tier(mxlimit_limiter* limiter, const char* subject,
                     size_t subject_len, const char* tier, size_t tier_len,
                     int64_t expires_in_ms, char** errmsg) noexcept {
  mxlimit::c_api::ClearOutputs(nullptr, errmsg);
  std::string_view subject_text;
  std::string_view tier_text;
  if (limiter == nullptr) {
    return ReportInvalidArgument(errmsg, "mxlimit_set_tier: limiter is NULL");
  }
  if (!mxlimit::c_api::ReadString(subject, subject_len, subject_text)) {
    return ReportInvalidArgument(
        errmsg, "mxlimit_set_tier: subject is NULL, subject_len is not 0");
  }
  if (!mxlimit::c_api::ReadString(tier, tier_len, tier_text)) {
    return ReportInvalidArgument(
        errmsg, "mxlimit_set_tier: tier is NULL, tier_len is not 0");
  }
  if (expires_in_ms < 0) {
    return ReportInvalidArgument(
        errmsg,
        "mxlimit_set_tier: expires_in_ms is negative (0 means no expiry)");
  }
  return Guarded(errmsg, [&] {
    // The steady clock: mxlimit_monotonic_now_ns's, which the bindings'
    // checks read too.
    const mxlimit::MonotonicTime now =
        mxlimit::MonotonicTime::FromSteadyClock();
    std::optional<mxlimit::MonotonicTime> expires;
    if (expires_in_ms > 0) {
      expires = mxlimit::c_api::After(now, expires_in_ms);
    }
    const absl::Status status =
        limiter->limiter->SetTier(subject_text, tier_text, expires, now);
    if (!status.ok()) return ReportStatus(status, errmsg);
    return static_cast<int>(MXLIMIT_OK);
  });
}

int mxlimit_clear_tier(mxlimit_limiter* limiter, const char* subject,
                       size_t subject_len, char** errmsg) noexcept {
  mxlimit::c_api::ClearOutputs(nullptr, errmsg);
  std::string_view subject_text;
  if (limiter == nullptr) {
    return ReportInvalidArgument(errmsg, "mxlimit_clear_tier: limiter is NULL");
  }
  if (!mxlimit::c_api::ReadString(subject, subject_len, subject_text)) {
    return ReportInvalidArgument(
        errmsg, "mxlimit_clear_tier: subject is NULL, subject_len is not 0");
  }
  return Guarded(errmsg, [&] {
    const absl::Status status = limiter->limiter->ClearTier(subject_text);
    if (!status.ok()) return ReportStatus(status, errmsg);
    return static_cast<int>(MXLIMIT_OK);
  });
}

int mxlimit_list_tiers(mxlimit_limiter* limiter, char** out_json,
                       char** errmsg) noexcept {
  mxlimit::c_api::ClearOutputs(out_json, errmsg);
  if (limiter == nullptr) {
    return ReportInvalidArgument(errmsg, "mxlimit_list_tiers: limiter is NULL");
  }
  if (out_json == nullptr) {
    return ReportInvalidArgument(errmsg,
                                 "mxlimit_list_tiers: out_json is NULL");
  }
  return Guarded(errmsg, [&] {
    const mxlimit::MonotonicTime now =
        mxlimit::MonotonicTime::FromSteadyClock();
    const std::string json = mxlimit::internal::TierAssignmentsJson(
        limiter->limiter->ListTiers(now), now);
    // malloc, not new: the caller frees it with mxlimit_free.
    char* copy = static_cast<char*>(std::malloc(json.size() + 1));
    if (copy == nullptr) {
      mxlimit::c_api::SetErrorMessage(errmsg, "mxlimit: out of memory");
      return static_cast<int>(MXLIMIT_ENOMEM);
    }
    std::memcpy(copy, json.c_str(), json.size() + 1);
    *out_json = copy;
    return static_cast<int>(MXLIMIT_OK);
  });
}

}  // extern "C"
