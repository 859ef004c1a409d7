#include "src/shared/fake_store.h"

#include <thread>
#include <utility>

#include "src/shared/store_ops.h"

namespace mxlimit::internal {

namespace {

int64_t SteadyNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// The map view store_ops.h expects, over the locked table.
struct FakeStore::Map {
  absl::flat_hash_map<StoreKey, int64_t>& tats;
  std::optional<int64_t> Get(const StoreKey& key) const {
    auto it = tats.find(key);
    if (it == tats.end()) return std::nullopt;
    return it->second;
  }
  void Set(const StoreKey& key, int64_t tat, int64_t now) {
    if (tat <= now) {
      tats.erase(key);  // Full again: Redis would let it expire now.
    } else {
      tats[key] = tat;
    }
  }
  void Erase(const StoreKey& key) { tats.erase(key); }
};

FakeStore::FakeStore(Clock clock)
    : clock_(clock ? std::move(clock) : Clock(SteadyNanoseconds)) {}

StoreResult FakeStore::Apply(const StoreOp& op) {
  MutexLock lock(mu_);
  const int64_t now = op.caller_clock ? op.now_ns : clock_();
  Map map{tats_};
  executed_.fetch_add(1, std::memory_order_relaxed);
  return ApplyStoreOp(map, op, now);
}

StoreResult FakeStore::Execute(const StoreOp& op,
                               std::chrono::steady_clock::time_point deadline) {
  if (down_.load(std::memory_order_relaxed)) {
    unavailable_.fetch_add(1, std::memory_order_relaxed);
    return StoreResult{};
  }
  int lose = lose_.load(std::memory_order_relaxed);
  while (lose > 0 && !lose_.compare_exchange_weak(lose, lose - 1,
                                                  std::memory_order_relaxed)) {
  }
  if (lose > 0) {
    std::this_thread::sleep_until(deadline);
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    StoreResult r;
    r.status = StoreStatus::kTimeout;
    return r;
  }
  const auto latency =
      std::chrono::nanoseconds(latency_ns_.load(std::memory_order_relaxed));
  if (latency.count() > 0) {
    const auto answer_at = std::chrono::steady_clock::now() + latency;
    if (answer_at > deadline) {
      std::this_thread::sleep_until(deadline);
      timeouts_.fetch_add(1, std::memory_order_relaxed);
      // The store still applies it: the caller just stopped waiting.
      const StoreResult late = Apply(op);
      late_count_.fetch_add(1, std::memory_order_relaxed);
      if (late_handler_ != nullptr) late_handler_->OnLateReply(op, late);
      StoreResult r;
      r.status = StoreStatus::kTimeout;
      return r;
    }
    std::this_thread::sleep_until(answer_at);
  }
  ok_.fetch_add(1, std::memory_order_relaxed);
  return Apply(op);
}

bool FakeStore::Post(const StoreOp& op) {
  if (down_.load(std::memory_order_relaxed)) return false;
  Apply(op);
  return true;
}

void FakeStore::Restart() {
  MutexLock lock(mu_);
  tats_.clear();
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

std::optional<int64_t> FakeStore::Tat(const StoreKey& key) const {
  MutexLock lock(mu_);
  auto it = tats_.find(key);
  if (it == tats_.end()) return std::nullopt;
  return it->second;
}

size_t FakeStore::LiveKeys(int64_t now) const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [key, tat] : tats_) n += tat > now ? 1 : 0;
  return n;
}

StoreCounters FakeStore::counters() const {
  StoreCounters c;
  c.ops_ok = ok_.load(std::memory_order_relaxed);
  c.ops_timeout = timeouts_.load(std::memory_order_relaxed);
  c.ops_unavailable = unavailable_.load(std::memory_order_relaxed);
  c.late_replies = late_count_.load(std::memory_order_relaxed);
  c.connected = !down_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace mxlimit::internal
