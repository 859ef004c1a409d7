// -----------------------------------------------------------------------------
// File: sharded_limiter.h
// -----------------------------------------------------------------------------
//
// `mxlimit::ShardedLimiter` is the thread-safe limiter: N independent
// `Limiter` engines ("shards", N a power of two), each behind its own mutex,
// so requests of different clients on different threads rarely wait for each
// other.
//
// Routing. A request's per-IP buckets (one per layer that applies) live in
// the shard chosen by a hash of the client address masked to the shard
// prefix (the coarsest any per-IP bucket uses: /24 and /48 with the built-in
// network layer), its per-user buckets in the shard chosen by a hash of the
// user ID. So every request of one client network, and every request of
// one user, meets the same table, whatever address or user it comes with: no
// client gets a fresh budget by landing on another shard.
//
// When a request's two scopes live in different shards, both shards are
// locked, lower index first (so two such requests can never wait on each
// other in a cycle), each shard evaluates its own scope, and the buckets are
// charged only if every policy of both scopes allows: the all-or-nothing rule
// of `Limiter`. Decisions are those one `Limiter` with the same config would
// make, as long as no table evicts (each shard evicts from its own share,
// below).
//
// Memory. The configured table capacities are split evenly among the shards
// (the first capacity % N shards hold one bucket more), so the shards
// together hold exactly what the config says. A shard evicts its own least
// recently used bucket when it is full. A capacity below the shard count is
// refused: a shard needs at least one bucket of each table.
//
// Thread safety: every method may be called from any number of threads.
// Nothing on the `Check` path allocates or reads a clock (unless the
// convenience overload is used).
//
// Example:
//   void SendTooManyRequests(const mxlimit::Decision& d);  // the embedder's
//
//   absl::StatusOr<std::unique_ptr<mxlimit::ShardedLimiter>> Start(
//       const mxlimit::LimiterConfig& config) {
//     // Shards: the default count for config.tables.
//     return mxlimit::ShardedLimiter::Create(config);
//   }
//
//   // On any request thread, with no lock of the embedder's.
//   void OnRequest(mxlimit::ShardedLimiter& limiter,
//                  const mxlimit::Request& request,
//                  mxlimit::MonotonicTime now) {
//     mxlimit::Decision d = limiter.Check(request, now);
//     if (!d.allowed) SendTooManyRequests(d);
//   }

#ifndef MXLIMIT_SHARDED_LIMITER_H_
#define MXLIMIT_SHARDED_LIMITER_H_

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxlimit/decision.h"
#include "mxlimit/ip.h"
#include "mxlimit/limiter.h"
#include "mxlimit/options.h"
#include "mxlimit/request.h"
#include "mxlimit/snapshot.h"
#include "mxlimit/stats.h"
#include "mxlimit/tiers.h"
#include "mxlimit/time.h"

namespace mxlimit {

namespace internal {
class ShardSet;  // src/engine/shard_set.h
}  // namespace internal

class SharedLimiter;

class ShardedLimiter {
 public:
  // Most shards accepted. More shards than threads costs a little memory per
  // shard (and spreads a table's least-recently-used order over more
  // lists), and makes two threads meet on one lock less often.
  static constexpr size_t kMaxShards = 256;
  // The default count never leaves a shard fewer buckets than this in
  // either table.
  static constexpr size_t kMinDefaultShardBuckets = 64;

  // The shard count `Create` picks for 0: `kMaxShards`, halved while a
  // shard would hold fewer than `kMinDefaultShardBuckets` buckets of either
  // of `tables`' capacities (at least 1). Many shards whatever the core
  // count: a check holds its shards' locks for all of its work, and two
  // threads on a few shards wait for each other on most checks
  // (bench/sharded_limiter_bench, docs/embedding.md).
  static size_t DefaultShardCount(const TableOptions& tables);
  // The count for the default table capacities.
  static size_t DefaultShardCount() { return DefaultShardCount({}); }

  // Compiles `config` once and builds `shards` engines (0: the default
  // count for `config.tables`). Errors: those of `Limiter::Create`, and
  // InvalidArgument for a shard count that is not a power of two from 1 to
  // `kMaxShards` or a table capacity below the shard count.
  static absl::StatusOr<std::unique_ptr<ShardedLimiter>> Create(
      const LimiterConfig& config, size_t shards = 0);

  // Neither copyable nor movable: threads hold on to the shards' mutexes.
  ShardedLimiter(const ShardedLimiter&) = delete;
  ShardedLimiter& operator=(const ShardedLimiter&) = delete;
  ShardedLimiter(ShardedLimiter&&) = delete;
  ShardedLimiter& operator=(ShardedLimiter&&) = delete;
  ~ShardedLimiter();

