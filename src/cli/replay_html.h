// -----------------------------------------------------------------------------
// File: cli/replay_html.h
// -----------------------------------------------------------------------------
//
// `mxlimit replay --report FILE.html`: one self-contained HTML page (inline
// SVG and CSS; no script, no font, nothing fetched) that shows what a config
// would do with a log:
//   - requests per second over the log's time, stacked as allowed,
//     shadow-denied and denied;
//   - the same for each policy (small multiples: the 12 policies with the
//     most denials, the rest folded into one "other policies" panel);
//   - denials per second of the top limited clients;
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
//   ReplayHtml html(limiter.policies().size());
//   for (...) html.Record(time_ms, decision, ip_owner, user);
//   ReportFile file;
//   if (!file.Open(path)) return kExitFinding;
//   file.Write(html.Page(run, report, limiter.Stats()));

#ifndef MXLIMIT_CLI_REPLAY_HTML_H_
#define MXLIMIT_CLI_REPLAY_HTML_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

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

  // `policies`: the size of the limiter's policy set.
  explicit ReplayHtml(size_t policies);

  // One checked request at `time_ms` (the replay's clock). `ip_owner` and
  // `user` are what ReplayReport::Record was given: who a denial limited.
  void Record(int64_t time_ms, const Decision& decision,
              std::string_view ip_owner, std::string_view user);

  // The page.
  std::string Page(const ReplayReport::Run& run, const ReplayReport& report,
                   const LimiterStats& stats) const;

 private:
  replay::Timeline timeline_;
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
