// `mxlimit replay`: run an access log through a Limiter, with the log's own
// timestamps as the clock, and report what the limiter would have done.
//
//   mxlimit replay [--config F] [--format auto|tsv|synapse|nginx]
//                  [--decisions] [--json] FILE|-
//
// `--decisions` prints exactly one line per input line, in order:
//   DECISION \t RETRY_AFTER_MS \t POLICY \t ROUTE_KEY \t LAYER
// DECISION is allow, deny, shadow (allowed, but a shadow-mode policy would
// have denied; POLICY and LAYER name it) or invalid (not a request:
// RETRY_AFTER_MS is 0, POLICY, ROUTE_KEY and LAYER are "-"). LAYER is the
// layer of POLICY, "-" when allowed. RETRY_AFTER_MS is the wait rounded up to
// whole milliseconds, 0 when allowed, `never` when the cost can never fit.
//
// The clock is the log's arrival times, made monotonic: a line whose arrival
// is earlier than one already replayed is replayed at the later time. Synapse
// logs a request when it finishes, so a 30 s long-poll appears after requests
// that arrived later; replaying it in the past would look like a clock
// stepping backwards, which the limiter answers by granting nothing.
//
// Otherwise a summary (text, or one JSON document with --json). Memory is
// bounded by the table capacities and fixed-size sketches whatever the input.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "mxlimit/ip.h"
#include "mxlimit/limiter.h"
#include "mxlimit/matrix_response.h"
#include "src/cli/commands.h"
#include "src/cli/load_limiter.h"
#include "src/cli/replay_report.h"
#include "src/replay/line_reader.h"
#include "src/replay/log_parsers.h"

namespace mxlimit::cli {

struct ReplayOptions {
  std::string config_path;
  std::string format = "auto";
  bool decisions = false;
  bool json = false;
  std::string input;
};

namespace {

// Lines looked at to detect the format.
constexpr size_t kDetectLines = 100;

struct PendingLine {
  uint64_t number;
  bool too_long;
  std::string text;
  std::string head;
};

class Progress {
 public:
  Progress(std::FILE* in, bool enabled) {
    struct stat st;
    if (enabled && isatty(fileno(stderr)) && fstat(fileno(in), &st) == 0 &&
        S_ISREG(st.st_mode) && st.st_size > 0) {
      total_ = static_cast<uint64_t>(st.st_size);
    }
  }
  void Update(uint64_t bytes) {
    if (total_ == 0) return;
    const int percent =
        static_cast<int>(100 * std::min(bytes, total_) / total_);
    if (percent == last_) return;
    last_ = percent;
    std::fprintf(stderr, "\r[%-50s] %3d%%",
                 std::string(percent / 2, '#').c_str(), percent);
  }
  void Done() {
    if (total_ != 0 && last_ >= 0) std::fprintf(stderr, "\r%60s\r", "");
  }

