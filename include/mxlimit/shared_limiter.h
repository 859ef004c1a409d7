// -----------------------------------------------------------------------------
// File: shared_limiter.h
// -----------------------------------------------------------------------------
//
// `mxlimit::SharedLimiter` is a `ShardedLimiter` whose buckets are shared by
// every process that points at the same store (Redis): N Synapse workers, or
// several mxlimitd sidecars, then enforce one budget per client instead of N.
// Link `mxlimit::redis`; docs/shared-state.md is the operator's guide.
//
// Each policy says how its buckets are shared (`Policy::sharing`):
//
//   * `exact` (the default): the store decides. One script call per check
//     carries every shared bucket of the request, all layers and both
//     scopes, and charges them all or none, with the GCRA of rate.h in
//     integer nanoseconds. Decisions are those one `Limiter` would make for
//     all processes together.
//   * `approximate`: this process decides from its own tables, and the
//     charges it allowed are sent to the store in batches every
//     `store.sync_interval`; the store's answer (which may carry debt) is
//     installed locally. Over-admits by at most (N-1) * (burst + S/T + 1)
//     per sync window S, repaid later. For high-volume catch-all caps only.
//   * `local`: this process only, as `ShardedLimiter`.
//
// The mirror. The in-process tables hold every shared bucket this process
// has seen, as the store last reported it: a lower bound of the shared
// state. When the mirror already proves that an enforcing bucket denies,
// the request is denied without asking the store ("local denial"; its
// retry_after is then a lower bound, see the NOTE below). Blocked and
// unlimited policies and `cost > burst` never reach the store either.
//
// Failures. Each check waits at most `store.timeout` for the store; after
// that, and while a circuit breaker is open after repeated failures, the
// mirror decides alone, with each shared rate scaled by
// `store.fallback_share`. Nothing is ever surfaced as an error and no
// check waits longer than the timeout.
//
// Without a store (`store.url` empty) a SharedLimiter is exactly a
// ShardedLimiter.
//
// NOTE: a local denial reports the mirror's retry_after, which may be
// shorter than the store's (another process charged since): the client
// retries early and is told again. `store.local_denial: false` asks the
// store on every such check instead.
//
// Thread safety: every method may be called from any number of threads.
//
// Example:
//   // `config` as mxlimit::LoadConfigFile (config.h) read it; its store
//   // section names the Redis and the key secret every process shares.
//   absl::StatusOr<std::unique_ptr<mxlimit::SharedLimiter>> Start(
//       mxlimit::LimiterConfig config) {
//     config.store.url = "redis://127.0.0.1:6379/0";
//     return mxlimit::SharedLimiter::Create(config);
//   }

#ifndef MXLIMIT_SHARED_LIMITER_H_
#define MXLIMIT_SHARED_LIMITER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxlimit/decision.h"
#include "mxlimit/options.h"
#include "mxlimit/request.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/stats.h"
#include "mxlimit/tiers.h"
#include "mxlimit/time.h"

namespace mxlimit {

namespace internal {
class Store;
class SharedCore;
}  // namespace internal

// What the store side of a SharedLimiter has done. Counters are monotonic.
struct SharedStoreStats {
  // Checks the store decided.
  uint64_t store_decisions = 0;
  // Checks denied from the mirror without asking the store.
  uint64_t local_denials = 0;
  // Checks the mirror decided because the store did not answer in time,
  // answered with an error, was unreachable, or the breaker was open.
  uint64_t fallback_timeout = 0;
  uint64_t fallback_error = 0;
  uint64_t fallback_unavailable = 0;
  uint64_t fallback_breaker_open = 0;
  // Answers that came after their check had fallen back.
  uint64_t late_replies = 0;
  // Charges given back to the store (a charged check that was denied after
  // all, or a late answer to a check that fell back).
  uint64_t refunds = 0;
  // Approximate mode: batches sent, and charges dropped because the
  // pending table was full.
  uint64_t sync_batches = 0;
  uint64_t sync_dropped = 0;
  // Times the mirror's shared buckets were dropped because the store lost
  // its state (restart, failover).
  uint64_t mirror_resets = 0;
  uint64_t script_reloads = 0;
  uint64_t reconnects = 0;
  // Gauges.
  bool connected = false;
  bool breaker_open = false;
  uint64_t in_flight = 0;
};

// The store families in the Prometheus text format, to append to
// `FormatPrometheus` of the limiter's stats.
std::string FormatStorePrometheus(const SharedStoreStats& stats);

class SharedLimiter {
 public:
  // Builds the mirror as `ShardedLimiter::Create(config, shards)` does and
  // connects to `config.store` (without waiting: a store that is down at
  // start only means fallback decisions until it is up). Errors: those of
  // ShardedLimiter::Create, ValidateStoreOptions, and a malformed
  // `store.url`.
  static absl::StatusOr<std::unique_ptr<SharedLimiter>> Create(
      const LimiterConfig& config, size_t shards = 0);

  // The same over a given store (tests and harnesses use an in-process
  // one). `store` may be null: then every policy is local.
  static absl::StatusOr<std::unique_ptr<SharedLimiter>> CreateWithStore(
      const LimiterConfig& config, std::unique_ptr<internal::Store> store,
      size_t shards = 0);

