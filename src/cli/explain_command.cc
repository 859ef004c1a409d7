// `mxlimit explain`: show how the limiter treats one request: the route it
// normalizes to, every policy whose pattern matched and through which form
// (route key or raw path), the one chosen per scope and why, and the bucket
// keys a Check would charge. With a `store:` section, also each bucket's key
// in the store (or "local"), computed without connecting.
//
//   mxlimit explain [--config F] [--ip ADDR] [--user USER] METHOD TARGET
//
// What it echoes of its arguments (method, target, paths, user) is escaped
// (`EscapeForOutput`): a target holding "\n" or "\x1b[" could otherwise
// print lines that look like the tool's own, or drive the terminal.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/request.h"
#include "mxlimit/shared_limiter.h"
#include "mxlimit/tiers.h"
#include "mxlimit/user_id.h"
#include "src/cli/commands.h"
#include "src/cli/load_limiter.h"
#include "src/cli/output.h"
#include "src/util/quote.h"

namespace mxlimit::cli {

struct ExplainOptions {
  std::string config_path;
  std::string ip = "192.0.2.1";
  std::string user;
  std::string origin;
  std::string target_user;
  std::string method;
  std::string target;
};

namespace {

using internal::EscapeForOutput;
using internal::ToAbsl;

constexpr std::string_view kExplain = "explain";

// A duration as the file spells it: the largest unit that divides it.
std::string DurationText(std::chrono::nanoseconds d) {
  const int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return us % 1'000'000 == 0 ? absl::StrCat(us / 1'000'000, "s")
         : us % 1000 == 0    ? absl::StrCat(us / 1000, "ms")
                             : absl::StrCat(us, "us");
}

// What the bucket counts and when it is charged, if not one request at the
// decision; and the errcode a denial names, if not M_LIMIT_EXCEEDED.
std::string ChargeText(const Policy& p) {
  std::string out;
  if (p.cost != CostKind::kRequests) {
    absl::StrAppend(&out, ", counts ", internal::ToAbsl(CostKindName(p.cost)));
  }
  if (ChargedOnResponse(p)) {
    out += p.status.empty() ? ", charged on every response"
                            : ", charged on responses ";
    for (size_t i = 0; i < p.status.size(); ++i) {
      const StatusRange& r = p.status[i];
      absl::StrAppend(&out, i > 0 ? ", " : "", r.first);
      if (r.last != r.first) absl::StrAppend(&out, "-", r.last);
    }
  }
  if (!p.errcode.empty()) absl::StrAppend(&out, ", answers ", p.errcode);
  return out;
}

std::string Describe(const Policy& p) {
  std::string prefix;
  if (p.client_prefix.has_value()) {
    prefix = absl::StrCat(", per /", p.client_prefix->ipv4, " and /",
                          p.client_prefix->ipv6);
  }
  std::string delay;
  if (p.on_limit == OnLimit::kDelay) {
    delay = absl::StrCat(", delays up to ", DurationText(p.max_delay),
                         " before denying");
  }
  const std::string limit =
      p.concurrency.has_value()
          ? absl::StrCat(p.concurrency->limit, " in flight, lease ",
                         DurationText(p.concurrency->lease))
          : p.rate.ToString();
  std::string query;
  for (const std::string& q : p.query_absent) {
    absl::StrAppend(&query, ", without ?", EscapeForOutput(q));
  }
  for (const std::string& q : p.query_present) {
    absl::StrAppend(&query, ", with ?", EscapeForOutput(q));
  }
  return absl::StrCat(p.name, " (", limit, query, ChargeText(p),
                      p.shadow_mode ? ", shadow" : "",
                      p.share_threshold ? ", shared" : "", prefix, delay,
                      p.builtin ? ", built-in" : "", ")");
}

int Write(std::string_view text) {
  Output out(kExplain);
  out.Append(text);
  return out.Finish() ? kExitOk : kExitFinding;
}

// "bridge (user @bridge:example.org, tiers.assign): scale 10": which tier
// applies, which assignment says so, and what the tier changes.
std::string TierLine(const LimiterConfig& config, const TierAssignment& a) {
  std::string out =
      absl::StrCat(EscapeForOutput(a.tier), " (",
                   a.kind == TierSubjectKind::kUser ? "user " : "network ",
                   EscapeForOutput(a.subject), ", tiers.assign)");
  for (const Tier& t : config.tiers.tiers) {
    if (t.name != a.tier) continue;
    std::vector<std::string> parts;
    if (t.exempt) parts.push_back("exempt");
    if (t.scale != 1.0) parts.push_back(absl::StrCat("scale ", t.scale));
    for (const TierRate& r : t.policies) {
      parts.push_back(
          absl::StrCat(EscapeForOutput(r.policy), " ", r.rate.ToString()));
    }
    if (!parts.empty()) absl::StrAppend(&out, ": ", absl::StrJoin(parts, ", "));
  }
  return out;
}

// What made a request exempt, checked the way the limiter checks it: an
// exempt network first, else the user, else the tier (`tier`, the
// decision's).
std::string ExemptReason(const LimiterConfig& config, const IpAddress& ip,
                         std::string_view user, std::string_view tier) {
  for (const Cidr& net : config.exempt.ips) {
    if (net.Contains(ip)) {
      return absl::StrCat("client in exempt network ", FormatCidr(net));
    }
  }
  for (const std::string& u : config.exempt.users) {
    if (u == user) return absl::StrCat("exempt user ", EscapeForOutput(user));
  }
  return absl::StrCat("exempt tier ", EscapeForOutput(tier));
}

// The verdict column of one matching policy.
std::string Verdict(const PolicySet& set, const PolicyMatch& m) {
  const std::string_view reason = RankReasonName(m.reason);
  if (m.verdict == MatchVerdict::kChosen) {
    std::string verdict = absl::StrCat("chosen: ", ToAbsl(reason));
    if (m.versus != kNoPolicy) {
      absl::StrAppend(&verdict, " (beats ", set.policy(m.versus).name, ")");
    }
    return verdict;
  }
  if (m.verdict == MatchVerdict::kOutranked && m.versus != kNoPolicy) {
    return absl::StrCat("outranked by ", set.policy(m.versus).name, ": ",
                        ToAbsl(reason));
  }
  return std::string(MatchVerdictName(m.verdict));
}

// The "matching policies" section.
void AppendMatches(const PolicySet& set,
                   const std::vector<PolicyMatch>& matches, std::string& out) {
  out += "\nmatching policies (per layer and scope: enforcing, then shadow):\n";
  if (matches.empty()) {
    out += "  (none)\n";
  } else {
    absl::StrAppend(&out, absl::StrFormat("  %-10s %-6s %-7s %-28s %-22s  %s\n",
                                          "layer", "scope", "mode", "policy",
                                          "matched via", "verdict"));
  }
  for (const PolicyMatch& m : matches) {
    const Policy& p = set.policy(m.policy);
    const std::string verdict = Verdict(set, m);
    std::string via(MatchFormName(m.form));
    if (p.match.size() > 1) absl::StrAppend(&via, " #", m.pattern + 1);
    absl::StrAppend(&out, absl::StrFormat("  %-10s %-6s %-7s %-28s %-22s  %s\n",
                                          ToAbsl(set.layer_name(m.layer)),
                                          ToAbsl(ScopeName(m.scope)),
                                          m.shadow ? "shadow" : "enforce",
                                          ToAbsl(p.name), via, verdict));
  }
}

// The "chosen" section: per layer and scope, the enforcing policies (a rate
// one, and in-flight or query-conditioned ones beside it) and the shadows.
void AppendChosen(const PolicySet& set, const PolicySet::Resolution& r,
                  bool anonymous, std::string& out) {
  out += "\nchosen:\n";
  for (size_t i = 0; i < set.layer_count(); ++i) {
    const auto layer = static_cast<uint8_t>(i);
    for (Scope scope : {Scope::kIp, Scope::kUser, Scope::kOrigin, Scope::kRoom,
                        Scope::kTarget}) {
      std::vector<PolicyId> enforcing;
      std::vector<PolicyId> shadows;
      for (const ResolvedPolicy& a : r.all()) {
        if (a.layer != layer || a.scope != scope) continue;
        (a.shadow ? shadows : enforcing).push_back(a.policy);
      }
      const std::string where = absl::StrCat(ToAbsl(set.layer_name(layer)), "/",
                                             ToAbsl(ScopeName(scope)), ":");
      if (enforcing.empty()) {
        // Other layers and subject scopes: only where something applies.
        if ((layer != 0 || (scope != Scope::kIp && scope != Scope::kUser)) &&
            shadows.empty()) {
          continue;
        }
        absl::StrAppend(&out, absl::StrFormat("  %-16s %s\n", where,
                                              scope == Scope::kUser && anonymous
                                                  ? "(none: anonymous request)"
                                                  : "(none)"));
      }
      for (const PolicyId id : enforcing) {
        absl::StrAppend(&out, absl::StrFormat("  %-16s %s\n", where,
                                              Describe(set.policy(id))));
      }
      for (const PolicyId id : shadows) {
        absl::StrAppend(&out, absl::StrFormat("  %-16s %s\n", "  beside it:",
                                              Describe(set.policy(id))));
      }
    }
  }
}

int RunExplain(const ExplainOptions& opts) {
  // Usage errors first, before a config error could hide them.
  absl::StatusOr<IpAddress> ip = ParseIpAddress(opts.ip);
  if (!ip.ok()) {
    PrintError(kExplain, absl::StrCat("--ip: ", ip.status().message()));
    return kExitUsage;
  }
  if (!opts.user.empty()) {
    if (std::string problem = UserIdProblem(opts.user); !problem.empty()) {
      PrintError(kExplain, absl::StrCat("--user: got ",
                                        internal::QuoteForError(opts.user),
                                        ", expected a Matrix user ID such as "
                                        "@alice:example.org (",
                                        problem, ")"));
      return kExitUsage;
    }
  }
  LimiterConfig config;
  const std::unique_ptr<Limiter> limiter =
      LoadLimiter(kExplain, opts.config_path, &config);
  if (limiter == nullptr) return kExitFinding;
  if (!opts.origin.empty() && !IsWellFormedServerName(opts.origin)) {
    PrintError(kExplain, absl::StrCat("--origin: got ",
                                      internal::QuoteForError(opts.origin),
                                      ", expected a server name such as "
                                      "matrix.org or example.org:8448"));
    return kExitUsage;
  }
  if (!opts.target_user.empty()) {
    if (std::string problem = UserIdProblem(opts.target_user);
        !problem.empty()) {
      PrintError(kExplain,
                 absl::StrCat("--target-user: got ",
                              internal::QuoteForError(opts.target_user),
                              ", expected a Matrix user ID (", problem, ")"));
      return kExitUsage;
    }
  }
  Request request;
  request.method = opts.method;
  request.target = OriginForm(opts.target);
  request.client = *ip;
  request.user_id = opts.user;
  // As mxlimitd sees it: from the X-Matrix header, unverified.
  request.origin = opts.origin;
  request.target_user = opts.target_user;
  request.may_delay = true;
  request.max_lease = LeaseForTimeout(request.target);
  const RequestSubjects subjects{!opts.user.empty(), !opts.origin.empty(),
                                 !opts.target_user.empty(), request.target};

  const Limiter& l = *limiter;
  const Route route = l.normalizer().Normalize(opts.method, request.target);
  const std::string_view path = QueryFreePath(request.target);
  std::string out;
  absl::StrAppend(&out, "request:  ", EscapeForOutput(opts.method), " ",
                  EscapeForOutput(opts.target), "\n");
  absl::StrAppend(
      &out, "client:   ", FormatIpAddress(*ip), ", user ",
      opts.user.empty() ? "(anonymous)" : EscapeForOutput(opts.user),
      opts.origin.empty()
          ? ""
          : absl::StrCat(", origin ", EscapeForOutput(opts.origin)),
      opts.target_user.empty()
          ? ""
          : absl::StrCat(", target ", EscapeForOutput(opts.target_user)),
      "\n");
  absl::StrAppend(&out, "route:    ", ToAbsl(route.key), "  (id ", route.id,
                  route.known ? ", known" : ", unknown: shared fallback",
                  ")\n");
  absl::StrAppend(&out, "raw path: ", EscapeForOutput(path), "\n");
  // Policies match the canonical form (escapes decoded, version folded).
  absl::StrAppend(&out, "canonical path: ",
                  EscapeForOutput(internal::CanonicalPath(path)), "\n");

  const std::optional<TierAssignment> tier =
      l.TierFor(request, MonotonicTime::FromNanoseconds(0));
  if (tier.has_value()) {
    absl::StrAppend(&out, "tier:     ", TierLine(config, *tier), "\n");
  }

  Decision peek = l.Peek(request, MonotonicTime::FromNanoseconds(0));
  if (peek.exempt) {
    absl::StrAppend(
        &out, "\nexempt:   ", ExemptReason(config, *ip, opts.user, peek.tier),
        ": nothing is checked or charged\n");
    return Write(out);
  }

  const PolicySet& set = l.policies();
  const std::vector<PolicyMatch> matches =
      set.Explain(opts.method, route.id, path, subjects);
  AppendMatches(set, matches, out);

  AppendChosen(set, set.Resolve(opts.method, route.id, path, subjects),
               opts.user.empty(), out);

  out += "\nbuckets charged:\n";
  std::vector<std::string> buckets = l.DescribeBuckets(request);
  if (buckets.empty()) out += "  (none: no limited policy applies)\n";
  // A bucket key names the user ID.
  for (const std::string& b : buckets) {
    absl::StrAppend(&out, "  ", EscapeForOutput(b), "\n");
  }
  if (!config.store.url.empty()) {
    absl::StatusOr<std::vector<std::string>> keys =
        SharedLimiter::DescribeStoreKeys(config, request);
    if (!keys.ok()) {
      PrintErrors(kExplain, opts.config_path,
                  internal::FromAbsl(keys.status().message()));
      return kExitFinding;
    }
    // Hashed keys hold no user ID or address, but a policy name is the
    // operator's; escaped like every other echoed name.
    absl::StrAppend(&out, "\nstore keys (", RedactStoreUrl(config.store.url),
                    "):\n");
    if (keys->empty()) out += "  (none: no limited policy applies)\n";
    for (const std::string& k : *keys) {
      absl::StrAppend(&out, "  ", EscapeForOutput(k), "\n");
    }
  }
  return Write(out);
}

}  // namespace

void RegisterExplain(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand(std::string(kExplain),
                                     "Show how the limiter treats one request");
  cmd->footer(
      "Prints the route METHOD TARGET normalizes to, every policy that "
      "matched and its verdict, the one chosen per layer and scope, and the "
      "buckets a Check would charge; nothing is charged. Details and "
      "examples: docs/cli.md, section \"mxlimit explain\".");
  cmd->add_option("--config", opts->config_path,
                  "YAML policy file (default: the built-in policies only)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--ip", opts->ip, "Client address")->capture_default_str();
  cmd->add_option("--user", opts->user, "Matrix user ID (empty: anonymous)");
  cmd->add_option("--origin", opts->origin,
                  "Federation origin server, as X-Matrix names it (empty: a "
                  "client request)");
  cmd->add_option("--target-user", opts->target_user,
                  "The account the request is about (a login's user, an "
                  "invitee), as an embedder sets it");
  cmd->add_option("method", opts->method, "HTTP method")->required();
  cmd->add_option("target", opts->target, "Request target (path and query)")
      ->required();
  cmd->callback([opts, &exit_code] { exit_code = RunExplain(*opts); });
}

}  // namespace mxlimit::cli
