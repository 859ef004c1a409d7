// The bucket tables of the subject scopes beyond address and user (origin,
// room, target), the leases of in-flight limits (every scope's), and what
// finds a request's room. A Limiter's engine owns
// one; a ShardedLimiter's shards share one, so that a room's or an origin's
// bucket is one bucket whichever shard a request's address and user land
// in.
//
// Shared means locked: `mu` guards the tables. An engine takes it when it
// adds a request's first check of these scopes and keeps it, through the
// evaluation's `ScopeTablesLock`, until the request is settled: charges stay
// all-or-nothing across every scope. It is always the last lock a request
// takes (after its shards'), so no lock order cycle can form; requests
// without such a policy (or an in-flight one) never take it.
//
// Internal: not installed, not part of the public API.

#ifndef MXLIMIT_ENGINE_SCOPE_TABLES_H_
#define MXLIMIT_ENGINE_SCOPE_TABLES_H_

#include <span>

#include "absl/base/thread_annotations.h"
#include "mxlimit/decision.h"
#include "mxlimit/internal/mutex.h"
#include "mxlimit/options.h"
#include "mxlimit/policy.h"
#include "mxlimit/rate.h"
#include "mxlimit/route.h"
#include "mxlimit/time.h"
#include "src/engine/bucket_keys.h"
#include "src/engine/bucket_table.h"
#include "src/engine/lease_table.h"
#include "src/engine/room_locator.h"

namespace mxlimit::internal {

struct ScopeTables {
  using Table = BucketTable<UserBucketKey, BucketKeyHash>;

  // `shared`: several engines use the tables (a ShardedLimiter's shards),
  // so `mu` guards them; a lone Limiter's engine, single-threaded by
  // contract, takes no lock.
  ScopeTables(const TableOptions& tables, const RouteNormalizer& normalizer,
              bool shared)
      : shared(shared),
        origin(tables.origin_capacity),
        room(tables.room_capacity),
        target(tables.target_capacity),
        leases(tables.lease_capacity),
        rooms(normalizer) {}

  // REQUIRES: `scope` is kOrigin, kRoom or kTarget; `mu` held.
  Table& of(Scope scope) {
    return scope == Scope::kOrigin ? origin
           : scope == Scope::kRoom ? room
                                   : target;
  }
  const Table& of(Scope scope) const {
    return scope == Scope::kOrigin ? origin
           : scope == Scope::kRoom ? room
                                   : target;
  }

  const bool shared;
  Mutex mu;
  // Guarded by `mu` when `shared`; not annotated, because the engine takes `mu`
  // for an evaluation's lifetime (ScopeTablesLock), which the analysis cannot
  // follow.
  Table origin;
  Table room;
  Table target;
  LeaseTable leases;
  const RoomLocator rooms;
};

// Holds `ScopeTables::mu` from `Hold` until destroyed. Part of an engine's
// Evaluation, so the lock lives exactly as long as the checks that read and
// settle the tables. Holding twice is a no-op.
class ScopeTablesLock {
 public:
  ScopeTablesLock() = default;
  ScopeTablesLock(const ScopeTablesLock&) = delete;
  ScopeTablesLock& operator=(const ScopeTablesLock&) = delete;
  // A conditional lock held across calls: beyond the analysis.
  ~ScopeTablesLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (mu_ != nullptr) mu_->Unlock();
  }
  void Hold(ScopeTables& tables) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (mu_ != nullptr || !tables.shared) return;
    tables.mu.Lock();
    mu_ = &tables.mu;
  }

 private:
  Mutex* mu_ = nullptr;
};

// Ends the leases `ids` (those already ended are skipped) and every lease
// due at `now`, under the tables' lock when shared.
inline void ReleaseLeases(ScopeTables& tables, std::span<const LeaseId> ids,
                          MonotonicTime now) {
  if (ids.empty()) return;
  ScopeTablesLock lock;
  lock.Hold(tables);
  for (const LeaseId id : ids) tables.leases.Release(id);
  tables.leases.Expire(ClampNow(now));
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_SCOPE_TABLES_H_
