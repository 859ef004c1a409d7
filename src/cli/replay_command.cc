// `mxlimit replay`: run an access log through a Limiter, with the log's own
// timestamps as the clock, and report what the limiter would have done.
//
//   mxlimit replay [--config F] [--format FORMAT] [--store URL]
//                  [--trusted-proxy CIDR]... [--appservice-user @U:S]...
//                  [--appservice-rate-limited] [--decisions] [--json]
//                  [--report FILE.html] FILE|-
//
// FORMAT is auto, a line format (tsv, synapse, synapse-json, nginx, caddy)
// or a prefix (journald, docker). A journald or docker prefix is detected
// whatever FORMAT says and stripped before the line is parsed; naming a
// prefix forces it and leaves the line format to detection.
//
// `--trusted-proxy` resolves nginx's trailing "$http_x_forwarded_for" (see
// `ClientAddressFromForwardedFor`); without it the logged $remote_addr is the
// client, and a warning counts the lines whose header went unread.
// `--appservice-user` and `--appservice-rate-limited`: see
// replay/appservice.h.
//
// `--report FILE.html` also writes an HTML page of charts and the summary's
// tables (replay_html.h), whatever else is printed.
//
// `--store URL` replays through a SharedLimiter whose buckets live in that
// store (the run's results then include whatever other processes charged
// there), with `store.clock: caller` forced so that the store's time is the
// log's. The key secret is the config's `store.key_secret[_file]`, else
// kReplayKeySecret. Without it, the replay is one Limiter, as it always was.
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
//
// `RunReplay` is four steps, each a function below: the input (open the file),
// detection (buffer the first lines, pick the format), the loop (every line
// through the limiter) and the summary.

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
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/ip.h"
#include "mxlimit/limiter.h"
#include "mxlimit/matrix_response.h"
#include "mxlimit/options.h"
#include "mxlimit/request.h"
#include "mxlimit/shared_limiter.h"
#include "mxlimit/user_id.h"
#include "src/cli/choice.h"
#include "src/cli/commands.h"
#include "src/cli/load_limiter.h"
#include "src/cli/output.h"
#include "src/cli/replay_html.h"
#include "src/cli/replay_report.h"
#include "src/engine/room_locator.h"
#include "src/replay/appservice.h"
#include "src/replay/line_reader.h"
#include "src/replay/log_parsers.h"
#include "src/util/quote.h"

