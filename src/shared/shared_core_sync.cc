// SharedCore's bookkeeping with the store outside the check path: charges
// and refunds (Charge, Refund, a late reply's refund), the periodic sync of
// approximate charges (the sync thread, or the checking thread at the
// caller's time), and the mirror's reset when the store comes back empty.
// The check path is shared_core.cc.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "mxlimit/internal/mutex.h"
#include "src/shared/shared_core.h"
#include "src/shared/store_ops.h"

namespace mxlimit::internal {

void SharedCore::Charge(const Request& request, MonotonicTime now) {
  // The mirror first: the whole truth for local policies, and for shared
  // ones the same change the store gets (a refund lowers this process's
  // lower bound by what it lowers the store's).
  set_.Charge(request, now);
  if (request.cost == 0) return;
  PreparedRequest p;
  const Owners o = set_.Prepare(request, p);
  Shard& a = set_.shard(o.ip);
  Shard& b = set_.shard(o.user);
  Plan plan;
  {
    LockedPair lock(a, b, o.ip_first());
    Pass pass;
    Evaluate(a, b, request, p, now, /*inspect=*/true, pass);
    if (pass.ip_part.exempt) return;
    PlanOp(a, b, request, pass, StoreOpKind::kCharge, now, plan);
  }
  if (plan.op.count == 0 || !breaker_.Allow(SteadyNow())) return;
  const StoreResult result = store_->Execute(
      plan.op,
      std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              options_.timeout));
  breaker_.Record(result.status == StoreStatus::kOk, SteadyNow());
}

void SharedCore::Refund(const StoreOp& op, const StoreResult& result,
                        bool shadow_only) {
  if (op.kind != StoreOpKind::kCheck || !result.allowed) return;
  StoreOp refund = StoreRefundOf(op);
  for (uint8_t i = 0; i < op.count; ++i) {
    const StoreBucket& bucket = op.buckets[i];
    if (!StoreCheckCharged(op, result, i)) continue;
    if (shadow_only && bucket.mode != BucketMode::kShadow) continue;
    refund.buckets[refund.count++] = bucket;
  }
  if (refund.count == 0 || op.cost == 0) return;
  store_->Post(refund);
  refunds_.fetch_add(1, std::memory_order_relaxed);
}

void SharedCore::OnLateReply(const StoreOp& op, const StoreResult& result) {
  // The check fell back (and charged the mirror if it allowed); the store
  // charged too. Keep the store's budget for what the fallback decided:
  // give the store's charge back.
  if (result.status == StoreStatus::kOk) Refund(op, result);
}

void SharedCore::SyncGeneration() {
  const uint64_t now_gen = store_->generation();
  uint64_t seen = generation_seen_.load(std::memory_order_acquire);
  if (now_gen == seen) return;
  if (!generation_seen_.compare_exchange_strong(seen, now_gen,
                                                std::memory_order_acq_rel)) {
    return;  // Another thread is resetting.
  }
  // The store restarted empty: every shared bucket is full there, and the
  // mirror's would over-deny until they drained.
  for (size_t i = 0; i < set_.size(); ++i) {
    Shard& s = set_.shard(i);
    MutexLock lock(s.mu);
    s.engine->EraseSharedBuckets();
  }
  mirror_resets_.fetch_add(1, std::memory_order_relaxed);
}

void SharedCore::SyncNow(MonotonicTime now) { Sync(now); }

void SharedCore::DropPending() {
  for (size_t i = 0; i < set_.size(); ++i) {
    Shard& s = set_.shard(i);
    MutexLock lock(s.mu);
    pending_[i].charges.clear();
  }
}

void SharedCore::SyncLoop() {
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stop_) {
    stop_cv_.wait_for(lock, options_.sync_interval);
    if (stop_ || !any_pending_.load(std::memory_order_relaxed)) continue;
    lock.unlock();
    // The caller's clock, carried forward from its latest reading.
    const int64_t now =
        last_now_ns_.load(std::memory_order_relaxed) +
        (SteadyNow() - last_now_steady_ns_.load(std::memory_order_relaxed));
    Sync(MonotonicTime::FromNanoseconds(now));
    lock.lock();
  }
}

