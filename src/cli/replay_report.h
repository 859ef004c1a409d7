// -----------------------------------------------------------------------------
// File: cli/replay_report.h
// -----------------------------------------------------------------------------
//
// What `mxlimit replay` prints when `--decisions` is off: totals, per-policy
// counts, top routes and top limited clients (and, with shadow-mode policies,
// the clients they would have limited), table sizes and throughput, as
// aligned text or as one JSON document. Memory is fixed: the top-N lists are
// Space-Saving sketches, not maps of every route or client.

#ifndef MXLIMIT_CLI_REPLAY_REPORT_H_
#define MXLIMIT_CLI_REPLAY_REPORT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/decision.h"
#include "mxlimit/stats.h"
#include "src/replay/top_k.h"

namespace mxlimit::cli {

// The requests a policy applied to: each counts in exactly one of its four
// results (mxlimit/stats.h).
inline uint64_t AppliedTo(const PolicyCounters& c) {
  return c.allowed + c.denied + c.shadow_denied + c.denied_by_other;
}

class ReplayReport {
 public:
  // How many unparseable lines are quoted with their line numbers.
  static constexpr size_t kQuotedInvalidLines = 5;
  // Rows in each top-N table.
  static constexpr size_t kTopRows = 10;
  // Counters of the limited-clients sketch (the HTML report's timeline keeps
  // a sketch of the same size, so that both find the same clients).
  static constexpr size_t kClientCounters = 1024;

  ReplayReport();

  // One checked request. `limited` names who a denial limited, and
  // `shadow_limited` who a shadow denial of an allowed request would have:
  // the network the policy's bucket keys (per-IP policies) or the user ID
  // (per-user ones); unused for other requests.
  void Record(const Decision& decision, std::string_view limited,
              std::string_view shadow_limited);
  // One line that is not a request; the first few are quoted.
  void Invalid(uint64_t line_number, std::string_view reason,
               std::string_view head);

  struct Run {
    std::string input;
    std::string format;
    // "journald" or "docker" when the lines came behind that prefix, else
    // empty (the JSON then has no `prefix`, as before prefixes existed).
    std::string prefix;
    std::string config;  // "built-in policies" when no file was given
    double seconds = 0;
    uint64_t lines = 0;
  };
  std::string Text(const Run& run, const LimiterStats& stats) const;
  std::string Json(const Run& run, const LimiterStats& stats) const;

  uint64_t requests() const { return requests_; }
  uint64_t denied() const { return denied_; }

  // What Text and Json print, for other renderings (the HTML report).
  struct Totals {
    uint64_t requests = 0;
    uint64_t allowed = 0;
    uint64_t denied = 0;
    uint64_t denied_never = 0;
    uint64_t shadow_denied = 0;
    uint64_t exempt = 0;
    uint64_t invalid = 0;
  };
  struct InvalidLine {
    uint64_t number;
    std::string reason;
    std::string head;  // control characters replaced by '?'
  };
  Totals totals() const {
    return {requests_,      allowed_, denied_, denied_never_,
            shadow_denied_, exempt_,  invalid_};
  }
  const std::vector<InvalidLine>& quoted_invalid() const {
    return quoted_invalid_;
  }
  const replay::TopK& routes() const { return routes_; }
  const replay::TopK& denied_routes() const { return denied_routes_; }
  const replay::TopK& limited_clients() const { return limited_clients_; }
  const replay::TopK& shadow_limited_clients() const {
    return shadow_limited_clients_;
  }

 private:
  uint64_t requests_ = 0;
  uint64_t allowed_ = 0;
  uint64_t denied_ = 0;
  uint64_t denied_never_ = 0;
  uint64_t shadow_denied_ = 0;
  uint64_t exempt_ = 0;
  uint64_t invalid_ = 0;
  std::vector<InvalidLine> quoted_invalid_;
  replay::TopK routes_;
  replay::TopK denied_routes_;
  replay::TopK limited_clients_;
  // Who shadow-mode policies would have limited (allowed requests only).
  replay::TopK shadow_limited_clients_;
};

// Whether any policy in force only observes: the summaries then list the
// clients shadow-mode policies would have limited.
bool HasShadowPolicies(const LimiterStats& stats);

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_REPLAY_REPORT_H_