namespace mxlimit::cli {

struct ReplayOptions {
  std::string config_path;
  std::string format = "auto";
  std::string store;
  std::vector<std::string> trusted_proxies;
  std::vector<std::string> appservice_users;
  bool appservice_rate_limited = false;
  bool decisions = false;
  bool json = false;
  std::string report;  // --report FILE.html
  std::string input;
};

namespace {

using internal::ToAbsl;

constexpr std::string_view kReplay = "replay";

// Lines looked at to detect the format.
constexpr size_t kDetectLines = 100;

// The key secret of `--store` when the config has none: replays against a
// private Redis need no secret of their own, and a fixed one makes a replay's
// keys the same from run to run. Documented (docs/cli.md) as unfit for a
// store that production processes use.
constexpr std::string_view kReplayKeySecret = "mxlimit-replay-only-key-secret";

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

// --- The input ---------------------------------------------------------------

// The log: a named file (owned, closed at the end) or standard input.
struct Input {
  std::FILE* file = stdin;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned{nullptr, &std::fclose};
};

// Opens `name` ("-": standard input) into `*input`. A file that cannot be
// opened, or is a directory, is a usage error: printed, and false.
bool OpenInput(const std::string& name, Input* input) {
  if (name == "-") return true;
  input->owned.reset(std::fopen(name.c_str(), "rb"));
  if (input->owned == nullptr) {
    PrintError(kReplay,
               absl::StrCat(name, ": cannot open: ", std::strerror(errno)));
    return false;
  }
  struct stat st;
  if (fstat(fileno(input->owned.get()), &st) == 0 && S_ISDIR(st.st_mode)) {
    PrintError(kReplay, absl::StrCat(name, ": is a directory"));
    return false;
  }
  input->file = input->owned.get();
  return true;
}

// --- Detection ---------------------------------------------------------------

// A line read ahead for detection, replayed first.
struct PendingLine {
  uint64_t number;
  bool too_long;
  std::string text;
  std::string head;
};

// The prefix and the line format of a log.
struct LogShape {
  replay::LogPrefix prefix = replay::LogPrefix::kNone;
  replay::LogFormat format = replay::LogFormat::kTsv;
};

// "synapse", or "synapse (journald prefix)", for messages.
std::string ShapeName(const LogShape& shape) {
  std::string name(replay::LogFormatName(shape.format));
  if (shape.prefix != replay::LogPrefix::kNone) {
    absl::StrAppend(&name, " (", ToAbsl(replay::LogPrefixName(shape.prefix)),
                    " prefix)");
  }
  return name;
}

// The prefix `format_name` forces, else the one most lines carry.
replay::LogPrefix PrefixOf(std::string_view format_name,
                           std::span<const std::string_view> lines) {
  if (format_name == "journald") return replay::LogPrefix::kJournald;
  if (format_name == "docker") return replay::LogPrefix::kDocker;
  return replay::DetectLogPrefix(lines);
}

// Reads up to kDetectLines lines into `*pending` and returns the shape: the
// prefix named or detected, and the line format named, or else the one most
// of those lines parse in once stripped (with a warning when none does).
LogShape DetectShape(std::string_view format_name, replay::LineReader& reader,
                     std::vector<PendingLine>* pending) {
  replay::Line line;
  while (pending->size() < kDetectLines && reader.Next(&line)) {
    pending->push_back({line.number, line.too_long, std::string(line.text),
                        std::string(line.head)});
  }
  std::vector<std::string_view> views;
  for (const PendingLine& p : *pending) views.push_back(p.text);
  LogShape shape;
  shape.prefix = PrefixOf(format_name, views);
  if (const std::optional<replay::LogFormat> named =
          replay::ParseLogFormatName(format_name)) {
    shape.format = *named;
    return shape;
  }
  std::vector<std::string_view> inner;
  for (std::string_view v : views) {
    std::string_view stripped;
    if (replay::StripLogPrefix(shape.prefix, v, &stripped)) {
      inner.push_back(stripped);
    }
  }
  const replay::FormatDetection detected = replay::DetectFormatWithVotes(inner);
  shape.format = detected.format;
  if (!detected.recognized && !pending->empty()) {
    PrintError(kReplay, absl::StrCat("no line of the first ", pending->size(),
                                     " parses in any format; assuming ",
                                     ShapeName(shape)));
  }
  return shape;
}

// --- The loop ----------------------------------------------------------------

// Who policy `id` limits for `request`: the user ID for a per-user policy;
// for a per-IP one the network its bucket keys, e.g.
// "2001:db8:bad:cafe::/64", so a rotating attacker shows as one client (a
// full-length prefix, IPv4 /32 by default, is just the address).
std::string LimitedBy(PolicyId id, const Request& request,
                      const Limiter& limiter,
                      const internal::RoomLocator& rooms) {
  if (id >= limiter.policies().size()) return {};
  const Policy& policy = limiter.policies().policy(id);
  switch (policy.scope) {
    case Scope::kUser:
      return std::string(request.user_id);
    case Scope::kOrigin:
      return std::string(request.origin);
    case Scope::kRoom: {
      std::array<char, internal::kMaxRoomBytes> buf;
      const Route route =
          limiter.normalizer().Normalize(request.method, request.target);
      return std::string(
          rooms.Find(route.id, QueryFreePath(request.target), buf).value);
    }
    case Scope::kTarget:
      return std::string(request.target_user);
    case Scope::kIp:
      break;
  }
  // The prefix of the policy's bucket: its own, else the tables'.
  const TableOptions& tables = limiter.table_options();
  const ClientPrefix prefix = policy.client_prefix.value_or(
      ClientPrefix{tables.ipv4_prefix, tables.ipv6_prefix});
  return FormatClientPrefix(request.client, prefix.ipv4, prefix.ipv6);
}

// Who a denial limited (empty when allowed).
std::string LimitedClient(const Decision& d, const Request& request,
                          const Limiter& limiter,
                          const internal::RoomLocator& rooms) {
  if (d.allowed) return {};
  return LimitedBy(d.denied_policy, request, limiter, rooms);
}

// Who the shadow-mode policy that would have denied an allowed request
// would have limited (empty for other requests).
std::string ShadowLimitedClient(const Decision& d, const Request& request,
                                const Limiter& limiter,
                                const internal::RoomLocator& rooms) {
  if (!d.allowed || !d.shadow_denied) return {};
  return LimitedBy(d.shadow_policy_id, request, limiter, rooms);
}

std::string RetryMillis(const Decision& d) {
  if (d.never) return "never";
  // A delayed admission: the delay, rounded up as a wait is.
  if (d.allowed && d.delay.count() > 0) {
    return std::to_string(RetryAfterMilliseconds(d.delay));
  }
  if (d.allowed) return "0";
  return std::to_string(RetryAfterMilliseconds(d.retry_after));
}

// One `--decisions` line.
void AppendDecision(const Decision& d, Output& out) {
  const bool delayed = d.allowed && d.delay.count() > 0;
  const char* verdict = !d.allowed        ? "deny"
                        : delayed         ? "delay"
                        : d.shadow_denied ? "shadow"
                                          : "allow";
  const std::string_view policy = !d.allowed || delayed ? d.policy
                                  : d.shadow_denied     ? d.shadow_policy
                                                        : "-";
  const std::string_view layer = !d.allowed || delayed ? d.layer
                                 : d.shadow_denied     ? d.shadow_layer
                                                       : "-";
  out.Append(verdict);
  out.Append("\t");
  out.Append(RetryMillis(d));
  out.Append("\t");
  out.Append(policy.empty() ? "-" : policy);
  out.Append("\t");
  out.Append(d.route_key);
  out.Append("\t");
  out.Line(layer.empty() ? "-" : layer);
}

// What the loop needs besides the limiter: how to read lines and whom to
// believe about clients and appservices.
struct ReplaySetup {
  LogShape shape;
  bool decisions = false;
  std::span<const Cidr> trusted_proxies;
  replay::ReplayAppservices* appservices = nullptr;
};

// Every line of the log through one limiter (`Limiter`, or `SharedLimiter`
// for --store), in order, on the log's clock made monotonic (see the top of
// this file). `lookup` names the policies the decisions' ids refer to: the
// limiter itself, or one compiled from the same config.
template <typename Decider>
class ReplayLoop {
 public:
  ReplayLoop(Decider& decider, const Limiter& lookup, const ReplaySetup& setup,
             ReplayReport& report, Output& out)
      : decider_(decider),
        limiter_(lookup),
        rooms_(lookup.normalizer()),
        setup_(setup),
        report_(report),
        out_(out) {}

