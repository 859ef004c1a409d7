// The per-request calls: check, peek, charge, settle, and the two helpers a
// caller needs to make their arguments (an address, a time). The hot path:
// nothing here allocates, and the work beyond ShardedLimiter's is a few
// compares and one copy of the decision.

#include <cstring>
#include <string_view>

#include "absl/status/statusor.h"
#include "mxlimit/c.h"
#include "mxlimit/decision.h"
#include "mxlimit/ip.h"
#include "mxlimit/limit_error.h"
#include "mxlimit/matrix_response.h"
#include "mxlimit/request.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/time.h"
#include "src/c/c_handle.h"
#include "src/c/c_status.h"

namespace mxlimit::c_api {
namespace {

constexpr uint32_t kKnownFlags =
    MXLIMIT_EXEMPT | MXLIMIT_MAY_DELAY | MXLIMIT_ORIGIN_VERIFIED;

// What the `_subjects` and `_ex` calls add to the flat arguments: the
// subjects, both empty for the other calls, and the request options, read
// by ReadOptions (NULL: the defaults).
struct Subjects {
  const char* origin = nullptr;
  size_t origin_len = 0;
  const char* target_user = nullptr;
  size_t target_user_len = 0;
  const mxlimit_request_options* options = nullptr;
};

// `options` into `request`; false for a struct smaller than the first
// version or with fields this version does not know set (as
// mxlimit_options: a caller asking for more than we can do is told so).
bool ReadOptions(const mxlimit_request_options* options, Request& request) {
  request.request_bytes = -1;
  if (options == nullptr) return true;
  const uint32_t size = options->struct_size;
  if (size < kFirstRequestOptionsSize) return false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(options);
  for (size_t i = sizeof(mxlimit_request_options); i < size; ++i) {
    if (bytes[i] != 0) return false;
  }
  request.request_bytes = options->request_bytes;
  return true;
}

// The flat arguments as a Request; false for any that is not allowed.
bool ReadRequest(const char* method, size_t method_len, const char* target,
                 size_t target_len, const uint8_t* client, const char* user_id,
                 size_t user_id_len, const Subjects& subjects, int64_t cost,
                 uint32_t flags, Request& request) {
  if (client == nullptr || (flags & ~kKnownFlags) != 0) return false;
  if (!ReadString(method, method_len, request.method) ||
      !ReadString(target, target_len, request.target) ||
      !ReadString(user_id, user_id_len, request.user_id) ||
      !ReadString(subjects.origin, subjects.origin_len, request.origin) ||
      !ReadString(subjects.target_user, subjects.target_user_len,
                  request.target_user) ||
      !ReadOptions(subjects.options, request)) {
    return false;
  }
  std::memcpy(request.client.bytes.data(), client, request.client.bytes.size());
  request.exempt = (flags & MXLIMIT_EXEMPT) != 0;
  request.may_delay = (flags & MXLIMIT_MAY_DELAY) != 0;
  request.origin_verified = (flags & MXLIMIT_ORIGIN_VERIFIED) != 0;
  request.cost = cost;
  return true;
}

// Never NULL, even when empty, so a caller may hand the pointer to anything
// that takes (pointer, length) without a special case (Rust's slices may not
// be built from NULL).
const char* NonNull(std::string_view s) {
  return s.data() != nullptr ? s.data() : "";
}

// A decision struct the caller owns, at least as large as the first version.
bool DecisionOk(const mxlimit_decision* out) {
  return out != nullptr && out->struct_size >= kFirstDecisionSize;
}

// Copies `d` into the caller's struct, as much of it as the caller's
// `struct_size` holds; bytes beyond what this version knows are zeroed, so a
// caller built against a later header reads its new fields as zero.
void WriteDecision(const Decision& d, mxlimit_decision* out) {
  mxlimit_decision c = MXLIMIT_DECISION_INIT;
  c.allowed = d.allowed ? 1 : 0;
  c.never = d.never ? 1 : 0;
  c.exempt = d.exempt ? 1 : 0;
  c.shadow_denied = d.shadow_denied ? 1 : 0;
  c.limited_by = static_cast<uint8_t>(d.limited_by);
  c.retry_after_ns = d.retry_after.count();
  c.remaining = d.remaining;
  c.policy = NonNull(d.policy);
  c.policy_len = d.policy.size();
  c.route_key = NonNull(d.route_key);
  c.route_key_len = d.route_key.size();
  c.shadow_policy = NonNull(d.shadow_policy);
  c.shadow_policy_len = d.shadow_policy.size();
  c.delay_ns = d.delay.count();
  static_assert(MXLIMIT_MAX_LEASES == kMaxLeases);
  c.lease_count = d.leases.count;
  for (size_t i = 0; i < d.leases.count; ++i) c.leases[i] = d.leases.ids[i];
  // The fourth version's fields.
  std::string_view errcode;
  std::string_view info_uri;
  LimitError::Upgrade upgrade = LimitError::Upgrade::kUnset;
  if (!d.allowed) {
    errcode = kLimitExceededErrcode;
    if (d.error != nullptr) {
      if (!d.error->errcode.empty()) errcode = d.error->errcode;
      info_uri = d.error->info_uri;
      upgrade = d.error->can_upgrade;
    }
  }
  c.errcode = NonNull(errcode);
  c.errcode_len = errcode.size();
  c.info_uri = NonNull(info_uri);
  c.info_uri_len = info_uri.size();
  c.can_upgrade = static_cast<uint8_t>(upgrade);
  c.quota_policy = NonNull(d.quota.policy);
  c.quota_policy_len = d.quota.policy.size();
  c.quota_unit = static_cast<uint8_t>(d.quota.unit);
  c.quota_burst = d.quota.burst;
  c.quota_interval_ns = d.quota.interval.count();
  c.quota_next_ns = d.quota.next.count();
  c.settles = d.settles ? 1 : 0;
  // The fifth's.
  c.tier = NonNull(d.tier);
  c.tier_len = d.tier.size();
  const uint32_t size = out->struct_size;
  if (size == sizeof(mxlimit_decision)) {
    *out = c;
    return;
  }
  if (size < sizeof(mxlimit_decision)) {
    std::memcpy(static_cast<void*>(out), &c, size);
  } else {
    std::memcpy(static_cast<void*>(out), &c, sizeof(c));
    std::memset(reinterpret_cast<char*>(out) + sizeof(c), 0, size - sizeof(c));
  }
  out->struct_size = size;
}

static_assert(static_cast<uint8_t>(LimitScope::kNone) == MXLIMIT_SCOPE_NONE);
static_assert(static_cast<uint8_t>(LimitScope::kIp) == MXLIMIT_SCOPE_IP);
static_assert(static_cast<uint8_t>(LimitScope::kUser) == MXLIMIT_SCOPE_USER);
static_assert(static_cast<uint8_t>(LimitScope::kOrigin) ==
              MXLIMIT_SCOPE_ORIGIN);
static_assert(static_cast<uint8_t>(LimitScope::kRoom) == MXLIMIT_SCOPE_ROOM);
static_assert(static_cast<uint8_t>(LimitScope::kTarget) ==
              MXLIMIT_SCOPE_TARGET);
static_assert(kUnlimitedRemaining == MXLIMIT_UNLIMITED_REMAINING);
static_assert(static_cast<uint8_t>(QuotaUnit::kRequests) ==
              MXLIMIT_QUOTA_REQUESTS);
static_assert(static_cast<uint8_t>(QuotaUnit::kContentBytes) ==
              MXLIMIT_QUOTA_CONTENT_BYTES);
static_assert(static_cast<uint8_t>(QuotaUnit::kConcurrentRequests) ==
              MXLIMIT_QUOTA_CONCURRENT_REQUESTS);
static_assert(static_cast<uint8_t>(LimitError::Upgrade::kUnset) ==
              MXLIMIT_CAN_UPGRADE_UNSET);
static_assert(static_cast<uint8_t>(LimitError::Upgrade::kNo) ==
              MXLIMIT_CAN_UPGRADE_NO);
static_assert(static_cast<uint8_t>(LimitError::Upgrade::kYes) ==
              MXLIMIT_CAN_UPGRADE_YES);

// mxlimit_check's decision for a caller whose struct is `struct_size` bytes.
// A caller built before leases existed cannot see them, so it could never
// give them back: its leases are released at once (in-flight limits do not
// hold its requests back; their own leases would only run out).
Decision CheckFor(mxlimit_limiter& limiter, const Request& request,
                  int64_t now_ns, uint32_t struct_size) {
  const MonotonicTime now = MonotonicTime::FromNanoseconds(now_ns);
  Decision d = limiter.limiter->Check(request, now);
  if (d.leases.count > 0 && struct_size < kThirdDecisionSize) {
    limiter.limiter->Release(d.leases, now);
    d.leases = Leases{};
  }
  return d;
}

// mxlimit_check and mxlimit_peek: validates the flat arguments, then fills
// `out` with what `decide` answers for the request they describe.
template <typename Decider>
int Decide(const mxlimit_limiter* limiter, const char* method,
           size_t method_len, const char* target, size_t target_len,
           const uint8_t client[16], const char* user_id, size_t user_id_len,
           const Subjects& subjects, int64_t cost, uint32_t flags,
           mxlimit_decision* out, const Decider& decide) {
  Request request;
  if (limiter == nullptr || cost < 0 || !DecisionOk(out) ||
      !ReadRequest(method, method_len, target, target_len, client, user_id,
                   user_id_len, subjects, cost, flags, request)) {
    return MXLIMIT_EINVAL;
  }
  return Guarded(nullptr, [&] {
    WriteDecision(decide(request), out);
    return static_cast<int>(MXLIMIT_OK);
  });
}

int Charge(mxlimit_limiter* limiter, const char* method, size_t method_len,
           const char* target, size_t target_len, const uint8_t client[16],
           const char* user_id, size_t user_id_len, const Subjects& subjects,
           int64_t cost, uint32_t flags, int64_t now_ns) {
  Request request;
  if (limiter == nullptr ||
      !ReadRequest(method, method_len, target, target_len, client, user_id,
                   user_id_len, subjects, cost, flags, request)) {
    return MXLIMIT_EINVAL;
  }
  return Guarded(nullptr, [&] {
    limiter->limiter->Charge(request, MonotonicTime::FromNanoseconds(now_ns));
    return static_cast<int>(MXLIMIT_OK);
  });
}

int Settle(mxlimit_limiter* limiter, const char* method, size_t method_len,
           const char* target, size_t target_len, const uint8_t client[16],
           const char* user_id, size_t user_id_len, const Subjects& subjects,
           int64_t cost, uint32_t flags, const Completion& completion,
           int64_t now_ns) {
  Request request;
  if (limiter == nullptr ||
      !ReadRequest(method, method_len, target, target_len, client, user_id,
                   user_id_len, subjects, cost, flags, request)) {
    return MXLIMIT_EINVAL;
  }
  return Guarded(nullptr, [&] {
    limiter->limiter->Settle(request, completion,
                             MonotonicTime::FromNanoseconds(now_ns));
    return static_cast<int>(MXLIMIT_OK);
  });
}

}  // namespace
}  // namespace mxlimit::c_api

