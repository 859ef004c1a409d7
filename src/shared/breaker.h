// A circuit breaker in front of the store: after repeated failures checks
// stop waiting for a store that is not answering and fall back at local
// speed; one probe at a time finds out when it answers again.
//
//   closed --(kFailuresToOpen failures in a row)--> open
//   open --(open period over)--> one probe allowed (half-open)
//   probe succeeds --> closed; probe fails --> open, period doubled (to
//   kMaxOpen)
//
// Time is passed in (steady-clock nanoseconds). Lock-free; any thread.

#ifndef MXLIMIT_SHARED_BREAKER_H_
#define MXLIMIT_SHARED_BREAKER_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace mxlimit::internal {

class Breaker {
 public:
  static constexpr int kFailuresToOpen = 5;
  static constexpr int64_t kMinOpenNs = 100'000'000;  // 100 ms
  // One probe a second at most: a store back from an outage is used again
  // within about a second (issue #15 asks for 1.1 s).
  static constexpr int64_t kMaxOpenNs = 1'000'000'000;  // 1 s

  // Whether a check may ask the store at `now`. While open, false until
  // the open period ends; then true for exactly one caller (the probe).
  bool Allow(int64_t now) {
    const int64_t until = open_until_.load(std::memory_order_acquire);
    if (until == 0) return true;
    if (now < until) return false;
    bool expected = false;
    return probing_.compare_exchange_strong(expected, true,
                                            std::memory_order_acq_rel);
  }

  // The outcome of one store call made after Allow said yes.
  void Record(bool ok, int64_t now) {
    if (ok) {
      failures_.store(0, std::memory_order_relaxed);
      if (open_until_.load(std::memory_order_acquire) != 0) {
        period_.store(kMinOpenNs, std::memory_order_relaxed);
        open_until_.store(0, std::memory_order_release);
        probing_.store(false, std::memory_order_release);
      }
      return;
    }
    const int failures = failures_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (open_until_.load(std::memory_order_acquire) != 0) {
      // The probe (or a call that started before the breaker opened)
      // failed: stay open, for longer.
      if (probing_.load(std::memory_order_acquire)) {
        const int64_t period =
            std::min(period_.load(std::memory_order_relaxed) * 2, kMaxOpenNs);
        period_.store(period, std::memory_order_relaxed);
        open_until_.store(now + Jittered(period, now),
                          std::memory_order_release);
        probing_.store(false, std::memory_order_release);
      }
      return;
    }
    if (failures >= kFailuresToOpen) {
      open_until_.store(
          now + Jittered(period_.load(std::memory_order_relaxed), now),
          std::memory_order_release);
      opened_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  bool open() const { return open_until_.load(std::memory_order_acquire) != 0; }
  uint64_t times_opened() const {
    return opened_.load(std::memory_order_relaxed);
  }

 private:
  // Up to a tenth longer, so that many processes that lost the same store
  // do not all probe it at the same instant.
  static int64_t Jittered(int64_t period, int64_t now) {
    const uint64_t mix = static_cast<uint64_t>(now) * 0x9E3779B97F4A7C15ULL;
    return period + static_cast<int64_t>((mix >> 33) % (period / 10 + 1));
  }

  std::atomic<int> failures_{0};
  // 0: closed; otherwise when the open period ends.
  std::atomic<int64_t> open_until_{0};
  std::atomic<bool> probing_{false};
  std::atomic<int64_t> period_{kMinOpenNs};
  std::atomic<uint64_t> opened_{0};
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_BREAKER_H_