  void Handle(uint64_t number, bool too_long, std::string_view text,
              std::string_view head) {
    ++lines_;
    replay::LogRecord record;
    replay::ParseResult parsed =
        too_long ? replay::ParseResult::kTooLong
                 : replay::ParsePrefixedLogLine(
                       setup_.shape.prefix, setup_.shape.format, text, &record);
    absl::StatusOr<IpAddress> client = IpAddress{};
    if (parsed == replay::ParseResult::kOk) {
      client = ParseIpAddress(record.client_ip);
      if (!client.ok()) parsed = replay::ParseResult::kBadClientAddress;
    }
    if (parsed != replay::ParseResult::kOk) {
      report_.Invalid(number, replay::ParseResultName(parsed), head);
      if (setup_.decisions) out_.Line("invalid\t0\t-\t-\t-");
      return;
    }
    Request request;
    request.method = record.method;
    request.target = OriginForm(record.target);
    request.client = ResolveClient(*client, record.forwarded_for);
    request.user_id = record.user;
    // From the log: unverified, as mxlimitd sees it; bound to the network.
    request.origin = record.origin_server;
    // Replay judges as mxlimitd does, which holds delayed answers.
    request.may_delay = true;
    request.max_lease = LeaseForTimeout(request.target);
    if (setup_.appservices != nullptr) {
      setup_.appservices->Apply(record, &request);
    }
    clock_ms_ = std::max(clock_ms_, record.time_ms);
    const MonotonicTime now = MonotonicTime::FromMilliseconds(clock_ms_);
    const Decision d = decider_.Check(request, now);
    // The line says how the request ended: policies charged on the response
    // are settled at once, as mxlimitd settles them from its feed.
    if (d.allowed && !d.exempt && record.status > 0) {
      decider_.Settle(
          request,
          Completion{record.status, std::max<int64_t>(record.body_bytes, 0)},
          now);
    }
    const std::string limited = LimitedClient(d, request, limiter_, rooms_);
    const std::string shadow_limited =
        ShadowLimitedClient(d, request, limiter_, rooms_);
    report_.Record(d, limited, shadow_limited);
    if (html_ != nullptr) {
      html_->Record(clock_ms_, d, limited, shadow_limited, PolicyCounts());
    }
    if (setup_.decisions) AppendDecision(d, out_);
  }

