// What `SharedLimiter` does with a store: the engine protocol of engine.h
// run over its mirror's shards (shard_set.h), with a store round trip
// between resolving a request and settling it, no shard lock held across it.
//
//   1. Under the shards' locks: evaluate the request on the mirror. A
//      request with no exact-shared bucket, or one the mirror already
//      proves denied, is settled there and then.
//   2. No lock: one store op carries every shared bucket; wait for it until
//      the deadline.
//   3. Under the locks again: evaluate afresh, take each shared bucket's
//      verdict from the lead the store reported, combine, settle (the
//      mirror now holds what the store holds).
//
// A failed or late store call, or an open breaker, makes step 3 a local
// decision instead (the fallback).
//
// Approximate sharing: such buckets are decided in step 1 from the mirror,
// whose lead may exceed tau (debt the store reported), and each charge they
// allow is queued per shard. Every `sync_interval` one batch of kSync ops
// sends the queued charges, summed per bucket, and raises each mirror
// bucket to the lead the store answers, never pulling it back: a thread of
// its own with the store's clock; the checking thread itself, at the
// caller's time, with the caller's clock (deterministic replays).
//
// The check path is in shared_core.cc, the sync and the mirror's reset in
// shared_core_sync.cc. Internal: not installed.

#ifndef MXLIMIT_SHARED_SHARED_CORE_H_
#define MXLIMIT_SHARED_SHARED_CORE_H_

#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "mxlimit/decision.h"
#include "mxlimit/options.h"
#include "mxlimit/request.h"
#include "mxlimit/shared_limiter.h"
#include "src/engine/engine.h"
#include "src/engine/shard_set.h"
#include "src/shared/breaker.h"
#include "src/shared/store.h"
#include "src/shared/store_keys.h"

namespace mxlimit::internal {

class SharedCore final : public LateReplyHandler {
 public:
  // `shards` (the mirror's) outlives the core.
  SharedCore(ShardSet& shards, std::unique_ptr<Store> store,
             const StoreOptions& options);
  ~SharedCore() override;

  Decision Check(const Request& request, MonotonicTime now);
  Decision Peek(const Request& request, MonotonicTime now) const;
  void Charge(const Request& request, MonotonicTime now);
  SharedStoreStats Stats() const;
  std::vector<std::string> DescribeStoreKeys(const Request& request) const;
  const StoreOptions& options() const { return options_; }

  void OnLateReply(const StoreOp& op, const StoreResult& result) override;

  // Sends the queued approximate charges now (tests; the caller's clock).
  void SyncNow(MonotonicTime now);
  // Forgets queued approximate charges (a reload may reuse their buckets).
  void DropPending();

 private:
  using Owners = ShardSet::Owners;
  using Evaluation = Engine::Evaluation;
  using BucketCheck = Engine::BucketCheck;

  // One request's evaluation over its one or two shards.
  struct Pass {
    Evaluation ip_part;
    Evaluation user_part;
    // Two shards: per-IP checks in ip_part, per-user ones in user_part.
    // One shard: every check in ip_part.
    bool split = false;
    const Evaluation& user() const { return split ? user_part : ip_part; }
  };
  // Where each bucket of a store op came from: (in user_part, index).
  struct OpSource {
    bool user_part = false;
    uint8_t index = 0;
  };
  // What denied a request that the mirror admits late (Engine::TryDelay):
  // the decision names it once the store has confirmed the admission.
  struct Late {
    LimitScope limited_by = LimitScope::kNone;
    std::string_view policy;
    std::string_view layer;
    PolicyId denied_policy = kNoPolicy;
  };
  struct Plan {
    // op.at_ns > 0: the request is admitted that late if the store agrees.
    StoreOp op;
    std::array<OpSource, kMaxStoreBuckets> from;
    const PolicySet* ip_policies = nullptr;
    const PolicySet* user_policies = nullptr;
    Late late;
  };
  enum class Fallback : uint8_t { kTimeout, kError, kUnavailable, kBreaker };
  // One approximate charge waiting for the next sync.
  struct PendingCharge {
    StoreKey key;
    int64_t delta_ns = 0;
    int64_t interval_ns = 0;
    int64_t burst = 0;
    uint32_t shard = 0;
    Scope scope = Scope::kIp;
    BucketCheck::Key engine_key;
  };
  // Guarded by the shard's mutex (the checks that fill it hold it anyway).
  struct PendingShard {
    std::vector<PendingCharge> charges;
  };

