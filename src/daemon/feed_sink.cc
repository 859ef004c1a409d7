#include "src/daemon/feed_sink.h"

#include <algorithm>

#include "mxlimit/request.h"
#include "src/replay/log_parsers.h"

namespace mxlimit::daemon {

std::string_view StripSyslogHeader(std::string_view datagram) {
  // "<" 1-3 digits ">", then the 15-byte "Mmm dd hh:mm:ss" and a space.
  if (datagram.size() < 3 || datagram[0] != '<') return datagram;
  const size_t close = datagram.find('>');
  if (close == std::string_view::npos || close < 2 || close > 4) {
    return datagram;
  }
  for (size_t i = 1; i < close; ++i) {
    if (datagram[i] < '0' || datagram[i] > '9') return datagram;
  }
  constexpr size_t kStamp = 16;
  if (datagram.size() < close + 1 + kStamp) return datagram;
  const std::string_view rest = datagram.substr(close + 1 + kStamp);
  // "[host ]tag: ": a host name has no space and a tag no colon, so the
  // first ": " ends the header; the message itself starts with an address
  // or "{" well before any ": " of its own.
  const size_t tag_end = rest.find(": ");
  if (tag_end == std::string_view::npos || tag_end > 300) return datagram;
  return rest.substr(tag_end + 2);
}

FeedSink::FeedSink(SharedLimiter& limiter, PendingTable& pending)
    : limiter_(limiter), pending_(pending) {}

void FeedSink::HandleDatagram(std::string_view datagram, MonotonicTime now) {
  while (!datagram.empty()) {
    const size_t nl = datagram.find('\n');
    const std::string_view line = StripSyslogHeader(datagram.substr(0, nl));
    datagram = nl == std::string_view::npos ? std::string_view()
                                            : datagram.substr(nl + 1);
    if (line.empty() || line == "\r") continue;
    const FeedLineResult r = HandleLine(line, now);
    lines_[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
}

FeedLineResult FeedSink::HandleLine(std::string_view line, MonotonicTime now) {
  replay::LogRecord record;
  const size_t first = line.find_first_not_of(' ');
  const bool json = first != std::string_view::npos && line[first] == '{';
  const replay::ParseResult parsed =
      json ? replay::ParseCaddyLine(line, &record)
           : replay::ParseNginxLine(line, &record);
  if (parsed != replay::ParseResult::kOk) return FeedLineResult::kUnparsed;
  if (record.request_id.empty()) return FeedLineResult::kNoId;
  PendingEntry entry;
  if (!pending_.Take(record.request_id, entry)) {
    return FeedLineResult::kNoPending;
  }
  const PendingRequest kept = entry.request();
  // The method and target are the line's (the same request line the
  // decision saw); who made the request is the decision's, which resolved
  // trusted proxies and the access token.
  const Request request =
      kept.ToRequest(record.method, OriginForm(record.target));
  Completion completion;
  completion.status = record.status;
  completion.body_bytes = std::max<int64_t>(record.body_bytes, 0);
  if (kept.settles) limiter_.Settle(request, completion, now);
  if (kept.leases.count > 0) limiter_.Release(kept.leases, now);
  return FeedLineResult::kSettled;
}

}  // namespace mxlimit::daemon
