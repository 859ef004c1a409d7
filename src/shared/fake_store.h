// An in-process `Store` with the semantics of the Redis script (it runs
// store_ops.h), for unit tests and the accuracy harness. Deterministic:
// its clock is injected, and latency, loss and restarts happen only when a
// test asks for them.
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_FAKE_STORE_H_
#define MXLIMIT_SHARED_FAKE_STORE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "mxlimit/internal/mutex.h"
#include "src/shared/store.h"

namespace mxlimit::internal {

class FakeStore final : public Store {
 public:
  // Nanoseconds of the store's clock, for ops without `caller_clock`.
  using Clock = std::function<int64_t()>;

  // The default clock is std::chrono::steady_clock.
  explicit FakeStore(Clock clock = {});

  StoreResult Execute(const StoreOp& op,
                      std::chrono::steady_clock::time_point deadline) override;
  bool Post(const StoreOp& op) override;
  uint64_t generation() const override {
    return generation_.load(std::memory_order_acquire);
  }
  StoreCounters counters() const override;
  void SetLateReplyHandler(LateReplyHandler* handler) override {
    late_handler_ = handler;
  }

  // --- Faults -----------------------------------------------------------

  // Every op takes this long to answer (0: at once). An op whose deadline
  // comes first returns kTimeout at the deadline and is still applied, then
  // reported to the late-reply handler, as a slow Redis would.
  void SetLatency(std::chrono::nanoseconds latency) {
    latency_ns_.store(latency.count(), std::memory_order_relaxed);
  }
  // While down, every op fails at once with kUnavailable (a dead store).
  void SetDown(bool down) { down_.store(down, std::memory_order_relaxed); }
  // Drops the next `n` ops unapplied: each waits for its deadline and
  // returns kTimeout (a lost packet, a frozen server).
  void LoseNext(int n) { lose_.store(n, std::memory_order_relaxed); }
  // Forgets every bucket and bumps the generation (a restart without
  // persistence).
  void Restart();

  // --- Inspection -------------------------------------------------------

  // The stored TAT of `key`, if the key exists (a bucket that is not full).
  std::optional<int64_t> Tat(const StoreKey& key) const;
  // Keys that exist at the store's `now`.
  size_t LiveKeys(int64_t now) const;
  int64_t Now() const { return clock_(); }
  uint64_t executed() const {
    return executed_.load(std::memory_order_relaxed);
  }

 private:
  struct Map;
  StoreResult Apply(const StoreOp& op);

  Clock clock_;
  mutable Mutex mu_;
  absl::flat_hash_map<StoreKey, int64_t> tats_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> latency_ns_{0};
  std::atomic<bool> down_{false};
  std::atomic<int> lose_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> executed_{0};
  std::atomic<uint64_t> ok_{0}, timeouts_{0}, unavailable_{0}, late_count_{0};
  LateReplyHandler* late_handler_ = nullptr;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_FAKE_STORE_H_
