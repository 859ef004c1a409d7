#include "mxlimit/stats.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace mxlimit {
namespace {

// Label values escape backslash, double quote and newline.
std::string EscapeLabel(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void AppendTable(std::string& out, const char* table, const TableStats& t) {
  absl::StrAppend(&out, "mxlimit_table_size{table=\"", table, "\"} ", t.size,
                  "\n");
  absl::StrAppend(&out, "mxlimit_table_capacity{table=\"", table, "\"} ",
                  t.capacity, "\n");
  absl::StrAppend(&out, "mxlimit_table_admissions_total{table=\"", table,
                  "\"} ", t.admissions, "\n");
  absl::StrAppend(&out, "mxlimit_table_evictions_total{table=\"", table, "\"} ",
                  t.evictions, "\n");
  absl::StrAppend(&out, "mxlimit_table_hits_total{table=\"", table, "\"} ",
                  t.hits, "\n");
}

}  // namespace

std::string FormatPrometheus(const LimiterStats& stats) {
  std::string out;
  out +=
      "# HELP mxlimit_table_size Buckets currently held.\n"
      "# TYPE mxlimit_table_size gauge\n"
      "# HELP mxlimit_table_capacity Most buckets the table holds.\n"
      "# TYPE mxlimit_table_capacity gauge\n"
      "# HELP mxlimit_table_admissions_total Buckets created.\n"
      "# TYPE mxlimit_table_admissions_total counter\n"
      "# HELP mxlimit_table_evictions_total Least recently used buckets "
      "dropped to make room.\n"
      "# TYPE mxlimit_table_evictions_total counter\n"
      "# HELP mxlimit_table_hits_total Lookups that found a bucket.\n"
      "# TYPE mxlimit_table_hits_total counter\n";
  AppendTable(out, "ip", stats.ip_table);
  AppendTable(out, "user", stats.user_table);
  out +=
      "# HELP mxlimit_exempt_requests_total Requests neither checked nor "
      "charged.\n"
      "# TYPE mxlimit_exempt_requests_total counter\n";
  absl::StrAppend(&out, "mxlimit_exempt_requests_total ", stats.exempt, "\n");
  out +=
      "# HELP mxlimit_policy_requests_total Requests per policy and result.\n"
      "# TYPE mxlimit_policy_requests_total counter\n";
  for (const PolicyStats& p : stats.policies) {
    const std::string labels =
        absl::StrCat("policy=\"", EscapeLabel(p.name), "\",scope=\"",
                     p.scope == Scope::kIp ? "ip" : "user", "\"");
    absl::StrAppend(&out, "mxlimit_policy_requests_total{", labels,
                    ",result=\"allowed\"} ", p.counters.allowed, "\n");
    absl::StrAppend(&out, "mxlimit_policy_requests_total{", labels,
                    ",result=\"denied\"} ", p.counters.denied, "\n");
    absl::StrAppend(&out, "mxlimit_policy_requests_total{", labels,
                    ",result=\"shadow_denied\"} ", p.counters.shadow_denied,
                    "\n");
  }
  return out;
}

}  // namespace mxlimit
