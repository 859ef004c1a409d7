#include "src/daemon/daemon_metrics.h"

#include <charconv>
#include <string_view>

namespace mxlimit::daemon {
namespace {

std::atomic<size_t> next_stripe{0};

void AppendUint(std::string& out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

void Family(std::string& out, std::string_view name, std::string_view type,
            std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void Sample(std::string& out, std::string_view name, std::string_view labels,
            uint64_t value) {
  out.append(name);
  if (!labels.empty()) out.append("{").append(labels).append("}");
  out.push_back(' ');
  AppendUint(out, value);
  out.push_back('\n');
}

constexpr std::string_view kEndpointLabels[] = {
    "endpoint=\"auth_request\"", "endpoint=\"forward_auth\"",
    "endpoint=\"metrics\"", "endpoint=\"health\"", "endpoint=\"other\""};
constexpr std::string_view kOutcomeLabels[] = {
    "result=\"allowed\"", "result=\"limited\"", "result=\"never\"",
    "result=\"exempt\"", "result=\"delayed\""};

}  // namespace

DaemonMetrics::Stripe& DaemonMetrics::Mine() {
  thread_local const size_t stripe =
      next_stripe.fetch_add(1, std::memory_order_relaxed) % kStripes;
  return stripes_[stripe];
}

void DaemonMetrics::CountRequest(Endpoint e) {
  Mine().requests[static_cast<size_t>(e)].fetch_add(1,
                                                    std::memory_order_relaxed);
}

void DaemonMetrics::CountBadRequest() {
  Mine().bad_requests.fetch_add(1, std::memory_order_relaxed);
}

void DaemonMetrics::CountDecision(Outcome o, std::chrono::nanoseconds latency) {
  Stripe& s = Mine();
  s.outcomes[static_cast<size_t>(o)].fetch_add(1, std::memory_order_relaxed);
  const int64_t ns = latency.count();
  size_t b = 0;
  while (b < kLatencyBoundsUs.size() && ns > kLatencyBoundsUs[b] * 1000) ++b;
  s.latency[b].fetch_add(1, std::memory_order_relaxed);
  s.latency_sum_ns.fetch_add(static_cast<uint64_t>(ns > 0 ? ns : 0),
                             std::memory_order_relaxed);
}

void DaemonMetrics::CountReload(bool ok) {
  (ok ? reloads_ok_ : reloads_failed_).fetch_add(1, std::memory_order_relaxed);
}

void DaemonMetrics::AppendPrometheus(const http::ServerCounters& server,
                                     const WhoamiCache* whoami,
                                     std::string& out) const {
  auto sum = [this](auto field) {
    uint64_t total = 0;
    for (const Stripe& s : stripes_) {
      total += field(s).load(std::memory_order_relaxed);
    }
    return total;
  };

  Family(out, "mxlimitd_requests_total", "counter",
         "Requests served, by endpoint.");
  for (size_t e = 0; e < static_cast<size_t>(Endpoint::kCount); ++e) {
    Sample(out, "mxlimitd_requests_total", kEndpointLabels[e],
           sum([e](const Stripe& s) -> const auto& { return s.requests[e]; }));
  }
  Family(out, "mxlimitd_decisions_total", "counter",
         "Rate-limit decisions, by result.");
  for (size_t o = 0; o < static_cast<size_t>(Outcome::kCount); ++o) {
    Sample(out, "mxlimitd_decisions_total", kOutcomeLabels[o],
           sum([o](const Stripe& s) -> const auto& { return s.outcomes[o]; }));
  }
  Family(out, "mxlimitd_bad_requests_total", "counter",
         "Decision requests answered 400: missing or malformed inputs.");
  Sample(out, "mxlimitd_bad_requests_total", "",
         sum([](const Stripe& s) -> const auto& { return s.bad_requests; }));

  Family(out, "mxlimitd_decision_duration_seconds", "histogram",
         "Time from a complete request head to its decision.");
  uint64_t cumulative = 0;
  char label[64];
  for (size_t b = 0; b <= kLatencyBoundsUs.size(); ++b) {
    cumulative +=
        sum([b](const Stripe& s) -> const auto& { return s.latency[b]; });
    std::string_view le = "le=\"+Inf\"";
    if (b < kLatencyBoundsUs.size()) {
      const int64_t us = kLatencyBoundsUs[b];
      const int n = std::snprintf(label, sizeof(label), "le=\"%g\"",
                                  static_cast<double>(us) / 1e6);
      le = std::string_view(label, static_cast<size_t>(n));
    }
    Sample(out, "mxlimitd_decision_duration_seconds_bucket", le, cumulative);
  }
  const uint64_t sum_ns =
      sum([](const Stripe& s) -> const auto& { return s.latency_sum_ns; });
  char seconds[48];
  const int n = std::snprintf(seconds, sizeof(seconds), "%.9f",
                              static_cast<double>(sum_ns) / 1e9);
  out.append("mxlimitd_decision_duration_seconds_sum ")
      .append(seconds, static_cast<size_t>(n))
      .append("\n");
  Sample(out, "mxlimitd_decision_duration_seconds_count", "", cumulative);

  // Families of one unlabelled sample each.
  struct Single {
    std::string_view name;
    std::string_view type;
    std::string_view help;
    uint64_t value;
  };
  const WhoamiCache::Counters c =
      whoami != nullptr ? whoami->counters() : WhoamiCache::Counters{};
  const Single singles[] = {
      {"mxlimitd_open_connections", "gauge", "Client connections open now.",
       server.open},
      {"mxlimitd_connections_accepted_total", "counter",
       "Connections accepted.", server.accepted},
      {"mxlimitd_connections_refused_total", "counter",
       "Connections answered 503 because --max-connections were open.",
       server.refused_over_limit},
      {"mxlimitd_request_timeouts_total", "counter",
       "Request heads not received, or responses not read, in time.",
       server.timed_out},
      {"mxlimitd_held_answers", "gauge",
       "Decision answers held now: delayed admissions (on_limit: delay).",
       server.held},
      {"mxlimitd_malformed_requests_total", "counter",
       "Requests refused by the HTTP layer (400, 413, 414, 431, 501, 505).",
       server.malformed},
      {"mxlimitd_token_cache_hits_total", "counter",
       "Access tokens found in the whoami cache.", c.hits},
      {"mxlimitd_token_cache_misses_total", "counter",
       "Access tokens not in the whoami cache (the token hash was used).",
       c.misses},
      {"mxlimitd_token_cache_entries", "gauge", "Entries in the whoami cache.",
       c.entries},
      {"mxlimitd_whoami_queue_full_total", "counter",
       "Unknown tokens not queued for whoami: the queue was full.",
       c.queue_full},
  };
  for (const Single& s : singles) {
    Family(out, s.name, s.type, s.help);
    Sample(out, s.name, "", s.value);
  }

  Family(out, "mxlimitd_reloads_total", "counter",
         "Configuration reloads (SIGHUP), by result.");
  Sample(out, "mxlimitd_reloads_total", "result=\"ok\"",
         reloads_ok_.load(std::memory_order_relaxed));
  Sample(out, "mxlimitd_reloads_total", "result=\"error\"",
         reloads_failed_.load(std::memory_order_relaxed));

  Family(out, "mxlimitd_whoami_lookups_total", "counter",
         "whoami requests to the homeserver, by result.");
  Sample(out, "mxlimitd_whoami_lookups_total", "result=\"resolved\"",
         c.resolved);
  Sample(out, "mxlimitd_whoami_lookups_total", "result=\"refused\"",
         c.rejected);
  Sample(out, "mxlimitd_whoami_lookups_total", "result=\"failed\"", c.failures);
}

void AppendFeedPrometheus(const FeedCounters& c, std::string& out) {
  Family(out, "mxlimitd_feed_lines_total", "counter",
         "Completion feed lines, by what became of them.");
  constexpr std::string_view kLineLabels[] = {
      "result=\"settled\"", "result=\"no_pending\"", "result=\"no_id\"",
      "result=\"unparsed\""};
  for (size_t i = 0; i < c.lines.size(); ++i) {
    Sample(out, "mxlimitd_feed_lines_total", kLineLabels[i], c.lines[i]);
  }
  struct Single {
    std::string_view name;
    std::string_view type;
    std::string_view help;
    uint64_t value;
  };
  const Single singles[] = {
      {"mxlimitd_feed_datagrams_total", "counter",
       "Datagrams read from the feed sockets.", c.datagrams},
      {"mxlimitd_feed_oversized_total", "counter",
       "Feed datagrams longer than 64 KiB, dropped unread.", c.oversized},
      {"mxlimitd_feed_dropped_total", "counter",
       "Feed datagrams the kernel dropped on a full UDP socket.", c.dropped},
      {"mxlimitd_feed_pending", "gauge",
       "Admitted requests waiting for their completion.", c.pending},
      {"mxlimitd_feed_pending_capacity", "gauge",
       "Most requests kept for their completion (--feed-pending).",
       c.pending_capacity},
      {"mxlimitd_feed_pending_evicted_total", "counter",
       "Kept requests dropped for room before their completion came; their "
       "leases ended by their lease time.",
       c.pending_evicted},
      {"mxlimitd_feed_pending_replaced_total", "counter",
       "Kept requests replaced by a later one with the same request id.",
       c.pending_replaced},
      {"mxlimitd_feed_pending_too_long_total", "counter",
       "Requests kept without a user ID or origin over 255 bytes.",
       c.pending_too_long},
  };
  for (const Single& s : singles) {
    Family(out, s.name, s.type, s.help);
    Sample(out, s.name, "", s.value);
  }
}

}  // namespace mxlimit::daemon
