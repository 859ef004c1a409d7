#include "src/cli/replay_report.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/cli/json_writer.h"

namespace mxlimit::cli {
namespace {

using internal::ToAbsl;

// Sketch sizes: enough counters that the top 10 are exact on any realistic
// log, bounded whatever the number of distinct routes or clients.
constexpr size_t kRouteCounters = 512;

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0.0%";
  return absl::StrFormat("%.1f%%", 100.0 * double(part) / double(whole));
}

}  // namespace

bool HasShadowPolicies(const LimiterStats& stats) {
  return std::any_of(stats.policies.begin(), stats.policies.end(),
                     [](const PolicyStats& p) { return p.shadow; });
}

ReplayReport::ReplayReport()
    : routes_(kRouteCounters),
      denied_routes_(kRouteCounters),
      limited_clients_(kClientCounters),
      shadow_limited_clients_(kClientCounters) {}

void ReplayReport::Record(const Decision& d, std::string_view limited,
                          std::string_view shadow_limited) {
  ++requests_;
  routes_.Add(d.route_key);
  if (d.exempt) ++exempt_;
  if (d.allowed) {
    ++allowed_;
    if (d.shadow_denied) {
      ++shadow_denied_;
      shadow_limited_clients_.Add(shadow_limited);
    }
    return;
  }
  ++denied_;
  if (d.never) ++denied_never_;
  denied_routes_.Add(d.route_key);
  limited_clients_.Add(limited);
}

void ReplayReport::Invalid(uint64_t line_number, std::string_view reason,
                           std::string_view head) {
  ++invalid_;
  if (quoted_invalid_.size() < kQuotedInvalidLines) {
    std::string text(head.substr(0, 80));
    for (char& c : text) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    quoted_invalid_.push_back(
        {line_number, std::string(reason), std::move(text)});
  }
}

std::string ReplayReport::Text(const Run& run,
                               const LimiterStats& stats) const {
  std::string out;
  const std::string prefix = run.prefix.empty()
                                 ? std::string()
                                 : absl::StrCat(" (", run.prefix, " prefix)");
  absl::StrAppend(&out, "mxlimit replay: ", run.input, " (", run.format, prefix,
                  ", ", run.config, ")\n\n");
  absl::StrAppend(
      &out,
      absl::StrFormat("requests       %10d\n"
                      "allowed        %10d  %s\n"
                      "denied         %10d  %s\n"
                      "shadow-denied  %10d  %s  (allowed; a shadow-mode policy "
                      "would deny)\n"
                      "exempt         %10d\n"
                      "invalid lines  %10d\n",
                      requests_, allowed_, Percent(allowed_, requests_),
                      denied_, Percent(denied_, requests_), shadow_denied_,
                      Percent(shadow_denied_, requests_), exempt_, invalid_));
  for (const InvalidLine& l : quoted_invalid_) {
    absl::StrAppend(&out, "  line ", l.number, ": ", l.reason, ": ", l.head,
                    "\n");
  }

  out +=
      "\nper policy                      scope    allowed     denied  shadow"
      "  denied-by-other\n";
  for (const PolicyStats& p : stats.policies) {
    const PolicyCounters& c = p.counters;
    if (AppliedTo(c) == 0) continue;
    absl::StrAppend(
        &out,
        absl::StrFormat("  %-30s %-5s %10d %10d %7d %16d\n", ToAbsl(p.name),
                        ToAbsl(ScopeName(p.scope)), c.allowed, c.denied,
                        c.shadow_denied, c.denied_by_other));
  }

  auto top = [&](const char* title, const char* unit,
                 const replay::TopK& sketch) {
    const std::vector<replay::TopKEntry> rows = sketch.Top(kTopRows);
    size_t width = 58;  // wide enough for most route keys
    for (const replay::TopKEntry& e : rows)
      width = std::max(width, e.item.size());
    absl::StrAppend(&out,
                    absl::StrFormat("\n%-*s %10s\n", width + 2, title, unit));
    for (const replay::TopKEntry& e : rows) {
      // Once the sketch is full a count may overestimate; say by how much.
      absl::StrAppend(&out,
                      absl::StrFormat("  %-*s %10d", width, e.item, e.count));
      if (e.error > 0) absl::StrAppend(&out, "  (up to ", e.error, " fewer)");
      out += "\n";
    }
  };
  top("top routes", "requests", routes_);
  top("top denied routes", "denied", denied_routes_);
  top("top limited clients", "denied", limited_clients_);
  if (HasShadowPolicies(stats)) {
    top("top shadow-limited clients", "shadow", shadow_limited_clients_);
  }

  absl::StrAppend(
      &out, absl::StrFormat(
                "\ntables         size   capacity  admissions  evictions\n"
                "  ip    %10d %10d  %10d %10d\n"
                "  user  %10d %10d  %10d %10d\n",
                stats.ip_table.size, stats.ip_table.capacity,
                stats.ip_table.admissions, stats.ip_table.evictions,
                stats.user_table.size, stats.user_table.capacity,
                stats.user_table.admissions, stats.user_table.evictions));
  const double rate = run.seconds > 0 ? double(run.lines) / run.seconds : 0;
  absl::StrAppend(
      &out,
      absl::StrFormat("\nthroughput     %d lines in %.3f s (%.0f lines/s)\n",
                      run.lines, run.seconds, rate));
  return out;
}

