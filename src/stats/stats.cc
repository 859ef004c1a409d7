#include "mxlimit/stats.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit {
namespace {

using internal::ToAbsl;

enum class Flavor : uint8_t { kText, kOpenMetrics };
enum class Type : uint8_t { kGauge, kCounter, kInfo };

// Label values escape backslash, double quote and newline (the same three in
// both formats). Policy names cannot hold them, but a hand-built
// LimiterStats can, and route keys are not ours to promise about.
void AppendEscaped(std::string& out, std::string_view value) {
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
}

// Writes one family at a time: `Begin` emits its HELP and TYPE lines, then
// `Sample` each sample. The two formats differ only in names: the text
// format names a counter family after its samples (`x_total`) and has no
// info type (a gauge `x_info`); OpenMetrics names both families `x`.
class Writer {
 public:
  explicit Writer(Flavor flavor) : flavor_(flavor) {}

  // `base` is the name without `_total` / `_info`.
  void Begin(std::string_view base, Type type, std::string_view help) {
    sample_name_ = std::string(base);
    if (type == Type::kCounter) sample_name_ += "_total";
    if (type == Type::kInfo) sample_name_ += "_info";
    const bool om = flavor_ == Flavor::kOpenMetrics;
    const std::string_view family = om ? base : sample_name_;
    std::string_view type_name = "gauge";
    if (type == Type::kCounter) type_name = "counter";
    if (type == Type::kInfo && om) type_name = "info";
    absl::StrAppend(&out_, "# HELP ", ToAbsl(family), " ", ToAbsl(help), "\n",
                    "# TYPE ", ToAbsl(family), " ", ToAbsl(type_name), "\n");
  }

  // A label list being built: Label("policy", name).Label(...).
  Writer& Label(std::string_view name, std::string_view value) {
    labels_ += labels_.empty() ? "{" : ",";
    absl::StrAppend(&labels_, ToAbsl(name), "=\"");
    AppendEscaped(labels_, value);
    labels_ += '"';
    return *this;
  }

  // One sample of the current family with the labels given since the last.
  void Sample(uint64_t value) {
    absl::StrAppend(&out_, sample_name_, labels_, labels_.empty() ? "" : "}",
                    " ", value, "\n");
    labels_.clear();
  }

  std::string Finish() && {
    if (flavor_ == Flavor::kOpenMetrics) out_ += "# EOF\n";
    return std::move(out_);
  }

 private:
  Flavor flavor_;
  std::string out_;
  std::string sample_name_;
  std::string labels_;
};

void WriteTables(Writer& w, const LimiterStats& s) {
  struct Column {
    const char* base;
    Type type;
    const char* help;
    uint64_t TableStats::*field;
  };
  static constexpr Column kColumns[] = {
      {"mxlimit_table_size", Type::kGauge, "Buckets currently held.",
       &TableStats::size},
      {"mxlimit_table_capacity", Type::kGauge, "Most buckets the table holds.",
       &TableStats::capacity},
      {"mxlimit_table_admissions", Type::kCounter, "Buckets created.",
       &TableStats::admissions},
      {"mxlimit_table_evictions", Type::kCounter,
       "Least recently used buckets dropped to make room.",
       &TableStats::evictions},
      {"mxlimit_table_hits", Type::kCounter, "Lookups that found a bucket.",
       &TableStats::hits},
  };
  for (const Column& c : kColumns) {
    w.Begin(c.base, c.type, c.help);
    w.Label("table", "ip").Sample(s.ip_table.*c.field);
    w.Label("table", "user").Sample(s.user_table.*c.field);
    w.Label("table", "origin").Sample(s.origin_table.*c.field);
    w.Label("table", "room").Sample(s.room_table.*c.field);
    w.Label("table", "target").Sample(s.target_table.*c.field);
    if (c.field != &TableStats::hits) {
      w.Label("table", "leases").Sample(s.lease_table.*c.field);
    }
  }
  w.Begin("mxlimit_leases_released", Type::kCounter,
          "In-flight leases given back by Release.");
  w.Sample(s.leases_released);
  w.Begin("mxlimit_leases_expired", Type::kCounter,
          "In-flight leases that ended by their lease time.");
  w.Sample(s.leases_expired);
}

void WritePolicies(Writer& w, const LimiterStats& s) {
  w.Begin("mxlimit_policy", Type::kInfo,
          "Each policy in force: its layer, scope, mode, rate and burst.");
  for (const PolicyStats& p : s.policies) {
    w.Label("policy", p.name)
        .Label("layer", p.layer)
        .Label("scope", ScopeName(p.scope))
        .Label("mode", p.shadow ? "shadow" : "enforce")
        .Label("builtin", p.builtin ? "true" : "false");
    if (p.rate.kind() == Rate::Kind::kLimited) {
      w.Label("rate", absl::StrCat(p.rate.requests_per_unit(), "/",
                                   ToAbsl(TimeUnitName(p.rate.unit()))))
          .Label("burst", absl::StrCat(p.rate.burst()));
    } else {
      w.Label("rate", p.rate.unlimited() ? "unlimited" : "blocked");
    }
    w.Sample(1);
  }

  w.Begin("mxlimit_policy_requests", Type::kCounter,
          "Requests per policy and result (each request a policy applied "
          "to counts once).");
  static constexpr std::pair<const char*, uint64_t PolicyCounters::*>
      kResults[] = {{"allowed", &PolicyCounters::allowed},
                    {"denied", &PolicyCounters::denied},
                    {"shadow_denied", &PolicyCounters::shadow_denied},
                    {"denied_by_other", &PolicyCounters::denied_by_other}};
  for (const PolicyStats& p : s.policies) {
    for (const auto& [result, field] : kResults) {
      w.Label("policy", p.name)
          .Label("scope", ScopeName(p.scope))
          .Label("result", result)
          .Sample(p.counters.*field);
    }
  }

  w.Begin("mxlimit_policy_never_denials", Type::kCounter,
          "Denials no wait would lift (cost over the burst, or a blocked "
          "route), also counted as denied.");
  for (const PolicyStats& p : s.policies) {
    w.Label("policy", p.name)
        .Label("scope", ScopeName(p.scope))
        .Sample(p.counters.never);
  }
}

std::string Format(const LimiterStats& s, Flavor flavor) {
  Writer w(flavor);
  WriteTables(w, s);
  w.Begin("mxlimit_exempt_requests", Type::kCounter,
          "Requests neither checked nor charged.");
  w.Sample(s.exempt);
  WritePolicies(w, s);
  w.Begin("mxlimit_route_denials", Type::kCounter,
          "Denied requests per route key (routes with a denial).");
  for (const RouteDenials& r : s.route_denials) {
    w.Label("route", r.route).Sample(r.denied);
  }
  w.Begin("mxlimit_fallback_decisions", Type::kCounter,
          "Decisions on requests that matched no known route.");
  w.Label("result", "allowed").Sample(s.fallback_allowed);
  w.Label("result", "denied").Sample(s.fallback_denied);
  return std::move(w).Finish();
}

}  // namespace

std::string FormatPrometheus(const LimiterStats& stats) {
  return Format(stats, Flavor::kText);
}

std::string FormatOpenMetrics(const LimiterStats& stats) {
  return Format(stats, Flavor::kOpenMetrics);
}

}  // namespace mxlimit
