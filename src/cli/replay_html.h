// -----------------------------------------------------------------------------
// File: cli/replay_html.h
// -----------------------------------------------------------------------------
//
// `mxlimit replay --report FILE.html`: one self-contained HTML page (inline
// SVG and CSS; no script, no font, nothing fetched) that shows what a config
// would do with a log:
//   - requests per second over the log's time, stacked as allowed,
//     shadow-denied and denied;
//   - each policy's own results over time, as its row of the per-policy
//     table counts them: allowed, shadow-denied, denied and denied by
//     another policy (small multiples: the 12 policies with the most
//     denials, then shadow denials, the rest folded into one "other
//     policies" panel);
//   - denials per second of the top limited clients and, when shadow-mode
//     policies are in force, shadow denials per second of the clients they
//     would have limited (so an observe-only run shows who enforcement
//     would limit);
//   - the tables of the terminal summary.
// Its title names the log, the format and the config, so that two reports
// of the same log under two configs can be told apart side by side.
//
// Every chart's raw per-bin counts are in the page (`data-counts` on each
// series), so a test, or a reader, can check them against the summary.
// Every string from the log or the config is escaped.
//
// Memory is fixed whatever the log's length (see replay/timeline.h).
//
// Example:
//   ReplayHtml html(limiter.policies().size(), shadow_policies);
//   for (...) {
//     html.Record(time_ms, decision, limited, shadow_limited,
//                 limiter.PolicyCounts());
//   }
//   ReportFile file;
//   if (!file.Open(path)) return kExitFinding;
//   file.Write(html.Page(run, report, limiter.Stats()));

#ifndef MXLIMIT_CLI_REPLAY_HTML_H_
#define MXLIMIT_CLI_REPLAY_HTML_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/decision.h"
#include "mxlimit/stats.h"
#include "src/cli/replay_report.h"
#include "src/replay/timeline.h"

namespace mxlimit::cli {

// EscapeHtml()
//
// `text` safe inside HTML text and quoted attribute values: `& < > " '` as
// character references, control characters as '?', bytes that are not UTF-8
// as U+FFFD.
std::string EscapeHtml(std::string_view text);

class ReplayHtml {
 public:
  // Policy panels shown; the others are summed in an "other policies" one.
  static constexpr size_t kPolicyPanels = 12;

  // `policies`: the size of the limiter's policy set; `shadow_policies`:
  // whether any of them is in shadow mode (only then are the clients they
  // would have limited kept and drawn).
  ReplayHtml(size_t policies, bool shadow_policies);

  // One checked request at `time_ms` (the replay's clock). `limited` and
  // `shadow_limited` are what ReplayReport::Record was given. `counters`
  // are the limiter's per-policy counters after the request (indexed by
  // PolicyId): what each policy's grew by is that policy's result for it.
  void Record(int64_t time_ms, const Decision& decision,
              std::string_view limited, std::string_view shadow_limited,
              std::span<const PolicyCounters> counters);

  // The page.
  std::string Page(const ReplayReport::Run& run, const ReplayReport& report,
                   const LimiterStats& stats) const;

 private:
  replay::Timeline timeline_;
  // The counters of the previous Record (allocated once).
  std::vector<PolicyCounters> last_;
};

// ReportFile
//
// The page's file, opened before the replay so that a path that cannot be
// written fails at once rather than after a long run. Errors are printed as
// `mxlimit replay: error writing FILE: why`.
class ReportFile {
 public:
  // Opens (creates or truncates) `path`. False, with the error printed, when
  // it cannot.
  bool Open(const std::string& path);
  // Writes `page` and closes the file. False, with the error printed, on any
  // failure (a full disk shows at the close).
  bool Write(std::string_view page);

 private:
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
};

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_REPLAY_HTML_H_