using mxlimit::c_api::Guarded;

extern "C" {

int mxlimit_check(mxlimit_limiter* limiter, const char* method,
                  size_t method_len, const char* target, size_t target_len,
                  const uint8_t client[16], const char* user_id,
                  size_t user_id_len, int64_t cost, uint32_t flags,
                  int64_t now_ns, mxlimit_decision* out) noexcept {
  return mxlimit::c_api::Decide(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {}, cost, flags, out, [&](const mxlimit::Request& request) {
        return mxlimit::c_api::CheckFor(*limiter, request, now_ns,
                                        out->struct_size);
      });
}

int mxlimit_check_subjects(mxlimit_limiter* limiter, const char* method,
                           size_t method_len, const char* target,
                           size_t target_len, const uint8_t client[16],
                           const char* user_id, size_t user_id_len,
                           const char* origin, size_t origin_len,
                           const char* target_user, size_t target_user_len,
                           int64_t cost, uint32_t flags, int64_t now_ns,
                           mxlimit_decision* out) noexcept {
  return mxlimit::c_api::Decide(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {origin, origin_len, target_user, target_user_len}, cost,
      flags, out, [&](const mxlimit::Request& request) {
        return mxlimit::c_api::CheckFor(*limiter, request, now_ns,
                                        out->struct_size);
      });
}

int mxlimit_peek_subjects(const mxlimit_limiter* limiter, const char* method,
                          size_t method_len, const char* target,
                          size_t target_len, const uint8_t client[16],
                          const char* user_id, size_t user_id_len,
                          const char* origin, size_t origin_len,
                          const char* target_user, size_t target_user_len,
                          int64_t cost, uint32_t flags, int64_t now_ns,
                          mxlimit_decision* out) noexcept {
  return mxlimit::c_api::Decide(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {origin, origin_len, target_user, target_user_len}, cost,
      flags, out, [&](const mxlimit::Request& request) {
        return limiter->limiter->Peek(
            request, mxlimit::MonotonicTime::FromNanoseconds(now_ns));
      });
}

int mxlimit_charge_subjects(mxlimit_limiter* limiter, const char* method,
                            size_t method_len, const char* target,
                            size_t target_len, const uint8_t client[16],
                            const char* user_id, size_t user_id_len,
                            const char* origin, size_t origin_len,
                            const char* target_user, size_t target_user_len,
                            int64_t cost, uint32_t flags,
                            int64_t now_ns) noexcept {
  return mxlimit::c_api::Charge(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {origin, origin_len, target_user, target_user_len}, cost,
      flags, now_ns);
}

int mxlimit_peek(const mxlimit_limiter* limiter, const char* method,
                 size_t method_len, const char* target, size_t target_len,
                 const uint8_t client[16], const char* user_id,
                 size_t user_id_len, int64_t cost, uint32_t flags,
                 int64_t now_ns, mxlimit_decision* out) noexcept {
  return mxlimit::c_api::Decide(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {}, cost, flags, out, [&](const mxlimit::Request& request) {
        return limiter->limiter->Peek(
            request, mxlimit::MonotonicTime::FromNanoseconds(now_ns));
      });
}

int mxlimit_charge(mxlimit_limiter* limiter, const char* method,
                   size_t method_len, const char* target, size_t target_len,
                   const uint8_t client[16], const char* user_id,
                   size_t user_id_len, int64_t cost, uint32_t flags,
                   int64_t now_ns) noexcept {
  return mxlimit::c_api::Charge(limiter, method, method_len, target, target_len,
                                client, user_id, user_id_len, {}, cost, flags,
                                now_ns);
}

int mxlimit_check_ex(mxlimit_limiter* limiter, const char* method,
                     size_t method_len, const char* target, size_t target_len,
                     const uint8_t client[16], const char* user_id,
                     size_t user_id_len, const char* origin, size_t origin_len,
                     const char* target_user, size_t target_user_len,
                     int64_t cost, uint32_t flags,
                     const mxlimit_request_options* options, int64_t now_ns,
                     mxlimit_decision* out) noexcept {
  return mxlimit::c_api::Decide(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {origin, origin_len, target_user, target_user_len, options},
      cost, flags, out, [&](const mxlimit::Request& request) {
        return mxlimit::c_api::CheckFor(*limiter, request, now_ns,
                                        out->struct_size);
      });
}

int mxlimit_peek_ex(const mxlimit_limiter* limiter, const char* method,
                    size_t method_len, const char* target, size_t target_len,
                    const uint8_t client[16], const char* user_id,
                    size_t user_id_len, const char* origin, size_t origin_len,
                    const char* target_user, size_t target_user_len,
                    int64_t cost, uint32_t flags,
                    const mxlimit_request_options* options, int64_t now_ns,
                    mxlimit_decision* out) noexcept {
  return mxlimit::c_api::Decide(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {origin, origin_len, target_user, target_user_len, options},
      cost, flags, out, [&](const mxlimit::Request& request) {
        return limiter->limiter->Peek(
            request, mxlimit::MonotonicTime::FromNanoseconds(now_ns));
      });
}

int mxlimit_charge_ex(mxlimit_limiter* limiter, const char* method,
                      size_t method_len, const char* target, size_t target_len,
                      const uint8_t client[16], const char* user_id,
                      size_t user_id_len, const char* origin, size_t origin_len,
                      const char* target_user, size_t target_user_len,
                      int64_t cost, uint32_t flags,
                      const mxlimit_request_options* options,
                      int64_t now_ns) noexcept {
  return mxlimit::c_api::Charge(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {origin, origin_len, target_user, target_user_len, options},
      cost, flags, now_ns);
}

int mxlimit_settle(mxlimit_limiter* limiter, const char* method,
                   size_t method_len, const char* target, size_t target_len,
                   const uint8_t client[16], const char* user_id,
                   size_t user_id_len, const char* origin, size_t origin_len,
                   const char* target_user, size_t target_user_len,
                   int64_t cost, uint32_t flags,
                   const mxlimit_request_options* options, int status,
                   int64_t body_bytes, int64_t now_ns) noexcept {
  return mxlimit::c_api::Settle(
      limiter, method, method_len, target, target_len, client, user_id,
      user_id_len, {origin, origin_len, target_user, target_user_len, options},
      cost, flags, mxlimit::Completion{status, body_bytes}, now_ns);
}

int mxlimit_parse_ip(const char* text, size_t len, uint8_t out[16]) noexcept {
  std::string_view view;
  if (out == nullptr || !mxlimit::c_api::ReadString(text, len, view)) {
    return MXLIMIT_EINVAL;
  }
  return Guarded(nullptr, [&] {
    // Allocates only to build the error, which we drop.
    absl::StatusOr<mxlimit::IpAddress> ip = mxlimit::ParseIpAddress(view);
    if (!ip.ok()) return static_cast<int>(MXLIMIT_EINVAL);
    std::memcpy(out, ip->bytes.data(), ip->bytes.size());
    return static_cast<int>(MXLIMIT_OK);
  });
}

int64_t mxlimit_monotonic_now_ns(void) noexcept {
  return mxlimit::MonotonicTime::FromSteadyClock().nanoseconds();
}

}  // extern "C"

extern "C" int mxlimit_release(mxlimit_limiter* limiter, const uint64_t* leases,
                               size_t count, int64_t now_ns) noexcept {
  if (limiter == nullptr || (leases == nullptr && count != 0) ||
      count > MXLIMIT_MAX_LEASES) {
    return MXLIMIT_EINVAL;
  }
  mxlimit::Leases held;
  held.count = static_cast<uint8_t>(count);
  for (size_t i = 0; i < count; ++i) held.ids[i] = leases[i];
  return Guarded(nullptr, [&] {
    limiter->limiter->Release(held,
                              mxlimit::MonotonicTime::FromNanoseconds(now_ns));
    return static_cast<int>(MXLIMIT_OK);
  });
}
