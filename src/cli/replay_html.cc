#include "src/cli/replay_html.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <numeric>
#include <span>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/version.h"
#include "src/cli/output.h"

namespace mxlimit::cli {
namespace {

using internal::ToAbsl;
using replay::Outcome;
using replay::Timeline;

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

// UTC time of `ms` in strftime's `format`.
std::string FormatUtc(int64_t ms, const char* format) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  if (ms % 1000 < 0) --seconds;
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return "?";
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), format, &tm);
  return std::string(buf, n);
}

// "10 s", "2 min", "6 h", "1 d": bin widths are whole seconds.
std::string FormatWidth(int64_t ms) {
  const int64_t s = ms / 1000;
  if (s % 86400 == 0) return absl::StrCat(s / 86400, " d");
  if (s % 3600 == 0) return absl::StrCat(s / 3600, " h");
  if (s % 60 == 0) return absl::StrCat(s / 60, " min");
  return absl::StrCat(s, " s");
}

// An axis label for a rate: short, and exact for the round tick values.
std::string FormatRate(double v) {
  if (v >= 1e6) return absl::StrFormat("%gM", v / 1e6);
  if (v >= 1e4) return absl::StrFormat("%gk", v / 1e3);
  return absl::StrFormat("%g", v);
}

// The smallest 1, 2 or 5 times a power of ten that is >= x (> 0).
double NiceStep(double x) {
  const double p = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= x * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

// A tick interval for `span_ms`, giving at most about `ticks` ticks.
int64_t TickMs(int64_t span_ms, int ticks) {
  static constexpr std::array<int64_t, 19> kSeconds = {
      1,   2,    5,    10,   15,    30,    60,    120,   300,   600,
      900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800};
  for (int64_t s : kSeconds) {
    if (s * 1000 * ticks >= span_ms) return s * 1000;
  }
  int64_t ms = int64_t{604800} * 1000;  // a week, then doubling
  while (ms * ticks < span_ms) ms *= 2;
  return ms;
}

// --- Charts ------------------------------------------------------------------

// The time axis every chart of a page shares.
struct TimeAxis {
  int64_t origin_ms = 0;
  int64_t bin_ms = 1000;
  size_t bins = 0;
};

// One stacked series of a chart, bottom first.
struct Layer {
  std::string_view name;  // data-series
  std::string_view css;   // fill class
  std::span<const uint64_t> counts;
};

struct ChartSize {
  int width;
  int height;
  int x_ticks;
  int y_ticks;
};
constexpr ChartSize kMainChart = {1120, 300, 10, 5};
constexpr ChartSize kPanelChart = {360, 150, 3, 3};

constexpr int kLeft = 52, kRight = 30, kTop = 10, kBottom = 22;

struct Plot {
  ChartSize size;
  double width;   // of the plotting area
  double height;  // of the plotting area
  double y_max;   // requests per second at the top
  double X(double bin, size_t bins) const {
    return kLeft + width * bin / double(bins);
  }
  double Y(double rate) const { return kTop + height * (1 - rate / y_max); }
};

void AppendYAxis(const Plot& plot, double step, std::string* out) {
  for (double v = 0; v <= plot.y_max * (1 + 1e-9); v += step) {
    const double y = plot.Y(v);
    absl::StrAppendFormat(
        out,
        "<line class=\"grid\" x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
        "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
        kLeft, kLeft + plot.width, y, y, kLeft - 4, y + 4, FormatRate(v));
  }
}

void AppendXAxis(const Plot& plot, const TimeAxis& axis, std::string* out) {
  const int64_t span = axis.bin_ms * static_cast<int64_t>(axis.bins);
  const int64_t tick = TickMs(span, plot.size.x_ticks);
  // Dates once the log spans more than a day; times of day otherwise.
  const char* format = span <= 86'400'000       ? "%H:%M:%S"
                       : tick % 86'400'000 == 0 ? "%Y-%m-%d"
                                                : "%m-%d %H:%M";
  const double base = kTop + plot.height;
  absl::StrAppendFormat(
      out,
      "<line class=\"axis\" x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" "
      "y2=\"%.1f\"/>\n",
      kLeft, kLeft + plot.width, base, base);
  const int64_t first = axis.origin_ms + (tick - axis.origin_ms % tick) % tick;
  for (int64_t t = first; t <= axis.origin_ms + span; t += tick) {
    const double x =
        kLeft + plot.width * double(t - axis.origin_ms) / double(span);
    absl::StrAppendFormat(
        out,
        "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
        "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\" "
        "text-anchor=\"middle\">%s</text>\n",
        x, x, base, base + 4, x, base + 15, FormatUtc(t, format));
  }
}

// The outline of a cumulative series as steps, one per bin, closed along the
// baseline.
std::string StepPath(const Plot& plot, std::span<const uint64_t> cumulative,
                     double bin_seconds) {
  const size_t n = cumulative.size();
  std::string d = absl::StrFormat("M%.1f %.1f", plot.X(0, n), plot.Y(0));
  for (size_t i = 0; i < n; ++i) {
    absl::StrAppendFormat(&d, "V%.1fH%.1f",
                          plot.Y(double(cumulative[i]) / bin_seconds),
                          plot.X(double(i + 1), n));
  }
  absl::StrAppendFormat(&d, "V%.1fZ", plot.Y(0));
  return d;
}

// One chart: the layers stacked as steps (requests per second in each bin),
// each layer's raw counts in its group's data-counts.
std::string Chart(const ChartSize& size, const TimeAxis& axis,
                  std::span<const Layer> layers, std::string_view title) {
  const double bin_seconds = double(axis.bin_ms) / 1000;
  // cumulative[l][i]: layers 0..l in bin i.
  std::vector<std::vector<uint64_t>> cumulative(layers.size());
  for (size_t l = 0; l < layers.size(); ++l) {
    cumulative[l].assign(layers[l].counts.begin(), layers[l].counts.end());
    if (l > 0) {
      for (size_t i = 0; i < axis.bins; ++i) {
        cumulative[l][i] += cumulative[l - 1][i];
      }
    }
  }
  const uint64_t peak = layers.empty()
                            ? 0
                            : *std::max_element(cumulative.back().begin(),
                                                cumulative.back().end());
  const double step =
      NiceStep(std::max(double(peak) / bin_seconds, 1e-3) / size.y_ticks);
  Plot plot{size, double(size.width - kLeft - kRight),
            double(size.height - kTop - kBottom), 0};
  plot.y_max = step * std::ceil(double(peak) / bin_seconds / step - 1e-9);
  if (plot.y_max <= 0) plot.y_max = step;

  const std::string escaped_title = EscapeHtml(title);
  std::string out = absl::StrFormat(
      "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "role=\"img\" aria-label=\"%s\"><title>%s</title>\n",
      size.width, size.height, size.width, size.height, escaped_title,
      escaped_title);
  AppendYAxis(plot, step, &out);
  // Drawn top layer first: each cumulative outline covers the ones above it.
  for (size_t l = layers.size(); l-- > 0;) {
    absl::StrAppend(&out, "<g class=\"series\" data-series=\"",
                    ToAbsl(layers[l].name), "\" data-counts=\"",
                    absl::StrJoin(layers[l].counts, ","), "\"><path class=\"",
                    ToAbsl(layers[l].css), "\" d=\"",
                    StepPath(plot, cumulative[l], bin_seconds), "\"/></g>\n");
  }
  AppendXAxis(plot, axis, &out);
  out += "</svg>\n";
  return out;
}

// The three outcomes of `series(outcome)` as layers, bottom first.
template <typename SeriesOf>
std::array<Layer, 3> OutcomeLayers(SeriesOf series) {
  return {Layer{"allowed", "allowed", series(Outcome::kAllowed)},
          Layer{"shadow-denied", "shadow", series(Outcome::kShadowDenied)},
          Layer{"denied", "denied", series(Outcome::kDenied)}};
}

// A policy's four results as layers, bottom first.
template <typename SeriesOf>
std::array<Layer, 4> PolicyLayers(SeriesOf series) {
  return {Layer{"allowed", "allowed", series(Outcome::kAllowed)},
          Layer{"shadow-denied", "shadow", series(Outcome::kShadowDenied)},
          Layer{"denied", "denied", series(Outcome::kDenied)},
          Layer{"denied-by-other", "other", series(Outcome::kDeniedByOther)}};
}

uint64_t Sum(std::span<const uint64_t> v) {
  return std::accumulate(v.begin(), v.end(), uint64_t{0});
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

constexpr std::string_view kLegend =
    "<ul class=\"legend\">"
    "<li><span class=\"swatch allowed\"></span>allowed</li>"
    "<li><span class=\"swatch shadow\"></span>shadow-denied (allowed; a "
    "shadow-mode policy would deny)</li>"
    "<li><span class=\"swatch denied\"></span>denied</li></ul>\n";

constexpr std::string_view kPolicyLegend =
    "<ul class=\"legend\">"
    "<li><span class=\"swatch allowed\"></span>allowed (charged to the "
    "policy)</li>"
    "<li><span class=\"swatch shadow\"></span>shadow-denied</li>"
    "<li><span class=\"swatch denied\"></span>denied by the policy</li>"
    "<li><span class=\"swatch other\"></span>denied by another policy</li>"
    "</ul>\n";

std::string RunLine(const ReplayReport::Run& run) {
  return absl::StrCat("<p class=\"run\">log <code>", EscapeHtml(run.input),
                      "</code> · format <code>", EscapeHtml(run.format),
                      "</code> · config <code>", EscapeHtml(run.config),
                      "</code></p>\n");
}

std::string AxisNote(const TimeAxis& axis) {
  const int64_t end =
      axis.origin_ms + axis.bin_ms * static_cast<int64_t>(axis.bins);
  return absl::StrCat(
      "<p class=\"note\">Time in UTC from ",
      FormatUtc(axis.origin_ms, "%Y-%m-%d %H:%M:%S"), " to ",
      FormatUtc(end, "%Y-%m-%d %H:%M:%S"), ", in ", axis.bins, " bins of ",
      FormatWidth(axis.bin_ms),
      " (the first and last may be only partly covered by the log). The "
      "height of a bin is its requests divided by its width: requests per "
      "second.</p>\n");
}

// A policy panel: one policy's slot, or several folded into "other".
struct PolicyPanel {
  std::string caption;
  std::string name;
  std::array<std::vector<uint64_t>, replay::kPolicyOutcomes> series;
  std::array<uint64_t, replay::kPolicyOutcomes> totals{};
};

std::string PolicyCaption(const PolicyStats& p) {
  std::string s = absl::StrCat(p.scope == Scope::kIp ? "ip" : "user");
  if (p.layer != kDefaultLayer) absl::StrAppend(&s, ", layer ", p.layer);
  if (p.shadow) s += ", shadow mode";
  return s;
}

void AddSlot(const Timeline& t, size_t slot, PolicyPanel* panel) {
  for (size_t o = 0; o < replay::kPolicyOutcomes; ++o) {
    const std::span<const uint64_t> s =
        t.PolicySeries(slot, static_cast<Outcome>(o));
    std::vector<uint64_t>& into = panel->series[o];
    if (into.empty()) into.assign(s.size(), 0);
    for (size_t i = 0; i < s.size(); ++i) into[i] += s[i];
    panel->totals[o] += Sum(s);
  }
}

// The panels: the kPolicyPanels policies with the most denials (then shadow
// denials, then allowed, then denied by another), then the rest folded into
// one.
std::vector<PolicyPanel> PolicyPanels(const Timeline& t,
                                      const LimiterStats& stats) {
  std::vector<PolicyPanel> panels;
  for (size_t slot = 0; slot < t.policy_slots(); ++slot) {
    PolicyPanel& panel = panels.emplace_back();
    const uint32_t id = t.policy_of_slot(slot);
    if (id < stats.policies.size()) {
      panel.name = stats.policies[id].name;
      panel.caption = PolicyCaption(stats.policies[id]);
    }
    AddSlot(t, slot, &panel);
  }
  const auto key = [](const PolicyPanel& p) {
    return std::make_tuple(p.totals[2], p.totals[1], p.totals[0], p.totals[3]);
  };
  std::stable_sort(panels.begin(), panels.end(),
                   [&](const PolicyPanel& a, const PolicyPanel& b) {
                     return key(a) > key(b);
                   });
  if (panels.size() <= ReplayHtml::kPolicyPanels && !t.has_other_policies()) {
    return panels;
  }
  PolicyPanel other;
  other.name = "other policies";
  size_t folded = 0;
  for (size_t i = ReplayHtml::kPolicyPanels; i < panels.size(); ++i, ++folded) {
    for (size_t o = 0; o < replay::kPolicyOutcomes; ++o) {
      std::vector<uint64_t>& into = other.series[o];
      if (into.empty()) into.assign(panels[i].series[o].size(), 0);
      for (size_t b = 0; b < into.size(); ++b) {
        into[b] += panels[i].series[o][b];
      }
      other.totals[o] += panels[i].totals[o];
    }
  }
  if (t.has_other_policies()) AddSlot(t, Timeline::kOtherPolicies, &other);
  other.caption = absl::StrCat(
      folded, " policies",
      t.has_other_policies() ? " and every policy past the first 32" : "");
  panels.resize(std::min(panels.size(), ReplayHtml::kPolicyPanels));
  panels.push_back(std::move(other));
  return panels;
}

std::string PolicySection(const Timeline& t, const TimeAxis& axis,
                          const LimiterStats& stats) {
  std::string out =
      "<section id=\"policies\">\n<h2>Per policy</h2>\n<p class=\"note\">"
      "Each panel is one policy's own results, as its row of the per-policy "
      "table below counts them: every request the policy applied to is "
      "allowed (charged to it), shadow-denied (a shadow-mode policy that "
      "would have denied it), denied by it, or denied by another policy (it "
      "did not deny, another did; for a shadow-mode policy: another shadow "
      "policy would have). A request counts in every policy that applied to "
      "it. Each panel has its own scale.</p>\n";
  out += kPolicyLegend;
  out += "<div class=\"panels\">\n";
  for (const PolicyPanel& p : PolicyPanels(t, stats)) {
    const std::array<Layer, 4> layers = PolicyLayers([&](Outcome o) {
      return std::span<const uint64_t>(p.series[static_cast<size_t>(o)]);
    });
    absl::StrAppend(&out, "<figure class=\"panel\" data-policy=\"",
                    EscapeHtml(p.name), "\"><figcaption>", EscapeHtml(p.name),
                    " <span>(", EscapeHtml(p.caption), ") allowed ",
                    p.totals[0], ", shadow-denied ", p.totals[1], ", denied ",
                    p.totals[2], ", denied by other ", p.totals[3],
                    "</span></figcaption>\n",
                    Chart(kPanelChart, axis, layers, p.name), "</figure>\n");
  }
  out += "</div>\n</section>\n";
  return out;
}

// The client panels of one sketch: denials (`outcome` kDenied) or shadow
// denials (kShadowDenied) per second of its top clients.
std::string ClientPanels(const Timeline& t, const TimeAxis& axis,
                         Outcome outcome) {
  const bool shadow = outcome == Outcome::kShadowDenied;
  const std::string_view what = shadow ? "shadow denials" : "denials";
  std::string out = "<div class=\"panels\">\n";
  for (const replay::TopKEntry& e :
       t.TopClients(ReplayReport::kTopRows, outcome)) {
    const Layer layer{shadow ? "shadow-denied" : "denied",
                      shadow ? "shadow" : "denied",
                      t.ClientSeries(e.counter, outcome)};
    std::string exactness = absl::StrCat("all ", ToAbsl(what), " drawn");
    if (e.error > 0) {
      exactness = absl::StrCat(
          "drawn from ",
          FormatUtc(t.ClientSinceMs(e.counter, outcome), "%H:%M:%S"),
          "; up to ", e.error, " earlier ", ToAbsl(what), " not drawn");
    }
    absl::StrAppend(
        &out, "<figure class=\"panel\" ",
        shadow ? "data-shadow-client" : "data-client", "=\"",
        EscapeHtml(e.item), "\" data-count=\"", e.count, "\" data-error=\"",
        e.error, "\"><figcaption>", EscapeHtml(e.item), " <span>",
        shadow ? "shadow-denied " : "denied ", e.count, " (", exactness,
        ")</span></figcaption>\n",
        Chart(kPanelChart, axis, {&layer, 1}, e.item), "</figure>\n");
  }
  out += "</div>\n";
  return out;
}

std::string ClientSection(const Timeline& t, const TimeAxis& axis,
                          const LimiterStats& stats) {
  const bool shadow_policies = HasShadowPolicies(stats);
  const bool shadow_clients = !t.TopClients(1, Outcome::kShadowDenied).empty();
  std::string out =
      "<section id=\"clients\">\n<h2>Top limited clients</h2>\n<p "
      "class=\"note\">Denials per second of the clients with the most "
      "denials (an address or network for per-IP policies, a user ID for "
      "per-user ones). A client found only after the sketch of "
      "limited clients was full is drawn from when it was found; its caption "
      "says how many earlier denials the chart leaves out.</p>\n";
  if (!t.TopClients(1).empty()) {
    out += ClientPanels(t, axis, Outcome::kDenied);
  } else if (shadow_clients) {
    out +=
        "<p>No client was denied. Shadow-mode policies would have limited "
        "the clients of the next section.</p>\n";
  } else {
    out += "<p>No client was denied.</p>\n";
  }
  out += "</section>\n";
  if (!shadow_policies) return out;
  out +=
      "<section id=\"shadow-clients\">\n<h2>Top clients shadow policies "
      "would limit</h2>\n<p class=\"note\">Shadow denials per second of "
      "the clients with the most: requests that went through but that a "
      "shadow-mode policy would have denied, charged to who that policy "
      "limits (an address or network for a per-IP policy, a user ID for a "
      "per-user one). Under a top-level <code>shadow_mode: true</code> these "
      "are the denials enforcing the same file would make (when several "
      "policies would deny one request, the first in resolution order names "
      "the client, where enforcement names the one with the longest "
      "wait).</p>\n";
  out += shadow_clients ? ClientPanels(t, axis, Outcome::kShadowDenied)
                        : "<p>No client would have been limited.</p>\n";
  out += "</section>\n";
  return out;
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
                    p.scope == Scope::kIp ? "ip" : "user",
                    "</td><td class=\"n\">", c.allowed, "</td><td class=\"n\">",
                    c.denied, "</td><td class=\"n\">", c.shadow_denied,
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
  const TimeAxis axis{timeline_.origin_ms(), timeline_.bin_ms(),
                      timeline_.bins()};
  out += "<section id=\"overview\">\n<h2>Requests per second</h2>\n";
  if (axis.bins == 0) {
    out += "<p>No requests in the log.</p>\n</section>\n";
  } else {
    const std::array<Layer, 3> layers =
        OutcomeLayers([&](Outcome o) { return timeline_.Series(o); });
    absl::StrAppend(
        &out, ToAbsl(kLegend), Chart(kMainChart, axis, layers, "all requests"),
        AxisNote(axis), "</section>\n", PolicySection(timeline_, axis, stats),
        ClientSection(timeline_, axis, stats));
  }
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
