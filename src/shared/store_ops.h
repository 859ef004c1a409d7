// The reference semantics of protocol mxl:1 (docs/shared-state.md): what the
// Redis script does to its keys for one `StoreOp`, written over any map of
// TATs. `FakeStore` runs it; the conformance test checks the script against
// it vector by vector.
//
// A stored TAT is absolute nanoseconds of the store's clock (or of the
// caller's, for ops with `caller_clock`). An absent key is a full bucket,
// and a key is removed (or expires) exactly when its bucket is full again.
// Every figure stays below 2^53, so the script's Lua numbers are exact: the
// caller sends no bucket whose lead could reach 2^53 ns (104 days): tau below
// that for exact sharing, (1 + kDebtTaus) * tau below it for approximate.

#ifndef MXLIMIT_SHARED_STORE_OPS_H_
#define MXLIMIT_SHARED_STORE_OPS_H_

#include <algorithm>
#include <cstdint>
#include <optional>

#include "mxlimit/policy.h"
#include "mxlimit/rate.h"
#include "src/shared/store.h"

namespace mxlimit::internal {

// The largest lead a shared bucket may reach: Lua numbers are doubles.
inline constexpr int64_t kMaxSharedLeadNs = (int64_t{1} << 53) - 1;

// The largest lead a bucket of this sharing can reach in the store.
inline int64_t MaxStoreLead(const Rate& rate, Sharing sharing) {
  const int64_t tau = rate.tolerance_ns();
  if (sharing != Sharing::kApproximate) return tau;
  // Saturates instead of overflowing (tau <= 2^61).
  return tau > kMaxSharedLeadNs ? tau : (1 + kDebtTaus) * tau;
}

// Whether bucket `i` of a kCheck or kPeek, `lead` ahead (clamped to tau),
// has room for the op's cost.
// The lead a bucket keeps at most: tau, plus its queue of late admissions.
inline int64_t StoreLeadCap(const StoreBucket& b) {
  return b.burst * b.interval_ns +
         std::clamp<int64_t>(b.queue_ns, 0, kMaxStoreAtNs);
}

inline bool StoreBucketHasRoom(const StoreOp& op, size_t i, int64_t lead) {
  const StoreBucket& b = op.buckets[i];
  return GcraHasRoom(lead, op.cost * b.interval_ns, b.burst * b.interval_ns);
}

// Whether the kCheck `op`, answered `r` (its leads before the op), charged
// bucket `i`: an enforcing bucket when the op was allowed; a shadow bucket
// when it was allowed and every shadow bucket had room (shadow buckets are
// charged all or nothing among themselves, as enforcing ones are); an
// observed bucket never.
inline bool StoreCheckCharged(const StoreOp& op, const StoreResult& r,
                              size_t i) {
  if (op.kind != StoreOpKind::kCheck || !r.allowed) return false;
  switch (op.buckets[i].mode) {
    case BucketMode::kEnforcing:
      return true;
    case BucketMode::kObserved:
      return false;
    case BucketMode::kShadow:
      break;
  }
  for (size_t k = 0; k < op.count; ++k) {
    if (op.buckets[k].mode == BucketMode::kShadow &&
        !StoreBucketHasRoom(op, k, r.lead[k])) {
      return false;
    }
  }
  return true;
}

// An empty kCharge that gives back what the kCheck `op` charged, once its
// buckets are added: -cost, at the op's clock and time.
inline StoreOp StoreRefundOf(const StoreOp& op) {
  StoreOp refund;
  refund.kind = StoreOpKind::kCharge;
  refund.cost = -op.cost;
  refund.caller_clock = op.caller_clock;
  refund.now_ns = op.now_ns;
  refund.at_ns = op.at_ns;
  refund.count = 0;
  return refund;
}

// `Map` has `std::optional<int64_t> Get(const StoreKey&)`,
// `void Set(const StoreKey&, int64_t tat, int64_t now)` (TTL: the key may go
// once `now` reaches `tat`) and `void Erase(const StoreKey&)`.
template <typename Map>
StoreResult ApplyStoreOp(Map& map, const StoreOp& op, int64_t now) {
  StoreResult r;
  r.status = StoreStatus::kOk;
  r.allowed = true;
  if (op.kind == StoreOpKind::kSync) {
    // Debt is kept: no clamp to tau, no pull-back (clamping here is what
    // makes approximate sharing over-admit N-fold when T < the interval).
    // Every key is read before any is written, as for the other ops.
    for (size_t i = 0; i < op.count; ++i) {
      const StoreBucket& b = op.buckets[i];
      const int64_t tau = b.burst * b.interval_ns;
      const std::optional<int64_t> tat = map.Get(b.key);
      const int64_t lead =
          tat.has_value() ? std::max<int64_t>(*tat - now, 0) : 0;
      r.lead[i] =
          std::clamp<int64_t>(lead + b.delta_ns, 0, (1 + kDebtTaus) * tau);
    }
    for (size_t i = 0; i < op.count; ++i) {
      if (r.lead[i] == 0) {
        map.Erase(op.buckets[i].key);
      } else {
        map.Set(op.buckets[i].key, now + r.lead[i], now);
      }
    }
    return r;
  }
  // A late admission is decided (and refunded) as of its later time; what
  // it writes expires by the real clock.
  const int64_t real_now = now;
  now += std::clamp<int64_t>(op.at_ns, 0, kMaxStoreAtNs);
  // The raw lead (before clamping) tells whether a backwards clock left the
  // TAT beyond now + tau (+ the queue): a pull-back to persist.
  std::array<int64_t, kMaxStoreBuckets> raw{};
  for (size_t i = 0; i < op.count; ++i) {
    const StoreBucket& b = op.buckets[i];
    const std::optional<int64_t> tat = map.Get(b.key);
    raw[i] = tat.has_value() ? *tat - now : 0;
    r.lead[i] = std::clamp<int64_t>(raw[i], 0, StoreLeadCap(b));
    if (op.kind != StoreOpKind::kCharge && b.mode == BucketMode::kEnforcing &&
        !StoreBucketHasRoom(op, i, r.lead[i])) {
      r.allowed = false;
    }
  }
  if (op.kind == StoreOpKind::kPeek) return r;
  for (size_t i = 0; i < op.count; ++i) {
    const StoreBucket& b = op.buckets[i];
    const int64_t cap = StoreLeadCap(b);
    const int64_t lead = r.lead[i];
    if (op.kind == StoreOpKind::kCharge) {
      // GcraCharge: drained by the cost, refunded by a negative one, within
      // [full, empty] (empty: tau plus the queue).
      const int64_t n = std::clamp<int64_t>(op.cost, -b.burst, b.burst);
      const int64_t next =
          std::clamp<int64_t>(lead + n * b.interval_ns, 0, cap);
      map.Set(b.key, now + next, real_now);
      continue;
    }
    if (StoreCheckCharged(op, r, i)) {
      map.Set(b.key, now + lead + op.cost * b.interval_ns, real_now);
    } else if (raw[i] > cap) {
      // The pull-back, as GcraApply keeps it.
      map.Set(b.key, now + cap, real_now);
    }
  }
  return r;
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_STORE_OPS_H_
