// The engine's side of a shared store (src/shared/shared_core.cc): what
// syncing with the store and reloading a SharedLimiter do to the buckets.
// Apart from engine.cc so that none of it joins Check's flattened call tree.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mxlimit/internal/mutex.h"
#include "src/engine/engine.h"
#include "src/policy/idle_checks.h"

namespace mxlimit::internal {

void Engine::EraseSharedBuckets() {
  std::vector<bool> shared(size_t{1} << 16, false);
  for (size_t id = 0; id < policies_->size(); ++id) {
    const Policy& p = policies_->policy(static_cast<PolicyId>(id));
    if (p.sharing != Sharing::kLocal) shared[bucket_token_[id]] = true;
  }
  ip_table_.EraseIf([&](const internal::IpBucketKey& k, const GcraState&) {
    return shared[k.policy];
  });
  auto erase = [&](const internal::UserBucketKey& k, const GcraState&) {
    return shared[k.policy()];
  };
  user_table_.EraseIf(erase);
  MutexLock lock(scope_tables_->mu);
  for (Scope scope : {Scope::kOrigin, Scope::kRoom, Scope::kTarget}) {
    scope_tables_->of(scope).EraseIf(erase);
  }
}

void Engine::AddLead(const BucketCheck& c, int64_t extra_ns,
                     MonotonicTime now) {
  if (!c.has_bucket || extra_ns <= 0) return;
  GcraState* bucket = c.scope == Scope::kIp
                          ? ip_table_.Find({&c.key.ip, c.hash})
                          : NamedTable(c.scope).Find({&c.key.user, c.hash});
  if (bucket == nullptr) return;
  const Rate& rate = c.spec->rate;
  const int64_t at = internal::ClampNow(now);
  const int64_t lead = internal::GcraLead(rate, *bucket, at);
  bucket->tat = at + std::min(lead + extra_ns, rate.tolerance_ns());
  if (IdlesWhileRoomy(*c.spec)) NoteIdleTat(bucket->tat);
}

int64_t Engine::UnclampedLead(const BucketCheck& c, MonotonicTime now) const {
  const GcraState* state = LocatedState(c);
  const int64_t at = internal::ClampNow(now);
  if (state == nullptr || state->tat <= at) return 0;
  const uint64_t lead =
      static_cast<uint64_t>(state->tat) - static_cast<uint64_t>(at);
  // The store caps a synced lead; `RaiseLead` installs no more than it says.
  return static_cast<int64_t>(lead);
}

void Engine::RaiseLead(Scope scope, const BucketCheck::Key& key, int64_t lead,
                       MonotonicTime now) {
  const int64_t tat = internal::ClampNow(now) + lead;
  if (scope == Scope::kIp || scope == Scope::kUser) {
    GcraState* bucket = scope == Scope::kIp ? ip_table_.FindOrAdmit(key.ip)
                                            : user_table_.FindOrAdmit(key.user);
    if (bucket->tat < tat) bucket->tat = tat;
    const uint16_t token =
        scope == Scope::kIp ? key.ip.policy : key.user.policy();
    if (IdleToken(token)) NoteIdleTat(bucket->tat);
    return;
  }
  MutexLock lock(scope_tables_->mu);
  GcraState* bucket = scope_tables_->of(scope).FindOrAdmit(key.user);
  if (bucket->tat < tat) bucket->tat = tat;
}

}  // namespace mxlimit::internal
