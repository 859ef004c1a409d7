#include "mxlimit/sharded_limiter.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "src/engine/engine.h"
#include "src/engine/shard_set.h"

namespace mxlimit {

using internal::Engine;
using internal::LockedPair;
using internal::Shard;
using internal::ShardSet;

size_t ShardedLimiter::DefaultShardCount(const TableOptions& tables) {
  const size_t smallest = std::min(tables.ip_capacity, tables.user_capacity);
  const size_t fit =
      std::bit_floor(std::max<size_t>(smallest / kMinDefaultShardBuckets, 1));
  return std::min(fit, kMaxShards);
}

ShardedLimiter::ShardedLimiter(std::unique_ptr<ShardSet> set)
    : set_(std::move(set)) {}

ShardedLimiter::~ShardedLimiter() = default;

absl::StatusOr<std::unique_ptr<ShardedLimiter>> ShardedLimiter::Create(
    const LimiterConfig& config, size_t shards) {
  if (shards == 0) shards = DefaultShardCount(config.tables);
  absl::StatusOr<std::unique_ptr<ShardSet>> set =
      ShardSet::Create(config, shards, kMaxShards);
  if (!set.ok()) return set.status();
  return std::unique_ptr<ShardedLimiter>(new ShardedLimiter(*std::move(set)));
}

size_t ShardedLimiter::shard_count() const { return set_->size(); }

const TableOptions& ShardedLimiter::table_options() const {
  return set_->table_options();
}

size_t ShardedLimiter::IpShard(const IpAddress& client) const {
  return set_->IpShard(client);
}

size_t ShardedLimiter::UserShard(std::string_view user_id) const {
  return set_->UserShard(user_id);
}

Decision ShardedLimiter::Check(const Request& request, MonotonicTime now) {
  // Prepared before any lock is taken: every nanosecond under a shard's
  // lock is one another thread may spend waiting for it.
  internal::PreparedRequest p;
  const ShardSet::Owners o = set_->Prepare(request, p);
  Shard& a = set_->shard(o.ip);
  Shard& b = set_->shard(o.user);
  LockedPair lock(a, b, o.ip_first());
  if (!o.split()) {
    Decision d = a.engine->Check(request, now, &p);
    ShardSet::PinNames(a, a, d);
    return d;
  }
  Decision d = Engine::CheckPair(*a.engine, *b.engine, request, now, p);
  if (!d.exempt) ShardSet::PinNames(a, b, d);
  return d;
}

Decision ShardedLimiter::Peek(const Request& request, MonotonicTime now) const {
  internal::PreparedRequest p;
  const ShardSet::Owners o = set_->Prepare(request, p);
  Shard& a = set_->shard(o.ip);
  Shard& b = set_->shard(o.user);
  LockedPair lock(a, b, o.ip_first());
  if (!o.split()) {
    Decision d = a.engine->Peek(request, now);
    ShardSet::PinNames(a, a, d);
    return d;
  }
  Engine::Evaluation ip_part;
  a.engine->Inspect(request, now, Engine::kIpScope, ip_part, &p);
  if (ip_part.exempt) {
    return Engine::ExemptDecision(ip_part.route, ip_part.tier_name);
  }
  Engine::Evaluation user_part;
  user_part.request_lock = &ip_part.scope_lock;
  b.engine->Inspect(request, now, Engine::kUserScope, user_part, &p);
  Decision d = a.engine->Combine(ip_part, user_part);
  Engine::TryDelay(*a.engine, *b.engine, request, now, ip_part, user_part, d);
  ShardSet::PinNames(a, b, d);
  return d;
}

void ShardedLimiter::Charge(const Request& request, MonotonicTime now) {
  set_->Charge(request, now);
}

void ShardedLimiter::Settle(const Request& request,
                            const Completion& completion, MonotonicTime now) {
  set_->Charge(request, now, &completion);
}

void ShardedLimiter::Release(const Leases& leases, MonotonicTime now) {
  set_->Release(leases, now);
}

absl::Status ShardedLimiter::Reload(const LimiterConfig& config) {
  return set_->Reload(config);
}

LimiterStats ShardedLimiter::Stats() const { return set_->Stats(); }

}  // namespace mxlimit
