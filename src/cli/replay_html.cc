#include "src/cli/replay_html.h"

#include <cerrno>
#include <cstring>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/version.h"
#include "src/cli/output.h"
#include "src/cli/replay_charts.h"

namespace mxlimit::cli {
namespace {

using internal::ToAbsl;
using replay::Outcome;

constexpr std::string_view kCommand = "replay";

// --- Text --------------------------------------------------------------------

// Length of the well-formed UTF-8 sequence at s[i] (Unicode table 3-7: no
// overlongs, no surrogates, nothing past U+10FFFF), or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  }
  if (n == 0 || i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0.0%";
  return absl::StrFormat("%.1f%%", 100.0 * double(part) / double(whole));
}

// --- The page's parts --------------------------------------------------------

constexpr std::string_view kStyle = R"(<style>
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  margin: 24px auto; padding: 0 16px; max-width: 1160px; color: #1d2433; background: #fff; }
h1 { font-size: 22px; margin: 0 0 6px; overflow-wrap: anywhere; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #dfe3e8; }
code, td.k { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.run { margin: 0; color: #4a5568; }
.note { color: #5f6b7a; font-size: 13px; max-width: 900px; }
.legend { list-style: none; padding: 0; margin: 6px 0; display: flex; gap: 20px; font-size: 13px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 6px; vertical-align: -1px; }
.allowed { fill: #5b9f74; background: #5b9f74; }
.shadow { fill: #e4a23a; background: #e4a23a; }
.denied { fill: #cf4b45; background: #cf4b45; }
.other { fill: #b8c0ca; background: #b8c0ca; }
svg { display: block; max-width: 100%; height: auto; }
svg text { font-size: 11px; fill: #4a5568; }
svg .grid { stroke: #e6e9ed; }
svg path { shape-rendering: crispEdges; }
svg .axis { stroke: #8a94a3; }
.panels { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 12px; }
figure { margin: 0; padding: 6px 8px; border: 1px solid #e3e6ea; border-radius: 4px; }
figcaption { font-size: 13px; font-weight: 600; overflow-wrap: anywhere; }
figcaption span { font-weight: normal; color: #5f6b7a; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 18px; }
th, td { padding: 2px 10px; text-align: left; }
th { border-bottom: 1px solid #cfd5dc; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) td { background: #f5f7f9; }
.tables { display: flex; flex-wrap: wrap; gap: 8px 40px; align-items: flex-start; }
</style>
)";

std::string RunLine(const ReplayReport::Run& run) {
  return absl::StrCat("<p class=\"run\">log <code>", EscapeHtml(run.input),
                      "</code> · format <code>", EscapeHtml(run.format),
                      "</code> · config <code>", EscapeHtml(run.config),
                      "</code></p>\n");
}

// --- Tables ------------------------------------------------------------------

std::string TotalsTable(const ReplayReport& report) {
  const ReplayReport::Totals t = report.totals();
  std::string out =
      "<div><table class=\"totals\"><thead><tr><th>requests</th><th "
      "class=\"n\">count</th><th class=\"n\">share</th></tr></thead><tbody>\n";
  const auto row = [&](std::string_view key, std::string_view label, uint64_t n,
                       bool share) {
    absl::StrAppend(&out, "<tr data-total=\"", ToAbsl(key), "\"><td>",
                    ToAbsl(label), "</td><td class=\"n\">", n,
                    "</td><td class=\"n\">",
                    share ? Percent(n, t.requests) : "", "</td></tr>\n");
  };
  row("requests", "requests", t.requests, false);
  row("allowed", "allowed", t.allowed, true);
  row("denied", "denied", t.denied, true);
  row("denied_never", "of which no wait helps", t.denied_never, true);
  row("shadow_denied", "shadow-denied (allowed)", t.shadow_denied, true);
  row("exempt", "exempt", t.exempt, true);
  row("invalid_lines", "invalid lines", t.invalid, false);
  out += "</tbody></table>\n";
  if (!report.quoted_invalid().empty()) {
    out +=
        "<p class=\"note\">The first invalid lines:</p><ul class=\"note\">\n";
    for (const ReplayReport::InvalidLine& l : report.quoted_invalid()) {
      absl::StrAppend(&out, "<li>line ", l.number, ": ", EscapeHtml(l.reason),
                      ": <code>", EscapeHtml(l.head), "</code></li>\n");
    }
    out += "</ul>\n";
  }
  return out + "</div>\n";
}

std::string PolicyTable(const LimiterStats& stats) {
  std::string out =
      "<table class=\"policies\"><thead><tr><th>per policy</th><th>scope</th>"
      "<th class=\"n\">allowed</th><th class=\"n\">denied</th><th "
      "class=\"n\">shadow</th><th class=\"n\">denied by other</th></tr>"
      "</thead><tbody>\n";
  for (const PolicyStats& p : stats.policies) {
    const PolicyCounters& c = p.counters;
    if (AppliedTo(c) == 0) continue;
    absl::StrAppend(&out, "<tr data-policy-row=\"", EscapeHtml(p.name),
                    "\"><td class=\"k\">", EscapeHtml(p.name), "</td><td>",
                    ToAbsl(ScopeName(p.scope)), "</td><td class=\"n\">",
                    c.allowed, "</td><td class=\"n\">", c.denied,
                    "</td><td class=\"n\">", c.shadow_denied,
                    "</td><td class=\"n\">", c.denied_by_other, "</td></tr>\n");
  }
  out += "</tbody></table>\n";
  return out;
}

std::string TopTable(std::string_view id, std::string_view title,
                     std::string_view unit, const replay::TopK& sketch) {
  std::string out =
      absl::StrCat("<table class=\"", ToAbsl(id), "\"><thead><tr><th>",
                   ToAbsl(title), "</th><th class=\"n\">", ToAbsl(unit),
                   "</th><th></th></tr></thead><tbody>\n");
  for (const replay::TopKEntry& e : sketch.Top(ReplayReport::kTopRows)) {
    absl::StrAppend(
        &out, "<tr><td class=\"k\">", EscapeHtml(e.item),
        "</td><td class=\"n\">", e.count, "</td><td>",
        e.error > 0 ? absl::StrCat("up to ", e.error, " fewer") : "",
        "</td></tr>\n");
  }
  out += "</tbody></table>\n";
  return out;
}

std::string StatsTables(const ReplayReport::Run& run,
                        const LimiterStats& stats) {
  std::string out =
      "<table class=\"buckets\"><thead><tr><th>tables</th><th "
      "class=\"n\">size</th><th class=\"n\">capacity</th><th "
      "class=\"n\">admissions</th><th "
      "class=\"n\">evictions</th></tr></thead><tbody>\n";
  const auto row = [&](std::string_view name, const TableStats& t) {
    absl::StrAppend(&out, "<tr><td>", ToAbsl(name), "</td><td class=\"n\">",
                    t.size, "</td><td class=\"n\">", t.capacity,
                    "</td><td class=\"n\">", t.admissions,
                    "</td><td class=\"n\">", t.evictions, "</td></tr>\n");
  };
  row("ip", stats.ip_table);
  row("user", stats.user_table);
  out += "</tbody></table>\n";
  const double rate = run.seconds > 0 ? double(run.lines) / run.seconds : 0;
  absl::StrAppend(&out,
                  absl::StrFormat("<p class=\"note\">throughput: %d lines in "
                                  "%.3f s (%.0f lines/s)</p>\n",
                                  run.lines, run.seconds, rate));
  return out;
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8Length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD: log lines need not be UTF-8
      ++i;
      continue;
    }
    const char c = text[i];
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (n == 1 && (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)) {
          out += '?';
        } else {
          out.append(text.substr(i, n));
        }
    }
    i += n;
  }
  return out;
}

ReplayHtml::ReplayHtml(size_t policies, bool shadow_policies)
    : timeline_(policies, ReplayReport::kClientCounters,
                shadow_policies ? ReplayReport::kClientCounters : 0),
      last_(policies) {}

void ReplayHtml::Record(int64_t time_ms, const Decision& d,
                        std::string_view limited,
                        std::string_view shadow_limited,
                        std::span<const PolicyCounters> counters) {
  if (!d.allowed) {
    timeline_.Add(time_ms, Outcome::kDenied);
    // Who was limited, as ReplayReport::Record counts it.
    timeline_.AddLimitedClient(limited);
  } else if (d.shadow_denied) {
    timeline_.Add(time_ms, Outcome::kShadowDenied);
    timeline_.AddLimitedClient(shadow_limited, Outcome::kShadowDenied);
  } else {
    timeline_.Add(time_ms, Outcome::kAllowed);
  }
  // Each policy that applied counted the request in one of its results
  // (PolicyCounters): the one that grew.
  static constexpr std::pair<uint64_t PolicyCounters::*, Outcome> kResults[] = {
      {&PolicyCounters::allowed, Outcome::kAllowed},
      {&PolicyCounters::shadow_denied, Outcome::kShadowDenied},
      {&PolicyCounters::denied, Outcome::kDenied},
      {&PolicyCounters::denied_by_other, Outcome::kDeniedByOther}};
  if (last_.size() != counters.size()) last_.assign(counters.size(), {});
  for (size_t id = 0; id < counters.size(); ++id) {
    const PolicyCounters& now = counters[id];
    PolicyCounters& before = last_[id];
    for (const auto& [field, outcome] : kResults) {
      for (uint64_t n = before.*field; n < now.*field; ++n) {
        timeline_.AddPolicy(static_cast<uint32_t>(id), outcome);
      }
    }
    before = now;
  }
}

std::string ReplayHtml::Page(const ReplayReport::Run& run,
                             const ReplayReport& report,
                             const LimiterStats& stats) const {
  const std::string title = EscapeHtml(absl::StrCat(
      "mxlimit replay: ", run.input, " (", run.format, ", ", run.config, ")"));
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n<title>",
      title, "</title>\n", ToAbsl(kStyle), "</head>\n<body>\n<header>\n<h1>",
      title, "</h1>\n", RunLine(run), "</header>\n");
  out += ChartSections(timeline_, stats);
  absl::StrAppend(
      &out,
      "<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"tables\">\n",
      TotalsTable(report), PolicyTable(stats),
      "</div>\n<div class=\"tables\">\n",
      TopTable("top-routes", "top routes", "requests", report.routes()),
      TopTable("top-denied-routes", "top denied routes", "denied",
               report.denied_routes()),
      TopTable("top-limited-clients", "top limited clients", "denied",
               report.limited_clients()),
      HasShadowPolicies(stats)
          ? TopTable("top-shadow-limited-clients", "top shadow-limited clients",
                     "shadow", report.shadow_limited_clients())
          : std::string(),
      "</div>\n", StatsTables(run, stats),
      "</section>\n<footer class=\"note\">", "mxlimit ", ToAbsl(kVersion),
      "</footer>\n</body>\n</html>\n");
  return out;
}

bool ReportFile::Open(const std::string& path) {
  path_ = path;
  file_.reset(std::fopen(path.c_str(), "wb"));
  if (file_ != nullptr) return true;
  PrintError(kCommand,
             absl::StrCat("error writing ", path, ": ", std::strerror(errno)));
  return false;
}

bool ReportFile::Write(std::string_view page) {
  errno = 0;
  int error = 0;
  if (std::fwrite(page.data(), 1, page.size(), file_.get()) != page.size()) {
    error = errno != 0 ? errno : EIO;
  }
  // A full disk may show only when stdio's buffer is flushed at the close.
  errno = 0;
  if (std::fclose(file_.release()) != 0 && error == 0) {
    error = errno != 0 ? errno : EIO;
  }
  if (error == 0) return true;
  PrintError(kCommand,
             absl::StrCat("error writing ", path_, ": ", std::strerror(error)));
  return false;
}

}  // namespace mxlimit::cli
