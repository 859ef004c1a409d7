// mxlimit/shared_limiter.h's FormatStorePrometheus: the store's metric
// families, beside the limiter's (stats.cc). Built into mxlimit::redis, which
// declares it.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/shared_limiter.h"

namespace mxlimit {

std::string FormatStorePrometheus(const SharedStoreStats& s) {
  std::string out;
  absl::StrAppend(
      &out,
      "# HELP mxlimit_store_decisions_total Checks decided by the store, by "
      "how.\n",
      "# TYPE mxlimit_store_decisions_total counter\n",
      "mxlimit_store_decisions_total{result=\"store\"} ", s.store_decisions,
      "\n", "mxlimit_store_decisions_total{result=\"local_deny\"} ",
      s.local_denials, "\n",
      "mxlimit_store_decisions_total{result=\"fallback_timeout\"} ",
      s.fallback_timeout, "\n",
      "mxlimit_store_decisions_total{result=\"fallback_error\"} ",
      s.fallback_error, "\n",
      "mxlimit_store_decisions_total{result=\"fallback_unavailable\"} ",
      s.fallback_unavailable, "\n",
      "mxlimit_store_decisions_total{result=\"fallback_breaker_open\"} ",
      s.fallback_breaker_open, "\n");
  auto family = [&](std::string_view type, std::string_view name,
                    std::string_view help, uint64_t value) {
    absl::StrAppend(&out, "# HELP ", internal::ToAbsl(name), " ",
                    internal::ToAbsl(help), "\n# TYPE ", internal::ToAbsl(name),
                    " ", internal::ToAbsl(type), "\n", internal::ToAbsl(name),
                    " ", value, "\n");
  };
  auto counter = [&](std::string_view name, std::string_view help,
                     uint64_t value) { family("counter", name, help, value); };
  auto gauge = [&](std::string_view name, std::string_view help,
                   uint64_t value) { family("gauge", name, help, value); };
  counter("mxlimit_store_late_replies_total",
          "Store answers that came after their check had fallen back.",
          s.late_replies);
  counter("mxlimit_store_refunds_total", "Charges given back to the store.",
          s.refunds);
  counter("mxlimit_store_sync_batches_total",
          "Approximate-mode batches sent to the store.", s.sync_batches);
  counter("mxlimit_store_sync_dropped_total",
          "Approximate-mode charges dropped (pending table full).",
          s.sync_dropped);
  counter("mxlimit_store_mirror_resets_total",
          "Times the mirror dropped its shared buckets (store lost state).",
          s.mirror_resets);
  counter("mxlimit_store_script_reloads_total",
          "Scripts loaded again after the store forgot them (NOSCRIPT).",
          s.script_reloads);
  counter("mxlimit_store_reconnects_total",
          "Connections to the store made again.", s.reconnects);
  gauge("mxlimit_store_connected", "1 while a store connection is up.",
        s.connected ? 1 : 0);
  gauge("mxlimit_store_breaker_open",
        "1 while the circuit breaker sends checks to the local fallback.",
        s.breaker_open ? 1 : 0);
  gauge("mxlimit_store_in_flight", "Store operations sent, not yet answered.",
        s.in_flight);
  return out;
}

}  // namespace mxlimit