  SharedLimiter(const SharedLimiter&) = delete;
  SharedLimiter& operator=(const SharedLimiter&) = delete;
  ~SharedLimiter();

  // SharedLimiter::Check()
  //
  // `ShardedLimiter::Check`, with shared buckets decided by the store. With
  // `store.clock: store` (the default) `now` is only used for the mirror;
  // with `caller`, it is also the store's time.
  Decision Check(const Request& request, MonotonicTime now);

  // What Check would answer, charging and admitting nothing (the store is
  // asked, when reachable, for shared buckets).
  Decision Peek(const Request& request, MonotonicTime now) const;

  // `ShardedLimiter::Charge`: charges (or, negative, refunds) every bucket,
  // shared ones in the store too.
  void Charge(const Request& request, MonotonicTime now);

  // `Limiter::Settle`. Policies charged on the response, and byte costs,
  // are kept in process (docs/shared-state.md): the store is not asked.
  void Settle(const Request& request, const Completion& completion,
              MonotonicTime now);

  // `Limiter::Release`. Leases are this process's: in-flight limits are
  // kept in process, never in the store.
  void Release(const Leases& leases, MonotonicTime now);

  // `ShardedLimiter::Reload`. The `store` section cannot change without a
  // restart (FailedPrecondition; nothing changes): see CheckStoreReload.
  absl::Status Reload(const LimiterConfig& config);

  // `Limiter::SetTier`, `ClearTier`, `ListTiers` and `TierFor`. The
  // assignments are this process's (kept beside the mirror), not the
  // store's.
  absl::Status SetTier(std::string_view subject, std::string_view tier,
                       std::optional<MonotonicTime> expires,
                       MonotonicTime now) {
    return mirror_->SetTier(subject, tier, expires, now);
  }
  absl::Status ClearTier(std::string_view subject) {
    return mirror_->ClearTier(subject);
  }
  std::vector<TierAssignment> ListTiers(MonotonicTime now) const {
    return mirror_->ListTiers(now);
  }
  std::optional<TierAssignment> TierFor(const Request& request,
                                        MonotonicTime now) const {
    return mirror_->TierFor(request, now);
  }
  // `Limiter::Snapshot` and `Limiter::Restore` of this process's buckets
  // (buckets kept in the store stay there).
  absl::Status Snapshot(std::ostream& out, MonotonicTime now,
                        WallTime wall) const {
    return mirror_->Snapshot(out, now, wall);
  }
  absl::StatusOr<RestoreStats> Restore(std::istream& in, MonotonicTime now,
                                       WallTime wall) {
    return mirror_->Restore(in, now, wall);
  }
  // `Limiter::ResetBuckets` on this process's buckets. Buckets kept in the
  // store (policies shared `exact` or `approximate`) are not reset there:
  // they refill by their rate.
  absl::StatusOr<size_t> ResetBuckets(std::string_view subject) {
    return mirror_->ResetBuckets(subject);
  }

  LimiterStats Stats() const;
  SharedStoreStats StoreStats() const;

  // For `mxlimit explain`: one line per bucket of `request`, "local" or
  // its store key, e.g. "exact mxl:1:u:3q2-7wAAAAAAAAAAAAAAAA".
  std::vector<std::string> DescribeStoreKeys(const Request& request) const;

  // Sends the charges approximate-sharing policies allowed since the last
  // sync now, at `now` (on the caller's clock). Syncs happen on their own
  // every `store.sync_interval`; tests and harnesses call this to control
  // when.
  void SyncNow(MonotonicTime now);

  // The lines `DescribeStoreKeys` gives on a SharedLimiter created from
  // `config`, without connecting to (or needing) the store: a key depends
  // only on the policies and `store.key_secret`. Errors: those of Create,
  // but for the store's own (the URL is not parsed). With no `store.url`
  // every bucket is local and the list is empty.
  static absl::StatusOr<std::vector<std::string>> DescribeStoreKeys(
      const LimiterConfig& config, const Request& request);

  // Checks what Create checks of `config.store` and of the policies'
  // sharing (ValidateStoreOptions; exact sharing needs a tolerance the
  // store computes exactly), without building anything or connecting. For
  // `mxlimit check-config`. OK when `store.url` is empty.
  static absl::Status ValidateSharing(const LimiterConfig& config);

  // The rule Reload applies to the `store` section, for a process whose
  // store section is `*running` (null: it started without a store): OK when
  // nothing a reload would have to change is different. Without a store,
  // `next` may have none either (its other store fields are then unused);
  // with one, every field must be equal: connections, the key secret and the
  // fallback are fixed at start-up. FailedPrecondition otherwise, naming
  // every changed field (a URL with its password redacted, the key secret
  // never). `mxlimit check-config --reload-against` applies the same rule.
  static absl::Status CheckStoreReload(const StoreOptions* running,
                                       const StoreOptions& next);

  // Whether buckets are shared at all (a store is configured).
  bool has_store() const;
  const ShardedLimiter& mirror() const { return *mirror_; }

 private:
  SharedLimiter(std::unique_ptr<ShardedLimiter> mirror,
                std::unique_ptr<internal::SharedCore> core);

  std::unique_ptr<ShardedLimiter> mirror_;
  std::unique_ptr<internal::SharedCore> core_;
};

}  // namespace mxlimit

#endif  // MXLIMIT_SHARED_LIMITER_H_