 private:
  uint64_t total_ = 0;
  int last_ = -1;
};

// Who a per-IP denial limited: the network the table keys it by, e.g.
// "2001:db8:bad:cafe::/64", so a rotating attacker shows as one client. A
// full-length prefix (IPv4 /32 by default) is just the address.
std::string BucketOwner(const Decision& d, const IpAddress& client,
                        const Limiter& limiter) {
  if (d.allowed || d.limited_by != LimitScope::kIp) return {};
  // The prefix of the bucket that denied: the policy's own, else the tables'.
  const TableOptions& tables = limiter.table_options();
  const ClientPrefix prefix = limiter.policies()
                                  .policy(d.denied_policy)
                                  .client_prefix.value_or(ClientPrefix{
                                      tables.ipv4_prefix, tables.ipv6_prefix});
  return FormatClientPrefix(client, prefix.ipv4, prefix.ipv6);
}

std::string RetryMillis(const Decision& d) {
  if (d.never) return "never";
  if (d.allowed) return "0";
  return std::to_string(RetryAfterMilliseconds(d.retry_after));
}

int RunReplay(const ReplayOptions& opts) {
  LimiterConfig config;
  const std::unique_ptr<Limiter> created =
      LoadLimiter(opts.config_path, &config);
  if (created == nullptr) return kExitFinding;
  Limiter& limiter = *created;

  std::FILE* in = stdin;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned(nullptr, &std::fclose);
  if (opts.input != "-") {
    owned.reset(std::fopen(opts.input.c_str(), "rb"));
    if (owned == nullptr) {
      std::fprintf(stderr, "%s: cannot open: %s\n", opts.input.c_str(),
                   std::strerror(errno));
      return kExitUsage;
    }
    struct stat st;
    if (fstat(fileno(owned.get()), &st) == 0 && S_ISDIR(st.st_mode)) {
      std::fprintf(stderr, "%s: is a directory\n", opts.input.c_str());
      return kExitUsage;
    }
    in = owned.get();
  }
  replay::LineReader reader(in);
  // With --decisions on a terminal, the bar would tear the decision lines.
  Progress progress(in, !(opts.decisions && isatty(fileno(stdout))));

  // Buffer the first lines to detect the format, then replay them first.
  std::vector<PendingLine> pending;
  replay::Line line;
  while (pending.size() < kDetectLines && reader.Next(&line)) {
    pending.push_back({line.number, line.too_long, std::string(line.text),
                       std::string(line.head)});
  }
  replay::LogFormat format = replay::LogFormat::kTsv;
  if (opts.format == "auto") {
    std::vector<std::string_view> views;
    for (const PendingLine& p : pending) views.push_back(p.text);
    replay::FormatDetection detected = replay::DetectFormatWithVotes(views);
    format = detected.format;
    if (!detected.recognized && !pending.empty()) {
      std::fprintf(stderr,
                   "mxlimit replay: no line of the first %zu parses in any "
                   "format; assuming %s\n",
                   pending.size(),
                   std::string(replay::LogFormatName(format)).c_str());
    }
  } else {
    format = *replay::ParseLogFormatName(opts.format);
  }

  ReplayReport report;
  std::string out;
  out.reserve(1 << 20);
  auto flush = [&] {
    std::fwrite(out.data(), 1, out.size(), stdout);
    out.clear();
  };
  const auto started = std::chrono::steady_clock::now();
  uint64_t lines = 0;
  int64_t clock_ms = std::numeric_limits<int64_t>::min();
  auto handle = [&](uint64_t number, bool too_long, std::string_view text,
                    std::string_view head) {
    ++lines;
    replay::LogRecord record;
    replay::ParseResult parsed =
        too_long ? replay::ParseResult::kTooLong
                 : replay::ParseLogLine(format, text, &record);
    absl::StatusOr<IpAddress> client = IpAddress{};
    if (parsed == replay::ParseResult::kOk) {
      client = ParseIpAddress(record.client_ip);
      if (!client.ok()) parsed = replay::ParseResult::kBadClientAddress;
    }
    if (parsed != replay::ParseResult::kOk) {
      report.Invalid(number, replay::ParseResultName(parsed), head);
      if (opts.decisions) out += "invalid\t0\t-\t-\t-\n";
    } else {
      Request request;
      request.method = record.method;
      request.target = record.target;
      request.client = *client;
      request.user_id = record.user;
      clock_ms = std::max(clock_ms, record.time_ms);
      const Decision d =
          limiter.Check(request, MonotonicTime::FromMilliseconds(clock_ms));
      report.Record(d, BucketOwner(d, *client, limiter), record.user);
      if (opts.decisions) {
        const char* verdict = !d.allowed        ? "deny"
                              : d.shadow_denied ? "shadow"
                                                : "allow";
        std::string_view policy = !d.allowed        ? d.policy
                                  : d.shadow_denied ? d.shadow_policy
                                                    : "-";
        std::string_view layer = !d.allowed        ? d.layer
                                 : d.shadow_denied ? d.shadow_layer
                                                   : "-";
        out.append(verdict).append("\t").append(RetryMillis(d)).append("\t");
        out.append(policy.empty() ? "-" : policy).append("\t");
        out.append(d.route_key).append("\t");
        out.append(layer.empty() ? "-" : layer).append("\n");
      }
    }
    if (out.size() >= (1 << 20)) flush();
    if ((lines & 0xFFFF) == 0) progress.Update(reader.bytes_read());
  };
  for (const PendingLine& p : pending)
    handle(p.number, p.too_long, p.text, p.head);
  pending.clear();
  while (reader.Next(&line))
    handle(line.number, line.too_long, line.text, line.head);
  progress.Done();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  if (!reader.status().ok()) {
    flush();
    std::fprintf(stderr, "%s: %s\n", opts.input.c_str(),
                 std::string(reader.status().message()).c_str());
    return kExitFinding;
  }

  if (!opts.decisions) {
    ReplayReport::Run run;
    run.input = opts.input == "-" ? "stdin" : opts.input;
    run.format = std::string(replay::LogFormatName(format));
    run.config =
        opts.config_path.empty() ? "built-in policies" : opts.config_path;
    run.seconds = seconds;
    run.lines = lines;
    out += opts.json ? report.Json(run, limiter.Stats())
                     : report.Text(run, limiter.Stats());
  }
  flush();
  return std::fflush(stdout) == 0 ? kExitOk : kExitFinding;
}

}  // namespace

void RegisterReplay(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ReplayOptions>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay an access log through the limiter and report");
  cmd->add_option("--config", opts->config_path,
                  "YAML policy file (default: the built-in policies only)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--format", opts->format,
                  "Log format: auto (detect from the first 100 lines), tsv "
                  "(TIME_MS METHOD TARGET IP USER), synapse (Synapse's access "
                  "log), nginx (combined)")
      ->check(CLI::IsMember({"auto", "tsv", "synapse", "nginx"}))
      ->capture_default_str();
  CLI::Option* decisions =
      cmd->add_flag("--decisions", opts->decisions,
                    "Instead of a summary, one line per input line: "
                    "DECISION RETRY_AFTER_MS POLICY ROUTE_KEY (tab-separated)");
  cmd->add_flag("--json", opts->json, "Summary as one JSON document")
      ->excludes(decisions);
  cmd->add_option("input", opts->input, "Log file, or - for stdin")->required();
  cmd->callback([opts, &exit_code] { exit_code = RunReplay(*opts); });
}

}  // namespace mxlimit::cli