  // Step 1: evaluates `request` (`inspect`: without admitting or counting)
  // and lists its exact-shared buckets in `plan`.
  // `a` and `b` are the request's per-IP and per-user shards, locked by
  // the caller (a LockedPair), here and below.
  // `prepared` is the request as ShardSet::Prepare gave it; each pass
  // resolves its policies afresh (a reload may come between passes).
  void Evaluate(Shard& a, Shard& b, const Request& request,
                PreparedRequest& prepared, MonotonicTime now, bool inspect,
                Pass& pass) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(a.mu, b.mu);
  void PlanOp(const Shard& a, const Shard& b, const Request& request,
              const Pass& pass, StoreOpKind kind, MonotonicTime now,
              Plan& plan) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(a.mu, b.mu);
  // Whether an enforcing check that the store has no say in (a local
  // policy, a blocked one, `cost > burst`) denies: final without the store.
  static bool DeniedLocally(const Pass& pass);
  // Whether a shadow check that the store has no say in denies: the
  // request's shadow buckets in the store are then observed, not charged.
  static bool ShadowDeniedLocally(const Pass& pass);
  // Settles a decided pass on the mirror (charged at `at`: now, or the
  // later time of a delayed admission), counts it, and queues its
  // approximate charges.
  void Finish(Shard& a, Shard& b, const Owners& o, Pass& pass, Decision& d,
              const Request& request, MonotonicTime now, MonotonicTime at,
              int64_t cost, bool from_store)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(a.mu, b.mu);
  // Engine::TryDelay on the mirror for a denied `d`: the time the request
  // may pass (now: not at all), with `pass` evaluated then and `d` the late
  // admission. A request with an approximate bucket is not delayed (its
  // debt is a verdict of now).
  static MonotonicTime DelayOnMirror(const Shard& a, const Shard& b,
                                     const Request& request, MonotonicTime now,
                                     Pass& pass, Decision& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(a.mu, b.mu);
  // Fills plan.op.at_ns and plan.late from a late admission `d` at `at`.
  static void PlanLate(const Decision& d, MonotonicTime now, MonotonicTime at,
                       Plan& plan);
  // `d`, reached at the plan's later time, as of now: a delayed admission
  // names what delayed it, a denial's wait counts from now.
  static void TellFromNow(const Plan& plan, Decision& d);
  // The key of `c`'s bucket in the store.
  StoreKey KeyOf(const Engine& engine, const BucketCheck& c,
                 const Request& request) const;
  // Replaces the verdicts of approximate buckets by ones that honour debt.
  void ApplyDebt(const Shard& a, const Shard& b, Pass& pass, MonotonicTime now,
                 int64_t cost) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(a.mu, b.mu);
  // Queues the approximate charges of a settled, allowed request (`d`).
  void QueueCharges(const Shard& a, const Shard& b, const Owners& o,
                    const Pass& pass, const Decision& d, const Request& request,
                    MonotonicTime now, int64_t cost)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(a.mu, b.mu);
  void Sync(MonotonicTime now);
  void SyncLoop();
  // Step 3 of a check the store answered.
  Decision Install(const Owners& o, const Request& request,
                   PreparedRequest& prepared, MonotonicTime now,
                   const Plan& plan, const StoreResult& result);
  // A check the mirror decides alone: counts `why` and takes the locks.
  Decision DecideLocally(const Owners& o, const Request& request,
                         PreparedRequest& prepared, MonotonicTime now,
                         Fallback why);
  // The mirror's decision under the held locks, settled: every path that
  // decides without the store's answer (a fallback, a reload between the
  // store's answer and its install) ends here. `share` below 1 scales the
  // store-decided buckets' rates (StoreOptions::fallback_share).
  Decision DecideHeld(Shard& a, Shard& b, const Owners& o,
                      const Request& request, PreparedRequest& prepared,
                      MonotonicTime now, double share)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(a.mu, b.mu);
  // Replaces the verdicts of the buckets `plan` sent to the store by the
  // store's answer (same policies, same checks, same order).
  static void ApplyStoreLeads(const Plan& plan, const StoreResult& result,
                              Pass& pass, MonotonicTime now, int64_t cost);
  // Gives back what a check op charged (StoreCheckCharged), or with
  // `shadow_only` what it charged to shadow buckets.
  void Refund(const StoreOp& op, const StoreResult& result,
              bool shadow_only = false);
  // Drops the mirror's shared buckets when the store lost its state.
  void SyncGeneration();
  int64_t SteadyNow() const;

  // The mirror's shards.
  ShardSet& set_;
  std::unique_ptr<Store> store_;
  const StoreOptions options_;
  StoreKeyer keyer_;
  mutable Breaker breaker_;
  std::atomic<uint64_t> generation_seen_{0};

  std::atomic<uint64_t> store_decisions_{0};
  std::atomic<uint64_t> local_denials_{0};
  std::atomic<uint64_t> fallbacks_[4] = {};
  std::atomic<uint64_t> refunds_{0};
  std::atomic<uint64_t> mirror_resets_{0};

  // Approximate sharing.
  std::unique_ptr<PendingShard[]> pending_;
  size_t pending_capacity_ = 0;
  std::atomic<bool> any_pending_{false};
  static constexpr int64_t kNoSyncYet = INT64_MIN;
  std::atomic<int64_t> next_sync_ns_{kNoSyncYet};  // Caller's clock.
  // The latest caller time seen, and when (steady clock): the sync thread
  // maps its own time onto the caller's with them.
  std::atomic<int64_t> last_now_ns_{0};
  std::atomic<int64_t> last_now_steady_ns_{0};
  std::mutex sync_mu_;  // One sync at a time.
  // Guarded by sync_mu_, allocated once: the charges being sent, the
  // buckets the last sync found in debt (asked again at the next one), and
  // one pipelined batch of ops and their results.
  static constexpr size_t kSyncOpsPerBatch = 64;
  std::vector<PendingCharge> batch_;
  std::vector<PendingCharge> watch_;
  std::unique_ptr<StoreOp[]> sync_ops_;
  std::unique_ptr<StoreResult[]> sync_results_;
  std::atomic<uint64_t> sync_batches_{0};
  std::atomic<uint64_t> sync_dropped_{0};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread sync_thread_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_SHARED_CORE_H_
