// -----------------------------------------------------------------------------
// File: daemon/store_watch.h
// -----------------------------------------------------------------------------
//
// What mxlimitd logs about its store. The store's state is looked at about
// once a second (SharedLimiter::StoreStats); a line is logged when it
// changes:
//
//   * `level=warn msg="store unreachable; ..."` when the store is down: no
//     connection is up, or the circuit breaker opened after failed checks
//     (shared policies then decide locally, scaled by store.fallback_share);
//   * `level=info msg="store reachable again"` with `down_for=` when it is
//     back (and `back_for=` when the line was held back, see below);
//   * `level=warn msg="store connection lost and re-established"` when a
//     connection dropped and came back between two looks (a restart), with
//     `state_lost=true` when the store came back without its buckets.
//
// A flapping store must not flood the log: lines are at least kMinGap
// apart, and a line due sooner waits and then sums up every change since
// the previous one (`changes=N`). So there is at most one line per change,
// and at most one per kMinGap.
//
// Time is passed in; nothing here reads a clock or logs.
//
// Example:
//   StoreWatch watch;
//   if (std::optional<StoreWatch::Line> line = watch.Observe(stats, now)) {
//     LogFields(line->level, line->message, line->fields);
//   }

#ifndef MXLIMIT_DAEMON_STORE_WATCH_H_
#define MXLIMIT_DAEMON_STORE_WATCH_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mxlimit/shared_limiter.h"

namespace mxlimit::daemon {

class StoreWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // Least time between two lines.
  static constexpr std::chrono::seconds kMinGap{10};

  struct Line {
    std::string_view level;    // "warn" or "info"
    std::string_view message;  // fixed text, for searching the log
    std::vector<std::pair<std::string, std::string>> fields;
  };

  // Takes the store's state at `now` (non-decreasing); returns the line to
  // log, if one is due. The first look only sets the starting state, and
  // logs when the store is down then (it was never reached).
  std::optional<Line> Observe(const SharedStoreStats& stats,
                              Clock::time_point now);

 private:
  bool started_ = false;
  bool up_ = true;         // as last seen
  bool logged_up_ = true;  // as the last line (or the start) said
  uint64_t reconnects_ = 0;
  uint64_t mirror_resets_ = 0;
  // Since the last line: state changes seen, and whether the store lost its
  // buckets.
  uint64_t changes_ = 0;
  bool state_lost_ = false;
  std::optional<Clock::time_point> last_line_;
  // When the store was last seen going down, and coming back.
  Clock::time_point down_since_{};
  Clock::time_point up_since_{};
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_STORE_WATCH_H_
