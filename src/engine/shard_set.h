// The shards behind `ShardedLimiter` and `SharedLimiter`'s mirror: N engines
// (a power of two), each behind its own lock, the router that says which
// shard owns a request's per-IP and per-user buckets, the one route
// normalizer they share, the policy names they hand out, and the lock order
// for a request whose two scopes live in two shards.
//
// `ShardedLimiter` runs the engine protocol (engine.h) over a set with no
// store; the library's `SharedLimiter` runs it with a store round trip
// between its steps (src/shared/shared_core.h). Both reach a shard's engine
// only under its lock (a `LockedPair` for a request's one or two shards, a
// `MutexLock` for one shard's charge, reload or stats), so clang's
// -Wthread-safety checks every access.
//
// Internal: not installed, not part of the public API.

#ifndef MXLIMIT_ENGINE_SHARD_SET_H_
#define MXLIMIT_ENGINE_SHARD_SET_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_map.h"
#include "absl/container/node_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxlimit/decision.h"
#include "mxlimit/internal/mutex.h"
#include "mxlimit/ip.h"
#include "mxlimit/options.h"
#include "mxlimit/request.h"
#include "mxlimit/route.h"
#include "mxlimit/stats.h"
#include "src/engine/engine.h"
#include "src/engine/prepared_request.h"
#include "src/engine/scope_tables.h"

namespace mxlimit::internal {

// One cache line (or more) per shard: a shard's lock is written by every
// check that takes it, and must not share a line with a neighbour's.
struct alignas(64) Shard {
  mutable Mutex mu;
  std::unique_ptr<Engine> engine ABSL_PT_GUARDED_BY(mu);
  // Policy names by PolicyId of the engine's current set, pointing into the
  // set's interned names, which never shrink: decisions handed out before a
  // reload keep valid views.
  std::vector<std::string_view> names ABSL_GUARDED_BY(mu);
  // The layer name of each policy, likewise interned.
  std::vector<std::string_view> layers ABSL_GUARDED_BY(mu);
  // The error each policy names (PolicySet::limit_error), likewise
  // interned; null for M_LIMIT_EXCEEDED.
  std::vector<const LimitError*> errors ABSL_GUARDED_BY(mu);
};

// The lock on a request's shards: the per-IP scope's and the per-user
// scope's, which may be one shard. Two different shards are locked lower
// index first, so two requests each holding one can never wait on each other
// in a cycle. The analysis knows both `ip.mu` and `user.mu` held for the
// scope's life, so the callers' reads of `ip.engine` and `user.engine` are
// checked.
class ABSL_SCOPED_LOCKABLE LockedPair {
 public:
  LockedPair(Shard& ip, Shard& user, bool ip_first)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(ip.mu, user.mu)
      : lock_(ip.mu, user.mu, ip_first) {}
  ~LockedPair() ABSL_UNLOCK_FUNCTION() {}
  LockedPair(const LockedPair&) = delete;
  LockedPair& operator=(const LockedPair&) = delete;

 private:
  MutexOneOrTwoLock lock_;
};

class ShardSet {
 public:
  // The shards that own a request's per-IP and per-user buckets (equal for
  // a request without a user, or when one shard owns both).
  struct Owners {
    size_t ip = 0;
    size_t user = 0;
    bool split() const { return ip != user; }
    // The lock order: lower index first.
    bool ip_first() const { return ip < user; }
  };

  // Validates what a set of `shards` needs of `config` (a power of two up
  // to `max_shards`, a share of every table for each shard), builds the
  // shards' engines over one normalizer and installs the policies.
  static absl::StatusOr<std::unique_ptr<ShardSet>> Create(
      const LimiterConfig& config, size_t shards, size_t max_shards);

  ShardSet(const ShardSet&) = delete;
  ShardSet& operator=(const ShardSet&) = delete;
  ~ShardSet();

  size_t size() const { return shard_count_; }
  Shard& shard(size_t index) const { return shards_[index]; }
  const TableOptions& table_options() const { return tables_; }
  const RouteNormalizer& normalizer() const { return *normalizer_; }