void SharedCore::Sync(MonotonicTime now) {
  std::unique_lock<std::mutex> one(sync_mu_, std::try_to_lock);
  if (!one.owns_lock()) return;
  // Take every shard's queue (each keeps its reserved capacity), then the
  // buckets still in debt at the last sync, asked again with nothing to
  // add: a process learns of other processes' charges only from a sync's
  // answer, and one that stopped charging a bucket would otherwise keep an
  // old, low lead and over-admit when it next sees the client. Everything
  // here reuses buffers allocated once, so a sync allocates nothing either.
  batch_.clear();
  any_pending_.store(false, std::memory_order_relaxed);
  for (size_t i = 0; i < set_.size(); ++i) {
    Shard& s = set_.shard(i);
    MutexLock lock(s.mu);
    std::vector<PendingCharge>& charges = pending_[i].charges;
    batch_.insert(batch_.end(), charges.begin(), charges.end());
    charges.clear();
  }
  for (PendingCharge& w : watch_) {
    w.delta_ns = 0;
    batch_.push_back(w);
  }
  watch_.clear();
  if (batch_.empty()) return;
  // One bucket per key, its charges summed.
  std::sort(batch_.begin(), batch_.end(),
            [](const PendingCharge& a, const PendingCharge& b) {
              return a.key.view() < b.key.view();
            });
  size_t buckets = 0;
  for (size_t i = 0; i < batch_.size(); ++i) {
    if (buckets > 0 && batch_[buckets - 1].key == batch_[i].key) {
      batch_[buckets - 1].delta_ns += batch_[i].delta_ns;
    } else {
      batch_[buckets++] = batch_[i];
    }
  }
  const size_t per_batch = kSyncOpsPerBatch * kMaxStoreBuckets;
  for (size_t first = 0; first < buckets; first += per_batch) {
    const size_t n = std::min(per_batch, buckets - first);
    const size_t ops = (n + kMaxStoreBuckets - 1) / kMaxStoreBuckets;
    for (size_t o = 0; o < ops; ++o) {
      StoreOp& op = sync_ops_[o];
      op.kind = StoreOpKind::kSync;
      op.cost = 0;
      op.caller_clock = options_.clock == StoreOptions::Clock::kCaller;
      op.now_ns = now.nanoseconds();
      op.count = 0;
    }
    for (size_t i = 0; i < n; ++i) {
      const PendingCharge& p = batch_[first + i];
      StoreOp& op = sync_ops_[i / kMaxStoreBuckets];
      StoreBucket& b = op.buckets[op.count++];
      b.key = p.key;
      b.interval_ns = p.interval_ns;
      b.burst = p.burst;
      b.delta_ns = p.delta_ns;
    }
    store_->ExecuteBatch(
        std::span<const StoreOp>(sync_ops_.get(), ops),
        std::chrono::steady_clock::now() +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                options_.timeout),
        std::span<StoreResult>(sync_results_.get(), ops));
    sync_batches_.fetch_add(1, std::memory_order_relaxed);
    for (size_t i = 0; i < n; ++i) {
      const StoreResult& r = sync_results_[i / kMaxStoreBuckets];
      const PendingCharge& p = batch_[first + i];
      if (r.status != StoreStatus::kOk) {
        if (p.delta_ns > 0)
          sync_dropped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      const int64_t lead = r.lead[i % kMaxStoreBuckets];
      {
        Shard& s = set_.shard(p.shard);
        MutexLock lock(s.mu);
        // The store's lead includes this process's charges and everyone
        // else's; installed as it is, debt and all.
        s.engine->RaiseLead(p.scope, p.engine_key, lead, now);
      }
      if (lead > 0 && watch_.size() < pending_capacity_) watch_.push_back(p);
    }
  }
  if (!watch_.empty()) any_pending_.store(true, std::memory_order_relaxed);
}

}  // namespace mxlimit::internal