  uint64_t lines() const { return lines_; }
  // Lines with an X-Forwarded-For that no --trusted-proxy let us read.
  uint64_t unread_forwarded_for() const { return unread_forwarded_for_; }
  // Also feeds `html` (--report); null: no page.
  void set_html(ReplayHtml* html) { html_ = html; }

 private:
  // The decider's per-policy counters now, for the page's policy charts: in
  // place for a Limiter; for a SharedLimiter (--store, where the store's
  // round trip dominates anyway) copied out of its Stats.
  std::span<const PolicyCounters> PolicyCounts() {
    if constexpr (std::is_same_v<Decider, Limiter>) {
      return decider_.PolicyCounts();
    } else {
      const LimiterStats stats = decider_.Stats();
      counts_.resize(stats.policies.size());
      for (size_t i = 0; i < stats.policies.size(); ++i) {
        counts_[i] = stats.policies[i].counters;
      }
      return counts_;
    }
  }

  // The logged peer, or with --trusted-proxy the client its X-Forwarded-For
  // names: believed only hop by hop from trusted proxies, so a client cannot
  // pick its own address by sending the header.
  IpAddress ResolveClient(const IpAddress& peer, std::string_view forwarded) {
    if (forwarded.empty()) return peer;
    if (setup_.trusted_proxies.empty()) {
      ++unread_forwarded_for_;
      return peer;
    }
    return ClientAddressFromForwardedFor(peer, forwarded,
                                         setup_.trusted_proxies);
  }

