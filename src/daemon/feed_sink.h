// -----------------------------------------------------------------------------
// File: daemon/feed_sink.h
// -----------------------------------------------------------------------------
//
// What mxlimitd does with one completion from its feed: the access-log line
// the proxy wrote when a request ended (nginx's feed format or Caddy's JSON,
// read by the replay parsers, src/replay/log_parsers.h) is matched by its
// request id to the decision kept in the PendingTable, which is then settled
// (`SharedLimiter::Settle`: policies charged on the response, by the line's
// status and body bytes) and whose leases are given back
// (`SharedLimiter::Release`). A line that does not parse, carries no id, or
// has no pending decision changes nothing but a counter. Nothing allocates.
//
// Example:
//   mxlimit::daemon::FeedSink sink(limiter, pending);
//   sink.HandleDatagram(datagram, mxlimit::MonotonicTime::FromSteadyClock());

#ifndef MXLIMIT_DAEMON_FEED_SINK_H_
#define MXLIMIT_DAEMON_FEED_SINK_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "mxlimit/shared_limiter.h"
#include "mxlimit/time.h"
#include "src/daemon/pending_table.h"

namespace mxlimit::daemon {

// What became of a feed line (each a `result` of
// mxlimitd_feed_lines_total).
enum class FeedLineResult : uint8_t {
  kSettled,    // matched: settled and its leases released
  kNoPending,  // no kept decision has its id (denied, exempt, not kept,
               // evicted, or not ours)
  kNoId,       // parsed, but the line carries no request id
  kUnparsed,   // neither a feed-format nginx line nor a Caddy access entry
  kCount
};

// The syslog header nginx writes in front of each line it sends to a
// syslog server (RFC 3164: "<PRI>Mmm dd hh:mm:ss [host ]tag: "), removed;
// any other text is returned as it is.
std::string_view StripSyslogHeader(std::string_view datagram);

class FeedSink {
 public:
  // Both are borrowed and must outlive the sink.
  FeedSink(SharedLimiter& limiter, PendingTable& pending);

  // Handles every line of `datagram` (one per datagram from nginx and
  // Caddy; several newline-separated ones are read too), each without its
  // syslog header if it has one. Safe from one
  // thread at a time; the counters may be read from any.
  void HandleDatagram(std::string_view datagram, MonotonicTime now);

  // One line, without a syslog header.
  FeedLineResult HandleLine(std::string_view line, MonotonicTime now);

  uint64_t lines(FeedLineResult r) const {
    return lines_[static_cast<size_t>(r)].load(std::memory_order_relaxed);
  }

 private:
  SharedLimiter& limiter_;
  PendingTable& pending_;
  std::atomic<uint64_t> lines_[static_cast<size_t>(FeedLineResult::kCount)]{};
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_FEED_SINK_H_
