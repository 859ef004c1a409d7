#include "src/daemon/store_watch.h"

#include <string>

namespace mxlimit::daemon {
namespace {

std::string Seconds(StoreWatch::Clock::duration d) {
  return std::to_string(
             std::chrono::duration_cast<std::chrono::seconds>(d).count()) +
         "s";
}

}  // namespace

std::optional<StoreWatch::Line> StoreWatch::Observe(
    const SharedStoreStats& stats, Clock::time_point now) {
  const bool up = stats.connected && !stats.breaker_open;
  if (!started_) {
    started_ = true;
    up_ = up;
    logged_up_ = true;  // the `listening` line named the store
    reconnects_ = stats.reconnects;
    mirror_resets_ = stats.mirror_resets;
    if (up) return std::nullopt;
    down_since_ = now;
    changes_ = 1;
  } else {
    // A connection that came back counts as a drop and a return, unless it
    // is the return this look sees anyway.
    uint64_t returns = stats.reconnects - reconnects_;
    if (up && !up_ && returns > 0) --returns;
    changes_ += (up != up_ ? 1 : 0) + 2 * returns;
    if (!up && up_) down_since_ = now;
    if (up && !up_) up_since_ = now;
    state_lost_ = state_lost_ || stats.mirror_resets > mirror_resets_;
    up_ = up;
    reconnects_ = stats.reconnects;
    mirror_resets_ = stats.mirror_resets;
  }
  if (changes_ == 0 && !state_lost_) return std::nullopt;
  if (last_line_.has_value() && now - *last_line_ < kMinGap) {
    return std::nullopt;  // summed up in the next line
  }
  Line line;
  if (!up) {
    line.level = "warn";
    line.message =
        "store unreachable; shared policies decide locally (scaled by "
        "store.fallback_share) until it is back";
    line.fields.emplace_back("connected", stats.connected ? "true" : "false");
    line.fields.emplace_back("breaker", stats.breaker_open ? "open" : "closed");
    line.fields.emplace_back("down_for", Seconds(now - down_since_));
  } else if (!logged_up_) {
    line.level = "info";
    line.message = "store reachable again";
    // Since it came back, which a line held back by kMinGap says late.
    line.fields.emplace_back("down_for", Seconds(up_since_ - down_since_));
    if (now != up_since_) {
      line.fields.emplace_back("back_for", Seconds(now - up_since_));
    }
  } else {
    line.level = "warn";
    line.message = "store connection lost and re-established";
  }
  if (changes_ > 1) {
    line.fields.emplace_back("changes", std::to_string(changes_));
  }
  if (state_lost_) {
    // The store's buckets are gone (restart without persistence, failover):
    // every shared budget starts full again.
    line.fields.emplace_back("state_lost", "true");
  }
  logged_up_ = up;
  changes_ = 0;
  state_lost_ = false;
  last_line_ = now;
  return line;
}

}  // namespace mxlimit::daemon
