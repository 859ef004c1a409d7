// What `SharedLimiter` does with a store: the engine protocol of engine.h
// run over a `ShardedLimiter`'s shards, with a store round trip between
// resolving a request and settling it, no shard lock held across it.
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
// Internal: not installed.

#ifndef MXLIMIT_SHARED_SHARED_CORE_H_
#define MXLIMIT_SHARED_SHARED_CORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mxlimit/decision.h"
#include "mxlimit/options.h"
#include "mxlimit/request.h"
#include "mxlimit/shared_limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "src/engine/engine.h"
#include "src/shared/breaker.h"
#include "src/shared/store.h"
#include "src/shared/store_keys.h"

namespace mxlimit::internal {

class SharedCore final : public LateReplyHandler {
 public:
  SharedCore(ShardedLimiter& mirror, std::unique_ptr<Store> store,
             const StoreOptions& options);
  ~SharedCore() override;

  Decision Check(const Request& request, MonotonicTime now);
  Decision Peek(const Request& request, MonotonicTime now) const;
  void Charge(const Request& request, MonotonicTime now);
  SharedStoreStats Stats() const;
  std::vector<std::string> DescribeStoreKeys(const Request& request) const;
  const StoreOptions& options() const { return options_; }

  void OnLateReply(const StoreOp& op, const StoreResult& result) override;

 private:
  using Shard = ShardedLimiter::Shard;
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
  struct Plan {
    StoreOp op;
    std::array<OpSource, kMaxStoreBuckets> from;
    const PolicySet* ip_policies = nullptr;
    const PolicySet* user_policies = nullptr;
  };
  enum class Fallback : uint8_t { kTimeout, kError, kUnavailable, kBreaker };

  // Step 1: evaluates `request` (`inspect`: without admitting or counting)
  // and lists its exact-shared buckets in `plan`.
  void Evaluate(Shard& a, Shard& b, const Request& request, MonotonicTime now,
                bool inspect, Pass& pass) const;
  void PlanOp(const Shard& a, const Shard& b, const Request& request,
              const Pass& pass, StoreOpKind kind, MonotonicTime now,
              Plan& plan) const;
  // Whether an enforcing check that the store has no say in (a local
  // policy, a blocked one, `cost > burst`) denies: final without the store.
  static bool DeniedLocally(const Pass& pass);
  // Settles a decided pass on the mirror and counts it.
  void Finish(Shard& a, Shard& b, Pass& pass, Decision& d, MonotonicTime now,
              int64_t cost, bool from_store);
  // Step 3 of a check the store answered.
  Decision Install(size_t ip, size_t user, const Request& request,
                   MonotonicTime now, const Plan& plan,
                   const StoreResult& result);
  // A check the mirror decides alone.
  Decision DecideLocally(size_t ip, size_t user, const Request& request,
                         MonotonicTime now, Fallback why);
  // Gives back what a check op charged (buckets with room, when it was
  // allowed).
  void Refund(const StoreOp& op, const StoreResult& result);
  // Drops the mirror's shared buckets when the store lost its state.
  void SyncGeneration();
  int64_t SteadyNow() const;

  ShardedLimiter& mirror_;
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
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_SHARED_CORE_H_
