// -----------------------------------------------------------------------------
// File: daemon/daemon_metrics.h
// -----------------------------------------------------------------------------
//
// mxlimitd's own counters (requests per endpoint, decisions, bad requests,
// reloads, the decision latency histogram) and their Prometheus text. The
// request-path counters are striped per thread, each stripe on its own cache
// line, so worker threads never write the same line.
//
// Example:
//   mxlimit::daemon::DaemonMetrics metrics;
//   metrics.CountRequest(mxlimit::daemon::Endpoint::kHealth);
//   std::string text;
//   metrics.AppendPrometheus(mxlimit::http::ServerCounters{}, nullptr, text);

#ifndef MXLIMIT_DAEMON_DAEMON_METRICS_H_
#define MXLIMIT_DAEMON_DAEMON_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "src/daemon/whoami_cache.h"
#include "src/http/server.h"

namespace mxlimit::daemon {

enum class Endpoint : uint8_t {
  kAuthRequest,
  kForwardAuth,
  kMetrics,
  kHealth,
  kOther,
  kCount
};

enum class Outcome : uint8_t {
  kAllowed,
  kLimited,  // denied with a retry time
  kNever,    // denied, no wait helps
  kExempt,
  kDelayed,  // allowed after its answer was held (on_limit: delay)
  kCount
};

// The completion feed's counters (src/daemon/feed_*.h), when it is on.
struct FeedCounters {
  // Per FeedLineResult: settled, no_pending, no_id, unparsed.
  std::array<uint64_t, 4> lines{};
  uint64_t datagrams = 0;
  uint64_t oversized = 0;
  uint64_t dropped = 0;
  uint64_t pending = 0;
  uint64_t pending_capacity = 0;
  uint64_t pending_evicted = 0;
  uint64_t pending_replaced = 0;
  uint64_t pending_too_long = 0;
};

// Appends the mxlimitd_feed_* families.
void AppendFeedPrometheus(const FeedCounters& c, std::string& out);

class DaemonMetrics {
 public:
  // Upper bounds of the latency histogram, in microseconds (+Inf implied).
  static constexpr std::array<int64_t, 11> kLatencyBoundsUs = {
      5, 10, 25, 50, 100, 200, 500, 1000, 5000, 25000, 100000};

  void CountRequest(Endpoint e);
  void CountBadRequest();
  void CountDecision(Outcome o, std::chrono::nanoseconds latency);
  void CountReload(bool ok);

  // Appends every mxlimitd_* family, each whole (HELP, TYPE, samples).
  void AppendPrometheus(const http::ServerCounters& server,
                        const WhoamiCache* whoami, std::string& out) const;

 private:
  static constexpr size_t kStripes = 16;
  struct alignas(64) Stripe {
    std::array<std::atomic<uint64_t>, static_cast<size_t>(Endpoint::kCount)>
        requests{};
    std::array<std::atomic<uint64_t>, static_cast<size_t>(Outcome::kCount)>
        outcomes{};
    std::atomic<uint64_t> bad_requests{0};
    std::array<std::atomic<uint64_t>, kLatencyBoundsUs.size() + 1> latency{};
    std::atomic<uint64_t> latency_sum_ns{0};
  };
  Stripe& Mine();

  std::array<Stripe, kStripes> stripes_;
  std::atomic<uint64_t> reloads_ok_{0};
  std::atomic<uint64_t> reloads_failed_{0};
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_DAEMON_METRICS_H_
