// -----------------------------------------------------------------------------
// File: time.h
// -----------------------------------------------------------------------------
//
// `mxlimit::MonotonicTime` is the only notion of "now" the library knows: an
// integer count of nanoseconds on a monotonic clock chosen by the embedder.
//
// The core never reads a clock. Every call that needs the time takes it as an
// argument, so tests drive simulated time and a wall-clock step (NTP, DST, an
// operator fixing the date) cannot hand out quota. `FromSteadyClock()` is the
// usual source in production; replay and tests build values from integers.
//
// Example:
//   mxlimit::MonotonicTime now = mxlimit::MonotonicTime::FromSteadyClock();
//   mxlimit::MonotonicTime later = now + std::chrono::seconds(1);

#ifndef MXLIMIT_TIME_H_
#define MXLIMIT_TIME_H_

#include <chrono>
#include <compare>
#include <cstdint>

namespace mxlimit {

// A point on the embedder's monotonic clock, in nanoseconds. Any int64 value
// is legal, negative ones included; only differences carry meaning.
class MonotonicTime {
 public:
  constexpr MonotonicTime() = default;

  static constexpr MonotonicTime FromNanoseconds(int64_t ns) {
    return MonotonicTime(ns);
  }
  static constexpr MonotonicTime FromMilliseconds(int64_t ms) {
    // Saturate instead of overflowing: replayed logs may carry absurd values.
    constexpr int64_t kMax = INT64_MAX / 1'000'000;
    if (ms > kMax) return MonotonicTime(INT64_MAX);
    if (ms < -kMax) return MonotonicTime(INT64_MIN);
    return MonotonicTime(ms * 1'000'000);
  }
  // Reads std::chrono::steady_clock. Only convenience overloads call this.
  static MonotonicTime FromSteadyClock() {
    return FromSteadyClock(std::chrono::steady_clock::now());
  }
  static MonotonicTime FromSteadyClock(
      std::chrono::steady_clock::time_point tp) {
    return MonotonicTime(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            tp.time_since_epoch())
            .count());
  }

  constexpr int64_t nanoseconds() const { return ns_; }

  // Saturating: adding a duration never wraps around the int64 range.
  constexpr MonotonicTime operator+(std::chrono::nanoseconds d) const {
    int64_t out = 0;
    if (__builtin_add_overflow(ns_, d.count(), &out)) {
      out = d.count() > 0 ? INT64_MAX : INT64_MIN;
    }
    return MonotonicTime(out);
  }
  constexpr MonotonicTime operator-(std::chrono::nanoseconds d) const {
    int64_t out = 0;
    if (__builtin_sub_overflow(ns_, d.count(), &out)) {
      out = d.count() > 0 ? INT64_MIN : INT64_MAX;
    }
    return MonotonicTime(out);
  }

  constexpr auto operator<=>(const MonotonicTime&) const = default;

 private:
  constexpr explicit MonotonicTime(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

}  // namespace mxlimit

#endif  // MXLIMIT_TIME_H_