  // ShardedLimiter::Check()
  //
  // `Limiter::Check`, on the shard(s) that own the request's buckets.
  //
  // NOTE: unlike a lone `Limiter`'s, the string views in the returned
  // `Decision` (policy names, route key) stay valid for the life of the
  // ShardedLimiter, across reloads: another thread may reload at any time.
  Decision Check(const Request& request, MonotonicTime now);
  // Reads std::chrono::steady_clock.
  Decision Check(const Request& request) {
    return Check(request, MonotonicTime::FromSteadyClock());
  }

  // ShardedLimiter::Peek()
  //
  // What `Check` would answer, without charging, admitting or counting.
  Decision Peek(const Request& request, MonotonicTime now) const;

  // ShardedLimiter::Charge()
  //
  // `Limiter::Charge`: charges (or, with a negative cost, refunds) both
  // scopes' buckets without checking. The two scopes are charged one after
  // the other, each under its own shard's lock.
  void Charge(const Request& request, MonotonicTime now);

  // ShardedLimiter::Settle()
  //
  // `Limiter::Settle`, each scope under its own shard's lock.
  void Settle(const Request& request, const Completion& completion,
              MonotonicTime now);

  // ShardedLimiter::Release()
  //
  // `Limiter::Release`. The shards share one lease table, behind one lock.
  void Release(const Leases& leases, MonotonicTime now);

  // ShardedLimiter::Reload()
  //
  // Validates and compiles `config` once; if that fails (or the `tables`
  // section changed, or a `client_prefix` is coarser than the shard prefix
  // fixed at creation), returns the error and changes nothing anywhere.
  // Otherwise installs the new policies in every shard, each under its lock.
  // Unchanged policies keep their buckets, as with `Limiter::Reload`. A
  // request checked while a reload is under way is judged by the old or the
  // new policies per scope; concurrent reloads are applied one at a time.
  absl::Status Reload(const LimiterConfig& config);

  // --- Tiers (tiers.h): assignments made while running. -------------------
  //
  // `Limiter::SetTier`, `ClearTier`, `ListTiers` and `TierFor`, for every
  // shard at once: the assignments sit behind one read-write lock, which a
  // check takes (shared) only while some assignment exists.
  absl::Status SetTier(std::string_view subject, std::string_view tier,
                       std::optional<MonotonicTime> expires, MonotonicTime now);
  absl::Status SetTier(std::string_view subject, std::string_view tier,
                       std::optional<MonotonicTime> expires = std::nullopt) {
    return SetTier(subject, tier, expires, MonotonicTime::FromSteadyClock());
  }
  absl::Status ClearTier(std::string_view subject);
  std::vector<TierAssignment> ListTiers(MonotonicTime now) const;
  std::optional<TierAssignment> TierFor(const Request& request,
                                        MonotonicTime now) const;
  // `Limiter::Snapshot` and `Limiter::Restore`, over every shard (each
  // under its own lock, one at a time: checks go on meanwhile).
  absl::Status Snapshot(std::ostream& out, MonotonicTime now,
                        WallTime wall) const;
  absl::Status Snapshot(std::ostream& out) const {
    return Snapshot(out, MonotonicTime::FromSteadyClock(),
                    std::chrono::system_clock::now());
  }
  absl::StatusOr<RestoreStats> Restore(std::istream& in, MonotonicTime now,
                                       WallTime wall);
  absl::StatusOr<RestoreStats> Restore(std::istream& in) {
    return Restore(in, MonotonicTime::FromSteadyClock(),
                   std::chrono::system_clock::now());
  }
  // `Limiter::ResetBuckets`, over every shard (each under its own lock).
  absl::StatusOr<size_t> ResetBuckets(std::string_view subject);

  // ShardedLimiter::Stats()
  //
  // The shards' counters summed: table sizes, capacities, admissions,
  // evictions and hits; per-policy counters; exempt requests. Shards are read
  // one after the other, so under traffic the sum is not one instant's
  // snapshot, but no request is counted twice or lost.
  LimiterStats Stats() const;

  size_t shard_count() const;
  // The table options as configured (whole-limiter capacities).
  const TableOptions& table_options() const;

  // The shard that owns the per-IP buckets of `client`, and the one that owns
  // the per-user buckets of `user_id`. For diagnostics and tests.
  size_t IpShard(const IpAddress& client) const;
  size_t UserShard(std::string_view user_id) const;

 private:
  // A SharedLimiter's mirror is a ShardedLimiter whose shards its store
  // protocol (src/shared/shared_core.h) drives too.
  friend class SharedLimiter;

  explicit ShardedLimiter(std::unique_ptr<internal::ShardSet> set);

  const std::unique_ptr<internal::ShardSet> set_;
};

}  // namespace mxlimit

#endif  // MXLIMIT_SHARDED_LIMITER_H_
