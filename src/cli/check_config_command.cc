// `mxlimit check-config F`: load a policy file the way the limiter would.
// On success: exit 0, one summary line, then each warning as
// `F:LINE:COL: warning: message`. On failure: every error as
// `mxlimit check-config: F:LINE:COL: message` on stderr, exit 1.
//
// `--reload-against RUNNING` also says whether F would be accepted as a
// reload of RUNNING (by mxlimitd, i.e. a ShardedLimiter of `--shards`
// shards: the check is its own Reload) and which policies' buckets that
// reload would reset (the rule is the engine's: KeepsBuckets, policy.h).
// A changed `store:` section is refused by SharedLimiter::CheckStoreReload,
// the rule mxlimitd's reload applies.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/shared_limiter.h"
#include "src/cli/commands.h"
#include "src/cli/load_limiter.h"
#include "src/cli/output.h"
#include "src/util/quote.h"

namespace mxlimit::cli {

struct CheckConfigOptions {
  std::string path;
  std::string reload_against;
  size_t shards = 0;  // 0: the default count for the file's capacities
};

namespace {

constexpr std::string_view kCheckConfig = "check-config";

using internal::FromAbsl;
using internal::QuoteForError;
using internal::ToAbsl;

// The policy of `set` named `name`, if any.
const Policy* Named(const PolicySet& set, std::string_view name) {
  std::optional<PolicyId> id = set.Find(name);
  return id.has_value() ? &set.policy(*id) : nullptr;
}

// What a reload of `running` by `next` (compiled from opts.path) would do:
// printed to `out`, or a refusal on stderr (returns false).
bool CheckReload(const CheckConfigOptions& opts, const Limiter& next,
                 const LimiterConfig& next_config, size_t shards,
                 std::string& out) {
  LimiterConfig running_config;
  const std::unique_ptr<Limiter> running =
      LoadLimiter(kCheckConfig, opts.reload_against, &running_config);
  if (running == nullptr) return false;
  auto refused = [&](std::string_view why) {
    PrintError(kCheckConfig,
               absl::StrCat(opts.path, ": a reload of ", opts.reload_against,
                            " would be refused: ", ToAbsl(why), "\n"));
    return false;
  };
  // mxlimitd's SharedLimiter checks the store section first, with this
  // rule; a running file without a store is a process without one.
  const absl::Status store = SharedLimiter::CheckStoreReload(
      running_config.store.url.empty() ? nullptr : &running_config.store,
      next_config.store);
  if (!store.ok()) return refused(FromAbsl(store.message()));
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> sharded =
      ShardedLimiter::Create(running_config, shards);
  if (!sharded.ok()) {
    PrintError(kCheckConfig,
               absl::StrCat(opts.reload_against, ": cannot run with ",
                            shards == 0 ? std::string("the default")
                                        : absl::StrCat(shards),
                            " shards: ", sharded.status().message(), "\n"));
    return false;
  }
  const absl::Status reloaded = (*sharded)->Reload(next_config);
  if (!reloaded.ok()) return refused(FromAbsl(reloaded.message()));
  const PolicySet& before = running->policies();
  const PolicySet& after = next.policies();
  std::vector<std::string> resets;
  for (const Policy& p : after.policies()) {
    const Policy* old = Named(before, p.name);
    if (old == nullptr) {
      resets.push_back(absl::StrCat(p.name, ": new policy"));
    } else if (std::string why = BucketResetReason(*old, p); !why.empty()) {
      resets.push_back(absl::StrCat(p.name, ": ", why));
    }
  }
  for (const Policy& p : before.policies()) {
    if (Named(after, p.name) == nullptr) {
      resets.push_back(
          absl::StrCat(p.name, ": removed: its buckets are dropped"));
    }
  }
  absl::StrAppend(&out, opts.path, ": a reload of ", opts.reload_against,
                  " would be accepted; ");
  if (resets.empty()) {
    absl::StrAppend(&out, "every policy keeps its buckets\n");
    return true;
  }
  absl::StrAppend(&out, "it resets the buckets of ", resets.size(),
                  resets.size() == 1 ? " policy:\n" : " policies:\n");
  for (const std::string& r : resets) absl::StrAppend(&out, "  ", r, "\n");
  return true;
}

int RunCheckConfig(const CheckConfigOptions& opts) {
  // 0: the default count, as mxlimitd picks it for the file's capacities.
  const size_t shards = opts.shards;
  LimiterConfig config;
  std::vector<std::string> warnings;
  const std::unique_ptr<Limiter> limiter =
      LoadLimiter(kCheckConfig, opts.path, &config, &warnings, shards);
  if (limiter == nullptr) return kExitFinding;
  // The store section as mxlimitd's SharedLimiter would check it: the
  // fields together, and each shared policy's rate against the store's
  // arithmetic. The store itself is not contacted.
  if (absl::Status sharing = SharedLimiter::ValidateSharing(config);
      !sharing.ok()) {
    PrintErrors(kCheckConfig, opts.path, FromAbsl(sharing.message()));
    return kExitFinding;
  }
  const TableOptions& t = config.tables;
  const size_t total = limiter->policies().size();
  std::string text = absl::StrCat(
      opts.path, ": OK: ", config.policies.size(), " operator policies, ",
      "built-ins ", config.builtin_policies ? "on" : "off", " (", total,
      " policies in force); tables ip ", t.ip_capacity, " (IPv4 /",
      t.ipv4_prefix, ", IPv6 /", t.ipv6_prefix, "), user ", t.user_capacity,
      "; exempt ", config.exempt.ips.size(), " networks, ",
      config.exempt.users.size(), " users",
      config.tiers.tiers.empty()
          ? ""
          : absl::StrCat("; tiers ", config.tiers.tiers.size(), " (",
                         config.tiers.users.size(), " users, ",
                         config.tiers.networks.size(), " networks assigned)"),
      config.store.url.empty()
          ? ""
          : absl::StrCat("; store ", RedactStoreUrl(config.store.url)),
      config.response_headers == ResponseHeaders::kRateLimit
          ? "; response headers ratelimit"
          : "",
      "\n");
  for (const std::string& w : warnings) absl::StrAppend(&text, w, "\n");
  // Written before the reload check, so that a refusal on standard error
  // follows the summary of the file it refuses.
  Output out(kCheckConfig);
  out.Append(text);
  if (!out.Finish()) return kExitFinding;
  if (opts.reload_against.empty()) return kExitOk;
  std::string reload;
  const bool accepted = CheckReload(opts, *limiter, config, shards, reload);
  Output reload_out(kCheckConfig);
  reload_out.Append(reload);
  return reload_out.Finish() && accepted ? kExitOk : kExitFinding;
}

}  // namespace

void RegisterCheckConfig(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<CheckConfigOptions>();
  CLI::App* cmd = app.add_subcommand(std::string(kCheckConfig),
                                     "Validate a YAML policy file");
  cmd->footer(
      "Loads FILE as the limiter would. Valid: one summary line and every "
      "warning as FILE:LINE:COL: warning: message, exit 0. Invalid: every "
      "error as FILE:LINE:COL: message on standard error, exit 1. With "
      "--reload-against RUNNING: whether FILE would be accepted as a reload "
      "of RUNNING, and which policies' buckets the reload would reset (exit "
      "1 when refused). Details: docs/cli.md, section \"mxlimit "
      "check-config\"; the format and the warnings: docs/config.md.");
  cmd->add_option("file", opts->path, "YAML policy file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--reload-against", opts->reload_against,
                  "The config in force: check FILE as a reload of it")
      ->check(CLI::ExistingFile);
  std::vector<size_t> powers;
  for (size_t n = 1; n <= ShardedLimiter::kMaxShards; n *= 2) {
    powers.push_back(n);
  }
  cmd->add_option("--shards", opts->shards,
                  "Shard count to check capacities and reloads against "
                  "(default: mxlimitd's, 256 or fewer to leave each shard "
                  "64 buckets)")
      ->check(CLI::IsMember(powers));
  cmd->callback([opts, &exit_code] { exit_code = RunCheckConfig(*opts); });
}

}  // namespace mxlimit::cli