  Decider& decider_;
  const Limiter& limiter_;
  // Names the room of a room-scope denial.
  const internal::RoomLocator rooms_;
  const ReplaySetup setup_;
  ReplayReport& report_;
  Output& out_;
  ReplayHtml* html_ = nullptr;
  std::vector<PolicyCounters> counts_;  // PolicyCounts' copy, SharedLimiter
  uint64_t lines_ = 0;
  uint64_t unread_forwarded_for_ = 0;
  int64_t clock_ms_ = std::numeric_limits<int64_t>::min();
};

// Replays the lines read ahead, then the rest of the input. Stops early once
// standard output fails: nothing more could be written.
template <typename Loop>
void ReplayLines(std::vector<PendingLine>& pending, replay::LineReader& reader,
                 const Output& out, Progress& progress, Loop& loop) {
  for (const PendingLine& p : pending) {
    loop.Handle(p.number, p.too_long, p.text, p.head);
  }
  pending.clear();
  replay::Line line;
  while (out.ok() && reader.Next(&line)) {
    loop.Handle(line.number, line.too_long, line.text, line.head);
    if ((loop.lines() & 0xFFFF) == 0) progress.Update(reader.bytes_read());
  }
  progress.Done();
}

// --- The summary -------------------------------------------------------------

ReplayReport::Run MakeRun(const ReplayOptions& opts, const LogShape& shape,
                          double seconds, uint64_t lines) {
  ReplayReport::Run run;
  run.input = opts.input == "-" ? "stdin" : opts.input;
  run.format = std::string(replay::LogFormatName(shape.format));
  if (shape.prefix != replay::LogPrefix::kNone) {
    run.prefix = std::string(replay::LogPrefixName(shape.prefix));
  }
  run.config =
      opts.config_path.empty() ? "built-in policies" : opts.config_path;
  run.seconds = seconds;
  run.lines = lines;
  return run;
}

constexpr std::chrono::seconds kConnectWait{5};

// The SharedLimiter of `--store`: the config's store section with the URL
// from the command line and the caller's (the log's) clock. Null, with the
// error printed, when it cannot be built.
std::unique_ptr<SharedLimiter> MakeStoreLimiter(const ReplayOptions& opts,
                                                LimiterConfig config) {
  config.store.url = opts.store;
  config.store.clock = StoreOptions::Clock::kCaller;
  // A replay wants the store's decisions, not speed: a slow answer is
  // waited for rather than replaced by the local fallback.
  config.store.timeout = std::chrono::seconds(10);
  if (config.store.key_secret.empty()) {
    config.store.key_secret = std::string(kReplayKeySecret);
  }
  // One shard: one thread replays, and one shard keeps the tables' eviction
  // order that of a single Limiter.
  absl::StatusOr<std::unique_ptr<SharedLimiter>> shared =
      SharedLimiter::Create(config, 1);
  if (!shared.ok()) {
    PrintError(kReplay, absl::StrCat("--store ", RedactStoreUrl(opts.store),
                                     ": ", shared.status().message()));
    return nullptr;
  }
  // Connected before the first line: the first checks would otherwise fall
  // back (and open the breaker) while the connection is being made.
  const auto give_up = std::chrono::steady_clock::now() + kConnectWait;
  while (!(*shared)->StoreStats().connected) {
    if (std::chrono::steady_clock::now() > give_up) {
      PrintError(kReplay, absl::StrCat("--store ", RedactStoreUrl(opts.store),
                                       ": cannot reach the store within ",
                                       kConnectWait.count(), " s"));
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return *std::move(shared);
}

// A replay whose decisions partly came from the local fallback is not what
// the store would have decided: say so, on standard error.
void ReportFallbacks(const SharedStoreStats& s, uint64_t lines) {
  const uint64_t fallbacks = s.fallback_timeout + s.fallback_error +
                             s.fallback_unavailable + s.fallback_breaker_open;
  if (fallbacks == 0) return;
  PrintError(kReplay,
             absl::StrCat(fallbacks, " of ", lines,
                          " lines were decided locally because the store did "
                          "not answer in time (timeout ",
                          s.fallback_timeout, ", error ", s.fallback_error,
                          ", unavailable ", s.fallback_unavailable,
                          ", breaker open ", s.fallback_breaker_open,
                          "); raise store.timeout or check the store"));
}

// A log behind a load balancer replayed without --trusted-proxy charges
// every client to the balancer's address: say so, on standard error.
void ReportUnreadForwardedFor(uint64_t unread, uint64_t lines) {
  if (unread == 0) return;
  PrintError(kReplay,
             absl::StrCat(unread, " of ", lines,
                          " lines carry an X-Forwarded-For, ignored without "
                          "--trusted-proxy: each client is the logged peer "
                          "address"));
}

// The --trusted-proxy networks (already checked by the option's validator).
std::vector<Cidr> TrustedProxies(const ReplayOptions& opts) {
  std::vector<Cidr> trusted;
  for (const std::string& text : opts.trusted_proxies) {
    absl::StatusOr<Cidr> cidr = ParseCidr(text);
    if (cidr.ok()) trusted.push_back(*cidr);
  }
  return trusted;
}

int RunReplay(const ReplayOptions& opts) {
  LimiterConfig config;
  const std::unique_ptr<Limiter> limiter =
      LoadLimiter(kReplay, opts.config_path, &config);
  if (limiter == nullptr) return kExitFinding;
  std::unique_ptr<SharedLimiter> shared;
  if (!opts.store.empty()) {
    shared = MakeStoreLimiter(opts, config);
    if (shared == nullptr) return kExitFinding;
  }
  Input input;
  if (!OpenInput(opts.input, &input)) return kExitUsage;
  ReportFile report_file;
  std::unique_ptr<ReplayHtml> html;
  if (!opts.report.empty()) {
    if (!report_file.Open(opts.report)) return kExitFinding;
    const std::span<const Policy> policies = limiter->policies().policies();
    html = std::make_unique<ReplayHtml>(
        policies.size(),
        std::any_of(policies.begin(), policies.end(),
                    [](const Policy& p) { return p.shadow_mode; }));
  }
  replay::LineReader reader(input.file);
  // With --decisions on a terminal, the bar would tear the decision lines.
  Progress progress(input.file, !(opts.decisions && isatty(fileno(stdout))));

  std::vector<PendingLine> pending;
  const std::vector<Cidr> trusted = TrustedProxies(opts);
  replay::ReplayAppservices appservices(opts.appservice_users,
                                        opts.appservice_rate_limited);
  ReplaySetup setup;
  setup.shape = DetectShape(opts.format, reader, &pending);
  setup.decisions = opts.decisions;
  setup.trusted_proxies = trusted;
  setup.appservices = appservices.empty() ? nullptr : &appservices;

  Output out(kReplay);
  ReplayReport report;
  const auto started = std::chrono::steady_clock::now();
  uint64_t lines = 0;
  uint64_t unread_forwarded_for = 0;
  if (shared == nullptr) {
    ReplayLoop<Limiter> loop(*limiter, *limiter, setup, report, out);
    loop.set_html(html.get());
    ReplayLines(pending, reader, out, progress, loop);
    lines = loop.lines();
    unread_forwarded_for = loop.unread_forwarded_for();
  } else {
    // The Limiter compiled the same config as the SharedLimiter's mirror,
    // so a decision's policy id names the same policy in both.
    ReplayLoop<SharedLimiter> loop(*shared, *limiter, setup, report, out);
    loop.set_html(html.get());
    ReplayLines(pending, reader, out, progress, loop);
    lines = loop.lines();
    unread_forwarded_for = loop.unread_forwarded_for();
    ReportFallbacks(shared->StoreStats(), lines);
  }
  ReportUnreadForwardedFor(unread_forwarded_for, lines);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  if (!reader.status().ok()) {
    out.Finish();
    PrintError(kReplay,
               absl::StrCat(opts.input, ": ", reader.status().message()));
    return kExitFinding;
  }
  const LimiterStats stats =
      shared != nullptr ? shared->Stats() : limiter->Stats();
  const ReplayReport::Run run = MakeRun(opts, setup.shape, seconds, lines);
  if (!opts.decisions && out.ok()) {
    out.Append(opts.json ? report.Json(run, stats) : report.Text(run, stats));
  }
  const bool written =
      html == nullptr || report_file.Write(html->Page(run, report, stats));
  return out.Finish() && written ? kExitOk : kExitFinding;
}

}  // namespace

void RegisterReplay(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ReplayOptions>();
  CLI::App* cmd = app.add_subcommand(
      std::string(kReplay), "Replay an access log through the limiter");
  cmd->footer(
      "The input is a log in one of five formats: tsv (TIME_MS METHOD TARGET "
      "IP USER), synapse (Synapse's access log), synapse-json (the same, by "
      "TerseJsonFormatter), nginx (combined, optionally with a trailing "
      "\"$http_x_forwarded_for\"), caddy (Caddy's JSON access log), each "
      "optionally behind a journald or docker prefix; auto detects both from "
      "the first 100 lines. Without --decisions or --json: a text summary. "
      "Details, every output field and examples: docs/cli.md, section "
      "\"mxlimit replay\".");
  cmd->add_option("--config", opts->config_path,
                  "YAML policy file (default: the built-in policies only)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--format", opts->format, "Log format")
      ->transform(OneOf({"auto", "tsv", "synapse", "nginx", "synapse-json",
                         "caddy", "journald", "docker"}))
      ->capture_default_str();
  cmd->add_option("--store", opts->store,
                  "Replay through a SharedLimiter whose buckets live in this "
                  "store (redis://HOST:PORT[/DB] or unix:///PATH[?db=DB]), "
                  "on the log's clock (store.clock: caller)")
      ->check([](const std::string& url) { return StoreUrlProblem(url); });
  cmd->add_option("--trusted-proxy", opts->trusted_proxies,
                  "A proxy network (CIDR) whose X-Forwarded-For is believed: "
                  "nginx's trailing \"$http_x_forwarded_for\" then names the "
                  "client (repeatable)")
      ->check([](const std::string& text) -> std::string {
        absl::StatusOr<Cidr> cidr = ParseCidr(text);
        if (cidr.ok()) return {};
        // The status names the value and what was expected.
        return std::string(cidr.status().message());
      });
  cmd->add_option("--appservice-user", opts->appservice_users,
                  "An appservice's sender (@bot:server): its requests are "
                  "exempt, and so are its puppets' unless "
                  "--appservice-rate-limited (repeatable)")
      ->check([](const std::string& user) -> std::string {
        const std::string problem = UserIdProblem(user);
        if (problem.empty()) return {};
        return absl::StrCat("got ", internal::QuoteForError(user),
                            ", not a Matrix user ID: ", problem);
      });
  cmd->add_flag("--appservice-rate-limited", opts->appservice_rate_limited,
                "Charge appservice puppets (the registration's rate_limited: "
                "true) instead of exempting them");
  CLI::Option* decisions =
      cmd->add_flag("--decisions", opts->decisions,
                    "Instead of a summary, one line per input line: "
                    "DECISION RETRY_AFTER_MS POLICY ROUTE_KEY LAYER "
                    "(tab-separated)");
  cmd->add_flag("--json", opts->json, "Summary as one JSON document")
      ->excludes(decisions);
  cmd->add_option("--report", opts->report,
                  "Also write a self-contained HTML page to this file: "
                  "requests per second (allowed, shadow-denied, denied) "
                  "overall, per policy and per top limited client, and the "
                  "summary's tables");
  cmd->add_option("input", opts->input, "Log file, or - for stdin")->required();
  cmd->callback([opts, &exit_code] { exit_code = RunReplay(*opts); });
}

}  // namespace mxlimit::cli
