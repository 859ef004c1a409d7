// -----------------------------------------------------------------------------
// File: cli/replay_charts.h
// -----------------------------------------------------------------------------
//
// The charts of `mxlimit replay --report` (replay_html.h has the page and
// its tables): inline SVG, each series' raw per-bin counts in its
// `data-counts`, every string from the log or the config escaped.

#ifndef MXLIMIT_CLI_REPLAY_CHARTS_H_
#define MXLIMIT_CLI_REPLAY_CHARTS_H_

#include <string>

#include "mxlimit/stats.h"
#include "src/replay/timeline.h"

namespace mxlimit::cli {

// ChartSections()
//
// The page's chart sections for `timeline`: requests per second stacked by
// outcome, then each policy's own results (the ReplayHtml::kPolicyPanels
// with the most denials, the rest folded into one panel), then the top
// limited clients and, when `stats` has shadow-mode policies, the clients
// they would have limited. A timeline with no requests gives the first
// section alone, saying so.
std::string ChartSections(const replay::Timeline& timeline,
                          const LimiterStats& stats);

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_REPLAY_CHARTS_H_
