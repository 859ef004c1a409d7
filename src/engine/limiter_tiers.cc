// Limiter's and ShardedLimiter's tier assignments (tiers.h): both forward
// to the TierDirectory their engines read, which a ShardedLimiter's locks.

#include <optional>
#include <string_view>
#include <vector>

#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "src/engine/engine.h"
#include "src/engine/shard_set.h"
#include "src/engine/tier_directory.h"

namespace mxlimit {
namespace {

absl::Status Set(internal::TierDirectory& d, std::string_view subject,
                 std::string_view tier, std::optional<MonotonicTime> expires,
                 MonotonicTime now) {
  absl::StatusOr<TierSubject> s = ParseTierSubject(subject);
  if (!s.ok()) return s.status();
  return d.Set(*s, tier, expires, now);
}

absl::Status Clear(internal::TierDirectory& d, std::string_view subject) {
  absl::StatusOr<TierSubject> s = ParseTierSubject(subject);
  if (!s.ok()) return s.status();
  return d.Clear(*s);
}

}  // namespace

absl::Status Limiter::SetTier(std::string_view subject, std::string_view tier,
                              std::optional<MonotonicTime> expires,
                              MonotonicTime now) {
  return Set(engine_->tier_directory(), subject, tier, expires, now);
}

absl::Status Limiter::ClearTier(std::string_view subject) {
  return Clear(engine_->tier_directory(), subject);
}

std::vector<TierAssignment> Limiter::ListTiers(MonotonicTime now) const {
  return engine_->tier_directory().List(now);
}

std::optional<TierAssignment> Limiter::TierFor(const Request& request,
                                               MonotonicTime now) const {
  return engine_->DescribeTier(request, now);
}

absl::Status ShardedLimiter::SetTier(std::string_view subject,
                                     std::string_view tier,
                                     std::optional<MonotonicTime> expires,
                                     MonotonicTime now) {
  return Set(set_->tier_directory(), subject, tier, expires, now);
}

absl::Status ShardedLimiter::ClearTier(std::string_view subject) {
  return Clear(set_->tier_directory(), subject);
}

std::vector<TierAssignment> ShardedLimiter::ListTiers(MonotonicTime now) const {
  return set_->tier_directory().List(now);
}

std::optional<TierAssignment> ShardedLimiter::TierFor(const Request& request,
                                                      MonotonicTime now) const {
  return set_->tier_directory().Describe(request.user_id, request.client, now);
}

}  // namespace mxlimit
