// The early loads of large tables (Engine::StartEarlyLoads): which
// aggregate buckets a check loads before it matches the route, and their
// keys. Apart from engine.cc so that none of it joins Check's flattened call
// tree: Check makes one call, and only past kEarlyLoadEntries buckets.

#include <cstddef>

#include "mxlimit/policy.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/route.h"
#include "src/engine/engine.h"

namespace mxlimit::internal {

Engine::EarlyLoads Engine::FindEarlyLoads(const PolicySet& policies) {
  EarlyLoads early;
  for (size_t i = 0; i < policies.size(); ++i) {
    const auto id = static_cast<PolicyId>(i);
    const Policy& p = policies.policy(id);
    // A bucket every request of the scope checks, whatever its route and
    // method (conditions on the query would make it some requests' only).
    const bool every_request =
        p.share_threshold && p.match.size() == 1 && p.match[0] == "*" &&
        p.methods.empty() && p.rate.kind() == Rate::Kind::kLimited &&
        !p.concurrency.has_value() && p.query_absent.empty() &&
        p.query_present.empty();
    if (!every_request) continue;
    if (p.scope == Scope::kIp && early.ip == kNoPolicy) early.ip = id;
    if (p.scope == Scope::kUser && early.user == kNoPolicy) early.user = id;
  }
  return early;
}

Engine::EarlyKeys Engine::EarlyLoadKeys(const Request& request) const {
  EarlyKeys k;
  if (early_.ip != kNoPolicy) {
    k.ip = internal::IpBucketKey::Make(
        ip_masks_[early_.ip].Apply(request.client), bucket_token_[early_.ip],
        kSharedBucketRoute);
    k.ip_hash = ip_table_.Hashed(k.ip).hash;
    k.has_ip = true;
  }
  // An anonymous request has no user buckets (AddChecks skips the scope).
  if (early_.user != kNoPolicy && !request.user_id.empty()) {
    k.user.Assign(request.user_id, bucket_token_[early_.user],
                  kSharedBucketRoute, user_key_secret_);
    k.user_hash = user_table_.Hashed(k.user).hash;
    k.has_user = true;
  }
  return k;
}

void Engine::StartEarlyLoads(const Request& request) const {
  const EarlyKeys k = EarlyLoadKeys(request);
  if (k.has_ip) ip_table_.Prefetch({&k.ip, k.ip_hash});
  if (k.has_user) user_table_.Prefetch({&k.user, k.user_hash});
}

}  // namespace mxlimit::internal