  // The router. `IpShard` hashes the client address masked to the shard
  // prefix, so every address sharing a bucket shares a shard; `UserShard`
  // hashes the user's bucket key under random keys drawn at construction,
  // so users cannot aim at one shard.
  size_t IpShard(const IpAddress& client) const;
  size_t UserShard(std::string_view user_id) const;
  // The shard that owns a user-keyed bucket (a snapshot's), whatever its
  // policy and route.
  size_t ShardOfUserKey(UserBucketKey key) const {
    key.Rekey(0, 0);
    return UserShardOf(key);
  }
  Owners OwnersOf(const Request& request) const {
    const size_t ip = IpShard(request.client);
    return {ip, request.user_id.empty() ? ip : UserShard(request.user_id)};
  }

  // Everything about `request` that needs no lock, derived once: the
  // shards that own its scopes, its route and query-free path (the
  // normalizer is shared and read-only), and its user's bucket key, which
  // both routes it and keys its buckets in every shard's engine.
  Owners Prepare(const Request& request, PreparedRequest& prepared) const;

  // `ShardedLimiter::Charge`: each scope under its own shard's lock; with
  // `completion`, `ShardedLimiter::Settle`.
  void Charge(const Request& request, MonotonicTime now,
              const Completion* completion = nullptr);
  // `ShardedLimiter::Release`: under the shared scope tables' lock alone.
  void Release(const Leases& leases, MonotonicTime now) {
    ReleaseLeases(*scope_tables_, {leases.begin(), leases.end()}, now);
  }

  // Validates and compiles `config` once and installs it in every shard, or
  // changes nothing (see `ShardedLimiter::Reload`).
  absl::Status Reload(const LimiterConfig& config);
  // The shards' counters summed (see `ShardedLimiter::Stats`).
  LimiterStats Stats() const;
  // Who is in which tier (ShardedLimiter::SetTier and friends); locks
  // itself.
  TierDirectory& tier_directory() const { return *tier_directory_; }

  // Points `d.policy`, `d.layer` and their shadow counterparts at the
  // stable copies of the names. `ip` and `user` are the shards that decided
  // each scope (the same shard when one holds both).
  static void PinNames(const Shard& ip, const Shard& user, Decision& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ip.mu, user.mu);

 private:
  ShardSet(const TableOptions& tables, const ClientPrefix& shard_prefix,
           size_t shard_count);

  // Interns the names (or, with `layers`, the layer names) of `policies`;
  // returns them by PolicyId.
  std::vector<std::string_view> InternNames(const PolicySet& policies,
                                            bool layers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // Interns the errors of `policies`; returns them by PolicyId.
  std::vector<const LimitError*> InternErrors(const PolicySet& policies)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);

  const TableOptions tables_;
  // Per-IP buckets are spread over shards by the client address masked to
  // this prefix: the coarsest any ip-scope policy keys by (the built-in
  // network layer's /24 and /48, or a coarser `client_prefix` of the config
  // the set was created with). A reload that needs a coarser one is refused.
  // The user key secret, as the engines need it.
  SipKey user_key_secret() const {
    return SipKey{user_shard_secret_[0], user_shard_secret_[1]};
  }
  // The shard of a user key built with policy and route 0.
  size_t UserShardOf(const UserBucketKey& key) const;

  const ClientPrefix shard_prefix_;
  const AddressMasker client_mask_;
  const size_t shard_count_;
  // UserShard's random keys: the seed of the hash over a user's bucket key
  // words, and the secret that digests IDs too long to store inline.
  std::array<uint64_t, 6> user_shard_seed_;
  std::array<uint64_t, 2> user_shard_secret_;
  // Fixed at construction: `shards_[i]` never moves, only its contents
  // change under its own lock.
  const std::unique_ptr<Shard[]> shards_;
  // The route normalizer all shards share.
  std::shared_ptr<const RouteNormalizer> normalizer_;
  // The origin, room and target tables all shards share.
  std::shared_ptr<ScopeTables> scope_tables_;
  // Who is in which tier, for every shard (its own lock).
  std::shared_ptr<TierDirectory> tier_directory_;

  // Serializes Reload and Stats, so Stats sums counters of one policy set.
  // Lock order: reload_mu_ before any shard's mu.
  mutable Mutex reload_mu_;
  absl::node_hash_set<std::string> names_ ABSL_GUARDED_BY(reload_mu_);
  // Errors by their text, viewing names_: never shrinks, as names_.
  absl::node_hash_map<std::string, LimitError> errors_
      ABSL_GUARDED_BY(reload_mu_);
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_SHARD_SET_H_
