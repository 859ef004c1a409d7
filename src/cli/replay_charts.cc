#include "src/cli/replay_charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <numeric>
#include <span>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/cli/replay_html.h"
#include "src/cli/replay_report.h"

namespace mxlimit::cli {
namespace {

using internal::ToAbsl;
using replay::Outcome;
using replay::Timeline;

// --- Axis text ---------------------------------------------------------------

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

// --- The chart sections ------------------------------------------------------

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
  std::string s = absl::StrCat(internal::ToAbsl(ScopeName(p.scope)));
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

}  // namespace

std::string ChartSections(const Timeline& timeline, const LimiterStats& stats) {
  const TimeAxis axis{timeline.origin_ms(), timeline.bin_ms(), timeline.bins()};
  std::string out = "<section id=\"overview\">\n<h2>Requests per second</h2>\n";
  if (axis.bins == 0) {
    out += "<p>No requests in the log.</p>\n</section>\n";
    return out;
  }
  const std::array<Layer, 3> layers =
      OutcomeLayers([&](Outcome o) { return timeline.Series(o); });
  absl::StrAppend(
      &out, ToAbsl(kLegend), Chart(kMainChart, axis, layers, "all requests"),
      AxisNote(axis), "</section>\n", PolicySection(timeline, axis, stats),
      ClientSection(timeline, axis, stats));
  return out;
}

}  // namespace mxlimit::cli