std::string ReplayReport::Json(const Run& run,
                               const LimiterStats& stats) const {
  JsonWriter w;
  w.BeginObject();
  w.Key("input").String(run.input);
  w.Key("format").String(run.format);
  if (!run.prefix.empty()) w.Key("prefix").String(run.prefix);
  w.Key("config").String(run.config);
  w.Key("requests").Uint(requests_);
  w.Key("allowed").Uint(allowed_);
  w.Key("denied").Uint(denied_);
  w.Key("denied_never").Uint(denied_never_);
  w.Key("shadow_denied").Uint(shadow_denied_);
  w.Key("exempt").Uint(exempt_);
  w.Key("invalid_lines").Uint(invalid_);
  w.Key("invalid_examples").BeginArray();
  for (const InvalidLine& l : quoted_invalid_) {
    w.BeginObject().Key("line").Uint(l.number).Key("reason").String(l.reason);
    w.Key("text").String(l.head).EndObject();
  }
  w.EndArray();
  w.Key("policies").BeginArray();
  for (const PolicyStats& p : stats.policies) {
    w.BeginObject().Key("name").String(p.name);
    w.Key("scope").String(ScopeName(p.scope));
    w.Key("builtin").Bool(p.builtin);
    w.Key("allowed").Uint(p.counters.allowed);
    w.Key("denied").Uint(p.counters.denied);
    w.Key("shadow_denied").Uint(p.counters.shadow_denied);
    w.Key("denied_by_other").Uint(p.counters.denied_by_other).EndObject();
  }
  w.EndArray();
  auto top = [&](const char* key, const replay::TopK& sketch) {
    w.Key(key).BeginArray();
    for (const replay::TopKEntry& e : sketch.Top(kTopRows)) {
      w.BeginObject().Key("key").String(e.item).Key("count").Uint(e.count);
      w.Key("max_overcount").Uint(e.error).EndObject();
    }
    w.EndArray();
  };
  top("top_routes", routes_);
  top("top_denied_routes", denied_routes_);
  top("top_limited_clients", limited_clients_);
  top("top_shadow_limited_clients", shadow_limited_clients_);
  auto table = [&](const char* key, const TableStats& t) {
    w.Key(key).BeginObject();
    w.Key("size").Uint(t.size).Key("capacity").Uint(t.capacity);
    w.Key("admissions").Uint(t.admissions).Key("evictions").Uint(t.evictions);
    w.EndObject();
  };
  w.Key("tables").BeginObject();
  table("ip", stats.ip_table);
  table("user", stats.user_table);
  w.EndObject();
  w.Key("lines").Uint(run.lines);
  w.Key("seconds").Double(run.seconds);
  w.Key("lines_per_second")
      .Double(run.seconds > 0 ? double(run.lines) / run.seconds : 0);
  w.EndObject();
  return w.str() + "\n";
}

}  // namespace mxlimit::cli
