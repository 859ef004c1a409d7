// -----------------------------------------------------------------------------
// File: daemon/wall_clock.h
// -----------------------------------------------------------------------------
//
// A tier assignment's end crosses restarts (the state dir) and processes
// (the store) on the wall clock, in Unix milliseconds; inside a limiter it
// is a MonotonicTime. `Clocks` reads both clocks once and converts either
// way, so every place that writes or reads an end agrees on the rounding.
//
// Example:
//   const Clocks clocks = Clocks::Now();
//   int64_t at_ms = clocks.WallMs(*assignment.expires);  // to write
//   std::optional<MonotonicTime> until = clocks.Monotonic(at_ms);  // to read

#ifndef MXLIMIT_DAEMON_WALL_CLOCK_H_
#define MXLIMIT_DAEMON_WALL_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "mxlimit/time.h"
#include "src/policy/tiers_json.h"

namespace mxlimit::daemon {

struct Clocks {
  MonotonicTime now;
  int64_t wall_ms = 0;

  // `now` as given (a request's), with the wall clock read now.
  static Clocks At(MonotonicTime now) {
    return {now, std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count()};
  }
  static Clocks Now() { return At(MonotonicTime::FromSteadyClock()); }

  // When `at` falls on the wall clock, rounded up to the millisecond.
  int64_t WallMs(MonotonicTime at) const {
    return wall_ms + internal::MillisecondsLeft(now, at);
  }
  // When wall-clock `at_ms` falls on the monotonic clock; nullopt when it
  // has passed.
  std::optional<MonotonicTime> Monotonic(int64_t at_ms) const {
    if (at_ms <= wall_ms) return std::nullopt;
    return now + std::chrono::milliseconds(at_ms - wall_ms);
  }
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_WALL_CLOCK_H_
