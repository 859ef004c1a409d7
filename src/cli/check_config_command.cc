// `mxlimit check-config F`: load a policy file the way the limiter would.
// On success: exit 0 and one summary line. On failure: every error as
// `mxlimit check-config: F:LINE:COL: message` on stderr, exit 1.

#include <memory>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy.h"
#include "src/cli/commands.h"
#include "src/cli/load_limiter.h"
#include "src/cli/output.h"
#include "src/util/quote.h"

namespace mxlimit::cli {

struct CheckConfigOptions {
  std::string path;
};

namespace {

constexpr std::string_view kCommand = "check-config";

int RunCheckConfig(const CheckConfigOptions& opts) {
  LimiterConfig config;
  const std::unique_ptr<Limiter> limiter =
      LoadLimiter(kCommand, opts.path, &config);
  if (limiter == nullptr) return kExitFinding;
  const TableOptions& t = config.tables;
  const size_t total = limiter->policies().size();
  std::string line = absl::StrCat(
      opts.path, ": OK: ", config.policies.size(), " operator policies, ",
      "built-ins ", config.builtin_policies ? "on" : "off", " (", total,
      " policies in force); tables ip ", t.ip_capacity, " (IPv4 /",
      t.ipv4_prefix, ", IPv6 /", t.ipv6_prefix, "), user ", t.user_capacity,
      "; exempt ", config.exempt.ips.size(), " networks, ",
      config.exempt.users.size(), " users\n");
  // A pattern that is not canonical is accepted in its canonical meaning;
  // say so, since it may not be what its author meant (an r0-only pattern).
  for (const Policy& p : config.policies) {
    for (const std::string& m : p.match) {
      std::string note = PatternCanonicalNote(m);
      if (note.empty()) continue;
      absl::StrAppend(&line, opts.path, ":", p.source_line,
                      ": warning: policy ", internal::QuoteForError(p.name),
                      ": match ", internal::QuoteForError(m), " ", note, "\n");
    }
  }
  Output out(kCommand);
  out.Append(line);
  return out.Finish() ? kExitOk : kExitFinding;
}

}  // namespace

void RegisterCheckConfig(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<CheckConfigOptions>();
  CLI::App* cmd =
      app.add_subcommand(std::string(kCommand), "Validate a YAML policy file");
  cmd->footer(
      "Loads FILE as the limiter would. Valid: one summary line (and a "
      "warning per pattern not in canonical form), exit 0. Invalid: every "
      "error as FILE:LINE:COL: message on standard error, exit 1. Details: "
      "docs/cli.md, section \"mxlimit check-config\"; the format: "
      "docs/config.md.");
  cmd->add_option("file", opts->path, "YAML policy file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->callback([opts, &exit_code] { exit_code = RunCheckConfig(*opts); });
}

}  // namespace mxlimit::cli
